//! XLSX with calamine, streaming the cells of one sheet into a [`Grid`]. Cells are read one
//! by one, never as a `Range`, whose grid calamine sizes from the cells' positions.

use std::io::Cursor;

use calamine::{DataRef, Reader, SheetType, SheetVisible, Xlsx};

use super::cells::{Cell, Epoch};
use super::grid::Grid;
use super::{guard, ImportError};

/// The sheet of the template that holds listings; other workbooks are read from their first
/// visible worksheet.
pub const LISTINGS_SHEET: &str = "Listings";

pub fn read(bytes: &[u8]) -> Result<Grid, ImportError> {
    guard::check(bytes)?;
    let damaged = |e: calamine::XlsxError| {
        ImportError::refused(format!(
            "The .xlsx file could not be read ({e}). Save it again from your spreadsheet program, or as CSV."
        ))
    };
    let mut workbook = Xlsx::new(Cursor::new(bytes)).map_err(damaged)?;
    let sheets = workbook.sheets_metadata();
    let worksheets = || sheets.iter().filter(|s| s.typ == SheetType::WorkSheet);
    let sheet = worksheets()
        .find(|s| s.name.eq_ignore_ascii_case(LISTINGS_SHEET))
        .or_else(|| worksheets().find(|s| s.visible == SheetVisible::Visible))
        .or_else(|| worksheets().next())
        .map(|s| s.name.clone())
        .ok_or_else(|| ImportError::refused("The workbook has no worksheet."))?;
    let mut grid = Grid::new(if workbook.has_1904_epoch() { Epoch::Excel1904 } else { Epoch::Excel1900 });
    let mut cells = workbook.worksheet_cells_reader(&sheet).map_err(damaged)?;
    while let Some(cell) = cells.next_cell().map_err(damaged)? {
        let (row, col) = cell.get_position();
        if let Some(value) = convert(cell.get_value()) {
            grid.push(row.saturating_add(1), col, value)?;
        }
    }
    Ok(grid)
}

/// A calamine value as a [`Cell`]; `None` for an empty one.
fn convert(value: &DataRef<'_>) -> Option<Cell> {
    Some(match value {
        DataRef::Empty => return None,
        DataRef::String(s) | DataRef::DateTimeIso(s) | DataRef::DurationIso(s) => Cell::Text(s.clone()),
        DataRef::SharedString(s) => Cell::Text((*s).to_owned()),
        DataRef::Float(f) => Cell::Number(*f),
        DataRef::Int(i) => Cell::Number(*i as f64),
        DataRef::Bool(b) => Cell::Text(if *b { "TRUE" } else { "FALSE" }.to_owned()),
        DataRef::Error(e) => Cell::Text(e.to_string()),
        // Within Excel's own date range (to 9999-12-31) only, so the conversion never overflows.
        DataRef::DateTime(dt) if dt.is_datetime() && (1.0..2_958_466.0).contains(&dt.as_f64()) => {
            let (year, month, day, ..) = dt.to_ymd_hms_milli();
            chrono::NaiveDate::from_ymd_opt(i32::from(year), u32::from(month), u32::from(day))
                .map_or(Cell::Number(dt.as_f64()), Cell::Date)
        }
        DataRef::DateTime(dt) => Cell::Number(dt.as_f64()),
    })
}
