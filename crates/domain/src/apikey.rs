//! API key secrets: `rhk_` + 30 random base62 characters + a 6-character base62 CRC32
//! checksum of those 30, the format GitHub uses for its tokens. A secret scanner can tell
//! a real key from a lookalike by the checksum alone. The random part carries about 178
//! bits from the OS; the server stores its SHA-256 and a short lookup prefix, never the
//! secret.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub const PREFIX: &str = "rhk_";
const RANDOM_LEN: usize = 30;
const CHECKSUM_LEN: usize = 6;
/// Characters of the random part stored in clear to find the row; the other 22
/// (about 131 bits) are known only through their hash.
const LOOKUP_LEN: usize = 8;
pub const SECRET_LEN: usize = PREFIX.len() + RANDOM_LEN + CHECKSUM_LEN;

const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// A well-formed key as presented by a client: its lookup prefix and the hash of the whole secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PresentedKey {
    lookup: [u8; LOOKUP_LEN],
    pub hash: [u8; 32],
}

impl PresentedKey {
    /// Checks the shape and checksum; anything else is malformed (and never reaches the database).
    pub fn parse(secret: &str) -> Option<Self> {
        let body = secret.strip_prefix(PREFIX)?;
        if body.len() != RANDOM_LEN + CHECKSUM_LEN || !body.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return None;
        }
        let (random, checksum) = body.split_at(RANDOM_LEN);
        if checksum.as_bytes() != encode_checksum(random.as_bytes()) {
            return None;
        }
        let mut lookup = [0u8; LOOKUP_LEN];
        lookup.copy_from_slice(&random.as_bytes()[..LOOKUP_LEN]);
        Some(Self { lookup, hash: hash_secret(secret) })
    }

    pub fn lookup(&self) -> &str {
        // Checked alphanumeric ASCII in `parse`.
        std::str::from_utf8(&self.lookup).unwrap_or_default()
    }

    /// Constant-time comparison with a stored hash.
    pub fn matches(&self, stored_hash: &[u8]) -> bool {
        stored_hash.len() == 32 && bool::from(self.hash.ct_eq(stored_hash))
    }
}

/// A freshly generated key: the secret to show once, and what the database keeps.
pub struct NewKey {
    pub secret: String,
    pub lookup: String,
    pub hash: [u8; 32],
}

impl NewKey {
    pub fn generate() -> Result<Self, getrandom::Error> {
        let random = random_base62(RANDOM_LEN)?;
        let checksum = encode_checksum(random.as_bytes());
        let secret = format!("{PREFIX}{random}{}", String::from_utf8_lossy(&checksum));
        Ok(Self { lookup: random[..LOOKUP_LEN].to_owned(), hash: hash_secret(&secret), secret })
    }
}

pub fn hash_secret(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// `len` characters drawn uniformly from the base62 alphabet (rejection sampling, no modulo bias).
pub fn random_base62(len: usize) -> Result<String, getrandom::Error> {
    let mut out = String::with_capacity(len);
    let mut buf = [0u8; 64];
    while out.len() < len {
        getrandom::fill(&mut buf)?;
        for &b in &buf {
            // 248 = 4 × 62: bytes at or above it would favour the first characters.
            if b < 248 && out.len() < len {
                out.push(ALPHABET[usize::from(b % 62)] as char);
            }
        }
    }
    Ok(out)
}

fn encode_checksum(random: &[u8]) -> [u8; CHECKSUM_LEN] {
    let mut n = u64::from(crc32fast::hash(random));
    let mut out = [b'0'; CHECKSUM_LEN];
    for slot in out.iter_mut().rev() {
        *slot = ALPHABET[(n % 62) as usize];
        n /= 62;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn generated_keys_parse_and_match_their_hash() {
        let key = NewKey::generate().unwrap();
        assert_eq!(key.secret.len(), SECRET_LEN);
        assert!(key.secret.starts_with("rhk_"));
        let presented = PresentedKey::parse(&key.secret).unwrap();
        assert_eq!(presented.lookup(), key.lookup);
        assert!(presented.matches(&key.hash));
    }

    #[test]
    fn generated_keys_differ() {
        let a = NewKey::generate().unwrap();
        let b = NewKey::generate().unwrap();
        assert_ne!(a.secret, b.secret);
    }

    #[test]
    fn a_changed_character_breaks_the_checksum() {
        let key = NewKey::generate().unwrap();
        let mut bytes = key.secret.into_bytes();
        bytes[10] = if bytes[10] == b'a' { b'b' } else { b'a' };
        assert!(PresentedKey::parse(std::str::from_utf8(&bytes).unwrap()).is_none());
    }

    #[test]
    fn wrong_prefix_length_or_alphabet_is_malformed() {
        let key = NewKey::generate().unwrap().secret;
        assert!(PresentedKey::parse(&key.replacen("rhk_", "ghp_", 1)).is_none());
        assert!(PresentedKey::parse(&key[..key.len() - 1]).is_none());
        assert!(PresentedKey::parse(&format!("{key}0")).is_none());
        assert!(PresentedKey::parse(&key.replacen('_', "-", 1)).is_none());
        assert!(PresentedKey::parse("").is_none());
    }

    #[test]
    fn a_different_hash_does_not_match() {
        let key = PresentedKey::parse(&NewKey::generate().unwrap().secret).unwrap();
        assert!(!key.matches(&[0u8; 32]));
        assert!(!key.matches(&key.hash[..31]));
    }

    proptest! {
        #[test]
        fn arbitrary_strings_never_panic_the_parser(s in "\\PC{0,60}") {
            let _ = PresentedKey::parse(&s);
        }

        #[test]
        fn random_bodies_without_a_valid_checksum_are_refused(body in "[0-9A-Za-z]{36}") {
            let (random, checksum) = body.split_at(30);
            let valid = checksum.as_bytes() == encode_checksum(random.as_bytes());
            prop_assert_eq!(PresentedKey::parse(&format!("rhk_{body}")).is_some(), valid);
        }
    }
}
