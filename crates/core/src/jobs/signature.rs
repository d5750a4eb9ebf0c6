//! Webhook signing secrets and the two signature headers every delivery carries.
//!
//! `X-Service-Signature` is Stripe's scheme: `t=<unix seconds>,v1=<lower-case hex
//! HMAC-SHA256 over "<t>.<raw body>">`, keyed with the bytes of the secret string exactly as
//! the partner received it (prefix included), so Stripe's verifiers work unchanged.
//!
//! `webhook-signature` is Standard Webhooks' (with `webhook-id` and `webhook-timestamp`):
//! `v1,<base64 HMAC-SHA256 over "<id>.<timestamp>.<raw body>">`, keyed with the bytes the
//! base64 after `whsec_` encodes, so the Standard Webhooks libraries verify it.
//!
//! During a rotation's overlap both headers carry one signature per secret, newest first.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

pub const SECRET_PREFIX: &str = "whsec_";
const SECRET_BYTES: usize = 32;

/// A new signing secret: `whsec_` + base64 of 32 random bytes (256 bits).
pub fn generate_secret() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; SECRET_BYTES];
    getrandom::fill(&mut bytes)?;
    Ok(format!("{SECRET_PREFIX}{}", BASE64.encode(bytes)))
}

/// The HMAC key of the Standard Webhooks signature: the bytes the base64 after `whsec_`
/// encodes. Secrets made before that form (`whsec_` + base62, which is not base64 of whole
/// bytes) are keyed with the whole secret string, as `X-Service-Signature` is.
fn standard_key(secret: &str) -> Vec<u8> {
    secret
        .strip_prefix(SECRET_PREFIX)
        .and_then(|encoded| BASE64.decode(encoded).ok())
        .unwrap_or_else(|| secret.as_bytes().to_vec())
}

/// The `webhook-signature` value: `v1,<base64>` per secret, space-separated.
pub fn standard_signature(secrets: &[&str], id: &str, timestamp: i64, body: &[u8]) -> String {
    let signed = |secret: &&str| {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&standard_key(secret))
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"));
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        format!("v1,{}", BASE64.encode(mac.finalize().into_bytes()))
    };
    secrets.iter().map(signed).collect::<Vec<_>>().join(" ")
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

/// The `X-Service-Signature` value for `body` sent at `timestamp` (Unix seconds): one
/// `v1=` per secret.
pub fn signature_header(secrets: &[&str], timestamp: i64, body: &[u8]) -> String {
    let mut header = format!("t={timestamp}");
    for secret in secrets {
        header.push_str(",v1=");
        header.push_str(&hex::encode(mac(secret, timestamp, body).finalize().into_bytes()));
    }
    header
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
        let header = signature_header(&["whsec_test"], 1_700_000_000, br#"{"id":"evt_1"}"#);
        assert_eq!(header, "t=1700000000,v1=c89214b5b5da833daed6f0b8c5bb6bd58cea9022bd80ccc78230f3942d632925");
    }

    #[test]
    fn verification_needs_the_same_secret_body_and_a_recent_time() {
        let body = br#"{"id":"evt_1","type":"redemption.created"}"#;
        let header = signature_header(&["whsec_abc"], 1_000, body);
        assert!(verify("whsec_abc", &header, body, 1_000, 300));
        assert!(verify("whsec_abc", &header, body, 1_300, 300));
        assert!(!verify("whsec_abc", &header, body, 1_301, 300), "too old");
        assert!(!verify("whsec_other", &header, body, 1_000, 300), "other secret");
        assert!(!verify("whsec_abc", &header, br#"{"id":"evt_2"}"#, 1_000, 300), "other body");
        assert!(!verify("whsec_abc", "v1=00", body, 1_000, 300), "no timestamp");
    }

    #[test]
    fn during_an_overlap_each_secret_alone_verifies() {
        let body = br#"{"id":"evt_1"}"#;
        let header = signature_header(&["whsec_new", "whsec_old"], 1_000, body);
        assert_eq!(header.matches(",v1=").count(), 2);
        assert!(verify("whsec_new", &header, body, 1_000, 300));
        assert!(verify("whsec_old", &header, body, 1_000, 300));
        assert!(!verify("whsec_other", &header, body, 1_000, 300));
    }

    #[test]
    fn the_standard_signature_matches_the_standard_webhooks_vector() {
        // The example of the Standard Webhooks specification (and of its libraries' tests).
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = br#"{"test": 2432232314}"#;
        let signature = standard_signature(&[secret], "msg_p5jXN8AQM9LWM0D4loKWxJek", 1_614_265_330, body);
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn old_style_secrets_key_the_standard_signature_with_the_whole_string() {
        assert_eq!(standard_key("whsec_abc!"), b"whsec_abc!".to_vec());
        assert_eq!(standard_key("whsec_AAEC"), vec![0, 1, 2]);
        let two = standard_signature(&["whsec_AAEC", "whsec_AQID"], "evt_1", 5, b"{}");
        assert_eq!(two.split(' ').count(), 2);
    }

    #[test]
    fn secrets_are_prefixed_random_and_hinted_by_their_tail() {
        let a = generate_secret().unwrap();
        assert!(a.starts_with("whsec_") && a.len() == 6 + 44);
        assert_eq!(BASE64.decode(&a[6..]).unwrap().len(), 32);
        assert_ne!(a, generate_secret().unwrap());
        assert_eq!(secret_hint("whsec_abcdefgh1234"), "whsec_…1234");
    }
}
