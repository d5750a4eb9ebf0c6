//! One cell's content, and the JSON value it gives for a column's [`Kind`]. A cell that does
//! not read as its kind is passed on as text, so the listing validator gives the reason
//! (`price_gbp_invalid`, `measurements_invalid`, ...) exactly as a single create would.

use std::str::FromStr;

use chrono::{Datelike, NaiveDate};
use serde_json::{json, Number, Value};

use super::columns::Kind;

/// A non-blank cell as a reader found it.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Text(String),
    Number(f64),
    /// A cell formatted as a date.
    Date(NaiveDate),
}

/// Which day an Excel date serial counts from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Epoch {
    /// Serial 1 is 1900-01-01, with Excel's phantom 1900-02-29 at 60.
    #[default]
    Excel1900,
    /// Serial 0 is 1904-01-01 (old Mac workbooks).
    Excel1904,
}

impl Cell {
    /// The cell as a person reads it: numbers as Excel shows them by default, dates ISO.
    pub fn text(&self) -> String {
        match self {
            Cell::Text(text) => text.clone(),
            Cell::Number(n) => number_text(*n),
            Cell::Date(date) => iso(*date),
        }
    }

    pub fn is_blank(&self) -> bool {
        matches!(self, Cell::Text(text) if text.trim().is_empty())
    }

    /// The JSON value of this cell in a column of `kind`.
    pub fn value(&self, kind: Kind, epoch: Epoch) -> Value {
        match (kind, self) {
            (Kind::Money, Cell::Number(n)) => number_value(*n),
            (Kind::Money, Cell::Text(text)) => {
                decimal_text(text).map_or_else(|| Value::String(text.clone()), Value::Number)
            }
            (Kind::Integer, Cell::Number(n)) => whole_value(*n),
            (Kind::Integer, Cell::Text(text)) => {
                decimal_text(text).and_then(|n| n.as_f64()).map_or_else(|| Value::String(text.clone()), whole_value)
            }
            (Kind::Date, Cell::Date(date)) => Value::String(iso(*date)),
            (Kind::Date, Cell::Number(n)) => {
                serial_date(*n, epoch).map_or_else(|| Value::String(number_text(*n)), |d| Value::String(iso(d)))
            }
            (Kind::Date, Cell::Text(text)) => Value::String(text_date(text).map_or_else(|| text.clone(), iso)),
            (Kind::List, cell) => list(&cell.text()).map(Value::String).collect(),
            (Kind::Ids, cell) => {
                list(&cell.text()).map(|id| id.parse::<u64>().map_or_else(|_| Value::String(id), Value::from)).collect()
            }
            (Kind::Measurements, cell) => {
                let text = cell.text();
                measurements(&text).unwrap_or(Value::String(text))
            }
            (_, cell) => Value::String(cell.text()),
        }
    }
}

fn iso(date: NaiveDate) -> String {
    date.format("%Y-%m-%d").to_string()
}

/// A number rounded to the 15 significant digits Excel keeps, so formula results such as
/// `0.1 + 0.2` read as the `0.3` the sheet shows.
fn excel_rounded(n: f64) -> f64 {
    format!("{n:.14e}").parse().unwrap_or(n)
}

/// A number as Excel shows it by default: `1200`, `19.99`.
fn number_text(n: f64) -> String {
    let n = excel_rounded(n);
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        // Shortest round-trip form, with an exponent for very large or small numbers.
        format!("{n:?}")
    }
}

fn number_value(n: f64) -> Value {
    Number::from_f64(excel_rounded(n)).map_or_else(|| Value::String(number_text(n)), Value::Number)
}

/// A whole number as a JSON integer; anything else stays a number the validator refuses.
fn whole_value(n: f64) -> Value {
    let n = excel_rounded(n);
    if n.fract() == 0.0 && n.abs() < 1e15 {
        Value::from(n as i64)
    } else {
        number_value(n)
    }
}

