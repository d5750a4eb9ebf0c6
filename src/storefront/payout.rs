//! A customer's payout page, `/marketplace/payouts/{token}` (decisions 14.6): the brand's
//! enabled choices with each one's value, one form, the answer once. Private like an order's
//! page; 410 once used or expired.

use askama::Template;
use axum::extract::rejection::FormRejection;
use axum::extract::{Form, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use chrono::Utc;
use serde_json::{Map, Value};

use super::listing::{forged, set_anti_forgery_cookie};
use super::{cached, message, not_found_page, private, stylesheet_path, unavailable, Head};
use crate::domain::payout::{CustomerChoice, PayoutChoice};
use crate::domain::redemption::Redemption;
use crate::state::AppState;
use crate::usecases::marketplace::checkout;
use crate::usecases::marketplace::payout_links::{self, LinkState, PayoutOffer, RedeemError};
use crate::usecases::marketplace::payouts::PayoutChoiceError;

/// A choice as offered.
pub struct ChoiceView {
    pub value: &'static str,
    pub label: String,
    pub checked: bool,
}

/// What the page says once the choice is recorded.
pub struct Done {
    pub heading: &'static str,
    pub value: String,
    pub code: Option<String>,
    pub text: String,
}

#[derive(Template)]
#[template(path = "storefront/payout.html")]
struct PayoutPage {
    head: Head,
    stylesheet: &'static str,
    brand: String,
    title: String,
    expires: String,
    token: String,
    csrf: String,
    choices: Vec<ChoiceView>,
    credit_offered: bool,
    destination: String,
    original_order_id: String,
    /// `(field, sentence)` of each field to correct.
    errors: Vec<(&'static str, &'static str)>,
    done: Option<Done>,
}

/// The form as posted.
#[derive(Debug, Default, serde::Deserialize)]
pub struct PayoutFields {
    customer_choice: Option<String>,
    credit_destination: Option<String>,
    original_order_id: Option<String>,
    csrf: Option<String>,
}

fn page(offer: &PayoutOffer, token: &str, csrf: String, fields: &PayoutFields) -> PayoutPage {
    let chosen = fields.customer_choice.as_deref().unwrap_or("");
    let boost = offer.options.credit_boost_percent;
    let choices = offer
        .choices
        .iter()
        .map(|(choice, value)| match choice {
            CustomerChoice::Credit => ChoiceView {
                value: "credit",
                label: if boost > 100 {
                    format!("Store credit with {}: {} (a {}% bonus)", offer.brand, value.pounds(), boost - 100)
                } else {
                    format!("Store credit with {}: {}", offer.brand, value.pounds())
                },
                checked: chosen == "credit",
            },
            CustomerChoice::Cash => {
                ChoiceView { value: "cash", label: format!("Cash: {}", value.pounds()), checked: chosen == "cash" }
            }
        })
        .collect();
    PayoutPage {
        head: Head {
            title: "Choose your payout · rehome marketplace".to_owned(),
            description: "Choose how you are paid for your trade-in.".to_owned(),
            og_type: "website",
            noindex: true,
            ..Head::default()
        },
        stylesheet: stylesheet_path(),
        brand: offer.brand.clone(),
        title: offer.order.title.clone(),
        expires: offer.expires_at.get().format("%-d %B %Y").to_string(),
        token: token.to_owned(),
        csrf,
        choices,
        credit_offered: offer.options.credit_enabled,
        destination: fields.credit_destination.clone().unwrap_or_default(),
        original_order_id: fields.original_order_id.clone().unwrap_or_default(),
        errors: Vec::new(),
        done: None,
    }
}

fn gone() -> Response {
    private(message(
        StatusCode::GONE,
        "This link no longer works",
        "A payout was chosen with it already, or it has expired. If you did not choose, or lost your credit code, \
         reply to the email that brought you the link.",
    ))
}

/// `GET /marketplace/payouts/{token}`.
pub async fn payout(State(state): State<AppState>, Path(token): Path<String>) -> Response {
    let offer = match payout_links::open(&state.core, &token, Utc::now()).await {
        Ok(LinkState::Open(offer)) => offer,
        Ok(LinkState::Gone) => return gone(),
        Ok(LinkState::Unknown) => return private(not_found_page()),
        Err(e) => return unavailable(&e),
    };
    let csrf = match checkout::anti_forgery(&state.core, Utc::now().date_naive()).await {
        Ok(csrf) => csrf,
        Err(e) => return unavailable(&e),
    };
    let view = page(&offer, &token, csrf, &PayoutFields::default());
    let mut response = cached(&HeaderMap::new(), StatusCode::OK, &view, &view.head);
    set_anti_forgery_cookie(&state, &mut response, &view.csrf);
    private(response)
}

/// `POST /marketplace/payouts/{token}`: records the choice once.
pub async fn choose(
    State(state): State<AppState>,
    Path(token): Path<String>,
    headers: HeaderMap,
    form: Result<Form<PayoutFields>, FormRejection>,
) -> Response {
    let Ok(Form(fields)) = form else {
        return private(message(StatusCode::BAD_REQUEST, "That choice could not be read", "Go back and try again."));
    };
    match forged(&state, &headers, fields.csrf.as_deref().unwrap_or("")).await {
        Ok(false) => {}
        Ok(true) => {
            return private(message(
                StatusCode::FORBIDDEN,
                "This form has expired",
                "Nothing was chosen. Open the link again and choose once more.",
            ))
        }
        Err(page) => return page,
    }
    let errors = match parse(&fields) {
        Ok(choice) => match payout_links::redeem(&state.core, &token, choice, Utc::now()).await {
            Ok(redemption) => return done(&state, &token, &redemption).await,
            Err(RedeemError::Gone) => return gone(),
            Err(RedeemError::Unknown) => return private(not_found_page()),
            Err(RedeemError::Choice(PayoutChoiceError::ChoiceNotOffered)) => {
                vec![("customer_choice", "That choice is no longer offered: choose another.")]
            }
            Err(RedeemError::Choice(PayoutChoiceError::Store(e))) => return unavailable(&e),
            Err(RedeemError::Choice(e)) => {
                tracing::error!(error = %e, "payout choice refused on a link's page");
                return private(message(
                    StatusCode::CONFLICT,
                    "This payout cannot be chosen",
                    "The order cannot take a payout choice now. Contact the brand.",
                ));
            }
        },
        Err(errors) => errors,
    };
    let offer = match payout_links::open(&state.core, &token, Utc::now()).await {
        Ok(LinkState::Open(offer)) => offer,
        Ok(LinkState::Gone) => return gone(),
        Ok(LinkState::Unknown) => return private(not_found_page()),
        Err(e) => return unavailable(&e),
    };
    let mut view = page(&offer, &token, fields.csrf.clone().unwrap_or_default(), &fields);
    view.errors = errors;
    private(cached(&HeaderMap::new(), StatusCode::BAD_REQUEST, &view, &view.head))
}

/// The form as the payout-choice use case's input (the customer is the link's), or each
/// field to correct in words.
fn parse(fields: &PayoutFields) -> Result<PayoutChoice, Vec<(&'static str, &'static str)>> {
    let given = |v: &Option<String>| v.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned);
    let mut body = Map::new();
    body.insert("customer_id".into(), Value::String("link".into()));
    let choice = given(&fields.customer_choice);
    if let Some(choice) = &choice {
        body.insert("customer_choice".into(), Value::String(choice.clone()));
    }
    if choice.as_deref() == Some("credit") {
        let destination = given(&fields.credit_destination);
        if let Some(destination) = &destination {
            body.insert("credit_destination".into(), Value::String(destination.clone()));
        }
        if destination.as_deref() == Some("existing_order") {
            if let Some(order) = given(&fields.original_order_id) {
                body.insert("original_order_id".into(), Value::String(order));
            }
        }
    }
    PayoutChoice::parse(&body).map_err(|errors| {
        let mut sentences: Vec<(&'static str, &'static str)> = errors
            .iter()
            .map(|e| match e.field.as_str() {
                "customer_choice" => ("customer_choice", "Choose store credit or cash."),
                "credit_destination" => {
                    ("credit_destination", "Choose where the credit goes: a code, or an order you placed.")
                }
                _ => ("original_order_id", "Give the number of the order to take the credit off."),
            })
            .collect();
        sentences.dedup();
        sentences
    })
}

