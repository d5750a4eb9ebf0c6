//! Money: integer pence inside, decimal GBP only at the edges, and the payout arithmetic.

use std::fmt;

use serde_json::Value;

use super::channel::Channel;

/// An amount of money in pence. All arithmetic and persistence use this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pence(i64);

/// The largest price accepted from a partner: £1,000,000.
pub const MAX_PRICE: Pence = Pence(100_000_000);

/// Why a GBP amount was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoneyError {
    /// Not a JSON number.
    NotANumber,
    /// More than two decimal places.
    TooPrecise,
    /// Zero or negative.
    NotPositive,
    /// Above [`MAX_PRICE`].
    TooLarge,
}

impl Pence {
    pub const ZERO: Pence = Pence(0);

    pub const fn new(pence: i64) -> Self {
        Self(pence)
    }

    pub const fn get(self) -> i64 {
        self.0
    }

    /// The amount as a decimal GBP number for a JSON response (`1999` → `19.99`).
    ///
    /// Exact for display: an integer divided by 100 is correctly rounded, and the shortest
    /// representation that round-trips (what JSON serialisers print) is the decimal itself.
    pub fn gbp(self) -> f64 {
        self.0 as f64 / 100.0
    }

    /// Reads a positive GBP amount with at most two decimals from a JSON value, working on
    /// the number's decimal text (never multiplying a float) so `19.99` is exactly 1999 pence.
    pub fn from_gbp_json(value: &Value) -> Result<Self, MoneyError> {
        match value {
            Value::Number(n) => Self::from_gbp_text(&n.to_string()),
            _ => Err(MoneyError::NotANumber),
        }
    }

    /// Parses decimal text such as `19.99`, `20`, `1e3` or `1.5E+2` into pence.
    pub fn from_gbp_text(text: &str) -> Result<Self, MoneyError> {
        let text = text.trim();
        let (negative, unsigned) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text.strip_prefix('+').unwrap_or(text)),
        };
        let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
            Some(at) => {
                let exponent: i32 = unsigned[at + 1..].parse().map_err(|_| MoneyError::NotANumber)?;
                (&unsigned[..at], exponent)
            }
            None => (unsigned, 0),
        };
        let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let digit_run = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() || !digit_run(whole) || !digit_run(fraction) {
            return Err(MoneyError::NotANumber);
        }
        // The value is `digits × 10^scale`, with trailing zeros moved into the scale.
        let digits = format!("{whole}{fraction}");
        let digits = digits.trim_start_matches('0');
        let significant = digits.trim_end_matches('0');
        let trailing_zeros = i64::try_from(digits.len() - significant.len()).map_err(|_| MoneyError::TooLarge)?;
        let fraction_len = i64::try_from(fraction.len()).map_err(|_| MoneyError::TooLarge)?;
        if significant.is_empty() {
            return Err(MoneyError::NotPositive);
        }
        if negative {
            return Err(MoneyError::NotPositive);
        }
        // Pence = significant × 10^(scale + 2); a negative power means more than two decimals.
        let power = i64::from(exponent) - fraction_len + trailing_zeros + 2;
        if power < 0 {
            return Err(MoneyError::TooPrecise);
        }
        if significant.len() > 12 || power > 12 {
            return Err(MoneyError::TooLarge);
        }
        let significant: i64 = significant.parse().map_err(|_| MoneyError::NotANumber)?;
        let pence = 10_i64
            .checked_pow(u32::try_from(power).map_err(|_| MoneyError::TooLarge)?)
            .and_then(|scale| significant.checked_mul(scale))
            .ok_or(MoneyError::TooLarge)?;
        if pence > MAX_PRICE.0 {
            return Err(MoneyError::TooLarge);
        }
        Ok(Pence(pence))
    }
}

impl Pence {
    /// The amount as a buyer reads it: `£1,250.00`.
    pub fn pounds(self) -> String {
        format!("£{}", thousands(&self.to_string()))
    }
}

/// `1000000.00` as `1,000,000.00` (a leading `-` is kept in front).
pub fn thousands(amount: &str) -> String {
    let (sign, amount) = match amount.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", amount),
    };
    let (whole, rest) = amount.split_once('.').unwrap_or((amount, ""));
    let digits: Vec<char> = whole.chars().collect();
    let mut out = String::from(sign);
    for (i, digit) in digits.iter().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(*digit);
    }
    if rest.is_empty() {
        out
    } else {
        format!("{out}.{rest}")
    }
}

impl fmt::Display for Pence {
    /// Pounds with two decimals, for messages and logs: `19.99`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        write!(f, "{sign}{}.{:02}", abs / 100, abs % 100)
    }
}

