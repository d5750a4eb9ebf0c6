//! The legal billing entity printed on every remittance invoice.

use serde::Serialize;
use serde_json::{Map, Value};

use super::fields::{Lines, Parsed};
use super::shapes::{
    postcode_anywhere, CompanyNumber, Country, Email, UkPostcode, UkVatNumber, COUNTRY_FIELD, EMAIL_RULE,
    UNITED_KINGDOM,
};
use crate::body::{BodySpec, Field, FieldType};
use crate::FieldError;

/// The billing entity. A field never set is an empty string; `country` defaults to
/// `United Kingdom`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Billing {
    /// Registered legal name.
    pub company_name: String,
    pub address_1: String,
    /// Optional second line; may be empty.
    pub address_2: String,
    pub city: String,
    /// In the United Kingdom: a UK postcode, upper-case with one space (`SW1A 1AA`).
    pub postcode: String,
    pub country: String,
    /// In the United Kingdom: a Companies House number (`01234567`, `SC123456`).
    pub company_number: String,
    /// In the United Kingdom: `GB` and 9 or 12 digits, `GBGD`/`GBHA` and 3 digits.
    pub vat_number: String,
    /// Where remittance PDFs and invoices are sent.
    pub invoice_email: String,
}

impl Default for Billing {
    fn default() -> Self {
        Self {
            company_name: String::new(),
            address_1: String::new(),
            address_2: String::new(),
            city: String::new(),
            postcode: String::new(),
            country: UNITED_KINGDOM.to_owned(),
            company_number: String::new(),
            vat_number: String::new(),
            invoice_email: String::new(),
        }
    }
}

pub const NAME_MAX: usize = 160;
pub const ADDRESS_LINE_MAX: usize = 160;
pub const CITY_MAX: usize = 80;
pub const POSTCODE_MAX: usize = 16;
pub const REGISTRATION_MAX: usize = 32;

/// The body of `PATCH /v1/partner/settings/billing`, which [`BillingPatch::parse`] reads.
pub static BILLING_BODY: BodySpec = BodySpec {
    name: "BillingInput",
    doc: "The body of `PATCH /v1/partner/settings/billing`: only the fields to change. `\"\"` or \
          `null` clears a field; an empty `country` means `United Kingdom`. When the country is \
          the United Kingdom (`United Kingdom`, `UK` or `GB`, any case), the postcode, VAT number \
          and company number must have UK shapes, and a change of country to the United Kingdom \
          checks the values already on file.",
    fields: &[
        Field::optional("company_name", FieldType::Text { max: NAME_MAX }, "Registered legal name.")
            .hinted("Your registered legal name, as statements are addressed to it."),
        Field::optional("address_1", FieldType::Text { max: ADDRESS_LINE_MAX }, "First address line.")
            .labelled("Address line 1"),
        Field::optional("address_2", FieldType::Text { max: ADDRESS_LINE_MAX }, "Second address line.")
            .labelled("Address line 2"),
        Field::optional("city", FieldType::Text { max: CITY_MAX }, "Town or city."),
        Field::optional(
            "postcode",
            FieldType::Text { max: POSTCODE_MAX },
            "UK: the Royal Mail format, answered upper-case with one space; elsewhere 2 to 10 letters and digits \
             (`postcode_invalid`).",
        )
        .rule(
            "must be a UK postcode, like SW1A 1AA (elsewhere, 2 to 10 letters and digits; for an address outside the \
             UK, change the country first)",
        ),
        COUNTRY_FIELD,
        Field::optional(
            "company_number",
            FieldType::Text { max: REGISTRATION_MAX },
            "UK: 8 digits, or 2 letters and 6 digits (`company_number_invalid`).",
        )
        .rule("must be a UK company number: 8 digits, or 2 letters and 6 digits, like SC123456")
        .hinted("From Companies House: 8 digits, or 2 letters and 6 digits, like SC123456."),
        Field::optional(
            "vat_number",
            FieldType::Text { max: REGISTRATION_MAX },
            "UK: `GB` and 9 digits whose check digits hold (HMRC's modulus 97 or 9755), or those 9 and a \
             3-digit branch, or `GBGD` 000–499 / `GBHA` 500–999; spaces allowed (`vat_number_invalid`); \
             answered without spaces.",
        )
        .labelled("VAT number")
        .rule("must be a UK VAT number whose check digits hold: GB and 9 digits, like GB999999973")
        .hinted("GB and 9 digits, like GB999999973; printed on your statements."),
        Field::optional(
            "invoice_email",
            FieldType::Text { max: Email::MAX_CHARS },
            "Where remittance PDFs and invoices are sent (`invoice_email_invalid`).",
        )
        .rule(EMAIL_RULE)
        .hinted("Where each monthly statement is emailed as a PDF."),
    ],
    example: r#"{"company_name": "Acme Sofas Ltd", "postcode": "SW1A 1AA", "country": "United Kingdom", "company_number": "SC123456", "vat_number": "GB999999973", "invoice_email": "accounts@acme.example"}"#,
};
crate::documented_body!(BillingPatch, BILLING_BODY);

