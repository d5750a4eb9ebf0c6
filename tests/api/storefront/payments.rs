//! Paying by card through Stripe Checkout (decisions 14.4), against a stand-in for Stripe's
//! API on a local port: the checkout holds the stock and sends the buyer to the payment
//! page; a signed `checkout.session.completed` places the order (once, however often it is
//! sent); a forged one changes nothing; a lapsed hold is closed at Stripe and its stock
//! returned, unless Stripe says the buyer paid; a Stripe that cannot be reached takes
//! nothing. (The requests' shape is checked against Stripe's OpenAPI description and the
//! signatures against Stripe's own library in `tests/stripe/check.py`.)

// A stand-in for Stripe, not a route of ours.
#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

use super::checkout::{buy, buyer, visit};
use super::{detail, page};
use crate::helpers::{spawn_app_with, Partner, TestApp};
use crate::listings::create_id;
use crate::marketplace::execute_sql;

const SECRET_KEY: &str = "sk_test_rehome_0123456789";
const WEBHOOK_SECRET: &str = "whsec_rehome_test_secret";

/// A request Stripe got: method, path, form fields and headers.
type Seen = (String, String, HashMap<String, String>, HashMap<String, String>);

/// What the stand-in knows: its sessions and every request (method, path, form, headers).
#[derive(Default)]
struct Stripe {
    sessions: HashMap<String, Value>,
    requests: Vec<Seen>,
    /// Answer every request 500 (Stripe unreachable in effect).
    down: bool,
}

type Shared = Arc<Mutex<Stripe>>;

struct FakeStripe {
    url: String,
    state: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeStripe {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn record(state: &Shared, method: &str, path: &str, form: &str, headers: &HeaderMap) -> bool {
    let form: HashMap<String, String> = url::form_urlencoded::parse(form.as_bytes()).into_owned().collect();
    let headers = headers.iter().map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned())).collect();
    let mut stripe = state.lock().unwrap();
    stripe.requests.push((method.to_owned(), path.to_owned(), form, headers));
    stripe.down
}

fn error(status: StatusCode, message: &str) -> (StatusCode, Json<Value>) {
    (status, Json(json!({"error": {"type": "invalid_request_error", "message": message}})))
}

impl FakeStripe {
    async fn start() -> Self {
        let state: Shared = Arc::default();
        let app = Router::new()
            .route(
                "/v1/checkout/sessions",
                post(|State(s): State<Shared>, headers: HeaderMap, body: String| async move {
                    if record(&s, "POST", "/v1/checkout/sessions", &body, &headers) {
                        return error(StatusCode::INTERNAL_SERVER_ERROR, "down");
                    }
                    let form: HashMap<String, String> =
                        url::form_urlencoded::parse(body.as_bytes()).into_owned().collect();
                    let mut stripe = s.lock().unwrap();
                    let id = format!("cs_test_{}", stripe.sessions.len() + 1);
                    let session = json!({
                        "id": id, "object": "checkout.session", "status": "open", "payment_status": "unpaid",
                        "url": format!("https://checkout.stripe.com/c/pay/{id}"),
                        "client_reference_id": form.get("client_reference_id"),
                        "expires_at": form.get("expires_at").and_then(|e| e.parse::<i64>().ok()),
                    });
                    stripe.sessions.insert(id, session.clone());
                    (StatusCode::OK, Json(session))
                }),
            )
            .route(
                "/v1/checkout/sessions/{id}",
                get(|State(s): State<Shared>, Path(id): Path<String>, headers: HeaderMap| async move {
                    record(&s, "GET", &format!("/v1/checkout/sessions/{id}"), "", &headers);
                    match s.lock().unwrap().sessions.get(&id) {
                        Some(session) => (StatusCode::OK, Json(session.clone())),
                        None => error(StatusCode::NOT_FOUND, "No such checkout.session"),
                    }
                }),
            )
            .route(
                "/v1/checkout/sessions/{id}/expire",
                post(|State(s): State<Shared>, Path(id): Path<String>, headers: HeaderMap| async move {
                    if record(&s, "POST", &format!("/v1/checkout/sessions/{id}/expire"), "", &headers) {
                        return error(StatusCode::INTERNAL_SERVER_ERROR, "down");
                    }
                    let mut stripe = s.lock().unwrap();
                    let Some(session) = stripe.sessions.get_mut(&id) else {
                        return error(StatusCode::NOT_FOUND, "No such checkout.session");
                    };
                    if session["status"] != "open" {
                        return error(
                            StatusCode::BAD_REQUEST,
                            "Only Checkout Sessions with a status of open can be expired.",
                        );
                    }
                    session["status"] = json!("expired");
                    (StatusCode::OK, Json(session.clone()))
                }),
            )
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { url, state, task }
    }

