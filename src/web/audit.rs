//! The audit log (admins): every recorded action of the brand, newest first, in words (who,
//! what, to what, from where); filtered by kind of action and by who acted, a page at a
//! time, and the same entries as CSV.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Router;
use serde::Deserialize;

use super::extract::{PageError, SignedInAdmin};
use super::pages::{render, when, Chrome};
use crate::domain::audit::{ActorType, AuditAction, AuditTopic};
use crate::domain::user::Admin;
use crate::domain::view::{AuditFilter, AuditRecord};
use crate::http::routing::get;
use crate::state::AppState;
use crate::usecases::people::{audit, keys, sessions::LiveSession, team};

pub const AUDIT_LOG: &str = "/dashboard/audit-log";
/// The most entries one CSV holds (the newest the filters keep).
const CSV_ROWS: u32 = 10_000;

pub fn router() -> Router<AppState> {
    Router::new().route("/audit-log", get(audit_page)).route("/audit-log.csv", get(audit_csv))
}

pub struct AuditRow {
    pub at: String,
    pub actor: String,
    pub action: String,
    pub target: String,
    pub ip: String,
}

#[derive(askama::Template)]
#[template(path = "dashboard/audit_log.html")]
pub struct AuditLogPage {
    pub chrome: Chrome,
    pub rows: Vec<AuditRow>,
    /// The filters chosen (`""` for any), the choices, and the filters as a query string.
    pub topic: String,
    pub who: String,
    pub topics: Vec<(&'static str, &'static str)>,
    pub people: Vec<WhoChoice>,
    pub filters: String,
    /// The id after which the next (older) entries start, when there are more.
    pub older: Option<i64>,
    /// This page starts after an entry (it is not the newest page).
    pub walking: bool,
}

#[derive(Debug, Default, Deserialize)]
struct AuditQuery {
    after: Option<String>,
    /// An [`AuditTopic`]'s name; anything else shows every kind.
    #[serde(default)]
    topic: String,
    /// `user:<id>` or `key:<id>`; anything else shows everyone's.
    #[serde(default)]
    who: String,
}

impl AuditQuery {
    fn topic(&self) -> Option<AuditTopic> {
        self.topic.parse().ok()
    }

    fn actor(&self) -> Option<(ActorType, i64)> {
        let (kind, id) = self.who.split_once(':')?;
        let kind = match kind.parse().ok()? {
            ActorType::Operator => return None,
            kind => kind,
        };
        Some((kind, id.parse().ok()?))
    }

    fn filter(&self) -> AuditFilter {
        AuditFilter { prefixes: self.topic().map_or(&[], AuditTopic::prefixes), actor: self.actor() }
    }

    /// The filters as a query string (without the position), for links and the CSV.
    fn filters(&self) -> String {
        let mut pairs = Vec::new();
        if let Some(topic) = self.topic() {
            pairs.push(format!("topic={}", topic.as_str()));
        }
        if let Some((kind, id)) = self.actor() {
            pairs.push(format!("who={}%3A{id}", kind.as_str()));
        }
        pairs.join("&")
    }
}

/// One choice of the "Who" filter: `user:<id>` or `key:<id>`, and its words.
pub struct WhoChoice {
    pub value: String,
    pub words: String,
}

/// Entries a page of the audit log shows, newest first.
const AUDIT_SHOWN: u32 = 100;

/// The names an audit target may point at, read once per page.
struct TargetNames {
    people: std::collections::HashMap<i64, String>,
    keys: std::collections::HashMap<i64, String>,
    listings: std::collections::HashMap<i64, String>,
}

impl TargetNames {
    /// An entry's target (`user:7`, `key:12`, `settings:payouts`, …) as people read it.
    fn words(&self, target: &str) -> String {
        let (kind, id) = target.split_once(':').unwrap_or((target, ""));
        let number = id.parse::<i64>().ok();
        let named = |names: &std::collections::HashMap<i64, String>| number.and_then(|n| names.get(&n)).cloned();
        match kind {
            "user" => named(&self.people).unwrap_or_else(|| format!("A former member (no. {id})")),
            "key" => match named(&self.keys).filter(|label| !label.trim().is_empty()) {
                Some(label) => format!("API key “{label}”"),
                None => format!("API key no. {id}"),
            },
            "settings" => match id {
                "profile" => "Brand profile".to_owned(),
                "billing" => "Billing details".to_owned(),
                "payouts" => "Payout options".to_owned(),
                other => format!("Settings ({})", other.replace('_', " ")),
            },
            "warehouse" => "A warehouse".to_owned(),
            "warehouses" => "Warehouses".to_owned(),
            "collection" => format!("Collection no. {id}"),
            "listing" => match named(&self.listings).filter(|title| !title.trim().is_empty()) {
                Some(title) => format!("Listing “{title}”"),
                None => format!("Listing no. {id}"),
            },
            "import" => format!("Spreadsheet import no. {id}"),
            "event" => format!("Webhook event {id}"),
            "events" if id == "dead" => "Dead webhook events".to_owned(),
            "webhook" => "Webhook endpoint".to_owned(),
            "redemption" => format!("Redemption no. {id}"),
            "remittance" => format!("Statement (record {id})"),
            "brand" => "The brand".to_owned(),
            _ => target.to_owned(),
        }
    }
}

