//! Bounds an XLSX file before calamine opens it. calamine trusts what a workbook declares:
//! it reserves room for the `uniqueCount` of the shared strings and, for a whole-sheet
//! range, allocates every cell of the grid the sheet spans, and the zip reader inflates an
//! entry to whatever size its data gives. A 2 KB file can so ask for terabytes. This reads
//! the central directory (entry count, declared sizes, compression ratios), then inflates
//! every entry once through a limit of its declared size, reading the head of each XML part
//! for a `<dimension ref>` and the shared-strings count.

use std::io::{self, BufRead, BufReader, Cursor, Read};

use quick_xml::events::Event;
use zip::result::ZipError;
use zip::ZipArchive;

use super::ImportError;

/// Most entries an import workbook may hold (one from Excel has about a dozen).
pub const MAX_ENTRIES: usize = 1_000;
/// Most bytes all entries may inflate to in all.
pub const MAX_UNCOMPRESSED_BYTES: u64 = 32 * 1024 * 1024;
/// Largest compression ratio of an entry above [`RATIO_FLOOR`] bytes; spreadsheet XML
/// compresses about 10:1, a zip bomb 1000:1.
pub const MAX_RATIO: u64 = 100;
const RATIO_FLOOR: u64 = 1024 * 1024;
/// Most cells a sheet may declare in its `<dimension ref>` (A1:XFD1048576 declares 17 billion).
pub const MAX_DECLARED_CELLS: u64 = 1_000_000;

fn refused(message: String) -> ImportError {
    ImportError::refused(message)
}

fn unreadable(e: impl std::fmt::Display) -> ImportError {
    refused(format!("The .xlsx file is damaged and cannot be read ({e}). Save it again from your spreadsheet program."))
}

/// Refuses a workbook whose declared or actual content exceeds the bounds above.
pub fn check(bytes: &[u8]) -> Result<(), ImportError> {
    let mut zip = ZipArchive::new(Cursor::new(bytes)).map_err(unreadable)?;
    if zip.len() > MAX_ENTRIES {
        return Err(refused(format!(
            "The .xlsx file holds {} parts; a workbook has at most {MAX_ENTRIES}.",
            zip.len()
        )));
    }
    let mut total: u64 = 0;
    let mut is_workbook = false;
    for i in 0..zip.len() {
        let entry = zip.by_index_raw(i).map_err(unreadable)?;
        let name = entry.name().replace('\\', "/").to_ascii_lowercase();
        is_workbook |= name == "xl/workbook.xml";
        let (size, packed) = (entry.size(), entry.compressed_size().max(1));
        total = total.saturating_add(size);
        if total > MAX_UNCOMPRESSED_BYTES {
            return Err(refused(format!(
                "The .xlsx file unpacks to more than {} MiB; an import workbook needs far less. It may be a zip bomb.",
                MAX_UNCOMPRESSED_BYTES >> 20
            )));
        }
        if size > RATIO_FLOOR && size / packed > MAX_RATIO {
            return Err(refused(format!(
                "The .xlsx part '{}' is compressed {}:1, far beyond what a spreadsheet reaches; it may be a zip bomb.",
                entry.name(),
                size / packed
            )));
        }
    }
    if !is_workbook {
        return Err(refused(not_a_workbook(&mut zip)));
    }
    for i in 0..zip.len() {
        let entry = match zip.by_index(i) {
            Ok(entry) => entry,
            Err(ZipError::UnsupportedArchive(why)) => {
                return Err(refused(format!(
                    "The .xlsx file uses a feature this import cannot read ({why}); a password-protected workbook \
                     must be saved without its password."
                )))
            }
            Err(e) => return Err(unreadable(e)),
        };
        let name = entry.name().replace('\\', "/").to_ascii_lowercase();
        let declared = entry.size();
        let mut limited = BufReader::new(entry.take(declared.saturating_add(1)));
        if name.ends_with(".xml") {
            scan_xml(&mut limited, &name, declared)?;
        }
        io::copy(&mut limited, &mut io::sink()).map_err(unreadable)?;
        // The limit counts down from declared + 1: reaching 0 means the part inflated past its size.
        if limited.get_ref().limit() == 0 {
            return Err(refused(format!(
                "The .xlsx part '{name}' inflates beyond the size it declares; the file is damaged or a zip bomb."
            )));
        }
    }
    Ok(())
}