/// `value × percent / 100`, rounded half up (values are never negative here).
fn percent_half_up(value: i64, percent: i64) -> i64 {
    let scaled = i128::from(value) * i128::from(percent);
    let rounded = (scaled + 50).div_euclid(100);
    i64::try_from(rounded).unwrap_or(i64::MAX)
}

/// Commission on clearance sales, in percent of the price.
pub const CLEARANCE_COMMISSION_PERCENT: i64 = 15;
/// VAT charged on the commission, in percent.
pub const VAT_PERCENT: i64 = 20;

/// The money of one unit sold at `price` (decisions 3.3), in pence: clearance pays 15%
/// commission plus 20% VAT on it, each rounded half up to the penny; both channels then
/// subtract the delivery contribution. The payout is never below zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnitMoney {
    pub price: Pence,
    pub commission: Pence,
    pub vat: Pence,
    pub delivery: Pence,
    pub payout: Pence,
}

impl UnitMoney {
    pub fn of(channel: Channel, price: Pence, delivery_contribution_gbp: u32) -> Self {
        let price = price.0.max(0);
        let (commission, vat) = match channel {
            Channel::Clearance => {
                let commission = percent_half_up(price, CLEARANCE_COMMISSION_PERCENT);
                (commission, percent_half_up(commission, VAT_PERCENT))
            }
            Channel::Exchange => (0, 0),
        };
        let delivery = i64::from(delivery_contribution_gbp) * 100;
        let payout = price.saturating_sub(commission).saturating_sub(vat).saturating_sub(delivery).max(0);
        Self {
            price: Pence(price),
            commission: Pence(commission),
            vat: Pence(vat),
            delivery: Pence(delivery),
            payout: Pence(payout),
        }
    }
}

/// The partner's payout for one sale at `price` (see [`UnitMoney`]).
pub fn payout(channel: Channel, price: Pence, delivery_contribution_gbp: u32) -> Pence {
    UnitMoney::of(channel, price, delivery_contribution_gbp).payout
}

