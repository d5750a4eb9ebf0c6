use proptest::prelude::*;
use serde_json::{json, Map, Value};

use super::*;

/// The validator over a JSON body, as the API reads it.
fn validate(body: &Map<String, Value>, existing: Option<&ListingFields>) -> Result<ValidListing, Vec<FieldError>> {
    super::validate(&ListingInput::from_json(body), existing)
}
use crate::listing::{Condition, DESCRIPTION_INPUT_MAX, DESCRIPTION_MAX, LISTING_BODY};
use crate::money::Pence;

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn minimal() -> Value {
    json!({"title": "Oak sofa", "price_gbp": 100, "condition": "excellent", "category": "Other", "faults": ["None"]})
}

/// The minimal valid body with `changes` applied (`null` values remove the key).
fn body(changes: Value) -> Map<String, Value> {
    let mut body = object(minimal());
    for (key, value) in object(changes) {
        if value.is_null() {
            body.remove(&key);
        } else {
            body.insert(key, value);
        }
    }
    body
}

fn codes(result: Result<ValidListing, Vec<FieldError>>) -> Vec<String> {
    match result {
        Ok(_) => Vec::new(),
        Err(errors) => errors.into_iter().map(|e| e.code).collect(),
    }
}

fn valid(body: &Map<String, Value>) -> ListingFields {
    match validate(body, None) {
        Ok(v) => v.fields,
        Err(errors) => panic!("refused: {errors:?}"),
    }
}

#[test]
fn a_minimal_body_takes_the_defaults() {
    let fields = valid(&body(json!({})));
    assert_eq!(fields.title, "Oak sofa");
    assert_eq!(fields.regular_price, Pence::new(10_000));
    assert_eq!(fields.condition, Condition::Excellent);
    assert_eq!(fields.channel, Channel::Exchange);
    assert_eq!(fields.status, ListingStatus::Active);
    assert_eq!(fields.quantity, 1);
    assert_eq!(fields.delivery_contribution_gbp, 0);
    assert_eq!(fields.faults, ["None"]);
    assert!(fields.exposed_to.is_empty() && fields.measurements.is_empty());
    assert_eq!((fields.sale_price, fields.rrp, fields.brand, fields.warehouse_id), (None, None, None, None));
}

