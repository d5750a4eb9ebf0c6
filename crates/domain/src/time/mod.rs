//! One timestamp type for every backend: [`Ts`], an instant in UTC to the microsecond.
//!
//! PostgreSQL stores it as `TIMESTAMPTZ` (microsecond precision). SQLite has no time type:
//! there it is RFC 3339 text with a fixed six-digit fraction and `Z`, so that text order is
//! time order and `ORDER BY created_at` sorts by time. Both keep exactly the same value, so
//! what a client reads back never depends on the backend.

use std::fmt;

use chrono::{DateTime, Datelike, SubsecRound, Timelike, Utc};

/// The two stored encodings, for the store (the `sqlx` feature, which only the store turns on).
#[cfg(feature = "sqlx")]
mod stored;

/// An instant in UTC, truncated to the microsecond (the precision both backends keep).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ts(DateTime<Utc>);

impl Ts {
    /// The current time.
    pub fn now() -> Self {
        Self::from(Utc::now())
    }

    pub fn get(self) -> DateTime<Utc> {
        self.0
    }

    /// Microseconds since the Unix epoch.
    pub fn micros(self) -> i64 {
        self.0.timestamp_micros()
    }

    /// The instant `micros` microseconds after the Unix epoch, if representable.
    pub fn from_micros(micros: i64) -> Option<Self> {
        DateTime::from_timestamp_micros(micros).map(Self)
    }

    /// Parses RFC 3339 text (any offset, any fraction); the stored form first, digit by digit.
    pub fn parse(text: &str) -> Option<Self> {
        parse_stored(text)
            .or_else(|| DateTime::parse_from_rfc3339(text).ok().map(|t| Self::from(t.with_timezone(&Utc))))
    }
}

impl From<DateTime<Utc>> for Ts {
    fn from(at: DateTime<Utc>) -> Self {
        Self(at.trunc_subsecs(6))
    }
}

impl From<Ts> for DateTime<Utc> {
    fn from(ts: Ts) -> Self {
        ts.0
    }
}

/// `2026-11-21T10:04:05.123456Z`: the stored text on SQLite and the API's rendering.
impl fmt::Display for Ts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.text() {
            Some(text) => f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?),
            None => {
                let (date, time) = (self.0.date_naive(), self.0.time());
                write!(
                    f,
                    "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
                    date.year(),
                    date.month(),
                    date.day(),
                    time.hour(),
                    time.minute(),
                    time.second(),
                    time.nanosecond() / 1_000 % 1_000_000
                )
            }
        }
    }
}

impl Ts {
    /// The text of a year 0–9999 written digit by digit (`None` for others): every listing,
    /// event and page renders several, and `write!` spent more on formatting machinery
    /// than on the digits (issue 19).
    fn text(&self) -> Option<[u8; 27]> {
        let (date, time) = (self.0.date_naive(), self.0.time());
        let year = u32::try_from(date.year()).ok().filter(|y| *y <= 9999)?;
        let mut text = *b"0000-00-00T00:00:00.000000Z";
        let mut put = |at: usize, width: usize, mut value: u32| {
            for i in (at..at + width).rev() {
                text[i] = b'0' + (value % 10) as u8;
                value /= 10;
            }
        };
        put(0, 4, year);
        put(5, 2, date.month());
        put(8, 2, date.day());
        put(11, 2, time.hour());
        put(14, 2, time.minute());
        put(17, 2, time.second());
        put(20, 6, time.nanosecond() / 1_000 % 1_000_000);
        Some(text)
    }
}

