//! Reading the list query string.

use crate::domain::listing::{Channel, ListingQuery, ListingStatus, SyncPosition};
use crate::domain::time::Ts;
use crate::error::ApiError;
use crate::http::query::{Page, QueryParams};

/// A list request: which listings, and which page of them.
#[derive(Debug, Clone)]
pub struct ListParams {
    pub filter: ListingQuery,
    pub paging: Paging,
}

/// Numbered pages, newest first; or a sync walk in (`updated_at`, `id`)
/// order from a position, by cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paging {
    Numbered(Page),
    Walk { after: SyncPosition, per_page: u32 },
}

/// `page` ≥ 1, `per_page` 1..100, `status` active|draft|any (default active), `channel`
/// clearance|exchange or omitted, `sku` (exact), `q` (words in the title or SKU).
/// `updated_since` (RFC 3339) or `cursor` (from `meta.next_cursor`) make it a sync walk:
/// then `page` is refused, `status` defaults to any (a listing that closed or went back to
/// draft changed too), and a cursor, which holds the whole position, wins over
/// `updated_since`.
pub fn list_params(pairs: &[(String, String)]) -> Result<ListParams, ApiError> {
    let mut query = QueryParams::new(pairs);
    let since = match query.get("updated_since") {
        None => None,
        // A `+` of an offset left unencoded in the query arrives as a space.
        Some(text) if text.len() > crate::domain::text::MAX_INSTANT_LEN => query.invalid("updated_since"),
        Some(text) => match Ts::parse(text).or_else(|| Ts::parse(&text.replace(' ', "+"))) {
            Some(at) => Some(SyncPosition::since(at.micros())),
            None => query.invalid("updated_since"),
        },
    };
    let cursor = match query.get("cursor") {
        None => None,
        Some(text) => match SyncPosition::from_cursor(text) {
            Some(position) => Some(position),
            None => query.invalid("cursor"),
        },
    };
    let walking = query.get("updated_since").is_some() || query.get("cursor").is_some();
    let page = query.page();
    if walking && query.get("page").is_some() {
        query.invalid::<()>("page");
    }
    let default_status = if walking { None } else { Some(ListingStatus::Active) };
    let status = query.choice(
        "status",
        default_status,
        &[("active", Some(ListingStatus::Active)), ("draft", Some(ListingStatus::Draft)), ("any", None)],
    );
    let channel = query.choice(
        "channel",
        None,
        &[("clearance", Some(Channel::Clearance)), ("exchange", Some(Channel::Exchange))],
    );
    let sku = match query.get("sku").map(ListingQuery::sku) {
        None => None,
        Some(Some(sku)) => Some(sku),
        Some(None) => query.invalid("sku"),
    };
    let words = match query.get("q").map(ListingQuery::search_words) {
        None => Vec::new(),
        Some(Some(words)) => words,
        Some(None) => query.invalid("q").unwrap_or_default(),
    };
    query.finish()?;
    let paging = match cursor.or(since) {
        Some(after) => Paging::Walk { after, per_page: page.per_page },
        None => Paging::Numbered(page),
    };
    Ok(ListParams { filter: ListingQuery { status, channel, sku, words }, paging })
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
        assert_eq!(params.paging, Paging::Numbered(Page { page: 1, per_page: 20 }));
        assert_eq!(params.filter.status, Some(ListingStatus::Active));
        assert_eq!(params.filter.channel, None);
        let params = list_params(&pairs(&[("page", "3"), ("per_page", "100"), ("status", "any")])).unwrap();
        assert_eq!(params.paging, Paging::Numbered(Page { page: 3, per_page: 100 }));
        assert_eq!(params.filter.status, None);
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

    #[test]
    fn updated_since_or_a_cursor_walks_every_status() {
        let params =
            list_params(&pairs(&[("updated_since", "2026-11-21T10:00:00 01:00"), ("per_page", "100")])).unwrap();
        let since = SyncPosition::since(Ts::parse("2026-11-21T09:00:00Z").unwrap().micros());
        assert_eq!(params.paging, Paging::Walk { after: since, per_page: 100 });
        assert_eq!(params.filter.status, None);
        let next = SyncPosition { updated_micros: since.updated_micros + 5, id: 42 };
        let both =
            pairs(&[("updated_since", "2026-11-21T10:00:00Z"), ("cursor", &next.cursor()), ("status", "active")]);
        let params = list_params(&both).unwrap();
        assert_eq!(params.paging, Paging::Walk { after: next, per_page: 20 });
        assert_eq!(params.filter.status, Some(ListingStatus::Active));
    }

    #[test]
    fn bad_sync_parameters_are_each_reported() {
        let bad = pairs(&[("updated_since", "yesterday"), ("cursor", "nope"), ("page", "2")]);
        assert_eq!(reasons(list_params(&bad)), ["updated_since_invalid", "cursor_invalid", "page_invalid"]);
        assert_eq!(reasons(list_params(&pairs(&[("updated_since", "")]))), ["updated_since_invalid"]);
    }
}