/// Every reason code the validator produces, each from a body that is otherwise valid.
#[test]
fn each_bad_field_gives_its_reason_code() {
    let long = |n: usize| "x".repeat(n);
    let table: Vec<(Value, &str)> = vec![
        (json!({"title": null}), "title_required"),
        (json!({"title": "   "}), "title_required"),
        (json!({"title": 42}), "title_invalid"),
        (json!({"title": long(201)}), "title_too_long"),
        (json!({"price_gbp": null}), "price_gbp_required"),
        (json!({"price_gbp": "100"}), "price_gbp_invalid"),
        (json!({"price_gbp": 0}), "price_gbp_invalid"),
        (json!({"price_gbp": -1}), "price_gbp_invalid"),
        (json!({"price_gbp": 10.999}), "price_gbp_invalid"),
        (json!({"price_gbp": 1_000_000.01}), "price_gbp_invalid"),
        (json!({"condition": null}), "condition_required"),
        (json!({"condition": "broken"}), "condition_invalid"),
        (json!({"condition": ["fair"]}), "condition_invalid"),
        (json!({"category": null}), "category_required"),
        (json!({"category": "Tables"}), "category_invalid"),
        (json!({"category": 3}), "category_invalid"),
        (json!({"description": 5}), "description_invalid"),
        (json!({"description": long(20_001)}), "description_too_long"),
        (json!({"description": long(DESCRIPTION_INPUT_MAX + 1)}), "description_too_long"),
        (json!({"channel": "auction"}), "channel_invalid"),
        (json!({"channel": true}), "channel_invalid"),
        (json!({"sale_price_gbp": 100}), "sale_price_gbp_invalid"),
        (json!({"sale_price_gbp": 150}), "sale_price_gbp_invalid"),
        (json!({"sale_price_gbp": 0}), "sale_price_gbp_invalid"),
        (json!({"sale_price_gbp": 9.999}), "sale_price_gbp_invalid"),
        (json!({"rrp_gbp": -3}), "rrp_gbp_invalid"),
        (json!({"rrp_gbp": "200"}), "rrp_gbp_invalid"),
        (json!({"delivery_contribution_gbp": 45}), "delivery_contribution_gbp_invalid"),
        (json!({"delivery_contribution_gbp": 30.5}), "delivery_contribution_gbp_invalid"),
        (json!({"delivery_contribution_gbp": "30"}), "delivery_contribution_gbp_invalid"),
        (json!({"brand": long(81)}), "brand_too_long"),
        (json!({"brand": 7}), "brand_invalid"),
        (json!({"colour": "Purple"}), "colour_invalid"),
        (json!({"colour": 1}), "colour_invalid"),
        (json!({"fabric": "Plastic"}), "fabric_invalid"),
        (json!({"age_years": "16 years old"}), "age_years_invalid"),
        (json!({"age_years": 3}), "age_years_invalid"),
        (json!({"available_from": "2026-02-30"}), "available_from_invalid"),
        (json!({"available_from": "2026-2-3"}), "available_from_invalid"),
        (json!({"available_from": "03/02/2026"}), "available_from_invalid"),
        (json!({"available_from": 20260203}), "available_from_invalid"),
        (json!({"available_from": "9999-12-31"}), "available_from_invalid"),
        (json!({"available_from": "1999-12-31"}), "available_from_invalid"),
        (json!({"title": "\u{202E}afos"}), "title_invalid"),
        (json!({"title": "\u{200B}"}), "title_invalid"),
        (json!({"brand": "Lo\u{0}af"}), "brand_invalid"),
        (json!({"quantity": "three"}), "quantity_invalid"),
        (json!({"quantity": 1.5}), "quantity_invalid"),
        (json!({"quantity": 2}), "quantity_invalid"),
        (json!({"quantity": 0, "channel": "clearance"}), "quantity_invalid"),
        (json!({"quantity": 10_001, "channel": "clearance"}), "quantity_invalid"),
        (json!({"quantity": -1, "channel": "clearance"}), "quantity_invalid"),
        (json!({"measurements": {"type": "Chair"}}), "measurements_invalid"),
        (json!({"measurements": [{"type": "Table", "w_cm": 1, "d_cm": 1, "h_cm": 1}]}), "measurements_invalid"),
        (json!({"measurements": [{"type": "Chair", "w_cm": 0, "d_cm": 1, "h_cm": 1}]}), "measurements_invalid"),
        (json!({"measurements": [{"type": "Chair", "w_cm": 1, "d_cm": 1}]}), "measurements_invalid"),
        (json!({"measurements": [{"type": "Chair", "w_cm": "1", "d_cm": 1, "h_cm": 1}]}), "measurements_invalid"),
        (json!({"measurements": [{"type": "Chair", "w_cm": 1, "d_cm": 1, "h_cm": 1001}]}), "measurements_invalid"),
        (json!({"measurements": [{"type": "Chair", "w_cm": 1, "d_cm": 1, "h_cm": 1, "x": 1}]}), "measurements_invalid"),
        (json!({"measurements": ["Chair"]}), "measurements_invalid"),
        (
            json!({"measurements": vec![json!({"type": "Chair", "w_cm": 1, "d_cm": 1, "h_cm": 1}); 21]}),
            "measurements_too_long",
        ),
        (json!({"exposed_to": "Dogs"}), "exposed_to_invalid"),
        (json!({"exposed_to": ["Birds"]}), "exposed_to_invalid"),
        (json!({"exposed_to": ["None", "Dogs"]}), "exposed_to_invalid"),
        (json!({"exposed_to": [1]}), "exposed_to_invalid"),
        (json!({"faults": null}), "faults_required"),
        (json!({"faults": []}), "faults_required"),
        (json!({"faults": "None"}), "faults_invalid"),
        (json!({"faults": ["Stains"]}), "faults_invalid"),
        (json!({"faults": ["None", "Fire Label"]}), "faults_invalid"),
        (json!({"images": "https://img.example/a.jpg"}), "images_invalid"),
        (json!({"images": ["ftp://img.example/a.jpg"]}), "images_invalid"),
        (json!({"images": ["/relative.jpg"]}), "images_invalid"),
        (json!({"images": ["javascript:alert(1)"]}), "images_invalid"),
        (json!({"images": [format!("https://img.example/{}", long(2040))]}), "images_invalid"),
        (json!({"images": [7]}), "images_invalid"),
        (json!({"images": vec!["https://img.example/a.jpg"; 21]}), "images_too_long"),
        (json!({"attachment_ids": [0]}), "attachment_ids_invalid"),
        (json!({"attachment_ids": ["1"]}), "attachment_ids_invalid"),
        (json!({"attachment_ids": [1.5]}), "attachment_ids_invalid"),
        (json!({"attachment_ids": 1}), "attachment_ids_invalid"),
        (json!({"attachment_ids": (1..=21).collect::<Vec<_>>()}), "attachment_ids_too_long"),
        (json!({"sku": long(65)}), "sku_too_long"),
        (json!({"sku": 12}), "sku_invalid"),
        (json!({"warehouse_location": long(65)}), "warehouse_location_too_long"),
        (json!({"warehouse_location": false}), "warehouse_location_invalid"),
        (json!({"status": "closed"}), "status_invalid"),
        (json!({"status": "archived"}), "status_invalid"),
        (json!({"status": 1}), "status_invalid"),
        (json!({"warehouse_id": "not-a-uuid"}), "warehouse_id_invalid"),
        (json!({"warehouse_id": "936DA01F9ABD4d9d80C702AF85C822A8"}), "warehouse_id_invalid"),
        (json!({"warehouse_id": 5}), "warehouse_id_invalid"),
        (json!({"colour_name": "Red"}), "colour_name_unknown"),
        (json!({"id": 5}), "id_unknown"),
    ];
    for (changes, code) in table {
        let given = changes.clone();
        assert_eq!(codes(validate(&body(changes), None)), [code], "for {given}");
    }
}

