//! The one catalogue of outcomes: every refusal a use case answers, with its code (for
//! programs), its sentence (for people: what is wrong and what to do) and its kind. The API
//! sends the code and the sentence (its status from the kind), the dashboard shows the
//! sentence, the bulk error workbook too. Field reasons have theirs in
//! [`super::messages`].

use std::borrow::Cow;

use super::listing::MAX_BULK_IDS;
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
    /// What it names existed and is no longer usable (410).
    Gone,
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
    /// An image of [`super::limits::MAX_IMAGE_BYTES`] bytes or more, decoded.
    ImageTooBig,
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
    KeyNotFound,
    /// A revoked or expired key cannot be rolled.
    KeyInactive,
    /// Unknown, removed, or another brand's user.
    MemberNotFound,
    /// The change would leave the brand without an active admin.
    LastAdmin,
    /// A member cannot remove their own user.
    CannotRemoveSelf,
    /// A live user of any brand has the email.
    EmailTaken,
    /// The member has no invitation waiting (they joined, or it was cancelled).
    InvitationNotPending,
    /// A member was sent [`INVITATION_LINKS_PER_DAY`] links within 24 hours.
    InvitationsTooFrequent,
    /// The brand created [`KEYS_PER_HOUR`] keys within the hour.
    KeysTooFrequent,
    /// An admin resetting their own two-step sign-in (they turn it off on their account).
    ResetOwnTwoStep,
    /// The member does not sign in with two steps (or left the team).
    TwoStepNotSet,
    /// No webhook event with that id in the brand's log.
    EventNotFound,
    /// A replay with no enabled webhook endpoint to send to.
    WebhookNotConfigured,
    /// Rotating the signing secret before a webhook URL is set: nothing to rotate (404,
    /// where a replay's `webhook_not_configured` is 409).
    WebhookUrlMissing,
    /// No clearance order with that id in the brand.
    OrderNotFound,
    /// No listing of any brand has the id (the operator API, which acts for every brand).
    UnknownListing,
    /// No order of any brand has the id (the operator API).
    UnknownOrder,
    /// An order of a listing that is a draft or closed (the operator API).
    ListingNotActive,
    /// An order of more units than the listing has.
    InsufficientStock,
    /// Completing an order that is completed already.
    OrderAlreadyCompleted,
    /// A payout choice for an order that is not of an exchange (trade-in) item.
    OrderNotExchange,
    /// A payout choice before the sale is complete.
    OrderNotCompleted,
    /// A second payout choice for one order.
    PayoutChoiceExists,
    /// A payout choice the brand has turned off.
    CustomerChoiceNotOffered,
    /// No statement (remittance) of the brand has that id.
    RemittanceNotFound,
    /// The order's collection is already scheduled.
    CollectionExists,
    /// No scheduled collection with that id in the brand (cancelled, or another brand's).
    CollectionNotFound,
    /// The collection's day has passed: it can no longer be moved or cancelled.
    CollectionPassed,
    /// Other changes to the collection kept winning the race (`edit_conflict`).
    CollectionContended,
    /// No credit code of the brand matches (another brand's code included).
    CreditCodeNotFound,
    CreditCodeAlreadyRedeemed,
    CreditCodeExpired,
    /// A bulk row reviewed on the dashboard in create mode names a SKU the brand already
    /// has: it would be a second listing with that SKU.
    SkuExists,
    /// A payment notice reached a server that takes no payments through a gateway.
    PaymentsNotConfigured,
    /// A payment notice whose signature does not verify its body.
    PaymentSignatureInvalid,
    /// A bulk delete without ids.
    NoIds,
    /// A bulk delete of more than [`MAX_BULK_IDS`] ids.
    TooManyIds,
}

pub use super::limits::{INVITATION_LINKS_PER_DAY, KEYS_PER_HOUR};

