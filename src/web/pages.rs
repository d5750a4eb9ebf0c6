//! The page templates (askama, compiled in; HTML-escaped by default) and the layout they
//! share: a header with the brand, the navigation and "Sign out", then the page's main.

use askama::Template;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::domain::body::{BodySpec, FieldError};
use crate::domain::settings::TimeZone;
use crate::domain::words;
use crate::usecases::people::sessions::LiveSession;

tokio::task_local! {
    /// The path of the dashboard page being answered (`/dashboard/…`), set around every
    /// dashboard request (`web::security_headers`), so the navigation marks its page.
    pub static CURRENT_PATH: String;
}

/// A link of the signed-in navigation.
#[derive(Debug, Clone)]
pub struct NavLink {
    pub href: &'static str,
    pub text: &'static str,
    /// The page shown is this one or below it (`aria-current="page"`).
    pub current: bool,
}

/// The signed-in user the header names, with the token of its sign-out form.
#[derive(Debug, Clone)]
pub struct ChromeUser {
    pub name: String,
    pub brand: String,
    pub csrf: String,
}

/// What the layout shows around every page.
#[derive(Debug, Clone, Default)]
pub struct Chrome {
    pub user: Option<ChromeUser>,
    pub nav: Vec<NavLink>,
}

impl Chrome {
    /// Before signing in: no navigation.
    pub fn guest() -> Self {
        Self::default()
    }

    /// A signed-in page: the navigation of decisions 9.3 (only the pages that exist so far;
    /// admin-only ones are not linked for members) and the sign-out button.
    pub fn signed_in(session: &LiveSession) -> Self {
        Self {
            user: Some(ChromeUser {
                name: session.record.name.clone(),
                brand: session.record.brand_name.clone(),
                csrf: session.record.csrf_token.clone(),
            }),
            nav: nav(session.is_admin()),
        }
    }
}

/// The navigation, in the order of decisions 9.3; the admin-only pages (Integrations, Team,
/// Audit log) are not linked for members.
fn nav(is_admin: bool) -> Vec<NavLink> {
    const LINKS: [(&str, &str, bool); 11] = [
        ("/dashboard/listings", "Listings", false),
        ("/dashboard/orders", "Orders", false),
        ("/dashboard/bulk-import", "Bulk import", false),
        ("/dashboard/settings", "Settings", false),
        ("/dashboard/integrations", "Integrations", true),
        ("/dashboard/deliveries", "Deliveries", false),
        ("/dashboard/redemptions", "Redemptions", false),
        ("/dashboard/collections", "Collections", false),
        ("/dashboard/team", "Team", true),
        ("/dashboard/wallet", "Wallet", false),
        ("/dashboard/audit-log", "Audit log", true),
    ];
    let current = |href: &str| {
        CURRENT_PATH
            .try_with(|path| path.strip_prefix(href).is_some_and(|rest| rest.is_empty() || rest.starts_with('/')))
            .unwrap_or(false)
    };
    LINKS
        .iter()
        .filter(|(_, _, admin_only)| is_admin || !admin_only)
        .map(|&(href, text, _)| NavLink { href, text, current: current(href) })
        .collect()
}

/// The reasons a use case gave, to show each beside its field (decisions 9.5: the API's
/// codes).
#[derive(Debug, Clone, Default)]
pub struct FieldErrors {
    errors: Vec<FieldError>,
    /// The body table of the form, which names each field's label and rule.
    spec: Option<&'static BodySpec>,
    /// Sentences the page words itself (a collection date's window), by field.
    own: Vec<(String, String)>,
}

impl FieldErrors {
    /// The reasons a form's post was refused; `spec` is the table of the body the form
    /// posts, so each sentence names the field by its label and says its rule in words
    /// (decisions 15.4).
    pub fn of(spec: &'static BodySpec, errors: Vec<FieldError>) -> Self {
        Self { errors, spec: Some(spec), own: Vec::new() }
    }

    /// Reasons of a form no body table describes (labels made from the field names).
    pub fn untabled(errors: Vec<FieldError>) -> Self {
        Self { errors, spec: None, own: Vec::new() }
    }

    /// The page's own sentence for `field`, instead of the rule's.
    pub fn worded(mut self, field: &str, sentence: String) -> Self {
        self.own.push((field.to_owned(), sentence));
        self
    }

