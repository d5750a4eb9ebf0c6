//! Bulk import for integrators (decisions 11.3): `mode: upsert` updates the listing a row's
//! SKU names instead of creating another; row errors say which cell (`column`, `cell`,
//! `value`); `bulk-validate/workbook` (and the older `bulk-validate?format=xlsx`) answers the
//! sheet back with the errors on it.

use std::process::Command;

use serde_json::{json, Value};

use crate::bulk::{commit, file, validate, xlsx, C};
use crate::helpers::{assert_error, json, spawn_app};
use crate::listings::{create_id, list};

const SHEET: &str = "title,price_gbp,category,condition,faults,sku\n\
                     Oak sofa,450,Sofa Beds,excellent,None,OAK-1\n\
                     Armchair,90,Armchairs,fair,None,ARM-1\n";

fn actions(report: &Value) -> Vec<(String, String)> {
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["status"].as_str().unwrap().to_owned(), r["action"].as_str().unwrap_or("-").to_owned()))
        .collect()
}

#[tokio::test]
async fn an_upsert_of_the_same_file_twice_leaves_no_duplicate() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let first = commit(&app, &partner.key, &json!({"csv_text": SHEET, "mode": "upsert"})).await;
    assert_eq!(actions(&first), [("success".into(), "created".into()), ("success".into(), "created".into())]);

    let corrected = SHEET.replace("Armchair,90", "Armchair,85");
    let again = commit(&app, &partner.key, &json!({"csv_text": corrected, "mode": "upsert"})).await;
    assert_eq!(actions(&again), [("success".into(), "updated".into()), ("success".into(), "updated".into())]);
    for n in 0..2 {
        assert_eq!(again["rows"][n]["product_id"], first["rows"][n]["product_id"], "row {n} updated its listing");
    }
    assert_eq!(list(&app, &partner.key, "?status=any").await["meta"]["total"], 2, "no duplicate");
    let armchair = json(app.get(&format!("/v1/listings/{}", first["rows"][1]["product_id"]), &partner.key).await).await;
    assert_eq!(armchair["regular_price_pence"], 8500);

    // The query parameter works as the body field; `create` (the default) duplicates.
    let url = "/v1/listings/bulk-commit?mode=upsert";
    let by_query = json(app.post(url, &partner.key, &json!({"csv_text": SHEET})).await).await;
    assert_eq!(actions(&by_query), [("success".into(), "updated".into()), ("success".into(), "updated".into())]);
    let created = commit(&app, &partner.key, &json!({"csv_text": SHEET})).await;
    assert_eq!(actions(&created), [("success".into(), "created".into()), ("success".into(), "created".into())]);
    assert_eq!(list(&app, &partner.key, "?status=any").await["meta"]["total"], 4);
    app.stop().await;
}

#[tokio::test]
async fn upsert_rows_follow_the_patch_rules_and_name_what_they_cannot_update() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let (_, colleague_key) = app.user(&partner, "Colleague", rehome::domain::user::Role::Admin).await;
    create_id(&app, &partner.key, json!({"title": "Mine", "sku": "MINE-1"})).await;
    create_id(&app, &colleague_key, json!({"title": "Theirs", "sku": "THEIRS-1"})).await;
    create_id(&app, &partner.key, json!({"title": "Twin A", "sku": "TWIN"})).await;
    create_id(&app, &partner.key, json!({"title": "Twin B", "sku": "TWIN"})).await;
    // Only the price: enough to update (PATCH rules), not enough to create.
    let csv = "sku,price_gbp\nMINE-1,300\nTHEIRS-1,10\nTWIN,20\nMINE-1,310\nNEW-1,50\n";
    let report = validate(&app, &partner.key, &json!({"csv_text": csv, "mode": "upsert"})).await;
    let rows = report["rows"].as_array().unwrap();
    assert_eq!((rows[0]["status"].clone(), rows[0]["action"].clone()), (json!("ok"), json!("updated")));
    for (row, code) in [(1, "forbidden_not_owner"), (2, "sku_ambiguous"), (3, "sku_duplicate_in_file")] {
        assert_eq!(rows[row]["errors"], json!([code]), "{}", rows[row]);
        assert_eq!(rows[row]["column"], "sku");
        assert_eq!(rows[row]["cell"], format!("A{}", row + 2));
    }
    assert_eq!(
        rows[4]["errors"],
        json!(["title_required", "condition_required", "category_required", "faults_required"])
    );
    assert!(rows[4].get("column").is_none(), "no column of the sheet holds those fields: {}", rows[4]);

    let committed = commit(&app, &partner.key, &json!({"csv_text": csv, "mode": "upsert"})).await;
    assert_eq!(committed["success_count"], 1);
    let mine = list(&app, &partner.key, "?sku=MINE-1").await;
    assert_eq!(mine["data"][0]["price_pence"], 30000);
    assert_eq!(mine["data"][0]["title"], "Mine", "fields the row leaves blank stay as they are");

    for body in [json!({"csv_text": csv, "mode": "merge"}), json!({"csv_text": csv, "mode": 1})] {
        let refused =
            assert_error(app.post("/v1/listings/bulk-commit", &partner.key, &body).await, 400, "validation_failed");
        let errors = refused.await["errors"].clone();
        assert_eq!((&errors[0]["field"], &errors[0]["code"]), (&json!("mode"), &json!("mode_invalid")), "{errors}");
        assert_eq!(errors.as_array().map(Vec::len), Some(1));
    }
    let url = "/v1/listings/bulk-commit?mode=create";
    let clash = app.post(url, &partner.key, &json!({"csv_text": csv, "mode": "upsert"})).await;
    assert_eq!(assert_error(clash, 400, "validation_failed").await["errors"][0]["code"], "mode_invalid");
    let url = "/v1/listings/bulk-commit?mode=sideways";
    assert_error(app.post(url, &partner.key, &json!({"csv_text": csv})).await, 400, "validation_failed").await;
    assert_eq!(list(&app, &partner.key, "?sku=MINE-1").await["data"][0]["price_pence"], 30000, "nothing changed");
    app.stop().await;
}

