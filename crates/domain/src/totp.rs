//! Two-step codes (decisions 8.2): TOTP per RFC 6238 with SHA-1, 6 digits and 30-second
//! steps; the previous and the next step are accepted (clock drift), and each code at most
//! once per user: a code is accepted only for a step later than the last accepted one.

use subtle::ConstantTimeEq;
use totp_rs::{Algorithm, TOTP};

/// Seconds per step.
pub const STEP_SECONDS: u64 = 30;
/// Digits per code.
pub const DIGITS: usize = 6;
/// Bytes of a secret (160 bits, the size of a SHA-1 HMAC key RFC 4226 recommends).
pub const SECRET_LEN: usize = 20;
/// The issuer authenticator apps show.
pub const ISSUER: &str = "rehome";

/// A user's TOTP secret. Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct TotpSecret(Vec<u8>);

impl std::fmt::Debug for TotpSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TotpSecret(..)")
    }
}

impl TotpSecret {
    /// 20 random bytes from the OS.
    pub fn generate() -> Result<Self, getrandom::Error> {
        let mut bytes = vec![0u8; SECRET_LEN];
        getrandom::fill(&mut bytes)?;
        Ok(Self(bytes))
    }

    /// A stored (unsealed) secret; `None` unless it has the secret length.
    pub fn from_bytes(bytes: Vec<u8>) -> Option<Self> {
        (bytes.len() == SECRET_LEN).then_some(Self(bytes))
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// An RFC 6238 generator for this secret labelled `account` (the email).
    fn totp(&self, account: &str) -> TOTP {
        // The label may not hold ':' (it separates issuer and account); an email never does,
        // and the label does not enter the code.
        TOTP::new_unchecked(
            Algorithm::SHA1,
            DIGITS,
            1,
            STEP_SECONDS,
            self.0.clone(),
            Some(ISSUER.into()),
            account.replace(':', ""),
        )
    }

    /// The secret as authenticator apps take it typed: base32 (RFC 4648) without padding.
    pub fn base32(&self) -> String {
        self.totp("").get_secret_base32()
    }

    /// `otpauth://totp/rehome:<email>?secret=…&issuer=rehome`, what the QR code holds.
    pub fn otpauth_url(&self, email: &str) -> String {
        self.totp(email).get_url()
    }

    /// The code of step `step`.
    pub fn code_at_step(&self, step: u64) -> String {
        self.totp("").generate(step * STEP_SECONDS)
    }
}

/// The step of the instant `unix_seconds`.
pub fn step_of(unix_seconds: u64) -> u64 {
    unix_seconds / STEP_SECONDS
}

/// The code as typed, without the spaces people put in the middle, if it is 6 digits.
pub fn normalise_code(typed: &str) -> Option<String> {
    let code: String = typed.chars().filter(|c| !c.is_whitespace() && *c != '-').collect();
    (code.len() == DIGITS && code.bytes().all(|b| b.is_ascii_digit())).then_some(code)
}

/// The step whose code `code` is, among the previous, current and next step of `now_step`
/// that are later than `last_step` (the last accepted one), or `None`: a wrong code, a code
/// too old or too new, or one already used (or older than one used).
pub fn accepted_step(secret: &TotpSecret, code: &str, now_step: u64, last_step: Option<u64>) -> Option<u64> {
    let code = normalise_code(code)?;
    let mut found = None;
    for step in now_step.saturating_sub(1)..=now_step + 1 {
        if last_step.is_some_and(|last| step <= last) {
            continue;
        }
        // Every candidate is compared (no early exit), each in constant time.
        let matches = bool::from(secret.code_at_step(step).as_bytes().ct_eq(code.as_bytes()));
        if matches && found.is_none() {
            found = Some(step);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238's SHA-1 key, "12345678901234567890".
    fn rfc_secret() -> TotpSecret {
        TotpSecret::from_bytes(b"12345678901234567890".to_vec()).unwrap()
    }

    #[test]
    fn codes_match_the_rfc_6238_vectors() {
        // Appendix B, SHA-1, last six digits of the eight-digit values.
        let s = rfc_secret();
        assert_eq!(s.code_at_step(step_of(59)), "287082");
        assert_eq!(s.code_at_step(step_of(1_111_111_109)), "081804");
        assert_eq!(s.code_at_step(step_of(1_234_567_890)), "005924");
        assert_eq!(s.code_at_step(step_of(2_000_000_000)), "279037");
    }

    #[test]
    fn the_previous_current_and_next_steps_are_accepted_and_no_other() {
        let s = rfc_secret();
        let now = 1000;
        for step in [now - 1, now, now + 1] {
            assert_eq!(accepted_step(&s, &s.code_at_step(step), now, None), Some(step));
        }
        assert_eq!(accepted_step(&s, &s.code_at_step(now - 2), now, None), None);
        assert_eq!(accepted_step(&s, &s.code_at_step(now + 2), now, None), None);
    }

    #[test]
    fn a_code_is_accepted_only_after_the_last_accepted_step() {
        let s = rfc_secret();
        let code = s.code_at_step(1000);
        assert_eq!(accepted_step(&s, &code, 1000, Some(999)), Some(1000));
        assert_eq!(accepted_step(&s, &code, 1000, Some(1000)), None, "the same code twice");
        // After the next step's code was used, the current one is refused too.
        assert_eq!(accepted_step(&s, &code, 1000, Some(1001)), None);
        assert_eq!(accepted_step(&s, &s.code_at_step(1001), 1000, Some(1000)), Some(1001));
    }

    #[test]
    fn codes_are_six_digits_spaces_allowed() {
        let s = rfc_secret();
        let code = s.code_at_step(1000);
        let spaced = format!("{} {}", &code[..3], &code[3..]);
        assert_eq!(accepted_step(&s, &spaced, 1000, None), Some(1000));
        assert_eq!(normalise_code("12345"), None);
        assert_eq!(normalise_code("1234567"), None);
        assert_eq!(normalise_code("12a456"), None);
        assert_eq!(normalise_code("١٢٣٤٥٦"), None, "non-ASCII digits");
    }

    #[test]
    fn secrets_are_twenty_random_bytes_in_base32_and_an_otpauth_url() {
        let s = TotpSecret::generate().unwrap();
        assert_eq!(s.as_bytes().len(), SECRET_LEN);
        assert_ne!(s, TotpSecret::generate().unwrap());
        assert_eq!(rfc_secret().base32(), "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ");
        assert_eq!(
            rfc_secret().otpauth_url("ada@acme.example"),
            "otpauth://totp/rehome:ada%40acme.example?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=rehome"
        );
        assert!(TotpSecret::from_bytes(vec![0; 19]).is_none());
    }
}