    /// The reasons, as given.
    pub fn reasons(&self) -> &[FieldError] {
        &self.errors
    }

    /// The sentence a person reads for one reason.
    pub fn sentence(&self, error: &FieldError) -> String {
        match self.own.iter().find(|(field, _)| *field == error.field) {
            Some((_, sentence)) => sentence.clone(),
            // A refusal of the catalogue pinned to a field says its own sentence.
            None => words::sentence(self.spec, &error.field, &error.code).unwrap_or_else(|| error.message.clone()),
        }
    }

    /// Every sentence, each once, in the order given.
    fn sentences<'a>(&'a self, errors: impl Iterator<Item = &'a FieldError>) -> Vec<String> {
        let mut said: Vec<String> = Vec::new();
        for e in errors {
            let sentence = self.sentence(e);
            if !said.contains(&sentence) {
                said.push(sentence);
            }
        }
        said
    }

    /// The sentences of the reasons given for `field` (never their codes), joined; `None`
    /// when it has none.
    pub fn get(&self, field: &str) -> Option<String> {
        let said = self.sentences(self.errors.iter().filter(|e| e.field == field));
        (!said.is_empty()).then(|| said.join(" "))
    }

    /// Every reason's sentence, for a form whose fields do not each have a place.
    pub fn all(&self) -> String {
        self.sentences(self.errors.iter()).join(" ")
    }

    /// The sentences of the reasons whose field `shown` says has no place of its own.
    pub fn others(&self, shown: impl Fn(&str) -> bool) -> String {
        self.sentences(self.errors.iter().filter(|e| !shown(&e.field))).join(" ")
    }

    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    /// The error summary of a refused form: each reason's sentence (the one shown beside
    /// its field) linking to `#<id>` of the field, `id_of` naming the element a field is
    /// drawn as. In the order given, a sentence said once.
    pub fn summary(&self, id_of: impl Fn(&str) -> String) -> Vec<SummaryLink> {
        let mut links: Vec<SummaryLink> = Vec::new();
        for e in &self.errors {
            let message = self.sentence(e);
            if !links.iter().any(|l| l.message == message) {
                links.push(SummaryLink { href: format!("#{}", id_of(&e.field)), message });
            }
        }
        links
    }
}

/// One line of a form's error summary ("There is a problem", the GOV.UK pattern): the
/// reason, as a link to the field it is about.
#[derive(Debug, Clone)]
pub struct SummaryLink {
    /// `#<id of the field>`.
    pub href: String,
    pub message: String,
}

/// A CSV download named `<what>-<brand slug>.csv`: the bytes a list's rows were written to
/// (its cells made spreadsheet-safe by [`cell`]).
pub fn csv_download(what: &str, brand_slug: &str, bytes: Vec<u8>) -> axum::response::Response {
    use axum::http::header;
    use axum::response::IntoResponse;
    let name = format!("attachment; filename=\"{what}-{brand_slug}.csv\"");
    ([(header::CONTENT_TYPE, "text/csv; charset=utf-8".to_owned()), (header::CONTENT_DISPOSITION, name)], bytes)
        .into_response()
}

/// Text as a CSV cell a spreadsheet shows as text: one it would run as a formula gets its
/// leading `'`.
pub fn cell(text: &str) -> String {
    crate::usecases::wallet::csv::spreadsheet_safe(text).unwrap_or_else(|| text.to_owned())
}

/// How many a filtered list holds, in words: "1 redemption", "3 redemptions", or "More than
/// 10,000 redemptions" when its count stopped at the cap ([`crate::domain::limits::LIST_COUNT_CAP`]).
pub fn count_words(total: i64, one: &str, many: &str) -> String {
    let cap = crate::domain::limits::LIST_COUNT_CAP;
    match total {
        1 => format!("1 {one}"),
        n if n > cap => format!("More than {} {many}", crate::domain::money::thousands(&cap.to_string())),
        n => format!("{} {many}", crate::domain::money::thousands(&n.to_string())),
    }
}

/// The number of pages of a filtered list of `total` (capped) in pages of `per_page`.
pub fn pages_of(total: i64, per_page: i64) -> i64 {
    ((total.min(crate::domain::limits::LIST_COUNT_CAP) + per_page - 1) / per_page).max(1)
}

