//! Bulk import over real HTTP: the template (read back), XLSX round trips, commit with
//! partial success, and the shapes of the spec. File formats, reason codes and bounds are
//! in `bulk_files`.

use std::io::{Cursor, Read};

use base64::Engine;
use calamine::{Data, Reader, Xlsx};
use rust_xlsxwriter::{ExcelDateTime, Format, Workbook};
use serde_json::{json, Value};

use crate::helpers::{assert_error, json, spawn_app, Partner, TestApp};
use crate::listings::{create, list, listing, warehouse};

pub const COLUMNS: [&str; 23] = [
    "title",
    "price_gbp",
    "category",
    "condition",
    "brand",
    "colour",
    "fabric",
    "age_years",
    "faults",
    "exposed_to",
    "quantity",
    "delivery_contribution_gbp",
    "sale_price_gbp",
    "rrp_gbp",
    "available_from",
    "measurements",
    "description",
    "images",
    "sku",
    "warehouse_location",
    "warehouse_id",
    "attachment_ids",
    "status",
];

pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `{"file_b64": ...}` of these bytes.
pub fn file(bytes: &[u8]) -> Value {
    json!({"file_b64": b64(bytes)})
}

pub async fn validate(app: &TestApp, key: &str, body: &Value) -> Value {
    let response = app.post("/v1/listings/bulk-validate", key, body).await;
    let status = response.status();
    let report = json(response).await;
    assert_eq!(status, 200, "bulk-validate answered {report}");
    report
}

pub async fn commit(app: &TestApp, key: &str, body: &Value) -> Value {
    let response = app.post("/v1/listings/bulk-commit", key, body).await;
    let status = response.status();
    let report = json(response).await;
    assert_eq!(status, 200, "bulk-commit answered {report}");
    report
}

/// A cell written by a test workbook.
pub enum C {
    S(&'static str),
    N(f64),
    D(u16, u8, u8),
}

/// An .xlsx with one sheet: `rows[i]` at spreadsheet row `i + 1`; an empty row stays blank.
pub fn xlsx(rows: &[Vec<C>]) -> Vec<u8> {
    let mut workbook = Workbook::new();
    let sheet = workbook.add_worksheet();
    let date = Format::new().set_num_format("dd/mm/yyyy");
    for (r, row) in (0u32..).zip(rows) {
        for (c, cell) in (0u16..).zip(row) {
            match cell {
                C::S("") => {}
                C::S(s) => {
                    sheet.write_string(r, c, *s).unwrap();
                }
                C::N(n) => {
                    sheet.write_number(r, c, *n).unwrap();
                }
                C::D(y, m, d) => {
                    let day = ExcelDateTime::from_ymd(*y, *m, *d).unwrap();
                    sheet.write_datetime_with_format(r, c, &day, &date).unwrap();
                }
            }
        }
    }
    workbook.save_to_buffer().unwrap()
}

fn header(fields: &[&'static str]) -> Vec<C> {
    fields.iter().map(|f| C::S(f)).collect()
}

/// Every entry of a zip as text, by name.
pub fn unzip(bytes: &[u8]) -> Vec<(String, String)> {
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
    (0..zip.len())
        .map(|i| {
            let mut entry = zip.by_index(i).unwrap();
            let mut text = String::new();
            entry.read_to_string(&mut text).unwrap_or_default();
            (entry.name().to_owned(), text)
        })
        .collect()
}

fn part<'a>(parts: &'a [(String, String)], name: &str) -> &'a str {
    &parts.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no {name}")).1
}

async fn template(app: &TestApp, partner: &Partner) -> Vec<u8> {
    let response = app.get("/v1/listings/bulk-template", &partner.key).await;
    assert_eq!(response.status(), 200);
    response.bytes().await.unwrap().to_vec()
}

fn sheet_rows(bytes: &[u8], name: &str) -> Vec<Vec<Data>> {
    let mut workbook: Xlsx<_> = Xlsx::new(Cursor::new(bytes.to_vec())).unwrap();
    let range = workbook.worksheet_range(name).unwrap();
    range.rows().map(<[Data]>::to_vec).collect()
}

