//! `Idempotency-Key` (decisions 11.1): which header values are keys, what identifies a
//! request, and what a repeat gets.

use sha2::{Digest, Sha256};

use crate::time::Ts;

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

/// A kept answer's body at least this long is stored deflated: below it the saving is a
/// few bytes, or none.
pub const DEFLATE_FROM: usize = 128;

/// How a kept body is stored (the `body_deflated` column): as it is, or deflated with the
/// preset dictionary [`DICTIONARY_V1`]. A stored number never changes meaning: another
/// dictionary would be another number, and rows of the old one stay readable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    Plain = 0,
    DeflateV1 = 1,
}

impl Packing {
    pub fn from_stored(n: i64) -> Option<Self> {
        match n {
            0 => Some(Self::Plain),
            1 => Some(Self::DeflateV1),
            _ => None,
        }
    }
}

/// The preset dictionary of [`Packing::DeflateV1`]: the names and common values of the
/// API's answers (a listing's, most of all), so that even a short answer deflates well:
/// by itself deflate keeps about half of a listing's JSON, with it under a third. Never edit it:
/// rows are stored with it; a new one is a new [`Packing`].
pub const DICTIONARY_V1: &[u8] = br#"{"id":"evt_","type":"","data":{},"object":"","code":"","amount_pence":0,"balance_pence":0,"customer_email":"","expires_at":null,"redeemed_at":null,"items":[],"meta":{"paging":"page","page":1,"per_page":20,"total":0,"has_more":false,"next_cursor":null},"action":"created","updated","row":1,"errors":[],"warehouse_id":null,"measurements":[{"type":"Corner Sofa","4-Seater","3-Seater","2-Seater","Chair","Sofa Bed","Footstool","w_cm":0,"d_cm":0,"h_cm":0}],"image_imports":[{"position":0,"source_url":"https://","attachment_id":null,"status":"pending","url":null,"error":null}],"seller":{"id":1,"display_name":""},"images":[],"quantity":1,"delivery_contribution_gbp":0,"warehouse_location":"","sku":"","faults":["None"],"exposed_to":["Dogs","Cats","Smoke","None"],"available_from":"","condition":"like-new","excellent","gently-used","fair","age_years":"","fabric":"","colour":"","brand":"","rrp":null,"rrp_pence":null,"sale_price":null,"sale_price_pence":null,"regular_price":0.0,"regular_price_pence":0,"description":"","payout":0.0,"payout_pence":0,"channel":"exchange","clearance","category":"Corner Sofas","3-Seater Sofas","2-Seater Sofas","Sofa Beds","Armchairs","Footstools","Sofa Sets","view_count":0,"deleted_at":null,"updated_at":"2026-12-07T00:00:00.000000Z","created_at":"2026-12-07T00:00:00.000000Z","url":"https://","/marketplace/listings/","brand_id":"","image_url":"","status":"active","draft","closed","currency":"GBP","price_pence":0,"price":0.0,"title":"","id":1}"#;

/// A kept answer's body as stored, and how: deflated with the preset dictionary when that
/// makes it smaller, else as it is. A listing's answer keeps about a third of its bytes.
pub fn pack(body: &[u8]) -> (std::borrow::Cow<'_, [u8]>, Packing) {
    if body.len() < DEFLATE_FROM {
        return (body.into(), Packing::Plain);
    }
    match deflate_v1(body) {
        Some(packed) if packed.len() < body.len() => (packed.into(), Packing::DeflateV1),
        _ => (body.into(), Packing::Plain),
    }
}

fn deflate_v1(body: &[u8]) -> Option<Vec<u8>> {
    use flate2::{Compress, Compression, FlushCompress, Status};
    let mut deflate = Compress::new(Compression::default(), false);
    deflate.set_dictionary(DICTIONARY_V1).ok()?;
    // Room for a body that does not shrink: then it is kept as it is anyway.
    let mut packed = Vec::with_capacity(body.len() + 64);
    match deflate.compress_vec(body, &mut packed, FlushCompress::Finish).ok()? {
        Status::StreamEnd => Some(packed),
        Status::Ok | Status::BufError => None,
    }
}

