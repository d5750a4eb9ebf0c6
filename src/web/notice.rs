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
    PhotoRemoved,
    WarehouseDeleted,
    BulkImported,
    BulkAlreadyImported,
    BulkDiscarded,
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
    PhotoRemoved => "photo-removed",
    WarehouseDeleted => "warehouse-deleted",
    BulkImported => "bulk-imported",
    BulkAlreadyImported => "bulk-already-imported",
    BulkDiscarded => "bulk-discarded",
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
            Self::PhotoRemoved => "Photo removed.",
            Self::WarehouseDeleted => "Warehouse deleted.",
            Self::BulkImported => "Imported: the rows below are saved.",
            Self::BulkAlreadyImported => "This file was already imported; nothing was imported again.",
            Self::BulkDiscarded => "The file was discarded; nothing was imported.",
            Self::TwoStepReset => {
                "Their two-step sign-in was reset and their sessions ended. They set it up again after signing in."
            }
        }
    }

    /// 303 to `to`, carrying this notice to it.
    pub fn redirect(self, to: &str, secure: bool) -> Response {
        let mut response = Redirect::to(to).into_response();
        cookies::set_notice(response.headers_mut(), self.as_str(), secure);
        response
    }
}

/// The notice the request carries, if any (read by the page that shows it).
#[derive(Debug, Clone, Copy)]
pub struct Flash(pub Option<Notice>);

impl Flash {
    pub fn text(self) -> Option<&'static str> {
        self.0.map(Notice::text)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Flash {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(cookies::get(&parts.headers, cookies::NOTICE).and_then(|name| name.parse().ok())))
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
