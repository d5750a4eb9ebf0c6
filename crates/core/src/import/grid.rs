//! The non-blank cells of a sheet, collected within bounds whatever reader found them, and
//! their reading as a header row and listing bodies.

use std::collections::BTreeMap;

use serde_json::Map;

use super::cells::{Cell, Epoch};
use super::columns::{self, Column};
use super::{ImportError, Sheet, SheetRow, MAX_ROWS};

/// Most columns a sheet may use; the import has 23.
pub const MAX_COLUMNS: u32 = 256;

/// Most text the kept cells may hold in all. An XLSX cell can repeat one long shared string
/// many times, so this, not the file size, bounds the memory of the cells.
pub const MAX_TEXT_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Default)]
pub struct Grid {
    /// Spreadsheet row number (1-based) → (0-based column, cell), non-blank cells only.
    rows: BTreeMap<u32, Vec<(u32, Cell)>>,
    text_bytes: usize,
    pub epoch: Epoch,
}

impl Grid {
    pub fn new(epoch: Epoch) -> Self {
        Self { epoch, ..Self::default() }
    }

    /// Keeps a cell. Refuses a file with more than [`MAX_ROWS`] data rows (blank rows are
    /// never kept, so never counted), data beyond [`MAX_COLUMNS`], or too much text.
    pub fn push(&mut self, row: u32, col: u32, cell: Cell) -> Result<(), ImportError> {
        if cell.is_blank() {
            return Ok(());
        }
        if col >= MAX_COLUMNS {
            return Err(ImportError::refused(format!(
                "Cell {}{row} is beyond column {}: an import sheet has at most {MAX_COLUMNS} columns. Remove what is \
                 there and upload again.",
                column_name(col),
                column_name(MAX_COLUMNS - 1)
            )));
        }
        if let Cell::Text(text) = &cell {
            self.text_bytes += text.len();
            if self.text_bytes > MAX_TEXT_BYTES {
                return Err(ImportError::refused(format!(
                    "The sheet holds more than {} MiB of text; an import file of {MAX_ROWS} rows needs far less.",
                    MAX_TEXT_BYTES >> 20
                )));
            }
        }
        // The header row and MAX_ROWS data rows.
        if !self.rows.contains_key(&row) && self.rows.len() > MAX_ROWS {
            return Err(ImportError::TooManyRows);
        }
        self.rows.entry(row).or_default().push((col, cell));
        Ok(())
    }

    /// The first non-blank row is the header; each later non-blank row becomes a listing body.
    pub fn into_sheet(self) -> Result<Sheet, ImportError> {
        let mut rows = self.rows.into_iter();
        let Some((header_row, header_cells)) = rows.next() else {
            return Err(ImportError::refused(
                "The file is empty: it needs a header row naming the columns (title, price_gbp, ...) and a row per \
                 listing.",
            ));
        };
        let width = header_cells.iter().map(|(col, _)| col + 1).max().unwrap_or(0);
        let mut headers = vec![String::new(); width as usize];
        for (col, cell) in header_cells {
            headers[col as usize] = cell.text();
        }

        let mut mapped: Vec<Option<&'static Column>> = vec![None; width as usize];
        let mut unknown: BTreeMap<u32, String> = BTreeMap::new();
        for (col, header) in (0..).zip(&headers) {
            if header.trim().is_empty() {
                continue;
            }
            match columns::by_header(header) {
                Some(column) => {
                    if let Some(first) = mapped.iter().position(|m| m.is_some_and(|m| m.field == column.field)) {
                        return Err(ImportError::refused(format!(
                            "The column '{}' appears twice (columns {} and {}); keep one.",
                            column.field,
                            column_name(first as u32),
                            column_name(col)
                        )));
                    }
                    mapped[col as usize] = Some(column);
                }
                None => {
                    unknown.insert(col, header.trim().to_owned());
                }
            }
        }
        if mapped.iter().all(Option::is_none) {
            return Err(ImportError::refused(
                "The first row must be the header row naming the import columns (title, price_gbp, category, \
                 condition, faults, ...); none of its cells names one. Start from the bulk template.",
            ));
        }

        let epoch = self.epoch;
        let rows = rows
            .map(|(row, cells)| {
                let mut body = Map::new();
                let mut title = None;
                let kept = cells.clone();
                for (col, cell) in cells {
                    match mapped.get(col as usize).copied().flatten() {
                        Some(column) => {
                            if column.field == "title" {
                                title = Some(cell.text().trim().to_owned());
                            }
                            body.insert(column.field.to_owned(), cell.value(column.kind, epoch));
                        }
                        // Data under no header is reported, never silently dropped.
                        None if !unknown.contains_key(&col) => {
                            unknown.insert(col, format!("(column {})", column_name(col)));
                        }
                        None => {}
                    }
                }
                SheetRow { row, title: title.filter(|t| !t.is_empty()), body, cells: kept }
            })
            .collect();
        let columns = (0..).zip(&mapped).filter_map(|(col, m)| m.map(|m| (m.field, col))).collect();
        Ok(Sheet { headers, unknown_columns: unknown.into_values().collect(), rows, header_row, columns })
    }
}

