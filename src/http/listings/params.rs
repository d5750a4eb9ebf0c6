//! Reading the list query string and the bulk-delete body.

use serde_json::{Map, Value};

use crate::domain::listing::{Channel, ListingStatus};
use crate::domain::FieldError;
use crate::error::ApiError;
use crate::http::query::{Page, QueryParams};
use crate::store::ListingFilter;

pub const MAX_BULK_IDS: usize = 100;

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

/// The `ids` of a bulk-delete body: 400 `no_ids` when missing or empty, `too_many` above
/// 100, `validation_failed` (`ids_invalid`, `<field>_unknown`) when malformed.
pub fn bulk_ids(body: &Map<String, Value>) -> Result<Vec<i64>, ApiError> {
    let items = match body.get("ids") {
        None | Some(Value::Null) => return Err(no_ids()),
        Some(Value::Array(items)) if items.is_empty() => return Err(no_ids()),
        Some(Value::Array(items)) if items.len() > MAX_BULK_IDS => {
            return Err(ApiError::bad_request("too_many", "Send at most 100 ids per bulk delete."))
        }
        Some(value) => value.as_array(),
    };
    let ids = items.and_then(|items| items.iter().map(Value::as_i64).collect::<Option<Vec<_>>>());
    let mut errors = Vec::new();
    if ids.is_none() {
        errors.push(FieldError::of("ids", "invalid"));
    }
    for field in body.keys().filter(|k| *k != "ids") {
        errors.push(FieldError::new(field.as_str(), format!("{field}_unknown")));
    }
    match ids {
        Some(ids) if errors.is_empty() => Ok(ids),
        _ => Err(ApiError::validation(errors)),
    }
}

fn no_ids() -> ApiError {
    ApiError::bad_request("no_ids", "Send the listings to delete as a non-empty array 'ids'.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[test]
    fn bulk_ids_must_be_a_short_non_empty_integer_array() {
        let body = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(bulk_ids(&body(json!({"ids": [3, 1]}))).unwrap(), [3, 1]);
        assert_eq!(reasons(bulk_ids(&body(json!({})))), ["no_ids"]);
        assert_eq!(reasons(bulk_ids(&body(json!({"ids": null})))), ["no_ids"]);
        assert_eq!(reasons(bulk_ids(&body(json!({"ids": []})))), ["no_ids"]);
        assert_eq!(reasons(bulk_ids(&body(json!({"ids": (1..=101).collect::<Vec<_>>()})))), ["too_many"]);
        assert_eq!(reasons(bulk_ids(&body(json!({"ids": ["1"]})))), ["ids_invalid"]);
        assert_eq!(reasons(bulk_ids(&body(json!({"ids": [1.5]})))), ["ids_invalid"]);
        assert_eq!(reasons(bulk_ids(&body(json!({"ids": 1})))), ["ids_invalid"]);
        assert_eq!(reasons(bulk_ids(&body(json!({"ids": [1], "force": true})))), ["force_unknown"]);
    }
}
