//! Reading the fields of a request body, collecting every reason at once as
//! `<field>_<reason>` and naming unknown fields: those its [`BodySpec`] does not list.
//! Marketplace and webhook bodies use it directly; settings bodies through
//! `settings::fields`, which adds their PATCH rules (`null` and `""` clear a field); the
//! listing validator takes its known fields from its spec the same way. [`text`] is the one
//! rule for text in every body.

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use serde_json::{Map, Value};

use crate::domain::body::BodySpec;
use crate::domain::FieldError;

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
    /// ([`Field::not_null`](crate::domain::body::Field::not_null), booleans): then `invalid`.
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
        self.errors.push(FieldError::of(field, suffix));
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

/// Whether a text field may span several lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lines {
    One,
    /// Line breaks and tabs are kept.
    Many,
}

/// The one rule for text in every body: a JSON string of at most `max_chars` characters
/// as sent (`too_long`); no control character (line breaks and tabs are allowed in
/// [`Lines::Many`] text) nor bidirectional control anywhere (`invalid`); trimmed of
/// whitespace and invisible characters, blank is `Ok(None)`, but text that was nothing but
/// invisible characters is `invalid`. The `Err` is the reason's suffix. The OpenAPI
/// document states the same rule as a pattern ([`text_pattern`]), so that a text the
/// document admits is a text this accepts, and the reverse.
pub fn text(value: &Value, max_chars: usize, lines: Lines) -> Result<Option<String>, &'static str> {
    let Value::String(text) = value else {
        return Err("invalid");
    };
    if text.chars().any(|c| is_refused(c, lines)) {
        return Err("invalid");
    }
    if text.chars().count() > max_chars {
        return Err("too_long");
    }
    // Text of nothing but invisible characters would show as blank where it is listed.
    let trimmed = text.trim_matches(|c: char| c.is_whitespace() || is_invisible(c));
    if trimmed.is_empty() {
        return if text.chars().any(is_invisible) { Err("invalid") } else { Ok(None) };
    }
    // Nor may it be only marks that combine with nothing (they show as blank or as
    // dotted circles).
    if !trimmed.chars().any(is_visible) {
        return Err("invalid");
    }
    Ok(Some(trimmed.to_owned()))
}

/// `text` as an identifier (a SKU): without the invisible characters inside it, so that
/// `ABC\u{200B}-1` and `ABC-1`, which look alike, are one SKU, not two.
pub fn identifier(text: &str) -> String {
    text.chars().filter(|c| !is_invisible(*c)).collect()
}

/// Control characters (C0 and C1; in [`Lines::Many`] text line breaks and tabs are kept);
/// the embeddings, overrides and isolates of the bidirectional algorithm: they make text
/// read in another order than it is stored (`U+202E` turns `exe.pdf` into `fdp.exe`); the
/// line and paragraph separators (line breaks, kept in [`Lines::Many`] text); the
/// interlinear annotation controls; and the noncharacters of the Basic Multilingual Plane.
const REFUSED: &[(char, char)] = &[
    ('\u{0}', '\u{1F}'),
    ('\u{7F}', '\u{9F}'),
    ('\u{2028}', '\u{2029}'),
    ('\u{202A}', '\u{202E}'),
    ('\u{2066}', '\u{2069}'),
    ('\u{FDD0}', '\u{FDEF}'),
    ('\u{FFF9}', '\u{FFFB}'),
    ('\u{FFFE}', '\u{FFFF}'),
];
/// What [`Lines::Many`] text keeps of the refused characters.
const LINE_BREAKS: &[(char, char)] = &[('\t', '\n'), ('\r', '\r'), ('\u{2028}', '\u{2029}')];
/// Characters that take no room: zero-width spaces and joiners, the word joiner and the
/// invisible operators, the byte order mark, the soft hyphen, the Mongolian vowel
/// separator, the combining grapheme joiner, the bidirectional marks (LRM, RLM, ALM: kept
/// inside right-to-left text, where they belong, but never text on their own) and the
/// Hangul and Khmer fillers that render as nothing.
const INVISIBLE: &[(char, char)] = &[
    ('\u{AD}', '\u{AD}'),
    ('\u{34F}', '\u{34F}'),
    ('\u{61C}', '\u{61C}'),
    ('\u{115F}', '\u{1160}'),
    ('\u{17B4}', '\u{17B5}'),
    ('\u{180E}', '\u{180E}'),
    ('\u{200B}', '\u{200F}'),
    ('\u{2060}', '\u{2064}'),
    ('\u{3164}', '\u{3164}'),
    ('\u{FEFF}', '\u{FEFF}'),
    ('\u{FFA0}', '\u{FFA0}'),
];
/// Marks that combine with the character before them: text of nothing but these (and
/// white space or invisible characters) shows nothing of its own. The general combining
/// blocks.
const COMBINING: &[(char, char)] = &[
    ('\u{300}', '\u{36F}'),
    ('\u{1AB0}', '\u{1AFF}'),
    ('\u{1DC0}', '\u{1DFF}'),
    ('\u{20D0}', '\u{20FF}'),
    ('\u{FE20}', '\u{FE2F}'),
];
/// Unicode's white space (`char::is_whitespace`) that is neither a control character nor
/// a line break.
const SPACES: &[(char, char)] = &[
    (' ', ' '),
    ('\u{A0}', '\u{A0}'),
    ('\u{1680}', '\u{1680}'),
    ('\u{2000}', '\u{200A}'),
    ('\u{202F}', '\u{202F}'),
    ('\u{205F}', '\u{205F}'),
    ('\u{3000}', '\u{3000}'),
];

