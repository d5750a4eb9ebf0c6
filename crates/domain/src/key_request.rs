//! The API keys API's request bodies (decisions 8.6) and the rules of a key's life: what its
//! list prefix is, when it is usable, and how far a roll shortens the old key's life.

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{Map, Value};

use crate::apikey::PREFIX;
use crate::body::{BodySpec, Field, FieldType};
use crate::reader::BodyReader;
use crate::user::Scopes;
use crate::FieldError;

pub const MAX_LABEL_LEN: usize = 100;
pub use super::limits::MAX_ROLL_HOURS;
pub const DEFAULT_ROLL_HOURS: i64 = 24;

/// The body of `POST /v1/partner/settings/integrations/keys`, which [`KeyRequest::parse`] reads.
pub static KEY_BODY: BodySpec = BodySpec {
    name: "KeyInput",
    doc: "The body of `POST /v1/partner/settings/integrations/keys`: the key to create.",
    fields: &[
        Field::required(
            "label",
            FieldType::Text { max: MAX_LABEL_LEN },
            "What the key is for, 1 to 100 characters (`label_required`, `label_invalid`, `label_too_long`).",
        ),
        Field::optional(
            "scopes",
            FieldType::List { item: &FieldType::Choice(&["read", "write"]), min: 1, max: 2 },
            "A non-empty list of `read` and/or `write`; default both (`scopes_invalid`).",
        )
        .rule("must be read, write or both: tick at least one"),
        Field::optional(
            "user_id",
            FieldType::Integer { min: 1, max: i64::MAX },
            "The member whose key it is: an active member of the caller's brand; default the caller's user \
             (`user_id_invalid`). A `member`'s key is refused by the API (403 `forbidden`).",
        )
        .labelled("Belongs to")
        .rule("must be an active member of your team"),
        Field::optional(
            "expires_at",
            FieldType::Timestamp,
            "RFC 3339, in the future: the key stops working then; default never (`expires_at_invalid`).",
        )
        .labelled("Expires on")
        .rule("must be a date after today, or empty for a key that does not expire"),
    ],
    example: r#"{"label": "Stock sync", "scopes": ["read", "write"], "expires_at": "2027-06-30T00:00:00Z"}"#,
};
crate::documented_body!(KeyRequest, KEY_BODY);

/// The body of `POST /v1/partner/settings/integrations/keys/{id}/roll`, which
/// [`RollRequest::parse`] reads. It may be empty.
pub static ROLL_BODY: BodySpec = BodySpec {
    name: "KeyRollInput",
    doc: "The body of `POST /v1/partner/settings/integrations/keys/{id}/roll` (optional: an empty body \
          takes the default).",
    fields: &[Field::optional(
        "expires_in_hours",
        FieldType::Integer { min: 0, max: MAX_ROLL_HOURS },
        "How long the old key keeps working, 0 to 168 hours; default 24. 0 stops it at once. An old key \
         that expires sooner keeps its earlier expiry (`expires_in_hours_invalid`).",
    )
    .labelled("Keep the old key working for (hours)")],
    example: r#"{"expires_in_hours": 24}"#,
};
crate::documented_body!(RollRequest, ROLL_BODY);

/// A key to create, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRequest {
    pub label: String,
    pub scopes: Scopes,
    /// `None`: the caller's user.
    pub user_id: Option<i64>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// A key's label, under the one text rule of every body (as `label` of [`KEY_BODY`]): one
/// line of at most [`MAX_LABEL_LEN`] characters, trimmed; `Ok(None)` when blank; the `Err`
/// is the reason's suffix. The CLI's `--label` is read by it too.
pub fn key_label(text: &str) -> Result<Option<String>, &'static str> {
    crate::text::text(&Value::String(text.to_owned()), MAX_LABEL_LEN, crate::text::Lines::One)
}

