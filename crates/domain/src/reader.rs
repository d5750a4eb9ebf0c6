//! Reading the fields of a request body, collecting every reason at once as
//! `<field>_<reason>` and naming unknown fields: those its [`BodySpec`] does not list.
//! Marketplace and webhook bodies use it directly; settings bodies through
//! `settings::fields`, which adds their PATCH rules (`null` and `""` clear a field); the
//! listing validator takes its known fields from its spec the same way. The one rule for
//! text in every body is [`crate::text`], a leaf both this and the OpenAPI
//! schemas of [`BodySpec`] use.

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::{Map, Value};

use crate::body::BodySpec;
use crate::text::{parse_date, parse_instant, text, Lines};
use crate::FieldError;

/// A body being read. Each reader returns `None` both for an absent (or `null`) field and
/// for one that failed; a failure is recorded and reported by [`BodyReader::finish`].
pub struct BodyReader<'a> {
    body: &'a Map<String, Value>,
    /// The fields the body may carry; any other is `<field>_unknown`.
    spec: &'static BodySpec,
    errors: Vec<FieldError>,
}

impl<'a> BodyReader<'a> {
    /// A reader of the body `spec` describes: its fields are the ones accepted, so the
    /// documented fields and the accepted ones cannot differ.
    pub fn of(body: &'a Map<String, Value>, spec: &'static BodySpec) -> Self {
        Self { body, spec, errors: Vec::new() }
    }

    /// The field's value; `null` is absent, unless the spec says the field refuses it
    /// ([`Field::not_null`](crate::body::Field::not_null), booleans): then `invalid`.
    fn value(&mut self, field: &str) -> Option<&'a Value> {
        match self.body.get(field) {
            Some(Value::Null) => {
                let refused = self.spec.fields.iter().any(|f| f.name == field && !f.nullable && !f.required);
                if refused {
                    self.fail(field, "invalid")
                } else {
                    None
                }
            }
            other => other,
        }
    }

    /// The field as sent, `null` included, for readers with rules of their own.
    pub fn raw(&self, field: &str) -> Option<&'a Value> {
        self.body.get(field)
    }

    pub fn fail<T>(&mut self, field: &str, suffix: &str) -> Option<T> {
        self.errors.push(self.spec.error(field, suffix));
        None
    }

    /// Records a reason with a specific code (not `<field>_<suffix>`).
    pub fn fail_with<T>(&mut self, field: &str, code: &str) -> Option<T> {
        self.errors.push(FieldError::new(field, code));
        None
    }

    /// True when the field holds something other than `null` or a blank string.
    pub fn present(&self, field: &str) -> bool {
        match self.body.get(field) {
            None | Some(Value::Null) => false,
            Some(Value::String(s)) => !s.trim().is_empty(),
            Some(_) => true,
        }
    }

    /// `<field>_required` when `value` is `None` and the field was not already refused.
    pub fn require<T>(&mut self, field: &str, value: Option<T>) -> Option<T> {
        if value.is_none() && !self.present(field) {
            return self.fail(field, "required");
        }
        value
    }

    /// A one-line string, trimmed; empty counts as absent (the rules of [`text`]).
    pub fn text(&mut self, field: &'static str, max_chars: usize) -> Option<String> {
        match text(self.value(field)?, max_chars, Lines::One) {
            Ok(text) => text,
            Err(suffix) => self.fail(field, suffix),
        }
    }

    /// A JSON integer within `range` (`12.0` is the integer 12, as JSON Schema counts it).
    pub fn integer(&mut self, field: &'static str, range: std::ops::RangeInclusive<i64>) -> Option<i64> {
        match integral(self.value(field)?) {
            Some(n) if range.contains(&n) => Some(n),
            _ => self.fail(field, "invalid"),
        }
    }

    /// A JSON boolean. A yes-or-no has no blank: `null` is `invalid` (omit the field).
    pub fn boolean(&mut self, field: &'static str) -> Option<bool> {
        match self.value(field)? {
            Value::Bool(b) => Some(*b),
            _ => self.fail(field, "invalid"),
        }
    }

    /// A `YYYY-MM-DD` date.
    pub fn date(&mut self, field: &'static str) -> Option<NaiveDate> {
        match self.value(field)? {
            Value::String(s) => match parse_date(s) {
                Some(date) => Some(date),
                None => self.fail(field, "invalid"),
            },
            _ => self.fail(field, "invalid"),
        }
    }

    /// An RFC 3339 timestamp with an offset, as UTC, in the service's years.
    pub fn timestamp(&mut self, field: &'static str) -> Option<DateTime<Utc>> {
        match self.value(field)? {
            Value::String(s) => match parse_instant(s) {
                Some(t) => Some(t),
                None => self.fail(field, "invalid"),
            },
            _ => self.fail(field, "invalid"),
        }
    }

    /// `value` when every field was valid and known; otherwise every reason, those of the
    /// known fields first, then the unknown fields.
    pub fn finish<T>(mut self, value: T) -> Result<T, Vec<FieldError>> {
        for key in self.body.keys() {
            if !self.spec.accepts(key) {
                self.errors.push(FieldError::of(key, "unknown"));
            }
        }
        if self.errors.is_empty() {
            Ok(value)
        } else {
            Err(self.errors)
        }
    }
}

