//! The one error type of the HTTP API and its JSON rendering: `{code, message}`; and where a
//! store failure becomes an answer, of the API and of the dashboard's pages.

use std::borrow::Cow;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::outcome::Kind;
use crate::domain::FieldError;
use crate::http::json::{self, Json};
use crate::store::{outage, Outage, StoreError};
use crate::usecases::refusal::Refusal;
use crate::web::extract::PageError;

/// The body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    pub code: Cow<'static, str>,
    pub message: Cow<'static, str>,
    /// Present on `validation_failed` only: the first [`MAX_REASONS`] reasons.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<FieldError>>,
    /// Reasons beyond the first [`MAX_REASONS`], not listed (`validation_failed` only, when
    /// there are any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors_omitted: Option<usize>,
}

/// Most reasons a `validation_failed` answer lists: an answer stays a few kilobytes
/// whatever the request held (a body of 14,000 unknown keys once answered 43 MB).
pub const MAX_REASONS: usize = 100;

/// Longest field name an answer echoes, in characters; a longer one is cut and ends `…`.
pub const MAX_ECHOED_NAME: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A client error with one of the spec's codes.
    #[error("{code}: {message}")]
    Client { status: StatusCode, code: &'static str, message: Cow<'static, str> },
    /// `validation_failed`: every reason at once.
    #[error("validation failed: {0:?}")]
    Validation(Vec<FieldError>),
    #[error("rate limited")]
    RateLimited { retry_after_secs: u64, by: Limited },
    /// A full disk or an unavailable database (see [`Outage`]): 507 or 503, with
    /// `Retry-After`; `cause` is logged, never answered.
    #[error("database outage ({kind:?}): {cause}")]
    Outage { kind: Outage, cause: String },
    #[error(transparent)]
    Database(sqlx::Error),
    #[error(transparent)]
    Internal(anyhow::Error),
}

/// Whose quota a `rate_limited` answer ran out of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limited {
    /// The API key's.
    Key,
    /// The client address's: requests without a valid key share it (decisions 2.3).
    Address,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// A client error: made only from the catalogue ([`Outcome`]) and the API's own
    /// refusals ([`HttpRefusal`]).
    fn client(status: StatusCode, code: &'static str, message: impl Into<Cow<'static, str>>) -> Self {
        Self::Client { status, code, message: message.into() }
    }

    /// The database did not answer (503 with `Retry-After`); `cause` is logged, never answered.
    pub fn unavailable(cause: impl Into<String>) -> Self {
        Self::Outage { kind: Outage::Unavailable, cause: cause.into() }
    }

    /// The server's storage is full (507 with `Retry-After`); `cause` is logged, never answered.
    pub fn storage_full(cause: impl Into<String>) -> Self {
        Self::Outage { kind: Outage::StorageFull, cause: cause.into() }
    }

    /// `invalid_body`, with why the body could not be read.
    pub fn invalid_body(message: impl Into<Cow<'static, str>>) -> Self {
        HttpRefusal::InvalidBody(message.into()).into()
    }

    pub fn validation(errors: Vec<FieldError>) -> Self {
        Self::Validation(errors)
    }

    /// A single validation reason on one field.
    pub fn field(field: &str, code: impl Into<String>) -> Self {
        Self::Validation(vec![FieldError::new(field, code)])
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::Client { status, .. } => *status,
            Self::Validation(_) => StatusCode::BAD_REQUEST,
            Self::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Outage { kind, .. } => outage_status(*kind),
            Self::Database(_) | Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Seconds a client should wait before trying again, for the answers that say so.
    fn retry_after(&self) -> Option<u64> {
        match self {
            Self::RateLimited { retry_after_secs, .. } => Some((*retry_after_secs).max(1)),
            Self::Outage { .. } => Some(OUTAGE_RETRY_AFTER_SECS),
            _ => None,
        }
    }

    fn body(self) -> ErrorBody {
        match self {
            Self::Client { code, message, .. } => {
                ErrorBody { code: code.into(), message, errors: None, errors_omitted: None }
            }
            Self::Validation(errors) => {
                let omitted = errors.len().saturating_sub(MAX_REASONS);
                let listed: Vec<FieldError> = errors.into_iter().take(MAX_REASONS).map(bounded).collect();
                let mut message = listed.iter().map(|e| e.code.as_str()).collect::<Vec<_>>().join(", ");
                if omitted > 0 {
                    message.push_str(&format!(", and {omitted} more"));
                }
                ErrorBody {
                    code: "validation_failed".into(),
                    message: message.into(),
                    errors: Some(listed),
                    errors_omitted: (omitted > 0).then_some(omitted),
                }
            }
            Self::RateLimited { by, .. } => ErrorBody {
                code: "rate_limited".into(),
                message: match by {
                    Limited::Key => {
                        "Rate limit exceeded for this API key; retry after the number of seconds in Retry-After."
                    }
                    Limited::Address => {
                        "Rate limit exceeded for requests without a valid API key from this client address; retry \
                         after the number of seconds in Retry-After, with a valid key."
                    }
                }
                .into(),
                errors: None,
                errors_omitted: None,
            },
            Self::Outage { kind, .. } => match kind {
                Outage::StorageFull => ErrorBody {
                    code: "insufficient_storage".into(),
                    message: "The server's storage is full, so nothing was written; retry after the number of \
                              seconds in Retry-After."
                        .into(),
                    errors: None,
                    errors_omitted: None,
                },
                Outage::Unavailable => ErrorBody {
                    code: "database_unavailable".into(),
                    message: "The database is unavailable for now, so nothing was written; retry after the \
                              number of seconds in Retry-After."
                        .into(),
                    errors: None,
                    errors_omitted: None,
                },
            },
            Self::Database(_) | Self::Internal(_) => internal_body(),
        }
    }
}

