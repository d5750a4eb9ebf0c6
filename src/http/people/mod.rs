//! People and access over the API (decisions 8.5–8.7): the team, API keys and the audit log.
//! Admin keys only, like every `/v1` endpoint: `read` for GET, `write` for changes.

pub mod audit;
pub mod keys;
pub mod team;

use axum::Router;

use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().merge(team::router()).merge(keys::router()).merge(audit::router())
}

/// A positive integer id from a path segment; `None` for anything else (the caller answers
/// its resource's 404).
fn path_id(segment: &str) -> Option<i64> {
    segment.parse::<i64>().ok().filter(|id| *id > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_positive_integers_are_ids() {
        assert_eq!(path_id("12"), Some(12));
        assert_eq!(path_id("0"), None);
        assert_eq!(path_id("-3"), None);
        assert_eq!(path_id("abc"), None);
        assert_eq!(path_id("99999999999999999999"), None);
    }
}
