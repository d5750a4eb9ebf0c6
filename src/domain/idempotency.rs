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
/// body, each length-prefixed so no two different requests share the bytes hashed.
pub fn fingerprint(method: &str, path: &str, body: &[u8]) -> [u8; 32] {
    let mut hash = Sha256::new();
    for part in [method.as_bytes(), path.as_bytes(), body] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part);
    }
    hash.finalize().into()
}

/// A key's row as found when claiming it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// Its first request is still running.
    Running { fingerprint: Vec<u8> },
    /// Its first request answered `status` with `body`.
    Done { fingerprint: Vec<u8>, status: u16, content_type: Option<String>, body: Vec<u8> },
}

/// What a request carrying an already used key gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repeat {
    /// The same request: the kept answer again.
    Replay { status: u16, content_type: Option<String>, body: Vec<u8> },
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
        Kept::Done { status, content_type, body, .. } => Repeat::Replay { status, content_type, body },
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
        assert_ne!(a, fingerprint("POST", "/v1/listings", b"{ }"));
        // Moving bytes between parts changes the fingerprint.
        assert_ne!(fingerprint("POST", "/a", b"b"), fingerprint("POST", "/ab", b""));
    }

    #[test]
    fn a_repeat_replays_waits_or_is_refused() {
        let f = fingerprint("POST", "/v1/listings", b"{}");
        let other = fingerprint("POST", "/v1/listings", b"{\"a\":1}");
        let done = Kept::Done { fingerprint: f.to_vec(), status: 201, content_type: None, body: b"{}".to_vec() };
        assert_eq!(repeat(done.clone(), &f), Repeat::Replay { status: 201, content_type: None, body: b"{}".to_vec() });
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
