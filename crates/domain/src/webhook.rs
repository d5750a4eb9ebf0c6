//! Webhooks in the language of the spec: the endpoint's configuration body, the states of a
//! delivery and the classes of a failed attempt, each with its wire name.

use serde::Serialize;
use serde_json::{Map, Value};
use url::Url;

use crate::body::{BodySpec, Field, FieldType};
use crate::reader::BodyReader;
use crate::text::{text, Lines};
use crate::wire::wire_names;
use crate::FieldError;

/// Where an event stands: `pending` (waiting for its first or next attempt), `delivered`
/// or `dead` (no further attempt will be made unless it is replayed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    Pending,
    Delivered,
    Dead,
}

wire_names!(DeliveryStatus { Pending => "pending", Delivered => "delivered", Dead => "dead" });

impl DeliveryStatus {
    /// The status as people read it (the dashboard's list, its filter and an event's page).
    pub fn words(self) -> &'static str {
        match self {
            Self::Pending => "Waiting to be sent",
            Self::Delivered => "Delivered",
            Self::Dead => "Gave up (dead)",
        }
    }
}

/// Why an attempt failed: `timeout` (no answer in time), `connection_failed`,
/// `address_refused` (the host is, or resolves to, a non-public address), `http_status`
/// (an answer other than 2xx or 3xx), `redirect_not_followed` (a 3xx answer),
/// `invalid_url`, `undecryptable` (the stored body does not open with the server's data
/// key; not sent); or `no_endpoint` when no enabled endpoint is configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    Timeout,
    ConnectionFailed,
    AddressRefused,
    HttpStatus,
    RedirectNotFollowed,
    InvalidUrl,
    Undecryptable,
    NoEndpoint,
}

wire_names!(FailureClass {
    Timeout => "timeout",
    ConnectionFailed => "connection_failed",
    AddressRefused => "address_refused",
    HttpStatus => "http_status",
    RedirectNotFollowed => "redirect_not_followed",
    InvalidUrl => "invalid_url",
    Undecryptable => "undecryptable",
    NoEndpoint => "no_endpoint",
});

/// The longest webhook URL accepted.
pub const MAX_URL_LEN: usize = 2048;

/// The body of `PATCH /v1/partner/settings/integrations/webhook`, which
/// [`WebhookPatch::parse`] reads.
pub static WEBHOOK_BODY: BodySpec = BodySpec {
    name: "WebhookInput",
    doc: "The body of `PATCH /v1/partner/settings/integrations/webhook`: the fields to change.",
    fields: &[
        Field::optional(
            "url",
            FieldType::Text { max: MAX_URL_LEN },
            "Required the first time. An absolute `https` URL (`http` only when the server runs \
             with `REHOME_WEBHOOK_ALLOW_HTTP=true`), at most 2048 characters, without user or \
             password, whose host is not a loopback, private or otherwise non-public address \
             (`url_required`, `url_invalid`, `url_too_long`).",
        )
        .not_null()
        .labelled("Endpoint URL")
        .rule(
            "must be a web address starting with https:// on a public site, like https://example.com/rehome/webhooks",
        ),
        Field::optional(
            "enabled",
            FieldType::Boolean,
            "Default true. False pauses deliveries: events are kept and sent once it is true \
             again, if still within their retry window (`enabled_invalid`).",
        ),
        Field::optional(
            "event_types",
            FieldType::List { item: &FieldType::Choice(super::event::SUBSCRIBABLE), min: 1, max: 6 },
            "The event types the endpoint receives, each once; default the spec's two \
             (`redemption.created`, `collection.scheduled`). Add `collection.cancelled` to hear of a \
             collection withdrawn, and `listing.created`, `listing.updated` and `listing.deleted` to \
             follow the brand's listings (`event_types_invalid`). `ping` \
             (a test event) is always sent.",
        )
        .not_null()
        .labelled("Events sent to this endpoint")
        .rule("must name at least one event: tick one or more"),
    ],
    example: r#"{"url": "https://hooks.acme.example/rehome/3f9a1c", "enabled": true, "event_types": ["redemption.created", "collection.scheduled", "listing.updated"]}"#,
};
crate::documented_body!(WebhookPatch, WEBHOOK_BODY);

/// A PATCH body, parsed: the URL (syntax and scheme checked; whether its host is public is
/// the use case's check, which needs DNS) and the enabled flag.
#[derive(Debug)]
pub struct WebhookPatch {
    pub url: Option<Url>,
    pub enabled: Option<bool>,
    /// The event types to receive, comma-joined as stored, in the order given.
    pub event_types: Option<String>,
}

