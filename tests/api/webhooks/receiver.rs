//! Real local webhook receivers: an axum server that records every request and answers as
//! told, and a raw TCP one that never answers and times how long the sender waits.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{to_bytes, Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// How the receiver answers one request.
#[derive(Debug, Clone)]
pub enum Reply {
    Status(u16),
    /// Waits, then answers with the status.
    Slow(Duration, u16),
    /// A redirect with a `Location` on this same receiver.
    Redirect(u16, &'static str),
    /// The status with this body and `Content-Type`.
    Body(u16, &'static str, Bytes),
}

/// One request as it arrived.
#[derive(Debug, Clone)]
pub struct Hit {
    pub at: Instant,
    pub method: String,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Hit {
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    pub fn event_id(&self) -> String {
        let body: serde_json::Value = serde_json::from_slice(&self.body).expect("JSON body");
        body["id"].as_str().expect("id").to_owned()
    }
}

#[derive(Default)]
struct Recorder {
    hits: Mutex<Vec<Hit>>,
    /// Requests still to be counted without being kept, and those so counted.
    to_count: AtomicUsize,
    counted: AtomicUsize,
    plan: Mutex<VecDeque<Reply>>,
    otherwise: Mutex<Option<Reply>>,
}

/// Records requests; answers each with the next planned reply, then with the default (200).
pub struct Receiver {
    pub addr: SocketAddr,
    recorder: Arc<Recorder>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    pub async fn start() -> Self {
        Self::on(TcpListener::bind("127.0.0.1:0").await.unwrap()).await
    }

    /// A receiver on a given port (one that refused connections until now).
    pub async fn start_on(addr: SocketAddr) -> Self {
        Self::on(TcpListener::bind(addr).await.unwrap()).await
    }

    async fn on(listener: TcpListener) -> Self {
        let addr = listener.local_addr().unwrap();
        let recorder = Arc::new(Recorder::default());
        let app = Router::new().fallback(record).with_state(recorder.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, recorder, task }
    }

    /// The URL partners would configure: a long unguessable path on this receiver.
    pub fn url(&self) -> String {
        format!("http://{}/hooks/rehome-3f9a1c", self.addr)
    }

    pub fn plan(&self, replies: impl IntoIterator<Item = Reply>) -> &Self {
        self.recorder.plan.lock().unwrap().extend(replies);
        self
    }

    pub fn otherwise(&self, reply: Reply) -> &Self {
        *self.recorder.otherwise.lock().unwrap() = Some(reply);
        self
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.recorder.hits.lock().unwrap().clone()
    }

    /// Counts the next `n` requests without keeping them: a benchmark's million would hold
    /// gigabytes of headers and bodies in the process whose memory is being measured.
    /// [`Receiver::count`] includes them; [`Receiver::hits`] does not.
    pub fn count_only(&self, n: usize) -> &Self {
        self.recorder.to_count.store(n, Ordering::SeqCst);
        self
    }

    /// How many requests arrived, without copying them (a benchmark's million).
    pub fn count(&self) -> usize {
        self.recorder.counted.load(Ordering::SeqCst) + self.recorder.hits.lock().unwrap().len()
    }

    /// Waits until `enough` holds for the hits so far; panics after `limit`.
    pub async fn wait_until(&self, limit: Duration, what: &str, enough: impl Fn(&[Hit]) -> bool) -> Vec<Hit> {
        match crate::helpers::poll(limit, || async { Some(self.hits()).filter(|hits| enough(hits)) }).await {
            Some(hits) => hits,
            None => panic!("timed out waiting for {what}; hits: {}", self.hits().len()),
        }
    }

    pub async fn wait_for_hits(&self, n: usize, limit: Duration) -> Vec<Hit> {
        self.wait_until(limit, &format!("{n} hits"), |hits| hits.len() >= n).await
    }
}

async fn record(State(recorder): State<Arc<Recorder>>, request: Request) -> Response {
    let at = Instant::now();
    let (parts, body) = request.into_parts();
    let body = to_bytes(body, 1 << 20).await.unwrap_or_default();
    if recorder.to_count.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
        recorder.counted.fetch_add(1, Ordering::SeqCst);
        return (StatusCode::OK, "ok").into_response();
    }
    recorder.hits.lock().unwrap().push(Hit {
        at,
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        headers: parts.headers,
        body,
    });
    let planned = recorder.plan.lock().unwrap().pop_front();
    let reply = planned.or_else(|| recorder.otherwise.lock().unwrap().clone()).unwrap_or(Reply::Status(200));
    let status = |code: u16| StatusCode::from_u16(code).unwrap();
    match reply {
        Reply::Status(code) => (status(code), "ok").into_response(),
        Reply::Slow(wait, code) => {
            tokio::time::sleep(wait).await;
            (status(code), "late").into_response()
        }
        Reply::Redirect(code, location) => {
            Response::builder().status(status(code)).header("location", location).body(Body::empty()).unwrap()
        }
        Reply::Body(code, kind, bytes) => {
            Response::builder().status(status(code)).header("content-type", kind).body(Body::from(bytes)).unwrap()
        }
    }
}

/// A receiver that reads each request and never answers; it reports, per connection, how
/// long after the request arrived the sender closed the connection.
pub struct BlackHole {
    pub addr: SocketAddr,
    waits: tokio::sync::mpsc::UnboundedReceiver<Duration>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for BlackHole {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl BlackHole {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, waits) = tokio::sync::mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let tx = tx.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    let mut started = None;
                    loop {
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(_) => {
                                started.get_or_insert_with(Instant::now);
                            }
                        }
                    }
                    if let Some(started) = started {
                        let _ = tx.send(started.elapsed());
                    }
                    let _ = socket.shutdown().await;
                });
            }
        });
        Self { addr, waits, task }
    }

    pub fn url(&self) -> String {
        format!("http://{}/hooks/never-answers", self.addr)
    }

    /// How long the sender waited before hanging up, for the next connection that ends.
    pub async fn next_wait(&mut self, limit: Duration) -> Duration {
        tokio::time::timeout(limit, self.waits.recv()).await.expect("the sender never hung up").expect("open")
    }
}
