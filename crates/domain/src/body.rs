//! Request bodies described once. Each body an endpoint accepts has one [`BodySpec`]: the
//! table of its fields. The reader of that body takes its known fields from the table
//! (`domain::reader::BodyReader::of`) and the OpenAPI document takes its schema
//! from the same table ([`BodySpec::schema`], attached to the parsing type with
//! [`documented_body!`](crate::documented_body)), so what is documented is exactly what is
//! accepted.

use serde::Serialize;
use utoipa::openapi::schema::{ArrayBuilder, KnownFormat, ObjectBuilder, SchemaFormat, SchemaType, Type};
use utoipa::openapi::{RefOr, Schema};
use utoipa::ToSchema;

use crate::text::{self, Lines};

/// One field-level reason of a `validation_failed` error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct FieldError {
    pub field: String,
    /// snake_case reason code, e.g. `title_required`.
    pub code: String,
    /// What is wrong and what to do, in a sentence; the code is the reason for programs.
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, code: impl Into<String>) -> Self {
        let (field, code) = (field.into(), code.into());
        let message = super::messages::reason_message(&field, &code);
        Self { field, code, message }
    }

    /// The conventional `<field>_<suffix>` reason (`required`, `invalid`, `too_long`, `unknown`).
    pub fn of(field: &str, suffix: &str) -> Self {
        Self::new(field, format!("{field}_{suffix}"))
    }
}

/// What a body field holds, as the documentation states it.
#[derive(Debug, Clone, Copy)]
pub enum FieldType {
    /// One line of text (no control characters), at most `max` characters.
    Text {
        max: usize,
    },
    /// Text that may span lines (line breaks and tabs kept), at most `max` characters.
    Lines {
        max: usize,
    },
    /// A JSON integer within `min..=max`.
    Integer {
        min: i64,
        max: i64,
    },
    /// An amount in GBP: a JSON number above zero with at most two decimals.
    Money,
    /// A JSON number.
    Number,
    Boolean,
    /// `YYYY-MM-DD`.
    Date,
    /// RFC 3339 with an offset.
    Timestamp,
    /// One of these strings.
    Choice(&'static [&'static str]),
    /// A list of `min` to `max` items of `item`.
    List {
        item: &'static FieldType,
        min: usize,
        max: usize,
    },
    /// An object of these fields.
    Object(&'static [Field]),
}

/// One field of a body.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub name: &'static str,
    pub ty: FieldType,
    /// Required when the body creates something (or always, for bodies that create nothing).
    pub required: bool,
    /// `null` stands for "absent" (or "clear", in a PATCH): true of optional fields unless
    /// [`Field::not_null`] says otherwise; never of booleans, which have no blank.
    pub nullable: bool,
    /// What the field means and its reasons, in Markdown.
    pub doc: &'static str,
    /// The label forms show, when the one made from the name would not do
    /// (`domain::words::label`).
    pub label: Option<&'static str>,
    /// What a valid value is, in words after the label ("must start with https://"), when
    /// the field's type does not say it all (`domain::words::sentence`).
    pub rule: Option<&'static str>,
    /// What the field is for, in a sentence shown under it in forms ("The colour of buttons
    /// and links on your marketplace pages."), when its label does not say it.
    pub hint: Option<&'static str>,
}

impl Field {
    /// An optional field.
    pub const fn optional(name: &'static str, ty: FieldType, doc: &'static str) -> Self {
        Self {
            name,
            ty,
            required: false,
            nullable: !matches!(ty, FieldType::Boolean),
            doc,
            label: None,
            rule: None,
            hint: None,
        }
    }

    /// The label forms show.
    pub const fn labelled(self, label: &'static str) -> Self {
        Self { label: Some(label), ..self }
    }

    /// What a valid value is, in words after the label.
    pub const fn rule(self, rule: &'static str) -> Self {
        Self { rule: Some(rule), ..self }
    }

    /// What the field is for, shown under it in forms.
    pub const fn hinted(self, hint: &'static str) -> Self {
        Self { hint: Some(hint), ..self }
    }

    /// The field refuses `null` (`<field>_invalid`).
    pub const fn not_null(self) -> Self {
        Self { nullable: false, ..self }
    }

