//! A statement as CSV (decisions 10.5): a header row, one row per line with exactly the
//! fields and values of the JSON lines, and a totals row (`id` = `total`, the money
//! columns summed, the others empty).

use super::statement::{Entry, Statement, LINE_COLUMNS};
use crate::domain::money::Pence;

/// The CSV of `statement`, UTF-8, comma-separated, quoted where needed (RFC 4180).
pub fn render(statement: &Statement) -> Result<Vec<u8>, csv::Error> {
    // The header is written from LINE_COLUMNS (also when there are no lines); rows are
    // serialised from the lines themselves, so every value is the JSON's.
    let mut out = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
    out.write_record(LINE_COLUMNS)?;
    for line in &statement.lines {
        match spreadsheet_safe(&line.title) {
            None => out.serialize(line)?,
            Some(title) => out.serialize(Entry { title, ..line.clone() })?,
        }
    }
    let totals = statement.totals();
    let money = |name: &str| -> Option<i64> {
        Some(match name.strip_suffix("_pence").unwrap_or(name) {
            "gross" => totals.gross,
            "commission" => totals.commission,
            "vat" => totals.vat,
            "delivery" => totals.delivery,
            "amount" => totals.amount,
            _ => return None,
        })
    };
    let row = LINE_COLUMNS.map(|column| match (column, money(column)) {
        ("id", _) => "total".to_owned(),
        (c, Some(pence)) if c.ends_with("_pence") => pence.to_string(),
        // Written as the lines' GBP values are (`20.0`, `19.99`).
        (_, Some(pence)) => serde_json::to_string(&Pence::new(pence).gbp()).unwrap_or_default(),
        _ => String::new(),
    });
    out.write_record(&row)?;
    out.into_inner().map_err(|e| e.into_error().into())
}

/// A text cell a spreadsheet would read as a formula (`=HYPERLINK(…)`, `+1+cmd|…`, `-2+3`,
/// `@SUM(…)`, or after a tab or carriage return) with a `'` before it, as OWASP's "CSV
/// Injection" advises: Excel and LibreOffice then show the text as it was typed. `None`
/// when the text is safe as it is. Only titles are text a partner typed; the other
/// columns are numbers, dates and the service's own words.
fn spreadsheet_safe(text: &str) -> Option<String> {
    text.starts_with(['=', '+', '-', '@', '\t', '\r']).then(|| format!("'{text}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{EntryRecord, Ts};
    use crate::usecases::wallet::statement::Entry;

    #[test]
    fn titles_a_spreadsheet_would_run_as_formulas_are_written_as_text() {
        for formula in ["=HYPERLINK(\"http://x\")", "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\t=1", "\r=1"] {
            assert_eq!(spreadsheet_safe(formula), Some(format!("'{formula}")), "{formula:?}");
        }
        for text in ["Oak sofa", "3-seater", "£120 chair", "'quoted"] {
            assert_eq!(spreadsheet_safe(text), None, "{text:?}");
        }
    }

    #[test]
    fn the_columns_are_the_fields_of_an_entry_in_order() {
        let at = Ts::now();
        let record = EntryRecord {
            id: 1,
            kind: "sale".into(),
            order_id: 2,
            listing_id: 3,
            title: "Sofa, \"grey\"".into(),
            quantity: 1,
            gross_pence: 2000,
            commission_pence: 300,
            vat_pence: 60,
            delivery_pence: 0,
            amount_pence: 1640,
            delivered_at: at,
            available_at: at,
            remittance_id: Some(9),
        };
        let mut out = csv::Writer::from_writer(Vec::new());
        out.serialize(Entry::at(&record, at.get())).unwrap();
        let text = String::from_utf8(out.into_inner().unwrap()).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next().unwrap(), LINE_COLUMNS.join(","));
        assert!(lines.next().unwrap().starts_with("1,sale,2,#2,3,\"Sofa, \"\"grey\"\"\",1,2000,20.0,300,3.0,"));
    }
}