/// The page number of a list's `?page=`: 1 unless it is a whole number from 1 to `last`.
pub fn page_number(text: Option<&str>, last: i64) -> i64 {
    text.and_then(|p| p.parse::<i64>().ok()).filter(|p| (1..=last).contains(p)).unwrap_or(1)
}

pub use crate::domain::text::form_number;

/// An instant as every page writes it, in the brand's time zone with the zone's
/// abbreviation (so a reader abroad, or on the day the clocks change, knows which hour it
/// is): `26 Nov 2026, 21:13 GMT`, `1 Jun 2026, 09:30 BST`.
pub fn when(at: chrono::DateTime<chrono::Utc>, zone: TimeZone) -> String {
    zone.when(at)
}

/// [`when`], or "never" for an instant that has not happened (a key never used).
pub fn when_or_never(at: Option<chrono::DateTime<chrono::Utc>>, zone: TimeZone) -> String {
    at.map_or_else(|| "never".to_owned(), |at| when(at, zone))
}

/// An RFC 3339 instant of the API's bodies (the use cases' answers carry them as text), as
/// [`when`] writes it; the text as it is if it does not read as one.
pub fn when_text(at: &str, zone: TimeZone) -> String {
    chrono::DateTime::parse_from_rfc3339(at).map_or_else(|_| at.to_owned(), |t| when(t.to_utc(), zone))
}

/// A calendar date as every page writes it: `1 Dec 2026`. A date is not moved between
/// zones: the API's `YYYY-MM-DD` dates (a buyer window, a collection, a statement day) are
/// that day wherever the brand is, so the page shows the day the API means.
pub fn day(date: chrono::NaiveDate) -> String {
    date.format("%-d %b %Y").to_string()
}

/// The day of an event the service schedules at 00:00 UTC on `date` (a statement run,
/// decisions 10.4), on the brand's calendar: in New York the run of 1 Dec is on 30 Nov.
pub fn utc_midnight_day(date: chrono::NaiveDate, zone: TimeZone) -> String {
    day_of(date.and_time(chrono::NaiveTime::MIN).and_utc(), zone)
}

/// The first instant of `date` in the brand's zone (00:00 there; where the clocks skip
/// midnight, the first minute that exists): what a date field of a form means.
pub fn start_of_day(date: chrono::NaiveDate, zone: TimeZone) -> chrono::DateTime<chrono::Utc> {
    use chrono::TimeZone as _;
    let midnight = date.and_time(chrono::NaiveTime::MIN);
    (0..=180)
        .step_by(15)
        .find_map(|minutes| {
            let local = midnight + chrono::TimeDelta::minutes(minutes);
            zone.tz().from_local_datetime(&local).earliest()
        })
        .map_or_else(|| midnight.and_utc(), |at| at.to_utc())
}

/// Today's date in the brand's zone.
pub fn today(zone: TimeZone) -> chrono::NaiveDate {
    chrono::Utc::now().with_timezone(&zone.tz()).date_naive()
}

/// The day an instant falls on in the brand's zone, as [`day`] writes it.
pub fn day_of(at: chrono::DateTime<chrono::Utc>, zone: TimeZone) -> String {
    day(at.with_timezone(&zone.tz()).date_naive())
}

/// Renders `page` as an HTML answer with `status`.
pub fn render<T: Template>(status: StatusCode, page: &T) -> Response {
    match page.render() {
        Ok(html) => (status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response(),
        Err(error) => {
            tracing::error!(%error, "cannot render a dashboard page");
            (StatusCode::INTERNAL_SERVER_ERROR, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "error")
                .into_response()
        }
    }
}

/// A message alone: a used invitation, a refused form, an error.
#[derive(Template)]
#[template(path = "dashboard/message.html")]
pub struct MessagePage<'a> {
    pub chrome: Chrome,
    pub title: &'static str,
    pub text: &'a str,
}

#[derive(Template)]
#[template(path = "dashboard/not_found.html")]
pub struct NotFoundPage {
    pub chrome: Chrome,
}

#[derive(Template)]
#[template(path = "dashboard/login.html")]
pub struct LoginPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub email: String,
    /// Why the last attempt failed.
    pub error: Option<String>,
    /// What the last action did (signed out).
    pub notice: Option<&'static str>,
}