    /// A required field.
    pub const fn required(name: &'static str, ty: FieldType, doc: &'static str) -> Self {
        Self { name, ty, required: true, nullable: false, doc, label: None, rule: None, hint: None }
    }
}

/// The fields a body accepts; any other field is `<field>_unknown`.
#[derive(Debug)]
pub struct BodySpec {
    /// The schema's name in the OpenAPI document.
    pub name: &'static str,
    /// What the body is, in Markdown.
    pub doc: &'static str,
    pub fields: &'static [Field],
    /// A complete example body, as JSON text.
    pub example: &'static str,
}

impl BodySpec {
    /// True when the body may carry a field of this name.
    pub fn accepts(&self, name: &str) -> bool {
        self.fields.iter().any(|f| f.name == name)
    }

    /// The reason `<field>_<suffix>` of one of the body's fields, its sentence listing the
    /// values the field takes when it takes a few (`condition_invalid`: "Choose `condition`
    /// from: like-new, excellent, gently-used, fair.").
    pub fn error(&self, field: &str, suffix: &str) -> FieldError {
        let choices = self.fields.iter().find(|f| f.name == field).and_then(|f| match f.ty {
            FieldType::Choice(values) => Some(values),
            FieldType::List { item: FieldType::Choice(values), .. } => Some(values),
            _ => None,
        });
        match choices {
            Some(values) if suffix == "invalid" => FieldError {
                field: field.to_owned(),
                code: format!("{field}_{suffix}"),
                message: super::messages::choose_from(field, values),
            },
            _ => FieldError::of(field, suffix),
        }
    }

    /// The field of this name.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The field names, in the table's order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> {
        self.fields.iter().map(|f| f.name)
    }

    /// The body's JSON schema: an object of exactly these fields, no other properties.
    pub fn schema(&self) -> RefOr<Schema> {
        self.described(object_of(self.fields, true))
    }

    /// The schema of a PATCH of what this body creates: the same fields, none of them
    /// required (those required on create still may not be blank), and at least one.
    pub fn patch_schema(&self) -> RefOr<Schema> {
        self.described(object_of(self.fields, false).min_properties(Some(1)))
    }

    fn described(&self, object: ObjectBuilder) -> RefOr<Schema> {
        let mut object = object.description(Some(self.doc));
        if let Ok(example) = serde_json::from_str::<serde_json::Value>(self.example) {
            object = object.examples([example]);
        }
        object.into()
    }
}

/// An object of exactly these fields; with `create`, the required ones are required.
fn object_of(fields: &[Field], create: bool) -> ObjectBuilder {
    let mut object = ObjectBuilder::new()
        .schema_type(Type::Object)
        .additional_properties(Some(utoipa::openapi::schema::AdditionalProperties::FreeForm(false)));
    for field in fields {
        object = object.property(field.name, field_schema(&field.ty, Some(field.doc), field.required, field.nullable));
        if field.required && create {
            object = object.required(field.name);
        }
    }
    object
}