/// A valid partial update of the billing entity: `None` leaves a field as it is, `Some("")`
/// clears it (an empty `country` goes back to `United Kingdom`). Only
/// [`BillingPatch::parse`] builds one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BillingPatch {
    pub company_name: Option<String>,
    pub address_1: Option<String>,
    pub address_2: Option<String>,
    pub city: Option<String>,
    pub postcode: Option<String>,
    pub country: Option<String>,
    pub company_number: Option<String>,
    pub vat_number: Option<String>,
    pub invoice_email: Option<String>,
    _parsed: Parsed,
}

impl BillingPatch {
    /// Parses a PATCH body against the billing entity on file ([`BillingEdit::of`]).
    pub fn parse(body: &Map<String, Value>, current: &Billing) -> Result<Self, Vec<FieldError>> {
        BillingEdit::parse(body).of(current)
    }
}

/// One field as a body gives it: `None` when not given; else its text under the one text
/// rule (`null` and blanks clear it: `""`) or the reason's suffix.
type GivenText = Option<Result<String, &'static str>>;

/// A change of the billing entity as a body gives it, each field read under the one text
/// rule. The shapes depend on the entity on file (the country it lands in), which only the
/// use case reads: [`Self::of`] checks them.
#[derive(Debug, Clone)]
pub struct BillingEdit {
    company_name: GivenText,
    address_1: GivenText,
    address_2: GivenText,
    city: GivenText,
    country: GivenText,
    postcode: GivenText,
    company_number: GivenText,
    vat_number: GivenText,
    invoice_email: GivenText,
    /// Fields the body names that the billing entity does not have, in the body's order.
    unknown: Vec<String>,
}

impl BillingEdit {
    pub fn parse(body: &Map<String, Value>) -> Self {
        let text = |field: &str, max_chars: usize| -> GivenText {
            Some(match body.get(field)? {
                Value::Null => Ok(String::new()),
                value => crate::text::text(value, max_chars, Lines::One).map(Option::unwrap_or_default),
            })
        };
        Self {
            company_name: text("company_name", NAME_MAX),
            address_1: text("address_1", ADDRESS_LINE_MAX),
            address_2: text("address_2", ADDRESS_LINE_MAX),
            city: text("city", CITY_MAX),
            country: text("country", Country::MAX_CHARS),
            postcode: text("postcode", POSTCODE_MAX),
            company_number: text("company_number", REGISTRATION_MAX),
            vat_number: text("vat_number", REGISTRATION_MAX),
            invoice_email: text("invoice_email", Email::MAX_CHARS),
            unknown: body.keys().filter(|k| !BILLING_BODY.accepts(k)).cloned().collect(),
        }
    }

