//! Reading the delivery-log query, and its documentation from the same table of choices.

use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::Required;
use utoipa::IntoParams;

use crate::domain::webhook::DeliveryStatus;
use crate::error::ApiError;
use crate::http::query::{Page, QueryParams};

/// The list query: `status` (a delivery status or `any`, default any), `page`, `per_page`.
pub struct DeliveryParams {
    pub status: Option<DeliveryStatus>,
    pub page: Page,
}

/// The `status` filter's choices: `any`, then every delivery status by its wire name.
fn status_choices() -> Vec<(&'static str, Option<DeliveryStatus>)> {
    std::iter::once(("any", None)).chain(DeliveryStatus::ALL.iter().map(|s| (s.as_str(), Some(*s)))).collect()
}

impl DeliveryParams {
    pub fn parse(pairs: &[(String, String)]) -> Result<Self, ApiError> {
        let mut query = QueryParams::new(pairs);
        let status = query.choice("status", None, &status_choices());
        let page = query.page();
        query.finish()?;
        Ok(Self { status, page })
    }
}

impl IntoParams for DeliveryParams {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let choices: Vec<&str> = status_choices().into_iter().map(|(name, _)| name).collect();
        let query = |name: &str, description: String, schema: ObjectBuilder| {
            ParameterBuilder::new()
                .name(name)
                .parameter_in(ParameterIn::Query)
                .required(Required::False)
                .description(Some(description))
                .schema(Some(schema))
                .build()
        };
        let integer = || ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(1.0));
        vec![
            query(
                "status",
                format!("{} (default `any`).", choices.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")),
                ObjectBuilder::new().schema_type(Type::String).enum_values(Some(choices)),
            ),
            query("page", "1-indexed page; default 1.".to_owned(), integer()),
            query("per_page", "1 to 100; default 20.".to_owned(), integer().maximum(Some(100.0))),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(query: &[(&str, &str)]) -> Vec<(String, String)> {
        query.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn every_status_and_any_are_accepted_and_documented() {
        for status in DeliveryStatus::ALL {
            let params = DeliveryParams::parse(&pairs(&[("status", status.as_str())])).ok().map(|p| p.status);
            assert_eq!(params, Some(Some(*status)));
        }
        assert!(DeliveryParams::parse(&pairs(&[("status", "any")])).is_ok_and(|p| p.status.is_none()));
        assert!(DeliveryParams::parse(&pairs(&[("status", "failed")])).is_err());
        let documented = serde_json::to_value(DeliveryParams::into_params(|| None)).unwrap();
        assert_eq!(documented[0]["schema"]["enum"], serde_json::json!(["any", "pending", "delivered", "dead"]));
    }
}