#[test]
fn every_reason_is_reported_at_once() {
    let bad = object(json!({
        "title": "",
        "price_gbp": 1.234,
        "condition": "new",
        "channel": "exchange",
        "quantity": 3,
        "colour": "Purple",
        "faults": [],
        "extra": 1,
    }));
    let codes = codes(validate(&bad, None));
    assert_eq!(
        codes,
        [
            "title_required",
            "price_gbp_invalid",
            "condition_invalid",
            "category_required",
            "colour_invalid",
            "quantity_invalid",
            "faults_required",
            "extra_unknown",
        ]
    );
}

#[test]
fn errors_name_their_field() {
    let Err(errors) = validate(&body(json!({"sku": 1, "mystery": 2})), None) else { panic!("accepted") };
    assert_eq!(errors, [FieldError::new("sku", "sku_invalid"), FieldError::new("mystery", "mystery_unknown")]);
}

#[test]
fn values_are_canonicalised() {
    let fields = valid(&body(json!({
        "title": "  Velvet chair  ",
        "category": "sofa beds",
        "condition": "Like-New",
        "channel": "Clearance",
        "quantity": 4,
        "colour": "gray",
        "fabric": "boucle",
        "age_years": "3 YEARS OLD",
        "brand": "  Loaf   Home ",
        "exposed_to": ["dogs", "Cats", "Dogs"],
        "faults": ["fire label", "Rips or tears", "Fire Label"],
        "warehouse_id": "936DA01F-9ABD-4D9D-80C7-02AF85C822A8",
        "measurements": [{"type": "chair", "w_cm": 80, "d_cm": 75.5, "h_cm": 90}],
        "sku": "",
    })));
    assert_eq!(fields.title, "Velvet chair");
    assert_eq!(fields.category, "Sofa Beds");
    assert_eq!(fields.condition, Condition::LikeNew);
    assert_eq!(fields.channel, Channel::Clearance);
    assert_eq!(fields.colour.as_deref(), Some("Grey"));
    assert_eq!(fields.fabric.as_deref(), Some("Bouclé"));
    assert_eq!(fields.age_years.as_deref(), Some("3 years old"));
    assert_eq!(fields.brand.as_deref(), Some("Loaf Home"));
    assert_eq!(fields.exposed_to, ["Dogs", "Cats"]);
    assert_eq!(fields.faults, ["Fire Label", "Rips or tears"]);
    assert_eq!(fields.warehouse_id.as_deref(), Some("936da01f-9abd-4d9d-80c7-02af85c822a8"));
    assert_eq!(
        serde_json::to_value(&fields.measurements).unwrap(),
        json!([{"type": "Chair", "w_cm": 80, "d_cm": 75.5, "h_cm": 90}])
    );
    assert_eq!(fields.sku, None, "a blank optional string is absent");
}

