//! Single-use credit codes: `RH-XXXX-XXXX-XXXX-XXXX`, 16 characters from a 30-character
//! alphabet without look-alikes (no 0/O, 1/I/L, U), about 78 random bits.
//!
//! A code is a bearer credential, so it is never stored: the database keeps the SHA-256 of
//! its normalised form (enough to find it when presented; with 78 random bits nobody can
//! search the hash back to a code) and a display hint with its last four characters.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::body::{BodySpec, Field, FieldType};
use super::payout::ORDER_REFERENCE_MAX;
use super::reader::BodyReader;
use crate::FieldError;

const ALPHABET: &[u8; 30] = b"23456789ABCDEFGHJKMNPQRSTVWXYZ";
const PREFIX: &str = "RH";
/// Random characters per code: 30^16 ≈ 2^78.5.
pub const RANDOM_LEN: usize = 16;

/// A freshly generated code, in its display form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreditCode(String);

impl CreditCode {
    pub fn generate() -> Result<Self, getrandom::Error> {
        let mut random = String::with_capacity(RANDOM_LEN);
        let mut buf = [0u8; 32];
        while random.len() < RANDOM_LEN {
            getrandom::fill(&mut buf)?;
            for &b in &buf {
                // 240 = 8 × 30: bytes at or above it would favour the first characters.
                if b < 240 && random.len() < RANDOM_LEN {
                    random.push(ALPHABET[usize::from(b % 30)] as char);
                }
            }
        }
        Ok(Self(display(&random)))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn lookup_hash(&self) -> Vec<u8> {
        PresentedCode::parse(&self.0).lookup_hash()
    }

    /// `RH-****-****-****-9XKD`: enough for a person to tell codes apart, useless to spend.
    pub fn hint(&self) -> String {
        let tail: String = self.0.chars().rev().take(4).collect::<Vec<_>>().into_iter().rev().collect();
        format!("{PREFIX}-****-****-****-{tail}")
    }
}

/// The hint of every code ending in `tail` (its last four characters, any case, dashes
/// and spaces ignored), when `tail` is that: how a person can find a code they only
/// half remember.
pub fn hint_of_tail(tail: &str) -> Option<String> {
    let tail: String = tail.chars().filter(|c| !matches!(c, '-' | ' ')).collect::<String>().to_ascii_uppercase();
    (tail.len() == 4 && tail.chars().all(|c| c.is_ascii_alphanumeric()))
        .then(|| format!("{PREFIX}-****-****-****-{tail}"))
}

/// A code as a partner presents it: matched ignoring case, spaces and dashes, with or
/// without the `RH` prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresentedCode {
    /// Upper case, no separators, no prefix.
    random: String,
}

impl PresentedCode {
    pub fn parse(input: &str) -> Self {
        let compact: String =
            input.chars().filter(|c| !c.is_whitespace() && *c != '-').flat_map(char::to_uppercase).collect();
        let random = match compact.strip_prefix(PREFIX) {
            Some(rest) if rest.len() == RANDOM_LEN => rest.to_owned(),
            _ => compact,
        };
        Self { random }
    }

    /// The display form when the code has a code's shape, else what was given, normalised.
    pub fn display(&self) -> String {
        if self.well_formed() {
            display(&self.random)
        } else {
            self.random.clone()
        }
    }

    /// A code of the right length and alphabet; anything else cannot match a stored code.
    pub fn well_formed(&self) -> bool {
        self.random.len() == RANDOM_LEN && self.random.bytes().all(|b| ALPHABET.contains(&b))
    }

    pub fn lookup_hash(&self) -> Vec<u8> {
        Sha256::digest(format!("{PREFIX}{}", self.random).as_bytes()).to_vec()
    }
}

/// Longest code text read (a code with generous separators).
const CODE_INPUT_MAX: usize = 64;

pub const REDEEM_BODY: BodySpec = BodySpec {
    name: "RedeemInput",
    doc: "The body of `POST /v1/partner/credits/redeem`.",
    fields: &[
        Field::required(
            "code",
            FieldType::Text { max: CODE_INPUT_MAX },
            "The code as the customer gives it: case, spaces, dashes and the `RH` prefix do not\nmatter \
             (`code_required`).",
        )
        .labelled("Credit code")
        .rule("must be a credit code as the customer has it, like RH 7Q2M 9XKD 4TPW H8CN"),
        Field::optional(
            "order_reference",
            FieldType::Text { max: ORDER_REFERENCE_MAX },
            "The partner's order the credit is spent on, kept with the redemption (at most 128\ncharacters).",
        ),
        Field::optional(
            "dry_run",
            FieldType::Boolean,
            "Validate only: nothing is spent and `redeemed_at` is null. Default false.",
        ),
    ],
    example: r#"{"code": "rh 7q2m 9xkd 4tpw h8cn", "order_reference": "WEB-100234", "dry_run": false}"#,
};

/// `POST /v1/partner/credits/redeem`: a code to check, or to spend on an order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedeemRequest {
    pub code: PresentedCode,
    pub order_reference: Option<String>,
    /// Check only; spend nothing.
    pub dry_run: bool,
}

