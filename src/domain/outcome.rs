//! The one catalogue of outcomes: every refusal a use case answers, with its code (for
//! programs), its sentence (for people: what is wrong and what to do) and its kind. The API
//! sends the code and the sentence (its status from the kind), the dashboard shows the
//! sentence, the bulk error workbook too. Field reasons have theirs in
//! [`super::messages`].

use std::borrow::Cow;

use super::FieldError;

/// What kind of refusal an outcome is; the API answers each with its own status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The request cannot be done as sent (400).
    BadRequest,
    /// The caller may not do it (403).
    Forbidden,
    /// What it names does not exist for the caller (404).
    NotFound,
    /// It collided with another change (409).
    Conflict,
    /// Its `If-Match` condition does not hold (412).
    PreconditionFailed,
    /// The upload is too large (413).
    TooLarge,
    /// The upload is not a type the service reads (415).
    Unsupported,
}

/// One refusal of a use case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    ListingNotFound,
    /// The brand's listing, but another user's.
    NotOwner,
    /// A change that names no field.
    NoFields,
    /// The listing kept changing during the change.
    EditConflict,
    PreconditionFailed,
    PhotoNotFound,
    /// A photo form posted without a photo.
    PhotoRequired,
    UnsupportedImage,
    /// More pixels than the service decodes, by the image's header.
    TooManyPixels {
        width: u32,
        height: u32,
    },
    WarehouseNotFound,
    /// Another change to the brand's warehouses ran at the same time (`edit_conflict`).
    WarehousesContended,
    /// A bulk row's SKU came earlier in the same file.
    SkuDuplicateInFile,
    /// A bulk row's SKU names several of the brand's listings.
    SkuAmbiguous,
    /// A bulk row reviewed on the dashboard in create mode names a SKU the brand already
    /// has: it would be a second listing with that SKU.
    SkuExists,
}

impl Outcome {
    /// One of each outcome (those with data, with an example), for the catalogue's tests.
    pub const EXAMPLES: &'static [Outcome] = &[
        Outcome::ListingNotFound,
        Outcome::NotOwner,
        Outcome::NoFields,
        Outcome::EditConflict,
        Outcome::PreconditionFailed,
        Outcome::PhotoNotFound,
        Outcome::PhotoRequired,
        Outcome::UnsupportedImage,
        Outcome::TooManyPixels { width: 9000, height: 9000 },
        Outcome::WarehouseNotFound,
        Outcome::WarehousesContended,
        Outcome::SkuDuplicateInFile,
        Outcome::SkuAmbiguous,
        Outcome::SkuExists,
    ];

    pub fn code(self) -> &'static str {
        match self {
            Self::ListingNotFound => "listing_not_found",
            Self::NotOwner => "forbidden_not_owner",
            Self::NoFields => "no_fields",
            Self::EditConflict => "edit_conflict",
            Self::PreconditionFailed => "precondition_failed",
            Self::PhotoNotFound => "photo_not_found",
            Self::PhotoRequired => "photo_required",
            Self::UnsupportedImage => "unsupported_mime",
            Self::TooManyPixels { .. } => "image_too_large",
            Self::WarehouseNotFound => "warehouse_not_found",
            Self::WarehousesContended => "edit_conflict",
            Self::SkuDuplicateInFile => "sku_duplicate_in_file",
            Self::SkuAmbiguous => "sku_ambiguous",
            Self::SkuExists => "sku_exists",
        }
    }

    /// What is wrong and what to do, in a sentence.
    pub fn message(self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            Self::ListingNotFound => "No listing with this id in your brand.",
            Self::NotOwner => "Only the user who created a listing may change it.",
            Self::NoFields => "Send at least one field to change.",
            Self::EditConflict => "The listing kept changing during the update; retry.",
            Self::PreconditionFailed => {
                "If-Match does not match the current version (it changed since you read it); nothing was changed. \
                 Read it again and retry."
            }
            Self::PhotoNotFound => "No photo with that id in this brand.",
            Self::PhotoRequired => "Choose a photo to upload.",
            Self::UnsupportedImage => "The image is not a readable JPEG, PNG, WebP or GIF.",
            Self::TooManyPixels { width, height } => {
                return Cow::Owned(format!(
                    "The image is {width}×{height} pixels; at most {} megapixels are accepted. Scale it down and \
                     upload again.",
                    crate::media::sniff::MAX_PIXELS / 1_000_000
                ))
            }
            Self::WarehouseNotFound => "No warehouse with this id in your brand.",
            Self::WarehousesContended => {
                "Another change to this brand's warehouses happened at the same time; try again."
            }
            Self::SkuDuplicateInFile => "This SKU is on an earlier row of the file: give each row its own SKU.",
            Self::SkuAmbiguous => {
                "Several of your listings have this SKU: give them distinct SKUs, or leave the SKU out to create one."
            }
            Self::SkuExists => {
                "A listing with this SKU already exists: choose \u{201c}update the listing with that SKU\u{201d} to update \
                 it, or change the SKU."
            }
        })
    }

    pub fn kind(self) -> Kind {
        match self {
            Self::ListingNotFound | Self::PhotoNotFound | Self::WarehouseNotFound => Kind::NotFound,
            Self::NotOwner => Kind::Forbidden,
            Self::NoFields | Self::PhotoRequired | Self::SkuDuplicateInFile | Self::SkuAmbiguous | Self::SkuExists => {
                Kind::BadRequest
            }
            Self::EditConflict | Self::WarehousesContended => Kind::Conflict,
            Self::PreconditionFailed => Kind::PreconditionFailed,
            Self::UnsupportedImage => Kind::Unsupported,
            Self::TooManyPixels { .. } => Kind::TooLarge,
        }
    }

    /// The outcome as a reason on `field` of a form or a row.
    pub fn on(self, field: &str) -> FieldError {
        FieldError { field: field.to_owned(), code: self.code().to_owned(), message: self.message().into_owned() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each outcome has a code and a sentence that says what to do in words, not the code;
    /// outcomes that share a code (an edit conflict on listings or on warehouses) are of
    /// one kind, so the API answers a code with one status.
    #[test]
    fn every_outcome_has_a_code_and_a_sentence_that_says_what_to_do() {
        for a in Outcome::EXAMPLES {
            for b in Outcome::EXAMPLES.iter().filter(|b| b.code() == a.code()) {
                assert_eq!(a.kind(), b.kind(), "{} answers with two statuses", a.code());
            }
        }
        let to_do = ["retry", "try again", "send", "give", "choose", "scale", "only", "leave", "no ", "read"];
        for outcome in Outcome::EXAMPLES {
            let message = outcome.message();
            assert!(message.ends_with('.'), "{message}");
            assert!(!message.contains(outcome.code()), "the code is not the sentence: {message}");
            let lower = message.to_lowercase();
            assert!(to_do.iter().any(|verb| lower.contains(verb)), "{}: says what to do? {message}", outcome.code());
        }
    }
}