/// `10485760` as `10,485,760`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(d);
    }
    out
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
        Outcome::ImageTooBig,
        Outcome::TooManyPixels { width: 9000, height: 9000 },
        Outcome::WarehouseNotFound,
        Outcome::WarehousesContended,
        Outcome::SkuDuplicateInFile,
        Outcome::SkuAmbiguous,
        Outcome::KeyNotFound,
        Outcome::KeyInactive,
        Outcome::MemberNotFound,
        Outcome::LastAdmin,
        Outcome::CannotRemoveSelf,
        Outcome::EmailTaken,
        Outcome::InvitationNotPending,
        Outcome::InvitationsTooFrequent,
        Outcome::KeysTooFrequent,
        Outcome::ResetOwnTwoStep,
        Outcome::TwoStepNotSet,
        Outcome::EventNotFound,
        Outcome::WebhookNotConfigured,
        Outcome::WebhookUrlMissing,
        Outcome::OrderNotFound,
        Outcome::UnknownListing,
        Outcome::UnknownOrder,
        Outcome::ListingNotActive,
        Outcome::InsufficientStock,
        Outcome::OrderAlreadyCompleted,
        Outcome::OrderNotExchange,
        Outcome::OrderNotCompleted,
        Outcome::PayoutChoiceExists,
        Outcome::CustomerChoiceNotOffered,
        Outcome::RemittanceNotFound,
        Outcome::CollectionExists,
        Outcome::CollectionNotFound,
        Outcome::CollectionPassed,
        Outcome::CollectionContended,
        Outcome::CreditCodeNotFound,
        Outcome::CreditCodeAlreadyRedeemed,
        Outcome::CreditCodeExpired,
        Outcome::SkuExists,
        Outcome::PaymentsNotConfigured,
        Outcome::PaymentSignatureInvalid,
        Outcome::NoIds,
        Outcome::TooManyIds,
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
            Self::ImageTooBig | Self::TooManyPixels { .. } => "image_too_large",
            Self::WarehouseNotFound => "warehouse_not_found",
            Self::WarehousesContended => "edit_conflict",
            Self::SkuDuplicateInFile => "sku_duplicate_in_file",
            Self::SkuAmbiguous => "sku_ambiguous",
            Self::KeyNotFound => "key_not_found",
            Self::KeyInactive => "key_inactive",
            Self::MemberNotFound => "member_not_found",
            Self::LastAdmin => "last_admin",
            Self::CannotRemoveSelf => "cannot_remove_self",
            Self::EmailTaken => "email_taken",
            Self::InvitationNotPending => "invitation_not_pending",
            Self::InvitationsTooFrequent => "invitations_too_frequent",
            Self::KeysTooFrequent => "keys_too_frequent",
            Self::ResetOwnTwoStep => "two_step_reset_own",
            Self::TwoStepNotSet => "two_step_not_set",
            Self::EventNotFound => "event_not_found",
            Self::WebhookNotConfigured | Self::WebhookUrlMissing => "webhook_not_configured",
            Self::OrderNotFound => "order_not_found",
            Self::UnknownListing => "listing_not_found",
            Self::UnknownOrder => "order_not_found",
            Self::ListingNotActive => "listing_not_active",
            Self::InsufficientStock => "insufficient_stock",
            Self::OrderAlreadyCompleted => "order_already_completed",
            Self::OrderNotExchange => "order_not_exchange",
            Self::OrderNotCompleted => "order_not_completed",
            Self::PayoutChoiceExists => "payout_choice_exists",
            Self::CustomerChoiceNotOffered => "customer_choice_not_offered",
            Self::RemittanceNotFound => "remittance_not_found",
            Self::CollectionExists => "collection_exists",
            Self::CollectionNotFound => "collection_not_found",
            Self::CollectionPassed => "collection_passed",
            Self::CollectionContended => "edit_conflict",
            Self::CreditCodeNotFound => "credit_code_not_found",
            Self::CreditCodeAlreadyRedeemed => "credit_code_already_redeemed",
            Self::CreditCodeExpired => "credit_code_expired",
            Self::SkuExists => "sku_exists",
            Self::PaymentsNotConfigured => "payments_not_configured",
            Self::PaymentSignatureInvalid => "signature_invalid",
            Self::NoIds => "no_ids",
            Self::TooManyIds => "too_many",
        }
    }

    /// What is wrong and what to do, in a sentence.
    pub fn message(self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            Self::NoIds => "Send the listings to delete as a non-empty array 'ids'.",
            Self::TooManyIds => return Cow::Owned(format!("Send at most {MAX_BULK_IDS} ids per bulk delete.")),
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
            Self::ImageTooBig => {
                return Cow::Owned(format!(
                    "The image is {} MB ({} bytes) or larger: scale it down and upload again.",
                    super::limits::MAX_IMAGE_BYTES / (1024 * 1024),
                    thousands(super::limits::MAX_IMAGE_BYTES as u64)
                ))
            }
            Self::TooManyPixels { width, height } => {
                return Cow::Owned(format!(
                    "The image is {width}×{height} pixels; at most {} megapixels are accepted. Scale it down and \
                     upload again.",
                    super::limits::MAX_PIXELS / 1_000_000
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
            Self::KeyNotFound => "No API key of your brand has this id: check the key's id in the key list.",
            Self::KeyInactive => "This key is revoked or expired, so it cannot be rolled: create a new key instead.",
            Self::MemberNotFound => "No member of your team has this id: they may have been removed already.",
            Self::LastAdmin => {
                "Your team would have no admin left, so nothing was changed: make another member an admin first."
            }
            Self::CannotRemoveSelf => "You cannot remove yourself from the team: ask another admin to do it.",
            Self::EmailTaken => "Use another email: a user of this or another brand already has it.",
            Self::InvitationNotPending => {
                "This person has no invitation waiting (they joined, or it was cancelled): reload the team page."
            }
            Self::KeysTooFrequent => {
                return Cow::Owned(format!(
                    "Your brand created {KEYS_PER_HOUR} API keys in the last hour: wait before creating another, or \
                     roll an existing key to replace it."
                ))
            }
            Self::InvitationsTooFrequent => {
                return Cow::Owned(format!(
                    "This person was sent {INVITATION_LINKS_PER_DAY} invitation links in the last 24 hours: wait a \
                     day before sending another, or cancel the invitation and invite them again later."
                ))
            }
            Self::ResetOwnTwoStep => {
                "You cannot reset your own two-step sign-in here: turn it off on your account page instead."
            }
            Self::TwoStepNotSet => {
                "This member does not sign in with two steps (or left the team), so there is nothing to reset: reload \
                 the team page."
            }
            Self::EventNotFound => "No event with this id in your brand's delivery log.",
            Self::WebhookNotConfigured => {
                "No webhook endpoint is enabled: give it a URL and turn it on (Integrations in the dashboard, or \
                 the webhook settings of the API) first."
            }
            Self::OrderNotFound => "No clearance order with this id in your brand.",
            Self::WebhookUrlMissing => {
                "No webhook endpoint is set up, so there is no secret to rotate: give it a URL first (PATCH \
                 /v1/partner/settings/integrations/webhook)."
            }
            Self::UnknownListing => "No listing has this id: check the listing's id.",
            Self::UnknownOrder => "No order has this id: check the order's id.",
            Self::ListingNotActive => "The listing is not on sale (a draft, or closed): only an active listing is sold.",
            Self::InsufficientStock => "The listing has fewer units than ordered: order fewer, or check its quantity.",
            Self::OrderAlreadyCompleted => "The order is already completed: check an order's status before completing it.",
            Self::OrderNotExchange => "Payout choices are for sold exchange (trade-in) items only.",
            Self::OrderNotCompleted => {
                "The sale is not complete until the item is delivered: complete the order first, then send the choice."
            }
            Self::PayoutChoiceExists => "The customer has already chosen a payout for this order: each order takes only one.",
            Self::CustomerChoiceNotOffered => "The brand does not offer this payout option: choose one it offers.",
            Self::RemittanceNotFound => "No statement of your brand has this id: check the id in your statements list.",
            Self::CollectionExists => {
                "This order's collection is already scheduled: move or cancel that collection to change its date."
            }
            Self::CollectionNotFound => {
                "No scheduled collection with this id in your brand (it may have been cancelled): reload the \
                 collections list."
            }
            Self::CollectionPassed => {
                "This collection's day has passed, so it can no longer be moved or cancelled: contact the buyer \
                 to arrange anything more."
            }
            Self::CollectionContended => {
                "Other changes to this collection happened at the same time and kept coming first; read it again and \
                 retry."
            }
            Self::CreditCodeNotFound => {
                "No credit code of your brand matches: check the code and type it again (case, spaces and dashes \
                 do not matter)."
            }
            Self::CreditCodeAlreadyRedeemed => "This credit code has already been spent: each code works only once.",
            Self::CreditCodeExpired => "This credit code has expired: it can no longer be spent.",
            Self::SkuExists => {
                "A listing with this SKU already exists: choose \u{201c}update the listing with that SKU\u{201d} to update \
                 it, or change the SKU."
            }
            Self::PaymentsNotConfigured => {
                "This server takes no payments through Stripe: set REHOME_PAYMENTS=stripe, or remove the webhook \
                 endpoint at Stripe."
            }
            Self::PaymentSignatureInvalid => {
                "The Stripe-Signature header does not verify this body: check the endpoint's signing secret \
                 (REHOME_STRIPE_WEBHOOK_SECRET) and send the body as Stripe signed it."
            }
        })
    }

    pub fn kind(self) -> Kind {
        match self {
            Self::ListingNotFound
            | Self::PhotoNotFound
            | Self::WarehouseNotFound
            | Self::KeyNotFound
            | Self::MemberNotFound
            | Self::InvitationNotPending
            | Self::TwoStepNotSet => Kind::NotFound,
            Self::KeyInactive
            | Self::LastAdmin
            | Self::CannotRemoveSelf
            | Self::EmailTaken
            | Self::InvitationsTooFrequent
            | Self::KeysTooFrequent
            | Self::ResetOwnTwoStep => Kind::Conflict,
            Self::EventNotFound
            | Self::OrderNotFound
            | Self::CollectionNotFound
            | Self::CreditCodeNotFound
            | Self::RemittanceNotFound
            | Self::WebhookUrlMissing
            | Self::UnknownListing
            | Self::UnknownOrder => Kind::NotFound,
            Self::ListingNotActive
            | Self::InsufficientStock
            | Self::OrderAlreadyCompleted
            | Self::OrderNotExchange
            | Self::OrderNotCompleted
            | Self::PayoutChoiceExists
            | Self::CustomerChoiceNotOffered => Kind::Conflict,
            Self::NotOwner => Kind::Forbidden,
            Self::EditConflict
            | Self::WarehousesContended
            | Self::WebhookNotConfigured
            | Self::CollectionExists
            | Self::CollectionPassed
            | Self::CollectionContended
            | Self::CreditCodeAlreadyRedeemed => Kind::Conflict,
            Self::CreditCodeExpired => Kind::Gone,
            Self::NoFields
            | Self::PhotoRequired
            | Self::SkuDuplicateInFile
            | Self::SkuAmbiguous
            | Self::SkuExists
            | Self::PaymentSignatureInvalid
            | Self::NoIds
            | Self::TooManyIds => Kind::BadRequest,
            Self::PaymentsNotConfigured => Kind::NotFound,
            Self::PreconditionFailed => Kind::PreconditionFailed,
            Self::UnsupportedImage => Kind::Unsupported,
            Self::ImageTooBig | Self::TooManyPixels { .. } => Kind::TooLarge,
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
        // The one code answered with two statuses, as the API documents it: rotating the
        // secret with no endpoint is 404 (nothing to rotate), replaying with none enabled 409.
        const TWO_STATUSES: &[&str] = &["webhook_not_configured"];
        for a in Outcome::EXAMPLES.iter().filter(|a| !TWO_STATUSES.contains(&a.code())) {
            for b in Outcome::EXAMPLES.iter().filter(|b| b.code() == a.code()) {
                assert_eq!(a.kind(), b.kind(), "{} answers with two statuses", a.code());
            }
        }
        let to_do = [
            "retry",
            "try again",
            "send",
            "give",
            "choose",
            "scale",
            "only",
            "leave",
            "no ",
            "read",
            "check",
            "make",
            "ask",
            "use",
            "create",
            "wait",
            "turn",
            "reload",
            "replay",
        ];
        for outcome in Outcome::EXAMPLES {
            let message = outcome.message();
            assert!(message.ends_with('.'), "{message}");
            assert!(!message.contains(outcome.code()), "the code is not the sentence: {message}");
            let lower = message.to_lowercase();
            assert!(to_do.iter().any(|verb| lower.contains(verb)), "{}: says what to do? {message}", outcome.code());
        }
    }
}
