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
    /// The search box's text: empty on the home page.
    pub q: &'static str,
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
    let bars: Vec<(String, i64)> =
        o.sales.iter().map(|m| (m.month.format("%b %Y").to_string(), m.gross_pence)).collect();
    bar_chart("sales-title", "Sales by month, the last 12 months", &bars)
}

/// A small bar chart as an `<svg>` element: a row per `(label, pence)`, its label on the
/// left (the axis of what is counted), a bar from the zero line scaled to the largest, and
/// its amount in pounds at the bar's end, with `title` as its accessible name. Drawn at
/// 13 units a letter in a 360-unit-wide picture, which a phone shows at its full width, so
/// the words stay at least 12 px. Labels are the caller's own text (months, statement
/// numbers), escaped here all the same.
pub fn bar_chart(title_id: &str, title: &str, bars: &[(String, i64)]) -> String {
    const WIDTH: usize = 360;
    const ROW: usize = 24;
    const VALUE: usize = 84;
    let label = bars.iter().map(|(l, _)| l.chars().count()).max().unwrap_or(0).saturating_mul(7).clamp(40, 150) + 8;
    let span = WIDTH - label - VALUE;
    let top = bars.iter().map(|(_, v)| *v).max().unwrap_or(0).max(1);
    let height = ROW * bars.len().max(1) + 4;
    let mut svg = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" aria-labelledby=\"{id}\" \
         xmlns=\"http://www.w3.org/2000/svg\" font-size=\"13\"><title id=\"{id}\">{}</title>",
        escape(title),
        id = escape(title_id),
    );
    for (i, (name, value)) in bars.iter().enumerate() {
        let y = i * ROW;
        let length = usize::try_from(i128::from((*value).max(0)) * span as i128 / i128::from(top)).unwrap_or(0);
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#3b4650\">{}</text>\
             <rect x=\"{label}\" y=\"{}\" width=\"{length}\" height=\"14\" fill=\"#1f5f8b\"></rect>\
             <text x=\"{}\" y=\"{}\" fill=\"#1b2126\">£{}</text>",
            label - 6,
            y + 17,
            escape(name),
            y + 6,
            label + length + 4,
            y + 17,
            pounds(*value),
        );
    }
    // The zero line the bars start from.
    let _ = write!(svg, "<line x1=\"{label}\" y1=\"0\" x2=\"{label}\" y2=\"{height}\" stroke=\"#5c6670\"></line>");
    svg.push_str("</svg>");
    svg
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
