//! What dashboard handlers extract: the visitor and their session, and forms whose CSRF
//! token has been checked (a POST without a valid one answers 403 and reaches no handler,
//! so it changes nothing). A form posted with an `Origin` header that is not this service's
//! own is refused the same way: browsers send one with every POST, so a page of another
//! site cannot post these forms; a client that sends none (not a browser) still needs the
//! token.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Request};
use axum::http::header::{HOST, ORIGIN, RETRY_AFTER};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::de::DeserializeOwned;
use subtle::ConstantTimeEq;

use super::cookies;
use super::pages::{render, Chrome, MessagePage};
use super::LOGIN;
use crate::domain::limits::OUTAGE_RETRY_AFTER_SECS;
use crate::domain::outcome::Outcome;
use crate::domain::session::Stage;
use crate::domain::user::Admin;
use crate::domain::FieldError;
use crate::state::AppState;
use crate::usecases::people::password_pool::RETRY_AFTER_SECONDS;
use crate::usecases::people::sessions::{self, form_token_valid, issue_form_token, LiveSession};
use crate::usecases::refusal::Refusal;

/// Largest form body read (the dashboard's forms are a few fields).
const MAX_FORM_BYTES: usize = 64 * 1024;

/// Why a page was not served as asked.
#[derive(Debug)]
pub enum PageError {
    /// Not signed in (far enough): 303 to this path.
    Redirect(&'static str),
    /// Not signed in: 303 to the sign-in page, which returns to this page afterwards (a
    /// page read with GET; a form posted without a session is not replayed).
    SignIn(Option<String>),
    /// A POST without a valid CSRF token (or from another origin): 403.
    Forbidden,
    /// A page or action for admins, asked for by a member: 403, saying so.
    AdminOnly,
    /// No such record of the brand (or not one at all): the 404 page.
    NotFound,
    /// A form body that does not parse: 400.
    BadForm,
    /// A use case's refusal a page does not show on its own form: the status the API gives
    /// it, and its sentence.
    Refused(StatusCode, String),
    /// The database is full (507) or unavailable (503): nothing was saved; the cause is
    /// logged (see `crate::error` for which failure is which).
    Outage(StatusCode, String),
    /// Every password worker (or the image decodes' memory) stayed busy: 503 with
    /// `Retry-After`; nothing was checked or saved.
    Busy,
    /// Anything else: logged with its source (and the request's span), shown as the 500
    /// page, which never says what it was.
    Internal(Box<dyn std::error::Error + Send + Sync>),
}

/// A use case's refusal a page words itself: the catalogue's refusal; reasons and failures
/// are the page's error (`From<…> for PageError`).
pub fn outcome_of(refused: impl Into<Refusal>) -> Result<Outcome, PageError> {
    match refused.into() {
        Refusal::Refused(outcome) => Ok(outcome),
        other => Err(other.into()),
    }
}

/// A use case's refusal shown on the form that was sent: its reasons, or the catalogue's
/// refusal as a reason on `field`; a failure of the service is the page's error.
pub fn reasons_on(field: &str, refused: impl Into<Refusal>) -> Result<Vec<FieldError>, PageError> {
    match refused.into() {
        Refusal::Invalid(reasons) => Ok(reasons),
        Refusal::Refused(outcome) => Ok(vec![outcome.on(field)]),
        other => Err(other.into()),
    }
}

impl PageError {
    /// A failure the person cannot act on: its text goes to the log only.
    pub fn internal(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self::Internal(error.into())
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let (status, title, text) = match self {
            Self::Redirect(to) => return Redirect::to(to).into_response(),
            Self::SignIn(next) => {
                let mut response = Redirect::to(LOGIN).into_response();
                if let Some(next) = next
                    .as_deref()
                    .and_then(super::cookies::safe_next)
                    .filter(|n| n.trim_end_matches('/') != super::HOME)
                {
                    cookies::set_next(response.headers_mut(), next);
                }
                return response;
            }
            Self::Forbidden => (
                StatusCode::FORBIDDEN,
                "Forbidden",
                "This form expired or did not come from this page. Reload the page and try again.",
            ),
            Self::AdminOnly => (
                StatusCode::FORBIDDEN,
                "For admins",
                "This page is for your brand's admins. Ask an admin of your team if you need something done here.",
            ),
            Self::NotFound => (
                StatusCode::NOT_FOUND,
                "Not found",
                "There is no such record in your brand: it may have been deleted, or the address is mistyped.",
            ),
            Self::BadForm => (StatusCode::BAD_REQUEST, "Bad request", "The form could not be read."),
            Self::Refused(status, text) => {
                let title = "Not done";
                let mut response = render(status, &MessagePage { chrome: Chrome::guest(), title, text: &text });
                response.extensions_mut().insert(BareMessage { title, text });
                return response;
            }
            Self::Outage(status, error) => {
                tracing::warn!(%error, "dashboard page met a database outage");
                let mut response = render(
                    status,
                    &MessagePage {
                        chrome: Chrome::guest(),
                        title: "Not saved",
                        text: "The service cannot store anything just now, so nothing was changed. Try again in a \
                               few minutes.",
                    },
                );
                response.headers_mut().insert(RETRY_AFTER, HeaderValue::from(OUTAGE_RETRY_AFTER_SECS));
                return response;
            }
            Self::Busy => {
                let text = "The service is busy with other requests at this moment, so nothing was done. Try again \
                            in a few seconds.";
                let mut response = render(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &MessagePage { chrome: Chrome::guest(), title: "Busy", text },
                );
                response.headers_mut().insert(RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
                return response;
            }
            Self::Internal(error) => {
                let mut chain = error.to_string();
                let mut source = error.source();
                while let Some(cause) = source {
                    chain.push_str(": ");
                    chain.push_str(&cause.to_string());
                    source = cause.source();
                }
                tracing::error!(error = %chain, "dashboard page failed");
                (StatusCode::INTERNAL_SERVER_ERROR, "Something went wrong", "Something went wrong. Try again later.")
            }
        };
        let mut response = render(status, &MessagePage { chrome: Chrome::guest(), title, text });
        response.extensions_mut().insert(BareMessage { title, text: text.to_owned() });
        response
    }
}

/// A message page an error drew without the navigation (an error knows no session): the
/// dashboard's `keep_navigation` layer draws it again with the signed-in navigation when the
/// visitor is signed in, so a member's "For admins" page or a 404 keeps the menu.
#[derive(Debug, Clone)]
pub struct BareMessage {
    pub title: &'static str,
    pub text: String,
}

/// The peer address of the connection; never a client-supplied header.
pub fn client_ip(parts: &Parts) -> IpAddr {
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip())
        .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
}

/// Whoever is asking: their address and their live session, at any stage, if any.
#[derive(Debug, Clone)]
pub struct Visitor {
    pub ip: IpAddr,
    pub session: Option<LiveSession>,
    /// The double-submit CSRF cookie, for the forms before a session.
    pub csrf_cookie: Option<String>,
}

impl Visitor {
    /// The session if it is signed in (not waiting for a code or enrolment).
    pub fn signed_in(&self) -> Option<&LiveSession> {
        self.session.as_ref().filter(|s| s.stage() == Stage::Full)
    }