/// The spreadsheet letters of a 0-based column: 0 → `A`, 26 → `AA`.
pub fn column_name(col: u32) -> String {
    let mut n = col + 1;
    let mut letters = Vec::new();
    while n > 0 {
        let rem = (n - 1) % 26;
        letters.push(b'A' + rem as u8);
        n = (n - 1) / 26;
    }
    letters.iter().rev().map(|&b| b as char).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn text(s: &str) -> Cell {
        Cell::Text(s.to_owned())
    }

    fn grid(rows: &[(u32, &[&str])]) -> Grid {
        let mut grid = Grid::default();
        for (row, cells) in rows {
            for (col, cell) in (0..).zip(*cells) {
                grid.push(*row, col, text(cell)).unwrap();
            }
        }
        grid
    }

    #[test]
    fn column_names_are_spreadsheet_letters() {
        assert_eq!(column_name(0), "A");
        assert_eq!(column_name(25), "Z");
        assert_eq!(column_name(26), "AA");
        assert_eq!(column_name(255), "IV");
        assert_eq!(column_name(16_383), "XFD");
    }

    #[test]
    fn rows_keep_their_spreadsheet_numbers_and_blank_rows_are_skipped() {
        let sheet = grid(&[(1, &["Title", "price_gbp"]), (2, &["Sofa", "450"]), (3, &["  ", ""]), (5, &["Chair", ""])])
            .into_sheet()
            .unwrap();
        assert_eq!(sheet.headers, ["Title", "price_gbp"]);
        let numbers: Vec<u32> = sheet.rows.iter().map(|r| r.row).collect();
        assert_eq!(numbers, [2, 5]);
        assert_eq!(sheet.rows[0].body, *json!({"title": "Sofa", "price_gbp": 450}).as_object().unwrap());
        assert_eq!(sheet.rows[1].title.as_deref(), Some("Chair"));
    }

    #[test]
    fn unknown_headers_and_data_under_no_header_are_reported() {
        let sheet =
            grid(&[(1, &["title", "", "colour ", "Notes"]), (2, &["Sofa", "x", "Grey", "n"])]).into_sheet().unwrap();
        assert_eq!(sheet.unknown_columns, ["(column B)", "Notes"]);
        assert_eq!(sheet.rows[0].body.len(), 2);
    }

    #[test]
    fn a_duplicate_column_or_no_import_column_refuses_the_file() {
        let twice = grid(&[(1, &["title", "TITLE"])]).into_sheet().unwrap_err();
        assert!(twice.to_string().contains("columns A and B"), "{twice}");
        let none = grid(&[(1, &["Sofa", "450"]), (2, &["Chair", "90"])]).into_sheet().unwrap_err();
        assert!(none.to_string().contains("header row"), "{none}");
        assert!(Grid::default().into_sheet().unwrap_err().to_string().contains("empty"));
    }

    #[test]
    fn more_than_max_rows_data_rows_are_refused_but_blank_rows_do_not_count() {
        let mut grid = Grid::default();
        grid.push(1, 0, text("title")).unwrap();
        for row in 0..MAX_ROWS as u32 {
            grid.push(2 + 2 * row, 0, text("Sofa")).unwrap();
            grid.push(3 + 2 * row, 0, text(" ")).unwrap();
        }
        assert!(matches!(grid.push(1_000, 0, text("One more")), Err(ImportError::TooManyRows)));
        assert!(grid.push(2, 1, text("same row")).is_ok());
    }

    #[test]
    fn data_beyond_the_last_column_is_refused_with_its_cell() {
        let err = Grid::default().push(7, MAX_COLUMNS, text("stray")).unwrap_err();
        assert!(err.to_string().contains("IW7"), "{err}");
        assert!(Grid::default().push(7, 16_383, text("")).is_ok(), "blank cells are never kept");
    }

    proptest::proptest! {
        /// Letters read back base 26 without a zero digit (`A` = 1 … `Z` = 26) give the column.
        #[test]
        fn column_letters_read_back_as_their_column(col in 0u32..16_384) {
            let name = column_name(col);
            proptest::prop_assert!(name.bytes().all(|b| b.is_ascii_uppercase()));
            let back = name.bytes().fold(0u32, |n, b| n * 26 + u32::from(b - b'A') + 1) - 1;
            proptest::prop_assert_eq!(back, col);
        }
    }
}
