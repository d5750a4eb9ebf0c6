//! Reading a settings body field by field, collecting every reason at once.

use serde_json::{Map, Value};

use crate::body::BodySpec;
use crate::reader::BodyReader;
use crate::text::text;
pub(super) use crate::text::Lines;
use crate::FieldError;

/// Held by each parsed settings value in a private field, so that only its own `parse`
/// can build one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Parsed;

/// A settings body being read: the shared [`BodyReader`] with the settings' PATCH rules.
/// Each reader returns `None` both for an absent field and for one that failed (its reason
/// is recorded); [`Fields::given`] tells the two apart.
pub(super) struct Fields<'a> {
    reader: BodyReader<'a>,
}

impl<'a> Fields<'a> {
    /// A reader of the body `spec` describes: its fields are the ones accepted; any other
    /// is `<field>_unknown`.
    pub fn of(body: &'a Map<String, Value>, spec: &'static BodySpec) -> Self {
        Self { reader: BodyReader::of(body, spec) }
    }

    pub fn given(&self, field: &str) -> bool {
        self.reader.raw(field).is_some()
    }

    /// A text field under the one text rule ([`text`]), except that `""`, a blank string
    /// and `null` clear it (`Some("")`).
    pub fn text(&mut self, field: &'static str, max_chars: usize, lines: Lines) -> Option<String> {
        match self.reader.raw(field)? {
            Value::Null => Some(String::new()),
            value => match text(value, max_chars, lines) {
                Ok(text) => Some(text.unwrap_or_default()),
                Err(suffix) => self.fail(field, suffix),
            },
        }
    }

    /// A one-line text field with a shape: empty clears it; otherwise `parse` gives the
    /// normalised value, or `None` for `<field>_invalid`.
    pub fn shaped(
        &mut self,
        field: &'static str,
        max_chars: usize,
        parse: impl FnOnce(&str) -> Option<String>,
    ) -> Option<String> {
        let text = self.text(field, max_chars, Lines::One)?;
        if text.is_empty() {
            return Some(text);
        }
        match parse(&text) {
            Some(value) => Some(value),
            None => self.fail(field, "invalid"),
        }
    }

    /// A JSON boolean; anything else (`null` included) is `<field>_invalid`.
    pub fn boolean(&mut self, field: &'static str) -> Option<bool> {
        self.reader.boolean(field)
    }

    /// Records `<field>_<suffix>`; returns `None` so readers can end with it.
    pub fn fail<T>(&mut self, field: &str, suffix: &str) -> Option<T> {
        self.reader.fail(field, suffix)
    }

    /// `value` when every field was valid and known; otherwise every reason, those of the
    /// known fields first (in the order they were read), then the unknown fields.
    pub fn finish<T>(self, value: T) -> Result<T, Vec<FieldError>> {
        self.reader.finish(value)
    }
}

/// A body read both ways of one yes-or-no fact its rules depend on and that only the use
/// case knows (the warehouse changed is the default; the brand saves its profile for the
/// first time): the edge reads the body, the use case picks the reading ([`Self::of`])
/// once it knows, after it has looked (so what is missing is answered as missing, whatever
/// the body).
#[derive(Debug, Clone)]
pub struct EitherWay<T> {
    yes: Result<T, Vec<FieldError>>,
    no: Result<T, Vec<FieldError>>,
}

impl<T> EitherWay<T> {
    pub(super) fn read(parse: impl Fn(bool) -> Result<T, Vec<FieldError>>) -> Self {
        Self { yes: parse(true), no: parse(false) }
    }