/// The names targets point at (the team, the brand's keys, the listings `entries` name),
/// and the "Who" choices: the team and the brand's keys.
async fn names(
    state: &AppState,
    session: &LiveSession,
    admin: &Admin,
    entries: &[AuditRecord],
) -> Result<(TargetNames, Vec<WhoChoice>), PageError> {
    let mut listing_ids: Vec<i64> =
        entries.iter().filter_map(|e| e.target.as_deref()?.strip_prefix("listing:")?.parse().ok()).collect();
    listing_ids.sort_unstable();
    listing_ids.dedup();
    let listings = crate::usecases::listings::titles(&state.core, &session.actor(), &listing_ids).await?;
    let members = team::members(&state.core, admin).await?;
    let keys = keys::keys(&state.core, admin).await?;
    let mut choices: Vec<WhoChoice> =
        members.iter().map(|m| WhoChoice { value: format!("user:{}", m.id), words: m.name.clone() }).collect();
    choices.extend(keys.iter().map(|k| WhoChoice {
        value: format!("key:{}", k.id),
        words: if k.label.trim().is_empty() {
            format!("API key no. {}", k.id)
        } else {
            format!("API key “{}”", k.label)
        },
    }));
    let names = TargetNames {
        people: members.into_iter().map(|m| (m.id, m.name)).collect(),
        keys: keys.into_iter().map(|k| (k.id, k.label)).collect(),
        listings: listings.into_iter().collect(),
    };
    Ok((names, choices))
}

fn row(e: AuditRecord, names: &TargetNames, session: &LiveSession) -> AuditRow {
    AuditRow {
        at: when(e.at.get(), session.zone()),
        actor: e.actor_display,
        action: AuditAction::words_of(&e.action).to_owned(),
        target: e.target.as_deref().map(|t| names.words(t)).unwrap_or_default(),
        ip: e.ip.unwrap_or_default(),
    }
}

async fn audit_page(
    State(state): State<AppState>,
    SignedInAdmin { session, admin }: SignedInAdmin,
    Query(query): Query<AuditQuery>,
) -> Result<Response, PageError> {
    // A position that is not an entry id shows the newest entries.
    let after = query.after.as_deref().and_then(|a| a.parse::<i64>().ok()).filter(|a| *a > 0);
    let page = audit::page(&state.core, &admin, AUDIT_SHOWN, after, &query.filter()).await?;
    let older = page.entries.last().filter(|_| page.has_more).map(|e| e.id);
    let (names, people) = names(&state, &session, &admin, &page.entries).await?;
    let rows = page.entries.into_iter().map(|e| row(e, &names, &session)).collect();
    let view = AuditLogPage {
        chrome: Chrome::signed_in(&session),
        rows,
        topic: query.topic().map_or("", AuditTopic::as_str).to_owned(),
        who: query.actor().map(|(kind, id)| format!("{}:{id}", kind.as_str())).unwrap_or_default(),
        topics: AuditTopic::ALL.iter().map(|t| (t.as_str(), t.words())).collect(),
        people,
        filters: query.filters(),
        older,
        walking: after.is_some(),
    };
    Ok(render(StatusCode::OK, &view))
}

/// The entries the filters keep (the newest [`CSV_ROWS`]) as CSV, in the page's words, with
/// the time in UTC (RFC 3339) and the action's name beside its words for a program.
async fn audit_csv(
    State(state): State<AppState>,
    SignedInAdmin { session, admin }: SignedInAdmin,
    Query(query): Query<AuditQuery>,
) -> Result<Response, PageError> {
    let page = audit::page(&state.core, &admin, CSV_ROWS, None, &query.filter()).await?;
    let (names, _) = names(&state, &session, &admin, &page.entries).await?;
    let mut out = csv::Writer::from_writer(Vec::new());
    let safe = super::pages::cell;
    out.write_record(["at_utc", "who", "action", "action_name", "target", "address"]).map_err(PageError::internal)?;
    for e in page.entries {
        let at = e.at.to_string();
        let name = e.action.clone();
        let row = row(e, &names, &session);
        out.write_record([at, safe(&row.actor), row.action, name, safe(&row.target), row.ip])
            .map_err(PageError::internal)?;
    }
    let csv = out.into_inner().map_err(|e| PageError::internal(e.into_error()))?;
    Ok(super::pages::csv_download("audit-log", &session.record.brand_slug, csv))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audit_targets_read_as_words() {
        let names = TargetNames {
            people: [(7, "Mo Member".to_owned())].into(),
            keys: [(12, "Stock sync".to_owned())].into(),
            listings: [(5, "Oak sideboard".to_owned())].into(),
        };
        assert_eq!(names.words("user:7"), "Mo Member");
        assert_eq!(names.words("user:8"), "A former member (no. 8)");
        assert_eq!(names.words("key:12"), "API key “Stock sync”");
        assert_eq!(names.words("settings:payouts"), "Payout options");
        assert_eq!(names.words("events:dead"), "Dead webhook events");
        assert_eq!(names.words("webhook"), "Webhook endpoint");
        assert_eq!(names.words("redemption:5"), "Redemption no. 5");
        assert_eq!(names.words("warehouses"), "Warehouses");
        let unlabelled =
            TargetNames { people: Default::default(), keys: [(3, String::new())].into(), listings: Default::default() };
        assert_eq!(unlabelled.words("key:3"), "API key no. 3");
        assert_eq!(names.words("listing:42"), "Listing no. 42");
        assert_eq!(names.words("listing:5"), "Listing “Oak sideboard”");
    }

    #[test]
    fn the_filters_read_only_known_topics_and_people() {
        let query = |topic: &str, who: &str| AuditQuery { after: None, topic: topic.into(), who: who.into() };
        assert_eq!(query("listings", "user:7").filters(), "topic=listings&who=user%3A7");
        assert_eq!(query("nope", "operator:1").filters(), "");
        assert_eq!(query("", "key:x").filter().actor, None);
        assert_eq!(query("money", "key:3").filter().prefixes, AuditTopic::Money.prefixes());
    }
}