/// The header row of a sheet whose `price_gbp` sits in column AB, behind 26 columns the
/// import does not know.
fn wide_header() -> Vec<C> {
    const FILLER: [&str; 26] = [
        "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10", "n11", "n12", "n13", "n14", "n15", "n16", "n17",
        "n18", "n19", "n20", "n21", "n22", "n23", "n24", "n25", "n26",
    ];
    let mut header = vec![C::S("title")];
    header.extend(FILLER.iter().map(|f| C::S(f)));
    header.extend([C::S("Price_GBP"), C::S("category"), C::S("condition"), C::S("faults")]);
    header
}

fn wide_row(title: &'static str, price: C) -> Vec<C> {
    let mut row = vec![C::S(title)];
    row.extend((0..26).map(|_| C::S("")));
    row.extend([price, C::S("Sofa Beds"), C::S("fair"), C::S("None")]);
    row
}

#[tokio::test]
async fn row_errors_name_the_column_cell_and_value_past_z() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let bytes = xlsx(&[wide_header(), wide_row("Good", C::N(120.0)), vec![], wide_row("Bad", C::S("twelve"))]);
    let report = validate(&app, &partner.key, &file(&bytes)).await;
    let bad = &report["rows"][1];
    assert_eq!(bad["row"], 4, "the blank row 3 is skipped, numbering is the sheet's");
    assert_eq!(
        (bad["column"].clone(), bad["cell"].clone(), bad["value"].clone()),
        (json!("Price_GBP"), json!("AB4"), json!("twelve"))
    );
    assert_eq!(
        bad["error_details"],
        json!([{"code": "price_gbp_invalid", "message": "Give `price_gbp` in pounds, between £0.01 and £1,000,000.00 with at most two decimals (e.g. 450 or 19.99).", "column": "Price_GBP", "cell": "AB4", "value": "twelve"}])
    );
    let committed = commit(&app, &partner.key, &file(&bytes)).await;
    assert_eq!(committed["rows"][1]["cell"], "AB4");
    assert_eq!(committed["rows"][1]["message"], "price_gbp_invalid");
    app.stop().await;
}

/// The workbook's two spellings (its own operation, and `?format=xlsx` of bulk-validate as
/// decisions 11.3 has it) answer the same workbook; a client that asks for
/// `application/octet-stream` (what generated clients read as a file) gets that type, for
/// the template too.
#[tokio::test]
async fn the_error_workbook_answers_at_both_spellings_and_as_an_octet_stream() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let bytes = xlsx(&[wide_header(), wide_row("", C::S("twelve"))]);
    let xlsx_type = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
    for path in ["/v1/listings/bulk-validate/workbook", "/v1/listings/bulk-validate?format=xlsx"] {
        let response = app.post(path, &partner.key, &file(&bytes)).await;
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(response.headers()["content-type"], xlsx_type, "{path}");
        assert!(response.headers()["content-disposition"].to_str().unwrap().contains("rehome-bulk-errors.xlsx"));
        assert!(response.bytes().await.unwrap().starts_with(b"PK"), "{path}: a zip file");
    }
    let generic = app
        .request(reqwest::Method::POST, "/v1/listings/bulk-validate/workbook", &partner.key)
        .header("accept", "application/octet-stream")
        .json(&file(&bytes))
        .send()
        .await
        .unwrap();
    assert_eq!(generic.headers()["content-type"], "application/octet-stream");
    assert!(generic.bytes().await.unwrap().starts_with(b"PK"));
    let template = app
        .request(reqwest::Method::GET, "/v1/listings/bulk-template", &partner.key)
        .header("accept", "application/octet-stream, */*;q=0.1")
        .send()
        .await
        .unwrap();
    assert_eq!(template.headers()["content-type"], "application/octet-stream");
    let browser = app
        .request(reqwest::Method::GET, "/v1/listings/bulk-template", &partner.key)
        .header("accept", "text/html,application/xhtml+xml,*/*;q=0.8")
        .send()
        .await
        .unwrap();
    assert_eq!(browser.headers()["content-type"], xlsx_type);
}