#[test]
fn descriptions_are_sanitised() {
    let fields = valid(&body(json!({
        "description": "<p onclick=\"x()\">Lovely <b>sofa</b><script>alert(1)</script><style>p{}</style>\
                        <a href=\"javascript:alert(1)\">link</a></p>"
    })));
    let description = fields.description.unwrap();
    assert!(description.contains("<b>sofa</b>"), "{description}");
    for banned in ["script", "style", "onclick", "javascript:", "alert"] {
        assert!(!description.contains(banned), "{banned} survived in {description}");
    }
    let plain = valid(&body(json!({"description": "Sofa & chair, 2 > 1"})));
    assert_eq!(plain.description.as_deref(), Some("Sofa & chair, 2 > 1"), "plain text is kept as written");
    let only_script = valid(&body(json!({"description": "<script>alert(1)</script>"})));
    assert_eq!(only_script.description, None);
}

#[test]
fn the_description_limit_applies_after_sanitising() {
    let padded = format!("{}<script>{}</script>", "a".repeat(DESCRIPTION_MAX), "b".repeat(5_000));
    assert_eq!(valid(&body(json!({"description": padded}))).description.map(|d| d.len()), Some(DESCRIPTION_MAX));
}

#[test]
fn deeply_nested_markup_is_handled_without_crashing() {
    let nested = format!("{}x", "<div>".repeat(39_000));
    let result = validate(&body(json!({ "description": nested })), None);
    assert!(result.is_ok() || codes(result) == ["description_too_long"]);
}

#[test]
fn clearance_may_hold_many_units_and_exchange_one() {
    assert_eq!(valid(&body(json!({"channel": "clearance", "quantity": 10_000}))).quantity, 10_000);
    assert_eq!(valid(&body(json!({"channel": "exchange", "quantity": 1}))).quantity, 1);
    assert_eq!(valid(&body(json!({"quantity": 1}))).channel, Channel::Exchange);
}

#[test]
fn a_sale_price_below_the_regular_price_is_kept() {
    let fields = valid(&body(json!({"price_gbp": 100, "sale_price_gbp": 79.99, "rrp_gbp": 400})));
    assert_eq!(fields.sale_price, Some(Pence::new(7_999)));
    assert_eq!(fields.rrp, Some(Pence::new(40_000)));
    assert_eq!(fields.price(), Pence::new(7_999));
}

