//! What the assembled document says once for many operations: the answers every secured
//! operation shares (401, 403, 429), a curl example per operation, and the order of the tags
//! (partner API first, operator API last).

use serde_json::{json, Value};
use utoipa::openapi::extensions::ExtensionsBuilder;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::{Operation, ParameterBuilder, ParameterIn, PathItem};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::{Content, OpenApi, Ref, RefOr, Required, Response};
use utoipa::Modify;

/// The security scheme of the partner API (API keys).
pub const PARTNER_SCHEME: &str = "bearer";
/// The security scheme of the operator API (`REHOME_OPS_TOKEN`).
pub const OPERATOR_SCHEME: &str = "ops";

/// The generic 403 code, as the rows of the handlers write it (`forbidden`, then a colon),
/// as opposed to operation-specific codes such as `forbidden_not_owner`.
const GENERIC_FORBIDDEN: &str = "`forbidden`:";

/// Adds the answers shared by every secured operation. Runs after the parts are merged, and
/// replaces rows a handler may still declare, so the result is the same whether it does.
pub struct SharedAnswers;

impl Modify for SharedAnswers {
    fn modify(&self, openapi: &mut OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            for (method, operation) in operations(item) {
                match scheme(operation) {
                    Some(PARTNER_SCHEME) => add_partner_answers(operation, method),
                    Some(OPERATOR_SCHEME) => set(
                        operation,
                        "401",
                        error_response(
                            "`missing_bearer_token` or `invalid_token`: send the operator token as \
`Authorization: Bearer <REHOME_OPS_TOKEN>`",
                        ),
                    ),
                    _ => {}
                }
            }
        }
    }
}

fn add_partner_answers(operation: &mut Operation, method: &str) {
    set(
        operation,
        "401",
        error_response(
            "`missing_bearer_token`: no `Authorization: Bearer <API_KEY>` header; `invalid_token`: the key is \
malformed, unknown, revoked or expired",
        ),
    );
    let scope = if method == "get" { "read" } else { "write" };
    let generic = format!("`forbidden`: the key's user is not a partner admin, or the key lacks the `{scope}` scope");
    let specific = operation.responses.responses.get("403").and_then(|existing| match existing {
        RefOr::T(response) => operation_specific(&response.description),
        RefOr::Ref(_) => None,
    });
    let forbidden = match specific {
        Some(specific) => format!("{specific}; {generic}"),
        None => generic,
    };
    set(operation, "403", error_response(&forbidden));
    let mut limited = error_response(
        "`rate_limited`: the key (or, without a valid key, the client address) spent its requests per \
minute; retry after `Retry-After` seconds",
    );
    let integer = || ObjectBuilder::new().schema_type(Type::Integer).build();
    for (name, text) in [
        ("Retry-After", "Whole seconds (at least 1) until one more request will pass"),
        ("X-RateLimit-Limit", "Requests allowed per minute (on every `/v1` response)"),
        ("X-RateLimit-Remaining", "Requests left in the current 60-second window"),
        ("X-RateLimit-Reset", "Unix time (seconds) at which the whole quota is available again"),
    ] {
        limited.headers.insert(name.to_owned(), HeaderBuilder::new().schema(integer()).description(Some(text)).build());
    }
    set(operation, "429", limited);
    if method != "get" {
        add_idempotency(operation);
    }
}

/// Every partner write takes an `Idempotency-Key` (decisions 11.1): the header, the answers
/// it adds (merged into the operation's own 400 and 409 rows) and the replay header on 2xx.
fn add_idempotency(operation: &mut Operation) {
    let parameter = ParameterBuilder::new()
        .name("Idempotency-Key")
        .parameter_in(ParameterIn::Header)
        .required(Required::False)
        .description(Some(
            "1 to 255 visible ASCII characters, unique per operation you mean to make once. A repeat with \
the same key, method, path and body within 24 hours answers the first 2xx answer again (with \
`Idempotent-Replayed: true`) and changes nothing. Scoped to the API key; only 2xx answers are kept.",
        ))
        .schema(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(255))
                .pattern(Some("^[\\x21-\\x7e]+$")),
        ))
        .build();
    operation.parameters.get_or_insert_with(Vec::new).push(parameter);
    for (status, text) in [
        ("400", "`idempotency_key_invalid`: the `Idempotency-Key` header is not 1 to 255 visible ASCII characters"),
        ("409", "`idempotency_key_in_use`: a request with this `Idempotency-Key` is still running"),
        ("422", "`idempotency_key_reused`: this `Idempotency-Key` was used with another method, path or body"),
    ] {
        let merged = match operation.responses.responses.get(status) {
            Some(RefOr::T(existing)) => format!("{}; {text}", existing.description),
            _ => text.to_owned(),
        };
        set(operation, status, error_response(&merged));
    }
    let replayed = HeaderBuilder::new()
        .schema(ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["true"])))
        .description(Some("`true` when this answer is the kept answer of an earlier request with the same key"))
        .build();
    for (status, response) in operation.responses.responses.iter_mut() {
        if let (true, RefOr::T(response)) = (status.starts_with('2'), response) {
            response.headers.insert("Idempotent-Replayed".to_owned(), replayed.clone());
        }
    }
}

