//! The bulk template: a Listings sheet whose header row is the import columns (frozen,
//! styled, with a hint on each header) and whose taxonomy columns are native dropdowns fed
//! from a hidden Lists sheet (an inline list may hold only 255 characters), an Instructions
//! sheet with a reference of the columns and an example row.

use rust_xlsxwriter::{
    Color, DataValidation, DataValidationErrorStyle, Format, FormatBorder, Formula, Workbook, Worksheet, XlsxError,
};

use super::columns::{Choices, Column, Kind, COLUMNS};
use super::{LISTINGS_SHEET, MAX_ROWS};
use rehome_domain::listing::{ListingStatus, DELIVERY_CONTRIBUTIONS_GBP};
use rehome_domain::taxonomy::{ages, CATEGORIES, COLOURS, CONDITIONS, FABRICS, ITEM_TYPES};

pub const XLSX_CONTENT_TYPE: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
pub const TEMPLATE_FILENAME: &str = "rehome-bulk-template.xlsx";
pub const LISTS_SHEET: &str = "Lists";
pub const INSTRUCTIONS_SHEET: &str = "Instructions";

/// One entry of a dropdown.
enum Choice {
    Text(String),
    Number(f64),
}

/// A dropdown's values, and whether the cell must hold one of them (brands may be new).
fn choices(choices: Choices, brands: &[String]) -> (Vec<Choice>, bool) {
    let texts = |values: &mut dyn Iterator<Item = String>| values.map(Choice::Text).collect();
    match choices {
        Choices::Categories => (texts(&mut CATEGORIES.iter().map(|v| v.to_string())), true),
        Choices::Conditions => (texts(&mut CONDITIONS.iter().map(|c| c.value.to_owned())), true),
        Choices::Colours => (texts(&mut COLOURS.iter().map(|v| v.to_string())), true),
        Choices::Fabrics => (texts(&mut FABRICS.iter().map(|v| v.to_string())), true),
        Choices::Ages => (texts(&mut ages().into_iter()), true),
        Choices::DeliveryContributions => {
            (DELIVERY_CONTRIBUTIONS_GBP.iter().map(|n| Choice::Number(f64::from(*n))).collect(), true)
        }
        Choices::Brands => (texts(&mut brands.iter().cloned()), false),
        Choices::Statuses => {
            (texts(&mut [ListingStatus::Active, ListingStatus::Draft].iter().map(|s| s.as_str().to_owned())), true)
        }
    }
}

/// The template for a partner whose manufacturer brands (`options.brands`) are `brands`.
pub fn template(brands: &[String]) -> Result<Vec<u8>, XlsxError> {
    let mut workbook = Workbook::new();
    let mut lists = Worksheet::new();
    lists.set_name(LISTS_SHEET)?.set_hidden(true);
    let mut listings = Worksheet::new();
    listings.set_name(LISTINGS_SHEET)?.set_active(true).set_freeze_panes(1, 0)?;

    let header = Format::new()
        .set_bold()
        .set_font_color(Color::White)
        .set_background_color(Color::RGB(0x2F_5D_50))
        .set_border(FormatBorder::Thin);
    let required_header = header.clone().set_background_color(Color::RGB(0x1B_3A_31));
    let list_header = Format::new().set_bold();

    let last_row = MAX_ROWS as u32;
    let mut list_col: u16 = 0;
    for (col, column) in (0u16..).zip(COLUMNS) {
        let format = if column.required { &required_header } else { &header };
        listings.write_string_with_format(0, col, column.field, format)?;
        listings.set_column_width(col, (column.field.len() as f64 + 4.0).max(16.0))?;
        listings.set_column_format(col, &cell_format(column))?;
        let hint =
            DataValidation::new().allow_any_value().set_input_title(column.field)?.set_input_message(column.hint)?;
        listings.add_data_validation(0, col, 0, col, &hint)?;

        let Some(kind) = column.choices else {
            continue;
        };
        let (values, strict) = choices(kind, brands);
        lists.write_string_with_format(0, list_col, column.field, &list_header)?;
        for (row, value) in (1u32..).zip(&values) {
            match value {
                Choice::Text(text) => lists.write_string(row, list_col, text)?,
                Choice::Number(n) => lists.write_number(row, list_col, *n)?,
            };
        }
        let letter = super::grid::column_name(u32::from(list_col));
        let name = format!("list_{}", column.field);
        workbook.define_name(&name, &format!("={LISTS_SHEET}!${letter}$2:${letter}${}", values.len() + 1))?;
        let (style, error) = if strict {
            (DataValidationErrorStyle::Stop, "Choose a value from the list.")
        } else {
            (DataValidationErrorStyle::Information, "Not in the list: it will be added as a new brand.")
        };
        let dropdown = DataValidation::new()
            .allow_list_formula(Formula::new(format!("={name}")))
            .set_input_title(column.field)?
            .set_input_message(column.hint)?
            .set_error_style(style)
            .set_error_title(column.field)?
            .set_error_message(error)?;
        listings.add_data_validation(1, col, last_row, col, &dropdown)?;
        list_col += 1;
    }

    let mut instructions = Worksheet::new();
    instructions.set_name(INSTRUCTIONS_SHEET)?;
    write_instructions(&mut instructions)?;

    workbook.push_worksheet(listings);
    workbook.push_worksheet(instructions);
    workbook.push_worksheet(lists);
    workbook.save_to_buffer()
}

