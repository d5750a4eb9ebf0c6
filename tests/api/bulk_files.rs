//! Bulk import files as partners' programs write them: CSV variants, cell types, row counts,
//! every reason code a cell can give, and files refused whole (bad payloads, other file
//! types, zip bombs and oversized sheets).

use std::io::{Cursor, Write};
use std::time::Instant;

use rust_xlsxwriter::Workbook;
use serde_json::{json, Value};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use crate::bulk::{b64, commit, file, validate, xlsx, C, COLUMNS};
use crate::helpers::{assert_error, spawn_app, TestApp};
use crate::listings::list;

const HEADER: &str = "title,price_gbp,category,condition,faults";

fn rows(report: &Value) -> Vec<(u64, Value)> {
    report["rows"].as_array().unwrap().iter().map(|r| (r["row"].as_u64().unwrap(), r["errors"].clone())).collect()
}

async fn bad_file(app: &TestApp, key: &str, body: &Value) -> String {
    let error = assert_error(app.post("/v1/listings/bulk-validate", key, body).await, 400, "bad_file").await;
    error["message"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn csv_with_a_bom_crlf_and_quoted_commas_and_line_breaks_is_read() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let text = "\u{FEFF}title,price_gbp,category,condition,faults,description,exposed_to\r\n\
                \"Sofa, oak\",\"1,200.00\",Sofa Beds,excellent,None,\"Line one\r\nline two, with a comma\",\"Dogs, Cats\"\r\n\
                \r\n\
                Chair,90,Armchairs,fair,None,,\r\n";
    let report = validate(&app, &partner.key, &file(text.as_bytes())).await;
    assert_eq!(report["headers"][0], "title", "the BOM is not part of the first header");
    assert_eq!(rows(&report), [(2, json!([])), (4, json!([]))], "{report}");
    let done = commit(&app, &partner.key, &json!({"csv_text": text})).await;
    let id = done["rows"][0]["product_id"].as_i64().unwrap();
    let detail = crate::helpers::json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    assert_eq!(detail["title"], "Sofa, oak");
    assert_eq!(detail["regular_price_pence"], 120_000);
    assert_eq!(detail["description"], "Line one\r\nline two, with a comma");
    assert_eq!(detail["exposed_to"], json!(["Dogs", "Cats"]));
}

#[tokio::test]
async fn windows_1252_csv_from_excel_keeps_its_pound_signs_and_accents() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    // "Canapé", "£450", "Bouclé" as Excel on Windows saves them (0xE9 = é, 0xA3 = £), semicolon-separated.
    let bytes = b"title;price_gbp;category;condition;faults;fabric\r\nCanap\xE9 d\xE9co;\xA3450;Sofa Beds;excellent;None;Boucl\xE9\r\n";
    let report = commit(&app, &partner.key, &file(bytes)).await;
    assert_eq!(report["rows"][0]["title"], "Canapé déco", "{report}");
    let id = report["rows"][0]["product_id"].as_i64().unwrap();
    let detail = crate::helpers::json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    assert_eq!((detail["price"].clone(), detail["fabric"].clone()), (json!(450.0), json!("Bouclé")));
}