#[test]
fn images_and_attachments_are_only_reported_when_given() {
    let untouched = validate(&body(json!({})), None).unwrap();
    assert_eq!((untouched.images, untouched.attachment_ids), (None, None));
    let given =
        validate(&body(json!({"images": ["https://img.example/a.jpg"], "attachment_ids": [3, 3, 4]})), None).unwrap();
    assert_eq!(given.images, Some(vec!["https://img.example/a.jpg".to_owned()]));
    assert_eq!(given.attachment_ids, Some(vec![3, 4]));
    let cleared = validate(&object(json!({"images": null})), Some(&valid(&body(json!({}))))).unwrap();
    assert_eq!(cleared.images, Some(vec![]));
}

#[test]
fn references_name_only_well_formed_ids() {
    let refs = referenced_ids(&ListingInput::from_json(&object(
        json!({"warehouse_id": "936DA01F-9ABD-4D9D-80C7-02AF85C822A8", "attachment_ids": [5]}),
    )));
    assert_eq!(refs.warehouse_id.as_deref(), Some("936da01f-9abd-4d9d-80c7-02af85c822a8"));
    assert_eq!(refs.attachment_ids, [5]);
    assert_eq!(
        referenced_ids(&ListingInput::from_json(&object(json!({"warehouse_id": "x", "attachment_ids": [-1]})))),
        References::default()
    );
}

mod patch {
    use super::*;

    fn stored(changes: Value) -> ListingFields {
        valid(&body(changes))
    }

    fn patch(existing: &ListingFields, changes: Value) -> Result<ValidListing, Vec<FieldError>> {
        validate(&object(changes), Some(existing))
    }

    #[test]
    fn omitted_fields_keep_their_stored_value() {
        let existing = stored(json!({"brand": "Loaf", "sku": "A-1", "sale_price_gbp": 80}));
        let patched = patch(&existing, json!({"title": "New title"})).unwrap().fields;
        assert_eq!(patched, ListingFields { title: "New title".into(), ..existing });
    }

    #[test]
    fn null_clears_an_optional_field_and_refuses_a_required_one() {
        let existing = stored(json!({"brand": "Loaf", "channel": "clearance", "quantity": 3}));
        let patched = patch(&existing, json!({"brand": null, "quantity": null})).unwrap().fields;
        assert_eq!(patched.brand, None);
        assert_eq!(patched.quantity, 1, "a cleared quantity is the default");
        assert_eq!(
            codes(patch(&existing, json!({"title": null, "faults": null}))),
            ["title_required", "faults_required"]
        );
    }

    #[test]
    fn a_patch_cannot_make_the_merged_listing_invalid() {
        let clearance = stored(json!({"channel": "clearance", "quantity": 5}));
        assert_eq!(codes(patch(&clearance, json!({"channel": "exchange"}))), ["quantity_invalid"]);
        let on_sale = stored(json!({"price_gbp": 100, "sale_price_gbp": 80}));
        assert_eq!(codes(patch(&on_sale, json!({"price_gbp": 70}))), ["sale_price_gbp_invalid"]);
        assert!(patch(&on_sale, json!({"price_gbp": 70, "sale_price_gbp": null})).is_ok());
    }

    #[test]
    fn a_closed_listing_stays_closed_and_may_hold_no_stock() {
        let mut closed = stored(json!({"channel": "clearance", "quantity": 2}));
        closed.status = ListingStatus::Closed;
        closed.quantity = 0;
        let patched = patch(&closed, json!({"title": "Sold sofa"})).unwrap().fields;
        assert_eq!((patched.status, patched.quantity), (ListingStatus::Closed, 0));
        assert_eq!(codes(patch(&closed, json!({"status": "active"}))), ["listing_sold_out"], "reopen with stock");
        assert_eq!(codes(patch(&closed, json!({"status": "active", "quantity": 0}))), ["quantity_invalid"]);
        let reopened = patch(&closed, json!({"status": "active", "quantity": 4})).unwrap().fields;
        assert_eq!((reopened.status, reopened.quantity), (ListingStatus::Active, 4));
        assert_eq!(codes(patch(&closed, json!({"status": "closed"}))), ["status_invalid"]);
    }
}