/// How the Listings sheet formats what a person types: money and counts as numbers, dates
/// as dates, everything else as text (so `00123` and `12,13` stay as typed).
fn cell_format(column: &Column) -> Format {
    match column.kind {
        Kind::Money => Format::new().set_num_format("#,##0.00"),
        Kind::Integer => Format::new().set_num_format("0"),
        Kind::Date => Format::new().set_num_format("yyyy-mm-dd"),
        Kind::Text | Kind::List | Kind::Ids | Kind::Measurements => Format::new().set_num_format("@"),
    }
}

fn write_instructions(sheet: &mut Worksheet) -> Result<(), XlsxError> {
    let title = Format::new().set_bold().set_font_size(14);
    let bold = Format::new().set_bold();
    let wrap = Format::new().set_text_wrap();
    let required: Vec<&str> = COLUMNS.iter().filter(|c| c.required).map(|c| c.field).collect();
    let lines = [
        "Fill one row per listing on the Listings sheet, below its header row. Keep the headers as they are; \
         optional columns may be removed or moved. Headers are matched ignoring case."
            .to_owned(),
        format!("Required columns: {}.", required.join(", ")),
        "Select a header cell on the Listings sheet to see what to enter in its column; the reference below \
         says the same."
            .to_owned(),
        "price_gbp is the regular price. sale_price_gbp, when set, is the reduced price buyers pay, below \
         price_gbp; rrp_gbp is the original retail price, shown struck through."
            .to_owned(),
        format!(
            "At most {MAX_ROWS} listings per file; blank rows are skipped. Check the file with \
             POST /v1/listings/bulk-validate, then create the listings with POST /v1/listings/bulk-commit \
             (this .xlsx, or the same columns as CSV)."
        ),
        "Every listing is created on the clearance channel, active unless status says draft, collected from \
         your default warehouse unless warehouse_id names another."
            .to_owned(),
        "Prices: numbers or text such as £1,200.00, at most two decimals. Lists (faults, exposed_to, images, \
         attachment_ids): values separated by commas."
            .to_owned(),
        format!(
            "measurements: one entry per piece, separated by semicolons, each type:width×depth×height in \
             centimetres (x works too). Piece types: {}.",
            ITEM_TYPES.join(", ")
        ),
        "available_from: a date cell, or text 2026-12-01 or 01/12/2026 (day first, as in the UK).".to_owned(),
        format!(
            "A checked file comes back with each problem beside its row and on its cell, in words, e.g. \
             row 5: {}",
            rehome_domain::words::sentence(
                Some(&rehome_domain::listing::LISTING_BODY),
                "price_gbp",
                "price_gbp_invalid"
            )
            .unwrap_or_default()
        ),
    ];
    sheet.set_column_width(0, 26)?;
    sheet.set_column_width(1, 12)?;
    sheet.set_column_width(2, 100)?;
    sheet.write_string_with_format(0, 0, "rehome bulk import", &title)?;
    let mut row = 2;
    for line in &lines {
        sheet.write_string_with_format(row, 0, line, &wrap)?;
        row += 1;
    }

    row += 1;
    sheet.write_string_with_format(row, 0, "Column", &bold)?;
    sheet.write_string_with_format(row, 1, "Required", &bold)?;
    sheet.write_string_with_format(row, 2, "What to enter", &bold)?;
    for column in COLUMNS {
        row += 1;
        sheet.write_string(row, 0, column.field)?;
        sheet.write_string(row, 1, if column.required { "yes" } else { "" })?;
        sheet.write_string_with_format(row, 2, column.hint, &wrap)?;
    }

    row += 2;
    sheet.write_string_with_format(row, 0, "Example row (copy it to the Listings sheet and change it):", &bold)?;
    for (col, column) in (0u16..).zip(COLUMNS) {
        sheet.write_string_with_format(row + 1, col, column.field, &bold)?;
        if column.example.is_empty() {
            continue;
        }
        match (column.kind, column.example.parse::<f64>()) {
            (Kind::Money | Kind::Integer, Ok(n)) => sheet.write_number(row + 2, col, n)?,
            _ => sheet.write_string(row + 2, col, column.example)?,
        };
    }
    Ok(())
}