    fn requests(&self, method: &str, path_start: &str) -> Vec<HashMap<String, String>> {
        let stripe = self.state.lock().unwrap();
        stripe.requests.iter().filter(|r| r.0 == method && r.1.starts_with(path_start)).map(|r| r.2.clone()).collect()
    }

    fn headers_of_first(&self) -> HashMap<String, String> {
        self.state.lock().unwrap().requests[0].3.clone()
    }

    /// The buyer pays on the payment page.
    fn pay(&self, id: &str) -> Value {
        let mut stripe = self.state.lock().unwrap();
        let session = stripe.sessions.get_mut(id).unwrap();
        session["status"] = json!("complete");
        session["payment_status"] = json!("paid");
        session.clone()
    }

    fn set_down(&self, down: bool) {
        self.state.lock().unwrap().down = down;
    }
}

async fn spawn_paying_app(stripe: &FakeStripe) -> TestApp {
    let url = stripe.url.clone();
    spawn_app_with(move |config| {
        config.payments = rehome::config::PaymentsKind::Stripe;
        config.stripe_secret_key = Some(SECRET_KEY.to_owned().into());
        config.stripe_webhook_secret = Some(WEBHOOK_SECRET.to_owned().into());
        config.stripe_api_url = url;
    })
    .await
}

/// A `Stripe-Signature` header for `body` at `t`, as Stripe makes it.
fn signature(body: &str, secret: &str, t: i64) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.{body}").as_bytes());
    format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
}

fn event(kind: &str, session: &Value) -> String {
    json!({"id": "evt_test_1", "object": "event", "type": kind, "data": {"object": session}}).to_string()
}

