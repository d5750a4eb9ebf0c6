//! Post/redirect/get with a one-time notice: an action that worked answers 303 to the page
//! to show, with a short-lived cookie naming what was done (`rehome_notice`, one of the
//! [`Notice`] names, never text a client chose); that page shows the notice once and the
//! dashboard's headers layer deletes the cookie on the page that showed it. A reload of
//! the page then neither submits again nor repeats the notice.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};

use super::cookies;
use crate::domain::wire::wire_names;

/// What an action did, to say once on the page it leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    SignedOut,
    PasswordChanged,
    RequirementOn,
    RequirementOff,
    TwoStepOff,
    OtherSessionsEnded,
    TwoStepReset,
    MemberRemoved,
    KeyRevoked,
    InvitationCancelled,
    RoleChanged,
    YouAreMember,
    PhotoRemoved,
    PhotoAdded,
    PhotosAdded,
    CoverChanged,
    ListingSaved,
    ListingDeleted,
    SecretRotated,
    WebhookSaved,
    TestEventQueued,
    WarehouseDeleted,
    WarehouseAdded,
    WarehouseSaved,
    DefaultWarehouseChanged,
    PayoutsSaved,
    BrandSaved,
    BillingSaved,
    TimeZoneSaved,
    EventQueued,
    /// How many (the notice's number).
    DeadQueued,
    NoDeadEvents,
    /// The order (the notice's number).
    CollectionScheduled,
    /// The order (the notice's number).
    CollectionMoved,
    /// The order (the notice's number).
    CollectionCancelled,
    /// The value in pence (the notice's number).
    CodeRedeemed,
    BulkImported,
    BulkAlreadyImported,
    BulkDiscarded,
    /// How many unused recovery codes are left (the notice's number).
    RecoveryCodeUsed,
    ResetLinkSent,
    ResetLinkTooFrequent,
    PasswordReset,
}

wire_names!(Notice {
    SignedOut => "signed-out",
    PasswordChanged => "password-changed",
    RequirementOn => "requirement-on",
    RequirementOff => "requirement-off",
    TwoStepOff => "two-step-off",
    OtherSessionsEnded => "other-sessions-ended",
    TwoStepReset => "two-step-reset",
    MemberRemoved => "member-removed",
    KeyRevoked => "key-revoked",
    InvitationCancelled => "invitation-cancelled",
    RoleChanged => "role-changed",
    YouAreMember => "you-are-member",
    PhotoRemoved => "photo-removed",
    PhotoAdded => "photo-added",
    PhotosAdded => "photos-added",
    CoverChanged => "cover-changed",
    ListingSaved => "listing-saved",
    ListingDeleted => "listing-deleted",
    SecretRotated => "secret-rotated",
    WebhookSaved => "webhook-saved",
    TestEventQueued => "test-event-queued",
    WarehouseDeleted => "warehouse-deleted",
    WarehouseAdded => "warehouse-added",
    WarehouseSaved => "warehouse-saved",
    DefaultWarehouseChanged => "default-warehouse-changed",
    PayoutsSaved => "payouts-saved",
    BrandSaved => "brand-saved",
    BillingSaved => "billing-saved",
    TimeZoneSaved => "time-zone-saved",
    EventQueued => "event-queued",
    DeadQueued => "dead-queued",
    NoDeadEvents => "no-dead-events",
    CollectionScheduled => "collection-scheduled",
    CollectionMoved => "collection-moved",
    CollectionCancelled => "collection-cancelled",
    CodeRedeemed => "code-redeemed",
    BulkImported => "bulk-imported",
    BulkAlreadyImported => "bulk-already-imported",
    BulkDiscarded => "bulk-discarded",
    RecoveryCodeUsed => "recovery-code-used",
    ResetLinkSent => "reset-link-sent",
    ResetLinkTooFrequent => "reset-link-too-frequent",
    PasswordReset => "password-reset",
});

