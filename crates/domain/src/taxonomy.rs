//! The furniture taxonomy of the spec: the one place that knows its values.

use serde::Serialize;

pub const COLOURS: &[&str] = &[
    "Beige", "Black", "Blue", "Brown", "Charcoal", "Cream", "Green", "Grey", "Ivory", "Mink", "Natural", "Navy",
    "Pink", "Red", "Silver", "Stone", "Tan", "Teal", "White", "Yellow",
];

pub const FABRICS: &[&str] = &[
    "Velvet",
    "Leather",
    "Faux Leather",
    "Linen",
    "Cotton",
    "Chenille",
    "Bouclé",
    "Wool",
    "Polyester",
    "Microfiber",
    "Suede",
    "Faux Suede",
    "Silk",
    "Tweed",
    "Corduroy",
    "Canvas",
    "Jacquard",
    "Acrylic",
    "Nylon",
    "Viscose",
    "Rattan",
    "Wicker",
    "Mixed Fabric",
    "Other",
];

pub const CATEGORIES: &[&str] =
    &["Corner Sofas", "3-Seater Sofas", "2-Seater Sofas", "Sofa Beds", "Armchairs", "Footstools", "Sofa Sets", "Other"];

pub const ITEM_TYPES: &[&str] =
    &["Corner Sofa", "4-Seater", "3-Seater", "2-Seater", "Chair", "Sofa Bed", "Sofa Set", "U-Shape Sofa", "Footstool"];

/// The manufacturer brand entry that always closes `options.brands`.
pub const OTHER_BRAND: &str = "Other";

/// A value submitted in payloads with the label a person sees.
#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Choice {
    pub value: &'static str,
    pub label: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<&'static str>,
}

const fn choice(value: &'static str, label: &'static str) -> Choice {
    Choice { value, label, help: None }
}

const fn described(value: &'static str, label: &'static str, help: &'static str) -> Choice {
    Choice { value, label, help: Some(help) }
}

pub const CONDITIONS: &[Choice] = &[
    described("like-new", "Like new", "No visible signs of use; as it left the showroom."),
    described("excellent", "Excellent", "Minimal signs of use that only show on close inspection."),
    described("gently-used", "Gently used", "Light wear consistent with careful everyday use."),
    described("fair", "Fair", "Visible wear such as fading, pilling or marks; fully usable."),
];

pub const EXPOSURES: &[Choice] =
    &[choice("Dogs", "Dogs"), choice("Cats", "Cats"), choice("Smoke", "Smoke"), choice("None", "None of the above")];

pub const FAULTS: &[Choice] = &[
    choice("Rips or tears", "Rips or tears"),
    choice("Fire Label", "Has fire safety label"),
    choice("None", "None of the above"),
];

/// The exclusive "none of these" value of `exposed_to` and `faults`.
pub const NONE_VALUE: &str = "None";

/// The age bands, youngest first: `Less than 1 year`, `1 year old`, ... `14 years old`, `15+ years old`.
pub fn ages() -> Vec<String> {
    let mut ages = Vec::with_capacity(16);
    ages.push("Less than 1 year".to_owned());
    ages.push("1 year old".to_owned());
    ages.extend((2..=14).map(|n| format!("{n} years old")));
    ages.push("15+ years old".to_owned());
    ages
}

/// Manufacturer brands every partner sees before creating its own.
pub const BUILT_IN_BRANDS: &[&str] = &[
    "Alexander & James",
    "Arlo & Jacob",
    "Barker and Stonehouse",
    "BoConcept",
    "Camerich",
    "Conran",
    "Darlings of Chelsea",
    "DFS",
    "Dunelm",
    "Duresta",
    "Ercol",
    "Furniture Village",
    "G Plan",
    "Habitat",
    "Heal's",
    "IKEA",
    "John Lewis",
    "La-Z-Boy",
    "Laura Ashley",
    "Ligne Roset",
    "Loaf",
    "Made.com",
    "Marks & Spencer",
    "Multiyork",
    "Natuzzi",
    "Next",
    "Oak Furnitureland",
    "Parker Knoll",
    "Snug",
    "Sofa.com",
    "Sofas & Stuff",
    "Sofology",
    "Swyft",
    "Tetrad",
    "Wesley-Barrell",
    "West Elm",
    "Willow & Hall",
];

/// The response of `GET /v1/listings/options`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Options {
    /// Manufacturer brand names, sorted, with `Other` last.
    pub brands: Vec<String>,
    pub colours: &'static [&'static str],
    pub fabrics: &'static [&'static str],
    pub ages: Vec<String>,
    pub categories: &'static [&'static str],
    pub item_types: &'static [&'static str],
    pub conditions: &'static [Choice],
    pub exposures: &'static [Choice],
    pub faults: &'static [Choice],
}

impl Options {
    /// The taxonomy with the given manufacturer brands (in any order, `Other` optional).
    pub fn with_brands(brands: impl IntoIterator<Item = String>) -> Self {
        let mut brands: Vec<String> = brands.into_iter().filter(|b| !b.eq_ignore_ascii_case(OTHER_BRAND)).collect();
        brands.sort_by_cached_key(|b| b.to_lowercase());
        brands.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
        brands.push(OTHER_BRAND.to_owned());
        Self {
            brands,
            colours: COLOURS,
            fabrics: FABRICS,
            ages: ages(),
            categories: CATEGORIES,
            item_types: ITEM_TYPES,
            conditions: CONDITIONS,
            exposures: EXPOSURES,
            faults: FAULTS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_run_from_under_one_to_fifteen_plus() {
        let ages = ages();
        assert_eq!(ages.len(), 16);
        assert_eq!(ages[0], "Less than 1 year");
        assert_eq!(ages[1], "1 year old");
        assert_eq!(ages[2], "2 years old");
        assert_eq!(ages[14], "14 years old");
        assert_eq!(ages[15], "15+ years old");
    }

    #[test]
    fn brands_are_sorted_case_insensitively_with_other_last() {
        let options = Options::with_brands(["loaf".into(), "other".into(), "DFS".into(), "Arlo".into()]);
        assert_eq!(options.brands, ["Arlo", "DFS", "loaf", "Other"]);
    }

    #[test]
    fn taxonomy_sizes_match_the_spec() {
        assert_eq!(COLOURS.len(), 20);
        assert_eq!(FABRICS.len(), 24);
        assert_eq!(CATEGORIES.len(), 8);
        assert_eq!(ITEM_TYPES.len(), 9);
        assert_eq!(
            CONDITIONS.iter().map(|c| c.value).collect::<Vec<_>>(),
            ["like-new", "excellent", "gently-used", "fair"]
        );
        assert!(CONDITIONS.iter().all(|c| c.help.is_some()));
    }
}
