//! The last passes over the assembled document, on its JSON form: what utoipa's types cannot
//! say (header components and `$ref`s to them, the `webhooks` section) or says in a shape
//! generated clients handle badly (nullable enums). Each pass is one function; [`finish`]
//! runs them in order (the `webhooks` section is added after them, with [`components`]).

use serde_json::{json, Map, Value};

use super::answers::{OPERATOR_SCHEME, PARTNER_SCHEME};
use super::enums;
use crate::http::files::OCTET_STREAM;

/// The rate-limit headers every `/v1` answer carries (decisions 2.3), as components.
const RATE_LIMIT_HEADERS: [(&str, &str); 3] = [
    ("X-RateLimit-Limit", "Requests allowed per minute for this key (or, without a valid key, this client address)."),
    ("X-RateLimit-Remaining", "Requests left in the current 60-second window."),
    ("X-RateLimit-Reset", "Unix time (seconds) at which the whole quota is available again."),
];

const METHODS: [&str; 8] = ["get", "put", "post", "delete", "patch", "head", "options", "trace"];

pub fn finish(doc: &mut Value) {
    servers(doc);
    file_answers(doc);
    header_components(doc);
    outage_answers(doc);
    rate_limit_headers(doc);
    descriptions(doc);
    shared_enums(doc);
    nullable_enums(doc);
}

/// One server, relative to where the document was fetched from: every path already starts
/// with `/v1` or `/ops/v1`, and the same binary runs under any public URL.
fn servers(doc: &mut Value) {
    doc["servers"] = json!([{ "url": "/", "description": "This server (the origin the document was fetched from)" }]);
}

/// Answers that are files (a PDF, a workbook, a CSV) are strings of their media type, the
/// binary ones `format: binary`, so generators hand back bytes rather than a JSON value. A
/// binary answer is declared as `application/octet-stream` too (the same schema; the server
/// answers it to an `Accept` that prefers it, `http::files`): generators read bytes for that
/// type and not for `application/pdf` (openapi-python-client yields a `File` only for it).
fn file_answers(doc: &mut Value) {
    for_each_operation(doc, |_, _, operation| {
        let Some(responses) = operation.get_mut("responses").and_then(Value::as_object_mut) else { return };
        for response in responses.values_mut() {
            let Some(content) = response.get_mut("content").and_then(Value::as_object_mut) else { continue };
            let mut binary = None;
            for (media_type, body) in content.iter_mut() {
                if media_type.contains("json") {
                    continue;
                }
                if body.pointer("/schema/$ref").is_none() {
                    body["schema"] = if media_type.starts_with("text/") {
                        json!({"type": "string", "contentMediaType": media_type})
                    } else {
                        json!({"type": "string", "format": "binary", "contentMediaType": media_type})
                    };
                }
                if !media_type.starts_with("text/") {
                    binary.get_or_insert_with(|| body.clone());
                }
            }
            if let Some(body) = binary {
                content.entry(OCTET_STREAM).or_insert(body);
            }
        }
    });
}

fn header_components(doc: &mut Value) {
    let headers = components(doc, "headers");
    for (name, text) in RATE_LIMIT_HEADERS {
        headers.insert(
            name.to_owned(),
            json!({"description": text, "schema": {"type": "integer", "format": "int64", "minimum": 0}}),
        );
    }
    headers.insert(
        "Retry-After".to_owned(),
        json!({
            "description": "Whole seconds (at least 1) until a retry may pass.",
            "schema": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 86400}
        }),
    );
}

