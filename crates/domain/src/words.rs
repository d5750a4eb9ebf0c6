//! What a brand's staff read about a field (decisions 15.4): its label and its rule in
//! words, made from the field's entry in its body table (its real limit, its allowed values,
//! a format rule the table states), never a wire name, a code or the API reference. The
//! dashboard's forms, the annotated workbook and the bulk template's instructions all say
//! these sentences; the API's `errors[].message` stays the integrator's sentence (with the
//! wire name), and the code stays the reason for programs.

use super::body::{BodySpec, Field, FieldType};
use super::money::{thousands, MAX_PRICE};

/// The label of a field as forms show it: the table's own label, or one made from the
/// name (`support_email` → "Support email", `vat_number` → "VAT number").
pub fn label(field: Option<&Field>, name: &str) -> String {
    // `measurements[1].w_cm`: the piece's part, numbered as the form numbers pieces
    // ("Piece 2 width"; its type is the piece itself, "Piece 2").
    if let Some((list, rest)) = name.split_once('[') {
        let (index, part) = rest.split_once("].").unwrap_or((rest.trim_end_matches(']'), ""));
        let number = index.parse::<usize>().map_or_else(|_| index.to_owned(), |i| (i + 1).to_string());
        let item = if list == "measurements" { "Piece" } else { "Item" };
        let part = field.and_then(|f| f.label).map_or_else(|| made_label(part), str::to_owned);
        return if part.is_empty() || part == item {
            format!("{item} {number}")
        } else {
            format!("{item} {number} {}", lower_first(&part))
        };
    }
    if let Some(label) = field.and_then(|f| f.label) {
        return label.to_owned();
    }
    made_label(name)
}

/// A label made from a wire name.
fn made_label(name: &str) -> String {
    let words: Vec<String> = name
        .split('_')
        .filter(|w| !matches!(*w, "gbp" | "id" | "b64" | "base64" | ""))
        .map(|w| match w {
            "vat" | "url" | "sku" | "rrp" => w.to_uppercase(),
            "w" => "width".to_owned(),
            "d" => "depth".to_owned(),
            "h" => "height".to_owned(),
            "cm" => "(cm)".to_owned(),
            _ => w.to_owned(),
        })
        .collect();
    let text = words.join(" ");
    let mut chars = text.chars();
    chars.next().map(|c| c.to_uppercase().collect::<String>() + chars.as_str()).unwrap_or_default()
}

fn lower_first(text: &str) -> String {
    let mut chars = text.chars();
    match (chars.next(), chars.clone().next()) {
        // "SKU", "RRP": an abbreviation keeps its capitals.
        (Some(first), Some(second)) if second.is_uppercase() => first.to_string() + chars.as_str(),
        (Some(first), _) => first.to_lowercase().collect::<String>() + chars.as_str(),
        (None, _) => String::new(),
    }
}

/// The sentence for the reason `code` of the field `name` of `spec` (or of a field no table
/// describes): its label and its rule, in words. `None` for a reason this module does not
/// word (a refusal of the catalogue of outcomes pinned to a field, whose sentence is its own).
pub fn sentence(spec: Option<&BodySpec>, name: &str, code: &str) -> Option<String> {
    let field = match name.contains('[') {
        true => spec.and_then(|s| nested(s, name)),
        false => spec.and_then(|s| s.field(name)),
    };
    if let Some(sentence) = own_code(code) {
        return Some(sentence.to_owned());
    }
    let label = label(field, name);
    let suffix = code.strip_prefix(name).and_then(|s| s.strip_prefix('_'))?;
    Some(match suffix {
        "required" => match field.map(|f| f.ty) {
            Some(FieldType::List { .. }) => format!("{label}: choose at least one."),
            _ => format!("{label} is required."),
        },
        "too_long" => match field.map(|f| f.ty) {
            Some(FieldType::Text { max } | FieldType::Lines { max }) => {
                format!("{label} can be at most {} characters.", thousands(&max.to_string()))
            }
            _ => format!("{label} is too long."),
        },
        "unknown" => format!("{label} is not part of this form: reload the page and try again."),
        "invalid" => invalid(field, &label),
        // A refusal of the catalogue pinned to the field (`sku_exists`) says its own sentence.
        _ => return None,
    })
}