impl WebhookPatch {
    /// `allow_http`: the server accepts `http` URLs (`REHOME_WEBHOOK_ALLOW_HTTP`). `null` is
    /// not a value of either field (`<field>_invalid`).
    pub fn parse(body: &Map<String, Value>, allow_http: bool) -> Result<Self, Vec<FieldError>> {
        let mut r = BodyReader::of(body, &WEBHOOK_BODY);
        let url = match r.raw("url") {
            None => None,
            Some(value) => match text(value, MAX_URL_LEN, Lines::One) {
                Ok(None) => r.fail("url", "required"),
                Ok(Some(text)) => match parse_url(&text, allow_http) {
                    Some(url) => Some(url),
                    None => r.fail("url", "invalid"),
                },
                Err(suffix) => r.fail("url", suffix),
            },
        };
        let enabled = match r.raw("enabled") {
            None => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => r.fail("enabled", "invalid"),
        };
        let event_types = match r.raw("event_types") {
            None => None,
            Some(Value::Array(items)) => {
                let names: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
                let mut unique = names.clone();
                unique.sort_unstable();
                unique.dedup();
                let known = names.iter().all(|n| super::event::SUBSCRIBABLE.contains(n));
                if names.len() == items.len() && !names.is_empty() && unique.len() == names.len() && known {
                    Some(names.join(","))
                } else {
                    r.fail("event_types", "invalid")
                }
            }
            Some(_) => r.fail("event_types", "invalid"),
        };
        r.finish(Self { url, enabled, event_types })
    }
}

pub use super::limits::MAX_OVERLAP_HOURS;

/// The body of `rotate-secret` (may be empty).
pub static ROTATION_BODY: BodySpec = BodySpec {
    name: "SecretRotationInput",
    doc: "The body of `POST /v1/partner/settings/integrations/webhook/rotate-secret` (optional: an \
          empty body rotates with no overlap).",
    fields: &[Field::optional(
        "expire_previous_in_hours",
        FieldType::Integer { min: 0, max: MAX_OVERLAP_HOURS },
        "How long deliveries are also signed with the previous secret, 0 to 72 hours; default 0 \
         (the previous secret stops verifying at once, and so does any earlier one still in its \
         overlap). Earlier secrets still in their overlap keep signing until each one's own end \
         (at most 5 previous secrets; a sixth ends the oldest) (`expire_previous_in_hours_invalid`).",
    )
    .labelled("Keep the previous secret working for (hours)")],
    example: r#"{"expire_previous_in_hours": 24}"#,
};
crate::documented_body!(SecretRotation, ROTATION_BODY);

/// A rotation, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecretRotation {
    /// 0..=72; 0 ends the previous secret at once.
    pub expire_previous_in_hours: i64,
}

impl SecretRotation {
    pub fn parse(body: &Map<String, Value>) -> Result<Self, Vec<FieldError>> {
        let mut r = BodyReader::of(body, &ROTATION_BODY);
        let hours = r.integer("expire_previous_in_hours", 0..=MAX_OVERLAP_HOURS).unwrap_or(0);
        r.finish(Self { expire_previous_in_hours: hours })
    }
}

/// The body of `POST /v1/partner/webhooks/deliveries/replay`.
pub static BULK_REPLAY_BODY: BodySpec = BodySpec {
    name: "DeadReplayInput",
    doc: "The body of `POST /v1/partner/webhooks/deliveries/replay`: which events to queue again.",
    fields: &[
        Field::required(
            "status",
            FieldType::Choice(&["dead"]),
            "Only `dead`: every event no further attempt would be made for (`status_required`, \
             `status_invalid`).",
        ),
        Field::optional(
            "since",
            FieldType::Timestamp,
            "Only events created at or after this instant, RFC 3339 (`since_invalid`).",
        ),
    ],
    example: r#"{"status": "dead", "since": "2026-11-20T00:00:00Z"}"#,
};
crate::documented_body!(DeadReplay, BULK_REPLAY_BODY);

/// A replay of dead events, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadReplay {
    pub since: Option<chrono::DateTime<chrono::Utc>>,
}

impl DeadReplay {
    pub fn parse(body: &Map<String, Value>) -> Result<Self, Vec<FieldError>> {
        let mut r = BodyReader::of(body, &BULK_REPLAY_BODY);
        match r.raw("status") {
            None => r.fail::<()>("status", "required"),
            Some(Value::String(s)) if s == DeliveryStatus::Dead.as_str() => None,
            Some(_) => r.fail::<()>("status", "invalid"),
        };
        let since = r.timestamp("since");
        r.finish(Self { since })
    }
}

/// An absolute `https` (or, when allowed, `http`) URL with a host and no credentials.
fn parse_url(text: &str, allow_http: bool) -> Option<Url> {
    // The parser reads `https:///hook` as `https://hook/`; the text names no host.
    let (_, rest) = text.split_once("://")?;
    if rest.is_empty() || rest.starts_with(['/', '\\', '?', '#']) {
        return None;
    }
    let url = Url::parse(text).ok()?;
    let scheme_ok = url.scheme() == "https" || (allow_http && url.scheme() == "http");
    let host_ok = url.host_str().is_some_and(|h| !h.is_empty());
    (scheme_ok && host_ok && url.username().is_empty() && url.password().is_none()).then_some(url)
}