    /// The value read when the fact holds (`fact`) or not, or every reason it is refused.
    pub fn of(self, fact: bool) -> Result<T, Vec<FieldError>> {
        if fact {
            self.yes
        } else {
            self.no
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::body::{Field, FieldType};
    use crate::reader::object as body;

    const fn spec(fields: &'static [Field]) -> BodySpec {
        BodySpec { name: "Test", doc: "", fields, example: "{}" }
    }
    const fn text_field(name: &'static str) -> Field {
        Field::optional(name, FieldType::Text { max: 10 }, "")
    }
    static A: BodySpec = spec(&[text_field("a")]);
    static B: BodySpec = spec(&[text_field("b")]);
    static ABC: BodySpec = spec(&[text_field("a"), text_field("b"), text_field("c")]);
    static ABCD: BodySpec = spec(&[text_field("a"), text_field("b"), text_field("c"), text_field("d")]);
    static FLAG: BodySpec = spec(&[Field::optional("flag", FieldType::Boolean, "")]);

    fn codes(errors: Vec<FieldError>) -> Vec<String> {
        errors.into_iter().map(|e| e.code).collect()
    }

    #[test]
    fn text_is_trimmed_and_null_or_empty_clears() {
        let b = body(json!({"a": "  hi  ", "b": null, "c": ""}));
        let mut f = Fields::of(&b, &ABCD);
        assert_eq!(f.text("a", 10, Lines::One).as_deref(), Some("hi"));
        assert_eq!(f.text("b", 10, Lines::One).as_deref(), Some(""));
        assert_eq!(f.text("c", 10, Lines::One).as_deref(), Some(""));
        assert_eq!(f.text("d", 10, Lines::One), None);
        assert!(!f.given("d"));
        assert!(f.finish(()).is_ok());
    }

    #[test]
    fn each_failure_has_its_reason() {
        let cases = [
            (json!({"a": 5}), "a_invalid"),
            (json!({"a": ["x"]}), "a_invalid"),
            (json!({"a": {"x": 1}}), "a_invalid"),
            (json!({"a": true}), "a_invalid"),
            (json!({"a": "line\nbreak"}), "a_invalid"),
            (json!({"a": "bell\u{7}"}), "a_invalid"),
            (json!({"a": "x".repeat(11)}), "a_too_long"),
            (json!({"zz": "x"}), "zz_unknown"),
        ];
        for (value, code) in cases {
            let b = body(value.clone());
            let mut f = Fields::of(&b, &A);
            let _ = f.text("a", 10, Lines::One);
            assert_eq!(codes(f.finish(()).unwrap_err()), [code], "{value}");
        }
    }

    #[test]
    fn length_counts_unicode_characters_not_bytes() {
        let b = body(json!({"a": "é".repeat(10)}));
        let mut f = Fields::of(&b, &A);
        assert_eq!(f.text("a", 10, Lines::One).map(|s| s.chars().count()), Some(10));
    }

    #[test]
    fn multi_line_text_keeps_line_breaks_and_tabs() {
        let b = body(json!({"a": "one\r\n\ttwo"}));
        let mut f = Fields::of(&b, &A);
        assert_eq!(f.text("a", 100, Lines::Many).as_deref(), Some("one\r\n\ttwo"));
    }

    #[test]
    fn booleans_must_be_json_booleans() {
        for value in [json!("true"), json!(1), Value::Null] {
            let b = body(json!({ "flag": value }));
            let mut f = Fields::of(&b, &FLAG);
            assert_eq!(f.boolean("flag"), None);
            assert_eq!(codes(f.finish(()).unwrap_err()), ["flag_invalid"]);
        }
    }

    #[test]
    fn shaped_fields_are_normalised_or_invalid() {
        let b = body(json!({"a": " ab ", "b": "", "c": "x"}));
        let mut f = Fields::of(&b, &ABC);
        assert_eq!(f.shaped("a", 10, |s| Some(s.to_uppercase())).as_deref(), Some("AB"));
        assert_eq!(f.shaped("b", 10, |_| None).as_deref(), Some(""));
        assert_eq!(f.shaped("c", 10, |_| None), None);
        assert_eq!(codes(f.finish(()).unwrap_err()), ["c_invalid"]);
    }

    #[test]
    fn known_field_reasons_come_before_unknown_fields() {
        let b = body(json!({"a": 1, "b": 2}));
        let mut f = Fields::of(&b, &B);
        let _ = f.text("b", 10, Lines::One);
        assert_eq!(codes(f.finish(()).unwrap_err()), ["b_invalid", "a_unknown"]);
    }
}
