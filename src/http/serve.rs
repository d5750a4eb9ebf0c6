//! The listener: accepts connections under a ceiling and serves each over HTTP/1.1 with
//! timeouts, so that slow or idle clients cannot hold the server's connections and file
//! descriptors (a client sending half a header used to keep its connection forever).
//!
//! - **Headers**: a request's head must arrive within the header timeout; the same timer
//!   runs while a keep-alive connection waits for its next request, so an idle
//!   connection closes after it too. One watchdog per connection keeps that time rather
//!   than a timer armed and dropped around every request's head (hyper's
//!   `header_read_timeout`: a boxed sleep registered in the timer wheel and removed again
//!   per request): the connection notes when it last fell idle, and the watchdog wakes
//!   once per timeout. The watchdog and the shutdown signal have a waker of their own, so
//!   that the connection's reads and writes do not poll them.
//! - **Bodies**: after a grace period a body must keep arriving at a minimum average rate
//!   (a slow upload of a 10 MiB photo is legitimate; a trickle of a byte a second is not),
//!   and must have arrived in all within a deadline, however fast it keeps coming.
//! - **Connections**: past the ceiling a new connection is answered `503
//!   server_busy` at once and closed, rather than queued. One client address may hold
//!   only so many of them (IPv6: one /64, what one host is given), so a single host
//!   cannot take every slot, and the hosts of one network (an IPv4 /24) only so many
//!   together, so a handful of neighbouring addresses cannot either; the counts are taken
//!   on accept and given back on close.
//! - **A reserve for known clients**: the last few slots of the ceiling are kept for
//!   clients the application knows (a valid API key, a signed-in dashboard session), so
//!   that many networks holding half-sent heads cannot shut them out. A connection
//!   accepted into the reserve must send its head within [`RESERVE_HEAD_TIMEOUT`], and
//!   each of its requests is asked of [`Vouch`] first: a request it does not vouch for is
//!   answered `503 server_busy` and the connection closed, freeing the slot.
//! - **Shutdown**: the listener closes, idle connections close, requests in flight finish.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use futures_util::task::AtomicWaker;
use hyper::body::{Body as _, Frame, Incoming, SizeHint};
use hyper_util::rt::TokioIo;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;
use tokio::time::{Instant, Sleep};
use tower::ServiceExt;

use crate::http::body::memory::network_of;

/// The limits of every connection.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// For a request's head, and for an idle keep-alive connection's next request.
    pub header_timeout: Duration,
    /// Connections served at once; more are refused with 503.
    pub max_connections: usize,
    /// Connections one client address (an IPv6 /64) may hold at once; more are refused
    /// with 503. 0: no ceiling per address (behind a proxy every client has its address).
    pub max_connections_per_address: usize,
    /// Connections the hosts of one network (an IPv4 /24, an IPv6 /64) may hold at once
    /// together; more are refused with 503. 0: no ceiling per network.
    pub max_connections_per_network: usize,
    /// Of `max_connections`, the slots kept for requests [`Vouch`] vouches for: a
    /// connection takes one only when the others are all taken.
    pub reserved_connections: usize,
    /// Lowest average rate a body may arrive at, once the grace period is over.
    pub body_min_bytes_per_sec: u64,
    pub body_grace: Duration,
    /// The longest a body may take to arrive in all, however fast it keeps coming.
    pub body_deadline: Duration,
}

/// The error a body gives when it arrives too slowly; the edge answers it with 408.
#[derive(Debug, thiserror::Error)]
#[error("the request body arrived too slowly")]
pub struct BodyTooSlow;

/// What `serve` answers requests with: the application.
pub trait App:
    tower::Service<Request, Response = Response, Error = Infallible, Future: Send + 'static> + Clone + Send + Sync + 'static
{
}

impl<S> App for S where
    S: tower::Service<Request, Response = Response, Error = Infallible, Future: Send + 'static>
        + Clone
        + Send
        + Sync
        + 'static
{
}

/// How long a connection in the reserve may take over a request's head (or wait idle for
/// the next): a client the reserve is for sends its request at once.
pub const RESERVE_HEAD_TIMEOUT: Duration = Duration::from_secs(2);

/// Says whether a request (by its headers) comes from a client the reserved connections are for.
pub trait Vouch: Clone + Send + Sync + 'static {
    fn vouches(&self, headers: &HeaderMap, peer: IpAddr) -> impl Future<Output = bool> + Send;
}