/// Decimal text as partners type it: an optional `£` or `GBP`, thousands separated by
/// commas in groups of three (`1,200.00`), digits and at most one point. A comma used as a
/// decimal point (`12,50`) is not read, so it cannot silently become 1250.
fn decimal_text(text: &str) -> Option<Number> {
    let gbp = |s: Option<&str>| s.is_some_and(|s| s.eq_ignore_ascii_case("gbp"));
    let mut t = text.trim();
    if let Some(rest) = t.strip_prefix('£') {
        t = rest.trim_start();
    } else if gbp(t.get(..3)) {
        t = t[3..].trim_start();
    } else if gbp(t.get(t.len().saturating_sub(3)..)) {
        t = t[..t.len() - 3].trim_end();
    }
    let (whole, fraction) = match t.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (t, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let grouped = whole.contains(',') && {
        let mut groups = whole.split(',');
        let first = groups.next().unwrap_or("");
        digits(first) && first.len() <= 3 && groups.all(|g| g.len() == 3 && digits(g))
    };
    if !(digits(whole) || grouped) || fraction.is_some_and(|f| !digits(f)) {
        return None;
    }
    let plain: String = t.chars().filter(|c| *c != ',').collect();
    Number::from_str(&plain).ok()
}

/// The date of an Excel serial number (its time of day ignored), in Excel's own range.
fn serial_date(serial: f64, epoch: Epoch) -> Option<NaiveDate> {
    if !serial.is_finite() || !(0.0..2_958_466.0).contains(&serial) {
        return None;
    }
    let days = serial.floor() as i64;
    let (start, days) = match epoch {
        Epoch::Excel1904 => (NaiveDate::from_ymd_opt(1904, 1, 1)?, days),
        // 1900-01-01 is serial 1; Excel counts a 29 February 1900 that never was (serial 60).
        Epoch::Excel1900 if days == 60 || days == 0 => return None,
        Epoch::Excel1900 if days < 60 => (NaiveDate::from_ymd_opt(1899, 12, 31)?, days),
        Epoch::Excel1900 => (NaiveDate::from_ymd_opt(1899, 12, 30)?, days),
    };
    start.checked_add_days(chrono::Days::new(u64::try_from(days).ok()?))
}

/// Text dates: ISO (`2026-12-01`, with or without a time), `2026/12/01`, day-first
/// `01/12/2026`, `1-12-2026`, `01.12.2026`, and `1 December 2026` / `1-Dec-2026`.
/// Two-digit years are not guessed.
fn text_date(text: &str) -> Option<NaiveDate> {
    const FORMATS: &[&str] =
        &["%Y-%m-%d", "%Y/%m/%d", "%d/%m/%Y", "%d-%m-%Y", "%d.%m.%Y", "%d %B %Y", "%d %b %Y", "%d-%b-%Y"];
    let text = text.trim();
    // `2026-12-01T00:00:00` or `2026-12-01 00:00:00`: the date part.
    let iso_time = |head: &str| head.as_bytes().get(4) == Some(&b'-') && head.as_bytes().get(7) == Some(&b'-');
    let text = match text.get(..11) {
        Some(head) if text.len() > 11 && (head.ends_with('T') || head.ends_with(' ')) && iso_time(head) => &head[..10],
        _ => text,
    };
    FORMATS
        .iter()
        .find_map(|format| NaiveDate::parse_from_str(text, format).ok())
        .filter(|date| (1900..=9999).contains(&date.year()))
}

/// Comma-separated items, trimmed, blanks dropped.
fn list(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(',').map(str::trim).filter(|item| !item.is_empty()).map(str::to_owned)
}

/// `type:w×d×h` entries separated by `;` as the validator's `measurements` array; `None`
/// when an entry does not have that shape.
fn measurements(text: &str) -> Option<Value> {
    let mut pieces = Vec::new();
    for entry in text.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        let (item_type, size) = entry.split_once(':')?;
        let dims: Vec<Number> = size.split(['×', 'x', 'X', '*']).map(dimension).collect::<Option<_>>()?;
        let [w, d, h] = <[Number; 3]>::try_from(dims).ok()?;
        pieces.push(json!({"type": item_type.trim(), "w_cm": w, "d_cm": d, "h_cm": h}));
    }
    Some(Value::Array(pieces))
}

/// Centimetres: digits with an optional decimal part and an optional `cm`.
fn dimension(text: &str) -> Option<Number> {
    let text = text.trim();
    let text = text.strip_suffix("cm").or_else(|| text.strip_suffix("CM")).unwrap_or(text).trim_end();
    let (whole, fraction) = text.split_once('.').unwrap_or((text, "0"));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(fraction) {
        return None;
    }
    Number::from_str(text).ok()
}

#[cfg(test)]
mod tests;