/// The part of a 403 text that names operation-specific codes, without the generic
/// `forbidden` clause a handler may still carry; `None` when nothing specific is left.
fn operation_specific(description: &str) -> Option<String> {
    let kept = match description.find(GENERIC_FORBIDDEN) {
        Some(at) => &description[..at],
        None => description,
    };
    let kept = kept.trim().trim_end_matches([';', ',']).trim();
    (!kept.is_empty()).then(|| kept.to_owned())
}

fn error_response(description: &str) -> Response {
    let mut response = Response::new(description);
    let content = Content::new(Some(Ref::from_schema_name("ErrorBody")));
    response.content.insert("application/json".to_owned(), content);
    response
}

fn set(operation: &mut Operation, status: &str, response: Response) {
    operation.responses.responses.insert(status.to_owned(), RefOr::T(response));
}

/// The operations of a path, with their lower-case method.
fn operations(item: &mut PathItem) -> impl Iterator<Item = (&'static str, &mut Operation)> {
    [
        ("get", item.get.as_mut()),
        ("put", item.put.as_mut()),
        ("post", item.post.as_mut()),
        ("delete", item.delete.as_mut()),
        ("patch", item.patch.as_mut()),
        ("head", item.head.as_mut()),
        ("options", item.options.as_mut()),
        ("trace", item.trace.as_mut()),
    ]
    .into_iter()
    .filter_map(|(method, operation)| operation.map(|operation| (method, operation)))
}

/// The security scheme an operation requires, if any (each operation names one).
fn scheme(operation: &Operation) -> Option<&'static str> {
    let requirements = operation.security.as_ref()?;
    // The requirement's scheme names are private in utoipa: read them from its JSON form.
    let names = |requirement: &SecurityRequirement| match serde_json::to_value(requirement) {
        Ok(Value::Object(map)) => map.keys().cloned().collect::<Vec<_>>(),
        _ => Vec::new(),
    };
    let all: Vec<String> = requirements.iter().flat_map(names).collect();
    [PARTNER_SCHEME, OPERATOR_SCHEME].into_iter().find(|wanted| all.iter().any(|name| name == wanted))
}

/// Adds `x-codeSamples` (a curl command per operation, shown by Redoc beside the generated
/// payload sample), with the body from the request schema's example.
pub struct CodeSamples;

impl Modify for CodeSamples {
    fn modify(&self, openapi: &mut OpenApi) {
        let schemas: Value = openapi
            .components
            .as_ref()
            .and_then(|components| serde_json::to_value(&components.schemas).ok())
            .unwrap_or(Value::Null);
        for (path, item) in openapi.paths.paths.iter_mut() {
            for (method, operation) in operations(item) {
                let sample = curl(method, path, operation, &schemas);
                let samples = json!([{ "lang": "Shell", "label": "curl", "source": sample }]);
                let extensions = ExtensionsBuilder::new().add("x-codeSamples", samples).build();
                match operation.extensions.as_mut() {
                    Some(existing) => existing.merge(extensions),
                    None => operation.extensions = Some(extensions),
                }
            }
        }
    }
}

fn curl(method: &str, path: &str, operation: &Operation, schemas: &Value) -> String {
    // Path parameters become shell variables: `{event_id}` → `$EVENT_ID`.
    let url: String = path
        .split('/')
        .map(|part| match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            Some(name) => format!("${}", name.to_uppercase()),
            None => part.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("/");
    let token = match scheme(operation) {
        Some(OPERATOR_SCHEME) => "$REHOME_OPS_TOKEN",
        _ => "$REHOME_API_KEY",
    };
    let mut command =
        format!("curl -X {} \"$REHOME_URL{url}\" \\\n  -H \"Authorization: Bearer {token}\"", method.to_uppercase());
    let json_body = operation.request_body.as_ref().and_then(|body| body.content.get("application/json"));
    if let Some(content) = json_body {
        let example = content
            .example
            .clone()
            .or_else(|| serde_json::to_value(&content.schema).ok().and_then(|schema| schema_example(&schema, schemas)))
            .unwrap_or_else(|| json!({}));
        let body = serde_json::to_string_pretty(&example).unwrap_or_else(|_| "{}".to_owned());
        // Single-quoted for the shell: a quote inside closes, escapes and reopens.
        let body = body.replace('\'', r"'\''");
        command.push_str(&format!(" \\\n  -H 'Content-Type: application/json' \\\n  -d '{body}'"));
    }
    command
}

/// The example of a schema (following a `$ref` to the components): its own, else an object
/// of its properties' examples.
fn schema_example(schema: &Value, schemas: &Value) -> Option<Value> {
    let schema = match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => schemas.get(reference.rsplit('/').next()?)?,
        None => schema,
    };
    let own = |s: &Value| s.get("example").cloned().or_else(|| s.pointer("/examples/0").cloned());
    if let Some(example) = own(schema) {
        return Some(example);
    }
    let properties = schema.get("properties")?.as_object()?;
    let object: serde_json::Map<String, Value> =
        properties.iter().filter_map(|(name, property)| Some((name.clone(), own(property)?))).collect();
    (!object.is_empty()).then_some(Value::Object(object))
}

