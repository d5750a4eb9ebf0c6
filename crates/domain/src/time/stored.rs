//! How a [`Ts`] is written and read by each backend: PostgreSQL's `TIMESTAMPTZ`, and on
//! SQLite the fixed text [`Ts`] renders (older rows may hold sqlx's own `DateTime` text).

use chrono::{DateTime, Utc};
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgTypeInfo, PgValueRef, Postgres};
use sqlx::sqlite::{Sqlite, SqliteTypeInfo, SqliteValueRef};
use sqlx::{Decode, Encode, Type};

use super::{parse_stored, Ts};

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
    /// Reads the fixed text this type writes (digit by digit), and the text sqlx's own
    /// `DateTime` encoding left in older rows.
    fn decode(value: SqliteValueRef<'r>) -> Result<Self, BoxDynError> {
        let text = <&str as Decode<'r, Sqlite>>::decode(value)?;
        if let Some(ts) = parse_stored(text) {
            return Ok(ts);
        }
        // sqlx's own `DateTime` text (`2026-11-21 09:04:05.123456+00:00`), or RFC 3339.
        let parsed = DateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f%:z")
            .or_else(|_| DateTime::parse_from_rfc3339(text))
            .map_err(|e| format!("not a timestamp: {text:?} ({e})"))?;
        Ok(Self::from(parsed.with_timezone(&Utc)))
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
