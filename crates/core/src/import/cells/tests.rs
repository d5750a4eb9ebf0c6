use proptest::prelude::*;
use serde_json::json;

use super::*;
use rehome_domain::money::Pence;

fn text(s: &str) -> Cell {
    Cell::Text(s.to_owned())
}

fn date(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

fn value(kind: Kind, cell: Cell) -> Value {
    cell.value(kind, Epoch::Excel1900)
}

#[test]
fn money_reads_numbers_and_the_text_partners_type() {
    // Numbers keep the text they were read from (the money parser reads it exactly).
    for (cell, expected) in [
        (Cell::Number(450.0), "450.0"),
        (Cell::Number(19.99), "19.99"),
        (Cell::Number(0.1 + 0.2), "0.3"),
        (text("1200"), "1200"),
        (text("£1,200.00"), "1200.00"),
        (text(" £ 450.5 "), "450.5"),
        (text("GBP 1,234,567.89"), "1234567.89"),
        (text("99.99 gbp"), "99.99"),
    ] {
        let read = value(Kind::Money, cell.clone());
        assert!(read.is_number(), "{cell:?}: {read}");
        assert_eq!(read.to_string(), expected, "{cell:?}");
    }
}

#[test]
fn money_that_does_not_read_stays_text_for_the_validator() {
    for raw in ["12,50", "1,20.00", "$450", "€450", "450 pounds", "cheap", "1.2.3", "£", "-450", "1e3", "ab£c"] {
        assert_eq!(value(Kind::Money, text(raw)), json!(raw), "{raw}");
    }
}

#[test]
fn integers_are_whole_json_numbers() {
    assert_eq!(value(Kind::Integer, Cell::Number(30.0)), json!(30));
    assert_eq!(value(Kind::Integer, text("129")), json!(129));
    assert_eq!(value(Kind::Integer, text("£60")), json!(60));
    assert!(value(Kind::Integer, Cell::Number(2.5)).as_i64().is_none());
    assert_eq!(value(Kind::Integer, text("three")), json!("three"));
}

#[test]
fn dates_come_from_date_cells_serials_and_text() {
    assert_eq!(value(Kind::Date, Cell::Date(date(2026, 12, 1))), json!("2026-12-01"));
    assert_eq!(value(Kind::Date, Cell::Number(46_357.0)), json!("2026-12-01"));
    assert_eq!(value(Kind::Date, Cell::Number(46_357.75)), json!("2026-12-01"), "the time of day is ignored");
    assert_eq!(Cell::Number(44_895.0).value(Kind::Date, Epoch::Excel1904), json!("2026-12-01"));
    for raw in ["2026-12-01", "2026/12/01", "01/12/2026", "1/12/2026", "01-12-2026", "01.12.2026", "1 December 2026"] {
        assert_eq!(value(Kind::Date, text(raw)), json!("2026-12-01"), "{raw}");
    }
    assert_eq!(value(Kind::Date, text("1-Dec-2026")), json!("2026-12-01"));
    assert_eq!(value(Kind::Date, text("2026-12-01T00:00:00")), json!("2026-12-01"));
    assert_eq!(value(Kind::Date, text("2026-12-01 09:30:00")), json!("2026-12-01"));
}

#[test]
fn dates_that_do_not_read_stay_as_given() {
    for raw in ["2026-02-30", "01/12/26", "tomorrow", "12/31/2026"] {
        assert_eq!(value(Kind::Date, text(raw)), json!(raw), "{raw}");
    }
    assert_eq!(value(Kind::Date, Cell::Number(60.0)), json!("60"), "Excel's 1900-02-29 is no date");
    assert_eq!(value(Kind::Date, Cell::Number(-3.0)), json!("-3"));
    assert_eq!(value(Kind::Date, Cell::Number(1e300)), json!("1e300"));
    assert_eq!(value(Kind::Date, Cell::Number(f64::NAN)), json!("NaN"));
}

#[test]
fn lists_split_on_commas_and_ids_become_numbers() {
    assert_eq!(value(Kind::List, text("Dogs, Cats ,,Smoke")), json!(["Dogs", "Cats", "Smoke"]));
    assert_eq!(value(Kind::List, text(",")), json!([]));
    assert_eq!(value(Kind::Ids, text("12, 13,x")), json!([12, 13, "x"]));
    assert_eq!(value(Kind::Ids, Cell::Number(7.0)), json!([7]));
}

#[test]
fn measurements_read_type_and_three_dimensions_per_piece() {
    assert_eq!(
        value(Kind::Measurements, text("3-Seater:210×95×85; Footstool: 60 x 60.5 X 45cm;")),
        json!([
            {"type": "3-Seater", "w_cm": 210, "d_cm": 95, "h_cm": 85},
            {"type": "Footstool", "w_cm": 60, "d_cm": 60.5, "h_cm": 45},
        ])
    );
    for raw in ["210x95x85", "Chair:80x70", "Chair:80x70x90x1", "Chair:80xx90", "Chair:-80x70x90", "Chair:8e1x70x90"] {
        assert_eq!(value(Kind::Measurements, text(raw)), json!(raw), "{raw}");
    }
}

#[test]
fn text_columns_show_numbers_and_dates_as_a_sheet_does() {
    assert_eq!(value(Kind::Text, Cell::Number(12_345.0)), json!("12345"));
    assert_eq!(value(Kind::Text, Cell::Number(1.5)), json!("1.5"));
    assert_eq!(value(Kind::Text, Cell::Date(date(2026, 1, 2))), json!("2026-01-02"));
    assert_eq!(value(Kind::Text, text(" Sofa ")), json!(" Sofa "), "the validator trims");
}

proptest! {
    /// Any amount in pence written as a person would (with or without £, thousands commas,
    /// decimals) reads as exactly that many pence.
    #[test]
    fn money_text_reads_as_exact_pence(pence in 1i64..100_000_000, pound in any::<bool>(), commas in any::<bool>(), decimals in 0usize..3) {
        let whole = pence / 100;
        let fraction = pence % 100;
        prop_assume!(decimals == 2 || fraction % if decimals == 1 { 10 } else { 100 } == 0);
        let mut digits = whole.to_string();
        if commas {
            let mut grouped = String::new();
            for (i, c) in digits.chars().enumerate() {
                if i > 0 && (digits.len() - i) % 3 == 0 {
                    grouped.push(',');
                }
                grouped.push(c);
            }
            digits = grouped;
        }
        let decimal = match decimals {
            0 => String::new(),
            1 => format!(".{}", fraction / 10),
            _ => format!(".{fraction:02}"),
        };
        let written = format!("{}{digits}{decimal}", if pound { "£" } else { "" });
        let read = value(Kind::Money, Cell::Text(written.clone()));
        prop_assert_eq!(Pence::from_gbp_json(&read), Ok(Pence::new(pence)), "{} read as {}", written, read);
    }

    /// Arbitrary text never panics and either reads as a positive-or-zero number or stays as given.
    #[test]
    fn money_text_never_panics_and_reads_or_stays(raw in "\\PC{0,16}") {
        match value(Kind::Money, Cell::Text(raw.clone())) {
            Value::String(s) => prop_assert_eq!(s, raw),
            Value::Number(n) => prop_assert!(n.as_f64().is_some_and(|f| f >= 0.0)),
            other => prop_assert!(false, "{other}"),
        }
    }

    /// Pieces written with any separator and spacing read back as the pieces.
    #[test]
    fn measurement_cells_round_trip(
        pieces in prop::collection::vec(("[A-Z][a-z]{0,8}( [A-Z][a-z]{0,5})?", 1u32..1000, 1u32..1000, 1u32..1000, 0usize..4), 1..5),
    ) {
        let separators = ["×", "x", "X", " x "];
        let cell = pieces
            .iter()
            .map(|(t, w, d, h, s)| format!("{t}:{w}{sep}{d}{sep}{h}", sep = separators[*s]))
            .collect::<Vec<_>>()
            .join("; ");
        let expected: Vec<Value> = pieces.iter().map(|(t, w, d, h, _)| json!({"type": t, "w_cm": w, "d_cm": d, "h_cm": h})).collect();
        prop_assert_eq!(value(Kind::Measurements, Cell::Text(cell)), Value::Array(expected));
    }

    /// Any cell text in any column gives a value without panicking.
    #[test]
    fn any_text_in_any_kind_never_panics(raw in "\\PC{0,40}") {
        for kind in [Kind::Text, Kind::Money, Kind::Integer, Kind::Date, Kind::List, Kind::Ids, Kind::Measurements] {
            let _ = value(kind, Cell::Text(raw.clone()));
        }
    }

    /// Every serial in Excel's range reads as a date, and the day after is the next serial.
    #[test]
    fn serials_count_days(serial in 61u32..2_958_465) {
        let day = serial_date(f64::from(serial), Epoch::Excel1900).unwrap();
        let next = serial_date(f64::from(serial + 1), Epoch::Excel1900).unwrap();
        prop_assert_eq!(day.succ_opt(), Some(next));
    }
}

#[test]
fn serials_match_excel_at_known_days() {
    assert_eq!(serial_date(1.0, Epoch::Excel1900), Some(date(1900, 1, 1)));
    assert_eq!(serial_date(59.0, Epoch::Excel1900), Some(date(1900, 2, 28)));
    assert_eq!(serial_date(61.0, Epoch::Excel1900), Some(date(1900, 3, 1)));
    assert_eq!(serial_date(45_943.541, Epoch::Excel1900), Some(date(2025, 10, 13)));
    assert_eq!(serial_date(2_958_465.0, Epoch::Excel1900), Some(date(9999, 12, 31)));
    assert_eq!(serial_date(0.0, Epoch::Excel1904), Some(date(1904, 1, 1)));
}
