//! The team's request bodies (decisions 8.5): inviting a member and changing a role, and the
//! one rule for an email address (trimmed, lower-cased, well-formed).

use serde_json::{Map, Value};

use crate::body::{BodySpec, Field, FieldType};
use crate::reader::BodyReader;
use crate::user::Role;
use crate::FieldError;

/// The longest email address accepted (RFC 5321's path limit).
pub const MAX_EMAIL_LEN: usize = 254;
/// The longest display name.
pub const MAX_NAME_LEN: usize = 120;

const ROLES: &[&str] = &["admin", "member"];

/// The body of `POST /v1/partner/settings/team`, which [`MemberInvite::parse`] reads.
pub static INVITE_BODY: BodySpec = BodySpec {
    name: "MemberInviteInput",
    doc: "The body of `POST /v1/partner/settings/team`: the person to invite.",
    fields: &[
        Field::required(
            "email",
            FieldType::Text { max: MAX_EMAIL_LEN },
            "Their email address, trimmed and lower-cased; unique among the live users of every brand \
             (`email_required`, `email_invalid`, `email_too_long`; 409 `email_taken`).",
        )
        .rule("must be an email address, like name@example.com"),
        Field::required(
            "display_name",
            FieldType::Text { max: MAX_NAME_LEN },
            "The name shown in the dashboard and as a listing's `seller.display_name` \
             (`display_name_required`, `display_name_invalid`, `display_name_too_long`).",
        )
        .labelled("Name"),
        Field::optional("role", FieldType::Choice(ROLES), "`admin` or `member` (default) (`role_invalid`)."),
    ],
    example: r#"{"email": "sam@acme.example", "display_name": "Sam Stock", "role": "member"}"#,
};
crate::documented_body!(MemberInvite, INVITE_BODY);

/// The body of `PATCH /v1/partner/settings/team/{user_id}`, which [`RoleChange::parse`] reads.
pub static ROLE_BODY: BodySpec = BodySpec {
    name: "MemberRoleInput",
    doc: "The body of `PATCH /v1/partner/settings/team/{user_id}`: the member's new role.",
    fields: &[Field::required(
        "role",
        FieldType::Choice(ROLES),
        "`admin` or `member` (`role_required`, `role_invalid`; 409 `last_admin` when the brand would be left \
         without an active admin).",
    )],
    example: r#"{"role": "admin"}"#,
};
crate::documented_body!(RoleChange, ROLE_BODY);

/// An invitation, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberInvite {
    /// Normalised by [`normalise_email`].
    pub email: String,
    pub display_name: String,
    pub role: Role,
}

impl MemberInvite {
    pub fn parse(body: &Map<String, Value>) -> Result<Self, Vec<FieldError>> {
        let mut r = BodyReader::of(body, &INVITE_BODY);
        let email = match r.text("email", MAX_EMAIL_LEN) {
            Some(text) => match normalise_email(&text) {
                Some(email) => Some(email),
                None => r.fail("email", "invalid"),
            },
            None => None,
        };
        let email = r.require("email", email);
        let display_name = r.text("display_name", MAX_NAME_LEN);
        let display_name = r.require("display_name", display_name);
        let role = match r.raw("role") {
            None | Some(Value::Null) => Some(Role::Member),
            Some(value) => role(&mut r, value),
        };
        let parsed = match (email, display_name, role) {
            (Some(email), Some(display_name), Some(role)) => Some(Self { email, display_name, role }),
            _ => None,
        };
        // Every reason has been recorded when a field is missing, so `finish` reports them.
        match r.finish(parsed) {
            Ok(Some(invite)) => Ok(invite),
            Ok(None) => Err(worded(vec![FieldError::of("email", "invalid")])),
            Err(errors) => Err(worded(errors)),
        }
    }
}

/// A role change, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoleChange {
    pub role: Role,
}

impl RoleChange {
    pub fn parse(body: &Map<String, Value>) -> Result<Self, Vec<FieldError>> {
        let mut r = BodyReader::of(body, &ROLE_BODY);
        let role = match r.raw("role") {
            None | Some(Value::Null) => r.fail("role", "required"),
            Some(value) => role(&mut r, value),
        };
        match r.finish(role) {
            Ok(Some(role)) => Ok(Self { role }),
            Ok(None) => Err(worded(vec![FieldError::of("role", "required")])),
            Err(errors) => Err(worded(errors)),
        }
    }
}