pub use crate::domain::limits::OUTAGE_RETRY_AFTER_SECS;

/// A reason whose field name (which may be a client's key, echoed in the code as
/// `<key>_unknown`) is cut to [`MAX_ECHOED_NAME`] characters.
fn bounded(error: FieldError) -> FieldError {
    if error.field.chars().count() <= MAX_ECHOED_NAME {
        return error;
    }
    let cut: String = error.field.chars().take(MAX_ECHOED_NAME).collect::<String>() + "…";
    let code = match error.code.strip_prefix(error.field.as_str()) {
        Some(suffix) => format!("{cut}{suffix}"),
        None => error.code.chars().take(MAX_ECHOED_NAME * 2).collect(),
    };
    FieldError::new(cut, code)
}

fn internal_body() -> ErrorBody {
    ErrorBody {
        code: json::INTERNAL_ERROR_CODE.into(),
        message: json::INTERNAL_ERROR_MESSAGE.into(),
        errors: None,
        errors_omitted: None,
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        match &self {
            Self::Outage { cause, .. } => tracing::warn!(error = %cause, %status, "database outage"),
            Self::Database(e) => tracing::error!(error = %e, "database error"),
            Self::Internal(e) => tracing::error!(error = ?e, "internal error"),
            _ => {}
        }
        let retry_after = self.retry_after();
        let mut response = (status, Json(self.body())).into_response();
        if let Some(secs) = retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

/// The status the API answers a refusal of `kind` with: in answers, and in the document
/// (`http::docs::refusals`).
pub fn status_of(kind: Kind) -> StatusCode {
    match kind {
        Kind::BadRequest => StatusCode::BAD_REQUEST,
        Kind::Forbidden => StatusCode::FORBIDDEN,
        Kind::NotFound => StatusCode::NOT_FOUND,
        Kind::Conflict => StatusCode::CONFLICT,
        Kind::PreconditionFailed => StatusCode::PRECONDITION_FAILED,
        Kind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        Kind::Unsupported => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        Kind::Gone => StatusCode::GONE,
    }
}

/// What a use case refused or failed at, answered one way: a catalogue refusal with its
/// code, status and sentence, reasons as `validation_failed`, a store outage as one (507 or
/// 503), any other failure as an opaque 500. Every use case's error reaches the API through
/// here (its `From<…> for Refusal` places each variant).
impl<E: Into<Refusal>> From<E> for ApiError {
    fn from(e: E) -> Self {
        match e.into() {
            Refusal::Refused(outcome) => Self::client(status_of(outcome.kind()), outcome.code(), outcome.message()),
            Refusal::Invalid(reasons) => Self::Validation(reasons),
            Refusal::BadFile(why) => HttpRefusal::BadFile(why).into(),
            Refusal::Store(StoreError::Database(e)) => match outage(&e) {
                Some(kind) => Self::Outage { kind, cause: e.to_string() },
                None => Self::Database(e),
            },
            Refusal::Store(e @ StoreError::Sealing(_)) => Self::Internal(e.into()),
            Refusal::StorageFull(cause) => Self::storage_full(cause),
            Refusal::Internal(e) => Self::Internal(e),
        }
    }
}

/// The API's own refusals of a request as HTTP (its credentials, its route, its body), apart
/// from the use cases' ([`Outcome`], the catalogue): their codes, statuses and sentences in
/// one place. A sentence that depends on the request is the variant's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpRefusal {
    /// No `Authorization: Bearer` header (401 `missing_bearer_token`).
    MissingBearerToken,
    /// A key that is malformed, unknown, expired or revoked: all alike (401 `invalid_token`).
    InvalidToken,
    /// The operator API without its token (401 `missing_bearer_token`).
    MissingOperatorToken,
    /// The operator API with another token (401 `invalid_token`).
    WrongOperatorToken,
    /// A key whose user is not a partner admin (403 `forbidden`).
    NotAdmin,
    /// A key without the scope its method needs, `read` or `write` (403 `forbidden`).
    MissingScope(&'static str),
    /// No route serves the path (404 `not_found`).
    NoRoute,
    /// No media object has the name (404 `not_found`).
    NoMedia,
    /// The route does not take the method (405 `method_not_allowed`).
    MethodNotAllowed,
    /// The readiness probe could not reach the database (503 `not_ready`).
    NotReady,
    /// A body over the server's limit (413 `payload_too_large`).
    TooLarge,
    /// A JSON endpoint sent another media type (415 `unsupported_media_type`).
    NotJson,
    /// A photo upload of neither JSON nor a form (415 `unsupported_media_type`).
    NotJsonOrForm,
    /// A body that cannot be read as the endpoint's shape (400 `invalid_body`), and why.
    InvalidBody(Cow<'static, str>),
    /// A body that arrived too slowly (408 `request_timeout`).
    TooSlow,
    /// Every place of a kind taken (503 `server_busy`; the answer adds `Retry-After: 1`),
    /// and which.
    Busy(&'static str),
    /// The bodies in flight of one key, network or address at their limit (429
    /// `rate_limited`; the answer adds `Retry-After: 1`), and whose.
    BodiesLimited(&'static str),
    /// `image_base64` that is not standard base64 (400 `bad_image_base64`), and how.
    BadImageBase64(&'static str),
    /// A photo upload without a photo (400 `no_image`).
    NoImage,
    /// A spreadsheet the import cannot read (400 `bad_file`), and why.
    BadFile(String),
    /// An `Idempotency-Key` that is not 1 to 255 visible ASCII characters (400).
    IdempotencyKeyInvalid,
    /// The key's first request is still running (409).
    IdempotencyKeyInUse,
    /// The key was used for another request (422).
    IdempotencyKeyReused,
}

impl HttpRefusal {
    pub fn status(&self) -> StatusCode {
        match self {
            Self::MissingBearerToken | Self::InvalidToken | Self::MissingOperatorToken | Self::WrongOperatorToken => {
                StatusCode::UNAUTHORIZED
            }
            Self::NotAdmin | Self::MissingScope(_) => StatusCode::FORBIDDEN,
            Self::NoRoute | Self::NoMedia => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::NotReady | Self::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::NotJson | Self::NotJsonOrForm => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::TooSlow => StatusCode::REQUEST_TIMEOUT,
            Self::BodiesLimited(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::InvalidBody(_)
            | Self::BadImageBase64(_)
            | Self::NoImage
            | Self::BadFile(_)
            | Self::IdempotencyKeyInvalid => StatusCode::BAD_REQUEST,
            Self::IdempotencyKeyInUse => StatusCode::CONFLICT,
            Self::IdempotencyKeyReused => StatusCode::UNPROCESSABLE_ENTITY,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            Self::MissingBearerToken | Self::MissingOperatorToken => "missing_bearer_token",
            Self::InvalidToken | Self::WrongOperatorToken => "invalid_token",
            Self::NotAdmin | Self::MissingScope(_) => "forbidden",
            Self::NoRoute | Self::NoMedia => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::NotReady => "not_ready",
            Self::TooLarge => "payload_too_large",
            Self::NotJson | Self::NotJsonOrForm => "unsupported_media_type",
            Self::InvalidBody(_) => "invalid_body",
            Self::TooSlow => "request_timeout",
            Self::Busy(_) => "server_busy",
            Self::BodiesLimited(_) => "rate_limited",
            Self::BadImageBase64(_) => "bad_image_base64",
            Self::NoImage => "no_image",
            Self::BadFile(_) => "bad_file",
            Self::IdempotencyKeyInvalid => "idempotency_key_invalid",
            Self::IdempotencyKeyInUse => "idempotency_key_in_use",
            Self::IdempotencyKeyReused => "idempotency_key_reused",
        }
    }

    /// What is wrong and what to do, in a sentence.
    pub fn message(self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            Self::MissingBearerToken => "Send the API key as 'Authorization: Bearer <API_KEY>'.",
            Self::InvalidToken => "The API key is malformed, unknown, expired or revoked.",
            Self::MissingOperatorToken => "Send the operator token as 'Authorization: Bearer <REHOME_OPS_TOKEN>'.",
            Self::WrongOperatorToken => "The operator token is wrong.",
            Self::NotAdmin => "Only partner admins may use the API.",
            Self::MissingScope("read") => "This API key does not have the read scope.",
            Self::MissingScope(_) => "This API key does not have the write scope.",
            Self::NoRoute => "No such endpoint; see /v1/openapi.json for the API.",
            Self::NoMedia => "No such media object.",
            Self::MethodNotAllowed => "This endpoint does not accept that method.",
            Self::NotReady => "The database is not reachable.",
            Self::TooLarge => "The request body is larger than the server accepts.",
            Self::NotJson => "Send the body as JSON with 'Content-Type: application/json'.",
            Self::NotJsonOrForm => {
                "Send the photo as JSON ('Content-Type: application/json', image_base64) or as a form \
                 ('Content-Type: multipart/form-data', a file part named `file`)."
            }
            Self::InvalidBody(message) => return message,
            Self::TooSlow => "The request body arrived too slowly; send it again on a faster connection.",
            Self::Busy(message) | Self::BodiesLimited(message) | Self::BadImageBase64(message) => message,
            Self::NoImage => {
                "Send the photo as image_base64 (JSON) or as a file part named `file` (multipart/form-data)."
            }
            Self::BadFile(message) => return Cow::Owned(message),
            Self::IdempotencyKeyInvalid => "The Idempotency-Key header must be 1 to 255 visible ASCII characters.",
            Self::IdempotencyKeyInUse => {
                "A request with this Idempotency-Key is still running; retry once it has answered."
            }
            Self::IdempotencyKeyReused => {
                "This Idempotency-Key was used for another request (method, path or body); use a new key."
            }
        })
    }
}

/// The API's own refusal, answered with its code and sentence.
impl From<HttpRefusal> for ApiError {
    fn from(refusal: HttpRefusal) -> Self {
        Self::client(refusal.status(), refusal.code(), refusal.message())
    }
}

/// What a use case refused or failed at, as a dashboard page, answered one way: a
/// refusal of something that is not there is the 404 page, any other refusal a page with
/// its sentence (or its reasons' sentences) and the status the API gives it; an outage is
/// answered as one (507 or 503, "nothing was saved"), any other failure as the 500 page
/// (the cause logged, never shown). A page that shows a refusal on its own form matches the
/// use case's error before it gets here.
impl<E: Into<Refusal>> From<E> for PageError {
    fn from(e: E) -> Self {
        match e.into() {
            Refusal::Refused(outcome) if outcome.kind() == Kind::NotFound => Self::NotFound,
            Refusal::Refused(outcome) => Self::Refused(status_of(outcome.kind()), outcome.message().into_owned()),
            Refusal::Invalid(reasons) => Self::Refused(
                StatusCode::BAD_REQUEST,
                reasons.iter().map(|r| r.message.clone()).collect::<Vec<_>>().join(" "),
            ),
            Refusal::BadFile(why) => Self::Refused(StatusCode::BAD_REQUEST, why),
            Refusal::Store(e) => match &e {
                StoreError::Database(db) => match outage(db) {
                    Some(kind) => Self::Outage(outage_status(kind), e.to_string()),
                    None => Self::internal(e),
                },
                StoreError::Sealing(_) => Self::internal(e),
            },
            Refusal::StorageFull(cause) => Self::Outage(StatusCode::INSUFFICIENT_STORAGE, cause),
            Refusal::Internal(e) => Self::internal(e),
        }
    }
}

/// The status of an answer to a database outage: the API's and the dashboard's.
fn outage_status(kind: Outage) -> StatusCode {
    match kind {
        Outage::StorageFull => StatusCode::INSUFFICIENT_STORAGE,
        Outage::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
    }
}

impl ApiError {
    /// As `From<StoreError>`, for a store error shared by several callers (a batched
    /// statement's): an outage is answered as one, anything else as a 500.
    pub fn from_shared(e: &StoreError) -> Self {
        match e {
            StoreError::Database(db) => match outage(db) {
                Some(kind) => Self::Outage { kind, cause: db.to_string() },
                None => Self::Internal(anyhow::anyhow!("{e}")),
            },
            StoreError::Sealing(_) => Self::Internal(anyhow::anyhow!("{e}")),
        }
    }
}

/// The answer given when a handler panics: an opaque 500 in the usual shape.
pub fn panic_response(_panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("handler panicked");
    internal_response()
}

/// `500 internal_error`, when nothing more can be said.
pub fn internal_response() -> Response {
    json::internal_error()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::outcome::Outcome;

    #[test]
    fn validation_message_lists_codes_joined_by_comma_space() {
        let err =
            ApiError::validation(vec![FieldError::of("title", "required"), FieldError::of("price_gbp", "invalid")]);
        let body = err.body();
        assert_eq!(body.code, "validation_failed");
        assert_eq!(body.message, "title_required, price_gbp_invalid");
        assert_eq!(body.errors.map(|e| e.len()), Some(2));
    }

    #[test]
    fn a_database_that_does_not_answer_is_503_with_retry_after_not_500() {
        let response = ApiError::from(sqlx::Error::PoolTimedOut).into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[header::RETRY_AFTER], OUTAGE_RETRY_AFTER_SECS.to_string().as_str());
        let body = ApiError::from(sqlx::Error::PoolClosed).body();
        assert_eq!(body.code, "database_unavailable");
        assert_eq!(ApiError::from(sqlx::Error::RowNotFound).status(), StatusCode::INTERNAL_SERVER_ERROR);
    }

    /// The API's own refusals: a code answers with one status, and a sentence is a sentence.
    #[test]
    fn each_http_refusal_code_has_one_status_and_a_sentence() {
        let all = [
            HttpRefusal::MissingBearerToken,
            HttpRefusal::InvalidToken,
            HttpRefusal::MissingOperatorToken,
            HttpRefusal::WrongOperatorToken,
            HttpRefusal::NotAdmin,
            HttpRefusal::MissingScope("read"),
            HttpRefusal::MissingScope("write"),
            HttpRefusal::NoRoute,
            HttpRefusal::NoMedia,
            HttpRefusal::MethodNotAllowed,
            HttpRefusal::NotReady,
            HttpRefusal::TooLarge,
            HttpRefusal::NotJson,
            HttpRefusal::NotJsonOrForm,
            HttpRefusal::InvalidBody("The request body must be a JSON object.".into()),
            HttpRefusal::TooSlow,
            HttpRefusal::Busy("The server is busy; retry in a moment."),
            HttpRefusal::BodiesLimited("Too many bodies at once; retry in a moment."),
            HttpRefusal::BadImageBase64("image_base64 is not valid base64."),
            HttpRefusal::NoImage,
            HttpRefusal::BadFile("The file is not an .xlsx or CSV file.".into()),
            HttpRefusal::IdempotencyKeyInvalid,
            HttpRefusal::IdempotencyKeyInUse,
            HttpRefusal::IdempotencyKeyReused,
        ];
        for a in &all {
            for b in all.iter().filter(|b| b.code() == a.code()) {
                assert_eq!(a.status(), b.status(), "{} answers with two statuses", a.code());
            }
            let message = a.clone().message();
            assert!(message.ends_with('.'), "{message}");
            let body = ApiError::from(a.clone()).body();
            assert_eq!((body.code.as_ref(), body.message.as_ref()), (a.code(), message.as_ref()));
        }
        assert_ne!(HttpRefusal::MissingScope("read").message(), HttpRefusal::MissingScope("write").message());
    }

    /// A use case's refusal is answered one way by the API and one way by the pages: the
    /// catalogue's code, status and sentence; reasons; an outage as one; anything else opaque.
    #[test]
    fn a_refusal_is_answered_one_way_by_the_api_and_one_way_by_the_pages() {
        let api = ApiError::from(Refusal::Refused(Outcome::LastAdmin));
        assert_eq!(api.status(), StatusCode::CONFLICT);
        assert_eq!(api.body().message, Outcome::LastAdmin.message());
        let api = ApiError::from(Refusal::field("transfer_to", "transfer_to_invalid"));
        assert_eq!(api.body().errors.map(|e| e[0].code.clone()), Some("transfer_to_invalid".to_owned()));
        let outage = Refusal::Store(StoreError::Database(sqlx::Error::PoolTimedOut));
        assert_eq!(ApiError::from(outage).status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(ApiError::from(Refusal::StorageFull("disk".into())).status(), StatusCode::INSUFFICIENT_STORAGE);
        let hidden = ApiError::from(Refusal::internal("no randomness", "/dev/urandom"));
        assert!(!hidden.body().message.contains("urandom"));

        assert!(matches!(PageError::from(Refusal::Refused(Outcome::MemberNotFound)), PageError::NotFound));
        match PageError::from(Refusal::Refused(Outcome::LastAdmin)) {
            PageError::Refused(status, text) => {
                assert_eq!((status, text.as_str()), (StatusCode::CONFLICT, Outcome::LastAdmin.message().as_ref()))
            }
            other => panic!("{other:?}"),
        }
        match PageError::from(Refusal::field("role", "role_invalid")) {
            PageError::Refused(status, text) => {
                assert_eq!(status, StatusCode::BAD_REQUEST);
                assert!(!text.contains("role_invalid") && text.ends_with('.'), "{text}");
            }
            other => panic!("{other:?}"),
        }
        let outage = Refusal::Store(StoreError::Database(sqlx::Error::PoolTimedOut));
        assert!(matches!(PageError::from(outage), PageError::Outage(StatusCode::SERVICE_UNAVAILABLE, _)));
        assert!(matches!(PageError::from(Refusal::internal("x", "y")), PageError::Internal(_)));
    }

    #[test]
    fn internal_errors_hide_their_detail() {
        let err = ApiError::Internal(anyhow::anyhow!("secret path /var/lib/x"));
        assert_eq!(err.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = err.body();
        assert_eq!(body.code, "internal_error");
        assert!(!body.message.contains("/var/lib"));
    }

    #[test]
    fn a_flood_of_reasons_answers_the_first_hundred_and_a_count() {
        let long = "k".repeat(1_000);
        let errors: Vec<FieldError> = (0..14_000).map(|n| FieldError::of(&format!("{long}{n}"), "unknown")).collect();
        let body = ApiError::validation(errors).body();
        assert_eq!(body.errors_omitted, Some(13_900));
        let listed = body.errors.unwrap();
        assert_eq!(listed.len(), MAX_REASONS);
        assert_eq!(listed[0].field, format!("{}…", "k".repeat(MAX_ECHOED_NAME)));
        assert_eq!(listed[0].code, format!("{}…_unknown", "k".repeat(MAX_ECHOED_NAME)));
        assert!(body.message.ends_with(", and 13900 more"));
        let size = serde_json::to_vec(&ErrorBody { errors: Some(listed), ..internal_body() }).unwrap().len();
        assert!(size < 40_000, "{size} bytes");
    }

    #[test]
    fn short_names_are_echoed_whole() {
        let body = ApiError::validation(vec![FieldError::of("colour", "unknown")]).body();
        assert_eq!(body.errors.unwrap()[0].code, "colour_unknown");
        assert_eq!(body.errors_omitted, None);
    }
}
