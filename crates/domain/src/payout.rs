//! Trade-in payouts: the options a brand offers, the customer's choice, and its value.

use serde::Serialize;
use serde_json::{Map, Value};

use super::body::{BodySpec, Field, FieldType};
use super::money::{credit_value, Pence};
use super::reader::BodyReader;
use super::wire::UnknownValue;
use crate::FieldError;

pub use super::limits::{BOOST_PERCENT, CODE_VALIDITY_DAYS};

/// The payout options a brand offers its customers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PayoutOptions {
    /// Customers may choose store credit. Default true.
    pub credit_enabled: bool,
    /// Customers may choose cash. Default true.
    pub cash_enabled: bool,
    /// Credit is worth `credit_boost_percent` / 100 × the base; 100..200, default 100.
    #[cfg_attr(feature = "openapi", schema(minimum = 100, maximum = 200, example = 120))]
    pub credit_boost_percent: u16,
    /// Days a credit code stays valid; 1..1095, default 365.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 1095, example = 365))]
    pub code_validity_days: u16,
}

impl Default for PayoutOptions {
    fn default() -> Self {
        Self { credit_enabled: true, cash_enabled: true, credit_boost_percent: 100, code_validity_days: 365 }
    }
}

impl PayoutOptions {
    /// Customers can choose at least one way to be paid.
    pub fn offers_a_choice(&self) -> bool {
        self.credit_enabled || self.cash_enabled
    }

    pub fn offers(&self, choice: CustomerChoice) -> bool {
        match choice {
            CustomerChoice::Credit => self.credit_enabled,
            CustomerChoice::Cash => self.cash_enabled,
        }
    }

    /// What the customer is paid for an item that sold for `base`.
    pub fn value(&self, choice: CustomerChoice, base: Pence) -> Pence {
        match choice {
            CustomerChoice::Credit => credit_value(base, self.credit_boost_percent),
            CustomerChoice::Cash => base,
        }
    }
}

/// A valid partial update of the payout options: `None` leaves a field as it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PayoutOptionsPatch {
    pub credit_enabled: Option<bool>,
    pub cash_enabled: Option<bool>,
    pub credit_boost_percent: Option<u16>,
    pub code_validity_days: Option<u16>,
}

pub const PAYOUT_OPTIONS_BODY: BodySpec = BodySpec {
    name: "PayoutOptionsInput",
    doc: "The body of `PATCH /v1/partner/settings/payouts`: only the fields to change. Other\nfields are refused \
          (`<field>_unknown`); a wrong JSON type, `null` or a number out of\nrange is `<field>_invalid`.",
    fields: &[
        Field::optional("credit_enabled", FieldType::Boolean, "Customers may choose store credit.").labelled("Credit"),
        Field::optional("cash_enabled", FieldType::Boolean, "Customers may choose cash.").labelled("Cash"),
        Field::optional(
            "credit_boost_percent",
            FieldType::Integer { min: *BOOST_PERCENT.start(), max: *BOOST_PERCENT.end() },
            "Integer 100..200.",
        )
        .not_null()
        .labelled("Credit boost (%)"),
        Field::optional(
            "code_validity_days",
            FieldType::Integer { min: *CODE_VALIDITY_DAYS.start(), max: *CODE_VALIDITY_DAYS.end() },
            "Integer 1..1095.",
        )
        .not_null()
        .labelled("Code validity (days)"),
    ],
    example: r#"{"credit_boost_percent": 120, "cash_enabled": false}"#,
};

impl PayoutOptionsPatch {
    /// Booleans must be JSON booleans and numbers JSON integers in range (`<field>_invalid`);
    /// other fields are `<field>_unknown`. `null` is not a value here (`<field>_invalid`).
    pub fn parse(body: &Map<String, Value>) -> Result<Self, Vec<FieldError>> {
        let mut r = BodyReader::of(body, &PAYOUT_OPTIONS_BODY);
        let patch = Self {
            credit_enabled: r.boolean("credit_enabled"),
            cash_enabled: r.boolean("cash_enabled"),
            credit_boost_percent: r.integer("credit_boost_percent", BOOST_PERCENT).and_then(|n| u16::try_from(n).ok()),
            code_validity_days: r.integer("code_validity_days", CODE_VALIDITY_DAYS).and_then(|n| u16::try_from(n).ok()),
        };
        r.finish(patch)
    }

    pub fn apply(&self, to: PayoutOptions) -> PayoutOptions {
        PayoutOptions {
            credit_enabled: self.credit_enabled.unwrap_or(to.credit_enabled),
            cash_enabled: self.cash_enabled.unwrap_or(to.cash_enabled),
            credit_boost_percent: self.credit_boost_percent.unwrap_or(to.credit_boost_percent),
            code_validity_days: self.code_validity_days.unwrap_or(to.code_validity_days),
        }
    }
}

