//! Parsers of single listing fields: each turns one JSON value into a canonical value,
//! `Ok(None)` for a blank one, or the suffix of its reason code.

use serde_json::{Number, Value};

use super::matching::{self, one_of};
use super::spec::MEASUREMENT_FIELDS;
use super::{Channel, Condition, ListingStatus, Measurement, DELIVERY_CONTRIBUTIONS_GBP};
use crate::limits::{
    BRAND_MAX, DESCRIPTION_INPUT_MAX, DESCRIPTION_MAX, IMAGE_URL_MAX, MATCHED_MAX, MAX_DIMENSION_CM, MAX_ITEMS,
    SKU_MAX, TITLE_MAX, WAREHOUSE_LOCATION_MAX,
};
use crate::money::Pence;
use crate::taxonomy::{ages, CATEGORIES, EXPOSURES, FAULTS, ITEM_TYPES, NONE_VALUE};
use crate::text::{self as rule, Lines};

/// What a field parser says: `Ok(None)` for a blank value, or the reason suffix.
pub(super) type Parsed<T> = Result<Option<T>, &'static str>;

/// One line of text under the one text rule of every body ([`rule::text`]).
fn text(value: &Value, max: usize) -> Parsed<String> {
    rule::text(value, max, Lines::One)
}

pub(super) fn title(value: &Value) -> Parsed<String> {
    text(value, TITLE_MAX)
}

/// Plain text is kept as written; text with markup keeps only basic HTML (no script,
/// style, event handlers or `javascript:` URLs). Text without `<` cannot hold markup.
pub(super) fn description(value: &Value) -> Parsed<String> {
    let Some(text) = rule::text(value, DESCRIPTION_INPUT_MAX, Lines::Many)? else {
        return Ok(None);
    };
    let cleaned = if text.contains('<') { ammonia::clean(&text) } else { text };
    let cleaned = cleaned.trim();
    if cleaned.is_empty() {
        Ok(None)
    } else if cleaned.chars().count() > DESCRIPTION_MAX {
        Err("too_long")
    } else {
        Ok(Some(cleaned.to_owned()))
    }
}

/// Free text with inner runs of whitespace collapsed, so brand names compare cleanly.
pub(super) fn brand(value: &Value) -> Parsed<String> {
    let Some(name) = text(value, usize::MAX)? else {
        return Ok(None);
    };
    let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
    if name.chars().count() > BRAND_MAX {
        Err("too_long")
    } else {
        Ok(Some(name))
    }
}

pub(super) fn money(value: &Value) -> Parsed<Pence> {
    Pence::from_gbp_json(value).map(Some).map_err(|_| "invalid")
}

fn string_choice<'a>(value: &Value, values: impl IntoIterator<Item = &'a str>) -> Parsed<&'a str> {
    let Some(s) = text(value, usize::MAX)? else {
        return Ok(None);
    };
    one_of(&s, values).map(Some).ok_or("invalid")
}

pub(super) fn category(value: &Value) -> Parsed<String> {
    Ok(string_choice(value, CATEGORIES.iter().copied())?.map(str::to_owned))
}

pub(super) fn condition(value: &Value) -> Parsed<Condition> {
    let name = string_choice(value, Condition::ALL.iter().map(|c| c.as_str()))?;
    Ok(name.and_then(|n| n.parse().ok()))
}

pub(super) fn channel(value: &Value) -> Parsed<Channel> {
    let name = string_choice(value, Channel::ALL.iter().map(|c| c.as_str()))?;
    Ok(name.and_then(|n| n.parse().ok()))
}

/// Partners choose `active` or `draft`; `closed` only follows from selling out.
pub(super) fn status(value: &Value) -> Parsed<ListingStatus> {
    let name = string_choice(value, [ListingStatus::Active.as_str(), ListingStatus::Draft.as_str()])?;
    Ok(name.and_then(|n| n.parse().ok()))
}

/// A SKU is an identifier: invisible characters inside it are dropped, so two SKUs that
/// look alike are one.
pub(super) fn sku(value: &Value) -> Parsed<String> {
    Ok(text(value, SKU_MAX)?.map(|sku| crate::text::identifier(&sku)))
}

pub(super) fn warehouse_location(value: &Value) -> Parsed<String> {
    text(value, WAREHOUSE_LOCATION_MAX)
}

pub(super) fn colour(value: &Value) -> Parsed<String> {
    matched(value, matching::colour)
}

pub(super) fn fabric(value: &Value) -> Parsed<String> {
    matched(value, matching::fabric)
}

pub(super) fn exposed_to(value: &Value) -> Parsed<Vec<String>> {
    choices(value, EXPOSURES.iter().map(|c| c.value))
}

pub(super) fn age_band(value: &Value) -> Parsed<String> {
    let bands = ages();
    Ok(string_choice(value, bands.iter().map(String::as_str))?.map(str::to_owned))
}