/// A field's schema; `required` fields (and list items) may not be blank; `nullable` ones
/// may be `null`.
fn field_schema(ty: &FieldType, doc: Option<&str>, required: bool, nullable: bool) -> RefOr<Schema> {
    let json_type = match ty {
        FieldType::Text { .. } | FieldType::Lines { .. } | FieldType::Date | FieldType::Timestamp => Type::String,
        FieldType::Choice(_) => Type::String,
        FieldType::Integer { .. } => Type::Integer,
        FieldType::Money | FieldType::Number => Type::Number,
        FieldType::Boolean => Type::Boolean,
        FieldType::List { .. } => Type::Array,
        FieldType::Object(_) => Type::Object,
    };
    let json_type = if nullable { SchemaType::from_iter([json_type, Type::Null]) } else { json_type.into() };
    let builder = match ty {
        FieldType::Text { max } | FieldType::Lines { max } => {
            let lines = if matches!(ty, FieldType::Text { .. }) { Lines::One } else { Lines::Many };
            let text = ObjectBuilder::new()
                .schema_type(Type::String)
                .max_length(Some(*max))
                .pattern(Some(text::text_pattern(lines, required)));
            if required {
                text.min_length(Some(1))
            } else {
                text
            }
        }
        FieldType::Integer { min, max } => {
            ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(*min as f64)).maximum(Some(*max as f64))
        }
        FieldType::Money => ObjectBuilder::new()
            .schema_type(Type::Number)
            .exclusive_minimum(Some(0.0))
            .maximum(Some(crate::money::MAX_PRICE.get() as f64 / 100.0))
            .multiple_of(Some(0.01)),
        FieldType::Number => ObjectBuilder::new().schema_type(Type::Number),
        FieldType::Boolean => ObjectBuilder::new().schema_type(Type::Boolean),
        FieldType::Date => ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(10))
            .max_length(Some(10))
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Date)))
            .pattern(Some(text::YEAR_PATTERN)),
        FieldType::Timestamp => ObjectBuilder::new()
            .schema_type(Type::String)
            .max_length(Some(text::MAX_INSTANT_LEN))
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
            .pattern(Some(text::YEAR_PATTERN)),
        FieldType::Choice(values) => {
            let null = nullable.then_some(serde_json::Value::Null);
            let values = values.iter().map(|v| serde_json::Value::from(*v)).chain(null);
            ObjectBuilder::new().schema_type(Type::String).enum_values(Some(values))
        }
        FieldType::Object(fields) => object_of(fields, true),
        FieldType::List { item, min, max } => {
            let list = ArrayBuilder::new()
                .schema_type(json_type)
                .items(field_schema(item, None, true, false))
                .max_items(Some(*max));
            let list = if *min > 0 { list.min_items(Some(*min)) } else { list };
            return list.description(doc).into();
        }
    };
    builder.schema_type(json_type).description(doc).into()
}

/// Makes a parsing type the documented schema of its body: `documented_body!(ProfilePatch,
/// PROFILE_BODY)` lets `request_body = ProfilePatch` and `components(schemas(ProfilePatch))`
/// name the table the type is read from.
#[macro_export]
macro_rules! documented_body {
    ($ty:ty, $spec:expr) => {
        impl utoipa::PartialSchema for $ty {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
                $spec.schema()
            }
        }
        impl utoipa::ToSchema for $ty {
            fn name() -> std::borrow::Cow<'static, str> {
                std::borrow::Cow::Borrowed($spec.name)
            }
        }
    };
}

/// A type standing for the PATCH body of what `$spec` creates, named `$name` in the document:
/// `documented_patch_body!(ListingPatch, LISTING_BODY, "ListingPatch")`.
#[macro_export]
macro_rules! documented_patch_body {
    ($ty:ident, $spec:expr, $name:literal) => {
        #[doc = concat!("The PATCH body of `", stringify!($spec), "` in the OpenAPI document.")]
        pub struct $ty;
        impl utoipa::PartialSchema for $ty {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
                $spec.patch_schema()
            }
        }
        impl utoipa::ToSchema for $ty {
            fn name() -> std::borrow::Cow<'static, str> {
                std::borrow::Cow::Borrowed($name)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    const PIECE: &[Field] = &[Field::required("w", FieldType::Number, "Width")];
    const SPEC: BodySpec = BodySpec {
        name: "Example",
        doc: "An example body.",
        fields: &[
            Field::required("title", FieldType::Text { max: 10 }, "A title."),
            Field::optional("n", FieldType::Integer { min: 1, max: 5 }, "A number."),
            Field::optional("pieces", FieldType::List { item: &FieldType::Object(PIECE), min: 0, max: 3 }, "Pieces."),
        ],
        example: r#"{"title": "x"}"#,
    };

    #[test]
    fn the_schema_has_exactly_the_fields_of_the_table() {
        let json = serde_json::to_value(SPEC.schema()).unwrap();
        let mut properties: Vec<&String> = json["properties"].as_object().unwrap().keys().collect();
        properties.sort();
        assert_eq!(properties, ["n", "pieces", "title"]);
        assert_eq!(json["required"], serde_json::json!(["title"]));
        assert_eq!(json["additionalProperties"], serde_json::json!(false));
        assert_eq!(json["properties"]["title"]["maxLength"], 10);
        assert_eq!(json["properties"]["pieces"]["items"]["properties"]["w"]["type"], "number");
        assert_eq!(json["examples"][0]["title"], "x");
        assert!(SPEC.accepts("n") && !SPEC.accepts("m"));
    }
}
