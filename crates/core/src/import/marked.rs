//! The error workbook (`bulk-validate?format=xlsx`, decisions 11.3): the uploaded sheet
//! written back cell for cell, with an `errors` column beside each row saying what is wrong
//! with it, and each faulty cell filled and given a note naming its reasons.

use rust_xlsxwriter::{Color, Format, Note, Workbook, XlsxError};

use super::cells::Cell;
use super::{Sheet, LISTINGS_SHEET};

pub const ERRORS_FILENAME: &str = "rehome-bulk-errors.xlsx";
/// The header of the column the errors are written in.
pub const ERRORS_HEADER: &str = "errors";

/// What is wrong with one data row: its reasons' sentences in order, each with the 0-based
/// column of the cell it belongs to, when it belongs to one.
#[derive(Debug, Clone)]
pub struct RowMarks {
    pub row: u32,
    pub errors: Vec<(String, Option<u32>)>,
}

/// The sheet's cells where they were, plus the errors column and the marks. CPU-bound.
pub fn error_workbook(sheet: &Sheet, marks: &[RowMarks]) -> Result<Vec<u8>, XlsxError> {
    let mut workbook = Workbook::new();
    let ws = workbook.add_worksheet();
    ws.set_name(LISTINGS_SHEET)?;
    let bold = Format::new().set_bold();
    let faulty = Format::new().set_background_color(Color::RGB(0xFFC7CE)).set_font_color(Color::RGB(0x9C0006));
    let wrapped = Format::new().set_font_color(Color::RGB(0x9C0006)).set_text_wrap();

    let width = sheet
        .rows
        .iter()
        .flat_map(|r| r.cells.iter().map(|(col, _)| col + 1))
        .chain([u32::try_from(sheet.headers.len()).unwrap_or(u32::MAX)])
        .max()
        .unwrap_or(0);
    let errors_col = u16::try_from(width).map_err(|_| XlsxError::RowColumnLimitError)?;
    let header_row = sheet.header_row.saturating_sub(1);
    for (col, header) in (0u16..).zip(&sheet.headers) {
        if !header.is_empty() {
            ws.write_string_with_format(header_row, col, header, &bold)?;
        }
    }
    ws.write_string_with_format(header_row, errors_col, ERRORS_HEADER, &bold)?;
    ws.set_column_width(errors_col, 60)?;

    for row in &sheet.rows {
        let at = row.row.saturating_sub(1);
        let mark = marks.iter().find(|m| m.row == row.row);
        let reasons_in = |col: u32| -> Vec<&str> {
            mark.map(|m| m.errors.iter().filter(|(_, c)| *c == Some(col)).map(|(reason, _)| reason.as_str()).collect())
                .unwrap_or_default()
        };
        for (col, cell) in &row.cells {
            let c = u16::try_from(*col).map_err(|_| XlsxError::RowColumnLimitError)?;
            let reasons = reasons_in(*col);
            let format = (!reasons.is_empty()).then_some(&faulty);
            match (cell, format) {
                (Cell::Number(n), Some(f)) => ws.write_number_with_format(at, c, *n, f)?,
                (Cell::Number(n), None) => ws.write_number(at, c, *n)?,
                (other, Some(f)) => ws.write_string_with_format(at, c, other.text(), f)?,
                (other, None) => ws.write_string(at, c, other.text())?,
            };
        }
        let Some(mark) = mark else { continue };
        // A faulty cell left blank is marked too: that is where the value is missing.
        let mut marked: Vec<u32> = mark.errors.iter().filter_map(|(_, col)| *col).collect();
        marked.sort_unstable();
        marked.dedup();
        for col in marked {
            let c = u16::try_from(col).map_err(|_| XlsxError::RowColumnLimitError)?;
            if !row.cells.iter().any(|(at_col, _)| *at_col == col) {
                ws.write_blank(at, c, &faulty)?;
            }
            ws.insert_note(at, c, &Note::new(reasons_in(col).join("\n")).set_author("rehome"))?;
        }
        let summary: Vec<String> = mark
            .errors
            .iter()
            .map(|(reason, col)| match col.and_then(|c| sheet.headers.get(c as usize)) {
                Some(header) if !header.trim().is_empty() => format!("{}: {reason}", header.trim()),
                _ => reason.clone(),
            })
            .collect();
        ws.write_string_with_format(at, errors_col, summary.join("; "), &wrapped)?;
    }
    workbook.save_to_buffer()
}