/// The most previous secrets kept signing at once: a rotation beyond it ends the oldest
/// overlap early.
pub const MAX_PREVIOUS_SECRETS: usize = 5;

/// A secret replaced by a rotation that still signs deliveries until `expires_at`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PreviousSecret {
    pub secret: String,
    pub expires_at: chrono::DateTime<chrono::Utc>,
}

/// The previous secrets after `current` is replaced at `now`. With an overlap (`until`),
/// `current` joins the front of those still in theirs, each keeping its own end, at most
/// [`MAX_PREVIOUS_SECRETS`] (the oldest go first); without one, the rotation ends every
/// overlap at once (a secret that leaked stops signing).
pub fn after_rotation(
    previous: Vec<PreviousSecret>,
    current: String,
    until: Option<chrono::DateTime<chrono::Utc>>,
    now: chrono::DateTime<chrono::Utc>,
) -> Vec<PreviousSecret> {
    let Some(until) = until else { return Vec::new() };
    std::iter::once(PreviousSecret { secret: current, expires_at: until })
        .chain(previous.into_iter().filter(|p| p.expires_at > now))
        .take(MAX_PREVIOUS_SECRETS)
        .collect()
}

/// The previous secrets that still sign at `now`, newest first.
pub fn still_signing(previous: &[PreviousSecret], now: chrono::DateTime<chrono::Utc>) -> Vec<String> {
    previous.iter().filter(|p| p.expires_at > now).map(|p| p.secret.clone()).collect()
}

/// The stored list (a JSON array); anything unreadable reads as none.
pub fn read_previous(stored: &str) -> Vec<PreviousSecret> {
    serde_json::from_str(stored).unwrap_or_default()
}

/// The most of an endpoint's answer kept with its attempt, in bytes (the event page shows
/// it; the delivery log of the API does not).
pub const ANSWER_EXCERPT_BYTES: usize = 1024;

