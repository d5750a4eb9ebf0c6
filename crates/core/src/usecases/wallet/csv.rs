//! A statement as CSV (decisions 10.5): a header row, one row per line with exactly the
//! fields and values of the JSON lines, and a totals row (`id` = `total`, the money
//! columns summed, the others empty).

use serde_json::Value;

use super::statement::Statement;
use rehome_domain::statement::{Entry, Totals, LINE_COLUMNS};

/// The CSV of `statement`, UTF-8, comma-separated, quoted where needed (RFC 4180).
#[cfg(test)]
pub fn render(statement: &Statement) -> Result<Vec<u8>, csv::Error> {
    let mut writer = Writer::new()?;
    for line in &statement.lines {
        writer.line(line)?;
    }
    writer.finish(statement)
}

/// A statement's CSV written as its lines arrive: it holds the bytes written, not the lines.
pub struct Writer(csv::Writer<Vec<u8>>);

impl Writer {
    pub fn new() -> Result<Self, csv::Error> {
        // The header is written from LINE_COLUMNS (also when there are no lines); each row is
        // the line's JSON, cell by cell, so every value is the JSON's.
        let mut out = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
        out.write_record(LINE_COLUMNS)?;
        Ok(Self(out))
    }

    /// The next line (oldest first).
    pub fn line(&mut self, line: &Entry) -> Result<(), csv::Error> {
        let mut value = json(line)?;
        if let Some(title) = spreadsheet_safe(&line.title) {
            value["title"] = Value::String(title);
        }
        self.0.write_record(cells(&value))
    }

    /// The totals row of `head` (`id` is `total`, the money columns are summed, the others
    /// empty); the CSV's bytes.
    pub fn finish(mut self, head: &Statement) -> Result<Vec<u8>, csv::Error> {
        let mut totals = json(&Totals::from(head.totals()))?;
        totals["id"] = Value::from("total");
        self.0.write_record(cells(&totals))?;
        self.0.into_inner().map_err(|e| e.into_error().into())
    }
}

fn json(value: &impl serde::Serialize) -> Result<Value, csv::Error> {
    serde_json::to_value(value).map_err(|e| std::io::Error::from(e).into())
}

/// The cells of a JSON object under [`LINE_COLUMNS`]: text as it is, numbers as JSON
/// writes them (`20.0`, `19.99`), null or absent as empty.
fn cells(value: &Value) -> [String; LINE_COLUMNS.len()] {
    LINE_COLUMNS.map(|column| match value.get(column) {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    })
}

