//! The one rule for text in every body, and for the dates and instants a request carries:
//! what the readers of bodies, forms, bulk rows and queries apply, and what the OpenAPI
//! document states as patterns (a leaf: it names no other module of the crate).

use std::sync::LazyLock;

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use serde_json::Value;

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
/// Characters that show nothing however they are placed (decisions 15.7), by Unicode
/// properties (ICU4X's compiled data, `icu_properties`), not a list kept by hand: every
/// `Default_Ignorable_Code_Point`, every format character (`General_Category=Cf`), every
/// `Variation_Selector`, and the braille pattern blank (U+2800) and the object replacement
/// character (U+FFFC), which render as blank. Text of nothing but these (and white space) is
/// refused; inside text they are kept as sent (a variation selector belongs to the emoji
/// before it). As code point ranges, merged and sorted.
static SHOWS_NOTHING: LazyLock<Vec<(char, char)>> = LazyLock::new(|| {
    use icu_properties::props::{DefaultIgnorableCodePoint, GeneralCategory, VariationSelector};
    use icu_properties::{CodePointMapData, CodePointSetData};
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    ranges.extend(CodePointSetData::new::<DefaultIgnorableCodePoint>().iter_ranges().map(|r| (*r.start(), *r.end())));
    ranges.extend(CodePointSetData::new::<VariationSelector>().iter_ranges().map(|r| (*r.start(), *r.end())));
    ranges.extend(
        CodePointMapData::<GeneralCategory>::new()
            .iter_ranges_for_value(GeneralCategory::Format)
            .map(|r| (*r.start(), *r.end())),
    );
    ranges.extend([(0x2800, 0x2800), (0xFFFC, 0xFFFC)]);
    ranges.sort_unstable();
    let mut merged: Vec<(u32, u32)> = Vec::new();
    for (low, high) in ranges {
        match merged.last_mut() {
            Some(last) if low <= last.1.saturating_add(1) => last.1 = last.1.max(high),
            _ => merged.push((low, high)),
        }
    }
    merged.into_iter().filter_map(|(low, high)| Some((char::from_u32(low)?, char::from_u32(high)?))).collect()
});

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
    !c.is_whitespace() && !is_invisible(c) && !within(COMBINING, c) && !within(&SHOWS_NOTHING, c)
}

/// The rule of [`text`] as an ECMA-262 regular expression over the whole value, for the
/// OpenAPI document: no refused character; and either blank (white space only, which reads
/// as no value) or holding something visible. With `non_blank` (required fields, list
/// items), something visible is required.
pub fn text_pattern(lines: Lines, non_blank: bool) -> String {
    // The pattern is ECMA-262 without the `u` flag, whose classes hold code units of the
    // Basic Multilingual Plane only: the ranges above it are left out of the pattern (the
    // server refuses a little more text than the pattern does, never less).
    fn class(ranges: &[(char, char)]) -> String {
        ranges
            .iter()
            .filter(|(low, _)| (*low as u32) <= 0xFFFF)
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
        "[^{refused}]*[^{refused}{spaces}{invisible}{nothing}{combining}][^{refused}]*",
        invisible = class(INVISIBLE),
        nothing = class(&SHOWS_NOTHING),
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
    fn text_of_characters_that_show_nothing_is_refused_and_they_stay_inside_text() {
        for blank in [
            "\u{2800}",
            "\u{206A}\u{206F}",
            "\u{FE0E}\u{FE0F}",
            "\u{180B}",
            "\u{1D173}",
            "\u{1BCA0}",
            "\u{13430}",
            "\u{FFFC}",
            " \u{E0041}\u{E007F} ",
            "\u{FE0F}\u{300}",
        ] {
            assert_eq!(text(&json!(blank), 100, Lines::One), Err("invalid"), "{blank:?}");
        }
        // An emoji keeps its presentation selector; a braille word is text.
        assert_eq!(text(&json!("Red \u{2764}\u{FE0F}"), 100, Lines::One), Ok(Some("Red \u{2764}\u{FE0F}".into())));
        assert_eq!(
            text(&json!("\u{2801}\u{2800}\u{2803}"), 100, Lines::One),
            Ok(Some("\u{2801}\u{2800}\u{2803}".into()))
        );
    }

    /// The set is Unicode's, by property: every default-ignorable code point and format
    /// character, and no letter, digit, space or emoji.
    #[test]
    fn what_shows_nothing_comes_from_the_unicode_properties() {
        use icu_properties::props::{DefaultIgnorableCodePoint, GeneralCategory};
        use icu_properties::{CodePointMapData, CodePointSetData};
        let ignorable = CodePointSetData::new::<DefaultIgnorableCodePoint>();
        let category = CodePointMapData::<GeneralCategory>::new();
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            if ignorable.contains(c) || category.get(c) == GeneralCategory::Format {
                assert!(within(&SHOWS_NOTHING, c), "U+{:04X}", c as u32);
            }
        }
        for c in ['a', '7', ' ', '\u{2764}', '\u{1F600}', '\u{2801}', '\u{301}'] {
            assert!(!within(&SHOWS_NOTHING, c), "U+{:04X}", c as u32);
        }
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
        '\u{2800}',
        '\u{FE0F}',
        '\u{206A}',
        '\u{FFFC}',
        '\u{180B}',
        '\u{2764}',
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