/// The integer a JSON number is: `12`, `12.0` and `1.2e1` are 12; `12.5` is none.
pub fn integral(value: &Value) -> Option<i64> {
    let Value::Number(n) = value else {
        return None;
    };
    if let Some(i) = n.as_i64() {
        return Some(i);
    }
    // A fraction or exponent: integral when the decimal text says so exactly.
    let text = n.to_string();
    let (mantissa, exponent) = match text.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i32>().ok()?),
        None => (text.as_str(), 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let fraction = fraction.trim_end_matches('0');
    let shift = i32::try_from(fraction.len()).ok()?;
    let digits: i128 = format!("{whole}{fraction}").parse().ok()?;
    let scale = exponent - shift;
    let value = if scale >= 0 {
        digits.checked_mul(10i128.checked_pow(u32::try_from(scale).ok()?)?)?
    } else {
        let divisor = 10i128.checked_pow(u32::try_from(-scale).ok()?)?;
        if digits % divisor != 0 {
            return None;
        }
        digits / divisor
    };
    i64::try_from(value).ok()
}

/// The object of a JSON literal (`json!({...})`), as the readers take bodies: what the
/// dashboard's forms and the demo build; anything but an object is an empty body.
pub fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_may_be_written_with_a_zero_fraction_or_an_exponent() {
        let n = |text: &str| integral(&serde_json::from_str(text).unwrap());
        assert_eq!(
            (n("12"), n("12.0"), n("1.2e1"), n("-3.000"), n("120E-1")),
            (Some(12), Some(12), Some(12), Some(-3), Some(12))
        );
        assert_eq!((n("12.5"), n("1e-1"), n("1e40"), n("\"12\"")), (None, None, None, None));
    }
    use serde_json::json;

    use super::object as body;
    use crate::body::{Field, FieldType};

    /// The reader's own checks decide a value; the spec says only which names are known.
    const FIELDS: BodySpec = BodySpec {
        name: "ReaderTest",
        doc: "Fields of the reader's tests.",
        fields: &[
            Field::optional("n", FieldType::Integer { min: 1, max: 10 }, ""),
            Field::optional("b", FieldType::Boolean, ""),
            Field::optional("d", FieldType::Date, ""),
            Field::optional("t", FieldType::Timestamp, ""),
            Field::optional("s", FieldType::Text { max: 10 }, ""),
            Field::optional("r", FieldType::Text { max: 10 }, ""),
            Field::optional("z", FieldType::Text { max: 10 }, ""),
            Field::optional("m", FieldType::Integer { min: 1, max: 10 }, ""),
            Field::optional("k", FieldType::Integer { min: 1, max: 10 }, "").not_null(),
        ],
        example: "{}",
    };

    fn codes(result: Result<(), Vec<FieldError>>) -> Vec<String> {
        result.err().unwrap_or_default().into_iter().map(|e| e.code).collect()
    }

    #[test]
    fn each_reader_reports_its_reason() {
        let b = body(json!({"n": "3", "b": 1, "d": "2026-1-5", "t": "yesterday", "s": 5, "x": true}));
        let mut r = BodyReader::of(&b, &FIELDS);
        assert_eq!(r.integer("n", 1..=10), None);
        assert_eq!(r.boolean("b"), None);
        assert_eq!(r.date("d"), None);
        assert_eq!(r.timestamp("t"), None);
        assert_eq!(r.text("s", 10), None);
        let missing = r.text("r", 10);
        assert_eq!(r.require("r", missing), None);
        assert_eq!(
            codes(r.finish(())),
            ["n_invalid", "b_invalid", "d_invalid", "t_invalid", "s_invalid", "r_required", "x_unknown"]
        );
    }

    #[test]
    fn valid_values_are_read_and_nulls_are_absent() {
        let b = body(json!({"n": 3, "d": "2026-01-05", "t": "2026-11-21T10:30:00+01:00", "s": " hi ", "z": null}));
        let mut r = BodyReader::of(&b, &FIELDS);
        assert_eq!(r.integer("n", 1..=10), Some(3));
        assert_eq!(r.date("d"), NaiveDate::from_ymd_opt(2026, 1, 5));
        assert_eq!(
            r.timestamp("t").map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)).as_deref(),
            Some("2026-11-21T09:30:00.000000Z")
        );
        assert_eq!(r.text("s", 10).as_deref(), Some("hi"));
        assert_eq!(r.text("z", 10), None);
        assert!(r.finish(()).is_ok());
    }

    #[test]
    fn booleans_and_not_null_fields_refuse_null() {
        let b = body(json!({"b": null, "k": null, "m": null}));
        let mut r = BodyReader::of(&b, &FIELDS);
        assert_eq!((r.boolean("b"), r.integer("k", 1..=10), r.integer("m", 1..=10)), (None, None, None));
        assert_eq!(codes(r.finish(())), ["b_invalid", "k_invalid"]);
        #[cfg(feature = "openapi")]
        {
            let schema = serde_json::to_value(FIELDS.schema()).unwrap();
            assert_eq!(schema["properties"]["b"]["type"], "boolean");
            assert_eq!(schema["properties"]["k"]["type"], "integer");
            assert_eq!(schema["properties"]["m"]["type"], json!(["integer", "null"]));
        }
    }

    #[test]
    fn out_of_range_integers_are_invalid() {
        let b = body(json!({"n": 0, "m": 1.5}));
        let mut r = BodyReader::of(&b, &FIELDS);
        assert_eq!(r.integer("n", 1..=10), None);
        assert_eq!(r.integer("m", 1..=10), None);
        assert_eq!(codes(r.finish(())), ["n_invalid", "m_invalid"]);
    }
}