/// The server's own failures, possible on any operation: 500 `internal_error` everywhere,
/// 503 (busy or database unreachable) everywhere, 507 on writes (storage full).
fn outage_answers(doc: &mut Value) {
    for_each_operation(doc, |_, method, operation| {
        let responses = object(operation, "responses");
        let error = |text: &str| {
            json!({
                "description": text,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
            })
        };
        responses.entry("500").or_insert_with(|| {
            error("`internal_error`: a failure of the server; the message never carries internals. Retry later, quoting `X-Request-Id`")
        });
        let mut busy = error(
            "`server_busy`: at the server's connection or work limit (`Retry-After: 1`); `database_unavailable`: the \
database cannot be reached (`Retry-After: 5`). Nothing was written; retry after `Retry-After` seconds",
        );
        busy["headers"] = json!({"Retry-After": {"$ref": "#/components/headers/Retry-After"}});
        responses.entry("503").or_insert(busy);
        if method != "get" {
            let mut full = error(
                "`insufficient_storage`: the server's storage is full; nothing was written, and writes succeed \
again once space is freed (`Retry-After: 5`)",
            );
            full["headers"] = json!({"Retry-After": {"$ref": "#/components/headers/Retry-After"}});
            responses.entry("507").or_insert(full);
        }
    });
}

/// The rate-limit headers on every answer of every partner (`/v1`) operation; `Retry-After`
/// on its 429.
fn rate_limit_headers(doc: &mut Value) {
    for_each_operation(doc, |path, _, operation| {
        if !path.starts_with("/v1/") || scheme(operation) != Some(PARTNER_SCHEME) {
            return;
        }
        for (status, response) in object(operation, "responses").iter_mut() {
            let headers = object(response, "headers");
            for (name, _) in RATE_LIMIT_HEADERS {
                headers.insert(name.to_owned(), json!({"$ref": format!("#/components/headers/{name}")}));
            }
            if status == "429" {
                headers.insert("Retry-After".to_owned(), json!({"$ref": "#/components/headers/Retry-After"}));
            }
        }
    });
}

/// utoipa takes a handler's first doc paragraph as the operation's `summary` and leaves the
/// `description` out: the summary becomes the paragraph's first sentence, the description
/// the whole paragraph.
fn descriptions(doc: &mut Value) {
    for_each_operation(doc, |_, _, operation| {
        let Some(summary) = operation.get("summary").and_then(Value::as_str).map(unwrap_lines) else { return };
        if operation.get("description").and_then(Value::as_str).is_none_or(str::is_empty) {
            operation["description"] = Value::from(summary.clone());
        }
        operation["summary"] = Value::from(first_sentence(&summary));
    });
}

/// The lines of a doc comment as one line.
fn unwrap_lines(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Up to the first full stop followed by a space (outside backquotes), without the stop.
fn first_sentence(text: &str) -> String {
    let mut in_code = false;
    let chars: Vec<char> = text.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        match c {
            '`' => in_code = !in_code,
            '.' if !in_code && chars.get(i + 1).is_none_or(|next| *next == ' ') => {
                return chars[..i].iter().collect();
            }
            _ => {}
        }
    }
    text.trim_end_matches('.').to_owned()
}

/// Every enum of a concept is its one component ([`enums`]): the shared components are
/// added; an inline enum anywhere (a body's property, a query parameter) with the same values
/// as one becomes a `$ref` to it (`anyOf` it or `null` when nullable), keeping its
/// description; a component that is just those values (as a hoisted `BulkMode` would be) is
/// replaced by it.
fn shared_enums(doc: &mut Value) {
    let shared = enums::shared();
    let named = |values: &[Value]| -> Option<&'static str> {
        let mut values: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
        values.sort_unstable();
        shared.iter().find_map(|(name, wanted)| {
            let mut wanted = wanted.clone();
            wanted.sort_unstable();
            (wanted == values).then_some(*name)
        })
    };
    let schemas = components(doc, "schemas");
    for (name, schema) in enums::components() {
        schemas.insert(name.to_owned(), serde_json::to_value(schema).unwrap_or_default());
    }
    let mut aliases = Vec::new();
    schemas.retain(|name, schema| {
        let alias = (schema.get("type") == Some(&json!("string")))
            .then(|| schema.get("enum").and_then(Value::as_array).and_then(|values| named(values)))
            .flatten()
            .filter(|shared| shared != name);
        if let Some(shared) = alias {
            aliases.push((format!("#/components/schemas/{name}"), format!("#/components/schemas/{shared}")));
        }
        alias.is_none()
    });
    let skip: Vec<&str> = shared.iter().map(|(name, _)| *name).collect();
    for (name, schema) in components(doc, "schemas").iter_mut() {
        if !skip.contains(&name.as_str()) {
            point_at_shared(schema, &named, &aliases);
        }
    }
    if let Some(paths) = doc.get_mut("paths") {
        point_at_shared(paths, &named, &aliases);
    }
}