#[tokio::test]
async fn the_template_is_an_xlsx_attachment_whose_header_row_is_the_import_columns() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let response = app.get("/v1/listings/bulk-template", &partner.key).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet");
    assert_eq!(response.headers()["content-disposition"], "attachment; filename=\"rehome-bulk-template.xlsx\"");
    let bytes = response.bytes().await.unwrap();
    assert!(bytes.starts_with(b"PK\x03\x04"));

    let workbook: Xlsx<_> = Xlsx::new(Cursor::new(bytes.to_vec())).unwrap();
    assert_eq!(workbook.sheet_names(), ["Listings", "Instructions", "Lists"]);
    let headers: Vec<String> = sheet_rows(&bytes, "Listings")[0].iter().map(|c| c.to_string()).collect();
    assert_eq!(headers, COLUMNS);

    // The header row is frozen, styled and carries a hint on every header.
    let parts = unzip(&bytes);
    let listings = part(&parts, "xl/worksheets/sheet1.xml");
    assert!(listings.contains(r#"<pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>"#));
    assert!(listings.contains(r#"<c r="A1" s="#), "styled header");
    for (col, field) in COLUMNS.iter().enumerate() {
        let cell = format!("{}1", (b'A' + col as u8) as char);
        assert!(listings.contains(&format!(r#"promptTitle="{field}""#)), "hint on {field}");
        assert!(listings.contains(&format!(r#"sqref="{cell}""#)), "hint on {cell}");
    }
    // The Lists sheet is hidden.
    assert!(part(&parts, "xl/workbook.xml").contains(r#"<sheet name="Lists" sheetId="3" state="hidden""#));
}

#[tokio::test]
async fn the_template_offers_native_dropdowns_fed_from_the_hidden_lists_sheet() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    create(&app, &partner.key, listing(json!({"brand": "Acme Originals"}))).await;
    let bytes = template(&app, &partner).await;
    let parts = unzip(&bytes);
    let listings = part(&parts, "xl/worksheets/sheet1.xml");
    let workbook = part(&parts, "xl/workbook.xml");
    let lists = sheet_rows(&bytes, "Lists");
    let options = json(app.get("/v1/listings/options", &partner.key).await).await;

    let dropdowns = [
        ("C", "category", options["categories"].clone(), "stop"),
        ("D", "condition", json!(["like-new", "excellent", "gently-used", "fair"]), "stop"),
        ("E", "brand", options["brands"].clone(), "information"),
        ("F", "colour", options["colours"].clone(), "stop"),
        ("G", "fabric", options["fabrics"].clone(), "stop"),
        ("H", "age_years", options["ages"].clone(), "stop"),
        ("L", "delivery_contribution_gbp", json!([0, 30, 60, 129]), "stop"),
        ("W", "status", json!(["active", "draft"]), "stop"),
    ];
    assert!(options["brands"].as_array().unwrap().contains(&json!("Acme Originals")), "the caller's brands");
    for (list_col, (col, field, values, style)) in dropdowns.iter().enumerate() {
        let validation = listings
            .split("<dataValidation ")
            .find(|v| v.contains(&format!(r#"sqref="{col}2:{col}201""#)))
            .unwrap_or_else(|| panic!("no dropdown on {field}"));
        assert!(validation.contains(r#"type="list""#), "{validation}");
        let error_style = if *style == "stop" { String::new() } else { format!(r#"errorStyle="{style}" "#) };
        assert!(validation.contains(&error_style), "{field}: {validation}");
        assert!(validation.contains(&format!("<formula1>list_{field}</formula1>")), "{validation}");

        let letter = (b'A' + list_col as u8) as char;
        let defined = format!(
            r#"<definedName name="list_{field}">Lists!${letter}$2:${letter}${}</definedName>"#,
            values.as_array().unwrap().len() + 1
        );
        assert!(workbook.contains(&defined), "{defined} in {workbook}");
        let column: Vec<Value> = lists
            .iter()
            .skip(1)
            .map(|row| row[list_col].clone())
            .filter(|c| *c != Data::Empty)
            .map(|c| match c {
                Data::Float(n) => json!(n as i64),
                other => json!(other.to_string()),
            })
            .collect();
        assert_eq!(lists[0][list_col].to_string(), *field);
        assert_eq!(Value::Array(column), *values, "list of {field}");
    }
    assert_eq!(listings.matches("<dataValidation ").count(), COLUMNS.len() + dropdowns.len());
}

#[tokio::test]
async fn the_untouched_template_uploads_as_no_rows_and_its_example_row_is_valid() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let bytes = template(&app, &partner).await;
    let report = validate(&app, &partner.key, &file(&bytes)).await;
    assert_eq!(
        report,
        json!({"row_count": 0, "error_count": 0, "max_rows": 200, "headers": COLUMNS, "unknown_columns": [], "rows": []})
    );

    // The Instructions sheet's example, pasted under the Listings header, is a valid row.
    let instructions = sheet_rows(&bytes, "Instructions");
    let at = instructions.iter().rposition(|row| row.first().map(Data::to_string) == Some("title".into())).unwrap();
    let example: Vec<String> = instructions[at + 1].iter().map(Data::to_string).collect();
    let csv: Vec<String> =
        [COLUMNS.join(","), example.iter().map(|v| format!("\"{v}\"")).collect::<Vec<_>>().join(",")].to_vec();
    let report = validate(&app, &partner.key, &json!({"csv_text": csv.join("\n")})).await;
    assert_eq!(
        report["rows"],
        json!([{"row": 2, "title": example[0], "status": "ok", "action": "created", "errors": []}])
    );
}

#[tokio::test]
async fn a_filled_template_round_trips_into_listings() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let depot = warehouse(&app, &partner, "Leeds").await;
    let bytes = template(&app, &partner).await;
    let headers: Vec<&'static str> =
        sheet_rows(&bytes, "Listings")[0].iter().map(|h| COLUMNS.iter().copied().find(|c| h == c).unwrap()).collect();
    let row = |title: &'static str, price: C, available: C| -> Vec<C> {
        headers
            .iter()
            .map(|h| match *h {
                "title" => C::S(title),
                "price_gbp" => match &price {
                    C::S(s) => C::S(s),
                    C::N(n) => C::N(*n),
                    C::D(..) => unreachable!(),
                },
                "category" => C::S("Corner Sofas"),
                "condition" => C::S("gently-used"),
                "brand" => C::S("G Plan"),
                "colour" => C::S("gray"),
                "fabric" => C::S("boucle"),
                "age_years" => C::S("3 years old"),
                "faults" => C::S("Rips or tears, Fire Label"),
                "exposed_to" => C::S("Dogs,Cats"),
                "quantity" => C::N(3.0),
                "delivery_contribution_gbp" => C::N(60.0),
                "rrp_gbp" => C::S("£2,499.00"),
                "available_from" => match &available {
                    C::D(y, m, d) => C::D(*y, *m, *d),
                    C::N(n) => C::N(*n),
                    C::S(s) => C::S(s),
                },
                "measurements" => C::S("Corner Sofa:280×180×85; Footstool:60x60x45"),
                "sku" => C::N(12_345.0),
                _ => C::S(""),
            })
            .collect()
    };
    let filled = xlsx(&[
        header(&headers),
        row("Corner sofa one", C::N(1299.5), C::D(2026, 12, 1)),
        row("Corner sofa two", C::S("£1,299.50"), C::N(46_357.0)),
        row("Corner sofa three", C::S("1299.50"), C::S("01/12/2026")),
    ]);
    let report = validate(&app, &partner.key, &file(&filled)).await;
    assert_eq!(report["error_count"], 0, "{report}");
    let report = commit(&app, &partner.key, &file(&filled)).await;
    assert_eq!((report["row_count"].clone(), report["success_count"].clone()), (json!(3), json!(3)), "{report}");

    for (i, row) in report["rows"].as_array().unwrap().iter().enumerate() {
        assert_eq!(row["row"], i + 2);
        assert_eq!(row["status"], "success");
        let id = row["product_id"].as_i64().unwrap();
        assert!(row["url"].as_str().unwrap().ends_with(&format!("/listings/{id}")));
        let detail = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
        assert_eq!(detail["title"], row["title"]);
        assert_eq!(detail["url"], row["url"]);
        assert_eq!(detail["channel"], "clearance");
        assert_eq!(detail["seller"]["id"], partner.user_id);
        assert_eq!(detail["brand_id"], "acme");
        assert_eq!(detail["regular_price_pence"], 129_950);
        assert_eq!(detail["rrp_pence"], 249_900);
        assert_eq!(detail["available_from"], "2026-12-01");
        assert_eq!((detail["colour"].clone(), detail["fabric"].clone()), (json!("Grey"), json!("Bouclé")));
        assert_eq!(detail["faults"], json!(["Rips or tears", "Fire Label"]));
        assert_eq!(detail["exposed_to"], json!(["Dogs", "Cats"]));
        assert_eq!((detail["quantity"].clone(), detail["delivery_contribution_gbp"].clone()), (json!(3), json!(60)));
        assert_eq!(detail["sku"], "12345");
        assert_eq!(detail["warehouse_id"], depot, "the default warehouse");
        assert_eq!(
            detail["measurements"],
            json!([{"type": "Corner Sofa", "w_cm": 280, "d_cm": 180, "h_cm": 85}, {"type": "Footstool", "w_cm": 60, "d_cm": 60, "h_cm": 45}])
        );
    }
}

#[tokio::test]
async fn commit_creates_the_valid_rows_and_reports_the_others() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let csv = "title,price_gbp,category,condition,faults,brand\n\
               Oak sofa,450,Sofa Beds,excellent,None,Brand New Co\n\
               ,,,fair,None,\n\
               Armchair,90,Armchairs,fair,None,\n";
    let report = commit(&app, &partner.key, &json!({"csv_text": csv})).await;
    let first = report["rows"][0]["product_id"].as_i64().unwrap();
    let third = report["rows"][2]["product_id"].as_i64().unwrap();
    assert_eq!(
        report,
        json!({
            "row_count": 3, "success_count": 2, "error_count": 1, "unknown_columns": [],
            "rows": [
                {"row": 2, "title": "Oak sofa", "status": "success", "product_id": first, "action": "created", "url": format!("{}/marketplace/listings/{first}", app.base)},
                {"row": 3, "title": "(missing title)", "status": "error", "message": "title_required|price_gbp_required|category_required",
                 "column": "title", "cell": "A3", "value": "", "error_details": [
                    {"code": "title_required", "message": "Give `title` a value: it is required.", "column": "title", "cell": "A3", "value": ""},
                    {"code": "price_gbp_required", "message": "Give `price_gbp` a value: it is required.", "column": "price_gbp", "cell": "B3", "value": ""},
                    {"code": "category_required", "message": "Give `category` a value: it is required.", "column": "category", "cell": "C3", "value": ""},
                 ]},
                {"row": 4, "title": "Armchair", "status": "success", "product_id": third, "action": "created", "url": format!("{}/marketplace/listings/{third}", app.base)},
            ]
        })
    );
    let page = list(&app, &partner.key, "?status=any").await;
    assert_eq!(page["meta"]["total"], 2);
    assert!(page["data"].as_array().unwrap().iter().all(|l| l["channel"] == "clearance"));
    let options = json(app.get("/v1/listings/options", &partner.key).await).await;
    assert!(options["brands"].as_array().unwrap().contains(&json!("Brand New Co")), "a new brand shows at once");
}

#[tokio::test]
async fn validate_reports_every_row_and_writes_nothing() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let csv = "Title , PRICE_GBP,category,condition,faults,channel,notes\n\
               Oak sofa,450,Sofa Beds,excellent,None,exchange,keep\n\
               Chair,-5,Chairs,excellent,,,\n";
    let brands = app.store.manufacturer_brand_names(partner.brand_id).await.unwrap();
    let report = validate(&app, &partner.key, &json!({"csv_text": csv})).await;
    assert_eq!(
        report,
        json!({
            "row_count": 2, "error_count": 1, "max_rows": 200,
            "headers": ["Title ", " PRICE_GBP", "category", "condition", "faults", "channel", "notes"],
            "unknown_columns": ["channel", "notes"],
            "rows": [
                {"row": 2, "title": "Oak sofa", "status": "ok", "action": "created", "errors": []},
                {"row": 3, "title": "Chair", "status": "error", "errors": ["price_gbp_invalid", "category_invalid", "faults_required"],
                 "column": "PRICE_GBP", "cell": "B3", "value": "-5", "error_details": [
                    {"code": "price_gbp_invalid", "message": "Give `price_gbp` in pounds, between £0.01 and £1,000,000.00 with at most two decimals (e.g. 450 or 19.99).", "column": "PRICE_GBP", "cell": "B3", "value": "-5"},
                    {"code": "category_invalid", "message": "Choose `category` from your brand's categories (`GET /v1/listings/options` lists them).", "column": "category", "cell": "C3", "value": "Chairs"},
                    {"code": "faults_required", "message": "Give `faults` a value: it is required.", "column": "faults", "cell": "E3", "value": ""},
                 ]},
            ]
        })
    );
    assert_eq!(list(&app, &partner.key, "?status=any").await["meta"]["total"], 0);
    assert_eq!(app.store.manufacturer_brand_names(partner.brand_id).await.unwrap(), brands, "no brand either");
}

#[tokio::test]
async fn bulk_endpoints_need_the_usual_keys_and_scopes() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let reader = app.key(partner.user_id, "read", None, None).await;
    let writer = app.key(partner.user_id, "write", None, None).await;
    assert_error(app.get("/v1/listings/bulk-template", "").await, 401, "missing_bearer_token").await;
    assert_error(app.get("/v1/listings/bulk-template", &writer).await, 403, "forbidden").await;
    assert_eq!(app.get("/v1/listings/bulk-template", &reader).await.status(), 200);
    let body = json!({"csv_text": "title\nSofa\n"});
    for path in ["/v1/listings/bulk-validate", "/v1/listings/bulk-commit"] {
        assert_error(app.post(path, &reader, &body).await, 403, "forbidden").await;
        assert_eq!(app.post(path, &writer, &body).await.status(), 200);
        assert_error(app.get(path, &writer).await, 405, "method_not_allowed").await;
    }
}
