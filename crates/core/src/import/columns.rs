//! The import columns: the create-listing fields that fit in one cell, in template order,
//! with how a cell of each becomes a JSON value and the hint a person sees on the header.

/// How a cell's content becomes the JSON value the listing validator reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A string, as written (the validator trims it).
    Text,
    /// GBP: numbers, and text such as `£1,200.00` or `1200`.
    Money,
    /// A whole number: numbers, and text such as `30` or `£30`.
    Integer,
    /// `YYYY-MM-DD`: date cells, Excel date serials and text dates (day first, as in the UK).
    Date,
    /// Comma-separated values.
    List,
    /// Comma-separated whole numbers.
    Ids,
    /// `type:w×d×h` entries separated by `;` (`x` works as well as `×`).
    Measurements,
}

/// The fixed values a template column offers as a dropdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choices {
    Categories,
    Conditions,
    Colours,
    Fabrics,
    Ages,
    DeliveryContributions,
    /// The caller's manufacturer brands (`options.brands`); other names are allowed.
    Brands,
    Statuses,
}

#[derive(Debug, Clone, Copy)]
pub struct Column {
    /// The header, which is the listing field it fills.
    pub field: &'static str,
    pub kind: Kind,
    pub required: bool,
    pub choices: Option<Choices>,
    /// The header's input hint in the template (at most 255 characters, Excel's limit).
    pub hint: &'static str,
    /// The value of the template's example row; empty for none.
    pub example: &'static str,
}

const fn column(field: &'static str, kind: Kind, hint: &'static str, example: &'static str) -> Column {
    Column { field, kind, required: false, choices: None, hint, example }
}

const fn required(column: Column) -> Column {
    Column { required: true, ..column }
}

const fn choose(column: Column, choices: Choices) -> Column {
    Column { choices: Some(choices), ..column }
}

/// The import columns in template order. `channel` is not one: bulk import always creates
/// clearance listings.
pub const COLUMNS: &[Column] = &[
    required(column("title", Kind::Text, "Required. 1 to 200 characters.", "Oak frame 3-seater sofa")),
    required(column("price_gbp", Kind::Money, "Required. Regular price in GBP, above 0, at most two decimals: 450 or £1,200.00.", "450")),
    required(choose(column("category", Kind::Text, "Required. Choose from the list: the category of the primary piece; a multi-piece bundle is Sofa Sets.", "3-Seater Sofas"), Choices::Categories)),
    required(choose(column("condition", Kind::Text, "Required. like-new, excellent, gently-used or fair.", "excellent"), Choices::Conditions)),
    choose(column("brand", Kind::Text, "Manufacturer brand. Choose from the list or type a new one (up to 80 characters).", "G Plan"), Choices::Brands),
    choose(column("colour", Kind::Text, "Choose from the list (\"gray\" is read as Grey).", "Grey"), Choices::Colours),
    choose(column("fabric", Kind::Text, "Choose from the list (\"boucle\" is read as Bouclé).", "Linen"), Choices::Fabrics),
    choose(column("age_years", Kind::Text, "Age band: choose from the list.", "2 years old"), Choices::Ages),
    required(column("faults", Kind::List, "Required. Comma-separated: Rips or tears, Fire Label, or None alone.", "None")),
    column("exposed_to", Kind::List, "Comma-separated: Dogs, Cats, Smoke, or None alone.", "Dogs, Smoke"),
    column("quantity", Kind::Integer, "Identical units in stock: 1 to 10000. Default 1.", "2"),
    choose(column("delivery_contribution_gbp", Kind::Integer, "Whole pounds you contribute to delivery: 0, 30, 60 or 129 (free delivery). Default 0.", "30"), Choices::DeliveryContributions),
    column("sale_price_gbp", Kind::Money, "Sale (reduced) price in GBP, below price_gbp; leave empty for none.", ""),
    column("rrp_gbp", Kind::Money, "Original retail price in GBP, shown struck through.", "1200"),
    column("available_from", Kind::Date, "Date the item can be collected: a date cell, or text 2026-12-01 or 01/12/2026 (day first).", "2026-12-01"),
    column("measurements", Kind::Measurements, "One entry per piece, separated by ;  type:width×depth×height in cm, e.g. 3-Seater:210×95×85; Footstool:60x60x45. Types: see the Instructions sheet.", "3-Seater:210×95×85; Footstool:60x60x45"),
    column("description", Kind::Text, "Plain text or basic HTML, up to 20,000 characters.", "Solid oak frame, feather-wrapped cushions. Collected from our Leeds warehouse."),
    column("images", Kind::List, "Comma-separated image URLs (http or https), up to 20; the first is the cover. Imported after the listing is created.", ""),
    column("sku", Kind::Text, "Your stock keeping unit, up to 64 characters.", "SOFA-0001"),
    column("warehouse_location", Kind::Text, "Bay or aisle, up to 64 characters.", "Bay 4"),
    column("warehouse_id", Kind::Text, "Collection warehouse id (a UUID from your settings). Default: your default warehouse.", ""),
    column("attachment_ids", Kind::Ids, "Comma-separated ids of photos uploaded with upload-photo, instead of images.", ""),
    choose(column("status", Kind::Text, "active (default) or draft.", "active"), Choices::Statuses),
];

/// The import column a header names: matched ignoring case and surrounding spaces.
pub fn by_header(header: &str) -> Option<&'static Column> {
    let header = header.trim();
    COLUMNS.iter().find(|c| c.field.eq_ignore_ascii_case(header))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rehome_domain::listing::LISTING_BODY;

    #[test]
    fn every_column_is_a_listing_field_named_once() {
        for (i, column) in COLUMNS.iter().enumerate() {
            assert!(LISTING_BODY.accepts(column.field), "{} is not a listing field", column.field);
            assert!(COLUMNS[..i].iter().all(|c| c.field != column.field), "{} twice", column.field);
        }
        assert!(by_header("channel").is_none(), "bulk import sets the channel itself");
    }

    #[test]
    fn the_template_example_columns_come_first_in_the_spec_order() {
        let first: Vec<&str> = COLUMNS.iter().take(8).map(|c| c.field).collect();
        assert_eq!(first, ["title", "price_gbp", "category", "condition", "brand", "colour", "fabric", "age_years"]);
    }

    #[test]
    fn hints_fit_excel_input_messages() {
        for column in COLUMNS {
            assert!(column.hint.chars().count() <= 255, "{} hint is too long", column.field);
            assert!(column.field.len() <= 32, "{} is too long for an input title", column.field);
        }
    }

    #[test]
    fn headers_match_ignoring_case_and_surrounding_spaces() {
        assert_eq!(by_header("  Price_GBP ").map(|c| c.field), Some("price_gbp"));
        assert_eq!(by_header("TITLE").map(|c| c.field), Some("title"));
        assert!(by_header("price gbp").is_none());
        assert!(by_header("").is_none());
    }
}
