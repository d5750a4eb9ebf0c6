use serde_json::json;

use crate::helpers::{assert_error, json, on_postgres, spawn_app, spawn_app_with};
use crate::photos::process::Process;

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

/// `{"k0":0,"k1":0,…}` with `keys` keys: about 12 bytes a key.
fn key_bomb(keys: usize) -> Vec<u8> {
    let mut body = Vec::with_capacity(keys * 12 + 2);
    body.push(b'{');
    for i in 0..keys {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(format!("\"k{i}\":0").as_bytes());
    }
    body.push(b'}');
    body
}

/// A million small keys in 13 MB (under the 15 MiB body limit): refused from the bytes
/// before any map is built, saying why, and nothing is created.
#[tokio::test]
async fn a_body_of_a_million_keys_is_refused_before_it_is_parsed() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let bomb = key_bomb(1_000_000);
    assert!(bomb.len() < 15 * 1024 * 1024);
    let response = app
        .request(reqwest::Method::POST, "/v1/listings", &partner.key)
        .header("content-type", "application/json")
        .body(bomb)
        .send()
        .await
        .unwrap();
    let refused = assert_error(response, 400, "invalid_body").await;
    assert!(refused["message"].as_str().unwrap().contains("more than 10000 keys and array items"), "{refused}");
    let listings = json(app.get("/v1/listings", &partner.key).await).await;
    assert_eq!(listings["meta"]["total"], 0, "{listings}");
}

#[tokio::test]
async fn a_body_nested_deeper_than_any_of_ours_is_refused() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let deep = format!("{{\"title\": {}1{}}}", "[".repeat(100), "]".repeat(100));
    let response = app
        .request(reqwest::Method::POST, "/v1/listings", &partner.key)
        .header("content-type", "application/json")
        .body(deep)
        .send()
        .await
        .unwrap();
    let refused = assert_error(response, 400, "invalid_body").await;
    assert!(refused["message"].as_str().unwrap().contains("more than 32 deep"), "{refused}");
}

/// The largest bodies the API takes are still taken: a listing with every piece of
/// `measurements` and the longest description, and (over 1 MiB, so it holds a large
/// body's place) a photo.
#[tokio::test]
async fn the_largest_legitimate_bodies_are_still_accepted() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let pieces: Vec<_> = (0..20).map(|_| json!({"type": "Footstool", "w_cm": 60, "d_cm": 60, "h_cm": 45})).collect();
    let listing = json!({
        "title": "Twenty footstools", "price_gbp": 120, "condition": "fair", "category": "Armchairs",
        "faults": ["None"], "exposed_to": ["Dogs", "Cats", "Smoke"], "description": "a".repeat(20_000),
        "measurements": pieces, "sku": "FS-20",
    });
    let response = app.post("/v1/listings", &partner.key, &listing).await;
    assert_eq!(response.status(), 201, "{}", json(response).await);
    // A noisy PNG of about 1.5 MB: 2 MB of base64.
    let mut seed = 7u32;
    let noisy = image::RgbImage::from_fn(800, 700, |_, _| {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        image::Rgb([(seed >> 24) as u8, (seed >> 16) as u8, (seed >> 8) as u8])
    });
    let mut png = std::io::Cursor::new(Vec::new());
    noisy.write_to(&mut png, image::ImageFormat::Png).unwrap();
    let response = crate::photos::upload(&app, &partner.key, png.get_ref(), None).await;
    assert_eq!(response.status(), 201, "{}", json(response).await);
}

/// Large bodies are read and parsed a few at a time: with one place, a second large body
/// arriving while the first is still being sent waits, then is answered 503 with
/// `Retry-After`; a small body is not held up.
#[tokio::test]
async fn large_bodies_past_their_places_are_answered_503() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = spawn_app_with(|c| c.large_bodies = 1).await;
    let partner = app.partner("acme").await;
    let head = |length: usize| {
        format!(
            "POST /v1/listings HTTP/1.1\r\nHost: rehome\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n",
            partner.key
        )
    };
    // Announces 2 MiB and sends a little of it: it holds the only place meanwhile.
    let mut first = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    first.write_all(head(2 * 1024 * 1024).as_bytes()).await.unwrap();
    first.write_all(b"{\"title\": \"").await.unwrap();
    let held = || async { (app.state.large_bodies.free() == 0).then_some(()) };
    crate::helpers::poll(std::time::Duration::from_secs(10), held).await.expect("the first body took the place");
    assert_eq!(app.post("/v1/listings", &partner.key, &json!({})).await.status(), 400, "small bodies pass");
    // The second announces 2 MiB too; it is answered from its head, before any of it is read.
    let mut second = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    second.write_all(head(2 * 1024 * 1024).as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        let mut buffer = [0u8; 4096];
        while let Ok(n @ 1..) = second.read(&mut buffer).await {
            answer.extend_from_slice(&buffer[..n]);
            if answer.ends_with(b"}") {
                break;
            }
        }
    })
    .await;
    assert!(read.is_ok(), "answered");
    let answer = String::from_utf8_lossy(&answer).to_lowercase();
    assert!(answer.starts_with("http/1.1 503") && answer.contains("retry-after: 1"), "{answer}");
    assert!(answer.contains(r#""code":"server_busy""#) && answer.contains("large request bodies"), "{answer}");
    drop(first);
}

/// The server's peak memory (its own process) while eight key bombs arrive at once stays
/// near what their bytes weigh: each used to build a map of about 300 MB.
#[tokio::test]
async fn key_bombs_at_once_cost_about_their_bytes_in_memory() {
    let server = Process::start(&[("REHOME_PHOTO_JOBS_PAUSED", "true")]).await;
    let bomb = key_bomb(1_000_000);
    let (_, peak_before) = server.memory_kib();
    let sends = (0..8).map(|_| server.try_post("/v1/listings", bomb.clone()));
    let answers = futures_util::future::join_all(sends).await;
    let (_, peak) = server.memory_kib();
    let grown_mib = peak.saturating_sub(peak_before) / 1024;
    println!("eight 1M-key bombs ({} bytes each): peak grew {grown_mib} MiB", bomb.len());
    // Eight bodies of 12 MB read at once are 100 MB; one parsed map was 300 MB. (Those over
    // the network's body budget, 64 MiB, are refused before they are read.)
    assert!(grown_mib < 200, "peak grew {grown_mib} MiB");
    let mut parsed = 0;
    // A body refused before it is read may reach the client as a reset while it still
    // writes (the answer and the close came first): refused all the same.
    for (status, answer) in answers.into_iter().flatten() {
        let refused = (status, answer["code"].as_str());
        assert!(refused == (400, Some("invalid_body")) || refused == (429, Some("rate_limited")), "{answer}");
        parsed += usize::from(status == 400);
    }
    assert!(parsed >= 5, "five of 12 MB fit in the network's 64 MiB: {parsed} read");
}
