//! Buying from a listing's page (decisions 14.3): the form's fields read into a buyer and a
//! quantity, each refusal a sentence for its field. No HTTP, no SQL.

use super::order::MAX_ORDER_QUANTITY;
use super::settings::{Email, PhoneNumber, UkPostcode};

/// The longest buyer's name kept.
pub const NAME_MAX: usize = 100;

/// The checkout form as posted; every value as text, blank meaning unset.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct CheckoutFields {
    pub name: Option<String>,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub postcode: Option<String>,
    pub quantity: Option<String>,
    pub csrf: Option<String>,
}

/// Who buys: what the order page and its mails need, nothing more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buyer {
    pub name: String,
    pub email: Email,
    pub phone: Option<PhoneNumber>,
    pub postcode: UkPostcode,
}

impl Buyer {
    /// The postcode's outward code (`SW1A`): the district a brand's staff may see.
    pub fn district(&self) -> &str {
        district(self.postcode.as_str())
    }
}

/// The outward code of a postcode as stored (`SW1A 1AA` → `SW1A`).
pub fn district(postcode: &str) -> &str {
    postcode.split(' ').next().unwrap_or(postcode)
}

/// Where a purchase paid through the payment service stands (decisions 14.4): its stock is
/// held while it is `Pending`; `Paid` made the order; `Released` gave the stock back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldStatus {
    Pending,
    Paid,
    Released,
}

super::wire::wire_names!(HoldStatus { Pending => "pending", Paid => "paid", Released => "released" });

/// How long a buyer's stock is held for the payment (decisions 14.4).
pub const PAYMENT_HOLD: chrono::TimeDelta = chrono::TimeDelta::minutes(30);

/// A time as a buyer in the UK reads it: `14:32`.
pub fn uk_time(at: chrono::DateTime<chrono::Utc>) -> String {
    at.with_timezone(&chrono_tz::Europe::London).format("%H:%M").to_string()
}

/// A field the buyer must correct, with the sentence shown beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldRefusal {
    pub field: &'static str,
    pub sentence: &'static str,
}

const fn refusal(field: &'static str, sentence: &'static str) -> FieldRefusal {
    FieldRefusal { field, sentence }
}

fn given(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

impl CheckoutFields {
    /// The buyer and the quantity, or every field to correct (in the form's order).
    pub fn parse(&self) -> Result<(Buyer, i64), Vec<FieldRefusal>> {
        let mut refused = Vec::new();
        let name = match given(&self.name) {
            Some(n) if n.chars().count() > NAME_MAX => {
                refused.push(refusal("name", "Give your name in at most 100 characters."));
                None
            }
            Some(n) if n.chars().any(char::is_control) || crate::text::identifier(n).trim().is_empty() => {
                refused.push(refusal("name", "Give your name as you would write it on a parcel."));
                None
            }
            Some(n) => Some(n.split_whitespace().collect::<Vec<_>>().join(" ")),
            None => {
                refused.push(refusal("name", "Give your name: the brand needs it to deliver."));
                None
            }
        };
        let email = match given(&self.email).map(|e| (e, Email::parse(e))) {
            Some((e, Some(email))) if e.chars().count() <= Email::MAX_CHARS => Some(email),
            Some(_) => {
                refused.push(refusal("email", "Give an email address such as name@example.co.uk."));
                None
            }
            None => {
                refused.push(refusal("email", "Give your email address: your order confirmation goes there."));
                None
            }
        };
        let phone = match given(&self.phone) {
            Some(p) => match PhoneNumber::parse(p).filter(|_| p.chars().count() <= PhoneNumber::MAX_CHARS) {
                Some(phone) => Some(phone),
                None => {
                    refused.push(refusal("phone", "Give a phone number of 7 to 15 digits, or leave it empty."));
                    None
                }
            },
            None => None,
        };
        let postcode = match given(&self.postcode).map(|p| (p, UkPostcode::parse(p))) {
            Some((p, Some(postcode))) if p.len() <= 16 => Some(postcode),
            Some(_) => {
                refused.push(refusal("postcode", "Give a UK postcode such as SW1A 1AA: we deliver in the UK only."));
                None
            }
            None => {
                refused.push(refusal("postcode", "Give the UK postcode the piece is to be delivered to."));
                None
            }
        };
        let quantity = match given(&self.quantity) {
            None => Some(1),
            Some(q) => match q.parse::<i64>() {
                Ok(n) if (1..=MAX_ORDER_QUANTITY).contains(&n) => Some(n),
                _ => {
                    refused.push(refusal("quantity", "Choose how many you want, from 1."));
                    None
                }
            },
        };
        match (name, email, phone, postcode, quantity) {
            (Some(name), Some(email), phone, Some(postcode), Some(quantity)) if refused.is_empty() => {
                Ok((Buyer { name, email, phone, postcode }, quantity))
            }
            _ => Err(refused),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(name: &str, email: &str, phone: &str, postcode: &str, quantity: &str) -> CheckoutFields {
        let some = |v: &str| Some(v.to_owned());
        CheckoutFields {
            name: some(name),
            email: some(email),
            phone: some(phone),
            postcode: some(postcode),
            quantity: some(quantity),
            csrf: None,
        }
    }

    #[test]
    fn a_buyer_is_read_and_normalised() {
        let (buyer, quantity) = fields("  Ada   Lovelace ", "Ada@Example.CO.UK", "", "sw1a1aa", "").parse().unwrap();
        assert_eq!(buyer.name, "Ada Lovelace");
        assert_eq!(buyer.email.as_str(), "Ada@example.co.uk");
        assert_eq!((&buyer.phone, buyer.postcode.as_str(), quantity), (&None, "SW1A 1AA", 1));
        assert_eq!(buyer.district(), "SW1A");
        let (buyer, quantity) = fields("Bo", "bo@example.com", "+44 20 7946 0000", "M1 1AE", "3").parse().unwrap();
        assert_eq!((buyer.phone.unwrap().as_str(), quantity), ("+44 20 7946 0000", 3));
    }

    #[test]
    fn every_field_to_correct_is_said_at_once() {
        let refused = fields("", "not-an-email", "12", "NARNIA", "0").parse().unwrap_err();
        let named: Vec<&str> = refused.iter().map(|r| r.field).collect();
        assert_eq!(named, ["name", "email", "phone", "postcode", "quantity"]);
        assert!(refused.iter().all(|r| !r.sentence.contains('_') && r.sentence.ends_with('.')));
        for postcode in ["12345", "SW1A", "SW1A 1A", "Q1 1AA1", "!!!"] {
            let refused = fields("Ada", "ada@example.com", "", postcode, "1").parse().unwrap_err();
            assert_eq!(refused[0].field, "postcode", "{postcode}");
        }
        let refused = fields(&"n".repeat(101), "ada@example.com", "", "SW1A 1AA", "1").parse().unwrap_err();
        assert_eq!(refused[0].field, "name");
        let refused = fields("\u{200b}\u{2060}", "ada@example.com", "", "SW1A 1AA", "1").parse().unwrap_err();
        assert_eq!(refused[0].field, "name", "a name that shows nothing");
    }
}
