//! `get`, `post`, `patch`, `put` and `delete` as axum's, each handler wrapped so that its
//! answers count under its route template ([`metrics::Counted`]). Every router of the public
//! listener takes them from here (clippy.toml disallows axum's own); a second method on a
//! path is `get(a).merge(post(b))`.
#![allow(clippy::disallowed_methods)]

use axum::handler::Handler;
use axum::routing::MethodRouter;

use super::metrics::Counted;
use crate::state::AppState;

macro_rules! counted_methods {
    ($($method:ident),*) => {$(
        pub fn $method<H, T>(handler: H) -> MethodRouter<AppState>
        where
            H: Handler<T, AppState>,
            T: 'static,
        {
            axum::routing::$method(Counted::new(handler))
        }
    )*};
}

counted_methods!(get, post, patch, put, delete);
