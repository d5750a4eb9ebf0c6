//! Statements (decisions 10.5, 10.6): JSON, CSV and PDF agree; the billing entity is kept
//! as it was at issue; another brand's statement does not exist; the PDF is mailed, even
//! when the mail server is down at issue.

use serde_json::{json, Value};

use super::{delivered_sale, hours_ago, run, statement, traded_in, wallet_app};
use crate::helpers::{assert_error, spawn_app_with_mail, SmtpServer};
use crate::marketplace::OPS_TOKEN;

const BILLING: &str = "/v1/partner/settings/billing";

fn billing() -> Value {
    json!({
        "company_name": "Acme Sofas Ltd",
        "address_1": "1 High Street",
        "city": "London",
        "postcode": "SW1A 1AA",
        "country": "United Kingdom",
        "company_number": "SC123456",
        "vat_number": "GB999999973",
        "invoice_email": "accounts@acme.example",
    })
}

/// Two sales and a credit trade-in of "acme", issued on one statement; returns its id.
async fn issued(app: &crate::helpers::TestApp, partner: &crate::helpers::Partner) -> i64 {
    assert_eq!(app.patch(BILLING, &partner.key, &billing()).await.status(), 200);
    delivered_sale(app, partner, json!(199.99), 30, 2, hours_ago(60)).await;
    delivered_sale(app, partner, json!(45.5), 0, 1, hours_ago(50)).await;
    traded_in(app, partner, json!(120), "credit", hours_ago(72)).await;
    let ids = run(app, None).await;
    assert_eq!(ids.len(), 1);
    ids[0]
}

#[tokio::test]
async fn the_csv_parsed_back_equals_the_json() {
    let app = wallet_app().await;
    let partner = app.partner("acme").await;
    let id = issued(&app, &partner).await;
    let s = statement(&app, &partner, id).await;

    let response = app.get(&format!("/v1/remittances/{id}/statement.csv"), &partner.key).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/csv"));
    let text = response.text().await.unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let headers: Vec<String> = reader.headers().unwrap().iter().map(str::to_owned).collect();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let lines = s["lines"].as_array().unwrap();
    assert_eq!(rows.len(), lines.len() + 1, "one row per line and a totals row");
    for (row, line) in rows.iter().zip(lines) {
        let object = line.as_object().unwrap();
        assert_eq!(headers.len(), object.len(), "every field of a line is a column");
        for (name, cell) in headers.iter().zip(row.iter()) {
            assert_eq!(cell, as_cell(&object[name]), "column {name}");
        }
    }
    let totals = rows.last().unwrap();
    let column = |name: &str| &totals[headers.iter().position(|h| h == name).unwrap()];
    assert_eq!(column("id"), "total");
    for money in ["gross", "commission", "vat", "delivery", "amount"] {
        assert_eq!(column(&format!("{money}_pence")), as_cell(&s["totals"][format!("{money}_pence")]));
        assert_eq!(column(money), as_cell(&s["totals"][money]));
    }
}

