//! The API's write operations, read from its OpenAPI document (which the handlers generate):
//! a key sent with a request that names none of them (a method the path does not take, an
//! unknown path) is left alone, so the router answers 405 or 404 as it would without a key,
//! and the key stays free for the request it was meant for.

use std::sync::LazyLock;

use axum::http::Method;

static WRITES: LazyLock<WriteRoutes> = LazyLock::new(|| WriteRoutes::of(&crate::http::docs::document()));

/// Every documented path template (split at '/') with its write methods (POST, PATCH, DELETE).
struct WriteRoutes(Vec<(Vec<String>, Vec<Method>)>);

impl WriteRoutes {
    fn of(document: &utoipa::openapi::OpenApi) -> Self {
        let mut routes = Vec::new();
        for (path, item) in &document.paths.paths {
            let segments: Vec<String> = path.split('/').map(str::to_owned).collect();
            let methods = [(Method::POST, &item.post), (Method::PATCH, &item.patch), (Method::DELETE, &item.delete)]
                .into_iter()
                .filter_map(|(method, operation)| operation.is_some().then_some(method))
                .collect();
            routes.push((segments, methods));
        }
        Self(routes)
    }

    /// The router picks the template whose literal segments match first (`/v1/listings/bulk-commit`
    /// is that route, not `/v1/listings/{id}`), then the method decides.
    fn allows(&self, method: &Method, path: &str) -> bool {
        let given: Vec<&str> = path.split('/').collect();
        let matching = self.0.iter().filter(|(template, _)| {
            template.len() == given.len()
                && template.iter().zip(&given).all(|(t, g)| t == g || (t.starts_with('{') && !g.is_empty()))
        });
        let literals = |template: &[String]| template.iter().map(|t| !t.starts_with('{')).collect::<Vec<bool>>();
        matching.max_by_key(|(template, _)| literals(template)).is_some_and(|(_, methods)| methods.contains(method))
    }
}

/// True when `method` on `path` (without its query) is a documented write operation.
pub fn is_write(method: &Method, path: &str) -> bool {
    WRITES.allows(method, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_documented_writes_take_keys() {
        assert!(is_write(&Method::POST, "/v1/listings"));
        assert!(is_write(&Method::PATCH, "/v1/listings/42"));
        assert!(is_write(&Method::DELETE, "/v1/listings/42"));
        assert!(!is_write(&Method::PATCH, "/v1/listings"), "no PATCH on the collection");
        assert!(!is_write(&Method::POST, "/v1/listings/42/extra"));
        assert!(!is_write(&Method::POST, "/v1/nope"));
        assert!(!is_write(&Method::PATCH, "/v1/listings/"), "an empty id is no id");
        assert!(is_write(&Method::POST, "/v1/listings/bulk-commit"));
        assert!(!is_write(&Method::DELETE, "/v1/listings/bulk-commit"), "the literal route, not {{id}}, takes it");
        assert!(!is_write(&Method::PATCH, "/v1/listings/bulk-validate"));
    }
}