impl Notice {
    /// The sentence shown.
    pub fn text(self) -> &'static str {
        match self {
            Self::SignedOut => "You are signed out.",
            Self::PasswordChanged => "Your password was changed; your other sessions were signed out.",
            Self::RequirementOn => "Two-step sign-in is now required for everyone in your brand.",
            Self::RequirementOff => "Two-step sign-in is no longer required.",
            Self::TwoStepOff => "Two-step sign-in is off. Signing in now asks only for your password.",
            Self::OtherSessionsEnded => "Your other sessions were signed out.",
            Self::MemberRemoved => {
                "Member removed: they are signed out, their keys no longer work and their listings are yours."
            }
            Self::KeyRevoked => "Key revoked: requests signed with it are refused from now on.",
            Self::InvitationCancelled => "Invitation cancelled: its link no longer works.",
            Self::RoleChanged => "Role changed. Admins manage the team, API keys and the audit log; members do not.",
            Self::YouAreMember => "You are now a member: the team, API keys and audit log are for your brand's admins.",
            Self::PhotoRemoved => "Photo removed.",
            Self::PhotoAdded => "Photo added.",
            Self::PhotosAdded => "Photos added, in the order you chose them.",
            Self::CoverChanged => "Cover photo changed.",
            Self::ListingSaved => "Listing saved.",
            Self::ListingDeleted => "Listing deleted: it is off the marketplace and out of your lists.",
            Self::SecretRotated => "Signing secret rotated.",
            Self::WebhookSaved => "Webhook saved.",
            Self::TestEventQueued => "Test event queued: see Deliveries for how your endpoint answered.",
            Self::WarehouseDeleted => "Warehouse deleted.",
            Self::WarehouseAdded => "Warehouse added.",
            Self::WarehouseSaved => "Warehouse saved.",
            Self::DefaultWarehouseChanged => "Default warehouse changed.",
            Self::PayoutsSaved => "Payout options saved.",
            Self::BrandSaved => "Brand saved.",
            Self::BillingSaved => "Billing saved.",
            Self::TimeZoneSaved => "Time zone saved.",
            Self::BulkImported => "Imported: the rows below are saved.",
            Self::BulkAlreadyImported => "This file was already imported; nothing was imported again.",
            Self::BulkDiscarded => "The file was discarded; nothing was imported.",
            Self::TwoStepReset => {
                "Their two-step sign-in was reset and their sessions ended. They set it up again after signing in."
            }
            Self::EventQueued => "Event queued: it is being sent to your endpoint again.",
            Self::DeadQueued => "Dead events queued: they are being sent to your endpoint again.",
            Self::NoDeadEvents => "No event was dead, so nothing was queued.",
            Self::CollectionScheduled => "Collection scheduled.",
            Self::CollectionMoved => "Collection moved: the buyer and your webhook endpoint are told the new day.",
            Self::CollectionCancelled => "Collection cancelled: the order is back under “To schedule”.",
            Self::CodeRedeemed => "Credit code redeemed: it cannot be spent again.",
            Self::RecoveryCodeUsed => "You signed in with a recovery code: it cannot be used again.",
            Self::ResetLinkSent => {
                "Password reset link sent by email: it works once, within an hour. Their password stays as it is \
                 until they use it."
            }
            Self::ResetLinkTooFrequent => {
                "They were sent three reset links in the last hour already: ask them to use the newest, or try again \
                 later."
            }
            Self::PasswordReset => {
                "Your password was changed and every session of yours was signed out. Sign in \
                 with the new one."
            }
        }
    }

    /// The sentence shown, with the number the action reported (how many events were
    /// queued, which order, how much a code was worth) when it reported one.
    pub fn said(self, number: Option<u64>) -> String {
        match (self, number) {
            (Self::DeadQueued, Some(1)) => "1 dead event queued: it is being sent to your endpoint again.".to_owned(),
            (Self::DeadQueued, Some(n)) => {
                format!("{n} dead events queued: they are being sent to your endpoint again.")
            }
            (Self::CollectionScheduled, Some(order)) => {
                format!("Collection of order {} scheduled.", crate::domain::order::order_reference(order as i64))
            }
            (Self::CollectionMoved, Some(order)) => format!(
                "Collection of order {} moved: the buyer and your webhook endpoint are told the new day.",
                crate::domain::order::order_reference(order as i64)
            ),
            (Self::CollectionCancelled, Some(order)) => format!(
                "Collection of order {} cancelled: it is back under “To schedule” for another day.",
                crate::domain::order::order_reference(order as i64)
            ),
            (Self::CodeRedeemed, Some(pence)) => format!(
                "Credit code redeemed: £{} of credit, spent now (it cannot be spent again).",
                crate::usecases::wallet::statement::pounds(pence as i64)
            ),
            (Self::RecoveryCodeUsed, Some(0)) => "You signed in with your last recovery code. Make a new set below \
                 now, or you may be locked out if you lose your phone."
                .to_owned(),
            (Self::RecoveryCodeUsed, Some(1)) => {
                "You signed in with a recovery code: it cannot be used again. You have \
                 1 unused recovery code left; make a new set below."
                    .to_owned()
            }
            (Self::RecoveryCodeUsed, Some(n)) => format!(
                "You signed in with a recovery code: it cannot be used again. You have {n} unused recovery codes left."
            ),
            _ => self.text().to_owned(),
        }
    }

    /// 303 to `to`, carrying this notice and `number` (`name.number` in the cookie: a
    /// name of the fixed set and digits, still never text a client chose).
    pub fn redirect_with(self, number: u64, to: &str, secure: bool) -> Response {
        let mut response = Redirect::to(to).into_response();
        cookies::set_notice(response.headers_mut(), &format!("{}.{number}", self.as_str()), secure);
        response
    }

    /// 303 to `to`, carrying this notice to it.
    pub fn redirect(self, to: &str, secure: bool) -> Response {
        let mut response = Redirect::to(to).into_response();
        cookies::set_notice(response.headers_mut(), self.as_str(), secure);
        response
    }
}

