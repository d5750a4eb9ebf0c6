//! Reading the list query string.

use crate::domain::listing::{Channel, ListingStatus};
use crate::error::ApiError;
use crate::http::query::{Page, QueryParams};
use crate::store::ListingFilter;

/// A list request: which page and which listings.
#[derive(Debug, Clone)]
pub struct ListParams {
    pub page: Page,
    pub filter: ListingFilter,
}

/// Longest `sku` and `q` values, and most words in `q`.
const MAX_SKU_CHARS: usize = 100;
const MAX_Q_CHARS: usize = 200;
const MAX_Q_WORDS: usize = 10;

/// `page` ≥ 1, `per_page` 1..100, `status` active|draft|any (default active), `channel`
/// clearance|exchange or omitted, `sku` (exact), `q` (words in the title or SKU).
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
    let sku = match query.get("sku").map(str::trim) {
        None => None,
        Some(sku) if !sku.is_empty() && sku.chars().count() <= MAX_SKU_CHARS => Some(sku.to_owned()),
        Some(_) => query.invalid("sku"),
    };
    let words: Vec<String> = match query.get("q") {
        None => Vec::new(),
        Some(q) => {
            let words: Vec<String> = q.split_whitespace().map(str::to_owned).collect();
            if words.is_empty() || words.len() > MAX_Q_WORDS || q.chars().count() > MAX_Q_CHARS {
                query.invalid::<()>("q");
                Vec::new()
            } else {
                words
            }
        }
    };
    query.finish()?;
    Ok(ListParams { page, filter: ListingFilter { status, channel, sku, words } })
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
        assert_eq!(reasons(list_params(&pairs(&[("sku", " ")]))), ["sku_invalid"]);
        assert_eq!(reasons(list_params(&pairs(&[("q", "")]))), ["q_invalid"]);
        assert_eq!(reasons(list_params(&pairs(&[("q", &"w ".repeat(11))]))), ["q_invalid"]);
    }

    #[test]
    fn sku_is_exact_and_q_is_split_into_words() {
        let params = list_params(&pairs(&[("sku", " OAK-1 "), ("q", "  oak   Sofa ")])).unwrap();
        assert_eq!(params.filter.sku.as_deref(), Some("OAK-1"));
        assert_eq!(params.filter.words, ["oak", "Sofa"]);
    }
}