    /// The patch over the entity on file, or every reason it is refused (in the fields'
    /// order, unknown fields last). When the resulting country is the United Kingdom, the
    /// postcode, VAT and company numbers must have UK shapes: those given, and, when the
    /// country changes to the United Kingdom, those on file.
    pub fn of(self, current: &Billing) -> Result<BillingPatch, Vec<FieldError>> {
        let errors = &mut Vec::new();
        let company_name = read(errors, "company_name", self.company_name);
        let address_1 = read(errors, "address_1", self.address_1);
        let address_2 = read(errors, "address_2", self.address_2);
        let city = read(errors, "city", self.city);
        let country = read(errors, "country", self.country).and_then(|c| match Country::parse(&c) {
            Some(country) => Some(String::from(country)),
            None => {
                errors.push(FieldError::of("country", "invalid"));
                None
            }
        });

        let uk = Country::is_united_kingdom(country.as_deref().unwrap_or(&current.country));
        // Moving to the United Kingdom checks the values on file as well as those given.
        let recheck = uk && !Country::is_united_kingdom(&current.country);
        let on_file = |value: &str| if recheck { Some(value.to_owned()) } else { None };
        let postcode = if uk {
            uk_field(errors, "postcode", self.postcode, uk, on_file(&current.postcode), |s| {
                UkPostcode::parse(s).map(String::from)
            })
        } else {
            read(errors, "postcode", self.postcode).and_then(|text| shaped(errors, "postcode", text, postcode_anywhere))
        };
        let company_number =
            uk_field(errors, "company_number", self.company_number, uk, on_file(&current.company_number), |s| {
                CompanyNumber::parse(s).map(String::from)
            });
        let vat_number = uk_field(errors, "vat_number", self.vat_number, uk, on_file(&current.vat_number), |s| {
            UkVatNumber::parse(s).map(String::from)
        });
        let invoice_email = read(errors, "invoice_email", self.invoice_email)
            .and_then(|text| shaped(errors, "invoice_email", text, |s| Email::parse(s).map(String::from)));
        errors.extend(self.unknown.iter().map(|field| FieldError::of(field, "unknown")));
        if !errors.is_empty() {
            return Err(std::mem::take(errors));
        }
        Ok(BillingPatch {
            company_name,
            address_1,
            address_2,
            city,
            postcode,
            country,
            company_number,
            vat_number,
            invoice_email,
            _parsed: Parsed,
        })
    }
}

/// The text of a field given, recording its reason when it was refused.
fn read(errors: &mut Vec<FieldError>, field: &str, given: GivenText) -> Option<String> {
    match given? {
        Ok(text) => Some(text),
        Err(suffix) => {
            errors.push(FieldError::of(field, suffix));
            None
        }
    }
}

/// A text with a shape: empty clears it; otherwise `parse` gives the normalised value, or
/// `<field>_invalid` is recorded.
fn shaped(
    errors: &mut Vec<FieldError>,
    field: &str,
    text: String,
    parse: impl FnOnce(&str) -> Option<String>,
) -> Option<String> {
    if text.is_empty() {
        return Some(text);
    }
    let value = parse(&text);
    if value.is_none() {
        errors.push(FieldError::of(field, "invalid"));
    }
    value
}

