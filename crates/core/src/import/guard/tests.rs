use std::io::{Cursor, Write};

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use super::*;

const WORKBOOK: &str = "<workbook/>";

fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    let options =
        SimpleFileOptions::default().compression_method(CompressionMethod::Deflated).compression_level(Some(1));
    for (name, data) in entries {
        zip.start_file(*name, options).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

fn sheet(dimension: &str) -> Vec<u8> {
    format!(
        r#"<?xml version="1.0"?><worksheet xmlns="x"><dimension ref="{dimension}"/><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>title</t></is></c></row></sheetData></worksheet>"#
    )
    .into_bytes()
}

fn message(result: Result<(), ImportError>) -> String {
    result.unwrap_err().to_string()
}

#[test]
fn a_small_honest_workbook_passes() {
    let file = zip_of(&[("xl/workbook.xml", WORKBOOK.as_bytes()), ("xl/worksheets/sheet1.xml", &sheet("A1:W201"))]);
    check(&file).unwrap();
}

#[test]
fn a_sheet_declaring_the_whole_grid_is_refused() {
    let file =
        zip_of(&[("xl/workbook.xml", WORKBOOK.as_bytes()), ("xl/worksheets/sheet1.xml", &sheet("A1:XFD1048576"))]);
    let message = message(check(&file));
    assert!(message.contains("A1:XFD1048576") && message.contains("17179869184 cells"), "{message}");
}

#[test]
fn a_prefixed_or_unreadable_dimension_is_seen_too() {
    let prefixed = br#"<x:worksheet xmlns:x="x"><x:dimension ref="$A$1:$XFD$100"/><x:sheetData/></x:worksheet>"#;
    let file = zip_of(&[("xl/workbook.xml", WORKBOOK.as_bytes()), ("xl/worksheets/sheet1.xml", prefixed)]);
    assert!(message(check(&file)).contains("1638400 cells"));
    let file = zip_of(&[("xl/workbook.xml", WORKBOOK.as_bytes()), ("xl/worksheets/sheet1.xml", &sheet("A0:B2"))]);
    assert!(message(check(&file)).contains("invalid range"));
}

#[test]
fn declared_ranges_count_their_cells() {
    assert_eq!(declared_cells("A1"), Some(1));
    assert_eq!(declared_cells("A1:W201"), Some(23 * 201));
    assert_eq!(declared_cells("B2:A1"), Some(4));
    assert_eq!(declared_cells("A1:XFD1048576"), Some(16_384 * 1_048_576));
    for bad in ["", "A", "1", "A1:", "AAAA1", "A1048577", "XFE1", "A-1", "Ä1"] {
        assert_eq!(declared_cells(bad), None, "{bad}");
    }
}

#[test]
fn a_shared_strings_count_beyond_its_part_is_refused() {
    let strings = br#"<sst xmlns="x" count="2" uniqueCount="99999999999"><si><t>a</t></si></sst>"#;
    let file = zip_of(&[("xl/workbook.xml", WORKBOOK.as_bytes()), ("xl/sharedStrings.xml", strings)]);
    assert!(message(check(&file)).contains("99999999999"));
    let honest = br#"<sst xmlns="x" count="900" uniqueCount="1"><si><t>a</t></si></sst>"#;
    check(&zip_of(&[("xl/workbook.xml", WORKBOOK.as_bytes()), ("xl/sharedStrings.xml", honest)])).unwrap();
}

#[test]
fn a_zip_bomb_is_refused_by_its_declared_size_and_ratio() {
    let zeros = vec![0u8; 40 * 1024 * 1024];
    let file = zip_of(&[("xl/workbook.xml", WORKBOOK.as_bytes()), ("xl/worksheets/sheet1.xml", &zeros)]);
    assert!(file.len() < 1024 * 1024, "the bomb is small: {}", file.len());
    assert!(message(check(&file)).contains("zip bomb"));
    let ratio = zip_of(&[("xl/workbook.xml", WORKBOOK.as_bytes()), ("xl/media/big.bin", &zeros[..8 * 1024 * 1024])]);
    assert!(message(check(&ratio)).contains("compressed"), "ratio alone");
}

/// The sizes of the first entry named `name`, rewritten in its local header and its
/// central directory record: a bomb that lies about what it inflates to.
fn declare_size(file: &mut [u8], name: &str, size: u32) {
    let mut patched = 0;
    for at in 0..file.len().saturating_sub(46) {
        let (header, name_at, size_at) = match &file[at..at + 4] {
            b"PK\x03\x04" => ("local", at + 30, at + 22),
            b"PK\x01\x02" => ("central", at + 46, at + 24),
            _ => continue,
        };
        let name_len = u16::from_le_bytes([
            file[at + if header == "local" { 26 } else { 28 }],
            file[at + if header == "local" { 27 } else { 29 }],
        ]) as usize;
        if file.get(name_at..name_at + name_len) == Some(name.as_bytes()) {
            file[size_at..size_at + 4].copy_from_slice(&size.to_le_bytes());
            patched += 1;
        }
    }
    assert_eq!(patched, 2, "local header and central record");
}

#[test]
fn an_entry_that_inflates_beyond_its_declared_size_is_refused() {
    let zeros = vec![b' '; 4 * 1024 * 1024];
    let mut file = zip_of(&[("xl/workbook.xml", WORKBOOK.as_bytes()), ("xl/worksheets/sheet1.xml", &zeros)]);
    declare_size(&mut file, "xl/worksheets/sheet1.xml", 1000);
    assert!(message(check(&file)).contains("inflates beyond"));
}

#[test]
fn a_zip_that_is_no_workbook_says_what_it_is() {
    let ods = zip_of(&[("mimetype", b"application/vnd.oasis.opendocument.spreadsheet"), ("content.xml", b"<x/>")]);
    assert!(message(check(&ods)).contains("OpenDocument"));
    let docx = zip_of(&[("word/document.xml", b"<x/>")]);
    assert!(message(check(&docx)).contains("Word"));
    assert!(message(check(b"PK\x03\x04 truncated")).contains("damaged"));
}

#[test]
fn too_many_entries_are_refused() {
    let names: Vec<String> = (0..=MAX_ENTRIES).map(|i| format!("xl/media/{i}.txt")).collect();
    let mut entries: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"x"[..])).collect();
    entries.push(("xl/workbook.xml", WORKBOOK.as_bytes()));
    assert!(message(check(&zip_of(&entries))).contains("parts"));
}
