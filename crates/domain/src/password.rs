//! Passwords (decisions 8.1): 12 to 128 characters, not only white space, stored as
//! Argon2id PHC strings.
//!
//! Argon2id with m = 19456 KiB, t = 2, p = 1: the OWASP Password Storage Cheat Sheet's
//! minimum for Argon2id (about 20 MiB and a few tens of milliseconds per attempt on one
//! core), which keeps the sign-in form cheap enough that two cores sustain dozens of
//! sign-ins a second while a stolen hash costs an attacker as much per guess. Hashing and
//! verifying are CPU-bound: callers run them on `spawn_blocking`.

use std::sync::LazyLock;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

/// Fewest characters (Unicode scalar values) a password may have.
pub const MIN_CHARS: usize = 12;
/// Most characters a password may have (bounds the hashing work a request can ask for).
pub const MAX_CHARS: usize = 128;

/// Argon2id memory cost in KiB, iterations and lanes (see the module documentation).
const M_COST_KIB: u32 = 19_456;
const T_COST: u32 = 2;
const P_COST: u32 = 1;

/// A password that meets the rule: 12 to 128 characters, at least one of them more than
/// white space, a control or an invisible character (twelve spaces are not a password).
/// Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(..)")
    }
}

/// A password outside 12..128 characters, or blank: `password_invalid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a password has 12 to 128 characters, not only spaces")]
pub struct PasswordInvalid;

/// Characters that show nothing: white space, controls, and the invisible ones the text
/// rule of every body names (soft hyphen, Mongolian vowel separator, zero-width spaces and
/// joiners, word joiner, byte order mark; see `domain::reader`).
fn shows_nothing(c: char) -> bool {
    c.is_whitespace()
        || c.is_control()
        || matches!(c, '\u{AD}' | '\u{180E}' | '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}')
}

impl Password {
    /// Counts characters, not bytes: "é" is one. Spaces inside and around a password are
    /// kept as typed; only a password of nothing else is refused.
    pub fn parse(text: &str) -> Result<Self, PasswordInvalid> {
        let chars = text.chars().count();
        if (MIN_CHARS..=MAX_CHARS).contains(&chars) && !text.chars().all(shows_nothing) {
            Ok(Self(text.to_owned()))
        } else {
            Err(PasswordInvalid)
        }
    }

    /// False for what no password can be, whatever was stored (empty, or longer than
    /// [`MAX_CHARS`]): answered at once, without a verification.
    pub fn could_be(candidate: &str) -> bool {
        !candidate.is_empty() && candidate.chars().count() <= MAX_CHARS
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

/// Hashing failed (no randomness for the salt: the OS source is broken).
#[derive(Debug, thiserror::Error)]
#[error("cannot hash a password: {0}")]
pub struct HashError(String);

fn hasher() -> Argon2<'static> {
    // The parameters are constants within argon2's bounds; `new` cannot fail on them.
    let params = Params::new(M_COST_KIB, T_COST, P_COST, None).unwrap_or_default();
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// The PHC string (`$argon2id$v=19$m=19456,t=2,p=1$salt$hash`) of `password` with a fresh
/// 16-byte salt.
pub fn hash(password: &Password) -> Result<String, HashError> {
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| HashError(e.to_string()))?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| HashError(e.to_string()))?;
    hasher()
        .hash_password(password.expose().as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| HashError(e.to_string()))
}

/// True when `candidate` is the password of the stored PHC string. A stored string that does
/// not parse never matches. The parameters are read from the string, so hashes made with
/// other parameters still verify.
pub fn verify(candidate: &str, stored: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(stored) else {
        return false;
    };
    hasher().verify_password(candidate.as_bytes(), &parsed).is_ok()
}

/// A hash of a password nobody knows, with the real parameters: verified against when the
/// email is unknown (or the user has no password), so that such a sign-in takes as long as
/// a wrong password and the two fail alike.
static DUMMY_HASH: LazyLock<String> = LazyLock::new(|| {
    let dummy = Password("rehome-dummy-password-never-matches".into());
    hash(&dummy).unwrap_or_else(|_| {
        "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$Xg3pvkePHj8b4Z7e8Bk9UvkhnH1bzoRpUtuoJEYzSZI".into()
    })
});

/// Spends the time of one verification and answers false.
pub fn verify_dummy(candidate: &str) -> bool {
    let _ = verify(candidate, &DUMMY_HASH);
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_is_counted_in_characters() {
        assert!(Password::parse(&"a".repeat(11)).is_err());
        assert!(Password::parse(&"a".repeat(12)).is_ok());
        assert!(Password::parse(&"a".repeat(128)).is_ok());
        assert!(Password::parse(&"a".repeat(129)).is_err());
        // Twelve two-byte characters: 24 bytes, 12 characters.
        assert!(Password::parse(&"é".repeat(12)).is_ok());
        assert!(Password::parse(&"é".repeat(11)).is_err());
        // 128 characters of four bytes each: 512 bytes, still allowed.
        assert!(Password::parse(&"🦀".repeat(128)).is_ok());
        assert!(Password::parse("").is_err());
    }

    #[test]
    fn a_password_of_nothing_visible_is_refused_but_spaces_within_one_are_kept() {
        for blank in [" ".repeat(12), "\t".repeat(12), "\u{a0}".repeat(12), "\u{200b}".repeat(12), " ".repeat(128)] {
            assert_eq!(Password::parse(&blank), Err(PasswordInvalid), "{blank:?}");
        }
        let spaced = Password::parse("  eleven  spaces and words  ").unwrap();
        assert_eq!(spaced.expose(), "  eleven  spaces and words  ");
        assert!(Password::parse(&format!("{}x", " ".repeat(11))).is_ok());
    }

    #[test]
    fn only_empty_or_overlong_candidates_are_answered_without_a_verification() {
        assert!(!Password::could_be(""));
        assert!(!Password::could_be(&"a".repeat(129)));
        assert!(Password::could_be("short"));
        assert!(Password::could_be(&"🦀".repeat(128)));
    }

    #[test]
    fn hashes_are_argon2id_with_the_stated_parameters_and_verify() {
        let password = Password::parse("correct horse battery").unwrap();
        let stored = hash(&password).unwrap();
        assert!(stored.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{stored}");
        assert!(verify("correct horse battery", &stored));
        assert!(!verify("correct horse batterY", &stored));
        assert!(!verify("correct horse battery", "not a phc string"));
        // A fresh salt each time.
        assert_ne!(stored, hash(&password).unwrap());
    }

    #[test]
    fn the_dummy_never_matches() {
        assert!(!verify_dummy("rehome-dummy-password-never-matches"));
        assert!(!verify_dummy(""));
    }

    #[test]
    fn debug_hides_the_password() {
        assert_eq!(format!("{:?}", Password::parse("correct horse battery").unwrap()), "Password(..)");
    }
}
