//! The dashboard's cookies: `rehome_session` (the session token), `rehome_csrf` (the
//! double-submit token of the forms shown before there is a session: sign-in, invitation)
//! and `rehome_notice` (what the last action did, shown once: `web::notice`).

use axum::http::header::{COOKIE, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue};

pub const SESSION: &str = "rehome_session";
pub const CSRF: &str = "rehome_csrf";
pub const NOTICE: &str = "rehome_notice";
/// The dashboard page asked for before signing in (percent-encoded), for 15 minutes.
pub const NEXT: &str = "rehome_next";
const NEXT_SECONDS: i64 = 900;
/// A notice not shown within a minute (the redirect was not followed) is dropped.
const NOTICE_SECONDS: i64 = 60;

/// The value of cookie `name` in the request's `Cookie` headers.
pub fn get<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim())
        .filter(|value| !value.is_empty())
}

/// `Set-Cookie` for `name=value`: `HttpOnly; SameSite=Lax`, `Secure` when the service is
/// reached over https; `max_age` in seconds (0 deletes it).
fn set(headers: &mut HeaderMap, name: &str, value: &str, path: &str, max_age: i64, secure: bool) {
    let secure = if secure { "; Secure" } else { "" };
    let cookie = format!("{name}={value}; HttpOnly; SameSite=Lax; Path={path}; Max-Age={max_age}{secure}");
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        headers.append(SET_COOKIE, value);
    }
}

/// The session cookie, for the session's longest life (7 days; the server ends it sooner
/// when idle). `Path=/`: the dashboard and its assets.
pub fn set_session(headers: &mut HeaderMap, token: &str, secure: bool) {
    set(headers, SESSION, token, "/", crate::domain::session::ABSOLUTE.num_seconds(), secure);
}

pub fn clear_session(headers: &mut HeaderMap, secure: bool) {
    set(headers, SESSION, "", "/", 0, secure);
}

/// The double-submit token of the forms before a session (for a day).
pub fn set_csrf(headers: &mut HeaderMap, token: &str, secure: bool) {
    set(headers, CSRF, token, "/dashboard", 86_400, secure);
}

/// Keeps `path` (a dashboard page) to return to once signed in. Not `Secure`: it is the
/// address of a page of this site, no secret (and the sign-in checks it again).
pub fn set_next(headers: &mut HeaderMap, path: &str) {
    let encoded: String = url::form_urlencoded::byte_serialize(path.as_bytes()).collect();
    set(headers, NEXT, &encoded, "/dashboard", NEXT_SECONDS, false);
}

pub fn clear_next(headers: &mut HeaderMap) {
    set(headers, NEXT, "", "/dashboard", 0, false);
}

/// A percent-encoded cookie value, decoded.
pub fn decode(value: &str) -> Option<String> {
    url::form_urlencoded::parse(value.as_bytes()).next().map(|(text, _)| text.into_owned())
}

/// The name of the notice the next page shows once.
pub fn set_notice(headers: &mut HeaderMap, name: &str, secure: bool) {
    set(headers, NOTICE, name, "/dashboard", NOTICE_SECONDS, secure);
}

/// Deletes the notice (a deletion needs no `Secure`: only its name and path must match).
pub fn clear_notice(headers: &mut HeaderMap) {
    set(headers, NOTICE, "", "/dashboard", 0, false);
}

/// A page to return to after signing in, if `next` may be one: a dashboard path of this
/// origin (never another site, `//host` or `/\\host`), not a sign-in or sign-out path.
pub fn safe_next(next: &str) -> Option<&str> {
    let dashboard = next == super::HOME || next.starts_with("/dashboard/") || next.starts_with("/dashboard?");
    let plain = next.len() <= 2048 && next.bytes().all(|b| b.is_ascii_graphic()) && !next.contains("//");
    let signing = ["/dashboard/login", "/dashboard/logout", "/dashboard/sign-out"].iter().any(|p| next.starts_with(p));
    (dashboard && plain && !next.contains('\\') && !signing).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(COOKIE, HeaderValue::from_static("a=1; rehome_session=tok; rehome_csrf="));
        assert_eq!(get(&headers, SESSION), Some("tok"));
        assert_eq!(get(&headers, CSRF), None, "empty is absent");
        assert_eq!(get(&headers, "b"), None);
    }

    #[test]
    fn the_page_to_return_to_reads_back_as_kept() {
        let mut headers = HeaderMap::new();
        set_next(&mut headers, "/dashboard/listings?status=active&q=oak sofa");
        let cookie = headers.get(SET_COOKIE).unwrap().to_str().unwrap();
        let value = cookie.strip_prefix("rehome_next=").unwrap().split(';').next().unwrap();
        assert!(!value.contains(['&', ' ', '/', '=', ';']), "{value}");
        assert_eq!(decode(value).as_deref(), Some("/dashboard/listings?status=active&q=oak sofa"));
    }

    #[test]
    fn the_session_cookie_is_http_only_lax_and_secure_behind_https() {
        let mut headers = HeaderMap::new();
        set_session(&mut headers, "tok", true);
        let cookie = headers.get(SET_COOKIE).unwrap().to_str().unwrap();
        assert_eq!(cookie, "rehome_session=tok; HttpOnly; SameSite=Lax; Path=/; Max-Age=604800; Secure");
        let mut headers = HeaderMap::new();
        set_session(&mut headers, "tok", false);
        assert!(!headers.get(SET_COOKIE).unwrap().to_str().unwrap().contains("Secure"));
    }

    #[test]
    fn only_dashboard_paths_of_this_origin_are_returned_to() {
        for ok in ["/dashboard", "/dashboard/listings?status=active&page=2", "/dashboard/listings/42/edit"] {
            assert_eq!(safe_next(ok), Some(ok));
        }
        for refused in [
            "https://evil.example/dashboard",
            "//evil.example/dashboard",
            "/dashboard//evil.example",
            "/\\evil.example",
            "/dashboard/\\evil",
            "/v1/listings",
            "/dashboardx",
            "/dashboard/login?next=/dashboard",
            "/dashboard/logout",
            "/dashboard/a b",
            "/dashboard/\u{e9}",
            "",
        ] {
            assert_eq!(safe_next(refused), None, "{refused}");
        }
        assert_eq!(safe_next(&format!("/dashboard/{}", "a".repeat(3000))), None);
    }
}