/// Vouches for nobody: a listener without a reserve.
#[derive(Debug, Clone, Copy)]
pub struct Nobody;

impl Vouch for Nobody {
    async fn vouches(&self, _headers: &HeaderMap, _peer: IpAddr) -> bool {
        false
    }
}

/// Serves `app` on `listener` until `shutdown` completes, then stops accepting, lets
/// requests in flight finish and returns once every connection has closed. The reserved
/// connections serve only what `vouch` vouches for.
pub async fn serve(
    listener: TcpListener,
    app: impl App,
    vouch: impl Vouch,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let reserved = limits.reserved_connections.min(limits.max_connections);
    let open = Arc::new(Semaphore::new(limits.max_connections - reserved));
    let reserve = Arc::new(Semaphore::new(reserved));
    let per_address = PerAddress::new(limits.max_connections_per_address, address_key);
    let per_network = PerAddress::new(limits.max_connections_per_network, network_of);
    let (closing, closed) = watch::channel(false);
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was taken:
                    // pause rather than spin.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        while connections.try_join_next().is_some() {}
        // The address's and its network's counts first: a host or a network at its ceiling
        // takes none of the others' slots.
        let Some(address_slot) = per_address.take(peer.ip()) else {
            connections.spawn(refuse(stream));
            continue;
        };
        let Some(network_slot) = per_network.take(peer.ip()) else {
            connections.spawn(refuse(stream));
            continue;
        };
        // The open slots first; the reserve only when they are all taken.
        let (permit, reserved) = match open.clone().try_acquire_owned() {
            Ok(permit) => (permit, None),
            Err(_) => match reserve.clone().try_acquire_owned() {
                Ok(permit) => (permit, Some(vouch.clone())),
                Err(_) => {
                    connections.spawn(refuse(stream));
                    continue;
                }
            },
        };
        let (app, closed) = (app.clone(), closed.clone());
        connections.spawn(async move {
            serve_connection(stream, peer, app, reserved, limits, closed).await;
            drop((permit, address_slot, network_slot));
        });
    }
    drop(listener);
    let _ = closing.send(true);
    while connections.join_next().await.is_some() {}
}

/// Serves one connection; `reserved`: it holds a reserved slot, and serves only the
/// requests this vouches for.
async fn serve_connection<V: Vouch>(
    stream: TcpStream,
    peer: SocketAddr,
    app: impl App,
    reserved: Option<V>,
    limits: ConnectionLimits,
    mut closed: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let header_timeout = match reserved {
        Some(_) => limits.header_timeout.min(RESERVE_HEAD_TIMEOUT),
        None => limits.header_timeout,
    };
    let activity = Arc::new(Activity::new());
    let served = activity.clone();
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        // A request without a body (every GET) needs no rate watch over it.
        let mut lent = None;
        let mut request = request.map(|body| {
            if body.is_end_stream() {
                Body::empty()
            } else {
                let body = Lent::new(MinRate::new(body, limits));
                lent = Some(body.clone());
                Body::new(body)
            }
        });
        request.extensions_mut().insert(ConnectInfo(peer));
        served.busy();
        let (app, served, reserved) = (app.clone(), served.clone(), reserved.clone());
        async move {
            if let Some(vouch) = reserved {
                if !vouch.vouches(request.headers(), peer.ip()).await {
                    return Ok(unvouched(served));
                }
            }
            let response = app.oneshot(request).await.unwrap_or_else(|never| match never {});
            let response = match lent {
                Some(lent) => lent.settle(response).await,
                None => response,
            };
            Ok::<_, Infallible>(response.map(|body| Served { body, activity: served }))
        }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    tokio::pin!(connection);
    let head_timeout = header_watchdog(&activity, header_timeout);
    tokio::pin!(head_timeout);
    let shutdown = closing(&mut closed);
    tokio::pin!(shutdown);
    // The watchdogs are polled only when their own timer or signal woke the task, not on
    // every wake of the connection (each read and write: a `select!` polled the sleep and
    // the shutdown signal at every one of them).
    let watch = Arc::new(WatchWaker { woken: AtomicBool::new(true), task: AtomicWaker::new() });
    let watch_waker = Waker::from(watch.clone());
    let mut graceful = false;
    let ended = std::future::poll_fn(|cx| {
        // Registered before the check, so that a wake between the two is not lost.
        watch.task.register(cx.waker());
        if watch.woken.swap(false, Ordering::AcqRel) {
            let mut watching = Context::from_waker(&watch_waker);
            if head_timeout.as_mut().poll(&mut watching).is_ready() {
                return Poll::Ready(None);
            }
            if !graceful && shutdown.as_mut().poll(&mut watching).is_ready() {
                graceful = true;
                connection.as_mut().graceful_shutdown();
            }
        }
        connection.as_mut().poll(cx).map(Some)
    })
    .await;
    match ended {
        Some(result) => log_end(result),
        None => tracing::debug!("connection closed: no request head within the header timeout"),
    }
}