/// A stored body as the answer had it ([`pack`] undone).
pub fn unpack(stored: Vec<u8>, packing: Packing) -> std::io::Result<Vec<u8>> {
    use flate2::{Decompress, FlushDecompress, Status};
    if packing == Packing::Plain {
        return Ok(stored);
    }
    let broken = |e: &dyn std::fmt::Display| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string());
    let mut inflate = Decompress::new(false);
    inflate.set_dictionary(DICTIONARY_V1).map_err(|e| broken(&e))?;
    let mut body = Vec::with_capacity(stored.len() * 4);
    loop {
        let read = usize::try_from(inflate.total_in()).unwrap_or(usize::MAX);
        let input = stored.get(read..).unwrap_or_default();
        body.reserve(body.capacity().max(1024));
        let status = inflate.decompress_vec(input, &mut body, FlushDecompress::Finish).map_err(|e| broken(&e))?;
        match status {
            Status::StreamEnd => return Ok(body),
            // Out of room: more is made above. No input left and no end: cut short.
            Status::Ok | Status::BufError if read < stored.len() || body.len() == body.capacity() => {}
            Status::Ok | Status::BufError => return Err(broken(&"the stored body ends early")),
        }
    }
}

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

    #[test]
    fn a_listing_answer_is_kept_in_under_a_third_of_its_bytes() {
        let listing = br#"{"id":48213,"title":"Three-seat sofa in oak and linen","price":1200.0,"price_pence":120000,"currency":"GBP","status":"active","image_url":"https://media.rehome.example/media/acme/48213/1.webp","brand_id":"acme","url":"https://rehome.example/marketplace/listings/48213","created_at":"2026-12-07T10:00:00.123456Z","updated_at":"2026-12-07T10:00:00.123456Z","deleted_at":null,"view_count":0,"category":"3-Seater Sofas","channel":"exchange","payout":840.0,"payout_pence":84000,"description":"A well kept three-seat sofa from a smoke-free home.","regular_price":1200.0,"regular_price_pence":120000,"sale_price":null,"sale_price_pence":null,"rrp":2400.0,"rrp_pence":240000,"brand":"Acme","colour":"Natural","fabric":"Linen","age_years":"3","condition":"excellent","available_from":"","exposed_to":[],"faults":["None"],"sku":"SOFA-2026-0001","warehouse_location":"","delivery_contribution_gbp":0,"quantity":1,"images":["https://media.rehome.example/media/acme/48213/1.webp"],"seller":{"id":7,"display_name":"Acme Furniture"},"warehouse_id":null,"measurements":[{"type":"3-Seater","w_cm":210,"d_cm":95,"h_cm":85}],"image_imports":[]}"#;
        let (packed, packing) = pack(listing);
        assert_eq!(packing, Packing::DeflateV1);
        assert!(packed.len() * 3 < listing.len(), "{} of {} bytes", packed.len(), listing.len());
        assert_eq!(unpack(packed.into_owned(), packing).unwrap(), listing.to_vec());
        // Short bodies, and those deflate would not shrink, are kept as they are.
        assert_eq!(pack(b"{}"), (std::borrow::Cow::Borrowed(&b"{}"[..]), Packing::Plain));
        let noise: Vec<u8> = (0..400u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
        assert_eq!(pack(&noise).1, Packing::Plain);
        assert!(unpack(b"not deflated".to_vec(), Packing::DeflateV1).is_err());
        assert_eq!(
            (Packing::from_stored(0), Packing::from_stored(1)),
            (Some(Packing::Plain), Some(Packing::DeflateV1))
        );
        assert_eq!(Packing::from_stored(2), None);
    }

    proptest! {
        #[test]
        fn whatever_is_packed_unpacks_to_itself(body in proptest::collection::vec(any::<u8>(), 0..2000), repeat in 1usize..8) {
            let body: Vec<u8> = body.iter().copied().cycle().take(body.len() * repeat).collect();
            let (packed, packing) = pack(&body);
            prop_assert!(packed.len() <= body.len());
            prop_assert_eq!(unpack(packed.into_owned(), packing).unwrap(), body);
        }

        #[test]
        fn any_byte_string_is_judged_without_panicking(value in proptest::collection::vec(any::<u8>(), 0..300)) {
            let ok = valid_key(&value);
            prop_assert_eq!(ok, !value.is_empty() && value.len() <= 255 && value.iter().all(|b| (33..=126).contains(b)));
        }
    }
}

/// What claiming a key did (the store answers it).
#[derive(Debug, Clone)]
pub enum Claim {
    /// This request holds the key: run it, then complete or release the key.
    Claimed,
    /// The key is held or done: what it holds.
    Held(Kept),
}

/// A request's claim on an idempotency key of an API key.
#[derive(Debug, Clone)]
pub struct KeyClaim {
    pub key_id: i64,
    pub key: String,
    pub fingerprint: [u8; 32],
    pub now: Ts,
    /// The request holds the key until then at the latest (its node may die).
    pub lease_until: Ts,
    pub expires_at: Ts,
}

/// The 2xx answer of the request that holds a key, to keep.
#[derive(Debug, Clone)]
pub struct KeptAnswer {
    pub key_id: i64,
    pub key: String,
    pub status: u16,
    pub content_type: Option<String>,
    /// The headers a replay answers again (`domain::idempotency::KEPT_HEADERS`).
    pub headers: KeptHeaders,
    /// The answer's bytes, shared with the response sent (not copied).
    pub body: bytes::Bytes,
}
