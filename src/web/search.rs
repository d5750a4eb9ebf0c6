//! Search: one box for every kind of record (`usecases::search`), the results in words, each
//! a link to the page that shows it, grouped by kind.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Router;
use serde::Deserialize;

use super::extract::{PageError, SignedIn};
use super::pages::{render, Chrome};
use crate::domain::order::{order_reference, OrderStatus};
use crate::http::routing::get;
use crate::state::AppState;
use crate::usecases::search::{self, Hit, LISTINGS_SHOWN, MAX_QUERY_LEN};
use crate::usecases::wallet::statement::pounds;

pub const SEARCH: &str = "/dashboard/search";

pub fn router() -> Router<AppState> {
    Router::new().route("/search", get(search_page))
}

#[derive(Debug, Default, Deserialize)]
struct SearchQuery {
    #[serde(default)]
    q: String,
}

/// One result as the page shows it: what it is, a link to it, and a line about it.
pub struct Result {
    pub text: String,
    pub href: String,
    pub detail: String,
}

/// The results of one kind, under its heading.
pub struct Group {
    pub heading: &'static str,
    pub results: Vec<Result>,
    /// A link to every match when the group shows only some (the listings).
    pub more: Option<(String, String)>,
}

#[derive(askama::Template)]
#[template(path = "dashboard/search.html")]
struct SearchPage {
    chrome: Chrome,
    is_admin: bool,
    q: String,
    /// The query was too long to look for.
    too_long: bool,
    groups: Vec<Group>,
}

fn result_of(hit: Hit) -> (&'static str, Result) {
    let link = |text: String, href: String, detail: String| Result { text, href, detail };
    match hit {
        Hit::Listing { id, title, status, channel } => (
            "Listings",
            link(title, format!("/dashboard/listings/{id}"), format!("{} · {}", status.words(), channel.words())),
        ),
        Hit::Order { id, listing_id, title, status, channel } => {
            let status = match status {
                OrderStatus::Placed => "placed, to deliver",
                OrderStatus::Completed => "delivered",
            };
            (
                "Orders",
                link(
                    format!("Order {}: {title}", order_reference(id)),
                    format!("/dashboard/listings/{listing_id}"),
                    format!("{} order, {status}", channel.words()),
                ),
            )
        }
        Hit::CreditCode { code, value_pence, customer, spent, expired } => {
            let stands = if spent {
                "spent"
            } else if expired {
                "expired, never spent"
            } else {
                "not spent yet"
            };
            let href = format!(
                "/dashboard/redemptions?{}",
                url::form_urlencoded::Serializer::new(String::new()).append_pair("customer", &customer).finish()
            );
            (
                "Credit codes",
                link(
                    format!("Credit code {code}"),
                    href,
                    format!("£{} of credit, {stands} (customer {customer})", pounds(value_pence)),
                ),
            )
        }
        Hit::Customer { id, redemptions } => {
            let href = format!(
                "/dashboard/redemptions?{}",
                url::form_urlencoded::Serializer::new(String::new()).append_pair("customer", &id).finish()
            );
            let count = if redemptions == 1 { "1 redemption".to_owned() } else { format!("{redemptions} redemptions") };
            ("Customers", link(format!("Customer {id}"), href, count))
        }
        Hit::Event { id, event_type } => (
            "Webhook events",
            link(
                format!("Event {id}"),
                format!("/dashboard/deliveries/{id}"),
                crate::domain::event::EventType::words_of(&event_type).to_owned(),
            ),
        ),
        Hit::Collection { id: _, order_id, scheduled_for } => {
            let day = scheduled_for.parse().map_or(scheduled_for, crate::usecases::marketplace::collections::day_words);
            (
                "Collections",
                link(
                    format!("Collection of order {}", order_reference(order_id)),
                    "/dashboard/collections".to_owned(),
                    format!("Booked for {day}"),
                ),
            )
        }
        Hit::Member { id: _, name, email } => ("People", link(name, "/dashboard/team".to_owned(), email)),
        Hit::Key { id: _, label } => {
            ("API keys", link(format!("API key “{label}”"), "/dashboard/integrations".to_owned(), String::new()))
        }
    }
}

async fn search_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Query(query): Query<SearchQuery>,
) -> std::result::Result<Response, PageError> {
    let q = query.q.trim().to_owned();
    let too_long = q.len() > MAX_QUERY_LEN;
    let found = search::search(&state.core, &session.actor(), &q, session.is_admin()).await?;
    let mut groups: Vec<Group> = Vec::new();
    for hit in found.hits {
        let (heading, result) = result_of(hit);
        match groups.iter_mut().find(|g| g.heading == heading) {
            Some(group) => group.results.push(result),
            None => groups.push(Group { heading, results: vec![result], more: None }),
        }
    }
    if found.listings_total > LISTINGS_SHOWN {
        if let Some(group) = groups.iter_mut().find(|g| g.heading == "Listings") {
            let href = format!(
                "/dashboard/listings?{}",
                url::form_urlencoded::Serializer::new(String::new()).append_pair("q", &q).finish()
            );
            let about = if found.listings_total_is_estimate { "about " } else { "" };
            let n = crate::domain::money::thousands(&found.listings_total.to_string());
            group.more = Some((href, format!("See all {about}{n} listings that match")));
        }
    }
    let page = SearchPage { chrome: Chrome::signed_in(&session), is_admin: session.is_admin(), q, too_long, groups };
    Ok(render(StatusCode::OK, &page))
}