/// The connections open per client address. Taken and given back only here (the accept
/// loop takes, a connection's end gives back), under one lock held for a map lookup: no
/// two connections can both take an address's last slot.
struct PerAddress {
    limit: usize,
    /// What an address is counted as: itself (its /64 for IPv6), or its network.
    key: fn(IpAddr) -> IpAddr,
    open: Mutex<HashMap<IpAddr, usize>>,
}

impl PerAddress {
    /// A `limit` of 0 counts nothing: there is no ceiling per address.
    fn new(limit: usize, key: fn(IpAddr) -> IpAddr) -> Arc<Self> {
        Arc::new(Self { limit, key, open: Mutex::new(HashMap::new()) })
    }

    /// Counts a connection from `ip`, unless its address already holds the most it may.
    fn take(self: &Arc<Self>, ip: IpAddr) -> Option<AddressSlot> {
        if self.limit == 0 {
            return Some(AddressSlot(None));
        }
        let table = self;
        let key = (table.key)(ip);
        let mut open = table.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let count = open.entry(key).or_insert(0);
        if *count >= table.limit {
            return None;
        }
        *count += 1;
        Some(AddressSlot(Some((table.clone(), key))))
    }
}

/// One connection's place in its address's count, given back when dropped.
struct AddressSlot(Option<(Arc<PerAddress>, IpAddr)>);

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let Some((table, key)) = self.0.take() else {
            return;
        };
        let mut open = table.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(count) = open.get_mut(&key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&key);
            }
        }
    }
}

/// What connections are counted under: an IPv4 address (also when it reaches an IPv6
/// socket as `::ffff:a.b.c.d`), or an IPv6 address's /64. A host is normally given a whole
/// /64 and may use any address in it (privacy addresses change daily), so counting single
/// IPv6 addresses would let one host open its ceiling again and again.
fn address_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(prefix))
        }
        v4 => v4,
    }
}

/// The waker of a connection's watchdogs: notes that one of them is due a poll and wakes
/// the connection's task.
struct WatchWaker {
    woken: AtomicBool,
    task: AtomicWaker,
}

impl Wake for WatchWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.task.wake();
    }
}

/// Whether a connection is serving a request, or since when it has waited for the next.
struct Activity {
    opened: Instant,
    /// Microseconds after `opened` at which the connection last fell idle (opened, or a
    /// response finished), or [`Activity::BUSY`] while a request is being served.
    idle_since: AtomicU64,
}

impl Activity {
    const BUSY: u64 = u64::MAX;

    fn new() -> Self {
        Self { opened: Instant::now(), idle_since: AtomicU64::new(0) }
    }

    /// A request's head has arrived.
    fn busy(&self) {
        self.idle_since.store(Self::BUSY, Ordering::Relaxed);
    }

    /// Its response is done: the connection waits for the next head from now.
    fn idle(&self) {
        let micros = u64::try_from(self.opened.elapsed().as_micros()).unwrap_or(Self::BUSY - 1);
        self.idle_since.store(micros, Ordering::Relaxed);
    }

    /// When the wait for the next head runs out, or `None` while a request is served.
    fn head_due(&self, timeout: Duration) -> Option<Instant> {
        match self.idle_since.load(Ordering::Relaxed) {
            Self::BUSY => None,
            micros => Some(self.opened + Duration::from_micros(micros) + timeout),
        }
    }
}

/// Completes when the connection has waited `timeout` for a request's head: from when it
/// opened, or from its last response. It sleeps a timeout at a time; a request being
/// served (however long it takes: bodies have their own watch) only moves it on.
async fn header_watchdog(activity: &Activity, timeout: Duration) {
    let mut wake = activity.opened + timeout;
    loop {
        tokio::time::sleep_until(wake).await;
        let now = Instant::now();
        wake = match activity.head_due(timeout) {
            Some(due) if due <= now => return,
            Some(due) => due,
            None => now + timeout,
        };
    }
}