    /// Where a session part-way through signing in continues.
    pub fn continue_at(stage: Stage) -> &'static str {
        match stage {
            Stage::Code => "/dashboard/login/code",
            Stage::Enrol => "/dashboard/account/two-step",
            Stage::Full => super::HOME,
        }
    }
}

impl FromRequestParts<AppState> for Visitor {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, PageError> {
        let ip = client_ip(parts);
        let session = match cookies::get(&parts.headers, cookies::SESSION) {
            Some(token) => sessions::session(&state.core, token, ip).await?,
            None => None,
        };
        let csrf_cookie = cookies::get(&parts.headers, cookies::CSRF).map(str::to_owned);
        Ok(Self { ip, session, csrf_cookie })
    }
}

/// A signed-in session: what every dashboard page but sign-in, code and invitation needs.
/// Without one the page redirects (303) to the sign-in page. A POST from another origin is
/// refused (403) here too, so the multipart forms, which check their token in their
/// handlers ([`admin_multipart`]), are covered as well.
#[derive(Debug, Clone)]
pub struct SignedIn(pub LiveSession);

impl FromRequestParts<AppState> for SignedIn {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, PageError> {
        if !parts.method.is_safe() && !same_origin(parts, state.config.public_url()) {
            return Err(PageError::Forbidden);
        }
        let visitor = Visitor::from_request_parts(parts, state).await?;
        match visitor.session {
            Some(session) if session.stage() == Stage::Full => Ok(Self(session)),
            _ => {
                // The path as asked: the dashboard is nested at `/dashboard`, which its
                // routes see stripped.
                let asked = parts.uri.path_and_query().map(|p| format!("{}{}", super::HOME, p.as_str()));
                Err(PageError::SignIn(asked.filter(|_| parts.method == axum::http::Method::GET)))
            }
        }
    }
}