/// [`shared_enums`]'s walk over one part of the document.
fn point_at_shared(value: &mut Value, named: &dyn Fn(&[Value]) -> Option<&'static str>, aliases: &[(String, String)]) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get_mut("$ref") {
                if let Some((_, to)) = aliases.iter().find(|(from, _)| from == reference) {
                    *reference = to.clone();
                }
            }
            let string_type = |t: &Value| t == "string" || t.as_array().is_some_and(|a| a.contains(&json!("string")));
            let found = map.get("enum").and_then(Value::as_array).filter(|_| map.get("type").is_some_and(string_type));
            if let Some(name) = found.and_then(|values| named(values)) {
                let nullable = map.get("enum").and_then(Value::as_array).is_some_and(|v| v.contains(&Value::Null));
                let reference = json!({"$ref": format!("#/components/schemas/{name}")});
                let mut replaced = Map::new();
                if let Some(description) = map.get("description") {
                    replaced.insert("description".to_owned(), description.clone());
                }
                if nullable {
                    replaced.insert("anyOf".to_owned(), json!([reference, {"type": "null"}]));
                } else {
                    replaced.insert("$ref".to_owned(), reference["$ref"].clone());
                }
                *map = replaced;
                return;
            }
            for child in map.values_mut() {
                point_at_shared(child, named, aliases);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| point_at_shared(item, named, aliases)),
        _ => {}
    }
}

/// A property `{"type": ["string", "null"], "enum": [..., null]}` makes generators emit one
/// enum class per use (and some a third for the null): it becomes
/// `{"anyOf": [{"$ref": <named enum>}, {"type": "null"}]}`, the named enum a component
/// (`ListingBody.channel` → `ListingChannel`; identical uses share it).
fn nullable_enums(doc: &mut Value) {
    let Some(schemas) = doc.pointer_mut("/components/schemas").and_then(Value::as_object_mut) else { return };
    let mut hoisted: Vec<(String, Value)> = Vec::new();
    for (schema_name, schema) in schemas.iter_mut() {
        let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) else { continue };
        for (property, value) in properties.iter_mut() {
            let Some(values) = nullable_enum(value) else { continue };
            let enum_schema = json!({"type": "string", "enum": values});
            let base = format!("{}{}", stem(schema_name), camel(property));
            let name = match hoisted.iter().find(|(name, schema)| name == &base || *schema == enum_schema) {
                Some((name, schema)) if *schema == enum_schema => name.clone(),
                Some(_) => format!("{schema_name}{}", camel(property)),
                None => base,
            };
            if !hoisted.iter().any(|(n, _)| *n == name) {
                hoisted.push((name.clone(), enum_schema));
            }
            let mut replaced = Map::new();
            if let Some(description) = value.get("description") {
                replaced.insert("description".to_owned(), description.clone());
            }
            replaced.insert(
                "anyOf".to_owned(),
                json!([{"$ref": format!("#/components/schemas/{name}")}, {"type": "null"}]),
            );
            *value = Value::Object(replaced);
        }
    }
    for (name, schema) in hoisted {
        schemas.entry(name).or_insert(schema);
    }
}