/// "Forgot your password?": an email to send a link to.
#[derive(Template)]
#[template(path = "dashboard/forgot.html")]
pub struct ForgotPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub email: String,
    /// What asking did (the same sentence whatever the email).
    pub notice: Option<&'static str>,
    /// False when the server cannot send mail: the page says whom to ask instead.
    pub mail_on: bool,
}

/// A reset link's page: the new password, twice.
#[derive(Template)]
#[template(path = "dashboard/reset.html")]
pub struct ResetPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub token: String,
    pub email: String,
    pub password_error: Option<&'static str>,
    pub confirm_error: Option<&'static str>,
}

#[derive(Template)]
#[template(path = "dashboard/code.html")]
pub struct CodePage {
    pub chrome: Chrome,
    pub csrf: String,
    pub error: Option<&'static str>,
}

#[derive(Template)]
#[template(path = "dashboard/two_step.html")]
pub struct TwoStepPage {
    pub chrome: Chrome,
    pub csrf: String,
    /// True when the user already signs in with a code.
    pub enrolled: bool,
    /// True when enrolling is the last step of signing in (the brand requires it).
    pub signing_in: bool,
    pub secret: String,
    pub url: String,
    /// The QR code of `url`, an `<svg>` element built by the server.
    pub qr_svg: String,
    pub error: Option<&'static str>,
}

/// The recovery codes just made, shown this once.
#[derive(Template)]
#[template(path = "dashboard/recovery_codes.html")]
pub struct RecoveryCodesPage {
    pub chrome: Chrome,
    /// `xxxxx-xxxxx`, ten of them.
    pub codes: Vec<String>,
    /// Where "Continue" leads.
    pub continue_to: String,
    /// True when the codes come with two-step sign-in just set up (not renewed).
    pub enrolled_now: bool,
}

impl RecoveryCodesPage {
    /// The codes one per line, as the copy field and the download hold them.
    pub fn text(&self) -> String {
        let mut text = String::from("rehome recovery codes: each works once, instead of a two-step code.\n");
        for code in &self.codes {
            text.push_str(code);
            text.push('\n');
        }
        text
    }

    /// The download link's address: the codes as a text file.
    pub fn download(&self) -> String {
        let encoded: String = url::form_urlencoded::byte_serialize(self.text().as_bytes()).collect();
        format!("data:text/plain;charset=utf-8,{}", encoded.replace('+', "%20"))
    }
}

/// Errors of the change-password form, each shown beside its field.
#[derive(Debug, Default)]
pub struct PasswordErrors {
    pub current: Option<&'static str>,
    pub new: Option<&'static str>,
    pub confirm: Option<&'static str>,
}

/// Errors of the two-step forms of the account page, each beside its field.
#[derive(Debug, Default)]
pub struct TwoStepErrors {
    /// The password of the "new recovery codes" form.
    pub renew_password: Option<&'static str>,
    /// The password of the "turn off" form.
    pub off_password: Option<&'static str>,
    /// The code of the "turn off" form.
    pub off_code: Option<&'static str>,
}

impl AccountPage {
    /// The error summary of the refused form (password change, new recovery codes, turning
    /// two-step off), each reason linking to its field.
    pub fn error_summary(&self) -> Vec<SummaryLink> {
        let (p, t) = (&self.password_errors, &self.two_step_errors);
        [
            ("current_password", p.current),
            ("new_password", p.new),
            ("confirm_password", p.confirm),
            ("renew_password", t.renew_password),
            ("off_password", t.off_password),
            ("off_code", t.off_code),
        ]
        .into_iter()
        .filter_map(|(id, message)| Some(SummaryLink { href: format!("#{id}"), message: message?.to_owned() }))
        .collect()
    }
}

/// A signed-in session as the account page lists it.
#[derive(Debug)]
pub struct SessionRow {
    pub started: String,
    pub last_seen: String,
    pub ip: String,
    pub current: bool,
}