/// The sentences of the team's reasons, said of a person; the codes are unchanged, other
/// reasons keep their general sentence.
pub fn worded(errors: Vec<FieldError>) -> Vec<FieldError> {
    errors
        .into_iter()
        .map(|e| {
            let message = match e.code.as_str() {
                "email_required" => "Enter their email address, like name@example.com.".to_owned(),
                "email_invalid" => "Enter an email address like name@example.com.".to_owned(),
                "email_too_long" => format!("Shorten the email address to at most {MAX_EMAIL_LEN} characters."),
                "display_name_required" => format!("Give their name, up to {MAX_NAME_LEN} characters."),
                "display_name_invalid" => {
                    format!("Give their name as one line of text, up to {MAX_NAME_LEN} characters.")
                }
                "display_name_too_long" => format!("Shorten the name to at most {MAX_NAME_LEN} characters."),
                "role_required" | "role_invalid" => "Choose a role: admin or member.".to_owned(),
                _ => return e,
            };
            FieldError { message, ..e }
        })
        .collect()
}

fn role(r: &mut BodyReader<'_>, value: &Value) -> Option<Role> {
    match value.as_str().map(|s| s.trim().parse::<Role>()) {
        Some(Ok(role)) => Some(role),
        _ => r.fail("role", "invalid"),
    }
}

/// An email address as stored and compared: trimmed and lower-cased; `None` when it is not a
/// well-formed address of at most 254 characters.
pub fn normalise_email(text: &str) -> Option<String> {
    let email = text.trim().to_lowercase();
    (email.chars().count() <= MAX_EMAIL_LEN && email_address::EmailAddress::is_valid(&email)).then_some(email)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::reader::object;

    fn codes(result: Result<impl Sized, Vec<FieldError>>) -> Vec<String> {
        result.err().unwrap_or_default().into_iter().map(|e| e.code).collect()
    }

    #[test]
    fn an_invitation_normalises_the_email_and_defaults_to_member() {
        let invite =
            MemberInvite::parse(&object(json!({"email": "  Sam@Acme.Example ", "display_name": " Sam "}))).unwrap();
        assert_eq!(
            invite,
            MemberInvite { email: "sam@acme.example".into(), display_name: "Sam".into(), role: Role::Member }
        );
        let admin = MemberInvite::parse(&object(json!({"email": "a@b.example", "display_name": "A", "role": "admin"})));
        assert_eq!(admin.map(|i| i.role), Ok(Role::Admin));
    }

    #[test]
    fn every_bad_invitation_field_is_reported() {
        assert_eq!(codes(MemberInvite::parse(&object(json!({})))), ["email_required", "display_name_required"]);
        let bad = json!({"email": "not-an-email", "display_name": "x".repeat(121), "role": "owner", "extra": 1});
        assert_eq!(
            codes(MemberInvite::parse(&object(bad))),
            ["email_invalid", "display_name_too_long", "role_invalid", "extra_unknown"]
        );
        let types = json!({"email": 5, "display_name": ["A"], "role": 1});
        assert_eq!(
            codes(MemberInvite::parse(&object(types))),
            ["email_invalid", "display_name_invalid", "role_invalid"]
        );
        let long = format!("{}@example.com", "a".repeat(250));
        assert_eq!(
            codes(MemberInvite::parse(&object(json!({"email": long, "display_name": "A"})))),
            ["email_too_long"]
        );
    }

    #[test]
    fn a_role_change_needs_a_known_role() {
        assert_eq!(RoleChange::parse(&object(json!({"role": "admin"}))).map(|c| c.role), Ok(Role::Admin));
        assert_eq!(codes(RoleChange::parse(&object(json!({})))), ["role_required"]);
        assert_eq!(codes(RoleChange::parse(&object(json!({"role": null})))), ["role_required"]);
        assert_eq!(codes(RoleChange::parse(&object(json!({"role": "boss", "x": 1})))), ["role_invalid", "x_unknown"]);
    }

    #[test]
    fn emails_are_trimmed_lower_cased_and_checked() {
        assert_eq!(normalise_email(" Ada@Example.COM ").as_deref(), Some("ada@example.com"));
        assert_eq!(normalise_email("ada"), None);
        assert_eq!(normalise_email("ada@"), None);
        assert_eq!(normalise_email(""), None);
    }

    #[test]
    fn the_reasons_are_said_of_a_person_with_their_limits() {
        let errors = MemberInvite::parse(&object(json!({"email": "nope", "role": "boss"}))).unwrap_err();
        let said: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
        assert_eq!(
            said,
            [
                "Enter an email address like name@example.com.",
                "Give their name, up to 120 characters.",
                "Choose a role: admin or member."
            ]
        );
        assert_eq!(errors[0].code, "email_invalid", "the code is unchanged");
    }

    #[test]
    fn the_documented_fields_are_the_accepted_ones() {
        assert_eq!(INVITE_BODY.names().collect::<Vec<_>>(), ["email", "display_name", "role"]);
        assert_eq!(ROLE_BODY.names().collect::<Vec<_>>(), ["role"]);
    }
}