/// A response body that marks its connection idle once it is done with (written out, or
/// dropped with the connection).
struct Served {
    body: Body,
    activity: Arc<Activity>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.activity.idle();
    }
}

impl hyper::body::Body for Served {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Completes once the server starts shutting down (or can no longer say).
async fn closing(closed: &mut watch::Receiver<bool>) {
    loop {
        if *closed.borrow_and_update() {
            return;
        }
        if closed.changed().await.is_err() {
            return;
        }
    }
}

fn log_end(result: Result<(), hyper::Error>) {
    if let Err(e) = result {
        // Timeouts and clients that hang up are routine; nothing to alarm anyone with.
        tracing::debug!(error = %e, "connection ended");
    }
}

/// The answer to a connection over the ceiling.
const BUSY_BODY: &str =
    r#"{"code":"server_busy","message":"The server is at its connection limit; retry in a moment."}"#;

/// The answer to a request on a reserved connection that the reserve is not for: `503
/// server_busy`, and the connection closes (its body, if any, unread).
fn unvouched(activity: Arc<Activity>) -> hyper::Response<Served> {
    let mut response = Response::new(Body::from(BUSY_BODY));
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    response.map(|body| Served { body, activity })
}

/// Answers a connection over the ceiling and closes it.
async fn refuse(mut stream: TcpStream) {
    const BODY: &str = BUSY_BODY;
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         retry-after: 1\r\nconnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    let written = tokio::time::timeout(Duration::from_secs(1), stream.write_all(answer.as_bytes())).await;
    if written.is_ok() {
        let _ = stream.shutdown().await;
    }
}

/// Most of a request body left unread by its answer (an early 401, 403, 413 or 429) that is
/// read and thrown away so that the connection can carry the client's next request.
const DRAIN_BYTES: u64 = 64 * 1024;
/// How long the rest of a body may take to arrive before the connection is closed instead.
const DRAIN_WAIT: Duration = Duration::from_secs(2);

/// A request body lent to the app (decisions 15.6): what the app leaves unread is still here
/// when it answers. [`Lent::settle`] then reads a short rest and throws it away, so the
/// connection stays usable, or says `Connection: close` on the answer, so the client knows
/// to open another (hyper closes a connection whose request body was not read to its end).
#[derive(Clone)]
struct Lent(Arc<Mutex<LentBody>>);

struct LentBody {
    body: MinRate,
    ended: bool,
    received: u64,
    declared: Option<u64>,
}

impl Lent {
    fn new(body: MinRate) -> Self {
        let declared = body.inner.size_hint().exact();
        Self(Arc::new(Mutex::new(LentBody { body, ended: false, received: 0, declared })))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LentBody> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The answer, once the body is read to its end or the answer says `Connection: close`.
    async fn settle(self, mut response: Response) -> Response {
        let short = {
            let lent = self.lock();
            if lent.ended || lent.body.inner.is_end_stream() {
                return response;
            }
            lent.declared.is_none_or(|declared| declared.saturating_sub(lent.received) <= DRAIN_BYTES)
        };
        if short && tokio::time::timeout(DRAIN_WAIT, self.drain()).await.unwrap_or(false) {
            return response;
        }
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        response
    }

    /// Reads the rest, at most [`DRAIN_BYTES`] more, throwing it away; true when it ended.
    async fn drain(&self) -> bool {
        let start = self.lock().received;
        let mut body = self.clone();
        loop {
            match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
                None => return true,
                Some(Err(_)) => return false,
                Some(Ok(_)) if self.lock().received - start > DRAIN_BYTES => return false,
                Some(Ok(_)) => {}
            }
        }
    }
}

impl hyper::body::Body for Lent {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let mut lent = self.lock();
        let polled = Pin::new(&mut lent.body).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => lent.ended = true,
            Poll::Ready(Some(Ok(frame))) => {
                let n = frame.data_ref().map_or(0, |d| d.len() as u64);
                lent.received += n;
            }
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        let lent = self.lock();
        lent.ended || lent.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.lock().body.size_hint()
    }
}

