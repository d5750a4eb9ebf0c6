//! Listings: the brand's listings with filters, search and pages.

use crate::http::routing::get;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Router;
use serde::Deserialize;

use super::extract::{PageError, SignedIn};
use super::notice::Flash;
use super::pages::{page_number, render, when, Chrome};
use crate::domain::listing::{price, Channel, ListingQuery, ListingStatus};
use crate::domain::FieldError;
use crate::state::AppState;
use crate::usecases::listings;
use crate::usecases::wallet::statement::pounds;

pub fn router() -> Router<AppState> {
    Router::new().route("/listings", get(listings_page))
}

// ---- Listings ----

pub struct ListingRow {
    pub id: i64,
    pub title: String,
    pub status: &'static str,
    pub channel: &'static str,
    pub category: String,
    pub price: String,
    pub views: i64,
    pub created: String,
    /// The live page on the marketplace; `None` for a draft.
    pub live_url: Option<String>,
}

#[derive(askama::Template)]
#[template(path = "dashboard/listings.html")]
pub struct ListingsPage {
    pub chrome: Chrome,
    pub is_admin: bool,
    /// What the last action did ("Listing deleted…"), once.
    pub notice: Option<&'static str>,
    pub rows: Vec<ListingRow>,
    pub q: String,
    pub status: String,
    pub channel: String,
    pub page: i64,
    pub pages: i64,
    /// How many match, in words.
    pub total: String,
    /// The query string of the filters, for the page links.
    pub filters: String,
    /// Why the search was refused (the API's rule for `q`), shown in place of results.
    pub search_error: Option<String>,
    /// The filters' choices (their wire names in the query string, their words shown).
    pub statuses: &'static [ListingStatus],
    pub channels: &'static [Channel],
}

#[derive(Debug, Deserialize)]
struct ListingsQuery {
    #[serde(default)]
    q: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    channel: String,
    page: Option<String>,
}

const PER_PAGE: i64 = 25;

async fn listings_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    flash: Flash,
    Query(query): Query<ListingsQuery>,
) -> Result<Response, PageError> {
    let status = query.status.parse::<ListingStatus>().ok();
    let channel = query.channel.parse::<Channel>().ok();
    // The API's search rule: a search too long is refused with its reason, never cut.
    let (words, search_error) = match query.q.trim() {
        "" => (Vec::new(), None),
        q => match ListingQuery::search_words(q) {
            Some(words) => (words, None),
            None => (Vec::new(), Some(FieldError::of("q", "invalid").message)),
        },
    };
    let page = page_number(query.page.as_deref(), 100_000);
    let found = match search_error {
        Some(_) => Default::default(),
        None => {
            let filter = ListingQuery { status, channel, sku: None, words };
            listings::list(&state.core, &session.actor(), filter, PER_PAGE, (page - 1) * PER_PAGE).await?
        }
    };
    let rows = found
        .listings
        .into_iter()
        .map(|l| ListingRow {
            id: l.id,
            title: l.title,
            status: l.status.words(),
            channel: l.channel.words(),
            category: l.category,
            price: pounds(price(l.regular_price, l.sale_price).get()),
            views: l.view_count,
            created: when(l.created_at.get(), session.zone()),
            live_url: (l.status != crate::domain::listing::ListingStatus::Draft)
                .then(|| format!("{}/listings/{}", state.config.marketplace_url(), l.id)),
        })
        .collect();
    let filters = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("q", &query.q)
        .append_pair("status", status.map_or("", ListingStatus::as_str))
        .append_pair("channel", channel.map_or("", Channel::as_str))
        .finish();
    let view = ListingsPage {
        chrome: Chrome::signed_in(&session),
        is_admin: session.is_admin(),
        notice: flash.text(),
        rows,
        q: query.q,
        status: status.map_or("", ListingStatus::as_str).to_owned(),
        channel: channel.map_or("", Channel::as_str).to_owned(),
        page,
        pages: (found.total + PER_PAGE - 1) / PER_PAGE,
        total: listings_found(found.total, found.total_is_estimate),
        filters,
        search_error,
        statuses: ListingStatus::ALL,
        channels: Channel::ALL,
    };
    Ok(render(StatusCode::OK, &view))
}

/// How many listings a list holds, in words: "1 listing", "3 listings", or "About 4,900
/// listings" when a search's total is an estimate.
fn listings_found(total: i64, estimate: bool) -> String {
    let n = crate::domain::money::thousands(&total.to_string());
    match (total, estimate) {
        (_, true) => format!("About {n} listings"),
        (1, false) => "1 listing".to_owned(),
        (_, false) => format!("{n} listings"),
    }
}
