//! Listing sync (decisions 11.2): a walk over a brand's listings in (`updated_at`, `id`)
//! order, and the opaque cursor that says where the walk stands.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

/// The last listing a sync page showed: the next page starts strictly after it. Instants are
/// microseconds since the Unix epoch, the precision both backends keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SyncPosition {
    pub updated_micros: i64,
    pub id: i64,
}

/// Cursors name instants from the epoch to the end of year 9999, so that stored text
/// timestamps (which sort as text) compare as they should.
const LATEST_MICROS: i64 = 253_402_300_799_999_999;

/// Marks the cursor format, so another format can be told apart later.
const VERSION: &str = "s1";

impl SyncPosition {
    /// Just before every listing changed at or after `micros`: ids start at 1.
    pub fn since(micros: i64) -> Self {
        Self { updated_micros: micros, id: 0 }
    }

    /// The opaque cursor a client sends back as `cursor`.
    pub fn cursor(&self) -> String {
        URL_SAFE_NO_PAD.encode(format!("{VERSION}.{}.{}", self.updated_micros, self.id))
    }

    /// Reads a cursor this service issued; `None` for anything else.
    pub fn from_cursor(cursor: &str) -> Option<Self> {
        if cursor.len() > 64 {
            return None;
        }
        let text = String::from_utf8(URL_SAFE_NO_PAD.decode(cursor).ok()?).ok()?;
        let mut parts = text.split('.');
        let (Some(VERSION), Some(micros), Some(id), None) = (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        let position = Self { updated_micros: micros.parse().ok()?, id: id.parse().ok()? };
        ((0..=LATEST_MICROS).contains(&position.updated_micros) && position.id >= 0).then_some(position)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn since_comes_before_every_listing_of_that_instant() {
        let since = SyncPosition::since(1_000);
        assert!(since < SyncPosition { updated_micros: 1_000, id: 1 });
        assert!(since > SyncPosition { updated_micros: 999, id: i64::MAX });
    }

    #[test]
    fn foreign_or_damaged_cursors_are_refused() {
        for bad in [
            "",
            "abc",
            "czEuMS4y!",
            &URL_SAFE_NO_PAD.encode("s2.1.2"),
            &URL_SAFE_NO_PAD.encode("s1.1"),
            &URL_SAFE_NO_PAD.encode("s1.1.2.3"),
            &URL_SAFE_NO_PAD.encode("s1.-1.2"),
            &URL_SAFE_NO_PAD.encode("s1.1.-2"),
            &URL_SAFE_NO_PAD.encode(format!("s1.{}.1", LATEST_MICROS + 1)),
            &"A".repeat(65),
        ] {
            assert_eq!(SyncPosition::from_cursor(bad), None, "{bad}");
        }
    }

    proptest! {
        #[test]
        fn a_cursor_reads_back_as_its_position(micros in 0..=LATEST_MICROS, id in 0..i64::MAX) {
            let position = SyncPosition { updated_micros: micros, id };
            prop_assert_eq!(SyncPosition::from_cursor(&position.cursor()), Some(position));
        }
    }
}
