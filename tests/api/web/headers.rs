//! Every dashboard page: redirects without a session, security headers, CSRF on every form.

use super::{admin, Browser, PASSWORD};
use crate::helpers::spawn_app;

const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   frame-ancestors 'none'; form-action 'self'; base-uri 'none'";

#[tokio::test]
async fn pages_without_a_signed_in_session_redirect_303_to_the_sign_in_page() {
    let app = spawn_app().await;
    let mut browser = Browser::new(&app);
    for path in
        ["/dashboard", "/dashboard/", "/dashboard/account/two-step", "/dashboard/login/code", "/dashboard/no-such-page"]
    {
        let page = browser.get(path).await;
        assert_eq!(page.status, 303, "{path}");
        let to = page.location().unwrap_or_default();
        assert!(to == "/dashboard/login" || (path == "/dashboard/" && to == "/dashboard"), "{path} → {to}");
    }
    // Posting without a session changes nothing and leads to the sign-in page too.
    browser.post("/dashboard/account/password", &[("csrf", "x")]).await.assert_redirect("/dashboard/login");
    assert_eq!(browser.get("/dashboard/login").await.status, 200);
    assert_eq!(browser.get("/dashboard/invite/nothing-here").await.status, 410);
}

#[tokio::test]
async fn every_page_carries_the_security_headers_and_is_not_cached() {
    let app = spawn_app().await;
    let (_, email) = admin(&app, "acme").await;
    let mut guest = Browser::new(&app);
    let mut signed = Browser::signed_in(&app, &email).await;
    let pages = [
        guest.get("/dashboard/login").await,
        guest.get("/dashboard").await,
        guest.get("/dashboard/invite/unknown").await,
        signed.get("/dashboard").await,
        signed.get("/dashboard/account/two-step").await,
        signed.get("/dashboard/elsewhere").await,
    ];
    for page in &pages {
        let header = |name: &str| page.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        assert_eq!(header("content-security-policy"), CSP, "{page:?}");
        assert!(!header("content-security-policy").contains("unsafe-inline"));
        assert_eq!(header("referrer-policy"), "same-origin");
        assert_eq!(header("x-content-type-options"), "nosniff");
        assert_eq!(header("cache-control"), "no-store");
        // No inline style or script (scripts only by `src` from the dashboard's own assets),
        // nothing from another origin.
        assert!(!page.body.contains("style=") && !page.body.contains("<style"), "{}", page.body);
        let scripts = page.body.matches("<script").count();
        assert_eq!(scripts, page.body.matches("<script src=\"/dashboard/assets/").count(), "{}", page.body);
        assert!(!page.body.contains("src=\"http") && !page.body.contains("href=\"http"), "{}", page.body);
    }
    let css = guest.get("/dashboard/assets/dashboard.css").await;
    assert_eq!(css.status, 200);
    assert!(css.headers["content-type"].to_str().unwrap().starts_with("text/css"));
}

#[tokio::test]
async fn the_session_cookie_is_http_only_lax_with_path_root() {
    let app = spawn_app().await;
    let (_, email) = admin(&app, "acme").await;
    let mut browser = Browser::new(&app);
    let page = browser.sign_in(&email, PASSWORD).await;
    let cookie = page.headers["set-cookie"].to_str().unwrap();
    assert!(cookie.starts_with("rehome_session="), "{cookie}");
    for part in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(cookie.split("; ").any(|p| p == part), "{part} in {cookie}");
    }
    assert!(!cookie.contains("Secure"), "plain http: no Secure");
}

#[tokio::test]
async fn a_post_without_a_valid_csrf_token_is_refused_403_and_changes_nothing() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut browser = Browser::signed_in(&app, &email).await;
    let new = "another long password";
    let fields = |csrf: &'static str| {
        vec![("current_password", PASSWORD), ("new_password", new), ("confirm_password", new), ("csrf", csrf)]
    };
    // Missing, wrong, and another session's token.
    let mut other = Browser::signed_in(&app, &email).await;
    let others = other.get("/dashboard").await.csrf();
    assert_eq!(browser.post("/dashboard/account/password", &fields("")[..3]).await.status, 403);
    assert_eq!(browser.post("/dashboard/account/password", &fields("forged")).await.status, 403);
    let mut with_other = fields("");
    with_other[3] = ("csrf", &others);
    assert_eq!(browser.post("/dashboard/account/password", &with_other).await.status, 403);
    let refused = browser.post("/dashboard/account/require-two-step", &[("require_two_step", "on")]).await;
    assert_eq!(refused.status, 403);
    assert!(refused.body.contains("Forbidden"));
    // Nothing changed: the old password still signs in, both sessions live, no requirement.
    Browser::signed_in(&app, &email).await;
    assert_eq!(other.get("/dashboard").await.status, 200);
    assert_eq!(browser.get("/dashboard").await.status, 200);
    assert!(!browser.get("/dashboard").await.body.contains(" checked"));
    let actions = super::audit_actions(&app, partner.brand_id).await;
    assert_eq!(actions.iter().filter(|a| *a == "password.changed").count(), 1, "the operator's only: {actions:?}");
    // Sign-out needs the token as well.
    assert_eq!(browser.post("/dashboard/logout", &[]).await.status, 403);
    assert_eq!(browser.get("/dashboard").await.status, 200);

    // The sign-in form: its token must match the rehome_csrf cookie (double submit).
    let mut guest = Browser::new(&app);
    guest.get("/dashboard/login").await;
    let page = guest.post("/dashboard/login", &[("email", &email), ("password", PASSWORD), ("csrf", "nope")]).await;
    assert_eq!(page.status, 403);
    assert!(guest.session().is_none());
    guest.cookies.remove("rehome_csrf");
    let csrf = guest.get("/dashboard/login").await.csrf();
    guest.cookies.remove("rehome_csrf");
    let page = guest.post("/dashboard/login", &[("email", &email), ("password", PASSWORD), ("csrf", &csrf)]).await;
    assert_eq!(page.status, 403, "a token without its cookie");
    assert!(guest.session().is_none());
}

