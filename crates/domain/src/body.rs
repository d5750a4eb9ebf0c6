//! Request bodies described once. Each body an endpoint accepts has one [`BodySpec`]: the
//! table of its fields. The reader of that body takes its known fields from the table
//! (`domain::reader::BodyReader::of`) and the OpenAPI document takes its schema
//! from the same table (`BodySpec::schema`, in [`crate::openapi`] behind the `openapi`
//! feature the edge turns on; attached to the parsing type with
//! [`documented_body!`](crate::documented_body)), so what is documented is exactly what is
//! accepted.

use serde::Serialize;

/// One field-level reason of a `validation_failed` error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
}

/// Makes a parsing type the documented schema of its body: `documented_body!(ProfilePatch,
/// PROFILE_BODY)` lets `request_body = ProfilePatch` and `components(schemas(ProfilePatch))`
/// name the table the type is read from. Without the `openapi` feature it writes nothing.
#[macro_export]
macro_rules! documented_body {
    ($ty:ty, $spec:expr) => {
        $crate::__documented_body!($ty, $spec);
    };
}

/// A type standing for the PATCH body of what `$spec` creates, named `$name` in the document:
/// `documented_patch_body!(ListingPatch, LISTING_BODY, "ListingPatch")`.
#[macro_export]
macro_rules! documented_patch_body {
    ($ty:ident, $spec:expr, $name:literal) => {
        #[doc = concat!("The PATCH body of `", stringify!($spec), "` in the OpenAPI document.")]
        pub struct $ty;
        $crate::__documented_patch_body!($ty, $spec, $name);
    };
}

/// Without the `openapi` feature a documented body is only its table.
#[cfg(not(feature = "openapi"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __documented_body {
    ($($any:tt)*) => {};
}

#[cfg(not(feature = "openapi"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __documented_patch_body {
    ($($any:tt)*) => {};
}