impl RedeemRequest {
    pub fn parse(body: &Map<String, Value>) -> Result<Self, Vec<FieldError>> {
        let mut r = BodyReader::of(body, &REDEEM_BODY);
        let code = r.text("code", CODE_INPUT_MAX);
        let code = r.require("code", code);
        let order_reference = r.text("order_reference", ORDER_REFERENCE_MAX);
        let dry_run = r.boolean("dry_run").unwrap_or(false);
        let code = r.finish(code)?;
        // A missing code recorded `code_required`, so `finish` failed above.
        let code = code.ok_or_else(|| vec![FieldError::of("code", "required")])?;
        Ok(Self { code: PresentedCode::parse(&code), order_reference, dry_run })
    }
}

crate::documented_body!(RedeemRequest, REDEEM_BODY);

fn display(random: &str) -> String {
    let groups: Vec<&str> =
        (0..random.len()).step_by(4).filter_map(|i| random.get(i..(i + 4).min(random.len()))).collect();
    format!("{PREFIX}-{}", groups.join("-"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_are_readable_and_shaped() {
        let code = CreditCode::generate().unwrap();
        let text = code.as_str();
        assert_eq!(text.len(), 2 + 4 * 5);
        assert!(text.starts_with("RH-"));
        assert!(text[3..].split('-').all(|g| g.len() == 4));
        assert!(!text[3..].chars().any(|c| "01OILU".contains(c)), "{text}");
    }

    #[test]
    fn codes_carry_at_least_sixty_bits() {
        assert!((RANDOM_LEN as f64) * (ALPHABET.len() as f64).log2() >= 60.0);
        let unique: HashSet<String> = (0..2_000).map(|_| CreditCode::generate().unwrap().0).collect();
        assert_eq!(unique.len(), 2_000);
    }

    #[test]
    fn presented_codes_match_ignoring_case_spaces_dashes_and_prefix() {
        let code = CreditCode::generate().unwrap();
        let raw = code.as_str().to_owned();
        let variants = [
            raw.to_lowercase(),
            raw.replace('-', ""),
            raw.replace('-', " "),
            raw[3..].to_owned(),
            format!("  {}  ", raw.to_lowercase().replace('-', " - ")),
        ];
        for variant in variants {
            let presented = PresentedCode::parse(&variant);
            assert!(presented.well_formed(), "{variant}");
            assert_eq!(presented.lookup_hash(), code.lookup_hash(), "{variant}");
            assert_eq!(presented.display(), raw);
        }
    }

    #[test]
    fn a_tail_of_four_characters_names_the_hints_it_ends() {
        assert_eq!(hint_of_tail("xkd9").as_deref(), Some("RH-****-****-****-XKD9"));
        assert_eq!(hint_of_tail("-XK D9").as_deref(), Some("RH-****-****-****-XKD9"));
        for not in ["XKD", "XKD99", "XK*9", ""] {
            assert_eq!(hint_of_tail(not), None, "{not}");
        }
    }

    #[test]
    fn the_hint_shows_only_the_last_four_characters() {
        let code = CreditCode::generate().unwrap();
        let hint = code.hint();
        assert!(hint.starts_with("RH-****-****-****-"));
        assert_eq!(&hint[18..], &code.as_str()[18..]);
    }

    #[test]
    fn redeem_requests_need_a_code() {
        use crate::reader::object;
        use serde_json::json;
        let ok = RedeemRequest::parse(&object(json!({"code": "rh 7q2m 9xkd 4tpw h8cn"}))).unwrap();
        assert!(ok.code.well_formed() && !ok.dry_run && ok.order_reference.is_none());
        let codes: Vec<_> = RedeemRequest::parse(&object(json!({"dry_run": "yes", "tip": 1})))
            .unwrap_err()
            .into_iter()
            .map(|e| e.code)
            .collect();
        assert_eq!(codes, ["code_required", "dry_run_invalid", "tip_unknown"]);
    }

    #[test]
    fn malformed_input_is_not_well_formed_and_never_panics() {
        for input in ["", "RH", "é", "RH-ABCD", "RH-0000-0000-0000-0000", "💳💳💳💳💳💳💳💳💳💳💳💳💳💳💳💳"]
        {
            let presented = PresentedCode::parse(input);
            assert!(!presented.well_formed(), "{input}");
            let _ = presented.display();
        }
    }

    #[test]
    fn the_documented_fields_are_exactly_the_accepted_ones() {
        use crate::reader::object;
        use serde_json::json;
        for name in REDEEM_BODY.names() {
            let errors = RedeemRequest::parse(&object(json!({ name: null }))).unwrap_err();
            assert!(!errors.iter().any(|e| e.code.ends_with("_unknown")), "{name}");
        }
        let extra = RedeemRequest::parse(&object(json!({"code": "RH-2222-2222-2222-2222", "amount": 5})));
        assert_eq!(extra, Err(vec![FieldError::of("amount", "unknown")]));
    }
}
