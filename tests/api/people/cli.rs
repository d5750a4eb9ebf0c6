//! The people commands of the CLI (decisions 12.1): `users list`, `keys list`,
//! `users invite-link`, and `users create` with emails unique across brands.

use rehome::domain::apikey::hash_secret;

use crate::helpers::{last_line, on_raw, run_rehome, spawn_app_on, RawPool, TestDb};

fn rehome(url: &str, args: &[&str]) -> (bool, String, String) {
    run_rehome(args, &[("REHOME_DATABASE_URL", url)])
}

/// Runs a command that must succeed; answers its stdout.
fn ok(url: &str, args: &[&str]) -> String {
    let (ok, out, err) = rehome(url, args);
    assert!(ok, "rehome {args:?}: {out}{err}");
    out
}

fn rows(out: &str) -> Vec<Vec<&str>> {
    out.lines().map(|l| l.split('\t').collect()).collect()
}

#[tokio::test]
async fn users_and_keys_are_listed_one_tab_separated_line_each_under_a_header() {
    let dir = tempfile::tempdir().unwrap();
    let db = TestDb::create_named(dir.path(), "cli.db").await;
    let url = db.url.as_str();
    ok(url, &["brands", "create", "acme", "--name", "Acme"]);
    ok(url, &["brands", "create", "beta", "--name", "Beta"]);
    let ada =
        last_line(&ok(url, &["users", "create", "--brand", "acme", "--name", "Ada", "--email", "Ada@Acme.example"]))
            .to_owned();
    let sam = last_line(&ok(
        url,
        &["users", "create", "--brand", "acme", "--name", "Sam", "--email", "sam@acme.example", "--role", "member"],
    ))
    .to_owned();
    ok(url, &["users", "create", "--brand", "beta", "--name", "Bea", "--email", "bea@beta.example"]);

    let users = ok(url, &["users", "list", "--brand", "acme"]);
    assert_eq!(
        rows(&users),
        [
            vec!["id", "email", "name", "role", "status"],
            vec![ada.as_str(), "ada@acme.example", "Ada", "admin", "active"],
            vec![sam.as_str(), "sam@acme.example", "Sam", "member", "active"],
        ]
    );

    let out = ok(url, &["keys", "create", "--user", &ada, "--label", "Stock sync", "--scopes", "read"]);
    let secret = last_line(&out).to_owned();
    ok(url, &["keys", "create", "--user", &sam]);
    let keys = ok(url, &["keys", "list", "--brand", "acme"]);
    let keys = rows(&keys);
    assert_eq!(keys[0], ["id", "prefix", "label", "user_id", "scopes", "created", "expires", "last_used", "revoked"]);
    assert_eq!(keys.len(), 3);
    // Newest first: Sam's unlabelled key, then Ada's.
    assert_eq!((keys[1][2], keys[1][3], keys[1][4]), ("-", sam.as_str(), "read,write"));
    assert_eq!((keys[2][1], keys[2][2], keys[2][3], keys[2][4]), (&secret[..12], "Stock sync", ada.as_str(), "read"));
    assert_eq!((keys[2][6], keys[2][7], keys[2][8]), ("-", "-", "-"));
    assert!(keys[2][5].ends_with('Z'), "{:?}", keys[2]);
    let key_id = keys[2][0].to_owned();
    ok(url, &["keys", "revoke", &key_id]);
    let keys = ok(url, &["keys", "list", "--brand", "acme"]);
    assert!(rows(&keys)[2][8].ends_with('Z'), "{keys}");
    let raw = RawPool::connect(url).await;
    let recorded: Vec<(String, String, Option<String>)> =
        on_raw!(&raw, |pool| sqlx::query_as("SELECT actor_type, action, target FROM audit_log ORDER BY id")
            .fetch_all(pool)
            .await
            .unwrap());
    raw.close().await;
    let actions: Vec<(&str, &str)> = recorded.iter().map(|(a, b, _)| (a.as_str(), b.as_str())).collect();
    assert_eq!(actions, [("operator", "key.created"), ("operator", "key.created"), ("operator", "key.revoked")]);
    assert_eq!(recorded[2].2, Some(format!("key:{key_id}")));

    let (success, _, err) = rehome(url, &["users", "list", "--brand", "nope"]);
    assert!(!success && err.contains("no brand"), "{err}");
    let (success, _, err) = rehome(url, &["keys", "list", "--brand", "nope"]);
    assert!(!success && err.contains("no brand"), "{err}");
}

