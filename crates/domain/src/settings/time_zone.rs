//! The brand's time zone: the IANA zone every instant on its dashboard pages is written in.
//! Dashboard-only (the API's brand settings are a contract its clients read to the letter;
//! the API's instants are UTC and its dates are calendar dates, so nothing there needs it).

use std::fmt;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use crate::FieldError;

/// An IANA time zone (`Europe/London`), as the tz database names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeZone(Tz);

/// The zone of a brand that has not chosen one (the service's home).
pub const DEFAULT_TIME_ZONE: TimeZone = TimeZone(Tz::Europe__London);

impl Default for TimeZone {
    fn default() -> Self {
        DEFAULT_TIME_ZONE
    }
}

impl TimeZone {
    /// A zone by its IANA name, ignoring the case of its letters and spaces around it
    /// (`europe/london` is `Europe/London`); `time_zone_invalid` otherwise.
    pub fn parse(text: &str) -> Result<Self, FieldError> {
        let text = text.trim();
        if let Ok(tz) = text.parse::<Tz>() {
            return Ok(Self(tz));
        }
        chrono_tz::TZ_VARIANTS
            .iter()
            .find(|tz| tz.name().eq_ignore_ascii_case(text))
            .map(|&tz| Self(tz))
            .ok_or_else(|| FieldError::new("time_zone", "time_zone_invalid"))
    }

    /// The zone stored for a brand: a name [`TimeZone::parse`] accepted, so an unknown one
    /// (the tz database dropped it) falls back to the default rather than failing a page.
    pub fn stored(name: &str) -> Self {
        Self::parse(name).unwrap_or_default()
    }

    /// The zones a brand is offered: each region/city of the tz database, and `UTC` (not
    /// the legacy aliases such as `GB` or `US/Pacific`, which [`TimeZone::parse`] still takes).
    pub fn offered() -> impl Iterator<Item = &'static str> {
        const REGIONS: [&str; 9] =
            ["Africa", "America", "Antarctica", "Asia", "Atlantic", "Australia", "Europe", "Indian", "Pacific"];
        chrono_tz::TZ_VARIANTS
            .iter()
            .map(|tz| tz.name())
            .filter(|name| name.split_once('/').is_some_and(|(region, _)| REGIONS.contains(&region)) || *name == "UTC")
    }

    /// An instant as people read it, in this zone with its abbreviation (so a reader
    /// abroad, or on the day the clocks change, knows which hour it is):
    /// `26 Nov 2026, 21:13 GMT`, `1 Jun 2026, 09:30 BST`.
    pub fn when(self, at: DateTime<Utc>) -> String {
        at.with_timezone(&self.0).format("%-d %b %Y, %H:%M %Z").to_string()
    }

    pub fn tz(self) -> Tz {
        self.0
    }

    pub fn name(self) -> &'static str {
        self.0.name()
    }
}

impl fmt::Display for TimeZone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zone_is_an_iana_name_in_any_case() {
        assert_eq!(TimeZone::parse("Europe/Paris").map(TimeZone::name), Ok("Europe/Paris"));
        assert_eq!(TimeZone::parse(" america/new_york ").map(TimeZone::name), Ok("America/New_York"));
        assert_eq!(TimeZone::parse("UTC").map(TimeZone::name), Ok("UTC"));
        for bad in ["", "Europe/Londres", "GMT+25", "London", "Europe/London/x"] {
            let error = TimeZone::parse(bad).unwrap_err();
            assert_eq!((error.field.as_str(), error.code.as_str()), ("time_zone", "time_zone_invalid"), "{bad}");
            assert!(!error.message.contains("time_zone_invalid"));
        }
    }

    #[test]
    fn a_stored_name_no_longer_known_falls_back_to_london() {
        assert_eq!(TimeZone::stored("Mars/Olympus"), DEFAULT_TIME_ZONE);
        assert_eq!(TimeZone::stored("Asia/Tokyo").name(), "Asia/Tokyo");
    }
}