/// The stored form `YYYY-MM-DDTHH:MM:SS.ffffffZ` read digit by digit; `None` for any
/// other text.
pub(crate) fn parse_stored(text: &str) -> Option<Ts> {
    let b = text.as_bytes();
    if b.len() != 27 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    if b[19] != b'.' || b[26] != b'Z' {
        return None;
    }
    let number = |from: usize, to: usize| -> Option<u32> {
        b[from..to].iter().try_fold(0u32, |n, d| d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0')))
    };
    let date = chrono::NaiveDate::from_ymd_opt(i32::try_from(number(0, 4)?).ok()?, number(5, 7)?, number(8, 10)?)?;
    let time =
        chrono::NaiveTime::from_hms_micro_opt(number(11, 13)?, number(14, 16)?, number(17, 19)?, number(20, 26)?)?;
    Some(Ts(date.and_time(time).and_utc()))
}

impl serde::Serialize for Ts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.text() {
            Some(text) => serializer.serialize_str(std::str::from_utf8(&text).map_err(serde::ser::Error::custom)?),
            None => serializer.collect_str(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn years_beyond_four_digits_are_written_out_in_full() {
        let far = chrono::NaiveDate::from_ymd_opt(12345, 1, 2).unwrap().and_hms_micro_opt(3, 4, 5, 6).unwrap();
        let far = Ts::from(far.and_utc());
        assert_eq!(far.to_string(), "12345-01-02T03:04:05.000006Z");
        assert_eq!(serde_json::to_string(&far).unwrap(), "\"12345-01-02T03:04:05.000006Z\"");
    }

    #[test]
    fn renders_six_digits_and_z() {
        let ts = Ts::parse("2026-11-21T10:04:05.1234567+01:00").unwrap();
        assert_eq!(ts.to_string(), "2026-11-21T09:04:05.123456Z");
        assert_eq!(Ts::parse("2026-11-21T10:04:05Z").unwrap().to_string(), "2026-11-21T10:04:05.000000Z");
    }

    #[test]
    fn the_stored_form_is_read_back_exactly_and_anything_else_is_left_to_sqlx() {
        for text in ["2026-11-21T09:04:05.123456Z", "2000-01-01T00:00:00.000000Z", "2100-12-31T23:59:59.999999Z"] {
            let ts = parse_stored(text).unwrap();
            assert_eq!(ts.to_string(), text);
            assert_eq!(Some(ts), Ts::parse(text));
        }
        for other in [
            "2026-11-21T09:04:05Z",
            "2026-11-21 09:04:05.123456Z",
            "2026-13-21T09:04:05.123456Z",
            "2026-11-21T09:04:05.12345xZ",
        ] {
            assert_eq!(parse_stored(other), None, "{other}");
        }
    }

    proptest::proptest! {
        #[test]
        /// Years 0 to 9999, the ones written digit by digit.
        fn rendering_and_reading_the_stored_form_round_trip(micros in -62_167_219_200_000_000i64..253_402_300_800_000_000) {
            let ts = Ts::from_micros(micros).unwrap();
            let text = ts.to_string();
            proptest::prop_assert_eq!(&text, &ts.0.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string());
            proptest::prop_assert_eq!(parse_stored(&text), Some(ts));
            proptest::prop_assert_eq!(Ts::parse(&text), Some(ts));
            proptest::prop_assert_eq!(serde_json::to_string(&ts).unwrap(), format!("\"{text}\""));
        }

        /// PostgreSQL's JSON form of an instant (an offset, a fraction of any length) is
        /// read as RFC 3339.
        #[test]
        fn other_rfc3339_text_is_read_too(micros in 0i64..4_102_444_800_000_000) {
            let ts = Ts::from_micros(micros).unwrap();
            proptest::prop_assert_eq!(Ts::parse(&ts.0.format("%Y-%m-%dT%H:%M:%S%.f+00:00").to_string()), Some(ts));
        }
    }

    #[test]
    fn text_order_is_time_order() {
        let a = Ts::parse("2026-11-21T10:04:05.9Z").unwrap();
        let b = Ts::parse("2026-11-21T10:04:06Z").unwrap();
        assert!(a < b);
        assert!(a.to_string() < b.to_string());
    }

    #[test]
    fn micros_round_trip() {
        let ts = Ts::parse("2026-11-21T10:04:05.123456Z").unwrap();
        assert_eq!(Ts::from_micros(ts.micros()), Some(ts));
        assert_eq!(Ts::from_micros(0).map(|t| t.to_string()).as_deref(), Some("1970-01-01T00:00:00.000000Z"));
    }

    #[test]
    fn now_keeps_microseconds_only() {
        let now = Ts::now();
        assert_eq!(Ts::parse(&now.to_string()), Some(now));
    }
}
