//! Webhook signing secrets and the `X-Service-Signature` header.
//!
//! The scheme is Stripe's: `t=<unix seconds>,v1=<lower-case hex HMAC-SHA256 over
//! "<t>.<raw body>">`, keyed with the bytes of the secret string exactly as the partner
//! received it (prefix included), so Stripe's verifiers work unchanged.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::domain::apikey::random_base62;

pub const SECRET_PREFIX: &str = "whsec_";
const SECRET_RANDOM_LEN: usize = 32;

/// A new signing secret: `whsec_` + 32 random base62 characters (about 190 bits).
pub fn generate_secret() -> Result<String, getrandom::Error> {
    Ok(format!("{SECRET_PREFIX}{}", random_base62(SECRET_RANDOM_LEN)?))
}

/// What responses show of a secret after it was handed out: the prefix and its last four characters.
pub fn secret_hint(secret: &str) -> String {
    let tail: String = secret.chars().rev().take(4).collect::<Vec<_>>().into_iter().rev().collect();
    format!("{SECRET_PREFIX}…{tail}")
}

fn mac(secret: &str, timestamp: i64, body: &[u8]) -> Hmac<Sha256> {
    // HMAC takes keys of any length; `new_from_slice` cannot fail for it.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"));
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The `X-Service-Signature` value for `body` sent at `timestamp` (Unix seconds).
pub fn signature_header(secret: &str, timestamp: i64, body: &[u8]) -> String {
    format!("t={timestamp},v1={}", hex::encode(mac(secret, timestamp, body).finalize().into_bytes()))
}

/// What a receiver does (docs/webhooks.md shows the same in Python): true when the header
/// carries a `v1` signature of `body` by `secret` whose time is within `tolerance_secs` of `now`.
pub fn verify(secret: &str, header: &str, body: &[u8], now: i64, tolerance_secs: i64) -> bool {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for item in header.split(',') {
        match item.split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<i64>().ok(),
            Some(("v1", sig)) => signatures.push(sig),
            _ => {}
        }
    }
    let Some(timestamp) = timestamp else { return false };
    if (now - timestamp).abs() > tolerance_secs {
        return false;
    }
    let expected = hex::encode(mac(secret, timestamp, body).finalize().into_bytes());
    signatures.iter().any(|sig| bool::from(sig.as_bytes().ct_eq(expected.as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_matches_a_known_hmac_sha256_vector() {
        // echo -n '1700000000.{"id":"evt_1"}' | openssl dgst -sha256 -hmac 'whsec_test'
        let header = signature_header("whsec_test", 1_700_000_000, br#"{"id":"evt_1"}"#);
        assert_eq!(header, "t=1700000000,v1=c89214b5b5da833daed6f0b8c5bb6bd58cea9022bd80ccc78230f3942d632925");
    }

    #[test]
    fn verification_needs_the_same_secret_body_and_a_recent_time() {
        let body = br#"{"id":"evt_1","type":"redemption.created"}"#;
        let header = signature_header("whsec_abc", 1_000, body);
        assert!(verify("whsec_abc", &header, body, 1_000, 300));
        assert!(verify("whsec_abc", &header, body, 1_300, 300));
        assert!(!verify("whsec_abc", &header, body, 1_301, 300), "too old");
        assert!(!verify("whsec_other", &header, body, 1_000, 300), "other secret");
        assert!(!verify("whsec_abc", &header, br#"{"id":"evt_2"}"#, 1_000, 300), "other body");
        assert!(!verify("whsec_abc", "v1=00", body, 1_000, 300), "no timestamp");
    }

    #[test]
    fn secrets_are_prefixed_random_and_hinted_by_their_tail() {
        let a = generate_secret().unwrap();
        assert!(a.starts_with("whsec_") && a.len() == 38);
        assert_ne!(a, generate_secret().unwrap());
        assert_eq!(secret_hint("whsec_abcdefgh1234"), "whsec_…1234");
    }
}
