//! Connection limits (issue 18): a client that sends half a request head, idles on a
//! keep-alive connection or trickles its body is cut off, and past the ceiling new
//! connections are refused at once, while the server keeps serving everyone else.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::{spawn_app_with, TestApp};

/// Reads until the server closes the connection (or `wait` passes): what it sent.
async fn until_closed(stream: &mut TcpStream, wait: Duration) -> Option<String> {
    let mut received = Vec::new();
    let read = tokio::time::timeout(wait, async {
        let mut buffer = [0u8; 4096];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => received.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    read.ok().map(|()| String::from_utf8_lossy(&received).into_owned())
}

/// A request on a fresh connection: a pooled one may be an idle connection the server has
/// just closed (as it should), which says nothing about whether it serves.
async fn healthy(app: &TestApp) -> bool {
    let fresh = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    fresh.get(app.url("/healthz")).send().await.is_ok_and(|r| r.status() == 200)
}

/// Asks for `/healthz` on `stream` and reads its status line (`HTTP/1.1 200`).
async fn healthz_status(stream: &mut TcpStream) -> std::io::Result<[u8; 12]> {
    stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: rehome\r\n\r\n").await?;
    let mut status = [0u8; 12];
    stream.read_exact(&mut status).await?;
    Ok(status)
}

/// A valid listing, as a body to send slowly.
const STEADY_BODY: &[u8] =
    br#"{"title": "Steady sofa", "price_gbp": 120, "condition": "fair", "category": "Armchairs", "faults": ["None"]}"#;

/// The head of a `POST /v1/listings` with `key` announcing `length` bytes of JSON, plus
/// `extra` header lines.
fn create_head(key: &str, length: usize, extra: &str) -> String {
    format!(
        "POST /v1/listings HTTP/1.1\r\nHost: rehome\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {length}\r\n{extra}\r\n"
    )
}

#[tokio::test]
async fn half_a_request_head_or_an_idle_keep_alive_is_cut_off() {
    let app = spawn_app_with(|c| c.header_timeout_ms = 300).await;
    let mut slow = Vec::new();
    for _ in 0..50 {
        let mut stream = TcpStream::connect(app.addr).await.unwrap();
        stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: rehome\r\nX-Slow: ").await.unwrap();
        slow.push(stream);
    }
    // An idle keep-alive connection, after one answered request.
    let mut idle = TcpStream::connect(app.addr).await.unwrap();
    let first = healthz_status(&mut idle).await.unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    assert!(healthy(&app).await, "others are served meanwhile");
    for stream in &mut slow {
        assert!(until_closed(stream, Duration::from_secs(10)).await.is_some(), "a half head is cut off");
    }
    assert!(until_closed(&mut idle, Duration::from_secs(10)).await.is_some(), "an idle connection is closed");
    assert!(healthy(&app).await);
    app.stop().await;
}

/// The head's timeout counts from when the connection last fell idle (opened, or its last
/// response), never across a request: a keep-alive connection used within the timeout
/// each time stays open however long it lives, and a request taking longer than the
/// timeout (a body arriving steadily) is served whole.
#[tokio::test]
async fn the_head_timeout_restarts_after_each_response_and_spares_requests_in_progress() {
    let app = spawn_app_with(|c| {
        c.header_timeout_ms = 400;
        c.body_grace_ms = 5_000;
    })
    .await;
    let partner = app.partner("acme").await;
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let answer = healthz_status(&mut stream).await.expect("still open a second after it opened");
        assert_eq!(&answer, b"HTTP/1.1 200");
        let mut rest = [0u8; 4096];
        // The rest of the short answer (its head and `ok` body) arrives in one segment.
        tokio::time::timeout(Duration::from_millis(200), stream.read(&mut rest)).await.unwrap().unwrap();
    }
    // A body sent steadily for three times the head's timeout.
    stream.write_all(create_head(&partner.key, STEADY_BODY.len(), "").as_bytes()).await.unwrap();
    let pieces = STEADY_BODY.chunks(STEADY_BODY.len().div_ceil(12));
    for piece in pieces {
        stream.write_all(piece).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut answer = [0u8; 12];
    stream.read_exact(&mut answer).await.expect("answered, not cut off");
    assert_eq!(&answer, b"HTTP/1.1 201");
    // Then idle: closed one timeout later.
    assert!(until_closed(&mut stream, Duration::from_secs(10)).await.is_some(), "an idle connection is closed");
    app.stop().await;
}

#[tokio::test]
async fn past_the_ceiling_a_connection_is_refused_at_once() {
    let app = spawn_app_with(|c| {
        c.max_connections = 4;
        c.header_timeout_ms = 20_000;
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(TcpStream::connect(app.addr).await.unwrap());
    }
    // Let the server take them in before the next one knocks.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut over = TcpStream::connect(app.addr).await.unwrap();
    let answer = until_closed(&mut over, Duration::from_secs(10)).await.expect("answered and closed");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("retry-after: 1") && answer.contains(r#""code":"server_busy""#), "{answer}");
    drop(held);
    // The held connections' slots come back once the server sees them close.
    let served = crate::helpers::poll(Duration::from_secs(5), || async { healthy(&app).await.then_some(()) }).await;
    assert!(served.is_some(), "slots are given back");
    app.stop().await;
}

#[tokio::test]
async fn a_body_trickling_in_below_the_minimum_rate_is_refused_with_408() {
    let app = spawn_app_with(|c| {
        c.body_grace_ms = 300;
        c.body_min_rate = 1_000;
    })
    .await;
    let partner = app.partner("acme").await;
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    let head = create_head(&partner.key, 5000, "") + r#"{"title": "#;
    stream.write_all(head.as_bytes()).await.unwrap();
    let answer = until_closed(&mut stream, Duration::from_secs(10)).await.expect("answered");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains(r#""code":"request_timeout""#), "{answer}");
    // A body that arrives in time, even in pieces, is read.
    let mut steady = TcpStream::connect(app.addr).await.unwrap();
    let head = create_head(&partner.key, STEADY_BODY.len(), "Connection: close\r\n");
    steady.write_all(head.as_bytes()).await.unwrap();
    for piece in STEADY_BODY.chunks(40) {
        steady.write_all(piece).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let answer = until_closed(&mut steady, Duration::from_secs(10)).await.expect("answered");
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    app.stop().await;
}

/// Shutting down closes an idle keep-alive connection at once and lets a request in
/// progress finish: its body, still arriving, is read and answered, and then the server
/// stops.
#[tokio::test]
async fn shutdown_closes_idle_connections_and_answers_the_request_in_progress() {
    let app = spawn_app_with(|c| {
        c.header_timeout_ms = 20_000;
        c.body_grace_ms = 20_000;
    })
    .await;
    let partner = app.partner("acme").await;
    let mut idle = TcpStream::connect(app.addr).await.unwrap();
    let answer = healthz_status(&mut idle).await.unwrap();
    assert_eq!(&answer, b"HTTP/1.1 200");
    let mut busy = TcpStream::connect(app.addr).await.unwrap();
    busy.write_all(create_head(&partner.key, STEADY_BODY.len(), "").as_bytes()).await.unwrap();
    let (first, rest) = STEADY_BODY.split_at(STEADY_BODY.len() / 2);
    busy.write_all(first).await.unwrap();
    // The server has taken the head in and started on the body once it charged it.
    let reading = || async { (app.state.body_memory.held([127, 0, 0, 1].into()).1 > 0).then_some(()) };
    crate::helpers::poll(Duration::from_secs(10), reading).await.expect("the body is being read");
    let stopping = tokio::spawn(app.stop());
    assert!(until_closed(&mut idle, Duration::from_secs(5)).await.is_some(), "the idle connection is closed");
    assert!(!stopping.is_finished(), "a request is still in progress");
    busy.write_all(rest).await.unwrap();
    let answer = until_closed(&mut busy, Duration::from_secs(5)).await.expect("answered, then closed");
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    tokio::time::timeout(Duration::from_secs(5), stopping).await.expect("the server stops").unwrap();
}

/// A connection to the app from the loopback address `from` (all of 127/8 is local on
/// Linux), which the server sees as the client's address.
pub(crate) async fn connect_from(app: &TestApp, from: [u8; 4]) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(std::net::SocketAddr::from((from, 0))).unwrap();
    socket.connect(app.addr).await.unwrap()
}

/// A host holding half-sent heads on every connection it may open takes no other host's
/// slots: a second address is served meanwhile, and the hog's next connection is refused.
#[tokio::test]
async fn one_address_cannot_hold_every_connection_slot() {
    let app = spawn_app_with(|c| {
        c.max_connections = 100;
        c.max_connections_per_address = 20;
        c.header_timeout_ms = 20_000;
    })
    .await;
    let mut hog = Vec::new();
    for _ in 0..150 {
        let mut stream = connect_from(&app, [127, 0, 0, 1]).await;
        // A refused connection may already be closed: the write then fails, which is fine.
        let _ = stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: rehome\r\nX-Slow: ").await;
        hog.push(stream);
    }
    let mut other = connect_from(&app, [127, 0, 0, 2]).await;
    let answer = healthz_status(&mut other).await.expect("another address is answered");
    assert_eq!(&answer, b"HTTP/1.1 200", "another address is served while the hog holds its slots");
    let mut more = connect_from(&app, [127, 0, 0, 1]).await;
    let answer = until_closed(&mut more, Duration::from_secs(10)).await.expect("answered and closed");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("retry-after: 1") && answer.contains(r#""code":"server_busy""#), "{answer}");
    drop(hog);
    app.stop().await;
}

/// Ten neighbouring addresses (one /24) holding half-sent heads on every connection each
/// may open take at most their network's ceiling together: a host of another network is
/// served meanwhile, and an eleventh neighbour is refused.
#[tokio::test]
async fn neighbouring_addresses_together_hold_at_most_their_networks_ceiling() {
    let app = spawn_app_with(|c| {
        c.max_connections = 64;
        c.max_connections_per_address = 16;
        c.max_connections_per_network = 24;
        c.header_timeout_ms = 20_000;
    })
    .await;
    let mut hog = Vec::new();
    for host in 2..12u8 {
        for _ in 0..16 {
            let mut stream = connect_from(&app, [127, 0, 0, host]).await;
            let _ = stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: rehome\r\nX-Slow: ").await;
            hog.push(stream);
        }
    }
    // Of 160 half-sent heads from the /24, 24 hold a slot; the other 136 were refused.
    let mut refused = 0;
    for stream in &mut hog {
        let mut first = [0u8; 12];
        if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_millis(200), stream.read_exact(&mut first)).await {
            refused += usize::from(&first == b"HTTP/1.1 503");
        }
    }
    assert_eq!(refused, 160 - 24, "the network holds 24 connections");
    let mut other = connect_from(&app, [127, 0, 1, 1]).await;
    let answer = healthz_status(&mut other).await.expect("another network is answered");
    assert_eq!(&answer, b"HTTP/1.1 200", "another network is served while the neighbours hold theirs");
    let mut more = connect_from(&app, [127, 0, 0, 12]).await;
    let answer = until_closed(&mut more, Duration::from_secs(10)).await.expect("answered and closed");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    drop(hog);
    app.stop().await;
}

/// Connections that arrive together from one address are counted one by one as they are
/// accepted: of `N + 50` at once, exactly `N` are served and the rest refused.
#[tokio::test]
async fn a_burst_from_one_address_gets_at_most_its_ceiling() {
    const CEILING: usize = 30;
    let app = spawn_app_with(|c| {
        c.max_connections_per_address = CEILING;
        c.header_timeout_ms = 20_000;
    })
    .await;
    let connects = (0..CEILING + 50).map(|_| connect_from(&app, [127, 0, 0, 3]));
    let streams = futures_util::future::join_all(connects).await;
    // The accepted connections stay open (nothing was sent: the head's timeout is long);
    // the refused ones are answered 503 and closed at once.
    let outcomes = streams.into_iter().map(|mut stream| async move {
        let mut first = [0u8; 12];
        match tokio::time::timeout(Duration::from_secs(2), stream.read_exact(&mut first)).await {
            Ok(Ok(_)) => first.to_vec(),
            // Nothing yet: an accepted connection is served when it asks.
            Err(_) => healthz_status(&mut stream).await.map(|s| s.to_vec()).unwrap_or_default(),
            Ok(Err(_)) => Vec::new(),
        }
    });
    let outcomes = futures_util::future::join_all(outcomes).await;
    let served = outcomes.iter().filter(|o| o.as_slice() == b"HTTP/1.1 200").count();
    let refused = outcomes.iter().filter(|o| o.as_slice() == b"HTTP/1.1 503").count();
    assert_eq!((served, refused), (CEILING, 50), "{outcomes:?}");
    app.stop().await;
}

/// Sends `head` (a whole request head) from `from` and reads the answer's status line.
async fn status_from(app: &TestApp, from: [u8; 4], head: &str) -> String {
    let mut stream = connect_from(app, from).await;
    stream.write_all(head.as_bytes()).await.unwrap();
    let answer = until_closed(&mut stream, Duration::from_secs(5)).await.unwrap_or_default();
    answer.lines().next().unwrap_or_default().to_owned()
}

/// Ten addresses of ten networks, each within its own ceilings, hold half-sent heads on
/// every open slot: the reserve still serves a client with a valid API key and one with a
/// signed-in dashboard session, answers an anonymous one 503 and closes its connection,
/// and lets go of the half-sent heads that reached it after its short head timeout.
#[tokio::test]
async fn the_reserve_serves_known_clients_while_many_networks_hold_every_open_slot() {
    let app = spawn_app_with(|c| {
        c.max_connections = 48;
        c.reserved_connections = Some(8);
        c.max_connections_per_address = 5;
        c.header_timeout_ms = 30_000;
    })
    .await;
    let partner = app.partner("acme").await;
    crate::web::set_password(&app, partner.user_id).await;
    let browser = crate::web::Browser::signed_in(&app, "ada@acme.example").await;
    let session = browser.session().expect("a session");
    let mut hog = Vec::new();
    for network in 10..20u8 {
        for _ in 0..4 {
            let mut stream = connect_from(&app, [127, 0, network, 1]).await;
            let _ = stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: rehome\r\nX-Slow: ").await;
            hog.push(stream);
        }
    }
    // 40 open slots are held; an eleventh network's half-sent heads land in the reserve and
    // are let go after its head timeout (2 s), not the server's 30 s.
    let mut late = Vec::new();
    for _ in 0..4 {
        let mut stream = connect_from(&app, [127, 0, 20, 1]).await;
        let _ = stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: rehome\r\nX-Slow: ").await;
        late.push(stream);
    }
    let started = std::time::Instant::now();
    for stream in &mut late {
        until_closed(stream, Duration::from_secs(10)).await.expect("a reserved half-sent head is let go");
    }
    assert!(started.elapsed() < Duration::from_secs(8), "let go after {:?}", started.elapsed());
    let keyed = format!("GET /v1/listings HTTP/1.1\r\nHost: rehome\r\nAuthorization: Bearer {}\r\n\r\n", partner.key);
    assert_eq!(status_from(&app, [127, 0, 30, 1], &keyed).await, "HTTP/1.1 200 OK", "a valid key is served");
    let signed_in = format!("GET /dashboard HTTP/1.1\r\nHost: rehome\r\nCookie: rehome_session={session}\r\n\r\n");
    assert_eq!(status_from(&app, [127, 0, 31, 1], &signed_in).await, "HTTP/1.1 200 OK", "a session is served");
    let anonymous = "GET /healthz HTTP/1.1\r\nHost: rehome\r\n\r\n";
    assert_eq!(status_from(&app, [127, 0, 32, 1], anonymous).await, "HTTP/1.1 503 Service Unavailable");
    let wrong_key = "GET /v1/listings HTTP/1.1\r\nHost: rehome\r\nAuthorization: Bearer rh_live_wrong\r\n\r\n";
    assert_eq!(status_from(&app, [127, 0, 33, 1], wrong_key).await, "HTTP/1.1 503 Service Unavailable");
    // Every open slot is still held: the hog's connections were never touched.
    drop(hog);
    app.stop().await;
}
