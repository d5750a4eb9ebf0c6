//! The memory request bodies hold while they arrive (issue 52 item 1): a body is charged
//! what it announces before a byte is read, one client network may hold only so much at
//! once (429, `Retry-After`) and all of them only so much (503), the charge is given back
//! when the body is done with; and no body may take longer than the whole-body deadline to
//! arrive, however fast it keeps coming (408).

use std::time::{Duration, Instant};

use futures_util::FutureExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::{spawn_app_with, TestApp};

const MIB: usize = 1024 * 1024;

/// Opens a connection and sends the head of a listing create announcing `length` bytes and
/// the first few of them: a body held open.
async fn held_open(app: &TestApp, key: &str, length: usize) -> TcpStream {
    held_open_from(app, [127, 0, 0, 1], key, length).await
}

/// [`held_open`] from the loopback address `from`.
async fn held_open_from(app: &TestApp, from: [u8; 4], key: &str, length: usize) -> TcpStream {
    let mut stream = crate::connections::connect_from(app, from).await;
    let head = format!(
        "POST /v1/listings HTTP/1.1\r\nHost: rehome\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n{{\"title\": "
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    // The server has read the head once it has charged the body (what it announces) or
    // refused it.
    let peer = std::net::IpAddr::from(from);
    let read = || async {
        let charged = app.state.body_memory.held(peer).1 >= length as u64;
        let answered = matches!(stream.peek(&mut [0u8; 1]).now_or_never(), Some(Ok(n)) if n > 0);
        (charged || answered).then_some(())
    };
    crate::helpers::poll(Duration::from_secs(10), read).await.expect("the held body was charged or refused");
    stream
}

/// A whole body of `length` bytes (not valid JSON: only the budget's answer matters).
async fn send(app: &TestApp, key: &str, length: usize) -> (u16, Option<String>, serde_json::Value) {
    let response = app
        .request(reqwest::Method::POST, "/v1/listings", key)
        .header("content-type", "application/json")
        .body(vec![b' '; length])
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let retry = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    (status, retry, response.json().await.unwrap_or_default())
}

#[tokio::test]
async fn a_network_holds_at_most_its_budget_of_bodies_and_gets_it_back() {
    let app = spawn_app_with(|c| {
        c.body_memory_per_network_mb = 1;
        c.body_memory_mb = 64;
    })
    .await;
    let partner = app.partner("acme").await;
    let open = held_open(&app, &partner.key, 700_000).await;
    // The same network announcing 700 kB more goes over its megabyte: refused at once.
    let (status, retry, answer) = send(&app, &partner.key, 700_000).await;
    assert_eq!((status, retry.as_deref()), (429, Some("1")), "{answer}");
    assert_eq!(answer["code"], "rate_limited", "{answer}");
    // A smaller one fits beside it (and is then refused for what it is).
    let (status, _, answer) = send(&app, &partner.key, 200_000).await;
    assert_eq!(status, 400, "{answer}");
    // The held body's connection closes: its charge is given back.
    drop(open);
    let given_back = || async { (app.state.body_memory.held([127, 0, 0, 1].into()).1 == 0).then_some(()) };
    crate::helpers::poll(Duration::from_secs(10), given_back).await.expect("the charge was given back");
    let (status, _, answer) = send(&app, &partner.key, 700_000).await;
    assert_eq!(status, 400, "{answer}");
}

#[tokio::test]
async fn all_networks_together_hold_at_most_the_servers_budget() {
    let app = spawn_app_with(|c| {
        c.body_memory_mb = 1;
        c.body_memory_per_network_mb = 64;
    })
    .await;
    let partner = app.partner("acme").await;
    let _open = held_open(&app, &partner.key, 900_000).await;
    let (status, retry, answer) = send(&app, &partner.key, 200_000).await;
    assert_eq!((status, retry.as_deref()), (503, Some("1")), "{answer}");
    assert_eq!(answer["code"], "server_busy", "{answer}");
}

#[tokio::test]
async fn a_body_that_keeps_coming_past_the_deadline_is_answered_408() {
    let app = spawn_app_with(|c| c.body_deadline_secs = 1).await;
    let partner = app.partner("acme").await;
    let mut stream = held_open(&app, &partner.key, 10 * MIB).await;
    let started = Instant::now();
    // 10 kB a second: ten times the minimum rate, but the body would take 17 minutes.
    let mut answer = Vec::new();
    while started.elapsed() < Duration::from_secs(10) {
        if stream.write_all(&[b' '; 1000]).await.is_err() {
            break;
        }
        let mut buf = [0u8; 512];
        if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(100), stream.read(&mut buf)).await {
            answer.extend_from_slice(&buf[..n]);
            if n == 0 || answer.windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
    }
    let answer = String::from_utf8_lossy(&answer).into_owned();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(5), "answered after {:?}", started.elapsed());
}

/// Thirty bodies of 100 kB held open at once from one network with a megabyte to hold:
/// ten are let in, the other twenty are refused at once.
#[tokio::test]
async fn a_burst_of_held_bodies_is_held_to_the_networks_budget() {
    let app = spawn_app_with(|c| c.body_memory_per_network_mb = 1).await;
    let partner = app.partner("acme").await;
    let opened = futures_util::future::join_all((0..30).map(|_| held_open(&app, &partner.key, 100 * 1024))).await;
    let mut refused = 0;
    let mut waiting = Vec::new();
    for mut stream in opened {
        let mut buf = [0u8; 16];
        match tokio::time::timeout(Duration::from_millis(500), stream.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => {
                assert!(buf.starts_with(b"HTTP/1.1 429"), "{}", String::from_utf8_lossy(&buf));
                refused += 1;
            }
            _ => waiting.push(stream),
        }
    }
    assert_eq!((waiting.len(), refused), (10, 20), "ten bodies fit in a megabyte");
}

/// One API key holds at most its budget over every network it sends from: a key spread over
/// eight networks, each within its own budget, is refused past the key's; another key of
/// the same networks is not.
#[tokio::test]
async fn a_key_spread_over_networks_holds_at_most_its_budget() {
    let app = spawn_app_with(|c| {
        c.body_memory_per_network_mb = 1;
        c.body_memory_per_key_mb = 2;
    })
    .await;
    let partner = app.partner("acme").await;
    let other = app.partner("globex").await;
    let mut opened = Vec::new();
    for network in 1..=8u8 {
        opened.push(held_open_from(&app, [127, 0, network, 1], &partner.key, 500_000).await);
    }
    let mut refused = 0;
    let mut waiting = Vec::new();
    for mut stream in opened {
        let mut buf = [0u8; 512];
        match tokio::time::timeout(Duration::from_millis(500), stream.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => {
                let answer = String::from_utf8_lossy(&buf[..n]).into_owned();
                assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
                assert!(answer.contains("API key"), "the key's budget is named: {answer}");
                refused += 1;
            }
            _ => waiting.push(stream),
        }
    }
    assert_eq!((waiting.len(), refused), (4, 4), "four half-megabyte bodies fit in the key's two megabytes");
    // Another key has its own budget.
    let _theirs = held_open_from(&app, [127, 0, 9, 1], &other.key, 500_000).await;
    let (status, _, answer) = send(&app, &other.key, 400_000).await;
    assert_eq!(status, 400, "{answer}");
}
