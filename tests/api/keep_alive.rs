//! Keep-alive after an early refusal (decisions 15.6): when a request is refused before its
//! body is read (401, 403, 429, 413) and the body arrives after the head, the connection
//! still carries the client's next request, or the answer says `Connection: close`.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::{spawn_app_with, TestApp};

const BODY: &[u8] =
    br#"{"title": "Steady sofa", "price_gbp": 120, "condition": "fair", "category": "Armchairs", "faults": ["None"]}"#;

fn head(key: &str, length: usize) -> String {
    format!(
        "POST /v1/listings HTTP/1.1\r\nHost: rehome\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    )
}

/// Reads one answer (head and a `Content-Length` body) from `stream`: its head.
async fn answer(stream: &mut TcpStream) -> String {
    let mut received = Vec::new();
    let mut byte = [0u8; 1];
    while !received.ends_with(b"\r\n\r\n") {
        let n =
            tokio::time::timeout(Duration::from_secs(10), stream.read(&mut byte)).await.expect("an answer").unwrap();
        assert_eq!(n, 1, "the connection closed mid-answer: {}", String::from_utf8_lossy(&received));
        received.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&received).to_ascii_lowercase();
    let length: usize =
        head.lines().find_map(|l| l.strip_prefix("content-length:")).map_or(0, |v| v.trim().parse().unwrap());
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).await.unwrap();
    head
}

/// Sends `head`, waits, sends `body`, reads the answer; then asks for `/healthz` on the
/// same connection: (first answer's head, the second's status line or why there is none).
async fn refused_then_next(app: &TestApp, head: &str, body: &[u8]) -> (String, Result<String, String>) {
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stream.write_all(body).await.unwrap();
    let first = answer(&mut stream).await;
    let second = async {
        stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: rehome\r\n\r\n").await.map_err(|e| e.to_string())?;
        let mut status = [0u8; 12];
        stream.read_exact(&mut status).await.map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(&status).into_owned())
    }
    .await;
    (first, second)
}

#[tokio::test]
async fn an_early_401_403_or_429_leaves_the_connection_usable() {
    let app = spawn_app_with(|_| {}).await;
    let partner = app.partner("acme").await;
    let reader = app.key(partner.user_id, "read", None, None).await;
    let once_a_minute = app.key(partner.user_id, "read,write", Some(1), None).await;
    // 401: a key nobody has.
    let (first, second) = refused_then_next(&app, &head("rh_live_unknown", BODY.len()), BODY).await;
    assert!(first.starts_with("http/1.1 401"), "{first}");
    assert_eq!(second.as_deref(), Ok("HTTP/1.1 200"), "{first}");
    // 403: a read-only key writing.
    let (first, second) = refused_then_next(&app, &head(&reader, BODY.len()), BODY).await;
    assert!(first.starts_with("http/1.1 403"), "{first}");
    assert_eq!(second.as_deref(), Ok("HTTP/1.1 200"), "{first}");
    // 429: the key's minute is spent (one request a minute).
    let spent = app.get("/v1/listings", &once_a_minute).await;
    assert_eq!(spent.status(), 200);
    let (first, second) = refused_then_next(&app, &head(&once_a_minute, BODY.len()), BODY).await;
    assert!(first.starts_with("http/1.1 429"), "{first}");
    assert_eq!(second.as_deref(), Ok("HTTP/1.1 200"), "{first}");
}

#[tokio::test]
async fn an_early_refusal_of_a_large_body_says_connection_close() {
    let app = spawn_app_with(|config| config.max_body_bytes = 64 * 1024).await;
    let partner = app.partner("acme").await;
    // 413 on the announced length: the megabyte is never read, and the answer says so.
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    stream.write_all(head(&partner.key, 1024 * 1024).as_bytes()).await.unwrap();
    let first = answer(&mut stream).await;
    assert!(first.starts_with("http/1.1 413"), "{first}");
    assert!(first.contains("connection: close"), "{first}");
    // 401 with a body larger than what is drained: closed, and said.
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    stream.write_all(head("rh_live_unknown", 200 * 1024).as_bytes()).await.unwrap();
    let first = answer(&mut stream).await;
    assert!(first.starts_with("http/1.1 401"), "{first}");
    assert!(first.contains("connection: close"), "{first}");
    // A short body that never comes: after the wait, closed and said.
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    stream.write_all(head("rh_live_unknown", 100).as_bytes()).await.unwrap();
    let first = answer(&mut stream).await;
    assert!(first.starts_with("http/1.1 401") && first.contains("connection: close"), "{first}");
}