impl KeyRequest {
    /// `now`: `expires_at` must be after it.
    pub fn parse(body: &Map<String, Value>, now: DateTime<Utc>) -> Result<Self, Vec<FieldError>> {
        let mut r = BodyReader::of(body, &KEY_BODY);
        let label = r.text("label", MAX_LABEL_LEN);
        let label = r.require("label", label);
        let scopes = match r.raw("scopes") {
            None | Some(Value::Null) => Some(Scopes { read: true, write: true }),
            Some(value) => match scopes(value) {
                Some(scopes) => Some(scopes),
                None => r.fail("scopes", "invalid"),
            },
        };
        let user_id = match r.raw("user_id") {
            None | Some(Value::Null) => None,
            Some(value) => match crate::reader::integral(value).filter(|id| *id >= 1) {
                Some(id) => Some(id),
                None => r.fail("user_id", "invalid"),
            },
        };
        let expires_at = match r.timestamp("expires_at") {
            Some(at) if at <= now => r.fail("expires_at", "invalid"),
            other => other,
        };
        let request = label.zip(scopes).map(|(label, scopes)| Self { label, scopes, user_id, expires_at });
        match r.finish(request) {
            Ok(Some(request)) => Ok(request),
            Ok(None) => Err(worded(vec![FieldError::of("label", "required")])),
            Err(errors) => Err(worded(errors)),
        }
    }
}

/// The sentences of a key's reasons, said of a key (a `label` is a key's here, not a
/// warehouse's); the codes are unchanged, other reasons keep their general sentence.
fn worded(errors: Vec<FieldError>) -> Vec<FieldError> {
    errors
        .into_iter()
        .map(|e| {
            let message = match e.code.as_str() {
                "label_required" => {
                    format!("Give the key a label of up to {MAX_LABEL_LEN} characters, e.g. Stock sync.")
                }
                "label_invalid" => {
                    format!("Give the key's label as one line of text, up to {MAX_LABEL_LEN} characters.")
                }
                "label_too_long" => format!("Shorten the key's label to at most {MAX_LABEL_LEN} characters."),
                "scopes_invalid" => "Choose what the key may do: read, write, or both.".to_owned(),
                "user_id_invalid" => "Choose an active member of your team to own the key.".to_owned(),
                "expires_in_hours_invalid" => format!(
                    "Give how long the old key keeps working as a whole number of hours from 0 to {MAX_ROLL_HOURS}."
                ),
                "expires_at_invalid" => "Choose an expiry in the future (an instant like 2027-06-30T00:00:00Z), or \
                                         none for a key that does not expire."
                    .to_owned(),
                _ => return e,
            };
            FieldError { message, ..e }
        })
        .collect()
}

/// A JSON array naming at least one of `read` and `write` (repeats allowed), else `None`.
fn scopes(value: &Value) -> Option<Scopes> {
    let items = value.as_array().filter(|items| !items.is_empty())?;
    let mut scopes = Scopes::default();
    for item in items {
        match item.as_str()? {
            "read" => scopes.read = true,
            "write" => scopes.write = true,
            _ => return None,
        }
    }
    Some(scopes)
}

/// A roll, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RollRequest {
    /// How long the old key keeps working, 0..=168.
    pub expires_in_hours: i64,
}

impl RollRequest {
    pub fn parse(body: &Map<String, Value>) -> Result<Self, Vec<FieldError>> {
        let mut r = BodyReader::of(body, &ROLL_BODY);
        let hours = r.integer("expires_in_hours", 0..=MAX_ROLL_HOURS).unwrap_or(DEFAULT_ROLL_HOURS);
        r.finish(Self { expires_in_hours: hours }).map_err(worded)
    }
}

/// What the key list shows of a secret: its first 12 characters, `rhk_` and the lookup.
pub fn key_prefix(lookup: &str) -> String {
    format!("{PREFIX}{lookup}")
}

/// True while a key authenticates: not revoked and not past its expiry.
pub fn key_active(revoked_at: Option<DateTime<Utc>>, expires_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    revoked_at.is_none() && expires_at.is_none_or(|at| at > now)
}