/// The notice the request carries, if any (read by the page that shows it), and its number.
#[derive(Debug, Clone, Copy)]
pub struct Flash(pub Option<Notice>, pub Option<u64>);

impl Flash {
    pub fn text(self) -> Option<&'static str> {
        self.0.map(Notice::text)
    }

    /// The sentence with its number ([`Notice::said`]).
    pub fn said(self) -> Option<String> {
        self.0.map(|notice| notice.said(self.1))
    }

    /// `name` or `name.digits` (at most 15 of them: a count or an amount in pence).
    fn read(value: &str) -> Self {
        let (name, number) = match value.split_once('.') {
            Some((name, digits)) if (1..=15).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()) => {
                (name, digits.parse().ok())
            }
            Some(_) => return Self(None, None),
            None => (value, None),
        };
        match name.parse() {
            Ok(notice) => Self(Some(notice), number),
            Err(_) => Self(None, None),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Flash {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(cookies::get(&parts.headers, cookies::NOTICE).map_or(Self(None, None), Self::read))
    }
}

/// After a page answered a request that carried a notice: deletes the notice, unless the
/// answer is itself a redirect (the notice is still on its way to its page).
pub fn spend(carried: bool, status: StatusCode, response: &mut HeaderMap) {
    if carried && !status.is_redirection() {
        cookies::clear_notice(response);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::header::SET_COOKIE;

    #[test]
    fn a_notice_is_named_never_written_by_the_client() {
        for notice in Notice::ALL {
            assert_eq!(notice.as_str().parse::<Notice>().ok(), Some(*notice));
            assert!(notice.text().ends_with('.'));
        }
        assert!("<script>".parse::<Notice>().is_err());
    }

    #[test]
    fn a_notice_carries_a_number_and_nothing_else() {
        assert_eq!(
            Flash::read("dead-queued.3").said().as_deref(),
            Some("3 dead events queued: they are being sent to your endpoint again.")
        );
        assert_eq!(
            Flash::read("code-redeemed.1250").said().as_deref(),
            Some("Credit code redeemed: £12.50 of credit, spent now (it cannot be spent again).")
        );
        assert_eq!(Flash::read("event-queued").said().as_deref(), Some(Notice::EventQueued.text()));
        for forged in ["dead-queued.<b>", "dead-queued.", "dead-queued.1.2", "dead-queued.9999999999999999", "nope.1"] {
            assert!(Flash::read(forged).0.is_none(), "{forged}");
        }
    }

    #[test]
    fn a_notice_is_spent_by_the_page_that_shows_it_not_by_a_redirect() {
        let mut response = HeaderMap::new();
        spend(true, StatusCode::SEE_OTHER, &mut response);
        assert!(response.get(SET_COOKIE).is_none());
        spend(false, StatusCode::OK, &mut response);
        assert!(response.get(SET_COOKIE).is_none());
        spend(true, StatusCode::OK, &mut response);
        let cookie = response.get(SET_COOKIE).unwrap().to_str().unwrap();
        assert!(cookie.starts_with("rehome_notice=;") && cookie.contains("Max-Age=0"), "{cookie}");
    }
}