/// The field of an object in a list (`measurements[1].w_cm` → the `w_cm` of `measurements`).
fn nested<'s>(spec: &'s BodySpec, name: &str) -> Option<&'s Field> {
    let (list, rest) = name.split_once('[')?;
    let (_, part) = rest.split_once("].")?;
    match spec.field(list)?.ty {
        FieldType::List { item: FieldType::Object(fields), .. } => fields.iter().find(|f| f.name == part),
        _ => None,
    }
}

/// The rule a value broke, by what the table says the field holds.
fn invalid(field: Option<&Field>, label: &str) -> String {
    if let Some(rule) = field.and_then(|f| f.rule) {
        return format!("{label} {rule}.");
    }
    let Some(field) = field else {
        return format!("{label} is not accepted: check it and try again.");
    };
    match field.ty {
        FieldType::Text { max } => {
            format!(
                "{label} must be one line of text that shows something, at most {} characters.",
                thousands(&max.to_string())
            )
        }
        FieldType::Lines { max } => {
            format!("{label} must be text that shows something, at most {} characters.", thousands(&max.to_string()))
        }
        FieldType::Integer { min, max } => format!(
            "{label} must be a whole number from {} to {}.",
            thousands(&min.to_string()),
            thousands(&max.to_string())
        ),
        FieldType::Money => format!(
            "{label} must be an amount in pounds from £0.01 to £{}, with at most two decimals, like 450 or 19.99.",
            thousands(&MAX_PRICE.to_string())
        ),
        FieldType::Number => format!("{label} must be a number."),
        FieldType::Boolean => format!("{label} must be ticked or not."),
        FieldType::Date => format!("{label} must be a real date, like 31/12/2026."),
        FieldType::Timestamp => format!("{label} must be a real date and time."),
        FieldType::Choice(values) => format!("{label} must be one of: {}.", or_list(values)),
        FieldType::List { item: FieldType::Choice(values), min, .. } if min > 0 => {
            format!("Choose at least one {} from: {}.", lower_first(label), or_list(values))
        }
        FieldType::List { item: FieldType::Choice(values), .. } => {
            format!("Choose {} only from: {}.", lower_first(label), or_list(values))
        }
        FieldType::List { min, max, .. } => format!("{label} takes {min} to {max} items."),
        FieldType::Object(_) => format!("{label} is not filled in correctly: check each of its parts."),
    }
}

