//! The OpenAPI side of the domain's types: the schemas of the request bodies, built from
//! their tables (`body`), the derives of the answers' schemas, and what the documented
//! bodies' macros write. Built only with the `openapi` feature, which only the edge (the
//! API and its document) turns on: the domain itself documents nothing.

use utoipa::openapi::schema::{ArrayBuilder, KnownFormat, ObjectBuilder, SchemaFormat, SchemaType, Type};
use utoipa::openapi::{RefOr, Schema};

use crate::body::{BodySpec, Field, FieldType};
use crate::text::{self, Lines};

#[doc(hidden)]
pub use utoipa;

impl BodySpec {
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

#[doc(hidden)]
#[macro_export]
macro_rules! __documented_body {
    ($ty:ty, $spec:expr) => {
        impl $crate::openapi::utoipa::PartialSchema for $ty {
            fn schema() -> $crate::openapi::utoipa::openapi::RefOr<$crate::openapi::utoipa::openapi::Schema> {
                $spec.schema()
            }
        }
        impl $crate::openapi::utoipa::ToSchema for $ty {
            fn name() -> std::borrow::Cow<'static, str> {
                std::borrow::Cow::Borrowed($spec.name)
            }
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __documented_patch_body {
    ($ty:ident, $spec:expr, $name:literal) => {
        impl $crate::openapi::utoipa::PartialSchema for $ty {
            fn schema() -> $crate::openapi::utoipa::openapi::RefOr<$crate::openapi::utoipa::openapi::Schema> {
                $spec.patch_schema()
            }
        }
        impl $crate::openapi::utoipa::ToSchema for $ty {
            fn name() -> std::borrow::Cow<'static, str> {
                std::borrow::Cow::Borrowed($name)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::{BodySpec, Field, FieldType};
    use crate::webhook::{DeliveryStatus, FailureClass};
    use serde_json::Value;

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

    /// The OpenAPI text of a failure class (`last_error`, attempt `error`) names exactly the
    /// classes the worker and the store write, and its schema lists them.
    #[test]
    fn the_documented_failure_classes_are_the_enums_wire_names() {
        let schema = serde_json::to_value(<FailureClass as utoipa::PartialSchema>::schema()).unwrap();
        let listed: Vec<&str> = schema["enum"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        let wire: Vec<&str> = FailureClass::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(listed, wire);
        let doc = schema["description"].as_str().unwrap_or_default();
        let named: Vec<&str> = doc.split('`').skip(1).step_by(2).collect();
        assert_eq!(named, wire, "{doc}");
    }

    #[test]
    fn the_documented_statuses_are_the_enums_wire_names() {
        let schema = serde_json::to_value(<DeliveryStatus as utoipa::PartialSchema>::schema()).unwrap();
        let listed: Vec<&str> = schema["enum"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        let wire: Vec<&str> = DeliveryStatus::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(listed, wire);
        let doc = schema["description"].as_str().unwrap_or_default();
        let named: Vec<&str> = doc.split('`').skip(1).step_by(2).collect();
        assert_eq!(named, wire, "{doc}");
    }
}