/// What a zip that is no workbook probably is, for the message.
fn not_a_workbook(zip: &mut ZipArchive<Cursor<&[u8]>>) -> String {
    let mut mimetype = String::new();
    if let Ok(mut entry) = zip.by_name("mimetype") {
        let _ = (&mut entry).take(100).read_to_string(&mut mimetype);
    }
    let kind = if mimetype.contains("opendocument.spreadsheet") {
        "an OpenDocument spreadsheet (.ods)"
    } else if zip.index_for_name("Index/Document.iwa").is_some() {
        "an Apple Numbers file"
    } else if zip.file_names().any(|n| n.eq_ignore_ascii_case("xl/workbook.bin")) {
        "a binary Excel workbook (.xlsb)"
    } else if zip.file_names().any(|n| n.starts_with("word/")) {
        "a Word document"
    } else {
        "a zip archive"
    };
    format!("The file is {kind}, not an .xlsx workbook. Save or export it as .xlsx (Excel) or CSV and upload that.")
}

/// Reads an XML part only as far as calamine trusts its declarations: a worksheet up to its
/// `<sheetData>` (checking any `<dimension ref>`), the shared strings up to their root.
fn scan_xml(input: &mut impl BufRead, name: &str, declared: u64) -> Result<(), ImportError> {
    let mut xml = quick_xml::Reader::from_reader(input);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let element = match xml.read_event_into(&mut buf) {
            Ok(Event::Start(e) | Event::Empty(e)) => e,
            Ok(Event::Eof) => return Ok(()),
            Ok(_) => continue,
            // calamine will report a malformed part; this check has nothing more to see.
            Err(_) => return Ok(()),
        };
        match element.local_name().as_ref() {
            b"sheetData" => return Ok(()),
            b"dimension" => {
                let reference = element.try_get_attribute("ref").ok().flatten().map(|a| a.value.into_owned());
                check_dimension(name, reference.as_deref().unwrap_or_default())?;
            }
            b"sst" if name == "xl/sharedstrings.xml" => {
                // calamine reserves room for `uniqueCount` strings (`count` counts the cells using them).
                let value = element.try_get_attribute("uniqueCount").ok().flatten().map(|a| a.value.into_owned());
                return check_string_count(value.as_deref(), declared);
            }
            _ => {}
        }
    }
}

/// A shared string is at least `<si/>` (5 bytes), so an honest count fits the part's size.
fn check_string_count(value: Option<&[u8]>, declared: u64) -> Result<(), ImportError> {
    let Some(value) = value else {
        return Ok(());
    };
    let count = std::str::from_utf8(value).ok().and_then(|v| v.trim().parse::<u64>().ok());
    match count {
        Some(count) if count <= declared / 5 + 1 => Ok(()),
        _ => Err(refused(format!(
            "The .xlsx shared strings declare {} strings, more than the part can hold; the file is damaged or \
             crafted.",
            String::from_utf8_lossy(value)
        ))),
    }
}

/// Refuses a sheet whose declared range spans more than [`MAX_DECLARED_CELLS`] cells.
fn check_dimension(name: &str, reference: &[u8]) -> Result<(), ImportError> {
    let text = String::from_utf8_lossy(reference);
    let Some(cells) = declared_cells(&text) else {
        return Err(refused(format!("A sheet ({name}) declares an invalid range '{text}'; the file is damaged.")));
    };
    if cells > MAX_DECLARED_CELLS {
        return Err(refused(format!(
            "A sheet of the workbook ({name}) declares the range {text} ({cells} cells); an import sheet may span \
             at most {MAX_DECLARED_CELLS} cells. Delete the cells far below or right of your data, save and upload \
             again."
        )));
    }
    Ok(())
}

/// The number of cells of a range such as `A1:W201` (or a single cell `A1`).
fn declared_cells(reference: &str) -> Option<u64> {
    let (start, end) = reference.trim().split_once(':').unwrap_or((reference.trim(), reference.trim()));
    let (c1, r1) = cell_position(start)?;
    let (c2, r2) = cell_position(end)?;
    Some((c2.abs_diff(c1) + 1) * (r2.abs_diff(r1) + 1))
}

/// `XFD1048576` → (16384, 1048576); `$A$1` is read too. Excel's limits bound both.
fn cell_position(cell: &str) -> Option<(u64, u64)> {
    let cell = cell.replace('$', "");
    let split = cell.find(|c: char| c.is_ascii_digit())?;
    let (letters, digits) = cell.split_at(split);
    if letters.is_empty() || letters.len() > 3 || !letters.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let col = letters.bytes().fold(0u64, |n, b| n * 26 + u64::from(b.to_ascii_uppercase() - b'A' + 1));
    let row: u64 = digits.parse().ok().filter(|r| (1..=1_048_576).contains(r))?;
    (col <= 16_384).then_some((col, row))
}

#[cfg(test)]
mod tests;