/// The value of a trade-in payout (decisions 6.5): credit is the base boosted by the
/// brand's multiplier, `round-half-up(base × boost_percent / 100)`; cash is the base itself.
pub fn credit_value(base: Pence, boost_percent: u16) -> Pence {
    Pence(percent_half_up(base.0.max(0), i64::from(boost_percent)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(json: &str) -> Result<Pence, MoneyError> {
        Pence::from_gbp_json(&serde_json::from_str(json).unwrap())
    }

    #[test]
    fn gbp_numbers_become_exact_pence() {
        let cases = [
            ("19.99", 1999),
            ("20", 2000),
            ("0.01", 1),
            ("0.1", 10),
            ("1.10", 110),
            ("100.50", 10050),
            ("1e3", 100_000),
            ("1.5E+2", 15_000),
            ("1000000", 100_000_000),
            ("0.29", 29),
            ("1.15", 115),
            ("4.35", 435),
        ];
        for (text, pence) in cases {
            assert_eq!(parse(text), Ok(Pence(pence)), "{text}");
        }
    }

    #[test]
    fn bad_gbp_numbers_are_refused_with_a_reason() {
        let cases = [
            ("19.999", MoneyError::TooPrecise),
            ("0.001", MoneyError::TooPrecise),
            ("1e-3", MoneyError::TooPrecise),
            ("0", MoneyError::NotPositive),
            ("0.00", MoneyError::NotPositive),
            ("-5", MoneyError::NotPositive),
            ("-0.01", MoneyError::NotPositive),
            ("1000000.01", MoneyError::TooLarge),
            ("1e300", MoneyError::TooLarge),
            ("18446744073709551615", MoneyError::TooLarge),
            ("\"19.99\"", MoneyError::NotANumber),
            ("null", MoneyError::NotANumber),
            ("true", MoneyError::NotANumber),
        ];
        for (text, reason) in cases {
            assert_eq!(parse(text), Err(reason), "{text}");
        }
    }

    #[test]
    fn pence_render_as_gbp_numbers() {
        assert_eq!(serde_json::to_string(&Pence(1999).gbp()).unwrap(), "19.99");
        assert_eq!(serde_json::to_string(&Pence(1).gbp()).unwrap(), "0.01");
        assert_eq!(serde_json::to_string(&Pence(110).gbp()).unwrap(), "1.1");
        assert_eq!(Pence(1999).to_string(), "19.99");
        assert_eq!(Pence(5).to_string(), "0.05");
    }

    #[test]
    fn clearance_payout_takes_commission_vat_and_delivery() {
        // £100: commission £15, VAT £3, delivery £30 → £52.
        assert_eq!(payout(Channel::Clearance, Pence(10_000), 30), Pence(5_200));
        // 10p: commission 1.5p → 2p, VAT 0.4p → 0p.
        assert_eq!(payout(Channel::Clearance, Pence(10), 0), Pence(8));
        // 30p: commission 4.5p → 5p, VAT 1p.
        assert_eq!(payout(Channel::Clearance, Pence(30), 0), Pence(24));
        // £1.70: commission 25.5p → 26p, VAT 5.2p → 5p.
        assert_eq!(payout(Channel::Clearance, Pence(170), 0), Pence(139));
    }

    #[test]
    fn exchange_payout_only_subtracts_delivery() {
        assert_eq!(payout(Channel::Exchange, Pence(10_000), 0), Pence(10_000));
        assert_eq!(payout(Channel::Exchange, Pence(10_000), 60), Pence(4_000));
    }

    #[test]
    fn payout_never_goes_below_zero() {
        assert_eq!(payout(Channel::Exchange, Pence(5_000), 129), Pence::ZERO);
        assert_eq!(payout(Channel::Clearance, Pence(1), 30), Pence::ZERO);
    }

    /// The formula of decisions 3.3, written out independently.
    fn expected_payout(channel: Channel, price: i64, delivery: i64) -> i64 {
        let half_up = |numerator: i64| {
            let (q, r) = (numerator / 100, numerator % 100);
            if r >= 50 {
                q + 1
            } else {
                q
            }
        };
        let fees = match channel {
            Channel::Clearance => {
                let commission = half_up(price * 15);
                commission + half_up(commission * 20)
            }
            Channel::Exchange => 0,
        };
        (price - fees - delivery * 100).max(0)
    }

    fn channel() -> impl Strategy<Value = Channel> {
        prop_oneof![Just(Channel::Clearance), Just(Channel::Exchange)]
    }

    #[test]
    fn credit_is_boosted_and_rounded_half_up() {
        assert_eq!(credit_value(Pence(10_000), 100), Pence(10_000));
        assert_eq!(credit_value(Pence(10_000), 120), Pence(12_000));
        assert_eq!(credit_value(Pence(10_000), 200), Pence(20_000));
        // 1p × 1.50 = 1.5p → 2p; 1p × 1.49 = 1.49p → 1p.
        assert_eq!(credit_value(Pence(1), 150), Pence(2));
        assert_eq!(credit_value(Pence(1), 149), Pence(1));
        // 1,999p × 1.15 = 2,298.85p → 2,299p; 2,999p × 1.05 = 3,148.95p → 3,149p.
        assert_eq!(credit_value(Pence(1_999), 115), Pence(2_299));
        assert_eq!(credit_value(Pence(2_999), 105), Pence(3_149));
        // 10p × 1.25 = 12.5p → 13p (half up, not to even); 30p × 1.25 = 37.5p → 38p.
        assert_eq!(credit_value(Pence(10), 125), Pence(13));
        assert_eq!(credit_value(Pence(30), 125), Pence(38));
        assert_eq!(credit_value(MAX_PRICE, 200), Pence(200_000_000));
    }

    proptest! {
        #[test]
        fn payout_is_never_negative_and_equals_the_formula(
            channel in channel(),
            price in 1..=MAX_PRICE.get(),
            delivery in prop::sample::select(vec![0_u32, 30, 60, 129]),
        ) {
            let paid = payout(channel, Pence(price), delivery);
            prop_assert!(paid.get() >= 0);
            prop_assert!(paid.get() <= price);
            prop_assert_eq!(paid.get(), expected_payout(channel, price, i64::from(delivery)));
        }

        #[test]
        fn credit_value_equals_the_exact_rational_rounded_half_up(
            base in 0..=MAX_PRICE.get(),
            boost in 100_u16..=200,
        ) {
            let value = credit_value(Pence(base), boost).get();
            // value is the integer nearest base × boost / 100, ties up:
            // |100 × value − base × boost| ≤ 50, and exactly 50 only when rounding up.
            let exact = i128::from(base) * i128::from(boost);
            let diff = i128::from(value) * 100 - exact;
            prop_assert!((-49..=50).contains(&diff), "base {} boost {} value {}", base, boost, value);
            prop_assert!(value >= base);
            prop_assert!(value <= base * 2);
            prop_assert_eq!(credit_value(Pence(base), 100).get(), base);
        }

        #[test]
        fn every_two_decimal_amount_round_trips_through_json(pence in 1..=MAX_PRICE.get()) {
            let text = format!("{}.{:02}", pence / 100, pence % 100);
            prop_assert_eq!(parse(&text), Ok(Pence(pence)));
            let rendered = serde_json::to_string(&Pence(pence).gbp()).unwrap();
            prop_assert_eq!(parse(&rendered), Ok(Pence(pence)));
        }
    }
}
