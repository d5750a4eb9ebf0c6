//! What went wrong with a use case, in one type: [`Refusal`]. A use case keeps its own error
//! enum where an edge must tell its answers apart (a form shows a field's reason, a page a
//! notice of its own); each of those enums says once, here in the core and without a
//! catch-all, which refusal of the catalogue, which field reasons or which failure of the
//! service each of its variants is (`From<…> for Refusal`). The edges then answer a
//! `Refusal` one way each: the API with its code, status and sentence (`rehome::error`),
//! the dashboard with its page. A variant added to a use case's enum does not compile until
//! it is placed, so no refusal reaches a client as a 500 by being forgotten.

use crate::import::{ImportError, UploadRefused};
use rehome_domain::listing::BulkDeleteRefused;
use rehome_domain::outcome::Outcome;
use rehome_domain::FieldError;
use rehome_store::StoreError;

/// What a use case refused or failed at, as the edges answer it.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// A refusal of the request as a whole, from the catalogue: its code, sentence and kind.
    #[error("refused: {}", .0.code())]
    Refused(Outcome),
    /// Reasons on the request's fields (`validation_failed`), every one at once.
    #[error("invalid: {0:?}")]
    Invalid(Vec<FieldError>),
    /// A file the import cannot read (`bad_file`), and what to do about it.
    #[error("unreadable file: {0}")]
    BadFile(String),
    /// The store failed (an outage is answered as one, anything else as a failure).
    #[error(transparent)]
    Store(StoreError),
    /// The disk of a store outside the database (the media directory) is full: nothing was
    /// stored, as with a full database. The cause is logged, never answered.
    #[error("storage full: {0}")]
    StorageFull(String),
    /// Any other failure of the service: logged, never answered.
    #[error(transparent)]
    Internal(anyhow::Error),
}

impl Refusal {
    /// The catalogue's refusal, when it is one.
    pub fn outcome(&self) -> Option<Outcome> {
        match self {
            Self::Refused(outcome) => Some(*outcome),
            _ => None,
        }
    }

    /// A reason on one field, by its whole code (`transfer_to_invalid`).
    pub fn field(field: &str, code: &str) -> Self {
        Self::Invalid(vec![FieldError::new(field, code)])
    }

    /// A failure of the service from anything that says what it was.
    pub fn internal(context: &str, error: impl std::fmt::Display) -> Self {
        Self::Internal(anyhow::anyhow!("{context}: {error}"))
    }
}

impl From<Outcome> for Refusal {
    fn from(outcome: Outcome) -> Self {
        Self::Refused(outcome)
    }
}

impl From<Vec<FieldError>> for Refusal {
    fn from(reasons: Vec<FieldError>) -> Self {
        Self::Invalid(reasons)
    }
}

impl From<StoreError> for Refusal {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

impl From<sqlx::Error> for Refusal {
    fn from(e: sqlx::Error) -> Self {
        Self::Store(StoreError::Database(e))
    }
}

impl From<anyhow::Error> for Refusal {
    fn from(e: anyhow::Error) -> Self {
        Self::Internal(e)
    }
}

/// A file the import cannot read is `bad_file` with what to do; too many rows is a reason
/// on the file.
impl From<ImportError> for Refusal {
    fn from(e: ImportError) -> Self {
        match e {
            ImportError::Refused(why) => Self::BadFile(why),
            ImportError::TooManyRows => Self::field("file", "too_many_rows"),
        }
    }
}

impl From<UploadRefused> for Refusal {
    fn from(e: UploadRefused) -> Self {
        match e {
            UploadRefused::Invalid(reasons) => Self::Invalid(reasons),
            UploadRefused::File(e) => e.into(),
        }
    }
}

impl From<BulkDeleteRefused> for Refusal {
    fn from(e: BulkDeleteRefused) -> Self {
        match e {
            BulkDeleteRefused::NoIds => Outcome::NoIds.into(),
            BulkDeleteRefused::TooMany => Outcome::TooManyIds.into(),
            BulkDeleteRefused::Invalid(reasons) => Self::Invalid(reasons),
        }
    }
}
