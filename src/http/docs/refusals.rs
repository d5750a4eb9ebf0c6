//! An operation's error answers in the document, generated from what it can refuse: a
//! refusal of the catalogue is documented with the status of its kind, its code and the
//! sentence the API sends, so no status is written by hand and a code reads the same in
//! the document and in an answer. The answers every operation shares (401, 403, 429, 500,
//! 503, 507) are added once for all ([`super::answers`], [`super::finish`]).
//!
//! A handler declares what it can refuse with [`refusals!`] and names the type in its
//! `responses(…)`, beside its success answers.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};

use crate::domain::limits::MAX_PIXELS;
use crate::domain::outcome::Outcome;
use crate::error::status_of;

/// One thing an operation can refuse.
#[derive(Debug, Clone, Copy)]
pub enum Refused {
    /// A refusal of the catalogue.
    Outcome(Outcome),
    /// The request as a whole: `invalid_body` and `validation_failed` with the reasons the
    /// text lists (400).
    Invalid(&'static str),
    /// A body over the server's limit (413 `payload_too_large`).
    TooLarge,
    /// A body of a media type the operation does not read (415 `unsupported_media_type`); the
    /// text says what it reads.
    MediaType(&'static str),
    /// Every place for large bodies or image decodes taken (503 `server_busy`, with
    /// `Retry-After`).
    Busy,
}

impl Refused {
    fn status(self) -> StatusCode {
        match self {
            Self::Outcome(outcome) => status_of(outcome.kind()),
            Self::Invalid(_) => StatusCode::BAD_REQUEST,
            Self::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::MediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Busy => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn text(self) -> String {
        match self {
            // Its sentence names the image's own size: the document says the limit.
            Self::Outcome(outcome @ Outcome::TooManyPixels { .. }) => format!(
                "`{}`: more than {} megapixels by the image's header (it is never decoded)",
                outcome.code(),
                MAX_PIXELS / 1_000_000
            ),
            Self::Outcome(outcome) => format!("`{}`: {}", outcome.code(), outcome.message()),
            Self::Invalid(reasons) => reasons.to_owned(),
            Self::TooLarge => "`payload_too_large`: the body is over the server's limit; nothing was read".to_owned(),
            Self::MediaType(reads) => format!("`unsupported_media_type`: the body is not {reads}"),
            Self::Busy => {
                "`server_busy` (with `Retry-After`): too many large bodies or image decodes at once; send it \
                           again"
                    .to_owned()
            }
        }
    }
}

/// The answers of `refused`, one per status: the texts of its refusals (in the order given)
/// and the error body's schema.
pub fn responses(refused: &[Refused]) -> BTreeMap<String, RefOr<Response>> {
    let mut by_status: BTreeMap<u16, Vec<String>> = BTreeMap::new();
    for refusal in refused {
        let texts = by_status.entry(refusal.status().as_u16()).or_default();
        let text = refusal.text();
        if !texts.contains(&text) {
            texts.push(text);
        }
    }
    by_status
        .into_iter()
        .map(|(status, texts)| {
            let body = ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build();
            let response =
                ResponseBuilder::new().description(texts.join("; or ")).content("application/json", body).build();
            (status.to_string(), RefOr::T(response))
        })
        .collect()
}

/// Declares `$name`, the error answers of an operation that can refuse the items listed
/// ([`Refused`] values), for its `#[utoipa::path(responses(…))]`.
macro_rules! refusals {
    ($(#[$doc:meta])* $name:ident: [$($item:expr),* $(,)?]) => {
        $(#[$doc])*
        pub struct $name;

        impl utoipa::IntoResponses for $name {
            fn responses() -> std::collections::BTreeMap<String, utoipa::openapi::RefOr<utoipa::openapi::Response>> {
                #[allow(unused_imports)]
                use $crate::http::docs::refusals::Refused::{self, *};
                #[allow(unused_imports)]
                use $crate::domain::outcome::Outcome;
                $crate::http::docs::refusals::responses(&[$($item),*])
            }
        }
    };
}
pub(crate) use refusals;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_of_one_status_share_an_answer_in_the_order_given() {
        let answers = responses(&[
            Refused::Outcome(Outcome::ListingNotFound),
            Refused::Outcome(Outcome::ListingNotActive),
            Refused::Outcome(Outcome::InsufficientStock),
            Refused::Invalid("`invalid_body` or `validation_failed`: `quantity_invalid`"),
        ]);
        assert_eq!(answers.keys().collect::<Vec<_>>(), ["400", "404", "409"]);
        let RefOr::T(conflict) = &answers["409"] else { panic!("an answer, not a reference") };
        assert_eq!(
            conflict.description,
            format!(
                "`listing_not_active`: {}; or `insufficient_stock`: {}",
                Outcome::ListingNotActive.message(),
                Outcome::InsufficientStock.message()
            )
        );
        let json = serde_json::to_value(conflict).unwrap();
        assert_eq!(json["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/ErrorBody");
    }
}