#[tokio::test]
async fn an_email_is_refused_when_any_brand_has_a_user_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = TestDb::create_named(dir.path(), "cli.db").await;
    let url = db.url.as_str();
    ok(url, &["brands", "create", "acme", "--name", "Acme"]);
    ok(url, &["brands", "create", "beta", "--name", "Beta"]);
    ok(url, &["users", "create", "--brand", "acme", "--name", "Ada", "--email", "ada@shared.example"]);
    for brand in ["acme", "beta"] {
        let (success, _, err) =
            rehome(url, &["users", "create", "--brand", brand, "--name", "Again", "--email", " ADA@shared.example"]);
        assert!(!success, "{brand}");
        assert!(err.contains("ada@shared.example") && err.contains("already exists"), "{err}");
    }
}

#[tokio::test]
async fn invite_link_prints_a_fresh_single_link_alone_on_the_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = TestDb::create_named(dir.path(), "cli.db").await;
    let database_url = db.url.clone();
    let url = database_url.as_str();
    ok(url, &["brands", "create", "acme", "--name", "Acme"]);
    let ada =
        last_line(&ok(url, &["users", "create", "--brand", "acme", "--name", "Ada", "--email", "ada@acme.example"]))
            .to_owned();

    let env = [("REHOME_DATABASE_URL", url), ("REHOME_PUBLIC_URL", "https://rehome.example/")];
    let (success, out, err) = run_rehome(&["users", "invite-link", &ada], &env);
    assert!(success, "{out}{err}");
    let link = last_line(&out);
    let token = link.strip_prefix("https://rehome.example/dashboard/invite/").unwrap_or_else(|| panic!("{out}"));
    assert!(token.len() >= 43 && token.bytes().all(|b| b.is_ascii_alphanumeric()), "{link}");

    // Without a public URL, and before any server ran on the database: refused, saying how.
    let (success, _, err) = rehome(url, &["users", "invite-link", &ada]);
    assert!(!success && err.contains("--public-url"), "{err}");
    // Once a server has run, the link is under the public URL it served under.
    let server = spawn_app_on(db, dir, |_| {}).await;
    let base = format!("{}/dashboard/invite/", server.base);
    let (_db, _dir) = server.stop_and_keep().await;
    let again = ok(url, &["users", "invite-link", &ada]);
    let second = last_line(&again).strip_prefix(base.as_str()).unwrap_or_else(|| panic!("{again}"));

    // Only the newest link works: the first one is spent.
    let raw = RawPool::connect(url).await;
    let live: Vec<Vec<u8>> = on_raw!(&raw, |pool| sqlx::query_scalar(
        "SELECT token_hash FROM invitations WHERE user_id = $1 AND used_at IS NULL"
    )
    .bind(ada.parse::<i64>().unwrap())
    .fetch_all(pool)
    .await
    .unwrap());
    let recorded: Vec<(String, String, Option<String>)> =
        on_raw!(&raw, |pool| sqlx::query_as("SELECT actor_type, action, target FROM audit_log ORDER BY id")
            .fetch_all(pool)
            .await
            .unwrap());
    raw.close().await;
    assert_eq!(live, [hash_secret(second).to_vec()]);
    let invited = ("operator".to_owned(), "member.invited".to_owned(), Some(format!("user:{ada}")));
    assert_eq!(recorded, [invited.clone(), invited], "each link is in the brand's audit log");

    let (success, _, err) = rehome(url, &["users", "invite-link", "999"]);
    assert!(!success && err.contains("no user with id 999"), "{err}");
}