/// Reads the error workbook with openpyxl and prints what a person would look at.
const READ_WORKBOOK: &str = r#"
import json, sys
from openpyxl import load_workbook
ws = load_workbook(sys.argv[1])["Listings"]
cells = {}
for row in ws.iter_rows():
    for c in row:
        if c.value is not None or c.comment is not None:
            cells[c.coordinate] = {
                "value": c.value,
                "note": c.comment.text if c.comment else None,
                "fill": c.fill.fgColor.rgb if c.fill and c.fill.fill_type == "solid" else None,
            }
print(json.dumps(cells))
"#;

#[tokio::test]
async fn the_error_workbook_marks_the_faulty_cells() {
    if !crate::helpers::python_tools("the_error_workbook_marks_the_faulty_cells", &["openpyxl"]) {
        return;
    }
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let mut header = wide_header();
    header.push(C::S("notes"));
    let mut good = wide_row("Good", C::N(120.0));
    good.push(C::S("keep me"));
    let bad = wide_row("", C::S("twelve"));
    let bytes = xlsx(&[header, good, bad]);
    let response = app.post("/v1/listings/bulk-validate/workbook", &partner.key, &file(&bytes)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet");
    assert!(response.headers()["content-disposition"].to_str().unwrap().contains("rehome-bulk-errors.xlsx"));
    let workbook = response.bytes().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("errors.xlsx");
    std::fs::write(&path, &workbook).unwrap();
    let output = Command::new("python3").args(["-c", READ_WORKBOOK]).arg(&path).output().expect("run python3");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let cells: Value = serde_json::from_slice(&output.stdout).unwrap();

    // The sheet as uploaded: every cell where it was, the unknown columns' too.
    assert_eq!(cells["AB1"]["value"], "Price_GBP");
    assert_eq!(cells["AB2"]["value"], 120);
    assert_eq!(cells["AF2"]["value"], "keep me");
    assert_eq!(cells["AB3"]["value"], "twelve");
    // The errors column after the last one used; empty for a good row.
    assert_eq!(cells["AG1"]["value"], "errors");
    assert!(cells.get("AG2").is_none(), "{}", cells["AG2"]);
    // Each reason in words, what to do, not its code.
    let listing = &rehome::domain::listing::LISTING_BODY;
    let sentence = |field: &str, code: &str| rehome::domain::words::sentence(Some(listing), field, code).unwrap();
    let (title, price) = (sentence("title", "title_required"), sentence("price_gbp", "price_gbp_invalid"));
    assert_eq!(cells["AG3"]["value"], format!("title: {title}; Price_GBP: {price}"));
    // The faulty cells, filled and annotated; a blank one too (the missing title).
    for (cell, reason) in [("AB3", &price), ("A3", &title)] {
        assert_eq!(
            cells[cell]["note"].as_str().map(|n| n.contains(reason.as_str())),
            Some(true),
            "{cell}: {}",
            cells[cell]
        );
        assert_eq!(cells[cell]["fill"], "FFFFC7CE", "{cell}");
    }
    assert!(cells["AB2"]["fill"].is_null() && cells["AB2"]["note"].is_null(), "a good cell is left as it was");

    // Other formats are refused; JSON is the default.
    let refused = app.post("/v1/listings/bulk-validate?format=pdf", &partner.key, &file(&bytes)).await;
    assert_eq!(assert_error(refused, 400, "validation_failed").await["errors"][0]["code"], "format_invalid");
    let as_json = app.post("/v1/listings/bulk-validate?format=json", &partner.key, &file(&bytes)).await;
    assert_eq!(json(as_json).await["error_count"], 1);
    app.stop().await;
}
