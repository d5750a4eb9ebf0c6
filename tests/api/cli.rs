//! The `rehome` binary itself: account commands and a served key, revocation and SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::helpers::{binary_env, last_line, run_rehome, wait_ready, TestDb, REHOME_BIN as BIN};

/// Runs an admin command on the database at `url` (no data key: none needs one).
fn rehome(url: &str, args: &[&str]) -> (bool, String, String) {
    run_rehome(args, &[("REHOME_DATABASE_URL", url)])
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn the_cli_creates_accounts_whose_key_works_until_revoked_and_sigterm_stops_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let db = TestDb::create_named(dir.path(), "cli.db").await;
    let url = db.url.as_str();

    let (ok, out, err) = rehome(url, &["brands", "create", "acme-sofas", "--name", "Acme Sofas"]);
    assert!(ok, "{out}{err}");
    let (ok, out, err) =
        rehome(url, &["users", "create", "--brand", "acme-sofas", "--name", "Ada", "--email", "ada@acme.example"]);
    assert!(ok, "{out}{err}");
    let user_id: i64 = last_line(&out).parse().expect("user id alone on the last line");
    let (ok, out, err) = rehome(
        url,
        &["keys", "create", "--user", &user_id.to_string(), "--scopes", "read,write", "--rate-limit", "100"],
    );
    assert!(ok, "{out}{err}");
    let key_id = out.lines().find_map(|l| l.strip_prefix("key_id: ")).expect("key_id line").trim().to_owned();
    let secret = last_line(&out).to_owned();
    assert!(secret.starts_with("rhk_") && !secret.contains(' '), "secret alone on the last line: {secret}");

    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let child = Command::new(BIN)
        .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .envs(binary_env(url))
        .env("REHOME_MEDIA_DIR", dir.path().join("media"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut server = Serving(child);
    wait_ready(&base).await;

    let client = reqwest::Client::new();
    let options = client.get(format!("{base}/v1/listings/options")).bearer_auth(&secret).send().await.unwrap();
    assert_eq!(options.status(), 200);
    assert_eq!(options.headers()["x-ratelimit-limit"], "100");

    // Revoked from another process while the server runs: refused within about a second.
    let (ok, out, err) = rehome(url, &["keys", "revoke", &key_id]);
    assert!(ok, "{out}{err}");
    let status = || async {
        client.get(format!("{base}/v1/listings/options")).bearer_auth(&secret).send().await.unwrap().status()
    };
    let refused = crate::helpers::poll(Duration::from_secs(2), || async { Some(status().await).filter(|s| *s == 401) });
    assert_eq!(refused.await, Some(reqwest::StatusCode::UNAUTHORIZED));

    let status = Command::new("kill").args(["-TERM", &server.0.id().to_string()]).status().unwrap();
    assert!(status.success());
    let child = std::cell::RefCell::new(&mut server.0);
    let exited =
        crate::helpers::poll(Duration::from_secs(10), || async { child.borrow_mut().try_wait().unwrap() }).await;
    let status = exited.expect("server did not stop after SIGTERM");
    assert!(status.success(), "exit after SIGTERM: {status}");
}

#[tokio::test]
async fn the_cli_refuses_bad_input_with_a_message_and_non_zero_exit() {
    let dir = tempfile::tempdir().unwrap();
    let db = TestDb::create_named(dir.path(), "cli.db").await;
    let url = db.url.as_str();
    let (ok, _, err) = rehome(url, &["brands", "create", "Not A Slug", "--name", "X"]);
    assert!(!ok);
    assert!(err.contains("slug"), "{err}");
    assert!(rehome(url, &["brands", "create", "acme", "--name", "Acme"]).0);
    let (ok, _, err) = rehome(url, &["brands", "create", "acme", "--name", "Acme"]);
    assert!(!ok && err.contains("already exists"), "{err}");
    let (ok, _, err) = rehome(url, &["users", "create", "--brand", "nope", "--name", "A", "--email", "a@b.example"]);
    assert!(!ok && err.contains("no brand"), "{err}");
    let (ok, _, err) = rehome(url, &["users", "create", "--brand", "acme", "--name", "A", "--email", "not-an-email"]);
    assert!(!ok && err.contains("email"), "{err}");
    let (ok, _, _) = rehome(url, &["keys", "create", "--user", "999"]);
    assert!(!ok);
    let (ok, _, _) = rehome(url, &["keys", "create", "--user", "1", "--scopes", "admin"]);
    assert!(!ok);
    let (ok, _, err) = rehome(url, &["keys", "revoke", "999"]);
    assert!(!ok && err.contains("no key"), "{err}");
}

/// `rehome serve --demo` (plus `extra`) in `dir` on a free port: the server, its base URL
/// and its output up to the dashboard line.
async fn serve_demo(dir: &std::path::Path, extra: &[&str]) -> (Serving, String, Vec<String>) {
    let port = free_port();
    let mut child = Command::new(BIN)
        .args(["serve", "--demo", "--addr", &format!("127.0.0.1:{port}")])
        .args(extra)
        .current_dir(dir)
        .env_remove("REHOME_DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Serving(child);
    let lines: Vec<String> = tokio::task::spawn_blocking(move || {
        let mut lines = BufReader::new(stdout).lines().map_while(Result::ok);
        let mut seen: Vec<String> = lines.by_ref().take_while(|l| !l.starts_with("API docs")).collect();
        seen.extend(lines.find(|l| l.starts_with("Dashboard:")));
        seen
    })
    .await
    .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    wait_ready(&base).await;
    (server, base, lines)
}

/// The email and password of "Dashboard: http://…/dashboard  (sign in as EMAIL, password PASSWORD)".
fn demo_sign_in(lines: &[String]) -> (String, String) {
    let dashboard = lines.iter().find(|l| l.starts_with("Dashboard:")).expect("a dashboard line");
    let sign_in = dashboard.split("sign in as ").nth(1).expect("the sign-in").trim_end_matches(')');
    let (email, password) = sign_in.split_once(", password ").expect("email and password");
    (email.to_owned(), password.to_owned())
}

#[tokio::test]
async fn serve_demo_prints_a_key_a_curl_line_and_a_dashboard_sign_in_that_work() {
    let dir = tempfile::tempdir().unwrap();
    let (server, base, lines) = serve_demo(dir.path(), &[]).await;
    let curl = lines.iter().find(|l| l.trim_start().starts_with("curl ")).expect("a curl line");
    let key = curl.split_whitespace().find(|w| w.starts_with("rhk_")).unwrap().trim_end_matches('\'');
    assert!(dir.path().join("rehome.db").exists(), "the default database is rehome.db in the working directory");
    let response =
        reqwest::Client::new().get(format!("{base}/v1/listings/options")).bearer_auth(key).send().await.unwrap();
    assert_eq!(response.status(), 200);

    let (email, password) = demo_sign_in(&lines);
    let mut browser = crate::web::Browser::at(&base);
    browser.sign_in(&email, &password).await.assert_redirect("/dashboard");
    let home = browser.get("/dashboard").await;
    assert_eq!(home.status, 200);
    assert!(home.body.contains("Demo Admin"), "{}", home.body);

    // Decisions 12.2: every dashboard page shows something.
    let api = |path: &'static str| {
        let request = reqwest::Client::new().get(format!("{base}{path}")).bearer_auth(key).send();
        async move { request.await.unwrap().json::<serde_json::Value>().await.unwrap() }
    };
    let listings = api("/v1/listings?status=any").await;
    assert!(listings["data"].as_array().unwrap().len() >= 3, "{listings}");
    assert!(
        listings["data"].as_array().unwrap().iter().any(|l| l["image_url"].as_str().is_some_and(|u| !u.is_empty())),
        "a listing with a photo: {listings}"
    );
    assert_eq!(api("/v1/redemptions").await["data"].as_array().unwrap().len(), 1);
    assert!(!api("/v1/partner/collections?status=unscheduled").await["data"].as_array().unwrap().is_empty());
    let wallet = api("/v1/wallet").await;
    assert!(wallet["lifetime_pence"].as_i64().unwrap() > 0 && wallet["paid_pence"].as_i64().unwrap() > 0, "{wallet}");
    assert_eq!(api("/v1/remittances").await["meta"]["total"], 1);
    for page in ["/dashboard/listings", "/dashboard/wallet", "/dashboard/collections", "/dashboard/redemptions"] {
        assert_eq!(browser.get(page).await.status, 200, "{page}");
    }
    assert!(browser.get("/dashboard/listings").await.body.contains("Grey velvet 3-seater sofa"));
    let keys_before = api_keys(&base, key).await;
    drop(server);

    // Started again on the same database: reused as it was (issue 31.9). The password, the
    // session and the key still work; no key is added.
    let (server, base, lines) = serve_demo(dir.path(), &[]).await;
    assert!(lines.iter().any(|l| l.contains("exists already and was left as it was")), "{lines:?}");
    assert!(!lines.iter().any(|l| l.contains("rhk_")), "no new key: {lines:?}");
    let mut browser = browser.moved_to(&base);
    assert_eq!(browser.get("/dashboard").await.status, 200, "the session lives on");
    crate::web::Browser::at(&base).sign_in(&email, &password).await.assert_redirect("/dashboard");
    assert_eq!(api_keys(&base, key).await, keys_before);
    drop(server);

    // Asked to reset: a new key and password; the old password and session end.
    let (_server, base, lines) = serve_demo(dir.path(), &["--demo-reset"]).await;
    let (_, new_password) = demo_sign_in(&lines);
    assert_ne!(new_password, password);
    assert!(lines.iter().any(|l| l.contains("rhk_")), "{lines:?}");
    let mut browser = browser.moved_to(&base);
    browser.get("/dashboard").await.assert_redirect("/dashboard/login");
    assert_eq!(crate::web::Browser::at(&base).sign_in(&email, &password).await.status, 401);
    crate::web::Browser::at(&base).sign_in(&email, &new_password).await.assert_redirect("/dashboard");
}

/// How many keys the demo brand has (revoked ones included).
async fn api_keys(base: &str, key: &str) -> usize {
    let listed: serde_json::Value = reqwest::Client::new()
        .get(format!("{base}/v1/partner/settings/integrations/keys"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    listed["data"].as_array().expect("keys").len()
}