/// The old key's expiry after a roll: `hours` from now, or its own expiry if that is sooner.
pub fn rolled_expiry(existing: Option<DateTime<Utc>>, now: DateTime<Utc>, hours: i64) -> DateTime<Utc> {
    let overlap = now + TimeDelta::hours(hours.clamp(0, MAX_ROLL_HOURS));
    existing.map_or(overlap, |at| at.min(overlap))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    use crate::reader::object;

    fn now() -> DateTime<Utc> {
        "2026-11-23T12:00:00Z".parse().unwrap()
    }

    fn codes(result: Result<impl Sized, Vec<FieldError>>) -> Vec<String> {
        result.err().unwrap_or_default().into_iter().map(|e| e.code).collect()
    }

    #[test]
    fn a_key_request_defaults_to_both_scopes_and_the_caller() {
        let request = KeyRequest::parse(&object(json!({"label": " Sync "})), now()).unwrap();
        assert_eq!(
            request,
            KeyRequest {
                label: "Sync".into(),
                scopes: Scopes { read: true, write: true },
                user_id: None,
                expires_at: None
            }
        );
        let full =
            json!({"label": "R", "scopes": ["read", "read"], "user_id": 7, "expires_at": "2026-11-24T00:00:00+01:00"});
        let request = KeyRequest::parse(&object(full), now()).unwrap();
        assert_eq!((request.scopes, request.user_id), (Scopes { read: true, write: false }, Some(7)));
        assert_eq!(request.expires_at, Some("2026-11-23T23:00:00Z".parse().unwrap()));
    }

    #[test]
    fn a_keys_reasons_are_said_of_a_key_with_their_limits() {
        let errors = KeyRequest::parse(&object(json!({"scopes": []})), now()).unwrap_err();
        let said: Vec<(&str, &str)> = errors.iter().map(|e| (e.code.as_str(), e.message.as_str())).collect();
        assert_eq!(
            said,
            [
                ("label_required", "Give the key a label of up to 100 characters, e.g. Stock sync."),
                ("scopes_invalid", "Choose what the key may do: read, write, or both.")
            ]
        );
    }

    #[test]
    fn every_bad_key_field_is_reported() {
        assert_eq!(codes(KeyRequest::parse(&object(json!({})), now())), ["label_required"]);
        let bad =
            json!({"label": "x".repeat(101), "scopes": [], "user_id": 0, "expires_at": "2026-11-23T11:59:59Z", "y": 1});
        assert_eq!(
            codes(KeyRequest::parse(&object(bad), now())),
            ["label_too_long", "scopes_invalid", "user_id_invalid", "expires_at_invalid", "y_unknown"]
        );
        for scopes in [json!(["admin"]), json!("read"), json!([1]), json!({})] {
            assert_eq!(
                codes(KeyRequest::parse(&object(json!({"label": "a", "scopes": scopes})), now())),
                ["scopes_invalid"]
            );
        }
        assert_eq!(
            codes(KeyRequest::parse(&object(json!({"label": "a", "user_id": "7", "expires_at": "soon"})), now())),
            ["user_id_invalid", "expires_at_invalid"]
        );
    }

    #[test]
    fn a_roll_takes_0_to_168_hours_and_defaults_to_24() {
        assert_eq!(RollRequest::parse(&object(json!({}))), Ok(RollRequest { expires_in_hours: 24 }));
        assert_eq!(
            RollRequest::parse(&object(json!({"expires_in_hours": 0}))),
            Ok(RollRequest { expires_in_hours: 0 })
        );
        assert_eq!(codes(RollRequest::parse(&object(json!({"expires_in_hours": 169})))), ["expires_in_hours_invalid"]);
        assert_eq!(codes(RollRequest::parse(&object(json!({"expires_in_hours": -1})))), ["expires_in_hours_invalid"]);
        assert_eq!(codes(RollRequest::parse(&object(json!({"expires_in_hours": 1.5})))), ["expires_in_hours_invalid"]);
    }

    #[test]
    fn a_key_is_active_until_revoked_or_expired() {
        assert!(key_active(None, None, now()));
        assert!(key_active(None, Some(now() + TimeDelta::seconds(1)), now()));
        assert!(!key_active(None, Some(now()), now()));
        assert!(!key_active(Some(now()), None, now()));
        assert_eq!(key_prefix("AbCd1234"), "rhk_AbCd1234");
        assert_eq!(key_prefix("AbCd1234").len(), 12);
    }

    proptest! {
        #[test]
        fn a_roll_never_extends_the_old_key(existing_offset in proptest::option::of(-1000i64..100_000), hours in 0i64..=168) {
            let existing = existing_offset.map(|s| now() + TimeDelta::minutes(s));
            let rolled = rolled_expiry(existing, now(), hours);
            prop_assert!(rolled <= now() + TimeDelta::hours(hours));
            if let Some(existing) = existing {
                prop_assert!(rolled <= existing);
            }
            prop_assert!(rolled == now() + TimeDelta::hours(hours) || Some(rolled) == existing);
        }
    }
}
