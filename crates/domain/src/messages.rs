//! One sentence for each validation reason (decisions 11.8): what is wrong and what to do,
//! sent beside the code in every `errors[]` entry (the codes are unchanged). Reasons are
//! `<field>_<suffix>` (`required`, `invalid`, `too_long`, `unknown`) or one of a few codes
//! of their own; a sentence names the field as the request spelled it.

use super::limits::{
    BOOST_PERCENT, CODE_VALIDITY_DAYS, MAX_CLEARANCE_QUANTITY, MAX_OVERLAP_HOURS, MAX_ROLL_HOURS, MAX_ROWS,
};
use super::listing::{MAX_Q_CHARS, MAX_Q_WORDS};
use super::money::{thousands, MAX_PRICE};
use super::text::{FIRST_YEAR, LAST_YEAR};

/// The sentence for reason `code` on `field`.
pub fn reason_message(field: &str, code: &str) -> String {
    if code == "too_many_rows" {
        return format!("Send at most {MAX_ROWS} data rows in one file: split the file and send each part.");
    }
    if let Some(sentence) = own_code(code) {
        return sentence.to_owned();
    }
    let suffix = code.strip_prefix(field).and_then(|s| s.strip_prefix('_')).unwrap_or(code);
    match suffix {
        "required" => format!("Give `{field}` a value: it is required."),
        "too_long" => {
            format!("Shorten `{field}`: it is longer than this field allows (its maxLength in the API reference).")
        }
        "unknown" => format!("Remove `{field}`: this request has no such field (check its spelling)."),
        "invalid" => invalid(field),
        _ => format!("Check `{field}` ({code}) against the API reference and send it again."),
    }
}

/// The sentence for a value of `field` that is not one of `values`: it lists them.
pub fn choose_from(field: &str, values: &[&str]) -> String {
    format!("Choose `{field}` from: {}.", values.join(", "))
}

/// Reasons that are not `<field>_<suffix>`.
fn own_code(code: &str) -> Option<&'static str> {
    Some(match code {
        "listing_sold_out" => "Give the listing stock (`quantity`) to make it active again: it sold out.",
        "email_taken" => "Use another email: a user of this or another brand already has it.",
        "payout_choice_required" => {
            "Keep `credit_enabled` or `cash_enabled` (or both) true: customers must have a way to be paid."
        }
        "attachment_ids_invalid" => "Name in `attachment_ids` only photos your brand uploaded (their `attachment_id`).",
        "transfer_to_invalid" => {
            "Name in `transfer_to` an active member of your team, not the one removed, to take over their listings."
        }
        "time_zone_invalid" => {
            "Give the time zone as its name in the tz database, a region and a city (e.g. Europe/London, \
             Europe/Paris or America/New_York)."
        }
        "warehouse_id_invalid" => "Choose one of your brand's warehouses (`warehouse_id` is its `id`).",
        _ => return None,
    })
}

/// What a valid value of `field` looks like, by the kind of field its name says it is.
fn invalid(field: &str) -> String {
    // `measurements[1].w_cm` is a `w_cm`.
    let name = field.rsplit(['.', ']']).next().unwrap_or(field);
    if name.ends_with("_gbp") && name != "delivery_contribution_gbp" {
        return format!(
            "Give `{field}` in pounds, between £0.01 and £{} with at most two decimals (e.g. 450 or 19.99).",
            thousands(&MAX_PRICE.to_string())
        );
    }
    if name.ends_with("_at") || name.ends_with("_from") || name.ends_with("_start") || name == "since" {
        return format!(
            "Give `{field}` as a date (2026-11-27) or an instant with its offset (2026-11-27T10:00:00Z), in the \
             years {FIRST_YEAR} to {LAST_YEAR}."
        );
    }
    if name == "category" {
        return format!("Choose `{field}` from your brand's categories (`GET /v1/listings/options` lists them).");
    }
    if name == "q" {
        return format!("Search with 1 to {MAX_Q_WORDS} words of at most {MAX_Q_CHARS} characters in all.");
    }
    if let Some((low, high, unit)) = range_of(name) {
        return format!("Give `{field}` as a whole number from {low} to {high}{unit}.");
    }
    if name.ends_with("_cm") || name == "quantity" || name.ends_with("_id") || name.ends_with("_hours") {
        return format!("Give `{field}` as a whole number within the range the API reference states for it.");
    }
    format!(
        "Check `{field}`: its value is not one this field takes (see its type, choices and format in the API \
         reference)."
    )
}

