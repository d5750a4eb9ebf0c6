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
use rehome_domain::statement::Entry;
use rehome_domain::wallet::EntryType;

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

/// The PDF of `statement`, all its lines in hand. The same bytes as
/// [`Writer`] fed the same lines one by one.
#[cfg(test)]
pub fn render(statement: &Statement) -> Vec<u8> {
    let head = Statement { record: statement.record.clone(), lines: Vec::new() };
    let mut writer = Writer::new(head, statement.lines.len());
    for line in &statement.lines {
        writer.line(line);
    }
    writer.finish()
}

/// A statement's PDF written as its lines arrive, page by page: it holds the finished
/// pages' bytes (compressed) and the rows of the page being filled, never every line. The
/// number of lines is told up front (the statement's `line_count`): the page tree, the
/// heading and every footer ("page i of n") need it before the first line.
pub struct Writer {
    /// The statement without its lines (its number, brand, billing, totals).
    head: Statement,
    lines: usize,
    pdf: Pdf,
    pages: usize,
    first_capacity: usize,
    other_capacity: usize,
    /// The page being filled, and its rows.
    index: usize,
    rows: Vec<String>,
}

const CATALOG: Ref = Ref::new(1);
const TREE: Ref = Ref::new(2);
const INFO: Ref = Ref::new(3);
const FONTS: [(Name, Ref, &str); 3] =
    [(PROSE, Ref::new(4), "Helvetica"), (BOLD, Ref::new(5), "Helvetica-Bold"), (MONO, Ref::new(6), "Courier")];

fn page_ref(i: usize) -> Ref {
    Ref::new(10 + 2 * i as i32)
}

fn content_ref(i: usize) -> Ref {
    Ref::new(11 + 2 * i as i32)
}

/// A PDF of `pages` pages for `statement`, before its pages: the catalog, the page tree,
/// the document's title and the three standard fonts.
fn prologue(statement: &Statement, pages: usize) -> Pdf {
    let mut pdf = Pdf::new();
    pdf.catalog(CATALOG).pages(TREE);
    pdf.pages(TREE).kids((0..pages).map(page_ref)).count(pages as i32);
    pdf.document_info(INFO)
        .title(pdf_writer::TextStr(&format!("Remittance statement {}", statement.number())))
        .producer(pdf_writer::TextStr("rehome"));
    for (_, id, base) in FONTS {
        pdf.type1_font(id).base_font(Name(base.as_bytes())).encoding_predefined(Name(b"WinAnsiEncoding"));
    }
    pdf
}

/// Page `index` of the PDF: its compressed content stream and the page object that shows it
/// with the three fonts.
fn page_object(pdf: &mut Pdf, index: usize, content: Content) {
    let stream = compress(&content.finish().into_vec());
    pdf.stream(content_ref(index), &stream).filter(Filter::FlateDecode);
    let mut page = pdf.page(page_ref(index));
    page.parent(TREE).media_box(Rect::new(0.0, 0.0, WIDTH, HEIGHT)).contents(content_ref(index));
    let mut resources = page.resources();
    let mut font_dict = resources.fonts();
    for (name, id, _) in FONTS {
        font_dict.pair(name, id);
    }
    font_dict.finish();
    resources.finish();
    page.finish();
}

impl Writer {
    /// A PDF of `head` (a statement whose `lines` are not read) with `lines` lines to come.
    pub fn new(head: Statement, lines: usize) -> Self {
        let first_capacity = rows_between(FIRST_TOP, BOTTOM);
        let other_capacity = rows_between(OTHER_TOP, BOTTOM);
        // The lines, then the totals row.
        let rest = (lines + 1).saturating_sub(first_capacity);
        let pages = 1 + rest.div_ceil(other_capacity);

        let pdf = prologue(&head, pages);
        Self { head, lines, pdf, pages, first_capacity, other_capacity, index: 0, rows: Vec::new() }
    }

    /// The statement this is the PDF of (without its lines).
    pub fn head(&self) -> &Statement {
        &self.head
    }

    fn capacity(&self) -> usize {
        if self.index == 0 {
            self.first_capacity
        } else {
            self.other_capacity
        }
    }