/// Lists the partner API's tags first and the operator API's last, and groups them for the
/// page's table of contents (`x-tagGroups`).
pub struct TagOrder;

impl Modify for TagOrder {
    fn modify(&self, openapi: &mut OpenApi) {
        let mut operator_tags: Vec<String> = Vec::new();
        for item in openapi.paths.paths.values_mut() {
            for (_, operation) in operations(item) {
                if scheme(operation) == Some(OPERATOR_SCHEME) {
                    for tag in operation.tags.iter().flatten() {
                        if !operator_tags.contains(tag) {
                            operator_tags.push(tag.clone());
                        }
                    }
                }
            }
        }
        let Some(tags) = openapi.tags.as_mut() else { return };
        // A stable sort keeps the partner tags in the order their parts were merged.
        tags.sort_by_key(|tag| operator_tags.contains(&tag.name));
        let (operator, partner): (Vec<&str>, Vec<&str>) =
            tags.iter().map(|tag| tag.name.as_str()).partition(|name| operator_tags.iter().any(|t| t == name));
        let groups = json!([
            { "name": "Partner API", "tags": partner },
            { "name": "Operator API", "tags": operator },
        ]);
        let extensions = ExtensionsBuilder::new().add("x-tagGroups", groups).build();
        match openapi.extensions.as_mut() {
            Some(existing) => existing.merge(extensions),
            None => openapi.extensions = Some(extensions),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partner_writes_take_an_idempotency_key_and_reads_do_not() {
        let doc = serde_json::to_value(crate::http::docs::document()).unwrap();
        let create = &doc["paths"]["/v1/listings"]["post"];
        let names: Vec<&str> =
            create["parameters"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
        assert!(names.contains(&"Idempotency-Key"), "{names:?}");
        assert!(create["responses"]["422"]["description"].as_str().unwrap().contains("idempotency_key_reused"));
        assert!(create["responses"]["409"]["description"].as_str().unwrap().contains("idempotency_key_in_use"));
        assert!(create["responses"]["201"]["headers"]["Idempotent-Replayed"].is_object());
        let roll = &doc["paths"]["/v1/partner/settings/integrations/keys/{id}/roll"]["post"];
        let conflict = roll["responses"]["409"]["description"].as_str().unwrap();
        assert!(conflict.contains("key_inactive") && conflict.contains("idempotency_key_in_use"), "{conflict}");
        let list = &doc["paths"]["/v1/listings"]["get"];
        let read_params = list["parameters"].as_array().cloned().unwrap_or_default();
        assert!(read_params.iter().all(|p| p["name"] != "Idempotency-Key"));
        let ops = &doc["paths"]["/ops/v1/orders"]["post"];
        let ops_params = ops["parameters"].as_array().cloned().unwrap_or_default();
        assert!(ops_params.iter().all(|p| p["name"] != "Idempotency-Key"), "the operator API has none");
    }

    #[test]
    fn only_the_operation_specific_part_of_a_403_text_is_kept() {
        let both =
            "`forbidden_not_owner`: another user's listing; `forbidden`: not a partner admin, or no `write` scope";
        assert_eq!(operation_specific(both).as_deref(), Some("`forbidden_not_owner`: another user's listing"));
        assert_eq!(operation_specific("`forbidden_not_owner`: x").as_deref(), Some("`forbidden_not_owner`: x"));
        assert_eq!(operation_specific("`forbidden`: not a partner admin, or no `read` scope"), None);
    }

    #[test]
    fn curl_samples_name_path_parameters_as_shell_variables_and_quote_the_body() {
        let mut operation = Operation::new();
        operation.security = Some(vec![SecurityRequirement::new(PARTNER_SCHEME, Vec::<String>::new())]);
        let sample = curl("delete", "/v1/listings/{id}", &operation, &Value::Null);
        assert_eq!(
            sample,
            "curl -X DELETE \"$REHOME_URL/v1/listings/$ID\" \\\n  -H \"Authorization: Bearer $REHOME_API_KEY\""
        );

        let schemas = json!({"Note": {"examples": [{"text": "it's"}]}});
        let example = schema_example(&json!({"$ref": "#/components/schemas/Note"}), &schemas);
        assert_eq!(example, Some(json!({"text": "it's"})));
        let properties = json!({"properties": {"a": {"example": 1}, "b": {"type": "string"}}});
        assert_eq!(schema_example(&properties, &Value::Null), Some(json!({"a": 1})));
    }
}