#[tokio::test]
async fn dashboard_pages_do_not_count_against_the_api_limit() {
    let app = crate::helpers::spawn_app_with(|c| c.rate_limit = 3).await;
    let mut browser = Browser::new(&app);
    for _ in 0..10 {
        assert_eq!(browser.get("/dashboard/login").await.status, 200);
    }
}

#[tokio::test]
async fn the_sign_in_form_takes_only_a_token_the_server_issued() {
    let app = spawn_app().await;
    let (_, email) = admin(&app, "acme").await;
    // A value the client chose, in both the cookie and the field: refused, whatever its shape.
    for forged in ["A".repeat(43), "x".to_owned(), "a".repeat(64)] {
        let mut guest = Browser::new(&app);
        guest.cookies.insert("rehome_csrf".into(), forged.clone());
        let page =
            guest.post("/dashboard/login", &[("email", &email), ("password", PASSWORD), ("csrf", &forged)]).await;
        assert_eq!(page.status, 403, "forged {forged}: {}", page.body);
        assert!(guest.session().is_none());
    }
    // An issued token altered by one character: refused too.
    let mut guest = Browser::new(&app);
    let issued = guest.get("/dashboard/login").await.csrf();
    let last = if issued.ends_with('A') { 'B' } else { 'A' };
    let altered = format!("{}{last}", &issued[..issued.len() - 1]);
    guest.cookies.insert("rehome_csrf".into(), altered.clone());
    let page = guest.post("/dashboard/login", &[("email", &email), ("password", PASSWORD), ("csrf", &altered)]).await;
    assert_eq!(page.status, 403);
    // The page reissues a good token in place of a bad cookie, and that one works.
    let csrf = guest.get("/dashboard/login").await.csrf();
    assert_ne!(csrf, altered);
    guest
        .post("/dashboard/login", &[("email", &email), ("password", PASSWORD), ("csrf", &csrf)])
        .await
        .assert_redirect("/dashboard");
}

#[tokio::test]
async fn a_form_posted_from_another_origin_is_refused() {
    let app = spawn_app().await;
    let (_, email) = admin(&app, "acme").await;
    let mut guest = Browser::new(&app);
    let csrf = guest.get("/dashboard/login").await.csrf();
    let fields = [("email", email.as_str()), ("password", PASSWORD), ("csrf", csrf.as_str())];
    for origin in ["https://evil.example", "null", "http://127.0.0.1:1"] {
        let page = guest.post_with("/dashboard/login", &fields, &[("origin", origin)]).await;
        assert_eq!(page.status, 403, "Origin: {origin}");
        assert!(guest.session().is_none());
    }
    // The service's own origin (what a browser sends) is accepted; so is no Origin at all.
    guest.post_with("/dashboard/login", &fields, &[("origin", &app.base)]).await.assert_redirect("/dashboard");
    let mut other = Browser::new(&app);
    other.sign_in(&email, PASSWORD).await.assert_redirect("/dashboard");
    // A signed-in form too.
    let csrf = other.get("/dashboard").await.csrf();
    let page = other.post_with("/dashboard/logout", &[("csrf", &csrf)], &[("origin", "https://evil.example")]).await;
    assert_eq!(page.status, 403);
    assert_eq!(other.get("/dashboard").await.status, 200);
    // And a multipart one (its token is checked in its handler, the origin before).
    let boundary = "rehome-origin-test";
    let body =
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n{csrf}\r\n--{boundary}--\r\n");
    let upload = app
        .client
        .post(app.url("/dashboard/bulk-import"))
        .header("cookie", other.cookie_header())
        .header("content-type", format!("multipart/form-data; boundary={boundary}"))
        .header("origin", "https://evil.example")
        .body(body)
        .send()
        .await
        .expect("POST");
    assert_eq!(upload.status(), 403);
}