fn within(ranges: &[(char, char)], c: char) -> bool {
    ranges.iter().any(|(low, high)| (*low..=*high).contains(&c))
}

/// `ranges` with the characters of `holes` taken out (ranges of code points below U+D800).
fn without(ranges: &[(char, char)], holes: &[(char, char)]) -> Vec<(char, char)> {
    let mut left: Vec<(u32, u32)> = ranges.iter().map(|(a, b)| (*a as u32, *b as u32)).collect();
    for (hole_low, hole_high) in holes.iter().map(|(a, b)| (*a as u32, *b as u32)) {
        left = left
            .into_iter()
            .flat_map(|(low, high)| {
                let below = (low < hole_low).then(|| (low, high.min(hole_low - 1)));
                let above = (high > hole_high).then(|| (low.max(hole_high + 1), high));
                if high < hole_low || low > hole_high {
                    vec![(low, high)]
                } else {
                    below.into_iter().chain(above).collect()
                }
            })
            .collect();
    }
    left.into_iter().filter_map(|(a, b)| Some((char::from_u32(a)?, char::from_u32(b)?))).collect()
}

fn is_refused(c: char, lines: Lines) -> bool {
    within(REFUSED, c) && !(lines == Lines::Many && within(LINE_BREAKS, c))
}

fn is_invisible(c: char) -> bool {
    within(INVISIBLE, c)
}

/// Shows something of its own (the text rule is checked for refused characters first).
fn is_visible(c: char) -> bool {
    !c.is_whitespace() && !is_invisible(c) && !within(COMBINING, c)
}

/// The rule of [`text`] as an ECMA-262 regular expression over the whole value, for the
/// OpenAPI document: no refused character; and either blank (white space only, which reads
/// as no value) or holding something visible. With `non_blank` (required fields, list
/// items), something visible is required.
pub fn text_pattern(lines: Lines, non_blank: bool) -> String {
    fn class(ranges: &[(char, char)]) -> String {
        ranges
            .iter()
            .map(|(low, high)| {
                if low == high {
                    format!("\\u{:04x}", *low as u32)
                } else {
                    format!("\\u{:04x}-\\u{:04x}", *low as u32, *high as u32)
                }
            })
            .collect()
    }
    let refused = match lines {
        Lines::One => class(REFUSED),
        Lines::Many => class(&without(REFUSED, LINE_BREAKS)),
    };
    let spaces = match lines {
        Lines::One => class(SPACES),
        Lines::Many => class(SPACES) + &class(LINE_BREAKS),
    };
    let visible = format!(
        "[^{refused}]*[^{refused}{spaces}{invisible}{combining}][^{refused}]*",
        invisible = class(INVISIBLE),
        combining = class(COMBINING)
    );
    if non_blank {
        format!("^{visible}$")
    } else {
        format!("^(?:[{spaces}]*|{visible})$")
    }
}

/// The years a date or instant the service accepts may fall in: far enough for any order,
/// collection or listing, and no year that renders with five digits.
pub const FIRST_YEAR: i32 = 2000;
pub const LAST_YEAR: i32 = 2100;

fn in_range(date: NaiveDate) -> bool {
    (FIRST_YEAR..=LAST_YEAR).contains(&date.year())
}

/// A form's number as the JSON number it spells (its text kept exactly), else the text
/// (which the field's reader then refuses): a form field read as its JSON twin is.
pub fn form_number(text: &str) -> Value {
    let trimmed = text.trim();
    serde_json::from_str::<serde_json::Number>(trimmed).map_or_else(|_| Value::String(text.to_owned()), Value::Number)
}

