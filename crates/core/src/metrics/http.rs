//! The request families' series (`rehome_http_requests_total`,
//! `rehome_http_request_duration_seconds`), resolved once per route and method rather than
//! looked up by their label values on every request.
//!
//! A label lookup hashes the values and takes the family's lock: about 450 instructions for
//! a request's counter and histogram, 3 % of a `/healthz` answer. A [`RouteSeries`] holds
//! the histogram of one (method, route) and its counters for the statuses a route answers,
//! each resolved at its first use; recording is an atomic add and an observation.

use std::sync::OnceLock;
use std::time::Duration;

use ::http::{Method, StatusCode};
use prometheus::{Histogram, HistogramVec, IntCounter, IntCounterVec};

/// The `method` label values, by [`method_index`].
pub const METHODS: [&str; 8] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"];

/// The method's place in [`METHODS`]: the standard ones by name, any other as `other` (a
/// client chooses the method, and each new label value would be a new series).
pub fn method_index(method: &Method) -> usize {
    match *method {
        Method::GET => 0,
        Method::HEAD => 1,
        Method::POST => 2,
        Method::PUT => 3,
        Method::PATCH => 4,
        Method::DELETE => 5,
        Method::OPTIONS => 6,
        _ => 7,
    }
}

/// The statuses whose counters a [`RouteSeries`] keeps at hand; any other is looked up.
const STATUSES: [u16; 18] = [200, 201, 202, 204, 304, 400, 401, 403, 404, 405, 409, 412, 413, 415, 422, 429, 500, 503];

fn status_slot(status: StatusCode) -> Option<usize> {
    STATUSES.iter().position(|&s| s == status.as_u16())
}

/// The request series of one method on one route (or on none: `unmatched`).
pub struct RouteSeries {
    method: &'static str,
    route: Box<str>,
    duration: Histogram,
    /// By [`STATUSES`], each made at the route's first answer with that status (a series
    /// appears once it has counted something, as with a label lookup).
    by_status: [OnceLock<IntCounter>; STATUSES.len()],
    /// The family, for the statuses outside [`STATUSES`].
    requests: IntCounterVec,
}

impl std::fmt::Debug for RouteSeries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouteSeries").field("method", &self.method).field("route", &self.route).finish_non_exhaustive()
    }
}

impl RouteSeries {
    pub(super) fn new(requests: &IntCounterVec, durations: &HistogramVec, method: usize, route: &str) -> Self {
        let method = METHODS[method.min(METHODS.len() - 1)];
        Self {
            method,
            route: route.into(),
            duration: durations.with_label_values(&[method, route]),
            by_status: Default::default(),
            requests: requests.clone(),
        }
    }

    /// One answer with `status`, `elapsed` after the request's head arrived.
    pub fn record(&self, status: StatusCode, elapsed: Duration) {
        self.duration.observe(elapsed.as_secs_f64());
        let labels = || [self.method, &*self.route, status.as_str()];
        match status_slot(status) {
            Some(slot) => self.by_status[slot].get_or_init(|| self.requests.with_label_values(&labels())).inc(),
            None => self.requests.with_label_values(&labels()).inc(),
        }
    }
}