crate::documented_body!(PayoutOptionsPatch, PAYOUT_OPTIONS_BODY);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CustomerChoice {
    Credit,
    Cash,
}

impl CustomerChoice {
    pub const NAMES: &'static [&'static str] = &["credit", "cash"];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Credit => "credit",
            Self::Cash => "cash",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "credit" => Some(Self::Credit),
            "cash" => Some(Self::Cash),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreditDestination {
    /// A partial refund to an order the customer already has.
    ExistingOrder,
    /// A single-use code with an expiry.
    Code,
}

impl CreditDestination {
    pub const NAMES: &'static [&'static str] = &["existing_order", "code"];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::ExistingOrder => "existing_order",
            Self::Code => "code",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "existing_order" => Some(Self::ExistingOrder),
            "code" => Some(Self::Code),
            _ => None,
        }
    }
}

impl TryFrom<String> for CustomerChoice {
    type Error = UnknownValue;
    fn try_from(s: String) -> Result<Self, UnknownValue> {
        Self::parse(&s).ok_or(UnknownValue(s))
    }
}

impl TryFrom<String> for CreditDestination {
    type Error = UnknownValue;
    fn try_from(s: String) -> Result<Self, UnknownValue> {
        Self::parse(&s).ok_or(UnknownValue(s))
    }
}

/// How the customer wants to be paid, complete and consistent: credit always names its
/// destination, credit to an existing order names the order, cash names neither.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayoutChoice {
    pub customer_id: String,
    pub choice: CustomerChoice,
    pub destination: Option<CreditDestination>,
    pub original_order_id: Option<String>,
}

pub const CUSTOMER_ID_MAX: usize = 128;
pub const ORDER_REFERENCE_MAX: usize = 128;

pub const PAYOUT_CHOICE_BODY: BodySpec = BodySpec {
    name: "PayoutChoiceInput",
    doc: "The body of `POST /ops/v1/orders/{id}/payout-choice`: how the customer whose trade-in sold wants to be \
          paid.",
    fields: &[
        Field::required(
            "customer_id",
            FieldType::Text { max: CUSTOMER_ID_MAX },
            "The marketplace's id of the customer.",
        ),
        Field::required("customer_choice", FieldType::Choice(CustomerChoice::NAMES), "`credit` or `cash`."),
        Field::optional(
            "credit_destination",
            FieldType::Choice(CreditDestination::NAMES),
            "`existing_order` or `code`; required for credit, refused for cash.",
        ),
        Field::optional(
            "original_order_id",
            FieldType::Text { max: ORDER_REFERENCE_MAX },
            "Required for credit to an existing order; refused otherwise.",
        ),
    ],
    example: r#"{"customer_id": "cus_1842", "customer_choice": "credit", "credit_destination": "code"}"#,
};

impl PayoutChoice {
    /// Reasons: `customer_id_required`, `customer_choice_required` / `_invalid`,
    /// `credit_destination_required` (credit without one) / `_invalid` (an unknown value, or
    /// any destination with cash), `original_order_id_required` (credit to an existing order
    /// without it) / `_invalid` (given with another destination), `<field>_unknown`.
    pub fn parse(body: &Map<String, Value>) -> Result<Self, Vec<FieldError>> {
        let mut r = BodyReader::of(body, &PAYOUT_CHOICE_BODY);
        let customer_id = r.text("customer_id", CUSTOMER_ID_MAX);
        let customer_id = r.require("customer_id", customer_id);
        let choice = r.text("customer_choice", 32);
        let choice = r.require("customer_choice", choice).and_then(|c| match CustomerChoice::parse(&c) {
            Some(choice) => Some(choice),
            None => r.fail("customer_choice", "invalid"),
        });
        let destination = r.text("credit_destination", 32).and_then(|d| match CreditDestination::parse(&d) {
            Some(destination) => Some(destination),
            None => r.fail("credit_destination", "invalid"),
        });
        let destination_given = r.present("credit_destination");
        let original_order_id = r.text("original_order_id", ORDER_REFERENCE_MAX);
        let order_given = r.present("original_order_id");
        match choice {
            Some(CustomerChoice::Credit) if !destination_given => {
                r.fail::<()>("credit_destination", "required");
            }
            Some(CustomerChoice::Cash) if destination_given => {
                r.fail::<()>("credit_destination", "invalid");
            }
            _ => {}
        }
        match (choice, destination) {
            (Some(CustomerChoice::Credit), Some(CreditDestination::ExistingOrder))
                if original_order_id.is_none() && !order_given =>
            {
                r.fail::<()>("original_order_id", "required");
            }
            (Some(CustomerChoice::Cash), _) | (_, Some(CreditDestination::Code)) if order_given => {
                r.fail::<()>("original_order_id", "invalid");
            }
            _ => {}
        }
        let parsed = match (customer_id, choice) {
            (Some(customer_id), Some(choice)) => Some(Self { customer_id, choice, destination, original_order_id }),
            _ => None,
        };
        let parsed = r.finish(parsed)?;
        // Every path that leaves `parsed` empty recorded a reason, so `finish` failed above.
        parsed.ok_or_else(|| vec![FieldError::of("customer_choice", "invalid")])
    }
}