/// The whole-number range of a field whose limits are declared in `limits`, with its unit.
fn range_of(name: &str) -> Option<(i64, String, &'static str)> {
    Some(match name {
        "credit_boost_percent" => (*BOOST_PERCENT.start(), BOOST_PERCENT.end().to_string(), " (percent)"),
        "code_validity_days" => (*CODE_VALIDITY_DAYS.start(), CODE_VALIDITY_DAYS.end().to_string(), " days"),
        "expire_previous_in_hours" => (0, MAX_OVERLAP_HOURS.to_string(), " hours"),
        "expires_in_hours" => (0, MAX_ROLL_HOURS.to_string(), " hours"),
        "quantity" => (1, thousands(&MAX_CLEARANCE_QUANTITY.to_string()), ""),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of reason has a sentence that begins with what to do.
    #[test]
    fn every_reason_has_a_sentence_that_says_what_to_do() {
        let reasons = [
            ("title", "title_required"),
            ("title", "title_too_long"),
            ("colour", "colour_unknown"),
            ("price_gbp", "price_gbp_invalid"),
            ("scheduled_for", "scheduled_for_invalid"),
            ("measurements[1].w_cm", "measurements[1].w_cm_invalid"),
            ("condition", "condition_invalid"),
            ("status", "listing_sold_out"),
            ("file", "too_many_rows"),
            ("email", "email_taken"),
            ("attachment_ids", "attachment_ids_invalid"),
            ("transfer_to", "transfer_to_invalid"),
            ("warehouse_id", "warehouse_id_invalid"),
            ("password", "password_weak"),
        ];
        let verbs = ["Give", "Shorten", "Remove", "Check", "Send", "Use", "Name", "Choose"];
        for (field, code) in reasons {
            let sentence = reason_message(field, code);
            assert!(verbs.iter().any(|v| sentence.starts_with(v)), "{code}: {sentence}");
            assert!(sentence.ends_with('.'), "{code}: {sentence}");
            assert!(!sentence.contains(code) || code.ends_with("weak"), "the code is not the sentence: {sentence}");
        }
    }

    #[test]
    fn a_choice_lists_its_values() {
        assert_eq!(choose_from("mode", &["create", "upsert"]), "Choose `mode` from: create, upsert.");
    }

    #[test]
    fn money_and_dates_state_their_limits() {
        assert_eq!(
            reason_message("price_gbp", "price_gbp_invalid"),
            "Give `price_gbp` in pounds, between £0.01 and £1,000,000.00 with at most two decimals (e.g. 450 or 19.99)."
        );
        assert!(reason_message("since", "since_invalid").contains("2000 to 2100"));
        assert_eq!(
            reason_message("credit_boost_percent", "credit_boost_percent_invalid"),
            "Give `credit_boost_percent` as a whole number from 100 to 200 (percent)."
        );
        assert!(reason_message("quantity", "quantity_invalid").ends_with("from 1 to 10,000."));
        assert!(
            reason_message("expire_previous_in_hours", "expire_previous_in_hours_invalid").contains("0 to 72 hours")
        );
        assert_eq!(thousands("1000000.00"), "1,000,000.00");
        assert_eq!(thousands("999.50"), "999.50");
        assert_eq!(thousands("1000"), "1,000");
    }
}
