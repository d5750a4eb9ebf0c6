//! Passwords (decisions 8.1): 12 to 128 characters, stored as Argon2id PHC strings.
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

/// A password that meets the length rule. Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(..)")
    }
}

/// A password outside 12..128 characters: `password_invalid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a password has 12 to 128 characters")]
pub struct PasswordInvalid;

impl Password {
    /// Counts characters, not bytes: "é" is one.
    pub fn parse(text: &str) -> Result<Self, PasswordInvalid> {
        let chars = text.chars().count();
        if (MIN_CHARS..=MAX_CHARS).contains(&chars) {
            Ok(Self(text.to_owned()))
        } else {
            Err(PasswordInvalid)
        }
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