/// The user's own account: who they are, two-step sign-in and recovery codes, the
/// password, their sessions; for admins the brand's two-step rule.
#[derive(Template)]
#[template(path = "dashboard/account.html")]
pub struct AccountPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub name: String,
    pub email: String,
    pub brand: String,
    pub role: String,
    pub is_admin: bool,
    pub totp_enrolled: bool,
    pub require_totp: bool,
    /// Unused recovery codes.
    pub recovery_left: i64,
    pub sessions: Vec<SessionRow>,
    pub password_errors: PasswordErrors,
    pub two_step_errors: TwoStepErrors,
    /// What the last action did.
    pub notice: Option<String>,
}

#[derive(Template)]
#[template(path = "dashboard/invite.html")]
pub struct InvitePage {
    pub chrome: Chrome,
    pub csrf: String,
    pub token: String,
    pub email: String,
    pub brand: String,
    pub password_error: Option<&'static str>,
    pub confirm_error: Option<&'static str>,
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_capped_count_says_more_than() {
        use super::{count_words, pages_of};
        assert_eq!(count_words(1, "entry", "entries"), "1 entry");
        assert_eq!(count_words(0, "entry", "entries"), "0 entries");
        assert_eq!(count_words(2_500, "entry", "entries"), "2,500 entries");
        assert_eq!(count_words(10_001, "redemption", "redemptions"), "More than 10,000 redemptions");
        assert_eq!((pages_of(0, 50), pages_of(51, 50), pages_of(10_001, 50)), (1, 2, 200));
    }
    use super::*;
    use chrono::{TimeZone as _, Utc};

    #[test]
    fn instants_are_written_in_the_brands_zone_with_its_abbreviation() {
        let london = TimeZone::parse("Europe/London").unwrap();
        let winter = Utc.with_ymd_and_hms(2026, 11, 27, 8, 39, 5).unwrap();
        let summer = Utc.with_ymd_and_hms(2026, 6, 1, 8, 30, 0).unwrap();
        assert_eq!(when(winter, london), "27 Nov 2026, 08:39 GMT");
        assert_eq!(when(summer, london), "1 Jun 2026, 09:30 BST");
        let tokyo = TimeZone::parse("Asia/Tokyo").unwrap();
        assert_eq!(when(winter, tokyo), "27 Nov 2026, 17:39 JST");
        assert_eq!(when_or_never(None, tokyo), "never");
    }

    #[test]
    fn a_calendar_date_is_the_same_day_everywhere_and_an_instant_has_its_local_day() {
        let date = chrono::NaiveDate::from_ymd_opt(2026, 12, 1).unwrap();
        assert_eq!(day(date), "1 Dec 2026");
        let late = Utc.with_ymd_and_hms(2026, 11, 30, 23, 30, 0).unwrap();
        assert_eq!(day_of(late, TimeZone::parse("Europe/London").unwrap()), "30 Nov 2026");
        assert_eq!(day_of(late, TimeZone::parse("Europe/Paris").unwrap()), "1 Dec 2026");
        let run = chrono::NaiveDate::from_ymd_opt(2026, 12, 1).unwrap();
        assert_eq!(utc_midnight_day(run, TimeZone::parse("Asia/Tokyo").unwrap()), "1 Dec 2026");
        assert_eq!(utc_midnight_day(run, TimeZone::parse("America/New_York").unwrap()), "30 Nov 2026");
    }

    #[test]
    fn a_date_field_starts_at_midnight_in_the_brands_zone() {
        let june = chrono::NaiveDate::from_ymd_opt(2027, 6, 30).unwrap();
        let london = TimeZone::parse("Europe/London").unwrap();
        assert_eq!(start_of_day(june, london), Utc.with_ymd_and_hms(2027, 6, 29, 23, 0, 0).unwrap());
        let utc = TimeZone::parse("UTC").unwrap();
        assert_eq!(start_of_day(june, utc), Utc.with_ymd_and_hms(2027, 6, 30, 0, 0, 0).unwrap());
        // Santiago skipped from 00:00 to 01:00 on 8 Sep 2024: the day began at 01:00 there.
        let skipped = chrono::NaiveDate::from_ymd_opt(2024, 9, 8).unwrap();
        let santiago = TimeZone::parse("America/Santiago").unwrap();
        assert_eq!(start_of_day(skipped, santiago), Utc.with_ymd_and_hms(2024, 9, 8, 4, 0, 0).unwrap());
    }
}