/// `a, b or c`.
fn or_list(values: &[&str]) -> String {
    match values {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// Reasons that are not `<field>_<suffix>`, in words.
fn own_code(code: &str) -> Option<&'static str> {
    Some(match code {
        "listing_sold_out" => "This listing sold out: give it stock (a quantity of 1 or more) to make it active again.",
        "too_many_rows" => "A file can hold at most 200 listings: split it and upload each part.",
        "email_taken" => "Someone already uses this email address: use another.",
        "attachment_ids_invalid" => "A photo of this listing is no longer available: add it again.",
        "transfer_to_invalid" => {
            "Choose an active member of your team, other than the one removed, to take over their listings."
        }
        "time_zone_invalid" => "Choose a time zone from the list (a region and a city, like Europe/London).",
        "warehouse_id_invalid" => "Choose one of your warehouses.",
        "password_weak" => "Choose a longer password that is not a common one.",
        "payout_choice_required" => "Offer customers at least one way to be paid: tick Credit, Cash or both.",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::{Field, FieldType};

    static SPEC: BodySpec = BodySpec {
        name: "Test",
        doc: "",
        fields: &[
            Field::required("display_name", FieldType::Text { max: 80 }, ""),
            Field::optional("support_email", FieldType::Text { max: 254 }, "")
                .rule("must be an email address, like help@yourbrand.co.uk"),
            Field::optional("condition", FieldType::Choice(&["like-new", "fair"]), ""),
            Field::optional("price_gbp", FieldType::Money, "").labelled("Price (GBP)"),
            Field::optional("quantity", FieldType::Integer { min: 1, max: 10_000 }, ""),
        ],
        example: "{}",
    };

    #[test]
    fn the_field_is_named_by_its_label_and_the_rule_in_words() {
        let s = |name: &str, code: &str| sentence(Some(&SPEC), name, code).unwrap();
        assert_eq!(s("display_name", "display_name_too_long"), "Display name can be at most 80 characters.");
        assert_eq!(s("display_name", "display_name_required"), "Display name is required.");
        assert_eq!(
            s("support_email", "support_email_invalid"),
            "Support email must be an email address, like help@yourbrand.co.uk."
        );
        assert_eq!(s("condition", "condition_invalid"), "Condition must be one of: like-new or fair.");
        assert_eq!(s("quantity", "quantity_invalid"), "Quantity must be a whole number from 1 to 10,000.");
        assert!(s("price_gbp", "price_gbp_invalid").starts_with("Price (GBP) must be an amount in pounds"));
    }

    #[test]
    fn labels_are_made_from_names_without_wire_words() {
        assert_eq!(label(None, "vat_number"), "VAT number");
        assert_eq!(label(None, "logo_url"), "Logo URL");
        assert_eq!(label(None, "sale_price_gbp"), "Sale price");
        assert_eq!(label(None, "warehouse_id"), "Warehouse");
        assert_eq!(label(None, "measurements[1].w_cm"), "Piece 2 width (cm)");
        let piece = crate::listing::MEASUREMENT_FIELDS;
        assert_eq!(label(piece.iter().find(|f| f.name == "d_cm"), "measurements[0].d_cm"), "Piece 1 depth");
        assert_eq!(label(piece.iter().find(|f| f.name == "type"), "measurements[2].type"), "Piece 3");
        assert_eq!(lower_first("SKU"), "SKU");
    }
}

#[cfg(test)]
mod every_form {
    use super::*;

    /// The body tables of the dashboard's forms and of the bulk import's rows.
    pub fn dashboard_specs() -> Vec<&'static BodySpec> {
        use crate::{collection, credit_code, key_request, listing, payout, settings, team, webhook};
        vec![
            &listing::LISTING_BODY,
            &settings::PROFILE_BODY,
            &settings::BILLING_BODY,
            &settings::WAREHOUSE_BODY,
            &payout::PAYOUT_OPTIONS_BODY,
            &key_request::KEY_BODY,
            &key_request::ROLL_BODY,
            &team::INVITE_BODY,
            &webhook::WEBHOOK_BODY,
            &webhook::ROTATION_BODY,
            &webhook::BULK_REPLAY_BODY,
            &credit_code::REDEEM_BODY,
            &collection::COLLECTION_BODY,
        ]
    }

    /// Every sentence of every field of every form, and the reasons of their own: none has
    /// a backtick, a wire name (an underscore), a code or "API".
    #[test]
    fn every_sentence_a_person_reads_is_in_words() {
        let mut seen = 0;
        for spec in dashboard_specs() {
            for field in spec.fields {
                if let Some(hint) = field.hint {
                    for wrong in ["`", "_", "API"] {
                        assert!(!hint.contains(wrong), "{}.{} hint: {hint}", spec.name, field.name);
                    }
                    assert!(hint.ends_with('.') && hint.chars().next().is_some_and(char::is_uppercase), "{hint}");
                }
                let mut names = vec![field.name.to_owned()];
                if let FieldType::List { item: FieldType::Object(parts), .. } = field.ty {
                    names.extend(parts.iter().map(|p| format!("{}[0].{}", field.name, p.name)));
                }
                for name in names {
                    for suffix in ["required", "too_long", "invalid", "unknown"] {
                        let code = format!("{name}_{suffix}");
                        let said = sentence(Some(spec), &name, &code).expect("worded");
                        println!("{}.{name} {suffix}: {said}", spec.name);
                        for wrong in ["`", "_", "API"] {
                            assert!(!said.contains(wrong), "{}.{code}: {said}", spec.name);
                        }
                        assert!(said.ends_with('.') && said.chars().next().is_some_and(char::is_uppercase), "{said}");
                        seen += 1;
                    }
                }
            }
        }
        for code in ["listing_sold_out", "too_many_rows", "email_taken", "attachment_ids_invalid", "time_zone_invalid"]
        {
            let said = sentence(None, "x", code).expect("worded");
            assert!(!said.contains('`') && !said.contains('_'), "{code}: {said}");
        }
        assert!(seen > 300, "{seen}");
    }
}