/// A request body that fails with [`BodyTooSlow`] when, past the grace period, less has
/// arrived than the minimum rate asks for by now.
struct MinRate {
    inner: Incoming,
    started: Instant,
    received: u64,
    limits: ConnectionLimits,
    /// Armed the first time the body makes the reader wait: most requests (every GET)
    /// never do, and need no timer.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl MinRate {
    fn new(inner: Incoming, limits: ConnectionLimits) -> Self {
        Self { inner, started: Instant::now(), received: 0, limits, deadline: None }
    }

    /// When the body will have arrived too slowly unless more comes: the grace period plus
    /// the time the bytes so far would take at the minimum rate, and never later than the
    /// whole body's deadline.
    fn next_deadline(&self) -> Instant {
        let rate = self.limits.body_min_bytes_per_sec.max(1);
        let by_rate =
            self.started + self.limits.body_grace + Duration::from_secs_f64(self.received as f64 / rate as f64);
        by_rate.min(self.started + self.limits.body_deadline)
    }
}

impl hyper::body::Body for MinRate {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    self.received += data.len() as u64;
                    let deadline = self.next_deadline();
                    if let Some(armed) = self.deadline.as_mut() {
                        armed.as_mut().reset(deadline);
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                let deadline = self.next_deadline();
                let armed = self.deadline.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                match armed.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(BodyTooSlow.into()))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUT: Duration = Duration::from_millis(300);
    const A_MOMENT: Duration = Duration::from_millis(1);

    fn watch(activity: &Arc<Activity>) -> tokio::task::JoinHandle<()> {
        let activity = activity.clone();
        tokio::spawn(async move { header_watchdog(&activity, TIMEOUT).await })
    }

    #[test]
    fn connections_are_counted_per_ipv4_address_and_per_ipv6_slash_64() {
        let key = |text: &str| address_key(text.parse().unwrap()).to_string();
        assert_eq!(key("203.0.113.7"), "203.0.113.7");
        assert_eq!(key("::ffff:203.0.113.7"), "203.0.113.7");
        assert_eq!(key("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), "2001:db8:1:2::");
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff::9"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
    }

    #[test]
    fn an_address_holds_at_most_its_ceiling_and_closing_gives_a_slot_back() {
        let table = PerAddress::new(2, address_key);
        let (a, b): (IpAddr, IpAddr) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        let first = table.take(a).unwrap();
        let _second = table.take(a).unwrap();
        assert!(table.take(a).is_none(), "the third from one address is refused");
        assert!(table.take(b).is_some(), "another address is not");
        drop(first);
        assert!(table.take(a).is_some(), "a closed connection's slot is given back");
        let unlimited = PerAddress::new(0, address_key);
        assert!((0..10_000).all(|_| unlimited.take(a).is_some()));
        // Counted by network, two neighbours share the ceiling.
        let networks = PerAddress::new(2, network_of);
        let _held = (networks.take(a).unwrap(), networks.take(b).unwrap());
        assert!(networks.take("192.0.2.200".parse().unwrap()).is_none(), "the same /24");
        assert!(networks.take("198.51.100.1".parse().unwrap()).is_some(), "another /24");
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_without_a_request_head_is_let_go_after_the_timeout() {
        let activity = Arc::new(Activity::new());
        let watchdog = watch(&activity);
        tokio::time::sleep(TIMEOUT - A_MOMENT).await;
        assert!(!watchdog.is_finished());
        tokio::time::sleep(A_MOMENT * 2).await;
        assert!(watchdog.is_finished());
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_however_long_holds_the_connection_and_the_wait_restarts_after_it() {
        let activity = Arc::new(Activity::new());
        let watchdog = watch(&activity);
        tokio::time::sleep(TIMEOUT / 2).await;
        activity.busy();
        tokio::time::sleep(TIMEOUT * 5).await;
        assert!(!watchdog.is_finished(), "a request being served is not cut off");
        activity.idle();
        tokio::time::sleep(TIMEOUT - A_MOMENT).await;
        assert!(!watchdog.is_finished(), "the wait counts from the response, not from the last wake");
        // A second request within the timeout moves the wait on again.
        activity.busy();
        activity.idle();
        tokio::time::sleep(TIMEOUT - A_MOMENT).await;
        assert!(!watchdog.is_finished());
        tokio::time::sleep(A_MOMENT * 2).await;
        assert!(watchdog.is_finished());
    }
}
