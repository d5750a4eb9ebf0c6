//! An order's page, `/marketplace/orders/{token}` (decisions 14.5): what the buyer bought and
//! where its delivery stands. Private: never cached, never indexed, never sent as a referrer.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::{cached, not_found_page, private, stylesheet_path, unavailable, Head, BASE};
use crate::domain::checkout::HoldStatus;
use crate::domain::money::Pence;
use crate::domain::order::{order_reference, OrderStatus};
use crate::domain::view::HoldRecord;
use crate::state::AppState;
use crate::usecases::marketplace::checkout::{self, BuyerPage};

#[derive(Template)]
#[template(path = "storefront/order.html")]
struct OrderPage {
    head: Head,
    stylesheet: &'static str,
    reference: String,
    status: &'static str,
    status_text: &'static str,
    title: String,
    listing_href: String,
    quantity: i64,
    total: String,
    each: String,
    brand: String,
    window: String,
    collection: String,
    name: String,
    postcode: String,
    ordered: String,
    /// The confirmation was mailed (mail is configured).
    mailed: bool,
    /// Paid by card through the gateway.
    paid: bool,
}

/// A purchase waiting for its payment (decisions 14.4), or whose payment lapsed.
#[derive(Template)]
#[template(path = "storefront/payment.html")]
struct PaymentPage {
    head: Head,
    stylesheet: &'static str,
    heading: String,
    /// `waiting` or `stopped`: the status badge's colour.
    tone: &'static str,
    /// The payment may still arrive.
    awaiting: bool,
    status: &'static str,
    status_text: String,
    pay_url: Option<String>,
    title: String,
    listing_href: String,
    quantity: i64,
    total: String,
    each: String,
    brand: String,
    window: String,
    mailed: bool,
}

/// `GET /marketplace/orders/{token}`.
pub async fn order(State(state): State<AppState>, Path(token): Path<String>) -> Response {
    let found = match checkout::buyer_order(&state.core, &token).await {
        Ok(Some(BuyerPage::Order(found))) => found,
        Ok(Some(BuyerPage::Payment(hold))) => return payment(&state, &hold),
        Ok(None) => return not_found_page(),
        Err(e) => return unavailable(&e),
    };
    let order = &found.order;
    let brand = match crate::usecases::storefront::brand_face(&state.core, &order.brand_slug).await {
        Ok(face) => face.map_or_else(|| order.brand_slug.clone(), |f| f.name),
        Err(e) => return unavailable(&e),
    };
    let (status, status_text) = match (order.status, found.collection) {
        (OrderStatus::Completed, _) => ("Delivered", "Your piece has been delivered. Enjoy it."),
        (OrderStatus::Placed, Some(_)) => {
            ("Collection booked", "The brand has booked the day your piece leaves its warehouse.")
        }
        (OrderStatus::Placed, None) if found.paid => {
            ("Paid", "Your payment arrived. The brand is preparing your order and will confirm its collection date.")
        }
        (OrderStatus::Placed, None) => {
            ("Placed", "The brand is preparing your piece and will confirm its collection date.")
        }
    };
    let reference = order_reference(order.id);
    let page = OrderPage {
        head: Head {
            title: format!("Order {reference} · rehome marketplace"),
            description: format!("Order {reference}"),
            og_type: "website",
            noindex: true,
            ..Head::default()
        },
        stylesheet: stylesheet_path(),
        reference,
        status,
        status_text,
        title: order.title.clone(),
        listing_href: format!("{BASE}/listings/{}", order.listing_id),
        quantity: order.quantity,
        total: Pence::new(order.total_pence()).pounds(),
        each: Pence::new(order.unit_price_pence).pounds(),
        brand,
        window: order.window().words(),
        collection: found.collection.map_or_else(
            || {
                if state.config.mail_enabled() {
                    "Not booked yet: we will email you the day".to_owned()
                } else {
                    "Not booked yet: look here again for the day".to_owned()
                }
            },
            |d| d.format("%A %-d %B %Y").to_string(),
        ),
        name: found.name.clone(),
        postcode: found.postcode.clone(),
        ordered: order.created_at.get().format("%-d %B %Y").to_string(),
        mailed: state.config.mail_enabled(),
        paid: found.paid,
    };
    private(cached(&HeaderMap::new(), StatusCode::OK, &page, &page.head))
}

/// The page of a held purchase: pay while the hold lasts; after, what became of it.
fn payment(state: &AppState, hold: &HoldRecord) -> Response {
    let now = chrono::Utc::now();
    let open = hold.status == HoldStatus::Pending && now < hold.held_until.get();
    let held = if hold.quantity > 1 { "Your pieces are held for you" } else { "Your piece is held for you" };
    let (heading, status, status_text) = match hold.status {
        HoldStatus::Released => (
            "Payment not completed",
            "Not ordered",
            "The payment was not completed in time, so nothing was charged and the piece was released. \
             It may still be available."
                .to_owned(),
        ),
        _ if open => (
            held,
            "Awaiting payment",
            format!(
                "It is yours if you pay by {} (UK time). If you have just paid, this page shows your order \
                 as soon as the payment is confirmed: reload it in a moment.",
                crate::domain::checkout::uk_time(hold.held_until.get())
            ),
        ),
        _ => (
            "Confirming your payment",
            "Awaiting payment",
            "We are checking with the payment service whether the payment arrived. Reload this page in a minute."
                .to_owned(),
        ),
    };
    let released = hold.status == HoldStatus::Released;
    let page = PaymentPage {
        head: Head {
            title: format!("{heading} · rehome marketplace"),
            description: heading.to_owned(),
            og_type: "website",
            noindex: true,
            ..Head::default()
        },
        stylesheet: stylesheet_path(),
        heading: heading.to_owned(),
        tone: if released { "stopped" } else { "waiting" },
        awaiting: !released,
        status,
        status_text,
        pay_url: hold.session_url.clone().filter(|_| open),
        title: hold.title.clone(),
        listing_href: format!("{BASE}/listings/{}", hold.listing_id),
        quantity: hold.quantity,
        total: Pence::new(hold.total_pence()).pounds(),
        each: Pence::new(hold.unit_price_pence).pounds(),
        brand: hold.brand_name.clone(),
        window: hold.window().words(),
        mailed: state.config.mail_enabled(),
    };
    private(cached(&HeaderMap::new(), StatusCode::OK, &page, &page.head))
}
