//! `Idempotency-Key` (decisions 11.1): which header values are keys, what identifies a
//! request, and what a repeat gets.

use sha2::{Digest, Sha256};

/// The header's name.
pub const HEADER: &str = "idempotency-key";
/// The answer header of a replayed answer.
pub const REPLAYED_HEADER: &str = "idempotent-replayed";
pub const MAX_KEY_LEN: usize = 255;

/// True for 1..=255 visible ASCII characters (`!` to `~`).
pub fn valid_key(value: &[u8]) -> bool {
    (1..=MAX_KEY_LEN).contains(&value.len()) && value.iter().all(|b| (b'!'..=b'~').contains(b))
}

/// What identifies a request under one key: SHA-256 over its method, path with query and
/// body, each length-prefixed so no two different requests share the bytes hashed. A JSON
/// body counts as its parsed value (decisions 11.6): [`canonical`] bytes, so whitespace and
/// key order do not make another request; any other body counts as its bytes.
pub fn fingerprint(method: &str, path: &str, body: &[u8]) -> [u8; 32] {
    let canonical = canonical(body);
    let body = canonical.as_deref().unwrap_or(body);
    let mut hash = Sha256::new();
    for part in [method.as_bytes(), path.as_bytes(), body] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part);
    }
    hash.finalize().into()
}

/// A JSON body's value written one way: compact, object keys sorted (by their UTF-8 bytes),
/// numbers and strings as parsed. `None` when the body is not JSON.
pub fn canonical(body: &[u8]) -> Option<Vec<u8>> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let mut out = Vec::with_capacity(body.len());
    write_canonical(&value, &mut out);
    Some(out)
}

fn write_canonical(value: &serde_json::Value, out: &mut Vec<u8>) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(&Value::String(key.clone()), out);
                out.push(b':');
                write_canonical(value, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        // A scalar's compact form cannot fail to serialise.
        scalar => out.extend_from_slice(serde_json::to_string(scalar).unwrap_or_default().as_bytes()),
    }
}

/// A key's row as found when claiming it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// Its first request is still running.
    Running { fingerprint: Vec<u8> },
    /// Its first request answered `status` with `body`.
    Done { fingerprint: Vec<u8>, status: u16, content_type: Option<String>, headers: KeptHeaders, body: Vec<u8> },
}

/// The headers of a kept answer that a replay answers again (decisions 11.5), besides its
/// content type.
pub const KEPT_HEADERS: [&str; 3] = ["etag", "location", "content-disposition"];

/// Kept header names and values, in [`KEPT_HEADERS`] order.
pub type KeptHeaders = Vec<(String, String)>;

/// What a request carrying an already used key gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repeat {
    /// The same request: the kept answer again.
    Replay { status: u16, content_type: Option<String>, headers: KeptHeaders, body: Vec<u8> },
    /// The same request while the first still runs: 409 `idempotency_key_in_use`.
    InUse,
    /// Another method, path or body: 422 `idempotency_key_reused`.
    Reused,
}

/// The answer to a repeat of `fingerprint` over what the key holds. Another request is
/// refused as reused whether or not the first has finished.
pub fn repeat(kept: Kept, fingerprint: &[u8; 32]) -> Repeat {
    match kept {
        Kept::Running { fingerprint: first } | Kept::Done { fingerprint: first, .. }
            if first.as_slice() != fingerprint.as_slice() =>
        {
            Repeat::Reused
        }
        Kept::Running { .. } => Repeat::InUse,
        Kept::Done { status, content_type, headers, body, .. } => {
            Repeat::Replay { status, content_type, headers, body }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn keys_are_1_to_255_visible_ascii_characters() {
        assert!(valid_key(b"a"));
        assert!(valid_key(b"order-2026-11-21/7f3a~!"));
        assert!(valid_key(&[b'x'; 255]));
        assert!(!valid_key(b""));
        assert!(!valid_key(&[b'x'; 256]));
        assert!(!valid_key(b"has space"));
        assert!(!valid_key(b"tab\t"));
        assert!(!valid_key("é".as_bytes()));
    }

    #[test]
    fn the_fingerprint_separates_method_path_and_body() {
        let a = fingerprint("POST", "/v1/listings", b"{}");
        assert_eq!(a, fingerprint("POST", "/v1/listings", b"{}"));
        assert_ne!(a, fingerprint("PATCH", "/v1/listings", b"{}"));
        assert_ne!(a, fingerprint("POST", "/v1/listings?x=1", b"{}"));
        assert_ne!(a, fingerprint("POST", "/v1/listings", b"[]"));
        assert_ne!(a, fingerprint("POST", "/v1/listings", b"{ x"));
        // Moving bytes between parts changes the fingerprint.
        assert_ne!(fingerprint("POST", "/a", b"b"), fingerprint("POST", "/ab", b""));
    }

    #[test]
    fn a_json_body_counts_as_its_value_whatever_its_spacing_and_key_order() {
        let compact = fingerprint("POST", "/v1/listings", br#"{"title":"Sofa","price_gbp":10,"faults":["None"]}"#);
        let pretty = br#"{
          "price_gbp": 10,
          "faults": [ "None" ],
          "title": "Sofa"
        }"#;
        assert_eq!(compact, fingerprint("POST", "/v1/listings", pretty));
        let nested = |body: &[u8]| canonical(body).map(|c| String::from_utf8(c).unwrap());
        assert_eq!(
            nested(br#"{"b":{"y":1,"x":[2,{"d":3,"c":4}]},"a":"\u00e9"}"#).unwrap(),
            r#"{"a":"é","b":{"x":[2,{"c":4,"d":3}],"y":1}}"#
        );
        // Another value is another request: an array's order, a number, a string.
        assert_ne!(
            compact,
            fingerprint("POST", "/v1/listings", br#"{"title":"Sofa","price_gbp":11,"faults":["None"]}"#)
        );
        assert_ne!(nested(b"[1,2]"), nested(b"[2,1]"));
        assert_ne!(nested(b"1.0"), nested(b"1"), "numbers as written: 1.0 and 1 stay apart");
        // A body that is not JSON counts as its bytes.
        assert_eq!(canonical(b"{ x"), None);
        assert_ne!(fingerprint("POST", "/p", b"{ x"), fingerprint("POST", "/p", b"{x"));
    }

    #[test]
    fn a_repeat_replays_waits_or_is_refused() {
        let f = fingerprint("POST", "/v1/listings", b"{}");
        let other = fingerprint("POST", "/v1/listings", b"{\"a\":1}");
        let headers = vec![("etag".to_owned(), "\"v1\"".to_owned())];
        let done = Kept::Done {
            fingerprint: f.to_vec(),
            status: 201,
            content_type: None,
            headers: headers.clone(),
            body: b"{}".to_vec(),
        };
        assert_eq!(
            repeat(done.clone(), &f),
            Repeat::Replay { status: 201, content_type: None, headers, body: b"{}".to_vec() }
        );
        assert_eq!(repeat(done, &other), Repeat::Reused);
        assert_eq!(repeat(Kept::Running { fingerprint: f.to_vec() }, &f), Repeat::InUse);
        assert_eq!(repeat(Kept::Running { fingerprint: f.to_vec() }, &other), Repeat::Reused);
    }

    proptest! {
        #[test]
        fn any_byte_string_is_judged_without_panicking(value in proptest::collection::vec(any::<u8>(), 0..300)) {
            let ok = valid_key(&value);
            prop_assert_eq!(ok, !value.is_empty() && value.len() <= 255 && value.iter().all(|b| (33..=126).contains(b)));
        }
    }
}