async fn notify(app: &TestApp, body: &str, signature: Option<&str>) -> (u16, Value) {
    let mut request = app.client.post(app.url("/payments/stripe/webhook")).body(body.to_owned());
    if let Some(signature) = signature {
        request = request.header("stripe-signature", signature);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn signed(app: &TestApp, kind: &str, session: &Value) -> u16 {
    let body = event(kind, session);
    notify(app, &body, Some(&signature(&body, WEBHOOK_SECRET, chrono::Utc::now().timestamp()))).await.0
}

async fn orders_of(app: &TestApp, listing: i64) -> i64 {
    let pool = app.db.raw().await;
    let n = pool.count(&format!("SELECT COUNT(*) FROM orders WHERE listing_id = {listing}")).await;
    pool.close().await;
    n
}

/// A listing of `quantity` at £450 and a buyer sent to pay for `take` of them: the listing,
/// the payment page's session id and the order page's path.
async fn held(
    app: &TestApp,
    partner: &Partner,
    stripe: &FakeStripe,
    quantity: i64,
    take: &str,
) -> (i64, String, String) {
    let id = create_id(
        app,
        &partner.key,
        json!({"title": "Ash bench", "channel": "clearance", "quantity": quantity, "price_gbp": 450}),
    )
    .await;
    let visit = visit(app, id).await;
    let (status, location, body) = buy(app, id, &visit, &buyer(take)).await;
    assert_eq!(status, 303, "{body}");
    let session = location.strip_prefix("https://checkout.stripe.com/c/pay/").expect("Stripe's page").to_owned();
    let created = stripe.requests("POST", "/v1/checkout/sessions");
    let form = created.last().unwrap();
    let order_page = form["success_url"].strip_prefix(&app.base).expect("our own order page").to_owned();
    (id, session, order_page)
}

#[tokio::test]
async fn a_buyer_is_sent_to_pay_with_the_stock_held_and_a_signed_payment_places_the_order_once() {
    let stripe = FakeStripe::start().await;
    let app = spawn_paying_app(&stripe).await;
    let partner = app.partner("acme").await;
    let (id, session, order_page) = held(&app, &partner, &stripe, 3, "2").await;
    // The request Stripe got: two units at the listing's price in pence, in pounds sterling,
    // back to the order's page, closing a minute after the 30-minute hold.
    let form = &stripe.requests("POST", "/v1/checkout/sessions")[0];
    assert_eq!(form["mode"], "payment");
    assert_eq!(form["line_items[0][quantity]"], "2");
    assert_eq!(form["line_items[0][price_data][currency]"], "gbp");
    assert_eq!(form["line_items[0][price_data][unit_amount]"], "45000");
    assert_eq!(form["line_items[0][price_data][product_data][name]"], "Ash bench");
    assert_eq!(form["customer_email"], "ada@example.com");
    assert_eq!(form["cancel_url"], form["success_url"]);
    let expires: i64 = form["expires_at"].parse().unwrap();
    let minutes = (expires - chrono::Utc::now().timestamp()) as f64 / 60.0;
    assert!((30.0..=31.1).contains(&minutes), "{minutes}");
    let headers = stripe.headers_of_first();
    assert_eq!(headers["authorization"], format!("Bearer {SECRET_KEY}"));
    assert!(headers["idempotency-key"].starts_with("rehome-hold-"), "{headers:?}");
    assert!(!headers["stripe-version"].is_empty());
    // Held: nobody else can buy those two; no order yet.
    assert_eq!(detail(&app, &partner, id).await["quantity"], 1);
    assert_eq!(orders_of(&app, id).await, 0);
    let waiting = page(&app, &order_page).await;
    assert_eq!(waiting.status, 200);
    assert!(
        waiting.body.contains("Awaiting payment") && waiting.body.contains("Pay £900.00 by card"),
        "{}",
        waiting.body
    );
    assert_eq!(waiting.header("cache-control"), "private, no-store");
    // Paid: Stripe's notice places the order at the held price.
    let paid = stripe.pay(&session);
    assert_eq!(signed(&app, "checkout.session.completed", &paid).await, 200);
    assert_eq!(orders_of(&app, id).await, 1);
    let placed = page(&app, &order_page).await;
    assert!(placed.body.contains(">Paid<") && placed.body.contains("You have paid £900.00 by card"), "{}", placed.body);
    // Stripe sends notices at least once: again, nothing more.
    assert_eq!(signed(&app, "checkout.session.completed", &paid).await, 200);
    assert_eq!(orders_of(&app, id).await, 1);
    assert_eq!(detail(&app, &partner, id).await["quantity"], 1);
    // The listing page says how buyers pay, and may lead to Stripe's page.
    let listing = page(&app, &format!("/marketplace/listings/{id}")).await;
    assert!(listing.body.contains("by card"), "{}", listing.body);
    assert!(listing.header("content-security-policy").contains("form-action 'self' https://checkout.stripe.com"));
}

#[tokio::test]
async fn a_forged_stale_or_unsigned_notice_changes_nothing() {
    let stripe = FakeStripe::start().await;
    let app = spawn_paying_app(&stripe).await;
    let partner = app.partner("acme").await;
    let (id, session, _) = held(&app, &partner, &stripe, 1, "1").await;
    let body = event("checkout.session.completed", &stripe.pay(&session));
    let now = chrono::Utc::now().timestamp();
    for header in [
        Some(signature(&body, "whsec_someone_else", now)),
        Some(signature(&body, WEBHOOK_SECRET, now - 600)),
        Some(signature(&body.replace("\"paid\"", "\"unpaid\""), WEBHOOK_SECRET, now)),
        Some("t=1,v1=zz".to_owned()),
        None,
    ] {
        let (status, answer) = notify(&app, &body, header.as_deref()).await;
        assert_eq!(status, 400, "{header:?}: {answer}");
        assert_eq!(answer["code"], "signature_invalid", "{answer}");
    }
    assert_eq!(orders_of(&app, id).await, 0);
    // Another kind of event, correctly signed: received, ignored.
    assert_eq!(signed(&app, "payment_intent.created", &json!({"id": "pi_1", "object": "payment_intent"})).await, 200);
    assert_eq!(orders_of(&app, id).await, 0);
}

#[tokio::test]
async fn an_expired_payment_returns_the_stock_and_the_page_says_so() {
    let stripe = FakeStripe::start().await;
    let app = spawn_paying_app(&stripe).await;
    let partner = app.partner("acme").await;
    let (id, session, order_page) = held(&app, &partner, &stripe, 1, "1").await;
    assert_eq!(detail(&app, &partner, id).await["status"], "closed", "the last unit held closes the listing");
    let expired = json!({"id": session, "object": "checkout.session", "status": "expired", "payment_status": "unpaid"});
    assert_eq!(signed(&app, "checkout.session.expired", &expired).await, 200);
    let listing = detail(&app, &partner, id).await;
    assert_eq!((listing["quantity"].as_i64(), listing["status"].as_str()), (Some(1), Some("active")), "{listing}");
    let lapsed = page(&app, &order_page).await;
    assert!(
        lapsed.body.contains("Payment not completed") && lapsed.body.contains("nothing was charged"),
        "{}",
        lapsed.body
    );
    // A payment notice after that finds nothing to sell and places nothing.
    assert_eq!(signed(&app, "checkout.session.completed", &stripe.pay(&session)).await, 200);
    assert_eq!(orders_of(&app, id).await, 0);
}

#[tokio::test]
async fn a_lapsed_hold_is_closed_at_stripe_and_its_stock_returned_unless_the_buyer_paid() {
    let stripe = FakeStripe::start().await;
    let app = spawn_paying_app(&stripe).await;
    let partner = app.partner("acme").await;
    let (abandoned, _, _) = held(&app, &partner, &stripe, 2, "2").await;
    let (paid, paid_session, paid_page) = held(&app, &partner, &stripe, 1, "1").await;
    stripe.pay(&paid_session);
    // Nothing lapses early.
    app.run_pending().await;
    assert!(stripe.requests("POST", "/v1/checkout/sessions/").is_empty());
    // Half an hour later, no notice having come (Stripe down while we ask: held, asked again).
    execute_sql(&app, "UPDATE payment_holds SET held_until = created_at, next_attempt_at = created_at").await;
    stripe.set_down(true);
    app.run_pending().await;
    assert_eq!(detail(&app, &partner, abandoned).await["quantity"], 0, "still held while Stripe cannot say");
    stripe.set_down(false);
    execute_sql(&app, "UPDATE payment_holds SET next_attempt_at = created_at WHERE status = 'pending'").await;
    app.run_pending().await;
    let expired = stripe.requests("POST", "/v1/checkout/sessions/cs_test_1/expire");
    assert!(!expired.is_empty(), "the open page is closed first");
    assert_eq!(detail(&app, &partner, abandoned).await["quantity"], 2);
    assert_eq!(orders_of(&app, abandoned).await, 0);
    // The other buyer paid though no notice came: the order is placed, the stock stays sold.
    assert_eq!(orders_of(&app, paid).await, 1);
    assert_eq!(detail(&app, &partner, paid).await["quantity"], 0);
    assert!(page(&app, &paid_page).await.body.contains("You have paid £450.00 by card"));
}

#[tokio::test]
async fn when_stripe_cannot_be_reached_nothing_is_taken_and_the_buyer_is_told() {
    let stripe = FakeStripe::start().await;
    let app = spawn_paying_app(&stripe).await;
    let partner = app.partner("acme").await;
    let id = create_id(
        &app,
        &partner.key,
        json!({"title": "Elm stool", "channel": "clearance", "quantity": 1, "price_gbp": 80}),
    )
    .await;
    stripe.set_down(true);
    let visit = visit(&app, id).await;
    let (status, _, body) = buy(&app, id, &visit, &buyer("1")).await;
    assert_eq!(status, 503);
    assert!(body.contains("card payments cannot be taken just now") && body.contains("Nothing was taken"), "{body}");
    let listing = detail(&app, &partner, id).await;
    assert_eq!((listing["quantity"].as_i64(), listing["status"].as_str()), (Some(1), Some("active")));
}

#[tokio::test]
async fn twelve_buyers_at_once_on_the_last_unit_hold_it_once() {
    let stripe = FakeStripe::start().await;
    let app = Arc::new(spawn_paying_app(&stripe).await);
    let partner = app.partner("acme").await;
    let id = create_id(
        &app,
        &partner.key,
        json!({"title": "Last chair", "channel": "clearance", "quantity": 1, "price_gbp": 60}),
    )
    .await;
    let visit = visit(&app, id).await;
    let tasks: Vec<_> = (0..12)
        .map(|_| {
            let (app, visit) = (app.clone(), visit.clone());
            tokio::spawn(async move { buy(&app, id, &visit, &buyer("1")).await.0 })
        })
        .collect();
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.unwrap());
    }
    assert_eq!(statuses.iter().filter(|s| **s == 303).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 409).count(), 11, "{statuses:?}");
    assert_eq!(stripe.requests("POST", "/v1/checkout/sessions").len(), 1);
}

#[tokio::test]
async fn without_a_gateway_the_notice_endpoint_says_so() {
    let app = crate::helpers::spawn_app().await;
    let (status, answer) = notify(&app, "{}", Some("t=1,v1=00")).await;
    assert_eq!(status, 404);
    assert_eq!(answer["code"], "payments_not_configured");
}