crate::documented_body!(PayoutChoice, PAYOUT_CHOICE_BODY);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::reader::object as body;

    fn reasons(value: Value) -> Vec<String> {
        PayoutChoice::parse(&body(value)).err().unwrap_or_default().into_iter().map(|e| e.code).collect()
    }

    #[test]
    fn each_consistent_choice_parses() {
        let cash = PayoutChoice::parse(&body(json!({"customer_id": "c1", "customer_choice": "cash"}))).unwrap();
        assert_eq!((cash.choice, cash.destination), (CustomerChoice::Cash, None));
        let code = PayoutChoice::parse(&body(
            json!({"customer_id": "c1", "customer_choice": "credit", "credit_destination": "code"}),
        ))
        .unwrap();
        assert_eq!(code.destination, Some(CreditDestination::Code));
        let order = PayoutChoice::parse(&body(json!({"customer_id": "c1", "customer_choice": "credit",
            "credit_destination": "existing_order", "original_order_id": "ORD-1"})))
        .unwrap();
        assert_eq!(order.original_order_id.as_deref(), Some("ORD-1"));
    }

    #[test]
    fn incomplete_or_inconsistent_choices_are_refused_with_reasons() {
        assert_eq!(reasons(json!({})), ["customer_id_required", "customer_choice_required"]);
        assert_eq!(reasons(json!({"customer_id": "c", "customer_choice": "gold"})), ["customer_choice_invalid"]);
        assert_eq!(reasons(json!({"customer_id": "c", "customer_choice": "credit"})), ["credit_destination_required"]);
        assert_eq!(
            reasons(json!({"customer_id": "c", "customer_choice": "credit", "credit_destination": "existing_order"})),
            ["original_order_id_required"]
        );
        assert_eq!(
            reasons(json!({"customer_id": "c", "customer_choice": "cash", "credit_destination": "code"})),
            ["credit_destination_invalid"]
        );
        assert_eq!(
            reasons(json!({"customer_id": "c", "customer_choice": "credit", "credit_destination": "code",
                "original_order_id": "O1"})),
            ["original_order_id_invalid"]
        );
        assert_eq!(
            reasons(json!({"customer_id": 5, "customer_choice": "cash", "tip": 1})),
            ["customer_id_invalid", "tip_unknown"]
        );
    }

    #[test]
    fn options_patch_reads_types_and_ranges() {
        let patch =
            PayoutOptionsPatch::parse(&body(json!({"credit_boost_percent": 120, "cash_enabled": false}))).unwrap();
        let options = patch.apply(PayoutOptions::default());
        assert_eq!((options.credit_boost_percent, options.cash_enabled, options.credit_enabled), (120, false, true));
        let errors = PayoutOptionsPatch::parse(&body(json!({"credit_boost_percent": 99, "code_validity_days": 1096,
            "credit_enabled": "yes", "cash_enabled": null, "colour": "red"})))
        .unwrap_err();
        let codes: Vec<_> = errors.into_iter().map(|e| e.code).collect();
        assert_eq!(
            codes,
            [
                "credit_enabled_invalid",
                "cash_enabled_invalid",
                "credit_boost_percent_invalid",
                "code_validity_days_invalid",
                "colour_unknown"
            ]
        );
    }

    #[test]
    fn credit_is_boosted_and_cash_is_not() {
        let options = PayoutOptions { credit_boost_percent: 125, ..PayoutOptions::default() };
        assert_eq!(options.value(CustomerChoice::Credit, Pence::new(10)), Pence::new(13));
        assert_eq!(options.value(CustomerChoice::Cash, Pence::new(10)), Pence::new(10));
    }

    #[test]
    fn the_documented_fields_are_exactly_the_accepted_ones() {
        let unknown = |errors: Vec<FieldError>| errors.into_iter().filter(|e| e.code.ends_with("_unknown")).count();
        for name in PAYOUT_OPTIONS_BODY.names() {
            assert_eq!(unknown(PayoutOptionsPatch::parse(&body(json!({ name: null }))).unwrap_err()), 0, "{name}");
        }
        for name in PAYOUT_CHOICE_BODY.names() {
            assert_eq!(unknown(PayoutChoice::parse(&body(json!({ name: null }))).unwrap_err()), 0, "{name}");
        }
        assert_eq!(reasons(json!({"customer_id": "c", "customer_choice": "cash", "tip": 1})), ["tip_unknown"]);
        let extra = PayoutOptionsPatch::parse(&body(json!({"boost": 1}))).unwrap_err();
        assert_eq!(extra, [FieldError::of("boost", "unknown")]);
    }
}