/// A text cell a spreadsheet would read as a formula (`=HYPERLINK(…)`, `+1+cmd|…`, `-2+3`,
/// `@SUM(…)`, or after a tab or carriage return) with a `'` before it, as OWASP's "CSV
/// Injection" advises: Excel and LibreOffice then show the text as it was typed. The same
/// wherever a cell could start inside the text when the file is read with another separator
/// than ours: `;` (Excel in many European locales), `,` and tab (`;=1+1`, `a,=1+1`,
/// `a\t=1`). `None` when the text is safe as it is. Only titles are text a partner typed;
/// the other columns are numbers, dates and the service's own words.
pub fn spreadsheet_safe(text: &str) -> Option<String> {
    const TRIGGERS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];
    const SEPARATORS: [char; 3] = [';', ',', '\t'];
    let mut guarded = String::with_capacity(text.len() + 2);
    let (mut at_cell_start, mut changed) = (true, false);
    for c in text.chars() {
        if at_cell_start && TRIGGERS.contains(&c) {
            guarded.push('\'');
            changed = true;
        }
        guarded.push(c);
        at_cell_start = SEPARATORS.contains(&c);
    }
    changed.then_some(guarded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usecases::wallet::statement::entry;
    use rehome_domain::time::Ts;
    use rehome_domain::view::EntryRecord;

    #[test]
    fn the_streamed_csv_is_the_whole_one_byte_for_byte() {
        // The rendering before it was streamed: every row, then the totals.
        fn whole(statement: &Statement) -> Vec<u8> {
            let mut out = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
            out.write_record(LINE_COLUMNS).unwrap();
            for line in &statement.lines {
                let mut value = json(line).unwrap();
                if let Some(title) = spreadsheet_safe(&line.title) {
                    value["title"] = Value::String(title);
                }
                out.write_record(cells(&value)).unwrap();
            }
            let mut totals = json(&Totals::from(statement.totals())).unwrap();
            totals["id"] = Value::from("total");
            out.write_record(cells(&totals)).unwrap();
            out.into_inner().unwrap()
        }
        for lines in [0, 1, 2500] {
            let statement = crate::usecases::wallet::pdf::tests::sample(lines);
            assert_eq!(render(&statement).unwrap(), whole(&statement), "{lines} lines");
        }
    }

    #[test]
    fn titles_a_spreadsheet_would_run_as_formulas_are_written_as_text() {
        for formula in ["=HYPERLINK(\"http://x\")", "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\r=1"] {
            assert_eq!(spreadsheet_safe(formula), Some(format!("'{formula}")), "{formula:?}");
        }
        // A tab starts a formula and, read as tab-separated, a cell too.
        assert_eq!(spreadsheet_safe("\t=1").as_deref(), Some("'\t'=1"));
        for text in ["Oak sofa", "3-seater", "£120 chair", "'quoted", "Oak; ash", "a;b"] {
            assert_eq!(spreadsheet_safe(text), None, "{text:?}");
        }
        // Read with `;` as the separator, no cell may start a formula either.
        assert_eq!(spreadsheet_safe(";=1+1").as_deref(), Some(";'=1+1"));
        assert_eq!(spreadsheet_safe("Sofa;@SUM(A1);-2").as_deref(), Some("Sofa;'@SUM(A1);'-2"));
        assert_eq!(spreadsheet_safe("=1;+2").as_deref(), Some("'=1;'+2"));
        // ... nor with `,` or a tab.
        assert_eq!(spreadsheet_safe("Sofa,=1+1").as_deref(), Some("Sofa,'=1+1"));
        assert_eq!(spreadsheet_safe("Sofa\t@SUM(A1)").as_deref(), Some("Sofa\t'@SUM(A1)"));
        assert_eq!(spreadsheet_safe("Oak, ash"), None);
    }

    proptest::proptest! {
        /// Whatever a title holds, read back with any separator a spreadsheet may use, no
        /// cell starts with a character that makes it a formula; and a guarded text is the
        /// text with only `'`s added.
        #[test]
        fn no_cell_of_a_guarded_title_starts_a_formula(text in "[=+@;,\t\r a-z0-9-]{0,24}") {
            let guarded = spreadsheet_safe(&text).unwrap_or_else(|| text.clone());
            for separator in [';', ',', '\t'] {
                for cell in guarded.split(separator).skip(1).chain(std::iter::once(guarded.as_str())) {
                    let first = cell.chars().next();
                    proptest::prop_assert!(
                        !matches!(first, Some('=' | '+' | '-' | '@' | '\t' | '\r')),
                        "{text:?} → {guarded:?}: a cell {cell:?} read with {separator:?}"
                    );
                }
            }
            proptest::prop_assert_eq!(guarded.replace('\'', ""), text.replace('\'', ""));
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
        let entry = serde_json::to_value(entry(&record, at.get())).unwrap();
        let mut names: Vec<&str> = entry.as_object().unwrap().keys().map(String::as_str).collect();
        let mut columns = LINE_COLUMNS.to_vec();
        names.sort_unstable();
        columns.sort_unstable();
        assert_eq!(names, columns, "every field of the JSON is a column, and every column a field");
        let mut out = csv::Writer::from_writer(Vec::new());
        out.write_record(cells(&entry)).unwrap();
        let text = String::from_utf8(out.into_inner().unwrap()).unwrap();
        assert!(text.starts_with("1,sale,2,#2,3,\"Sofa, \"\"grey\"\"\",1,2000,20.0,300,3.0,"), "{text}");
    }
}
