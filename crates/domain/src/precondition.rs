//! Optimistic concurrency with entity tags (decisions 11.5): reads answer an `ETag`; a
//! PATCH with an `If-Match` that no longer matches answers 412 and changes nothing.

use sha2::{Digest, Sha256};

/// The strong entity tag of a listing at `version` (every change bumps it).
pub fn listing_etag(version: i64) -> String {
    format!("\"v{version}\"")
}

/// The strong entity tag of a representation: a digest of its bytes (for resources without
/// a version, such as the settings sections).
pub fn content_etag(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    format!("\"{}\"", hex::encode(&digest[..12]))
}

/// A condition on the current state of a resource, checked inside the transaction that
/// changes it (so no concurrent change can slip between the check and the write): the
/// change happens only if it holds.
pub type Precondition<'a, T> = &'a (dyn Fn(&T) -> bool + Send + Sync);

/// A parsed `If-Match` header (RFC 9110 §13.1.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfMatch {
    /// `*`: any current representation.
    Any,
    /// The listed tags, quotes included. Weak tags (`W/"…"`) never match: If-Match compares
    /// strongly.
    Tags(Vec<String>),
}

impl IfMatch {
    pub fn parse(header: &str) -> Self {
        if header.trim() == "*" {
            return Self::Any;
        }
        Self::Tags(header.split(',').map(str::trim).filter(|t| t.starts_with('"')).map(str::to_owned).collect())
    }

    /// True when the resource whose current tag is `etag` satisfies the condition.
    pub fn matches(&self, etag: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Tags(tags) => tags.iter().any(|t| t == etag),
        }
    }
}

/// True when an `If-None-Match` header names `etag` or is `*` (RFC 9110 §13.1.2): the
/// client's copy is current. Weak comparison: `W/` prefixes do not matter.
pub fn none_match(header: &str, etag: &str) -> bool {
    let etag = etag.trim_start_matches("W/");
    header
        .split(',')
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == "*" || (!tag.is_empty() && tag == etag))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_none_match_compares_weakly_and_star_matches_anything() {
        let tag = listing_etag(3);
        assert!(none_match("\"v3\"", &tag));
        assert!(none_match("W/\"v3\"", &tag));
        assert!(none_match("\"v1\", \"v3\"", &tag));
        assert!(none_match("*", &tag));
        assert!(!none_match("\"v2\"", &tag));
        assert!(!none_match("", &tag));
        assert!(!none_match(",", &tag));
    }

    #[test]
    fn if_match_compares_strong_tags_and_star_matches_anything() {
        let tag = listing_etag(3);
        assert_eq!(tag, "\"v3\"");
        assert!(IfMatch::parse("\"v3\"").matches(&tag));
        assert!(IfMatch::parse("\"v1\", \"v3\"").matches(&tag));
        assert!(IfMatch::parse(" * ").matches(&tag));
        assert!(!IfMatch::parse("\"v2\"").matches(&tag));
        assert!(!IfMatch::parse("W/\"v3\"").matches(&tag), "weak tags never match");
        assert!(!IfMatch::parse("v3").matches(&tag), "an unquoted tag is no tag");
        assert!(!IfMatch::parse("").matches(&tag));
    }

    #[test]
    fn content_tags_follow_the_bytes() {
        assert_eq!(content_etag(b"{}"), content_etag(b"{}"));
        assert_ne!(content_etag(b"{}"), content_etag(b"{ }"));
        assert_eq!(content_etag(b"{}").len(), 26);
    }
}