#[tokio::test]
async fn xlsx_cells_of_every_type_are_read_as_the_sheet_shows_them() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let header = ["title", "price_gbp", "category", "condition", "faults", "quantity", "available_from", "sku"];
    let row = |title, price, quantity, date| {
        vec![C::S(title), price, C::S("Armchairs"), C::S("fair"), C::S("None"), quantity, date, C::N(7.0)]
    };
    let file_bytes = xlsx(&[
        header.iter().map(|h| C::S(h)).collect(),
        row("number", C::N(19.99), C::N(2.0), C::D(2027, 1, 31)),
        vec![],
        row("money text", C::S("£1,200.00"), C::S("3"), C::N(46_418.0)),
        row("plain text", C::S("1200"), C::N(1.0), C::S("31/01/2027")),
        row("bad", C::S("12,50"), C::N(2.5), C::S("31/02/2027")),
    ]);
    let report = validate(&app, &partner.key, &file(&file_bytes)).await;
    assert_eq!(
        rows(&report),
        [
            (2, json!([])),
            (4, json!([])),
            (5, json!([])),
            (6, json!(["price_gbp_invalid", "available_from_invalid", "quantity_invalid"])),
        ],
        "{report}"
    );
    let done = commit(&app, &partner.key, &file(&file_bytes)).await;
    for (i, pence) in [(0, 1999), (1, 120_000), (2, 120_000)] {
        let id = done["rows"][i]["product_id"].as_i64().unwrap();
        let detail = crate::helpers::json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
        assert_eq!(detail["regular_price_pence"], pence);
        assert_eq!(detail["available_from"], "2027-01-31");
        assert_eq!(detail["sku"], "7");
    }
}

/// A file of valid rows; `extra` lines are appended as they are.
fn csv_rows(count: usize, extra: &str) -> String {
    let mut text = format!("{HEADER}\n");
    for i in 0..count {
        text.push_str(&format!("Sofa {i},450,Sofa Beds,excellent,None\n{extra}"));
    }
    text
}

#[tokio::test]
async fn two_hundred_rows_are_accepted_and_blank_rows_do_not_count() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let report = validate(&app, &partner.key, &json!({"csv_text": csv_rows(200, "\n,,,,\n  ,\n")})).await;
    assert_eq!((report["row_count"].clone(), report["error_count"].clone()), (json!(200), json!(0)));
    assert_eq!(report["rows"][1]["row"], 6, "blank rows keep their numbers");
    let done = commit(&app, &partner.key, &file(csv_rows(200, "").as_bytes())).await;
    assert_eq!(done["success_count"], 200);
    assert_eq!(list(&app, &partner.key, "?status=any").await["meta"]["total"], 200);
}

#[tokio::test]
async fn more_than_two_hundred_rows_refuse_the_whole_file() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let body = file(csv_rows(201, "").as_bytes());
    for path in ["/v1/listings/bulk-validate", "/v1/listings/bulk-commit"] {
        let error = assert_error(app.post(path, &partner.key, &body).await, 400, "validation_failed").await;
        assert_eq!(error["message"], "too_many_rows");
        let message = "Send at most 200 data rows in one file: split the file and send each part.";
        assert_eq!(error["errors"], json!([{"field": "file", "code": "too_many_rows", "message": message}]));
    }
    let mut sheet = vec![COLUMNS[..5].iter().map(|h| C::S(h)).collect::<Vec<_>>()];
    sheet.extend((0..201).map(|_| vec![C::S("Sofa"), C::N(450.0), C::S("Sofa Beds"), C::S("fair"), C::S("None")]));
    let error = assert_error(
        app.post("/v1/listings/bulk-commit", &partner.key, &file(&xlsx(&sheet))).await,
        400,
        "validation_failed",
    )
    .await;
    assert_eq!(error["message"], "too_many_rows");
    assert_eq!(list(&app, &partner.key, "?status=any").await["meta"]["total"], 0, "nothing was written");
}