    /// The next line of the table (lines come oldest first, as the statement lists them).
    pub fn line(&mut self, line: &Entry) {
        self.rows.push(line_row(line));
        // A full page is written out unless it is the last, which the totals end.
        if self.rows.len() >= self.capacity() && self.index + 1 < self.pages {
            self.page();
        }
    }

    /// The totals, the amount payable and the last page; the PDF's bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.rows.push(totals_row(&self.head));
        // Told more lines than came, the pages left are written as they fall (the last
        // with the totals), so the page tree holds no page that is not there.
        while self.index + 1 < self.pages {
            self.page();
        }
        self.page();
        self.pdf.finish()
    }

    /// Writes the page being filled (with up to its capacity of the rows held; the last
    /// page takes them all) and starts the next.
    fn page(&mut self) {
        let index = self.index;
        let last = index + 1 >= self.pages;
        let take = if last { self.rows.len() } else { self.capacity().min(self.rows.len()) };
        let these: Vec<String> = self.rows.drain(..take).collect();
        let mut content = Content::new();
        let top = if index == 0 {
            heading(&mut content, &self.head, self.lines);
            FIRST_TOP
        } else {
            OTHER_TOP
        };
        table(&mut content, top, &these);
        if last {
            let y = top - ROW * (these.len() as f32 + 1.0);
            let payable = format!("Amount payable: {} GBP", pounds(self.head.totals().amount));
            text(&mut content, BOLD, 11.0, MARGIN, y.max(BOTTOM) - 6.0, &payable);
        }
        let footer =
            format!("Statement {} - {} - page {} of {}", self.head.number(), self.head.brand(), index + 1, self.pages);
        text(&mut content, PROSE, 8.0, MARGIN, MARGIN, &footer);
        page_object(&mut self.pdf, index, content);
        self.index += 1;
    }
}

fn rows_between(top: f32, bottom: f32) -> usize {
    // The header row takes the first line; the totals and the amount payable need two more.
    (((top - bottom) / ROW) as usize).saturating_sub(3).max(1)
}

