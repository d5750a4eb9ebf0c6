//! Reading the list query string.

use crate::domain::listing::{Channel, ListingStatus};
use crate::error::ApiError;
use crate::http::query::{Page, QueryParams};
use crate::store::ListingFilter;

/// A list request: which page and which listings.
#[derive(Debug, Clone, Copy)]
pub struct ListParams {
    pub page: Page,
    pub filter: ListingFilter,
}

/// `page` ≥ 1, `per_page` 1..100, `status` active|draft|any (default active), `channel`
/// clearance|exchange or omitted.
pub fn list_params(pairs: &[(String, String)]) -> Result<ListParams, ApiError> {
    let mut query = QueryParams::new(pairs);
    let page = query.page();
    let status = query.choice(
        "status",
        Some(ListingStatus::Active),
        &[("active", Some(ListingStatus::Active)), ("draft", Some(ListingStatus::Draft)), ("any", None)],
    );
    let channel = query.choice(
        "channel",
        None,
        &[("clearance", Some(Channel::Clearance)), ("exchange", Some(Channel::Exchange))],
    );
    query.finish()?;
    Ok(ListParams { page, filter: ListingFilter { status, channel } })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(query: &[(&str, &str)]) -> Vec<(String, String)> {
        query.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn reasons(result: Result<impl std::fmt::Debug, ApiError>) -> Vec<String> {
        match result {
            Err(ApiError::Validation(errors)) => errors.into_iter().map(|e| e.code).collect(),
            Err(ApiError::Client { code, .. }) => vec![code.to_owned()],
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn list_defaults_to_the_first_twenty_active_listings() {
        let params = list_params(&[]).unwrap();
        assert_eq!((params.page.page, params.page.per_page, params.page.offset()), (1, 20, 0));
        assert_eq!(params.filter.status, Some(ListingStatus::Active));
        assert_eq!(params.filter.channel, None);
        let params = list_params(&pairs(&[("page", "3"), ("per_page", "100"), ("status", "any")])).unwrap();
        assert_eq!((params.page.offset(), params.filter.status), (200, None));
    }

    #[test]
    fn bad_list_parameters_are_each_reported() {
        let bad = pairs(&[("page", "0"), ("per_page", "101"), ("status", "closed"), ("channel", "both")]);
        assert_eq!(
            reasons(list_params(&bad)),
            ["page_invalid", "per_page_invalid", "status_invalid", "channel_invalid"]
        );
        assert_eq!(reasons(list_params(&pairs(&[("page", "x")]))), ["page_invalid"]);
        assert_eq!(reasons(list_params(&pairs(&[("per_page", "0")]))), ["per_page_invalid"]);
        assert_eq!(reasons(list_params(&pairs(&[("page", "-1")]))), ["page_invalid"]);
        assert_eq!(reasons(list_params(&pairs(&[("page", "")]))), ["page_invalid"]);
    }
}