/// True when `presented` is the non-empty `expected` token (constant time).
fn tokens_match(presented: &str, expected: &str) -> bool {
    !expected.is_empty() && bool::from(presented.as_bytes().ct_eq(expected.as_bytes()))
}

/// One part of a multipart form: its name, its file name (for a file) and its bytes.
pub struct Part {
    pub name: String,
    pub filename: Option<String>,
    pub bytes: Bytes,
}

impl Part {
    /// The part as text (invalid UTF-8 replaced, as a browser never sends it).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// Every part of a multipart form, in order: the one loop over a form's parts (a part the
/// server cannot read is a bad form).
pub async fn multipart_parts(mut multipart: axum::extract::Multipart) -> Result<Vec<Part>, PageError> {
    let mut parts = Vec::new();
    while let Some(field) = multipart.next_field().await.map_err(|_| PageError::BadForm)? {
        let name = field.name().unwrap_or_default().to_owned();
        let filename = field.file_name().map(str::to_owned);
        let bytes = field.bytes().await.map_err(|_| PageError::BadForm)?;
        parts.push(Part { name, filename, bytes });
    }
    Ok(parts)
}

/// The id of a record named in a dashboard path (`/listings/{id}`, a draft's): a positive
/// whole number, else the 404 page.
pub fn record_id(text: &str) -> Result<i64, PageError> {
    text.parse::<i64>().ok().filter(|id| *id > 0).ok_or(PageError::NotFound)
}

/// The dashboard's one authorisation check (decisions 9.4): the session's user as an
/// [`Admin`], or the 403 "For admins" page for a member. The extractors below call it, and
/// the use cases of admin actions take the `Admin` it makes, so a page cannot forget it.
fn admin_of(session: &LiveSession) -> Result<Admin, PageError> {
    session.admin().ok_or(PageError::AdminOnly)
}

/// A signed-in admin: what an admin's page extracts. A member is refused before the
/// handler runs.
#[derive(Debug, Clone)]
pub struct SignedInAdmin {
    pub session: LiveSession,
    pub admin: Admin,
}

impl FromRequestParts<AppState> for SignedInAdmin {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, PageError> {
        let SignedIn(session) = SignedIn::from_request_parts(parts, state).await?;
        let admin = admin_of(&session)?;
        Ok(Self { session, admin })
    }
}

/// A multipart form's check (its token is a field among the others): the session's token,
/// then the admin it is posted by (decisions 9.2, 9.4).
pub fn admin_multipart(session: &LiveSession, presented: &str) -> Result<Admin, PageError> {
    if !tokens_match(presented, &session.record.csrf_token) {
        return Err(PageError::Forbidden);
    }
    admin_of(session)
}

/// The origin (`scheme://host[:port]`) of a URL, as browsers write it in `Origin`.
fn origin_of(url: &str) -> Option<String> {
    url::Url::parse(url).ok().map(|u| u.origin().ascii_serialization())
}

/// True when the request has no `Origin` header, or one naming this service: its public
/// URL's origin, or the host the request was sent to (behind a proxy that keeps `Host`).
fn same_origin(parts: &Parts, public_url: &str) -> bool {
    let Some(origin) = parts.headers.get(ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    if origin_of(public_url).is_some_and(|own| own.eq_ignore_ascii_case(origin)) {
        return true;
    }
    let host = parts.headers.get(HOST).and_then(|h| h.to_str().ok()).filter(|h| !h.is_empty());
    let origin_host = origin.strip_prefix("https://").or_else(|| origin.strip_prefix("http://"));
    matches!((origin_host, host), (Some(sent), Some(host)) if sent.eq_ignore_ascii_case(host))
}

/// Refuses a form from another origin, reads the url-encoded body, checks its `csrf` field
/// against `expected`, then parses it.
async fn checked_form<T: DeserializeOwned>(
    parts: Parts,
    body: Body,
    expected: &str,
    state: &AppState,
) -> Result<T, PageError> {
    if !same_origin(&parts, state.config.public_url()) {
        return Err(PageError::Forbidden);
    }
    let bytes: Bytes = axum::body::to_bytes(body, MAX_FORM_BYTES).await.map_err(|_| PageError::BadForm)?;
    let presented = url::form_urlencoded::parse(&bytes).find(|(k, _)| k == "csrf").map(|(_, v)| v.into_owned());
    if !presented.is_some_and(|p| tokens_match(&p, expected)) {
        return Err(PageError::Forbidden);
    }
    let request = Request::from_parts(parts, Body::from(bytes));
    let Form(form) = Form::<T>::from_request(request, &()).await.map_err(|_| PageError::BadForm)?;
    Ok(form)
}

/// A form posted by a signed-in session, its CSRF token checked against the session's.
#[derive(Debug)]
pub struct SignedInForm<T> {
    pub session: LiveSession,
    pub form: T,
}

impl<T: DeserializeOwned> FromRequest<AppState> for SignedInForm<T> {
    type Rejection = PageError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, PageError> {
        let (mut parts, body) = request.into_parts();
        let SignedIn(session) = SignedIn::from_request_parts(&mut parts, state).await?;
        let form = checked_form(parts, body, &session.record.csrf_token, state).await?;
        Ok(Self { session, form })
    }
}

/// A form posted by a signed-in admin, its CSRF token checked; a member's is refused
/// (403) and changes nothing.
#[derive(Debug)]
pub struct AdminForm<T> {
    pub session: LiveSession,
    pub admin: Admin,
    pub form: T,
}

impl<T: DeserializeOwned> FromRequest<AppState> for AdminForm<T> {
    type Rejection = PageError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, PageError> {
        let SignedInForm { session, form } = SignedInForm::from_request(request, state).await?;
        let admin = admin_of(&session)?;
        Ok(Self { session, admin, form })
    }
}

/// A form posted by a session at any stage (the code and enrolment forms, sign-out).
#[derive(Debug)]
pub struct SessionForm<T> {
    pub session: LiveSession,
    pub form: T,
}

impl<T: DeserializeOwned> FromRequest<AppState> for SessionForm<T> {
    type Rejection = PageError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, PageError> {
        let (mut parts, body) = request.into_parts();
        let visitor = Visitor::from_request_parts(&mut parts, state).await?;
        let session = visitor.session.ok_or(PageError::Redirect(LOGIN))?;
        let form = checked_form(parts, body, &session.record.csrf_token, state).await?;
        Ok(Self { session, form })
    }
}

/// A form posted before there is a session (sign-in, invitation): its `csrf` field must
/// equal the `rehome_csrf` cookie the page set (double submit), and that must be a token
/// this service issued ([`issue_form_token`]), not a value the client chose.
#[derive(Debug)]
pub struct GuestForm<T> {
    pub visitor: Visitor,
    pub form: T,
}

impl<T: DeserializeOwned> FromRequest<AppState> for GuestForm<T> {
    type Rejection = PageError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, PageError> {
        let (mut parts, body) = request.into_parts();
        let visitor = Visitor::from_request_parts(&mut parts, state).await?;
        let expected = visitor.csrf_cookie.clone().filter(|c| form_token_valid(&state.core, c)).unwrap_or_default();
        let form = checked_form(parts, body, &expected, state).await?;
        Ok(Self { visitor, form })
    }
}

/// The double-submit token for a page shown before a session: the visitor's cookie when it
/// is one this service issued and still valid, else a new one to set.
pub fn guest_csrf(state: &AppState, visitor: &Visitor) -> Result<(String, bool), PageError> {
    match visitor.csrf_cookie.as_deref().filter(|c| form_token_valid(&state.core, c)) {
        Some(token) => Ok((token.to_owned(), false)),
        None => Ok((issue_form_token(&state.core)?, true)),
    }
}

/// The form of a page that sets a password from a link (an invitation, a reset): the new
/// password and its confirmation.
#[derive(Debug, serde::Deserialize)]
pub struct NewPasswordForm {
    #[serde(default)]
    pub password: String,
    #[serde(default)]
    pub confirm_password: String,
}

/// A page for a visitor not signed in: `make` builds it around the double-submit token its
/// form carries ([`guest_csrf`]), and the answer sets the token's cookie when it is new.
pub fn guest_page<T: askama::Template>(
    state: &AppState,
    visitor: &Visitor,
    status: axum::http::StatusCode,
    make: impl FnOnce(String) -> T,
) -> Result<Response, PageError> {
    let (csrf, fresh) = guest_csrf(state, visitor)?;
    let mut response = super::pages::render(status, &make(csrf.clone()));
    if fresh {
        cookies::set_csrf(response.headers_mut(), &csrf, state.config.secure_cookies());
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_must_match_exactly_and_not_be_empty() {
        assert!(tokens_match("abc", "abc"));
        assert!(!tokens_match("abd", "abc"));
        assert!(!tokens_match("ab", "abc"));
        assert!(!tokens_match("", ""));
    }

    fn parts(headers: &[(&str, &str)]) -> Parts {
        let mut request = Request::builder().method("POST").uri("/dashboard/login");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(()).unwrap().into_parts().0
    }

    #[test]
    fn a_form_from_this_origin_or_without_one_passes_and_from_any_other_is_refused() {
        let public = "https://partners.rehome.example";
        assert!(same_origin(&parts(&[]), public), "no Origin: not a browser");
        assert!(same_origin(&parts(&[("origin", "https://partners.rehome.example")]), public));
        assert!(same_origin(&parts(&[("origin", "https://PARTNERS.rehome.example")]), public));
        // The host the request was sent to (a proxy keeping Host), on either scheme.
        let proxied = [("origin", "http://10.0.0.5:8080"), ("host", "10.0.0.5:8080")];
        assert!(same_origin(&parts(&proxied), public));
        for other in ["https://evil.example", "null", "https://partners.rehome.example.evil.example", "", "https://"] {
            let headers = [("origin", other), ("host", "partners.rehome.example")];
            assert!(!same_origin(&parts(&headers), public), "{other}");
        }
        // Another port is another origin.
        let headers = [("origin", "http://127.0.0.1:1"), ("host", "127.0.0.1:8080")];
        assert!(!same_origin(&parts(&headers), "http://127.0.0.1:8080"));
        assert!(same_origin(&parts(&[("origin", "http://127.0.0.1:8080")]), "http://127.0.0.1:8080/"));
    }
}
