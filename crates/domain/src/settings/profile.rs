//! The public brand profile.

use serde::Serialize;
use serde_json::{Map, Value};

use super::fields::{EitherWay, Fields, Lines, Parsed};
use super::shapes::{Email, HexColour, PhoneNumber, PublicHttpsUrl, EMAIL_RULE, PHONE_RULE};
use crate::body::{BodySpec, Field, FieldType};
use crate::FieldError;

/// The public face of a partner brand. A field never set is an empty string.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BrandProfile {
    /// Required on the first save; at most 80 characters.
    pub display_name: String,
    /// Short positioning line; at most 160 characters.
    pub tagline: String,
    /// Long-form description; at most 5,000 characters, line breaks kept.
    pub description: String,
    /// Customer-facing email address.
    pub support_email: String,
    /// Customer-facing phone number.
    pub support_phone: String,
    /// Public `https` URL of the logo.
    pub logo_url: String,
    /// `#RRGGBB`, upper-case.
    pub accent_color: String,
}

pub const DISPLAY_NAME_MAX: usize = 80;
pub const TAGLINE_MAX: usize = 160;
pub const DESCRIPTION_MAX: usize = 5_000;
/// Longer than `#RRGGBB` so that a near miss reads as `accent_color_invalid`.
const ACCENT_COLOR_MAX: usize = 32;

/// The body of `PATCH /v1/partner/settings/brand`, which [`ProfilePatch::parse`] reads.
pub static PROFILE_BODY: BodySpec = BodySpec {
    name: "BrandProfileInput",
    doc: "The body of `PATCH /v1/partner/settings/brand`: only the fields to change. Strings are \
          trimmed; `\"\"` or `null` clears a field (the display name cannot be cleared). Other \
          fields are refused (`<field>_unknown`).",
    fields: &[
        Field::optional(
            "display_name",
            FieldType::Text { max: DISPLAY_NAME_MAX },
            "Required on the first save (`display_name_required`); at most 80 characters \
             (`display_name_too_long`). Never null: the name cannot be cleared.",
        )
        .not_null()
        .hinted("Your brand as buyers see it on the marketplace and in their emails."),
        Field::optional("tagline", FieldType::Text { max: TAGLINE_MAX }, "At most 160 characters.")
            .hinted("A line under your name on your brand page, like “Sofas made in Yorkshire since 1962”."),
        Field::optional(
            "description",
            FieldType::Lines { max: DESCRIPTION_MAX },
            "At most 5,000 characters; line breaks are kept.",
        ),
        Field::optional(
            "support_email",
            FieldType::Text { max: Email::MAX_CHARS },
            "An email address with a public domain (`support_email_invalid`).",
        )
        .rule(EMAIL_RULE)
        .hinted("Where buyers and customers write with questions; shown on your brand page."),
        Field::optional(
            "support_phone",
            FieldType::Text { max: PhoneNumber::MAX_CHARS },
            "A number that can be written in E.164: `+` (or `00`) and a country code, 8 to 15 digits, or a UK \
             number starting with 0 (10 or 11 digits); spaces, dashes, dots and brackets allowed \
             (`support_phone_invalid`).",
        )
        .rule(PHONE_RULE)
        .hinted("Shown on your brand page; write it as people dial it, like 020 7946 0000 or +44 20 7946 0000."),
        Field::optional(
            "logo_url",
            FieldType::Text { max: PublicHttpsUrl::MAX_CHARS },
            "An `https` URL on a public host: not localhost nor a private address (`logo_url_invalid`).",
        )
        .labelled("Logo URL")
        .rule("must be a web address starting with https:// on a public site")
        .hinted("The address of your logo image on your own site, starting with https://; shown on your brand page."),
        Field::optional(
            "accent_color",
            FieldType::Text { max: ACCENT_COLOR_MAX },
            "`#RRGGBB` (`accent_color_invalid`); answered upper-case.",
        )
        .labelled("Accent colour")
        .rule("must be # and six hex digits, like #1A6B4F")
        .hinted("The colour of your brand page's heading band, written # and six hex digits, like #1A6B4F."),
    ],
    example: r##"{"display_name": "Acme Sofas", "support_email": "help@acme.example", "support_phone": "+44 20 7946 0000", "logo_url": "https://cdn.acme.example/logo.png", "accent_color": "#FF8800"}"##,
};
crate::documented_body!(ProfilePatch, PROFILE_BODY);

/// A valid partial update of the brand profile: `None` leaves a field as it is, `Some("")`
/// clears it. Only [`ProfilePatch::parse`] builds one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfilePatch {
    pub display_name: Option<String>,
    pub tagline: Option<String>,
    pub description: Option<String>,
    pub support_email: Option<String>,
    pub support_phone: Option<String>,
    pub logo_url: Option<String>,
    pub accent_color: Option<String>,
    _parsed: Parsed,
}

/// A change of the brand profile as a body gives it, read for either save: the first save
/// must name the display name, and whether the brand has saved one yet only the use case
/// learns ([`EitherWay::of`] with `first_save`).
pub type ProfileEdit = EitherWay<ProfilePatch>;

impl ProfileEdit {
    pub fn parse(body: &Map<String, Value>) -> Self {
        EitherWay::read(|first_save| ProfilePatch::parse(body, first_save))
    }
}