/// A random body every field of which is valid, with the values it should come back as.
fn valid_body() -> impl Strategy<Value = (Map<String, Value>, ListingFields)> {
    let text = "[A-Za-z0-9][A-Za-z0-9 ,.'-]{0,40}[A-Za-z0-9]";
    (
        (
            text,
            1..=100_000_i64,
            prop::sample::select(Condition::ALL.to_vec()),
            prop::sample::select(crate::taxonomy::CATEGORIES.to_vec()),
        ),
        (prop::bool::ANY, 1..=50_i64, prop::option::of(0..100_i64), prop::sample::select(vec![0_u32, 30, 60, 129])),
        (
            prop::option::of(prop::sample::select(crate::taxonomy::COLOURS.to_vec())),
            prop::option::of(prop::sample::select(crate::taxonomy::FABRICS.to_vec())),
            prop::option::of(text),
        ),
        (
            prop::sample::subsequence(vec!["Dogs", "Cats", "Smoke"], 0..=3),
            prop::sample::subsequence(vec!["Rips or tears", "Fire Label"], 1..=2),
            prop::bool::ANY,
        ),
    )
        .prop_map(
            |(
                (title, price, condition, category),
                (clearance, quantity, sale_percent, delivery),
                (colour, fabric, sku),
                (exposed, faults, draft),
            )| {
                let channel = if clearance { Channel::Clearance } else { Channel::Exchange };
                let quantity = if clearance { quantity } else { 1 };
                let sale = sale_percent.map(|p| price * p / 100).filter(|s| *s > 0);
                let mut body = object(json!({
                    "title": title,
                    "price_gbp": Pence::new(price).gbp(),
                    "condition": condition.as_str(),
                    "category": category,
                    "channel": channel.as_str(),
                    "quantity": quantity,
                    "delivery_contribution_gbp": delivery,
                    "exposed_to": exposed,
                    "faults": faults,
                    "status": if draft { "draft" } else { "active" },
                }));
                if let Some(sale) = sale {
                    body.insert("sale_price_gbp".into(), json!(Pence::new(sale).gbp()));
                }
                for (key, value) in [
                    ("colour", colour.map(str::to_lowercase)),
                    ("fabric", fabric.map(str::to_uppercase)),
                    ("sku", sku.clone()),
                ] {
                    if let Some(value) = value {
                        body.insert(key.into(), json!(value));
                    }
                }
                let expected = ListingFields {
                    title: title.clone(),
                    description: None,
                    category: category.to_owned(),
                    condition,
                    channel,
                    status: if draft { ListingStatus::Draft } else { ListingStatus::Active },
                    regular_price: Pence::new(price),
                    sale_price: sale.map(Pence::new),
                    rrp: None,
                    delivery_contribution_gbp: delivery,
                    brand: None,
                    colour: colour.map(str::to_owned),
                    fabric: fabric.map(str::to_owned),
                    age_years: None,
                    available_from: None,
                    quantity,
                    measurements: Vec::new(),
                    exposed_to: exposed.iter().map(|s| s.to_string()).collect(),
                    faults: faults.iter().map(|s| s.to_string()).collect(),
                    sku,
                    warehouse_location: None,
                    warehouse_id: None,
                };
                (body, expected)
            },
        )
}

proptest! {
    #[test]
    fn random_valid_bodies_validate_to_what_they_say((body, expected) in valid_body()) {
        let valid = validate(&body, None);
        prop_assert_eq!(valid.map(|v| v.fields), Ok(expected));
    }

    #[test]
    fn the_validator_never_panics_on_arbitrary_field_values(key in prop::sample::select(LISTING_BODY.names().collect::<Vec<_>>()), value in arbitrary_json()) {
        let mut map = body(json!({}));
        map.insert(key.to_owned(), value);
        let _ = validate(&map, None);
    }
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        prop::bool::ANY.prop_map(Value::Bool),
        prop::num::i64::ANY.prop_map(Value::from),
        prop::num::f64::NORMAL.prop_map(Value::from),
        ".{0,20}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