/// Every create reason code a cell can give, one row each, as the validator (and the
/// store's checks) give it for `POST /v1/listings`. Not reachable from a cell, by design:
/// `<field>_unknown` (unknown columns are reported in `unknown_columns` instead),
/// `channel_invalid` (not an import column), and `title_invalid`, `description_invalid`,
/// `brand_invalid`, `sku_invalid`, `warehouse_location_invalid` (a cell is always text).
fn reason_table() -> Vec<(&'static str, String, &'static str)> {
    let long = |n: usize| "x".repeat(n);
    let repeat = |item: &str, n: usize| vec![item; n].join(", ");
    vec![
        ("title", String::new(), "title_required"),
        ("title", long(201), "title_too_long"),
        ("price_gbp", String::new(), "price_gbp_required"),
        ("price_gbp", "cheap".into(), "price_gbp_invalid"),
        ("price_gbp", "0".into(), "price_gbp_invalid"),
        ("price_gbp", "450.001".into(), "price_gbp_invalid"),
        ("price_gbp", "12,50".into(), "price_gbp_invalid"),
        ("condition", String::new(), "condition_required"),
        ("condition", "new".into(), "condition_invalid"),
        ("category", String::new(), "category_required"),
        ("category", "Beds".into(), "category_invalid"),
        ("description", long(20_001), "description_too_long"),
        ("sale_price_gbp", "450".into(), "sale_price_gbp_invalid"),
        ("rrp_gbp", "£0.00".into(), "rrp_gbp_invalid"),
        ("delivery_contribution_gbp", "50".into(), "delivery_contribution_gbp_invalid"),
        ("brand", long(81), "brand_too_long"),
        ("colour", "Ultraviolet".into(), "colour_invalid"),
        ("fabric", "Kevlar".into(), "fabric_invalid"),
        ("age_years", "100 years old".into(), "age_years_invalid"),
        ("available_from", "2026-13-01".into(), "available_from_invalid"),
        ("available_from", "tomorrow".into(), "available_from_invalid"),
        ("quantity", "0".into(), "quantity_invalid"),
        ("quantity", "10001".into(), "quantity_invalid"),
        ("quantity", "2.5".into(), "quantity_invalid"),
        ("measurements", "80x70x90".into(), "measurements_invalid"),
        ("measurements", "Table:80x70x90".into(), "measurements_invalid"),
        ("measurements", "Chair:0x70x90".into(), "measurements_invalid"),
        ("measurements", vec!["Chair:1x1x1"; 21].join("; "), "measurements_too_long"),
        ("exposed_to", "Birds".into(), "exposed_to_invalid"),
        ("exposed_to", "None, Smoke".into(), "exposed_to_invalid"),
        ("faults", String::new(), "faults_required"),
        ("faults", ",".into(), "faults_required"),
        ("faults", "Scratches".into(), "faults_invalid"),
        ("faults", "None, Rips or tears".into(), "faults_invalid"),
        ("images", "not a url".into(), "images_invalid"),
        ("images", repeat("https://img.example/a.jpg", 21), "images_too_long"),
        ("attachment_ids", "-4".into(), "attachment_ids_invalid"),
        ("attachment_ids", "12".into(), "attachment_ids_invalid"),
        ("attachment_ids", (1..=21).map(|n| n.to_string()).collect::<Vec<_>>().join(","), "attachment_ids_too_long"),
        ("sku", long(65), "sku_too_long"),
        ("warehouse_location", long(65), "warehouse_location_too_long"),
        ("status", "closed".into(), "status_invalid"),
        ("warehouse_id", "main".into(), "warehouse_id_invalid"),
        ("warehouse_id", "00000000-0000-4000-8000-000000000000".into(), "warehouse_id_invalid"),
    ]
}

fn quoted(value: &str) -> String {
    format!("\"{}\"", value.replace('"', "\"\""))
}

#[tokio::test]
async fn each_reason_code_appears_in_its_row_as_a_create_gives_it() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let base = json!({"title": "Sofa", "price_gbp": "450", "category": "Sofa Beds", "condition": "excellent", "faults": "None"});
    let table = reason_table();
    let mut text = COLUMNS.join(",") + "\n";
    for (field, cell, _) in &table {
        let line: Vec<String> = COLUMNS
            .iter()
            .map(|c| if c == field { quoted(cell) } else { quoted(base[*c].as_str().unwrap_or_default()) })
            .collect();
        text.push_str(&line.join(","));
        text.push('\n');
    }
    let report = validate(&app, &partner.key, &file(text.as_bytes())).await;
    assert_eq!(report["row_count"], table.len());
    for (i, (field, cell, code)) in table.iter().enumerate() {
        let row = &report["rows"][i];
        assert_eq!(row["row"], i + 2);
        assert_eq!(row["errors"], json!([code]), "{field} = {cell:.40}");
    }
    let done = commit(&app, &partner.key, &file(text.as_bytes())).await;
    assert_eq!(done["success_count"], 0);
    for (i, (_, _, code)) in table.iter().enumerate() {
        assert_eq!(done["rows"][i]["message"], *code);
    }
}