/// Exactly `YYYY-MM-DD`, in the years [`FIRST_YEAR`]..=[`LAST_YEAR`].
pub fn parse_date(text: &str) -> Option<NaiveDate> {
    (text.len() == 10).then(|| NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()).flatten().filter(|d| in_range(*d))
}

/// The longest instant read (`2026-11-21T09:30:00.123456789+01:00` is 35 characters): the
/// documented `maxLength` of every timestamp a request carries.
pub const MAX_INSTANT_LEN: usize = 64;

/// RFC 3339 with an offset, as UTC, in the years [`FIRST_YEAR`]..=[`LAST_YEAR`].
/// The year is the one written (`2100-12-31T23:00:00-05:00` is in 2100).
pub fn parse_instant(text: &str) -> Option<DateTime<Utc>> {
    if text.len() > MAX_INSTANT_LEN {
        return None;
    }
    let at = DateTime::parse_from_rfc3339(text).ok()?;
    in_range(at.date_naive()).then(|| at.with_timezone(&Utc))
}

/// The years [`FIRST_YEAR`]..=[`LAST_YEAR`] as a pattern on the start of a date or instant.
pub const YEAR_PATTERN: &str = "^(?:20[0-9]{2}|2100)-";

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
    use crate::domain::body::{Field, FieldType};

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
            r.timestamp("t").map(|t| crate::store::Ts::from(t).to_string()).as_deref(),
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
        let schema = serde_json::to_value(FIELDS.schema()).unwrap();
        assert_eq!(schema["properties"]["b"]["type"], "boolean");
        assert_eq!(schema["properties"]["k"]["type"], "integer");
        assert_eq!(schema["properties"]["m"]["type"], json!(["integer", "null"]));
    }

    #[test]
    fn text_rules_are_one_for_every_body() {
        assert_eq!(text(&json!("  hi "), 5, Lines::One), Ok(Some("hi".into())));
        assert_eq!(text(&json!("   "), 5, Lines::One), Ok(None));
        assert_eq!(text(&json!(3), 5, Lines::One), Err("invalid"));
        assert_eq!(text(&json!("a\nb"), 5, Lines::One), Err("invalid"));
        assert_eq!(text(&json!("a\nb\tc"), 5, Lines::Many), Ok(Some("a\nb\tc".into())));
        assert_eq!(text(&json!("a\u{7}b"), 5, Lines::Many), Err("invalid"));
        assert_eq!(text(&json!("éééééé"), 5, Lines::One), Err("too_long"));
    }

    #[test]
    fn out_of_range_integers_are_invalid() {
        let b = body(json!({"n": 0, "m": 1.5}));
        let mut r = BodyReader::of(&b, &FIELDS);
        assert_eq!(r.integer("n", 1..=10), None);
        assert_eq!(r.integer("m", 1..=10), None);
        assert_eq!(codes(r.finish(())), ["n_invalid", "m_invalid"]);
    }

    #[test]
    fn invisible_reordering_and_control_text_is_refused() {
        for bad in [
            "\u{0}",
            "a\u{1b}[31m",
            "bell\u{7}",
            "\u{202E}fdp.exe",
            "a\u{2066}b",
            "\u{200B}\u{200D}",
            " \u{FEFF} ",
            "a\u{85}b",
            "a\u{9b}b",
        ] {
            assert_eq!(text(&Value::from(bad), 100, Lines::Many), Err("invalid"), "{bad:?}");
        }
        assert_eq!(text(&Value::from("\u{200B}Sofa\u{200B}"), 100, Lines::One), Ok(Some("Sofa".to_owned())));
        assert_eq!(text(&Value::from("two\nlines\tok"), 100, Lines::Many), Ok(Some("two\nlines\tok".to_owned())));
        assert_eq!(text(&Value::from("two\nlines"), 100, Lines::One), Err("invalid"));
        assert_eq!(text(&Value::from("   "), 100, Lines::One), Ok(None), "blank is absent");
        assert_eq!(text(&Value::from("שלום \u{200F}עולם"), 100, Lines::One).map(|t| t.is_some()), Ok(true));
    }

    #[test]
    fn text_that_renders_blank_or_breaks_lines_unseen_is_refused() {
        for bad in [
            "\u{200E}",
            "\u{200F} \u{61C}",
            "\u{3164}",
            "\u{3164}\u{3164}",
            "\u{301}\u{302}",
            " \u{20DD} ",
            "a\u{FFF9}b\u{FFFB}",
            "a\u{FFFE}",
            "a\u{FDD0}",
        ] {
            assert_eq!(text(&Value::from(bad), 100, Lines::One), Err("invalid"), "{bad:?}");
            assert_eq!(text(&Value::from(bad), 100, Lines::Many), Err("invalid"), "{bad:?}");
        }
        assert_eq!(text(&Value::from("one\u{2028}two"), 100, Lines::One), Err("invalid"), "a line break");
        assert_eq!(text(&Value::from("one\u{2029}two"), 100, Lines::Many), Ok(Some("one\u{2029}two".to_owned())));
        assert_eq!(text(&Value::from("\u{200E}Sofa\u{200F}"), 100, Lines::One), Ok(Some("Sofa".to_owned())));
        assert_eq!(text(&Value::from("Cafe\u{301}"), 100, Lines::One), Ok(Some("Cafe\u{301}".to_owned())));
    }

    #[test]
    fn an_identifier_is_the_same_with_or_without_invisible_characters_inside() {
        assert_eq!(identifier("ABC\u{200B}-1"), "ABC-1");
        assert_eq!(identifier("A\u{2060}B\u{200E}C\u{FEFF}"), "ABC");
        assert_eq!(identifier("SOF-001"), "SOF-001");
    }

    #[test]
    fn dates_and_instants_stay_within_the_service_years() {
        assert!(parse_date("2000-01-01").is_some() && parse_date("2100-12-31").is_some());
        assert!(parse_date("1999-12-31").is_none() && parse_date("2101-01-01").is_none());
        assert!(parse_date("9999-12-31").is_none());
        assert!(parse_instant("2026-11-21T10:00:00+01:00").is_some());
        assert!(parse_instant("9999-12-31T23:59:59Z").is_none() && parse_instant("1970-01-01T00:00:00Z").is_none());
    }

    #[test]
    fn the_ends_of_one_line_text_are_no_exception_and_length_is_as_sent() {
        assert_eq!(text(&Value::from("Sofa\n"), 100, Lines::One), Err("invalid"), "a control anywhere");
        assert_eq!(text(&Value::from("\tSofa"), 100, Lines::One), Err("invalid"));
        assert_eq!(text(&Value::from("  Sofa  "), 6, Lines::One), Err("too_long"), "counted as sent");
        assert_eq!(text(&Value::from("  Sofa  "), 8, Lines::One), Ok(Some("Sofa".to_owned())));
        assert!(parse_date(" 2026-01-01").is_none() && parse_instant("2026-01-01T00:00:00Z ").is_none());
        assert!(parse_instant("2100-12-31T23:00:00-05:00").is_some(), "the year as written");
    }

    /// The characters each class of the rule is made of, and ordinary ones.
    const CHARS: &[char] = &[
        'a',
        'Z',
        'é',
        '0',
        '-',
        ' ',
        '\u{A0}',
        '\u{2003}',
        '\u{3000}',
        '\u{2028}',
        '\t',
        '\n',
        '\r',
        '\u{B}',
        '\u{0}',
        '\u{1B}',
        '\u{7F}',
        '\u{85}',
        '\u{9F}',
        '\u{200B}',
        '\u{200D}',
        '\u{FEFF}',
        '\u{AD}',
        '\u{180E}',
        '\u{2060}',
        '\u{202A}',
        '\u{202E}',
        '\u{2066}',
        '\u{2069}',
        '\u{200E}',
        '\u{200F}',
        '\u{61C}',
        '\u{3164}',
        '\u{FFA0}',
        '\u{2029}',
        '\u{FFF9}',
        '\u{FFFE}',
        '\u{FDD0}',
        '\u{301}',
        '\u{20DD}',
        '\u{1F600}',
    ];

    proptest::proptest! {
        /// What the OpenAPI document's pattern admits is exactly what the reader accepts:
        /// any text (blank included) for optional fields, non-blank text for required ones.
        #[test]
        fn the_documented_pattern_is_the_rule(
            picks in proptest::collection::vec(0..CHARS.len(), 0..8),
            many in proptest::bool::ANY,
        ) {
            let sent: String = picks.iter().map(|&i| CHARS[i]).collect();
            let lines = if many { Lines::Many } else { Lines::One };
            let read = text(&Value::from(sent.as_str()), 100, lines);
            let optional = regex::Regex::new(&text_pattern(lines, false)).unwrap();
            let required = regex::Regex::new(&text_pattern(lines, true)).unwrap();
            proptest::prop_assert_eq!(optional.is_match(&sent), read.is_ok(), "{:?} {:?}", sent, read);
            proptest::prop_assert_eq!(required.is_match(&sent), matches!(read, Ok(Some(_))), "{:?} {:?}", sent, read);
        }
    }
}
