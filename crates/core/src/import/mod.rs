//! Bulk import files: reading XLSX and CSV into listing bodies for the one listing
//! validator, and writing the XLSX template. No HTTP here.
//!
//! A file is bounded before any parser sees it: at most [`MAX_FILE_BYTES`] decoded, an XLSX
//! pre-scanned ([`guard`]) for its zip directory and declared sheet ranges, and at most
//! [`MAX_ROWS`] data rows, [`grid::MAX_COLUMNS`] columns and [`grid::MAX_TEXT_BYTES`] of text.

mod body;
pub mod cells;
pub mod columns;
mod delimited;
mod detect;
pub mod grid;
pub mod guard;
mod marked;
mod template;
mod xlsx;

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::{alphabet, Engine};
use serde_json::{Map, Value};

pub use body::{read_form, read_upload, BulkUpload, Mode, UploadRefused, BULK_BODY};
pub use cells::Cell;
pub use marked::{error_workbook, RowMarks, ERRORS_FILENAME, ERRORS_HEADER};
pub use template::{template, TEMPLATE_FILENAME, XLSX_CONTENT_TYPE};
pub use xlsx::LISTINGS_SHEET;

pub use rehome_domain::limits::MAX_ROWS;

/// Largest file accepted, decoded: 5 MiB. A 200-row workbook is tens of kilobytes; a CSV of
/// 200 rows with long descriptions under a megabyte.
pub const MAX_FILE_BYTES: usize = 5 * 1024 * 1024;

/// Why a file was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    /// The file is not one this import reads, or exceeds a bound; the message says which
    /// and what to do.
    #[error("{0}")]
    Refused(String),
    /// More than [`MAX_ROWS`] data rows: the whole file is refused.
    #[error("the file has more than {MAX_ROWS} data rows")]
    TooManyRows,
}

impl ImportError {
    pub fn refused(message: impl Into<String>) -> Self {
        Self::Refused(message.into())
    }
}

/// A file as uploaded.
#[derive(Debug, Clone)]
pub enum Upload {
    /// XLSX or CSV bytes, told apart by their content.
    File(Vec<u8>),
    /// CSV text (the legacy `csv_text`).
    CsvText(String),
}

impl Upload {
    /// Decodes base64 (standard or URL-safe alphabet, padded or not, line breaks allowed, an
    /// optional `data:...;base64,` prefix), refusing more than [`MAX_FILE_BYTES`] before
    /// decoding.
    pub fn from_base64(text: &str) -> Result<Self, ImportError> {
        let text = match text.trim_start().strip_prefix("data:") {
            Some(rest) => rest.split_once(";base64,").map_or(text, |(_, data)| data),
            None => text,
        };
        let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        if compact.len() / 4 * 3 > MAX_FILE_BYTES + 3 {
            return Err(too_large());
        }
        let config = GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
        let bytes = GeneralPurpose::new(&alphabet::STANDARD, config)
            .decode(&compact)
            .or_else(|_| GeneralPurpose::new(&alphabet::URL_SAFE, config).decode(&compact))
            .map_err(|_| ImportError::refused("file_b64 is not valid base64."))?;
        Ok(Self::File(bytes))
    }
}

pub(crate) fn too_large() -> ImportError {
    ImportError::refused(format!(
        "The file is larger than {} MiB; split it or remove images and unused sheets.",
        MAX_FILE_BYTES >> 20
    ))
}

/// A file read as listing bodies.
#[derive(Debug, Clone, PartialEq)]
pub struct Sheet {
    /// The header row as uploaded, up to its last non-blank cell.
    pub headers: Vec<String>,
    /// Headers that name no import column, and `(column X)` for data under no header, in
    /// column order: their cells are not imported.
    pub unknown_columns: Vec<String>,
    /// The non-blank data rows, in order.
    pub rows: Vec<SheetRow>,
    /// The header's row number as the sheet shows it.
    pub header_row: u32,
    /// Each import column found: its field and its 0-based column in the sheet.
    pub columns: Vec<(&'static str, u32)>,
}

impl Sheet {
    /// The sheet cell of `field` in data row `row`: its header as uploaded, its A1
    /// reference, and its content as read (empty for a blank cell). `None` when the sheet
    /// has no such column.
    pub fn cell_of(&self, row: &SheetRow, field: &str) -> Option<CellRef> {
        let (_, col) = self.columns.iter().find(|(f, _)| *f == field)?;
        let header = self.headers.get(*col as usize)?.trim().to_owned();
        let value = row.cells.iter().find(|(c, _)| c == col).map(|(_, cell)| cell.text()).unwrap_or_default();
        Some(CellRef { column: header, cell: format!("{}{}", grid::column_name(*col), row.row), col: *col, value })
    }
}

/// Where in the sheet a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellRef {
    /// The column's header as uploaded.
    pub column: String,
    /// A1 reference, as the sheet shows it (`C7`).
    pub cell: String,
    /// 0-based column.
    pub col: u32,
    /// The cell's content as read; empty for a blank cell.
    pub value: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SheetRow {
    /// The row's number as a spreadsheet program shows it (the header is usually 1).
    pub row: u32,
    /// The `title` cell, trimmed, when not blank.
    pub title: Option<String>,
    /// The row as a create-listing body: one field per non-blank cell of an import column.
    pub body: Map<String, Value>,
    /// Every non-blank cell of the row as read (0-based column), other columns' included.
    pub cells: Vec<(u32, Cell)>,
}

/// Reads an uploaded file. CPU-bound: run it off the async workers.
pub fn read(upload: &Upload) -> Result<Sheet, ImportError> {
    let grid = match upload {
        Upload::CsvText(text) if text.len() > MAX_FILE_BYTES => return Err(too_large()),
        Upload::CsvText(text) => delimited::read_text(text)?,
        Upload::File(bytes) if bytes.len() > MAX_FILE_BYTES => return Err(too_large()),
        Upload::File(bytes) => match detect::detect(bytes)? {
            detect::Format::Xlsx => xlsx::read(bytes)?,
            detect::Format::Csv => delimited::read_bytes(bytes)?,
        },
    };
    grid.into_sheet()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_read_in_the_forms_clients_send() {
        let expected = b"title\n\xFF\xFE".to_vec();
        for text in
            ["dGl0bGUK//4=", "dGl0bGUK//4", "dGl0bGUK__4=", "dGl0\r\nbGUK//4=", "data:text/csv;base64,dGl0bGUK//4="]
        {
            match Upload::from_base64(text) {
                Ok(Upload::File(bytes)) => assert_eq!(bytes, expected, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
        assert!(Upload::from_base64("not base64!").is_err());
    }

    #[test]
    fn files_over_the_cap_are_refused_before_decoding_or_reading() {
        let text = "A".repeat((MAX_FILE_BYTES + 8) / 3 * 4);
        assert!(Upload::from_base64(&text).unwrap_err().to_string().contains("5 MiB"));
        let big = Upload::File(vec![b'a'; MAX_FILE_BYTES + 1]);
        assert!(read(&big).unwrap_err().to_string().contains("5 MiB"));
    }
}