impl ProfilePatch {
    /// Parses a PATCH body. `first_save`: the brand has no saved profile yet, so the body
    /// must name it. An empty display name counts as missing, on any save.
    pub fn parse(body: &Map<String, Value>, first_save: bool) -> Result<Self, Vec<FieldError>> {
        let mut f = Fields::of(body, &PROFILE_BODY);
        let display_name = f.text("display_name", DISPLAY_NAME_MAX, Lines::One);
        let missing = match &display_name {
            Some(name) => name.is_empty(),
            None => first_save && !f.given("display_name"),
        };
        if missing {
            f.fail::<()>("display_name", "required");
        }
        let patch = Self {
            display_name,
            tagline: f.text("tagline", TAGLINE_MAX, Lines::One),
            description: f.text("description", DESCRIPTION_MAX, Lines::Many),
            support_email: f.shaped("support_email", Email::MAX_CHARS, |s| Email::parse(s).map(String::from)),
            support_phone: f
                .shaped("support_phone", PhoneNumber::MAX_CHARS, |s| PhoneNumber::parse(s).map(String::from)),
            logo_url: f.shaped("logo_url", PublicHttpsUrl::MAX_CHARS, |s| PublicHttpsUrl::parse(s).map(String::from)),
            accent_color: f.shaped("accent_color", ACCENT_COLOR_MAX, |s| HexColour::parse(s).map(String::from)),
            _parsed: Parsed,
        };
        f.finish(patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value, first_save: bool) -> Result<ProfilePatch, Vec<String>> {
        let Value::Object(body) = value else { unreachable!() };
        ProfilePatch::parse(&body, first_save).map_err(|errors| errors.into_iter().map(|e| e.code).collect())
    }

    #[test]
    fn each_reason_of_the_brand_profile() {
        let cases = [
            (json!({}), true, "display_name_required"),
            (json!({"tagline": "Loved sofas"}), true, "display_name_required"),
            (json!({"display_name": ""}), false, "display_name_required"),
            (json!({"display_name": "   "}), false, "display_name_required"),
            (json!({"display_name": null}), false, "display_name_required"),
            (json!({"display_name": "x".repeat(81)}), false, "display_name_too_long"),
            (json!({"display_name": 42}), false, "display_name_invalid"),
            (json!({"display_name": "Two\nlines"}), false, "display_name_invalid"),
            (json!({"tagline": "x".repeat(161)}), false, "tagline_too_long"),
            (json!({"tagline": ["x"]}), false, "tagline_invalid"),
            (json!({"description": "x".repeat(5_001)}), false, "description_too_long"),
            (json!({"support_email": "not-an-email"}), false, "support_email_invalid"),
            (json!({"support_email": "help@localhost"}), false, "support_email_invalid"),
            (json!({"support_email": 7}), false, "support_email_invalid"),
            (json!({"support_phone": "call us"}), false, "support_phone_invalid"),
            (json!({"support_phone": "1".repeat(33)}), false, "support_phone_too_long"),
            (json!({"logo_url": "http://cdn.example.com/logo.png"}), false, "logo_url_invalid"),
            (json!({"logo_url": "https://localhost/logo.png"}), false, "logo_url_invalid"),
            (json!({"logo_url": "https://192.168.0.10/logo.png"}), false, "logo_url_invalid"),
            (json!({"accent_color": "red"}), false, "accent_color_invalid"),
            (json!({"accent_color": "#12345"}), false, "accent_color_invalid"),
            (json!({"accent_color": "#1234567"}), false, "accent_color_invalid"),
            (json!({"accent_color": "#".repeat(33)}), false, "accent_color_too_long"),
            (json!({"colour": "#123456"}), false, "colour_unknown"),
        ];
        for (body, first_save, code) in cases {
            assert_eq!(parse(body.clone(), first_save), Err(vec![code.to_owned()]), "{body}");
        }
    }

    #[test]
    fn the_documented_fields_are_the_accepted_ones() {
        let names: Vec<&str> = PROFILE_BODY.names().collect();
        let body: Map<String, Value> = names.iter().map(|n| (n.to_string(), Value::Null)).collect();
        // Every documented field is read (none is `_unknown`), and any other is refused.
        let codes = parse(Value::Object(body), false).err().unwrap_or_default();
        assert_eq!(codes, ["display_name_required"]);
        assert_eq!(parse(json!({"logo": ""}), false), Err(vec!["logo_unknown".to_owned()]));
        assert_eq!(
            names,
            ["display_name", "tagline", "description", "support_email", "support_phone", "logo_url", "accent_color"]
        );
    }

    #[test]
    fn display_name_counts_unicode_characters() {
        let name = "é".repeat(DISPLAY_NAME_MAX);
        let patch = parse(json!({ "display_name": name }), true).unwrap();
        assert_eq!(patch.display_name.as_deref(), Some(name.as_str()));
    }

    #[test]
    fn every_reason_is_reported_at_once() {
        let errors = parse(json!({"support_email": "x", "accent_color": "blue", "extra": 1}), true).unwrap_err();
        assert_eq!(errors, ["display_name_required", "support_email_invalid", "accent_color_invalid", "extra_unknown"]);
    }

    #[test]
    fn a_later_save_may_omit_the_display_name() {
        let patch = parse(json!({"tagline": "  Pre-loved sofas  "}), false).unwrap();
        assert_eq!(patch.display_name, None);
        assert_eq!(patch.tagline.as_deref(), Some("Pre-loved sofas"));
        assert_eq!(patch.description, None);
    }

    #[test]
    fn values_are_normalised_and_empty_strings_clear() {
        let patch = parse(
            json!({
                "display_name": " Acme Sofas ",
                "support_email": "Help@ACME.example",
                "accent_color": "#ff8800",
                "logo_url": "",
                "support_phone": null,
            }),
            true,
        )
        .unwrap();
        assert_eq!(patch.display_name.as_deref(), Some("Acme Sofas"));
        assert_eq!(patch.support_email.as_deref(), Some("Help@acme.example"));
        assert_eq!(patch.accent_color.as_deref(), Some("#FF8800"));
        assert_eq!(patch.logo_url.as_deref(), Some(""));
        assert_eq!(patch.support_phone.as_deref(), Some(""));
    }
}
