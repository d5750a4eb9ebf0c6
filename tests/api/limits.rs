use crate::helpers::{assert_error, on_postgres, spawn_app};

const OPTIONS: &str = "/v1/listings/options";

fn header(response: &reqwest::Response, name: &str) -> u64 {
    response.headers()[name].to_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn the_sixty_first_request_in_a_minute_with_a_default_key_is_rate_limited() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let key = app.key(partner.user_id, "read,write", None, None).await;
    for i in 0..60u64 {
        let response = app.get(OPTIONS, &key).await;
        assert_eq!(response.status(), 200, "request {}", i + 1);
        assert_eq!(header(&response, "x-ratelimit-limit"), 60);
        assert_eq!(header(&response, "x-ratelimit-remaining"), 59 - i);
    }
    let response = app.get(OPTIONS, &key).await;
    let retry_after = header(&response, "retry-after");
    assert!((1..=60).contains(&retry_after), "Retry-After {retry_after}");
    assert_eq!(header(&response, "x-ratelimit-remaining"), 0);
    let now = chrono::Utc::now().timestamp() as u64;
    let reset = header(&response, "x-ratelimit-reset");
    // A node counts a request for exactly 60 s; the database shared by several nodes counts
    // it in 100 ms slots, for up to 60.1 s, so its reset may round up to one second later.
    let latest = now + if on_postgres() { 62 } else { 61 };
    assert!(reset > now && reset <= latest, "reset {reset} vs now {now}");
    assert_error(response, 429, "rate_limited").await;
}

#[tokio::test]
async fn a_key_with_its_own_quota_gets_exactly_that_many() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let key = app.key(partner.user_id, "read", Some(5), None).await;
    for _ in 0..5 {
        let response = app.get(OPTIONS, &key).await;
        assert_eq!(response.status(), 200);
        assert_eq!(header(&response, "x-ratelimit-limit"), 5);
    }
    let refused = assert_error(app.get(OPTIONS, &key).await, 429, "rate_limited").await;
    assert!(refused["message"].as_str().unwrap().contains("this API key"), "{refused}");
}

#[tokio::test]
async fn quotas_are_per_key_not_per_user_or_address() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let first = app.key(partner.user_id, "read", Some(2), None).await;
    let second = app.key(partner.user_id, "read", Some(2), None).await;
    for _ in 0..2 {
        assert_eq!(app.get(OPTIONS, &first).await.status(), 200);
    }
    assert_eq!(app.get(OPTIONS, &first).await.status(), 429);
    assert_eq!(app.get(OPTIONS, &second).await.status(), 200);
}

#[tokio::test]
async fn calls_without_a_valid_key_are_limited_per_address() {
    let app = spawn_app().await;
    for i in 0..60u64 {
        let response = app.get(OPTIONS, "").await;
        assert_eq!(response.status(), 401, "request {}", i + 1);
        assert_eq!(header(&response, "x-ratelimit-remaining"), 59 - i);
    }
    let response = app.get(OPTIONS, "not-a-key").await;
    assert!(header(&response, "retry-after") >= 1);
    let refused = assert_error(response, 429, "rate_limited").await;
    let message = refused["message"].as_str().unwrap();
    assert!(message.contains("client address") && !message.contains("this API key"), "{message}");
    // A valid key has its own quota.
    let partner = app.partner("acme").await;
    assert_eq!(app.get(OPTIONS, &partner.key).await.status(), 200);
}

#[tokio::test]
async fn rate_limit_headers_are_on_errors_too() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let (_, member) = app.user(&partner, "Max Member", rehome::domain::user::Role::Member).await;
    let responses = [
        app.get(OPTIONS, "").await,                 // 401
        app.get(OPTIONS, &member).await,            // 403
        app.get("/v1/nowhere", &partner.key).await, // 404
        app.delete(OPTIONS, &partner.key).await,    // 405
    ];
    for response in responses {
        for name in ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"] {
            assert!(response.headers().contains_key(name), "{name} missing on {}", response.status());
        }
    }
}

#[tokio::test]
async fn a_spoofed_forwarded_for_header_does_not_change_the_quota() {
    let app = spawn_app().await;
    for i in 0..60 {
        let response = app
            .client
            .get(app.url(OPTIONS))
            .header("X-Forwarded-For", format!("10.0.0.{i}"))
            .header("X-Real-IP", format!("10.0.1.{i}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401);
    }
    assert_eq!(app.get(OPTIONS, "").await.status(), 429);
}