/// The heading block of the first page: what the statement is, and whom it pays.
fn heading(content: &mut Content, statement: &Statement, lines: usize) {
    let mut y = HEIGHT - MARGIN - 16.0;
    text(content, BOLD, 18.0, MARGIN, y, "Remittance statement");
    y -= 26.0;
    let facts = [
        format!("Statement number: {}", statement.number()),
        format!("Brand: {}", statement.brand()),
        // In words in the brand's zone; the lines' columns keep ISO 8601.
        format!("Period: {}", statement.period_words()),
        format!("Issued: {}", statement.zone().when(statement.record.issued_at.get())),
        format!("Lines: {lines}"),
        "Currency: GBP (amounts in pounds)".to_owned(),
    ];
    for fact in &facts {
        text(content, PROSE, 10.0, MARGIN, y, fact);
        y -= 14.0;
    }
    let mut y = HEIGHT - MARGIN - 42.0;
    let x = WIDTH / 2.0;
    text(content, BOLD, 10.0, x, y, "Statement for");
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

/// A line as its row of the table.
fn line_row(line: &Entry) -> String {
    columns(&[
        line.id.to_string(),
        EntryType::named(&line.kind).map_or_else(|| line.kind.clone(), |t| t.word().to_owned()),
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
}

/// The last row of the table: the statement's totals.
fn totals_row(statement: &Statement) -> String {
    let totals = statement.totals();
    let mut last: [String; 12] = Default::default();
    last[0] = "Totals".to_owned();
    for (cell, pence) in
        last[7..].iter_mut().zip([totals.gross, totals.commission, totals.vat, totals.delivery, totals.amount])
    {
        *cell = pounds(pence);
    }
    columns(&last)
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
pub(crate) mod tests {
    use super::*;

    use rehome_domain::time::Ts;

    use rehome_domain::view::{EntryRecord, RemittanceRecord};

    /// A statement of `lines` lines, with titles long, short and accented.
    pub(crate) fn sample(lines: usize) -> Statement {
        let at = Ts::from(chrono::DateTime::parse_from_rfc3339("2026-10-03T10:00:00Z").unwrap().to_utc());
        let records: Vec<EntryRecord> = (0..lines as i64)
            .map(|i| EntryRecord {
                id: 1000 + i,
                kind: if i % 7 == 0 { "trade_in" } else { "sale" }.into(),
                order_id: 5000 + i,
                listing_id: 9000 + i,
                title: match i % 3 {
                    0 => format!("Bouclé armchair n°{i}"),
                    1 => "A very long title that runs far past the width of its column, and on".to_owned(),
                    _ => format!("=SUM({i})"),
                },
                quantity: 1 + i % 3,
                gross_pence: 1999 + i,
                commission_pence: 300,
                vat_pence: 60,
                delivery_pence: i % 2 * 500,
                amount_pence: 1639 + i,
                delivered_at: at,
                available_at: at,
                remittance_id: Some(77),
            })
            .collect();
        let sum = |f: fn(&EntryRecord) -> i64| records.iter().map(f).sum::<i64>();
        let record = RemittanceRecord {
            id: 77,
            brand_slug: "oak-and-ash".into(),
            brand_name: "Oak & Ash – Möbel".into(),
            brand_time_zone: "Europe/London".into(),
            number: 12,
            period_end: at,
            issued_at: at,
            period_start: None,
            billing: r#"{"company_name":"Oak & Ash Ltd","address_1":"1 High St","city":"York","postcode":"YO1 1AA","country":"GB","invoice_email":"ap@oak.example"}"#.into(),
            line_count: lines as i64,
            gross_pence: sum(|r| r.gross_pence),
            commission_pence: sum(|r| r.commission_pence),
            vat_pence: sum(|r| r.vat_pence),
            delivery_pence: sum(|r| r.delivery_pence),
            amount_pence: sum(|r| r.amount_pence),
        };
        Statement::new(record, &records)
    }

    /// The rendering before it was streamed (every row built first, then cut into pages),
    /// kept to prove the streamed one writes the same bytes.
    fn render_whole(statement: &Statement) -> Vec<u8> {
        let mut rows: Vec<String> = statement.lines.iter().map(line_row).collect();
        rows.push(totals_row(statement));
        let first_capacity = rows_between(FIRST_TOP, BOTTOM);
        let other_capacity = rows_between(OTHER_TOP, BOTTOM);
        let rest = rows.len().saturating_sub(first_capacity);
        let pages = 1 + rest.div_ceil(other_capacity);
        let mut pdf = prologue(statement, pages);
        let mut remaining = rows.as_slice();
        for index in 0..pages {
            let mut content = Content::new();
            let top = if index == 0 {
                heading(&mut content, statement, statement.lines.len());
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
            page_object(&mut pdf, index, content);
        }
        pdf.finish()
    }

    #[test]
    fn the_streamed_pdf_is_the_whole_one_byte_for_byte() {
        let (first, other) = (rows_between(FIRST_TOP, BOTTOM), rows_between(OTHER_TOP, BOTTOM));
        // Empty, one page, the totals alone on a page, exactly full pages, many pages.
        let sizes = [0, 1, first - 1, first, first + 1, first + other - 1, first + other, first + 3 * other + 5, 2500];
        for lines in sizes {
            let statement = sample(lines);
            let whole = render_whole(&statement);
            let head = Statement { record: statement.record.clone(), lines: Vec::new() };
            let mut streamed = Writer::new(head, lines);
            for line in &statement.lines {
                streamed.line(line);
            }
            let streamed = streamed.finish();
            assert!(streamed == whole, "{lines} lines: the streamed PDF differs");
            assert!(render(&statement) == whole, "{lines} lines");
            let pages = 1 + (lines + 1).saturating_sub(first).div_ceil(other);
            // `/Type /Page` for each page, `/Type /Pages` for the tree.
            let marker = b"/Type /Pag";
            assert_eq!(streamed.windows(marker.len()).filter(|w| w == marker).count(), pages + 1, "{lines} lines");
        }
    }

    #[test]
    fn told_more_lines_than_come_it_still_writes_every_page_it_named() {
        let statement = sample(3);
        let head = Statement { record: statement.record.clone(), lines: Vec::new() };
        let mut writer = Writer::new(head, 400);
        for line in &statement.lines {
            writer.line(line);
        }
        let pdf = writer.finish();
        assert!(pdf.starts_with(b"%PDF"));
        assert!(!pdf.is_empty());
    }

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