/// A field with a UK shape: in the United Kingdom, the value given (or else `on_file`) in its
/// UK shape, empty clearing it; elsewhere free text.
fn uk_field(
    errors: &mut Vec<FieldError>,
    field: &str,
    given: GivenText,
    uk: bool,
    on_file: Option<String>,
    parse: fn(&str) -> Option<String>,
) -> Option<String> {
    let named = given.is_some();
    let text = read(errors, field, given);
    if !uk {
        return text;
    }
    let value = if named { text? } else { on_file.filter(|v| !v.is_empty())? };
    shaped(errors, field, value, parse)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse_on(value: Value, current: &Billing) -> Result<BillingPatch, Vec<String>> {
        let Value::Object(body) = value else { unreachable!() };
        BillingPatch::parse(&body, current).map_err(|errors| errors.into_iter().map(|e| e.code).collect())
    }

    fn parse(value: Value) -> Result<BillingPatch, Vec<String>> {
        parse_on(value, &Billing::default())
    }

    fn in_france() -> Billing {
        Billing {
            country: "France".into(),
            postcode: "75001".into(),
            vat_number: "FR12345678901".into(),
            company_number: "RCS 123".into(),
            ..Billing::default()
        }
    }

    #[test]
    fn the_documented_fields_are_the_accepted_ones() {
        let body: Map<String, Value> = BILLING_BODY.names().map(|n| (n.to_owned(), json!(""))).collect();
        assert!(BillingPatch::parse(&body, &Billing::default()).is_ok());
        assert_eq!(BILLING_BODY.names().count(), 9);
        assert_eq!(parse(json!({"iban": ""})).map(|_| ()), Err(vec!["iban_unknown".to_owned()]));
    }

    #[test]
    fn each_reason_of_the_billing_entity() {
        let cases = [
            (json!({"company_name": "x".repeat(161)}), "company_name_too_long"),
            (json!({"company_name": 1}), "company_name_invalid"),
            (json!({"address_1": "x".repeat(161)}), "address_1_too_long"),
            (json!({"address_2": false}), "address_2_invalid"),
            (json!({"city": "x".repeat(81)}), "city_too_long"),
            (json!({"postcode": "12345"}), "postcode_invalid"),
            (json!({"postcode": "x".repeat(17)}), "postcode_too_long"),
            (json!({"country": "x".repeat(81)}), "country_too_long"),
            (json!({"country": 44}), "country_invalid"),
            (json!({"company_number": "1234"}), "company_number_invalid"),
            (json!({"company_number": "x".repeat(33)}), "company_number_too_long"),
            (json!({"vat_number": "GB123"}), "vat_number_invalid"),
            (json!({"vat_number": "FR12345678901"}), "vat_number_invalid"),
            (json!({"invoice_email": "accounts"}), "invoice_email_invalid"),
            (json!({"invoice_email": ["a@b.com"]}), "invoice_email_invalid"),
            (json!({"iban": "GB00"}), "iban_unknown"),
        ];
        for (body, code) in cases {
            assert_eq!(parse(body.clone()), Err(vec![code.to_owned()]), "{body}");
        }
    }

    #[test]
    fn uk_values_are_normalised() {
        let patch = parse(json!({
            "country": "uk",
            "postcode": "sw1a1aa",
            "vat_number": "gb 999 9999 73",
            "company_number": "sc123456",
            "invoice_email": "Accounts@Acme.Example",
            "address_2": "",
        }))
        .unwrap();
        assert_eq!(patch.country.as_deref(), Some("United Kingdom"));
        assert_eq!(patch.postcode.as_deref(), Some("SW1A 1AA"));
        assert_eq!(patch.vat_number.as_deref(), Some("GB999999973"));
        assert_eq!(patch.company_number.as_deref(), Some("SC123456"));
        assert_eq!(patch.invoice_email.as_deref(), Some("Accounts@acme.example"));
        assert_eq!(patch.address_2.as_deref(), Some(""));
        assert_eq!(patch.company_name, None);
    }

    #[test]
    fn other_countries_take_their_own_formats() {
        let patch = parse(json!({"country": "France", "postcode": "75001", "vat_number": "FR12345678901"})).unwrap();
        assert_eq!(patch.country.as_deref(), Some("France"));
        assert_eq!(patch.postcode.as_deref(), Some("75001"));
        assert!(parse_on(json!({"postcode": "75002"}), &in_france()).is_ok());
    }

    #[test]
    fn moving_to_the_united_kingdom_checks_the_values_on_file() {
        let errors = parse_on(json!({"country": "United Kingdom"}), &in_france()).unwrap_err();
        assert_eq!(errors, ["postcode_invalid", "company_number_invalid", "vat_number_invalid"]);
        let patch = parse_on(
            json!({"country": "GB", "postcode": "M1 1AE", "company_number": "", "vat_number": "GB999999973"}),
            &in_france(),
        )
        .unwrap();
        assert_eq!(patch.postcode.as_deref(), Some("M1 1AE"));
        assert_eq!(patch.company_number.as_deref(), Some(""));
    }

    #[test]
    fn moving_to_the_united_kingdom_normalises_valid_values_on_file() {
        let on_file = Billing { country: "Ireland".into(), postcode: "m1 1ae".into(), ..Billing::default() };
        let patch = parse_on(json!({"country": "UK"}), &on_file).unwrap();
        assert_eq!(patch.postcode.as_deref(), Some("M1 1AE"));
        assert_eq!(patch.vat_number, None);
    }

    #[test]
    fn an_empty_country_means_the_united_kingdom() {
        let on_file = Billing { country: "France".into(), ..Billing::default() };
        let patch = parse_on(json!({"country": "", "postcode": "M1 1AE"}), &on_file).unwrap();
        assert_eq!(patch.country.as_deref(), Some("United Kingdom"));
    }

    #[test]
    fn every_reason_is_reported_at_once() {
        let errors =
            parse(json!({"postcode": "nope", "vat_number": "nope", "invoice_email": "nope", "x": 1})).unwrap_err();
        assert_eq!(errors, ["postcode_invalid", "vat_number_invalid", "invoice_email_invalid", "x_unknown"]);
    }
}