/// What an endpoint answered, as text to keep: the first [`ANSWER_EXCERPT_BYTES`] of
/// `body`, cut before a character split by that limit; bytes that are not UTF-8, and NUL
/// (which PostgreSQL text cannot hold), as U+FFFD. `None` for an empty body.
pub fn answer_excerpt(body: &[u8]) -> Option<String> {
    let cut = body.len() > ANSWER_EXCERPT_BYTES;
    let body = &body[..body.len().min(ANSWER_EXCERPT_BYTES)];
    let mut text = String::with_capacity(body.len());
    let mut chunks = body.utf8_chunks().peekable();
    while let Some(chunk) = chunks.next() {
        text.push_str(chunk.valid());
        // The last invalid bytes may be a character the limit cut: dropped, not replaced.
        let cut_at_the_end = cut && chunks.peek().is_none();
        if !chunk.invalid().is_empty() && !cut_at_the_end {
            text.push(char::REPLACEMENT_CHARACTER);
        }
    }
    let text = text.replace('\0', "\u{FFFD}");
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::reader::object;

    fn codes(body: Value, allow_http: bool) -> Vec<String> {
        match WebhookPatch::parse(&object(body), allow_http) {
            Ok(_) => vec![],
            Err(errors) => errors.into_iter().map(|e| e.code).collect(),
        }
    }

    #[test]
    fn a_webhook_url_must_be_absolute_https_without_credentials() {
        assert!(codes(json!({"url": "https://hooks.example.com/x", "enabled": true}), false).is_empty());
        assert_eq!(codes(json!({"url": "http://hooks.example.com/x"}), false), ["url_invalid"]);
        assert!(codes(json!({"url": "http://hooks.example.com/x"}), true).is_empty());
        assert_eq!(codes(json!({"url": "ftp://hooks.example.com/x"}), true), ["url_invalid"]);
        assert_eq!(codes(json!({"url": "/relative"}), false), ["url_invalid"]);
        assert_eq!(codes(json!({"url": "https:///hook"}), false), ["url_invalid"], "no host");
        assert_eq!(codes(json!({"url": "https:/hook"}), false), ["url_invalid"]);
        assert_eq!(codes(json!({"url": "https://"}), false), ["url_invalid"]);
        assert_eq!(codes(json!({"url": "https://user:pw@hooks.example.com/"}), false), ["url_invalid"]);
        assert_eq!(codes(json!({"url": 42}), false), ["url_invalid"]);
        assert_eq!(codes(json!({"url": null}), false), ["url_invalid"]);
        assert_eq!(codes(json!({"url": "https://hooks.example.com/a\nb"}), false), ["url_invalid"]);
        assert_eq!(codes(json!({"url": "  "}), false), ["url_required"]);
        let long = format!("https://hooks.example.com/{}", "a".repeat(MAX_URL_LEN));
        assert_eq!(codes(json!({ "url": long }), false), ["url_too_long"]);
    }

    #[test]
    fn enabled_must_be_a_boolean_and_unknown_fields_are_named() {
        assert_eq!(codes(json!({"enabled": "yes"}), false), ["enabled_invalid"]);
        assert_eq!(codes(json!({"enabled": null}), false), ["enabled_invalid"]);
        assert_eq!(codes(json!({"enabled": false, "secret": "x"}), false), ["secret_unknown"]);
    }

    #[test]
    fn the_documented_fields_are_the_accepted_ones() {
        let names: Vec<&str> = WEBHOOK_BODY.names().collect();
        assert_eq!(names, ["url", "enabled", "event_types"]);
        assert!(codes(json!({"url": "https://hooks.example.com/x", "enabled": true}), false).is_empty());
        assert!(codes(json!({"event_types": ["listing.updated", "redemption.created"]}), false).is_empty());
        for bad in [json!([]), json!(["ping"]), json!(["listing.updated", "listing.updated"]), json!([1]), json!(null)]
        {
            assert_eq!(codes(json!({ "event_types": bad }), false), ["event_types_invalid"], "{bad}");
        }
    }

    #[test]
    fn wire_names_read_back_and_match_serde() {
        for status in DeliveryStatus::ALL {
            assert_eq!(status.as_str().parse::<DeliveryStatus>(), Ok(*status));
            assert_eq!(serde_json::to_value(status).unwrap(), json!(status.as_str()));
        }
        for class in FailureClass::ALL {
            assert_eq!(class.as_str().parse::<FailureClass>(), Ok(*class));
            assert_eq!(serde_json::to_value(class).unwrap(), json!(class.as_str()));
        }
        assert!("failed".parse::<DeliveryStatus>().is_err());
    }

    #[test]
    fn every_previous_secret_signs_until_its_own_overlap_ends_at_most_five() {
        let t0: chrono::DateTime<chrono::Utc> = "2026-11-27T00:00:00Z".parse().unwrap();
        let h = chrono::TimeDelta::hours;
        // a → b with 24 h, then b → c with 2 h: both a and b still sign.
        let after_b = after_rotation(Vec::new(), "a".into(), Some(t0 + h(24)), t0);
        let after_c = after_rotation(after_b, "b".into(), Some(t0 + h(1) + h(2)), t0 + h(1));
        assert_eq!(still_signing(&after_c, t0 + h(2)), ["b", "a"]);
        // b's overlap ends first; a's goes on until its own end.
        assert_eq!(still_signing(&after_c, t0 + h(4)), ["a"]);
        assert!(still_signing(&after_c, t0 + h(24)).is_empty());
        // A rotation without an overlap ends them all.
        assert!(after_rotation(after_c.clone(), "c".into(), None, t0 + h(1)).is_empty());
        // Expired ones are dropped, and at most five are kept, the newest.
        let mut list = Vec::new();
        for (i, name) in ["s1", "s2", "s3", "s4", "s5", "s6", "s7"].iter().enumerate() {
            let at = t0 + h(i as i64);
            list = after_rotation(list, (*name).into(), Some(at + h(72)), at);
        }
        assert_eq!(still_signing(&list, t0 + h(7)), ["s7", "s6", "s5", "s4", "s3"]);
        let stored = serde_json::to_string(&list).unwrap();
        assert_eq!(read_previous(&stored), list);
        assert!(read_previous("not json").is_empty());
    }

    #[test]
    fn an_answer_is_kept_to_its_first_kilobyte_cut_between_characters() {
        assert_eq!(answer_excerpt(b""), None);
        assert_eq!(answer_excerpt(b"ok").as_deref(), Some("ok"));
        let huge = vec![b'a'; 10 << 20];
        assert_eq!(answer_excerpt(&huge).map(|t| t.len()), Some(ANSWER_EXCERPT_BYTES));
        // "é" is two bytes: 1023 of 'a' then "é" would cross the limit, so it is left out.
        let mut split = vec![b'a'; ANSWER_EXCERPT_BYTES - 1];
        split.extend_from_slice("é and more".as_bytes());
        let kept = answer_excerpt(&split).unwrap();
        assert_eq!(kept.len(), ANSWER_EXCERPT_BYTES - 1);
        assert!(kept.chars().all(|c| c == 'a'));
        // Not UTF-8, and NUL: shown as U+FFFD, never dropped silently.
        assert_eq!(answer_excerpt(b"a\xffb\0c").as_deref(), Some("a\u{FFFD}b\u{FFFD}c"));
    }
}