#[tokio::test]
async fn payloads_that_carry_no_readable_file_are_refused() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let key = &partner.key;
    assert!(bad_file(&app, key, &json!({})).await.contains("file_b64"));
    assert!(bad_file(&app, key, &json!({"file_b64": "  ", "csv_text": ""})).await.contains("No file"));
    assert!(bad_file(&app, key, &json!({"file_b64": "%%%not base64%%%"})).await.contains("base64"));
    assert!(bad_file(&app, key, &json!({"file_b64": b64(b"title\n"), "csv_text": "title\n"}))
        .await
        .contains("not both"));
    let error = assert_error(
        app.post("/v1/listings/bulk-validate", key, &json!({"file_b64": 12, "name": "x"})).await,
        400,
        "validation_failed",
    )
    .await;
    assert_eq!(error["message"], "file_b64_invalid, name_unknown");
    assert_error(app.post("/v1/listings/bulk-commit", key, &json!(["x"])).await, 400, "invalid_body").await;
    let too_big = "QUFB".repeat(5 * 1024 * 1024 / 3 + 8);
    assert!(bad_file(&app, key, &json!({"file_b64": too_big})).await.contains("5 MiB"));
}

#[tokio::test]
async fn files_that_are_not_spreadsheets_are_refused_with_what_they_are() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let mut ods = ZipWriter::new(Cursor::new(Vec::new()));
    ods.start_file("mimetype", SimpleFileOptions::default()).unwrap();
    ods.write_all(b"application/vnd.oasis.opendocument.spreadsheet").unwrap();
    let ods = ods.finish().unwrap().into_inner();
    for (bytes, says) in [
        (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec(), "PNG image"),
        (b"%PDF-1.7\n%\xE2\xE3".to_vec(), "PDF"),
        (b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1\0\0".to_vec(), ".xls"),
        (b"\x00\x01\x02\x03binary".to_vec(), "binary"),
        (ods, "OpenDocument"),
        (b"PK\x03\x04 not really a zip".to_vec(), "damaged"),
        (b"Sofa,450\nChair,90\n".to_vec(), "header row"),
    ] {
        let message = bad_file(&app, &partner.key, &file(&bytes)).await;
        assert!(message.contains(says), "{says}: {message}");
    }
    let twice = bad_file(&app, &partner.key, &json!({"csv_text": "title,Title\nSofa,Sofa\n"})).await;
    assert!(twice.contains("'title' appears twice (columns A and B)"), "{twice}");
}

/// Peak resident memory of this process (the server runs in it), in MiB.
fn peak_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap_or("VmHWM: 0 kB");
    line.split_whitespace().nth(1).and_then(|kb| kb.parse::<u64>().ok()).unwrap_or(0) / 1024
}

/// Sends a file that must be refused as `bad_file`, and checks the refusal cost no memory.
async fn refused_cheaply(app: &TestApp, key: &str, bytes: &[u8], says: &str) {
    let before = peak_mib();
    let started = Instant::now();
    let message = bad_file(app, key, &file(bytes)).await;
    let elapsed = started.elapsed();
    let grown = peak_mib().saturating_sub(before);
    println!("{says}: {} bytes refused in {elapsed:?}, peak memory +{grown} MiB: {message}", bytes.len());
    assert!(message.contains(says), "{message}");
    assert!(grown < 200, "refusing it grew memory by {grown} MiB");
}

