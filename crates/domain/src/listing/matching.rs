//! Matching free text to taxonomy values: case- and accent-insensitive, ignoring spaces and
//! punctuation, plus the common spellings partners use ("gray", "microfibre").

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

use crate::taxonomy::{COLOURS, FABRICS};

/// Lower-case letters and digits only, accents removed: `Faux-Leather` → `fauxleather`,
/// `Bouclé` → `boucle`.
pub(super) fn fold(text: &str) -> String {
    text.nfd().filter(|c| !is_combining_mark(*c)).flat_map(char::to_lowercase).filter(|c| c.is_alphanumeric()).collect()
}

/// Other spellings of colours, as folded keys.
const COLOUR_ALIASES: &[(&str, &str)] = &[("gray", "Grey"), ("creme", "Cream"), ("navyblue", "Navy")];

/// Other spellings of fabrics, as folded keys.
const FABRIC_ALIASES: &[(&str, &str)] = &[
    ("microfibre", "Microfiber"),
    ("microfibres", "Microfiber"),
    ("leatherette", "Faux Leather"),
    ("pleather", "Faux Leather"),
    ("veganleather", "Faux Leather"),
    ("puleather", "Faux Leather"),
    ("microsuede", "Faux Suede"),
    ("cord", "Corduroy"),
    ("mixed", "Mixed Fabric"),
    ("mixedfabrics", "Mixed Fabric"),
];

fn best_match(text: &str, values: &[&'static str], aliases: &[(&str, &'static str)]) -> Option<&'static str> {
    let key = fold(text);
    if key.is_empty() {
        return None;
    }
    values
        .iter()
        .find(|value| fold(value) == key)
        .copied()
        .or_else(|| aliases.iter().find(|(alias, _)| *alias == key).map(|(_, value)| *value))
}

/// The taxonomy colour a partner meant, if any.
pub(super) fn colour(text: &str) -> Option<&'static str> {
    best_match(text, COLOURS, COLOUR_ALIASES)
}

/// The taxonomy fabric a partner meant, if any.
pub(super) fn fabric(text: &str) -> Option<&'static str> {
    best_match(text, FABRICS, FABRIC_ALIASES)
}

/// A value of a fixed list, ignoring case and surrounding spaces (`"sofa beds"` → `Sofa Beds`).
pub(super) fn one_of<'a>(text: &str, values: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let text = text.trim().to_lowercase();
    values.into_iter().find(|value| value.to_lowercase() == text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_match_ignoring_case_accents_and_common_spellings() {
        let cases = [
            ("Grey", Some("Grey")),
            ("grey", Some("Grey")),
            ("GRAY", Some("Grey")),
            (" navy ", Some("Navy")),
            ("Navy Blue", Some("Navy")),
            ("crème", Some("Cream")),
            ("Mink", Some("Mink")),
            ("Purple", None),
            ("", None),
            ("--", None),
        ];
        for (text, expected) in cases {
            assert_eq!(colour(text), expected, "{text}");
        }
    }

    #[test]
    fn fabrics_match_ignoring_case_accents_and_common_spellings() {
        let cases = [
            ("boucle", Some("Bouclé")),
            ("BOUCLÉ", Some("Bouclé")),
            ("Bouclé", Some("Bouclé")),
            ("microfibre", Some("Microfiber")),
            ("Micro-fibre", Some("Microfiber")),
            ("faux-leather", Some("Faux Leather")),
            ("FAUX LEATHER", Some("Faux Leather")),
            ("leatherette", Some("Faux Leather")),
            ("velvet", Some("Velvet")),
            ("mixed fabric", Some("Mixed Fabric")),
            ("plastic", None),
        ];
        for (text, expected) in cases {
            assert_eq!(fabric(text), expected, "{text}");
        }
    }

    #[test]
    fn every_taxonomy_value_matches_itself() {
        for value in COLOURS {
            assert_eq!(colour(value), Some(*value));
        }
        for value in FABRICS {
            assert_eq!(fabric(value), Some(*value));
        }
    }

    #[test]
    fn fixed_lists_match_ignoring_case_and_spaces() {
        let list = ["Sofa Beds", "Other"];
        assert_eq!(one_of(" sofa beds ", list), Some("Sofa Beds"));
        assert_eq!(one_of("sofabeds", list), None);
    }
}