/// A JSON value as its CSV cell: strings as they are, null empty, numbers as JSON prints them.
fn as_cell(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The text of a PDF, by `pdftotext`; `None` when it is not installed (the test then says so
/// and passes, unless `REHOME_TEST_REQUIRE_PDFTOTEXT` is set, as CI sets it).
pub fn pdf_text(pdf: &[u8]) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("statement.pdf");
    std::fs::write(&file, pdf).unwrap();
    match std::process::Command::new("pdftotext").args(["-layout"]).arg(&file).arg("-").output() {
        Ok(out) => {
            assert!(out.status.success(), "pdftotext: {}", String::from_utf8_lossy(&out.stderr));
            Some(String::from_utf8(out.stdout).unwrap())
        }
        Err(_) => {
            assert!(
                std::env::var_os("REHOME_TEST_REQUIRE_PDFTOTEXT").is_none(),
                "REHOME_TEST_REQUIRE_PDFTOTEXT is set but pdftotext is missing (apt-get install poppler-utils)"
            );
            eprintln!("SKIPPED: pdftotext is not installed (apt-get install poppler-utils)");
            None
        }
    }
}

/// The statement's number, billing entity, every line and the totals are in the text.
fn assert_statement_text(text: &str, s: &Value) {
    assert!(text.contains("Remittance statement"), "{text}");
    assert!(text.contains(&format!("Statement number: {}", s["number"])), "{text}");
    // The brand by its name, not its slug (`brand_id` in the JSON); the heading's instants
    // in words in the brand's zone, the lines' columns in ISO 8601.
    let brand = format!("{} Ltd", s["brand_id"].as_str().unwrap());
    assert!(text.contains(&format!("Brand: {brand}")) && text.contains(&format!("- {brand} - page 1 of")), "{text}");
    assert!(text.lines().any(|l| l.contains("Issued: ") && (l.contains(" GMT") || l.contains(" BST"))), "{text}");
    for part in ["Acme Sofas Ltd", "1 High Street", "London SW1A 1AA", "SC123456", "GB999999973"] {
        assert!(text.contains(part), "{part} missing from {text}");
    }
    for line in s["lines"].as_array().unwrap() {
        let row = text.lines().find(|l| l.trim_start().starts_with(&format!("{} ", line["id"]))).unwrap_or_else(|| {
            panic!("no row for entry {} in {text}", line["id"]);
        });
        assert!(row.contains(line["order_reference"].as_str().unwrap()), "{row}");
        assert!(row.trim_end().ends_with(&words(line["amount"].as_f64().unwrap())), "{row}");
        assert!(row.contains(" Sale ") || row.contains(" Trade-in "), "the type in words: {row}");
    }
    let payable = format!("Amount payable: {} GBP", words(s["totals"]["amount"].as_f64().unwrap()));
    assert!(text.contains(&payable), "{payable} missing from {text}");
    // Whom it is for, and its period in words (the brand's first: up to its end).
    assert!(text.contains("Statement for") && !text.contains("Billed to"), "{text}");
    assert!(text.lines().any(|l| l.contains("Period: up to ") && l.contains("(the first statement)")), "{text}");
    assert!(!text.contains("trade_in"), "{text}");
}

/// An amount as statements print it for people: `1,234.50`.
fn words(pounds: f64) -> String {
    rehome::domain::money::thousands(&format!("{pounds:.2}"))
}

#[tokio::test]
async fn the_pdf_holds_the_number_the_billing_entity_every_line_and_the_totals() {
    let app = wallet_app().await;
    let partner = app.partner("acme").await;
    let id = issued(&app, &partner).await;
    let s = statement(&app, &partner, id).await;
    let response = app.get(&format!("/v1/remittances/{id}/statement.pdf"), &partner.key).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/pdf");
    let pdf = response.bytes().await.unwrap();
    assert!(pdf.starts_with(b"%PDF-"));
    if let Some(text) = pdf_text(&pdf) {
        assert_statement_text(&text, &s);
    }
}

/// A later statement's period starts where the one before it ended, in words in the
/// PDF; an amount of thousands is written with separators.
#[tokio::test]
async fn a_second_statement_runs_from_the_first_ones_end_and_groups_thousands() {
    let app = wallet_app().await;
    let partner = app.partner("acme").await;
    delivered_sale(&app, &partner, json!(100), 0, 1, hours_ago(200)).await;
    let first_end = hours_ago(96);
    let first = run(&app, Some(first_end)).await[0];
    delivered_sale(&app, &partner, json!(2400), 0, 2, hours_ago(60)).await;
    let second = run(&app, None).await[0];
    assert_ne!(first, second);
    let s = statement(&app, &partner, second).await;
    let pdf = app.get(&format!("/v1/remittances/{second}/statement.pdf"), &partner.key).await.bytes().await.unwrap();
    if let Some(text) = pdf_text(&pdf) {
        let zone = rehome::domain::settings::TimeZone::stored("Europe/London");
        let first_end = chrono::DateTime::parse_from_rfc3339(
            statement(&app, &partner, first).await["period_end"].as_str().unwrap(),
        )
        .unwrap()
        .to_utc();
        let period = format!("Period: {} to ", zone.when(first_end));
        assert!(text.contains(&period), "{period} missing from {text}");
        let amount = s["totals"]["amount"].as_f64().unwrap();
        assert!(amount >= 1000.0, "{s}");
        assert!(text.contains(&format!("Amount payable: {} GBP", words(amount))), "{text}");
        assert!(words(amount).contains(','), "{}", words(amount));
    }
}

#[tokio::test]
async fn a_statement_of_many_lines_runs_over_numbered_pages() {
    let app = wallet_app().await;
    let partner = app.partner("acme").await;
    for _ in 0..70 {
        delivered_sale(&app, &partner, json!(10), 0, 1, hours_ago(60)).await;
    }
    let id = run(&app, None).await[0];
    let s = statement(&app, &partner, id).await;
    let pdf = app.get(&format!("/v1/remittances/{id}/statement.pdf"), &partner.key).await.bytes().await.unwrap();
    if let Some(text) = pdf_text(&pdf) {
        assert!(text.contains("page 2 of 2"), "{text}");
        let rows = text.lines().filter(|l| l.contains(" Sale ")).count();
        assert_eq!(rows, 70, "{text}");
        assert!(text.contains(&format!("Amount payable: {} GBP", words(s["totals"]["amount"].as_f64().unwrap()))));
    }
}

#[tokio::test]
async fn billing_changed_after_issue_leaves_the_statement_as_it_was() {
    let app = wallet_app().await;
    let partner = app.partner("acme").await;
    let id = issued(&app, &partner).await;
    let before = statement(&app, &partner, id).await;
    let change = json!({"company_name": "Acme Holdings plc", "invoice_email": "ap@acme.example"});
    assert_eq!(app.patch(BILLING, &partner.key, &change).await.status(), 200);
    let after = statement(&app, &partner, id).await;
    assert_eq!(before, after);
    assert_eq!(after["billing"]["company_name"], "Acme Sofas Ltd");
    assert_eq!(after["billing"]["invoice_email"], "accounts@acme.example");
}

#[tokio::test]
async fn another_brands_statement_and_entries_are_not_there() {
    let app = wallet_app().await;
    let acme = app.partner("acme").await;
    let other = app.partner("other-brand").await;
    let id = issued(&app, &acme).await;
    for path in [
        format!("/v1/remittances/{id}"),
        format!("/v1/remittances/{id}/statement.csv"),
        format!("/v1/remittances/{id}/statement.pdf"),
    ] {
        assert_error(app.get(&path, &other.key).await, 404, "remittance_not_found").await;
    }
    assert_error(app.get("/v1/remittances/nope", &acme.key).await, 404, "remittance_not_found").await;
    let list = crate::helpers::json(app.get("/v1/remittances", &other.key).await).await;
    assert_eq!(list["meta"]["total"], 0);
    assert_eq!(super::all_entries(&app, &other).await.len(), 0);
    let wallet = super::wallet(&app, &other).await;
    assert_eq!((wallet["lifetime_pence"].as_i64(), wallet["brand_id"].as_str()), (Some(0), Some("other-brand")));
}

#[tokio::test]
async fn the_statement_is_mailed_to_the_invoice_email_even_when_the_mail_server_was_down() {
    let Some(mut smtp) = SmtpServer::down("statement mail") else {
        return;
    };
    let app = spawn_app_with_mail(&smtp, |c| {
        c.ops_token = Some(OPS_TOKEN.into());
        c.allow_private_network = true;
    })
    .await;
    let partner = app.partner("acme").await;
    let id = issued(&app, &partner).await;
    // Down at issue: the statement is issued all the same, its mail waits in the outbox.
    let outbox = crate::mail::wait_outbox(&app, 20, |rows| rows.first().is_some_and(|r| r.attempts >= 1)).await;
    assert_eq!(outbox.len(), 1);
    assert!(outbox[0].sent_at.is_none() && outbox[0].attempts >= 1, "{outbox:?}");

    smtp.up().await;
    let received = smtp.wait_for(1, 30).await;
    let mail = &received[0];
    assert_eq!(mail.rcpt_tos, ["accounts@acme.example"]);
    assert!(mail.subject.contains("Remittance statement 1"), "{}", mail.subject);
    assert!(mail.text.contains("Amount payable:"), "{}", mail.text);
    let (name, kind, pdf) = &mail.attachments[0];
    assert_eq!((name.as_str(), kind.as_str()), ("remittance-acme-1.pdf", "application/pdf"));
    let s = statement(&app, &partner, id).await;
    if let Some(text) = pdf_text(pdf) {
        assert_statement_text(&text, &s);
    }
    // Rendered as the run read the lines, and again as the download reads them: one file.
    let downloaded = app.get(&format!("/v1/remittances/{id}/statement.pdf"), &partner.key).await.bytes().await.unwrap();
    assert!(pdf[..] == downloaded[..], "the mailed PDF is the downloaded one");
}

#[tokio::test]
async fn without_an_invoice_email_nothing_is_mailed() {
    let Some(smtp) = SmtpServer::start("statement without invoice email").await else {
        return;
    };
    let app = spawn_app_with_mail(&smtp, |c| c.ops_token = Some(OPS_TOKEN.into())).await;
    let partner = app.partner("acme").await;
    delivered_sale(&app, &partner, json!(100), 0, 1, hours_ago(60)).await;
    assert_eq!(run(&app, None).await.len(), 1);
    assert!(app.store.mail_outbox(10).await.unwrap().is_empty());
}

/// A title a spreadsheet would run as a formula is written to the CSV as text (a `'`
/// before it); the JSON keeps it as given.
#[tokio::test]
async fn titles_that_read_as_formulas_are_written_to_the_csv_as_text() {
    let app = wallet_app().await;
    let partner = app.partner("acme").await;
    assert_eq!(app.patch(BILLING, &partner.key, &billing()).await.status(), 200);
    let titles =
        ["=HYPERLINK(\"http://evil.example\",\"Sofa\")", "+1+cmd|' /C calc'!A0", "-30% sofa", "@SUM(A1)", ";=1+1"];
    for title in titles {
        let body = json!({"title": title, "channel": "clearance", "price_gbp": 50});
        let listing_id = crate::marketplace::listing(&app, &partner, body).await;
        let order = crate::marketplace::order(&app, json!({"listing_id": listing_id})).await;
        let at = super::rfc3339(hours_ago(60));
        crate::marketplace::complete(&app, order["id"].as_i64().unwrap(), json!({"completed_at": at})).await;
    }
    let id = run(&app, None).await[0];
    let s = statement(&app, &partner, id).await;
    let given: Vec<&str> = s["lines"].as_array().unwrap().iter().map(|l| l["title"].as_str().unwrap()).collect();
    assert_eq!(given.len(), titles.len());
    assert!(titles.iter().all(|t| given.contains(t)), "the JSON keeps the titles: {given:?}");

    let text = app.get(&format!("/v1/remittances/{id}/statement.csv"), &partner.key).await.text().await.unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let column = reader.headers().unwrap().iter().position(|h| h == "title").unwrap();
    let written: Vec<String> = reader.records().map(|r| r.unwrap()[column].to_owned()).collect();
    for title in &titles[..4] {
        assert!(written.contains(&format!("'{title}")), "{title} as text in {written:?}");
    }
    assert!(written.contains(&";'=1+1".to_owned()), "after a ';' too: {written:?}");
    // Read with `;` as the separator (Excel in many European locales), no cell starts a
    // formula either.
    let mut by_semicolon = csv::ReaderBuilder::new().delimiter(b';').flexible(true).from_reader(text.as_bytes());
    for record in by_semicolon.records() {
        for cell in record.unwrap().iter() {
            assert!(!cell.starts_with(['=', '+', '-', '@']), "a formula cell with ';' as the separator: {cell:?}");
        }
    }
}
