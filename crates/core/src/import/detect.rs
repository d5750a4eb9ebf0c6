//! Which reader a file needs, told from its bytes (never a name or a declared type).

use super::ImportError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A zip container: checked to be an .xlsx workbook before calamine opens it.
    Xlsx,
    /// Text: UTF-8, UTF-16 with a byte order mark, or Windows-1252.
    Csv,
}

/// Files people upload by mistake, by their first bytes.
const NOT_SPREADSHEETS: &[(&[u8], &str)] = &[
    (b"%PDF", "a PDF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\xFF\xD8\xFF", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"\x1F\x8B", "a gzip archive"),
    (b"{\\rtf", "an RTF document"),
    (b"Rar!", "a RAR archive"),
    (b"7z\xBC\xAF", "a 7-Zip archive"),
];

/// The Compound File header: Excel 97-2003 `.xls`, and also any password-protected Office file.
const COMPOUND_FILE: &[u8] = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1";

pub fn detect(bytes: &[u8]) -> Result<Format, ImportError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ImportError::refused("The file is empty."));
    }
    if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
        return Ok(Format::Xlsx);
    }
    if bytes.starts_with(COMPOUND_FILE) {
        return Err(ImportError::refused(
            "The file is an Excel 97-2003 (.xls) workbook or a password-protected file. Save it as .xlsx without a \
             password, or as CSV, and upload that.",
        ));
    }
    let kind = NOT_SPREADSHEETS.iter().find(|(magic, _)| bytes.starts_with(magic)).map(|(_, kind)| *kind);
    let kind =
        kind.or_else(|| (bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(b"WEBP")).then_some("a WebP image"));
    let utf16 = bytes.starts_with(b"\xFF\xFE") || bytes.starts_with(b"\xFE\xFF");
    let binary = !utf16 && bytes.iter().take(8192).any(|b| *b == 0);
    match kind {
        Some(kind) => Err(not_a_spreadsheet(kind)),
        None if binary => Err(not_a_spreadsheet("a binary file")),
        None => Ok(Format::Csv),
    }
}

fn not_a_spreadsheet(kind: &str) -> ImportError {
    ImportError::refused(format!(
        "The file is {kind}, not a spreadsheet. Upload an .xlsx workbook or a CSV file (start from the bulk template)."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_from_the_bytes() {
        assert_eq!(detect(b"PK\x03\x04rest").unwrap(), Format::Xlsx);
        assert_eq!(detect(b"title,price_gbp\r\n").unwrap(), Format::Csv);
        assert_eq!(detect(b"\xEF\xBB\xBFtitle").unwrap(), Format::Csv);
        assert_eq!(detect(b"\xFF\xFEt\0i\0").unwrap(), Format::Csv, "UTF-16 text is not binary");
        assert_eq!(detect(b"title;price\n\xA3450").unwrap(), Format::Csv, "Windows-1252 text");
    }

    #[test]
    fn other_files_are_refused_by_name() {
        for (bytes, kind) in [
            (&b"%PDF-1.7"[..], "PDF"),
            (b"\x89PNG\r\n", "PNG"),
            (b"RIFF\0\0\0\0WEBPVP8", "WebP"),
            (COMPOUND_FILE, ".xls"),
            (b"\x00\x01\x02", "binary"),
            (b"  \n ", "empty"),
            (b"", "empty"),
        ] {
            let message = detect(bytes).unwrap_err().to_string();
            assert!(message.contains(kind), "{message}");
        }
    }
}
