//! A statement as a PDF (decisions 10.5): the number, the billing entity, every line and
//! the totals, as text a PDF reader (and `pdftotext`) extracts.
//!
//! Written with `pdf-writer` in the PDF standard fonts (Helvetica for prose, Courier for
//! the table, so columns align by character count), which every reader has: nothing is
//! embedded and the file stays small. A4 landscape; the table runs over as many pages as
//! it needs, each numbered. Text is encoded in WinAnsi (Latin-1 and the usual
//! typographic marks); a character outside it prints as `?`.

use std::io::Write;

use flate2::write::ZlibEncoder;
use flate2::Compression;
use pdf_writer::{Content, Filter, Finish, Name, Pdf, Rect, Ref, Str};

use super::statement::{pounds, Statement};

const WIDTH: f32 = 842.0;
const HEIGHT: f32 = 595.0;
const MARGIN: f32 = 40.0;
const TABLE_SIZE: f32 = 7.5;
const ROW: f32 = 10.0;
/// Where the table starts on the first page (below the heading block) and on the others.
const FIRST_TOP: f32 = HEIGHT - 200.0;
const OTHER_TOP: f32 = HEIGHT - MARGIN - 10.0;
/// The lowest row (above the footer).
const BOTTOM: f32 = MARGIN + 20.0;

const PROSE: Name = Name(b"F1");
const BOLD: Name = Name(b"F2");
const MONO: Name = Name(b"F3");

/// The PDF of `statement`.
pub fn render(statement: &Statement) -> Vec<u8> {
    let rows = table_rows(statement);
    let first_capacity = rows_between(FIRST_TOP, BOTTOM);
    let other_capacity = rows_between(OTHER_TOP, BOTTOM);
    let rest = rows.len().saturating_sub(first_capacity);
    let pages = 1 + rest.div_ceil(other_capacity);

    let mut pdf = Pdf::new();
    let catalog = Ref::new(1);
    let tree = Ref::new(2);
    let info = Ref::new(3);
    let fonts =
        [(PROSE, Ref::new(4), "Helvetica"), (BOLD, Ref::new(5), "Helvetica-Bold"), (MONO, Ref::new(6), "Courier")];
    let page_ref = |i: usize| Ref::new(10 + 2 * i as i32);
    let content_ref = |i: usize| Ref::new(11 + 2 * i as i32);

    pdf.catalog(catalog).pages(tree);
    pdf.pages(tree).kids((0..pages).map(page_ref)).count(pages as i32);
    pdf.document_info(info)
        .title(pdf_writer::TextStr(&format!("Remittance statement {}", statement.number())))
        .producer(pdf_writer::TextStr("rehome"));
    for (_, id, base) in fonts {
        pdf.type1_font(id).base_font(Name(base.as_bytes())).encoding_predefined(Name(b"WinAnsiEncoding"));
    }

    let mut remaining = rows.as_slice();
    for index in 0..pages {
        let mut content = Content::new();
        let top = if index == 0 {
            heading(&mut content, statement);
            FIRST_TOP
        } else {
            OTHER_TOP
        };
        let capacity = if index == 0 { first_capacity } else { other_capacity };
        let (these, later) = remaining.split_at(capacity.min(remaining.len()));
        remaining = later;
        table(&mut content, top, these);
        if index + 1 == pages {
            let y = top - ROW * (these.len() as f32 + 1.0);
            let payable = format!("Amount payable: {} GBP", pounds(statement.totals().amount));
            text(&mut content, BOLD, 11.0, MARGIN, y.max(BOTTOM) - 6.0, &payable);
        }
        let footer =
            format!("Statement {} - {} - page {} of {pages}", statement.number(), statement.brand(), index + 1);
        text(&mut content, PROSE, 8.0, MARGIN, MARGIN, &footer);
        let stream = compress(&content.finish().into_vec());
        pdf.stream(content_ref(index), &stream).filter(Filter::FlateDecode);
        let mut page = pdf.page(page_ref(index));
        page.parent(tree).media_box(Rect::new(0.0, 0.0, WIDTH, HEIGHT)).contents(content_ref(index));
        let mut resources = page.resources();
        let mut font_dict = resources.fonts();
        for (name, id, _) in fonts {
            font_dict.pair(name, id);
        }
        font_dict.finish();
        resources.finish();
        page.finish();
    }
    pdf.finish()
}

fn rows_between(top: f32, bottom: f32) -> usize {
    // The header row takes the first line; the totals and the amount payable need two more.
    (((top - bottom) / ROW) as usize).saturating_sub(3).max(1)
}

/// The heading block of the first page: what the statement is, and whom it pays.
fn heading(content: &mut Content, statement: &Statement) {
    let mut y = HEIGHT - MARGIN - 16.0;
    text(content, BOLD, 18.0, MARGIN, y, "Remittance statement");
    y -= 26.0;
    let facts = [
        format!("Statement number: {}", statement.number()),
        format!("Brand: {}", statement.brand()),
        // In words in the brand's zone; the lines' columns keep ISO 8601.
        format!("Period to: {}", statement.zone().when(statement.record.period_end.get())),
        format!("Issued: {}", statement.zone().when(statement.record.issued_at.get())),
        format!("Lines: {}", statement.lines.len()),
        "Currency: GBP (amounts in pounds)".to_owned(),
    ];
    for fact in &facts {
        text(content, PROSE, 10.0, MARGIN, y, fact);
        y -= 14.0;
    }
    let mut y = HEIGHT - MARGIN - 42.0;
    let x = WIDTH / 2.0;
    text(content, BOLD, 10.0, x, y, "Billed to");
    y -= 14.0;
    for line in statement.billing_lines() {
        text(content, PROSE, 10.0, x, y, &line);
        y -= 13.0;
    }
}

