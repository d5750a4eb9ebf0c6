//! Two-step recovery codes (decisions 9.7): ten single-use codes made when two-step sign-in
//! is set up, each accepted once instead of a code from the authenticator app (a lost phone
//! must not lock a brand's admin out).
//!
//! A code is 10 characters of Crockford's base32 (50 random bits), shown as `xxxxx-xxxxx`.
//! Typing is forgiving: case, spaces and dashes are ignored, and `i`/`l` read as `1`, `o`
//! as `0`. Only the SHA-256 of the normalised code is stored: 50 bits cannot be guessed
//! within the sign-in limits, which every try counts against.

use sha2::{Digest, Sha256};

/// Codes made at a time.
pub const RECOVERY_CODES: usize = 10;
/// Characters of a code (without its dash).
const CODE_LEN: usize = 10;
/// Crockford's base32: digits and letters without i, l, o, u.
const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// A recovery code in its normal form (10 characters of [`ALPHABET`]).
#[derive(Clone, PartialEq, Eq)]
pub struct RecoveryCode(String);

impl std::fmt::Debug for RecoveryCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RecoveryCode(..)")
    }
}

impl RecoveryCode {
    /// A fresh code from the OS random source.
    pub fn generate() -> Result<Self, getrandom::Error> {
        let mut bytes = [0u8; CODE_LEN];
        getrandom::fill(&mut bytes)?;
        // 256 is a multiple of 32: taking the low five bits keeps every character equally likely.
        Ok(Self(bytes.iter().map(|b| char::from(ALPHABET[usize::from(b & 31)])).collect()))
    }

    /// `count` fresh codes, all different.
    pub fn generate_set(count: usize) -> Result<Vec<Self>, getrandom::Error> {
        let mut codes: Vec<Self> = Vec::with_capacity(count);
        while codes.len() < count {
            let code = Self::generate()?;
            if !codes.contains(&code) {
                codes.push(code);
            }
        }
        Ok(codes)
    }

    /// The code as typed, if it can be one: case, spaces and dashes ignored, `i`/`l` → `1`,
    /// `o` → `0`.
    pub fn parse(typed: &str) -> Option<Self> {
        let mut code = String::with_capacity(CODE_LEN);
        for c in typed.chars() {
            let c = match c.to_ascii_lowercase() {
                ' ' | '-' | '\t' => continue,
                'i' | 'l' => '1',
                'o' => '0',
                c => c,
            };
            if !c.is_ascii() || !ALPHABET.contains(&(c as u8)) || code.len() == CODE_LEN {
                return None;
            }
            code.push(c);
        }
        (code.len() == CODE_LEN).then_some(Self(code))
    }

    /// How the code is shown once: `xxxxx-xxxxx`.
    pub fn display(&self) -> String {
        let (head, tail) = self.0.split_at(CODE_LEN / 2);
        format!("{head}-{tail}")
    }

    /// What is stored: the SHA-256 of the normal form.
    pub fn hash(&self) -> [u8; 32] {
        Sha256::digest(self.0.as_bytes()).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_set_has_ten_different_codes_of_ten_characters() {
        let codes = RecoveryCode::generate_set(RECOVERY_CODES).unwrap();
        assert_eq!(codes.len(), RECOVERY_CODES);
        for (i, code) in codes.iter().enumerate() {
            assert_eq!(code.0.len(), CODE_LEN);
            assert!(codes[i + 1..].iter().all(|other| other != code));
            assert_eq!(code.display().len(), CODE_LEN + 1);
        }
    }

    #[test]
    fn typing_is_forgiving_but_not_loose() {
        let code = RecoveryCode::parse("abcde-01234").unwrap();
        assert_eq!(RecoveryCode::parse(" ABCDE 0I234 ").unwrap(), code);
        assert_eq!(RecoveryCode::parse("abcdeOl234").unwrap(), code);
        assert_eq!(RecoveryCode::parse("abcde-0123"), None, "too short");
        assert_eq!(RecoveryCode::parse("abcde-012345"), None, "too long");
        assert_eq!(RecoveryCode::parse("abcde-0123u"), None, "u is not in the alphabet");
        assert_eq!(RecoveryCode::parse("123456"), None, "a two-step code is not a recovery code");
        assert_eq!(RecoveryCode::parse("abcdé-01234"), None);
    }

    proptest! {
        #[test]
        fn a_shown_code_reads_back_as_itself(bytes in proptest::array::uniform10(0u8..32)) {
            let code = RecoveryCode(bytes.iter().map(|b| char::from(ALPHABET[usize::from(*b)])).collect());
            prop_assert_eq!(RecoveryCode::parse(&code.display()), Some(code.clone()));
            prop_assert_eq!(RecoveryCode::parse(&code.display().to_uppercase()), Some(code.clone()));
            prop_assert_eq!(RecoveryCode::parse(&code.display()).map(|c| c.hash()), Some(code.hash()));
        }

        #[test]
        fn parsing_never_panics(typed in "\\PC{0,40}") {
            let _ = RecoveryCode::parse(&typed);
        }
    }
}