/// The non-null values of a nullable string enum.
fn nullable_enum(schema: &Value) -> Option<Vec<Value>> {
    let types = schema.get("type")?.as_array()?;
    let values = schema.get("enum")?.as_array()?;
    if !types.contains(&json!("null")) || !types.contains(&json!("string")) {
        return None;
    }
    Some(values.iter().filter(|v| !v.is_null()).cloned().collect())
}

/// A body schema's name without its role: `ListingBody` → `Listing`.
fn stem(name: &str) -> &str {
    ["Body", "Patch", "Input"].iter().find_map(|suffix| name.strip_suffix(suffix)).unwrap_or(name)
}

/// `credit_destination` → `CreditDestination`.
fn camel(name: &str) -> String {
    name.split('_')
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
        })
        .collect()
}

/// The security scheme an operation names (JSON form).
fn scheme(operation: &Value) -> Option<&'static str> {
    let requirements = operation.get("security")?.as_array()?;
    [PARTNER_SCHEME, OPERATOR_SCHEME].into_iter().find(|wanted| requirements.iter().any(|r| r.get(*wanted).is_some()))
}

fn for_each_operation(doc: &mut Value, mut f: impl FnMut(&str, &str, &mut Value)) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else { return };
    for (path, item) in paths.iter_mut() {
        for method in METHODS {
            if let Some(operation) = item.get_mut(method).filter(|o| o.is_object()) {
                f(path, method, operation);
            }
        }
    }
}

/// `value[key]` as an object, made one if absent.
fn object<'a>(value: &'a mut Value, key: &str) -> &'a mut Map<String, Value> {
    if !value.get(key).is_some_and(Value::is_object) {
        value[key] = json!({});
    }
    match value.get_mut(key) {
        Some(Value::Object(map)) => map,
        _ => unreachable!("just made an object"),
    }
}

/// `doc.components[kind]`, made if absent.
pub(super) fn components<'a>(doc: &'a mut Value, kind: &str) -> &'a mut Map<String, Value> {
    object(object_value(doc, "components"), kind)
}

fn object_value<'a>(value: &'a mut Value, key: &str) -> &'a mut Value {
    if !value.get(key).is_some_and(Value::is_object) {
        value[key] = json!({});
    }
    &mut value[key]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_is_the_first_sentence_and_the_description_the_paragraph() {
        assert_eq!(first_sentence("Creates a listing. Then more."), "Creates a listing");
        assert_eq!(first_sentence("Reads `a.b` of it. More"), "Reads `a.b` of it");
        assert_eq!(first_sentence("One sentence."), "One sentence");
        assert_eq!(first_sentence("Version 1.0 is out"), "Version 1.0 is out");
        assert_eq!(unwrap_lines("a\nb  c"), "a b c");
    }

    #[test]
    fn nullable_enums_become_a_named_enum_or_null() {
        let mut doc = json!({"components": {"schemas": {
            "ListingBody": {"properties": {"channel": {"type": ["string", "null"], "enum": ["a", "b", null], "description": "d"}}},
            "ListingPatch": {"properties": {"channel": {"type": ["string", "null"], "enum": ["a", "b", null]}}},
        }}});
        nullable_enums(&mut doc);
        let body = &doc["components"]["schemas"]["ListingBody"]["properties"]["channel"];
        assert_eq!(body["anyOf"][0]["$ref"], "#/components/schemas/ListingChannel");
        assert_eq!(body["anyOf"][1], json!({"type": "null"}));
        assert_eq!(body["description"], "d");
        let patch = &doc["components"]["schemas"]["ListingPatch"]["properties"]["channel"];
        assert_eq!(patch["anyOf"][0]["$ref"], "#/components/schemas/ListingChannel");
        assert_eq!(doc["components"]["schemas"]["ListingChannel"], json!({"type": "string", "enum": ["a", "b"]}));
        assert_eq!(camel("credit_destination"), "CreditDestination");
    }
}
