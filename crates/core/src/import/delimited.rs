//! CSV with the csv crate: text as spreadsheet programs save it (a UTF-8 byte order mark,
//! CRLF line ends, quoted cells holding commas and line breaks, Windows-1252 from Excel on
//! Windows, UTF-16 "Unicode text"), separated by commas, semicolons or tabs.

use std::borrow::Cow;

use encoding_rs::{UTF_16BE, UTF_16LE, WINDOWS_1252};

use super::cells::Cell;
use super::grid::Grid;
use super::ImportError;

/// Decodes the bytes of a CSV file and reads it.
pub fn read_bytes(bytes: &[u8]) -> Result<Grid, ImportError> {
    read_text(&decode(bytes))
}

/// UTF-8 when the bytes are UTF-8 (a byte order mark is dropped), UTF-16 when they start
/// with its byte order mark, else Windows-1252, which Excel on Windows writes and which maps
/// every byte to a character.
pub fn decode(bytes: &[u8]) -> Cow<'_, str> {
    if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
        return String::from_utf8_lossy(rest);
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFF\xFE") {
        return UTF_16LE.decode_without_bom_handling(rest).0;
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFE\xFF") {
        return UTF_16BE.decode_without_bom_handling(rest).0;
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => WINDOWS_1252.decode_without_bom_handling(bytes).0,
    }
}

/// Reads CSV text. Rows are numbered as a spreadsheet program shows the file: a blank line
/// is a row of its own, a quoted cell's line breaks stay within its row.
pub fn read_text(text: &str) -> Result<Grid, ImportError> {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(delimiter(text))
        .from_reader(text.as_bytes());
    let mut grid = Grid::default();
    let mut record = csv::StringRecord::new();
    // Rows are counted from line breaks: all of them up to a record's first character,
    // less those inside the quoted cells of the records before it. (The reader's own
    // positions stop short of the line ends and blank lines it skips.)
    let bytes = text.as_bytes();
    let (mut scanned, mut breaks, mut inner_breaks) = (0usize, 0u64, 0u64);
    loop {
        match reader.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(ImportError::refused(format!("The CSV file could not be read: {e}."))),
        }
        let mut start = record.position().map_or(scanned, |p| usize::try_from(p.byte()).unwrap_or(scanned));
        start = start.clamp(scanned, bytes.len());
        while bytes.get(start).is_some_and(|b| matches!(b, b'\r' | b'\n')) {
            start += 1;
        }
        breaks += line_breaks(&bytes[scanned..start]);
        scanned = start;
        let row = u32::try_from(1 + breaks.saturating_sub(inner_breaks)).unwrap_or(u32::MAX);
        for (col, field) in (0..).zip(record.iter()) {
            grid.push(row, col, Cell::Text(field.to_owned()))?;
        }
        inner_breaks += record.iter().map(|field| line_breaks(field.as_bytes())).sum::<u64>();
    }
    Ok(grid)
}

/// Line breaks as a spreadsheet program counts them: `\r\n`, `\n` or a lone `\r`.
fn line_breaks(bytes: &[u8]) -> u64 {
    let lone_cr =
        bytes.windows(2).filter(|w| w[0] == b'\r' && w[1] != b'\n').count() + usize::from(bytes.last() == Some(&b'\r'));
    (bytes.iter().filter(|b| **b == b'\n').count() + lone_cr) as u64
}

/// The separator of the header line: the most frequent of `,` `;` and tab (a comma on a tie).
fn delimiter(text: &str) -> u8 {
    let header = text.lines().find(|line| !line.trim().is_empty()).unwrap_or("");
    let count = |c: char| header.matches(c).count();
    [b';', b'\t'].into_iter().fold(b',', |best, d| if count(d as char) > count(best as char) { d } else { best })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::Sheet;

    fn sheet(text: &str) -> Sheet {
        read_text(text).unwrap().into_sheet().unwrap()
    }

    #[test]
    fn windows_1252_is_decoded_when_the_bytes_are_not_utf8() {
        assert_eq!(decode(b"caf\xE9 \xA3450"), "café £450");
        assert_eq!(decode("café £450".as_bytes()), "café £450");
        assert_eq!(decode(b"\xEF\xBB\xBFtitle"), "title");
        assert_eq!(decode(b"\xFF\xFEt\0\xE9\0"), "té");
    }

    #[test]
    fn quoted_cells_keep_commas_and_line_breaks_and_rows_keep_their_numbers() {
        let text =
            "title,description,price_gbp\r\n\"Sofa, oak\",\"Line one\r\nline two\",\"1,200.00\"\r\n\r\nChair,,90\r\n";
        let sheet = sheet(text);
        let rows: Vec<u32> = sheet.rows.iter().map(|r| r.row).collect();
        assert_eq!(rows, [2, 4], "the blank line is row 3");
        assert_eq!(sheet.rows[0].body["title"], "Sofa, oak");
        assert_eq!(sheet.rows[0].body["description"], "Line one\r\nline two");
        assert_eq!(sheet.rows[0].body["price_gbp"], 1200.0);
    }

    #[test]
    fn leading_blank_lines_lf_and_lone_cr_line_ends_number_rows_as_shown() {
        let rows = |text: &str| sheet(text).rows.iter().map(|r| r.row).collect::<Vec<_>>();
        assert_eq!(rows("\n\ntitle\n\"a\nb\"\n\n\nc\n  \nd\n"), [4, 7, 9]);
        assert_eq!(rows("title\r\r\nx\r\n"), [3]);
        assert_eq!(rows("title\ry\rz"), [2, 3]);
    }

    #[test]
    fn semicolons_and_tabs_separate_when_the_header_uses_them() {
        assert_eq!(sheet("title;faults\nSofa;Dogs,Cats\n").rows[0].body["faults"], serde_json::json!(["Dogs", "Cats"]));
        assert_eq!(sheet("title\tprice_gbp\nSofa\t450\n").rows[0].body["price_gbp"], 450);
        assert_eq!(delimiter("title"), b',');
    }
}
