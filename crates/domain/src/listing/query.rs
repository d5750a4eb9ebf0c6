//! Which listings a list or a sync walk shows: one query, read by the API's query string
//! and the dashboard's filters alike, with the one search rule.

use super::{Channel, ListingStatus};

/// The filters of a list page; `None` means any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListingQuery {
    pub status: Option<ListingStatus>,
    pub channel: Option<Channel>,
    /// Exactly this SKU.
    pub sku: Option<String>,
    /// Each word must appear in the title or the SKU, whatever the case.
    pub words: Vec<String>,
}

/// Longest `sku` searched for.
pub const MAX_SKU_CHARS: usize = 100;
/// Longest search text (`q`).
pub const MAX_Q_CHARS: usize = 200;
/// Most words of a search.
pub const MAX_Q_WORDS: usize = 10;
/// A search's `total` is exact up to this many matches; past it, the total is an estimate
/// (`total_is_estimate`): an exact count would read every match, so a word that a brand's
/// every tenth listing has would cost as much as the brand is large.
pub const SEARCH_EXACT_TOTAL: i64 = 1_000;

impl ListingQuery {
    /// The words of a search text: 1 to [`MAX_Q_WORDS`] words in at most [`MAX_Q_CHARS`]
    /// characters; `None` (`q_invalid`) for a blank or longer text, which is refused, never cut.
    pub fn search_words(q: &str) -> Option<Vec<String>> {
        let words: Vec<String> = q.split_whitespace().map(str::to_owned).collect();
        let fits = !words.is_empty() && words.len() <= MAX_Q_WORDS && q.chars().count() <= MAX_Q_CHARS;
        fits.then_some(words)
    }

    /// A SKU as it is stored (without invisible characters, see
    /// [`crate::text::identifier`]), trimmed; `None` (`sku_invalid`) when blank or
    /// longer than [`MAX_SKU_CHARS`].
    pub fn sku(text: &str) -> Option<String> {
        let sku = crate::text::identifier(text);
        let sku = sku.trim();
        (!sku.is_empty() && sku.chars().count() <= MAX_SKU_CHARS).then(|| sku.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_is_refused_not_cut() {
        assert_eq!(ListingQuery::search_words("  oak   Sofa "), Some(vec!["oak".to_owned(), "Sofa".to_owned()]));
        assert_eq!(ListingQuery::search_words(" "), None);
        assert!(ListingQuery::search_words(&"w ".repeat(10)).is_some());
        assert_eq!(ListingQuery::search_words(&"w ".repeat(11)), None);
        assert_eq!(ListingQuery::search_words(&"x".repeat(201)), None);
        assert!(ListingQuery::search_words(&"x".repeat(200)).is_some());
    }

    #[test]
    fn a_sku_is_searched_as_it_is_stored() {
        assert_eq!(ListingQuery::sku(" OAK-1 ").as_deref(), Some("OAK-1"));
        assert_eq!(ListingQuery::sku(" "), None);
        assert_eq!(ListingQuery::sku(&"S".repeat(101)), None);
    }
}
