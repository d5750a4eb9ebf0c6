//! The one error type of the HTTP API and its JSON rendering: `{code, message}`; and where a
//! store failure becomes an answer, of the API and of the dashboard's pages.

use std::borrow::Cow;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::outcome::{Kind, Outcome};
use crate::domain::FieldError;
use crate::http::json::{self, Json};
use crate::store::{outage, Outage, StoreError};
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
    Internal(#[from] anyhow::Error),
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
    pub fn client(status: StatusCode, code: &'static str, message: impl Into<Cow<'static, str>>) -> Self {
        Self::Client { status, code, message: message.into() }
    }

    pub fn bad_request(code: &'static str, message: impl Into<Cow<'static, str>>) -> Self {
        Self::client(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn missing_bearer_token() -> Self {
        Self::client(
            StatusCode::UNAUTHORIZED,
            "missing_bearer_token",
            "Send the API key as 'Authorization: Bearer <API_KEY>'.",
        )
    }

    /// Unknown, revoked, expired and malformed keys answer exactly alike.
    pub fn invalid_token() -> Self {
        Self::client(
            StatusCode::UNAUTHORIZED,
            "invalid_token",
            "The API key is malformed, unknown, expired or revoked.",
        )
    }

    pub fn forbidden(message: &'static str) -> Self {
        Self::client(StatusCode::FORBIDDEN, "forbidden", message)
    }

    /// The database did not answer (503 with `Retry-After`); `cause` is logged, never answered.
    pub fn unavailable(cause: impl Into<String>) -> Self {
        Self::Outage { kind: Outage::Unavailable, cause: cause.into() }
    }

    /// The server's storage is full (507 with `Retry-After`); `cause` is logged, never answered.
    pub fn storage_full(cause: impl Into<String>) -> Self {
        Self::Outage { kind: Outage::StorageFull, cause: cause.into() }
    }

    pub fn not_found(code: &'static str, message: impl Into<Cow<'static, str>>) -> Self {
        Self::client(StatusCode::NOT_FOUND, code, message)
    }

    pub fn invalid_body(message: impl Into<Cow<'static, str>>) -> Self {
        Self::bad_request("invalid_body", message)
    }

    pub fn validation(errors: Vec<FieldError>) -> Self {
        Self::Validation(errors)
    }

    /// A use case's refusal from the catalogue; a use case that names none for an error
    /// it reports as a refusal is a bug of the service (a 500, logged with the error).
    pub fn refused(outcome: Option<Outcome>, error: &dyn std::fmt::Debug) -> Self {
        match outcome {
            Some(outcome) => outcome.into(),
            None => Self::Internal(anyhow::anyhow!("a refusal without an outcome: {error:?}")),
        }
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

/// A use case's refusal, answered with the catalogue's code and sentence.
impl From<Outcome> for ApiError {
    fn from(outcome: Outcome) -> Self {
        Self::client(status_of(outcome.kind()), outcome.code(), outcome.message())
    }
}

/// Every store error is a failure of the service (an unreachable database, a missing data
/// key): an opaque 500. Matched without a catch-all, so a new kind of store error must be
/// placed here on purpose.
impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Database(e) => e.into(),
            e @ StoreError::Sealing(_) => Self::Internal(e.into()),
        }
    }
}

/// A store failure as a dashboard page: an outage is answered as one (507 or 503, "nothing
/// was saved"), anything else as the 500 page (the cause logged, never shown).
impl From<StoreError> for PageError {
    fn from(e: StoreError) -> Self {
        match &e {
            StoreError::Database(db) => match outage(db) {
                Some(kind) => Self::Outage(outage_status(kind), e.to_string()),
                None => Self::internal(e),
            },
            StoreError::Sealing(_) => Self::internal(e),
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

/// A database outage is answered as one (507, 503); any other database error is a 500.
impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> Self {
        match outage(&e) {
            Some(kind) => Self::Outage { kind, cause: e.to_string() },
            None => Self::Database(e),
        }
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
