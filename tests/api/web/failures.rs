//! A dashboard action that fails inside never shows why (issue 30, item 3): the person gets
//! the 500 page, the failure goes to the log with the request's span. Each action is made
//! to fail where the view after it would not: the database refuses the action's audit
//! entry (a trigger, on both backends), so the page the action shows could render anything
//! it was given. Before, some actions put the database's own words in a notice, with 200.

use rehome::domain::user::Role;
use serde_json::json;

use super::{admin, set_password, Browser};
use crate::helpers::{json as body, TestApp};
use crate::marketplace::market_app;
use crate::webhooks::{configure, DELIVERIES, WEBHOOK};

/// What the trigger says, and words of the layers under it.
pub(super) const LEAKS: [&str; 6] = ["refused by the test", "database", "sqlx", "trigger", "SQLITE", "error returned"];

/// Makes every audit entry fail (`on`) or lets them be written again.
pub(super) async fn refuse_audit(app: &TestApp, on: bool) {
    let raw = app.db.raw().await;
    let statements: &[&str] = match (app.db.is_postgres(), on) {
        (false, true) => &["CREATE TRIGGER refuse BEFORE INSERT ON audit_log BEGIN \
                            SELECT RAISE(ABORT, 'refused by the test'); END"],
        (false, false) => &["DROP TRIGGER refuse"],
        (true, true) => &[
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$",
            "CREATE TRIGGER refuse BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION refuse()",
        ],
        (true, false) => &["DROP TRIGGER refuse ON audit_log", "DROP FUNCTION refuse()"],
    };
    for sql in statements {
        raw.execute(sql).await;
    }
    raw.close().await;
}

#[tokio::test]
async fn an_action_that_fails_inside_shows_the_error_page_and_no_database_text() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let (mo, _) = app.user(&partner, "Mo Member", Role::Member).await;
    set_password(&app, mo).await;
    configure(&app, &partner, "https://hooks.example/rehome").await;
    let sent = app.post(&format!("{WEBHOOK}/test"), &partner.key, &json!({})).await;
    assert!(sent.status().is_success(), "{:?}", sent.status());
    let deliveries = body(app.get(DELIVERIES, &partner.key).await).await;
    let event = deliveries["data"][0]["event_id"].as_str().expect("the test event").to_owned();
    let mut ada = Browser::signed_in(&app, &email).await;
    let csrf = ada.get("/dashboard/bulk-import").await.csrf();
    let token = ("csrf", csrf.as_str());
    let (replay, remove) = (format!("/dashboard/deliveries/{event}/replay"), format!("/dashboard/team/{mo}/remove"));
    let make_admin = format!("/dashboard/team/{mo}/make-admin");
    let actions: [(&str, Vec<(&str, &str)>); 9] = [
        (&replay, vec![token]),
        (&make_admin, vec![token]),
        (
            "/dashboard/integrations/webhook",
            vec![
                token,
                ("url", "https://hooks.example/other"),
                ("enabled", "on"),
                ("event_types", "redemption.created"),
            ],
        ),
        (
            "/dashboard/settings/payouts",
            vec![token, ("credit_enabled", "on"), ("credit_boost_percent", "150"), ("code_validity_days", "30")],
        ),
        ("/dashboard/integrations/webhook/test", vec![token]),
        (&remove, vec![token]),
        ("/dashboard/integrations/keys", vec![token, ("label", "Stock sync")]),
        ("/dashboard/settings/warehouses", vec![token, ("label", "Leeds DC"), ("city", "Leeds")]),
        ("/dashboard/settings/brand", vec![token, ("display_name", "Acme Sofas")]),
    ];
    refuse_audit(&app, true).await;
    for (path, fields) in &actions {
        let page = ada.post(path, fields).await;
        assert_eq!(page.status, 500, "{path}: {}", page.body);
        assert!(page.body.contains("Something went wrong"), "{path}: {}", page.body);
        for leak in LEAKS {
            assert!(!page.body.contains(leak), "{path} shows {leak:?}: {}", page.body);
        }
    }
    refuse_audit(&app, false).await;
    // Nothing was changed, and the same action works again.
    let keys = body(app.get("/v1/partner/settings/integrations/keys", &partner.key).await).await;
    assert!(!keys.to_string().contains("Stock sync"), "{keys}");
    let page = ada.post("/dashboard/integrations/keys", &[token, ("label", "Stock sync")]).await;
    page.assert_redirect("/dashboard/integrations");
}
