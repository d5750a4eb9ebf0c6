//! Orders (issue 47): every sale of the brand's listings, from storefront buyers and from the
//! operator API, with its delivery window, collection date and, of a storefront buyer, the
//! postcode district only; filters, pages and the same rows as CSV.

use axum::extract::{Query, State};
use axum::response::Response;
use axum::Router;
use serde::Deserialize;

use super::extract::{PageError, SignedIn};
use super::pages::{day, page_number, render, when, Chrome};
use crate::domain::listing::Channel;
use crate::domain::order::{order_reference, OrderStatus};
use crate::domain::view::OrderFilter;
use crate::http::routing::get;
use crate::state::AppState;
use crate::usecases::marketplace::orders::{self, BrandOrder};

pub const ORDERS: &str = "/dashboard/orders";
const PER_PAGE: i64 = 25;
/// The most orders one CSV holds (the newest, under the filters).
const CSV_ROWS: i64 = 10_000;

pub fn router() -> Router<AppState> {
    Router::new().route("/orders", get(orders_page)).route("/orders.csv", get(orders_csv))
}

/// One row as the page shows it.
pub struct OrderRow {
    pub reference: String,
    pub listing_id: i64,
    pub title: String,
    pub channel: &'static str,
    pub quantity: i64,
    pub total: String,
    pub status: &'static str,
    pub window: String,
    pub collection: String,
    pub buyer: String,
    pub placed: String,
}

#[derive(askama::Template)]
#[template(path = "dashboard/orders.html")]
struct OrdersPage {
    chrome: Chrome,
    rows: Vec<OrderRow>,
    total: i64,
    page: i64,
    pages: i64,
    status: String,
    channel: String,
    from_buyers: bool,
    filters: String,
}

#[derive(Debug, Default, Deserialize)]
struct OrdersQuery {
    #[serde(default)]
    status: String,
    #[serde(default)]
    channel: String,
    #[serde(default)]
    from: String,
    page: Option<String>,
}

impl OrdersQuery {
    /// The filter these parameters ask for (an unknown value is no filter).
    fn filter(&self) -> OrderFilter {
        OrderFilter {
            status: self.status.parse().ok(),
            channel: self.channel.parse().ok(),
            from_buyers: self.from == "buyers",
        }
    }
}

/// The query string of a filter, for the page links and the CSV link.
fn filters(filter: &OrderFilter) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    query.append_pair("status", filter.status.map_or("", OrderStatus::as_str));
    query.append_pair("channel", filter.channel.map_or("", Channel::as_str));
    if filter.from_buyers {
        query.append_pair("from", "buyers");
    }
    query.finish()
}

fn status_words(order: &BrandOrder) -> &'static str {
    match (order.status, order.collection) {
        (OrderStatus::Completed, _) => "Delivered",
        (OrderStatus::Placed, Some(_)) => "Collection booked",
        (OrderStatus::Placed, None) => "Placed",
    }
}

async fn orders_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Query(query): Query<OrdersQuery>,
) -> Result<Response, PageError> {
    let filter = query.filter();
    let page = page_number(query.page.as_deref(), 100_000);
    let (orders, total) =
        orders::for_brand(&state.core, &session.actor(), &filter, PER_PAGE, (page - 1) * PER_PAGE).await?;
    let zone = session.zone();
    let rows = orders
        .iter()
        .map(|o| OrderRow {
            reference: order_reference(o.id),
            listing_id: o.listing_id,
            title: o.title.clone(),
            channel: o.channel.words(),
            quantity: o.quantity,
            total: o.total.pounds(),
            status: status_words(o),
            window: o.window.words(),
            collection: o.collection.map_or_else(|| "Not booked".to_owned(), day),
            buyer: o.district.as_ref().map_or_else(|| "Marketplace".to_owned(), |d| format!("Buyer in {d}")),
            placed: when(o.created_at.get(), zone),
        })
        .collect();
    let view = OrdersPage {
        chrome: Chrome::signed_in(&session),
        rows,
        total,
        page,
        pages: ((total + PER_PAGE - 1) / PER_PAGE).max(1),
        status: filter.status.map_or("", OrderStatus::as_str).to_owned(),
        channel: filter.channel.map_or("", Channel::as_str).to_owned(),
        from_buyers: filter.from_buyers,
        filters: filters(&filter),
    };
    Ok(render(axum::http::StatusCode::OK, &view))
}

async fn orders_csv(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Query(query): Query<OrdersQuery>,
) -> Result<Response, PageError> {
    let (orders, _) = orders::for_brand(&state.core, &session.actor(), &query.filter(), CSV_ROWS, 0).await?;
    let csv = orders::orders_csv(&orders).map_err(PageError::internal)?;
    Ok(super::pages::csv_download("orders", &session.record.brand_slug, csv))
}