fn matched(value: &Value, matcher: fn(&str) -> Option<&'static str>) -> Parsed<String> {
    // No taxonomy value or spelling is anywhere near this long: skip the matching work.
    let Some(s) = text(value, MATCHED_MAX).map_err(|_| "invalid")? else {
        return Ok(None);
    };
    matcher(&s).map(|m| Some(m.to_owned())).ok_or("invalid")
}

pub(super) fn delivery_contribution(value: &Value) -> Parsed<u32> {
    value
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| DELIVERY_CONTRIBUTIONS_GBP.contains(n))
        .map(Some)
        .ok_or("invalid")
}

/// A JSON integer; whether it suits the channel is checked with the merged listing.
pub(super) fn quantity(value: &Value) -> Parsed<i64> {
    crate::reader::integral(value).map(Some).ok_or("invalid")
}

/// A real calendar date written `YYYY-MM-DD`, in the service's years
/// ([`rule::parse_date`]).
pub(super) fn date(value: &Value) -> Parsed<String> {
    let Some(s) = text(value, usize::MAX)? else {
        return Ok(None);
    };
    let shaped = s.len() == 10
        && s.bytes().enumerate().all(|(i, b)| if i == 4 || i == 7 { b == b'-' } else { b.is_ascii_digit() });
    if shaped && rule::parse_date(&s).is_some() {
        Ok(Some(s.to_owned()))
    } else {
        Err("invalid")
    }
}

fn array(value: &Value) -> Result<&Vec<Value>, &'static str> {
    match value {
        Value::Array(items) if items.len() > MAX_ITEMS => Err("too_long"),
        Value::Array(items) => Ok(items),
        _ => Err("invalid"),
    }
}

/// Pieces `{type, w_cm, d_cm, h_cm}`: a type from `item_types` and positive dimensions.
pub(super) fn measurements(value: &Value) -> Parsed<Vec<Measurement>> {
    let pieces = array(value)?.iter().map(measurement).collect::<Option<Vec<_>>>().ok_or("invalid")?;
    Ok(Some(pieces))
}

fn measurement(value: &Value) -> Option<Measurement> {
    let piece = value.as_object()?;
    if piece.keys().any(|k| !MEASUREMENT_FIELDS.iter().any(|f| f.name == k)) {
        return None;
    }
    let item_type = one_of(piece.get("type")?.as_str()?, ITEM_TYPES.iter().copied())?;
    let dimension = |key: &str| -> Option<Number> {
        let Value::Number(n) = piece.get(key)? else {
            return None;
        };
        n.as_f64().filter(|cm| cm.is_finite() && *cm > 0.0 && *cm <= MAX_DIMENSION_CM).map(|_| n.clone())
    };
    Some(Measurement {
        item_type: item_type.to_owned(),
        w_cm: dimension("w_cm")?,
        d_cm: dimension("d_cm")?,
        h_cm: dimension("h_cm")?,
    })
}

/// A multi-select of allowed values: duplicates collapse, and `None` stands alone.
fn choices<'a>(value: &Value, allowed: impl Iterator<Item = &'a str> + Clone) -> Parsed<Vec<String>> {
    let mut chosen: Vec<String> = Vec::new();
    for item in array(value)? {
        let name = item.as_str().and_then(|s| one_of(s, allowed.clone())).ok_or("invalid")?;
        if !chosen.iter().any(|c| c == name) {
            chosen.push(name.to_owned());
        }
    }
    if chosen.len() > 1 && chosen.iter().any(|c| c == NONE_VALUE) {
        return Err("invalid");
    }
    Ok(Some(chosen))
}

/// At least one allowed fault, which may be `None`.
pub(super) fn faults(value: &Value) -> Parsed<Vec<String>> {
    match choices(value, FAULTS.iter().map(|c| c.value))? {
        Some(faults) if !faults.is_empty() => Ok(Some(faults)),
        _ => Err("required"),
    }
}

/// Absolute http(s) URLs of images to import.
pub(super) fn images(value: &Value) -> Parsed<Vec<String>> {
    let urls = array(value)?
        .iter()
        .map(|item| {
            let s = item.as_str()?.trim();
            let url = url::Url::parse(s).ok()?;
            let fits = s.len() <= IMAGE_URL_MAX && matches!(url.scheme(), "http" | "https") && url.has_host();
            fits.then(|| s.to_owned())
        })
        .collect::<Option<Vec<_>>>()
        .ok_or("invalid")?;
    Ok(Some(urls))
}

/// Positive integer ids of uploaded photos; duplicates collapse.
pub(super) fn attachment_ids(value: &Value) -> Parsed<Vec<i64>> {
    let mut ids = Vec::new();
    for item in array(value)? {
        let id = crate::reader::integral(item).filter(|id| *id > 0).ok_or("invalid")?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(Some(ids))
}

/// A warehouse UUID, answered in lower-case hyphenated form.
pub(super) fn warehouse_id(value: &Value) -> Parsed<String> {
    let Some(s) = text(value, usize::MAX)? else {
        return Ok(None);
    };
    match uuid::Uuid::try_parse(&s) {
        Ok(id) if s.len() == 36 => Ok(Some(id.hyphenated().to_string())),
        _ => Err("invalid"),
    }
}
