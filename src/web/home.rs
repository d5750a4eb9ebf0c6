//! The home page's view of `usecases::overview`: sentences, money in pounds, dates as
//! people read them, and the sales of the last 12 months as a small bar chart drawn here as
//! SVG (no script, nothing from another origin), with the same figures as a table for
//! those who do not see it.

use std::fmt::Write as _;

use super::pages::{day, day_of, utc_midnight_day, Chrome};
use crate::domain::listing::ListingStatus;
use crate::domain::settings::TimeZone;
use crate::usecases::overview::{KeyConcern, Overview};
use crate::usecases::wallet::statement::pounds;

/// The signed-in home (its template beside the view it shows, so the layout's module does
/// not name this one).
#[derive(askama::Template)]
#[template(path = "dashboard/home.html")]
pub struct HomePage {
    pub chrome: Chrome,
    pub name: String,
    pub email: String,
    pub role: String,
    pub brand: String,
    pub is_admin: bool,
    pub view: HomeView,
}

pub struct ScheduleRow {
    pub listing_id: i64,
    pub title: String,
    pub window: String,
    pub deadline: String,
}

pub struct KeyRow {
    pub name: String,
    pub why: String,
}

pub struct MonthRow {
    pub month: String,
    pub sales: i64,
    pub gross: String,
}

pub struct HomeView {
    pub to_schedule: Vec<ScheduleRow>,
    pub to_schedule_total: i64,
    pub dead_deliveries: i64,
    /// Orders from storefront buyers not yet delivered.
    pub buyer_orders_waiting: i64,
    pub invitations: Vec<(String, String)>,
    pub keys: Vec<KeyRow>,
    pub available: String,
    pub pending: String,
    pub next_statement: String,
    /// `(status as people say it, link filter, count)`.
    pub listings: Vec<(&'static str, &'static str, i64)>,
    pub months: Vec<MonthRow>,
    /// The chart, an `<svg>` element built from numbers and month names only.
    pub chart: String,
    /// Nothing asks for attention.
    pub all_clear: bool,
}

impl HomeView {
    /// The overview, with instants on the brand's calendar (`zone`).
    pub fn of(o: Overview, zone: TimeZone) -> Self {
        let to_schedule = o
            .to_schedule
            .iter()
            .map(|s| ScheduleRow {
                listing_id: s.listing_id,
                title: s.title.clone(),
                window: format!("{} to {}", day(s.window_start), day(s.deadline)),
                deadline: day(s.deadline),
            })
            .collect();
        let keys = o
            .keys
            .iter()
            .map(|k| KeyRow {
                name: if k.label.is_empty() { k.lookup.clone() } else { format!("{} ({})", k.label, k.lookup) },
                why: match k.concern {
                    KeyConcern::Expiring(at) => {
                        format!("stops working on {}: roll it before then", day_of(at, zone))
                    }
                    KeyConcern::Unused => "not used for 90 days: revoke it if nothing needs it".to_owned(),
                },
            })
            .collect();
        let listings = o
            .listings
            .iter()
            .map(|(status, n)| {
                let (text, filter) = match status {
                    ListingStatus::Active => ("Active", "active"),
                    ListingStatus::Draft => ("Draft", "draft"),
                    ListingStatus::Closed => ("Closed", "closed"),
                };
                (text, filter, *n)
            })
            .collect();
        let months = o
            .sales
            .iter()
            .map(|m| MonthRow {
                month: m.month.format("%b %Y").to_string(),
                sales: m.entries,
                gross: pounds(m.gross_pence),
            })
            .collect();
        let all_clear = o.to_schedule_total == 0
            && o.buyer_orders_waiting == 0
            && o.dead_deliveries == 0
            && o.pending_invitations.is_empty()
            && o.keys.is_empty();
        Self {
            chart: chart(&o),
            to_schedule,
            to_schedule_total: o.to_schedule_total,
            dead_deliveries: o.dead_deliveries,
            buyer_orders_waiting: o.buyer_orders_waiting,
            invitations: o.pending_invitations,
            keys,
            available: pounds(o.balances.available),
            pending: pounds(o.balances.pending),
            next_statement: utc_midnight_day(o.next_statement, zone),
            listings,
            months,
            all_clear,
        }
    }
}

/// Twelve bars, one per month, scaled to the best month; the figures are the table's.
fn chart(o: &Overview) -> String {
    let bars: Vec<(String, i64)> = o.sales.iter().map(|m| (m.month.format("%b").to_string(), m.gross_pence)).collect();
    bar_chart("sales-title", "Sales by month, the last 12 months (figures in the table below)", &bars)
}

/// A small bar chart as an `<svg>` element: a bar per `(label, value)`, scaled to the
/// largest, with `title` as its accessible name. Labels are the caller's own text (month
/// names, statement numbers), escaped here all the same.
pub fn bar_chart(title_id: &str, title: &str, bars: &[(String, i64)]) -> String {
    const WIDTH: i64 = 600;
    const HEIGHT: i64 = 160;
    let count = i64::try_from(bars.len()).unwrap_or(1).max(1);
    let slot = WIDTH / count;
    let top = bars.iter().map(|(_, v)| *v).max().unwrap_or(0).max(1);
    let mut svg = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {WIDTH} {}\" role=\"img\" aria-labelledby=\"{}\" \
         xmlns=\"http://www.w3.org/2000/svg\"><title id=\"{}\">{}</title>",
        HEIGHT + 20,
        escape(title_id),
        escape(title_id),
        escape(title)
    );
    for (i, (label, value)) in (0i64..).zip(bars) {
        let h = value.max(&0) * (HEIGHT - 10) / top;
        let (x, w) = (i * slot + slot / 8, slot - slot / 4);
        let _ = write!(
            svg,
            "<rect x=\"{x}\" y=\"{}\" width=\"{w}\" height=\"{h}\" fill=\"#1f5f8b\"></rect>\
             <text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#5c6670\">{}</text>",
            HEIGHT - h,
            x + w / 2,
            HEIGHT + 15,
            escape(label),
        );
    }
    svg.push_str("</svg>");
    svg
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