/// The page once the choice is recorded: the code shown once, or what happens next.
async fn done(state: &AppState, token: &str, redemption: &Redemption) -> Response {
    let value = crate::domain::money::Pence::new(redemption.value_pence).pounds();
    let expires = redemption
        .expires_at
        .as_deref()
        .and_then(crate::domain::text::parse_instant)
        .map(|at| at.format("%-d %B %Y").to_string());
    let done = match (redemption.customer_choice.as_str(), &redemption.code, &redemption.original_order_id) {
        ("credit", Some(code), _) => Done {
            heading: "Your store credit is ready",
            value: value.clone(),
            code: Some(code.clone()),
            text: match expires {
                Some(expires) => format!("Give it to the brand when you next buy from them; use it by {expires}."),
                None => "Give it to the brand when you next buy from them.".to_owned(),
            },
        },
        ("credit", None, Some(order)) => Done {
            heading: "Your store credit is on its way",
            value: value.clone(),
            code: None,
            text: format!("{value} of credit will be taken off your order {order}."),
        },
        _ => Done {
            heading: "Your cash payout is on its way",
            value: value.clone(),
            code: None,
            text: format!("The brand contacts you to pay you {value}."),
        },
    };
    let brand = match crate::usecases::storefront::brand_face(&state.core, &redemption.brand_id).await {
        Ok(Some(face)) => face.name,
        _ => redemption.brand_id.clone(),
    };
    let view = PayoutPage {
        head: Head {
            title: "Payout chosen · rehome marketplace".to_owned(),
            description: "Your payout choice.".to_owned(),
            og_type: "website",
            noindex: true,
            ..Head::default()
        },
        stylesheet: stylesheet_path(),
        brand,
        title: String::new(),
        expires: String::new(),
        token: token.to_owned(),
        csrf: String::new(),
        choices: Vec::new(),
        credit_offered: false,
        destination: String::new(),
        original_order_id: String::new(),
        errors: Vec::new(),
        done: Some(done),
    };
    private(cached(&HeaderMap::new(), StatusCode::OK, &view, &view.head))
}