/// The parts calamine needs, with `sheet` as the only worksheet.
fn workbook_zip(sheet: &[u8]) -> ZipWriter<Cursor<Vec<u8>>> {
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    let parts: [(&str, &[u8]); 3] = [
        ("xl/workbook.xml", br#"<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Listings" sheetId="1" r:id="rId1"/></sheets></workbook>"#),
        ("xl/_rels/workbook.xml.rels", br#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>"#),
        ("xl/worksheets/sheet1.xml", sheet),
    ];
    for (name, data) in parts {
        zip.start_file(name, options).unwrap();
        zip.write_all(data).unwrap();
    }
    zip
}

#[tokio::test]
async fn a_zip_bomb_is_refused_before_it_is_inflated() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    // 32 MiB of spaces compress to about 32 KB; 32 raw copies declare 1 GiB.
    let mut zip = workbook_zip(b"<worksheet/>");
    let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    zip.start_file("xl/worksheets/padding0.xml", options).unwrap();
    zip.write_all(&vec![b' '; 32 * 1024 * 1024]).unwrap();
    for i in 1..32 {
        zip.deep_copy_file("xl/worksheets/padding0.xml", &format!("xl/worksheets/padding{i}.xml")).unwrap();
    }
    let bomb = zip.finish().unwrap().into_inner();
    assert!(bomb.len() < 2 * 1024 * 1024, "{} bytes", bomb.len());
    refused_cheaply(&app, &partner.key, &bomb, "zip bomb").await;
}

#[tokio::test]
async fn a_sheet_declaring_the_whole_grid_is_refused_before_calamine_reads_it() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let mut workbook = Workbook::new();
    let sheet = workbook.add_worksheet();
    sheet.write_string(0, 0, "title").unwrap();
    sheet.write_string(1_048_575, 16_383, "x").unwrap();
    let bytes = workbook.save_to_buffer().unwrap();
    assert!(bytes.len() < 8 * 1024, "a small file: {}", bytes.len());
    refused_cheaply(&app, &partner.key, &bytes, "A1:XFD1048576").await;
}

#[tokio::test]
async fn cells_beyond_a_sheets_declared_range_are_read_one_by_one() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    // Declares A1:E2 but has a row at 1048576: a grid from the cells' positions would hold
    // 5 million cells; the import reads two rows.
    let sheet = br#"<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><dimension ref="A1:E2"/><sheetData>
        <row r="1"><c r="A1" t="inlineStr"><is><t>title</t></is></c><c r="B1" t="inlineStr"><is><t>price_gbp</t></is></c><c r="C1" t="inlineStr"><is><t>category</t></is></c><c r="D1" t="inlineStr"><is><t>condition</t></is></c><c r="E1" t="inlineStr"><is><t>faults</t></is></c></row>
        <row r="1048576"><c r="A1048576" t="inlineStr"><is><t>Far sofa</t></is></c><c r="B1048576"><v>450</v></c><c r="C1048576" t="inlineStr"><is><t>Sofa Beds</t></is></c><c r="D1048576" t="inlineStr"><is><t>fair</t></is></c><c r="E1048576" t="inlineStr"><is><t>None</t></is></c></row>
        </sheetData></worksheet>"#;
    let bytes = workbook_zip(sheet).finish().unwrap().into_inner();
    let report = validate(&app, &partner.key, &file(&bytes)).await;
    assert_eq!(
        report["rows"],
        json!([{"row": 1_048_576, "title": "Far sofa", "status": "ok", "action": "created", "errors": []}])
    );

    let far_right = br#"<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>title</t></is></c><c r="XFD1" t="inlineStr"><is><t>stray</t></is></c></row></sheetData></worksheet>"#;
    let bytes = workbook_zip(far_right).finish().unwrap().into_inner();
    refused_cheaply(&app, &partner.key, &bytes, "XFD1").await;
}
