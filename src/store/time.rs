//! One timestamp type for every backend: [`Ts`], an instant in UTC to the microsecond.
//!
//! PostgreSQL stores it as `TIMESTAMPTZ` (microsecond precision). SQLite has no time type:
//! there it is RFC 3339 text with a fixed six-digit fraction and `Z`, so that text order is
//! time order and `ORDER BY created_at` sorts by time. Both keep exactly the same value, so
//! what a client reads back never depends on the backend.

use std::fmt;

use chrono::{DateTime, SubsecRound, Utc};
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgTypeInfo, PgValueRef, Postgres};
use sqlx::sqlite::{Sqlite, SqliteTypeInfo, SqliteValueRef};
use sqlx::{Decode, Encode, Type};

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

    /// Parses RFC 3339 text (any offset, any fraction).
    pub fn parse(text: &str) -> Option<Self> {
        DateTime::parse_from_rfc3339(text).ok().map(|t| Self::from(t.with_timezone(&Utc)))
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
        write!(f, "{}", self.0.format("%Y-%m-%dT%H:%M:%S%.6fZ"))
    }
}

impl serde::Serialize for Ts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl Type<Sqlite> for Ts {
    fn type_info() -> SqliteTypeInfo {
        <String as Type<Sqlite>>::type_info()
    }

    fn compatible(ty: &SqliteTypeInfo) -> bool {
        <DateTime<Utc> as Type<Sqlite>>::compatible(ty)
    }
}

impl<'q> Encode<'q, Sqlite> for Ts {
    fn encode_by_ref(&self, buf: &mut <Sqlite as sqlx::Database>::ArgumentBuffer<'q>) -> Result<IsNull, BoxDynError> {
        <String as Encode<'q, Sqlite>>::encode(self.to_string(), buf)
    }
}

impl<'r> Decode<'r, Sqlite> for Ts {
    /// Reads the fixed text this type writes, and any other form sqlx's own `DateTime`
    /// encoding left in older rows.
    fn decode(value: SqliteValueRef<'r>) -> Result<Self, BoxDynError> {
        <DateTime<Utc> as Decode<'r, Sqlite>>::decode(value).map(Self::from)
    }
}

impl Type<Postgres> for Ts {
    fn type_info() -> PgTypeInfo {
        <DateTime<Utc> as Type<Postgres>>::type_info()
    }
}

impl<'q> Encode<'q, Postgres> for Ts {
    fn encode_by_ref(&self, buf: &mut <Postgres as sqlx::Database>::ArgumentBuffer<'q>) -> Result<IsNull, BoxDynError> {
        <DateTime<Utc> as Encode<'q, Postgres>>::encode_by_ref(&self.0, buf)
    }
}

impl<'r> Decode<'r, Postgres> for Ts {
    fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
        <DateTime<Utc> as Decode<'r, Postgres>>::decode(value).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_six_digits_and_z() {
        let ts = Ts::parse("2026-11-21T10:04:05.1234567+01:00").unwrap();
        assert_eq!(ts.to_string(), "2026-11-21T09:04:05.123456Z");
        assert_eq!(Ts::parse("2026-11-21T10:04:05Z").unwrap().to_string(), "2026-11-21T10:04:05.000000Z");
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