/// The column heads, `rows`, and, on the last page, the totals (`rows` then ends with them).
fn table(content: &mut Content, top: f32, rows: &[String]) {
    text(content, MONO, TABLE_SIZE, MARGIN, top, &header());
    content.set_line_width(0.5).move_to(MARGIN, top - 3.0).line_to(WIDTH - MARGIN, top - 3.0).stroke();
    for (i, row) in rows.iter().enumerate() {
        text(content, MONO, TABLE_SIZE, MARGIN, top - ROW * (i as f32 + 1.0), row);
    }
}

/// Column widths in characters.
const WIDTHS: [usize; 12] = [7, 8, 8, 8, 44, 4, 10, 11, 11, 9, 9, 11];
const HEADS: [&str; 12] = [
    "Entry",
    "Type",
    "Order",
    "Listing",
    "Title",
    "Qty",
    "Delivered",
    "Gross",
    "Commission",
    "VAT",
    "Delivery",
    "Amount",
];

fn header() -> String {
    columns(&HEADS.map(str::to_owned))
}

/// Every line of the table, then the totals row.
fn table_rows(statement: &Statement) -> Vec<String> {
    let mut rows: Vec<String> = statement
        .lines
        .iter()
        .map(|line| {
            columns(&[
                line.id.to_string(),
                line.kind.clone(),
                line.order_reference.clone(),
                line.listing_id.to_string(),
                line.title.clone(),
                line.quantity.to_string(),
                line.delivered_at.get(..10).unwrap_or_default().to_owned(),
                pounds(line.money.gross_pence),
                pounds(line.money.commission_pence),
                pounds(line.money.vat_pence),
                pounds(line.money.delivery_pence),
                pounds(line.money.amount_pence),
            ])
        })
        .collect();
    let totals = statement.totals();
    let mut last: [String; 12] = Default::default();
    last[0] = "Totals".to_owned();
    for (cell, pence) in
        last[7..].iter_mut().zip([totals.gross, totals.commission, totals.vat, totals.delivery, totals.amount])
    {
        *cell = pounds(pence);
    }
    rows.push(columns(&last));
    rows
}

/// Fits each cell to its column: text left-aligned and cut with `...`, numbers (from the
/// quantity on) right-aligned.
fn columns(cells: &[String; 12]) -> String {
    let mut line = String::new();
    for (i, (cell, width)) in cells.iter().zip(WIDTHS).enumerate() {
        if i > 0 {
            line.push(' ');
        }
        let fitted: String = if cell.chars().count() > width {
            cell.chars().take(width - 3).chain("...".chars()).collect()
        } else {
            cell.clone()
        };
        if i >= 5 {
            line.push_str(&format!("{fitted:>width$}"));
        } else {
            line.push_str(&format!("{fitted:<width$}"));
        }
    }
    line.trim_end().to_owned()
}

fn text(content: &mut Content, font: Name, size: f32, x: f32, y: f32, s: &str) {
    content.begin_text().set_font(font, size).next_line(x, y).show(Str(&win_ansi(s))).end_text();
}

fn compress(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = ZlibEncoder::new(Vec::with_capacity(bytes.len() / 3), Compression::default());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

/// `s` in WinAnsiEncoding: Latin-1 as is, the typographic marks Windows-1252 adds at
/// 0x80-0x9F, anything else (and control characters) as `?`.
fn win_ansi(s: &str) -> Vec<u8> {
    s.chars()
        .map(|c| match c {
            ' '..='~' => c as u8,
            '\u{a0}'..='\u{ff}' => c as u32 as u8,
            '€' => 0x80,
            '‚' => 0x82,
            '„' => 0x84,
            '…' => 0x85,
            '‘' => 0x91,
            '’' => 0x92,
            '“' => 0x93,
            '”' => 0x94,
            '•' => 0x95,
            '–' => 0x96,
            '—' => 0x97,
            '™' => 0x99,
            _ => b'?',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_encoded_for_the_standard_fonts() {
        assert_eq!(win_ansi("Bouclé £5 – ok"), b"Boucl\xe9 \xa35 \x96 ok".to_vec());
        assert_eq!(win_ansi("雪\u{7}"), b"??".to_vec());
    }

    #[test]
    fn cells_fit_their_columns() {
        let mut cells: [String; 12] = Default::default();
        cells[4] = "A very long title that runs far past the width of its column".to_owned();
        cells[11] = "12.50".to_owned();
        let line = columns(&cells);
        assert!(line.contains("A very long title that runs far past the ..."), "{line}");
        assert!(line.ends_with(" 12.50"));
        assert_eq!(line.chars().count(), WIDTHS.iter().sum::<usize>() + WIDTHS.len() - 1);
    }
}
