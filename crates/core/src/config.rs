//! Every setting of the server, from flags and `REHOME_*` environment variables,
//! validated at start.

pub mod smtp;

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;

use rehome_domain::wallet::Hold;

pub const DEFAULT_DATABASE_URL: &str = "sqlite://rehome.db";
pub const DEFAULT_ADDR: &str = "127.0.0.1:8080";
pub const DEFAULT_RATE_LIMIT: u32 = 60;
/// Storefront requests a minute per address (decisions 14.7).
pub const DEFAULT_MARKETPLACE_RATE_LIMIT: u32 = 600;
pub const DEFAULT_KEY_CACHE_MS: u64 = 1000;
/// A 10 MiB image is 13,981,016 characters of base64; leave room for the JSON around it.
pub const DEFAULT_MAX_BODY_BYTES: usize = 15 * 1024 * 1024;
pub const DEFAULT_HEADER_TIMEOUT_MS: u64 = 15_000;
pub const DEFAULT_MAX_CONNECTIONS: usize = 2_048;
pub const DEFAULT_BODY_MIN_RATE: u64 = 1_024;
pub const DEFAULT_BODY_GRACE_MS: u64 = 10_000;
/// An eighth of the connection ceiling: a host never holds more than that.
pub const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS: usize = 256;
/// A quarter of the connection ceiling for one network (an IPv4 /24): several hosts of one
/// network together never hold more than that.
pub const DEFAULT_MAX_CONNECTIONS_PER_NETWORK: usize = 512;
/// Eight bodies of up to 15 MiB: 120 MiB at most held by large bodies.
pub const DEFAULT_LARGE_BODIES: usize = 8;
/// Request bodies held at once, all clients together.
pub const DEFAULT_BODY_MEMORY_MB: u64 = 256;
/// Request bodies held at once by one client network (an IPv4 /24, an IPv6 /64): four
/// bodies of the largest size.
pub const DEFAULT_BODY_MEMORY_PER_NETWORK_MB: u64 = 64;
/// Request bodies held at once by one API key, all its networks together: the same as one
/// network, so that a key spread over many networks holds no more than one network may.
pub const DEFAULT_BODY_MEMORY_PER_KEY_MB: u64 = 64;
/// The longest a request body may take to arrive, whatever its rate.
pub const DEFAULT_BODY_DEADLINE_SECS: u64 = 120;
/// A 40-megapixel RGBA picture decodes to 160 MB: one such beside a few phone photos.
pub const DEFAULT_IMAGE_DECODE_MEMORY_MB: u64 = 256;
pub const DEFAULT_WEBHOOK_TIMEOUT_MS: u64 = 5_000;
pub const DEFAULT_WEBHOOK_RETRY_BASE_MS: u64 = 30_000;
pub const DEFAULT_WEBHOOK_RETRY_WINDOW_S: u64 = 24 * 60 * 60;
pub const DEFAULT_WEBHOOK_CONCURRENCY: usize = 64;
pub const DEFAULT_WEBHOOK_CONCURRENCY_PER_ENDPOINT: usize = 8;
pub const DEFAULT_WEBHOOK_POLL_MS: u64 = 1_000;
pub const DEFAULT_PHOTO_POLL_MS: u64 = 1_000;
pub const DEFAULT_IMAGE_IMPORT_TIMEOUT_MS: u64 = 30_000;
pub const DEFAULT_IMAGE_IMPORT_CONNECT_TIMEOUT_MS: u64 = 5_000;
pub const DEFAULT_IMAGE_IMPORT_ATTEMPTS: u32 = 3;
pub const DEFAULT_IMAGE_IMPORT_RETRY_BASE_MS: u64 = 10_000;
pub const DEFAULT_S3_REGION: &str = "us-east-1";
pub const DEFAULT_MAIL_POLL_MS: u64 = 1_000;
pub const DEFAULT_REMITTANCE_POLL_MS: u64 = 60_000;
pub const DEFAULT_MAIL_RETRY_BASE_MS: u64 = 30_000;
pub const DEFAULT_IDEMPOTENCY_TTL_S: u64 = 24 * 60 * 60;
/// More than a key sends in a day at the default rate limit (86,400).
pub const DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY: u64 = 100_000;
pub const DEFAULT_SIGNIN_LOCK_SECONDS: u64 = 15 * 60;
pub const DEFAULT_SIGNIN_ADDRESS_LIMIT: u32 = 30;
pub const DEFAULT_RETENTION_INTERVAL_S: u64 = 60;
pub const DEFAULT_RETENTION_BATCH: u32 = 1_000;
pub const DEFAULT_RETENTION_PAUSE_MS: u64 = 10;
pub const DEFAULT_RETENTION_SIGN_IN_FAILURES_HOURS: u32 = 24;
pub const DEFAULT_RETENTION_SESSIONS_DAYS: u32 = 30;
pub const DEFAULT_RETENTION_INVITATIONS_DAYS: u32 = 30;
pub const DEFAULT_RETENTION_MAIL_DAYS: u32 = 30;
pub const DEFAULT_RETENTION_WEBHOOK_EVENTS_DAYS: u32 = 30;
/// A storefront buyer's details are kept 90 days after the order (docs/security.md).
pub const DEFAULT_RETENTION_BUYERS_DAYS: u32 = 90;

/// Settings of `rehome serve`.
#[derive(Debug, Clone, Args)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "REHOME_ADDR", default_value = DEFAULT_ADDR)]
    pub addr: SocketAddr,

    /// Base URL under which this server is reached (photo URLs); default `http://<addr>`.
    #[arg(long, env = "REHOME_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// Base URL of the consumer marketplace (listing `url`); default `<public_url>/marketplace`.
    #[arg(long, env = "REHOME_MARKETPLACE_URL")]
    pub marketplace_url: Option<String>,

    /// Directory of uploaded and imported photos.
    #[arg(long, env = "REHOME_MEDIA_DIR", default_value = "./media")]
    pub media_dir: PathBuf,

    /// Where photos are stored: `fs` (the media directory) or `s3` (an S3-compatible bucket).
    #[arg(long, env = "REHOME_MEDIA_STORE", default_value = "fs")]
    pub media_store: MediaStoreKind,

    /// Base URL under which photos are public (a bucket's or a CDN's): photo URLs become
    /// `<base>/<name>`; default `<public_url>/media`, served by this server.
    #[arg(long, env = "REHOME_MEDIA_PUBLIC_URL")]
    pub media_public_url: Option<String>,

    /// Bucket of the `s3` media store (required with it).
    #[arg(long, env = "REHOME_S3_BUCKET")]
    pub s3_bucket: Option<String>,

    /// Endpoint of an S3-compatible server (MinIO, R2…); default AWS. An `http://`
    /// endpoint is allowed because it is given explicitly.
    #[arg(long, env = "REHOME_S3_ENDPOINT")]
    pub s3_endpoint: Option<String>,

    /// Region of the bucket.
    #[arg(long, env = "REHOME_S3_REGION", default_value = DEFAULT_S3_REGION)]
    pub s3_region: String,

    /// Access key id of the `s3` media store; with neither key, the instance role is used.
    #[arg(long, env = "REHOME_S3_ACCESS_KEY_ID")]
    pub s3_access_key_id: Option<String>,

    /// Secret access key of the `s3` media store.
    #[arg(long, env = "REHOME_S3_SECRET_ACCESS_KEY", hide_env_values = true)]
    pub s3_secret_access_key: Option<Secret>,

    /// Key prefix of media objects in the bucket (`<prefix>/<name>`); none by default.
    #[arg(long, env = "REHOME_S3_PREFIX")]
    pub s3_prefix: Option<String>,

    /// Bearer token of the operator API under /ops/v1; the API is absent when unset.
    #[arg(long, env = "REHOME_OPS_TOKEN", hide_env_values = true)]
    pub ops_token: Option<Secret>,

    /// Base64 of the 32-byte data key that encrypts stored event bodies; wins over the key
    /// file. Give every server sharing a database the same key.
    #[arg(long, env = "REHOME_DATA_KEY", hide_env_values = true)]
    pub data_key: Option<Secret>,

    /// File of the data key (32 bytes) when REHOME_DATA_KEY is unset; created (mode 0600)
    /// on first start. Default `rehome.key` beside the SQLite database file.
    #[arg(long, env = "REHOME_DATA_KEY_FILE")]
    pub data_key_file: Option<PathBuf>,

    /// Let image imports and webhooks reach loopback and private addresses (local testing only).
    #[arg(long, env = "REHOME_ALLOW_PRIVATE_NETWORK")]
    pub allow_private_network: bool,

    /// Default requests per minute per API key (and per client address without a valid key).
    #[arg(long, env = "REHOME_RATE_LIMIT", default_value_t = DEFAULT_RATE_LIMIT)]
    pub rate_limit: u32,

    /// Storefront requests (`/marketplace`, `/robots.txt`) per minute per client address
    /// (decisions 14.7); over it a 429 page with `Retry-After`.
    #[arg(long, env = "REHOME_MARKETPLACE_RATE_LIMIT", default_value_t = DEFAULT_MARKETPLACE_RATE_LIMIT)]
    pub marketplace_rate_limit: u32,

    /// How long a verified key is trusted before it is read again (revocation delay), in ms.
    #[arg(long, env = "REHOME_KEY_CACHE_MS", default_value_t = DEFAULT_KEY_CACHE_MS)]
    pub key_cache_ms: u64,

    /// Largest request body accepted, in bytes.
    #[arg(long, env = "REHOME_MAX_BODY_BYTES", default_value_t = DEFAULT_MAX_BODY_BYTES)]
    pub max_body_bytes: usize,

    /// Time a client has to send a request's head, in ms; also how long an idle keep-alive
    /// connection is kept waiting for its next request.
    #[arg(long, env = "REHOME_HEADER_TIMEOUT_MS", default_value_t = DEFAULT_HEADER_TIMEOUT_MS)]
    pub header_timeout_ms: u64,

    /// Connections served at once; more are answered 503 `server_busy` and closed. Keep it
    /// under the process's file descriptor limit.
    #[arg(long, env = "REHOME_MAX_CONNECTIONS", default_value_t = DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: usize,

    /// Lowest average rate, in bytes a second, a request body must arrive at after the
    /// grace period (`REHOME_BODY_GRACE_MS`); slower answers 408 `request_timeout`.
    #[arg(long, env = "REHOME_BODY_MIN_RATE", default_value_t = DEFAULT_BODY_MIN_RATE)]
    pub body_min_rate: u64,

    /// Time a body may take before the minimum rate applies, in ms.
    #[arg(long, env = "REHOME_BODY_GRACE_MS", default_value_t = DEFAULT_BODY_GRACE_MS)]
    pub body_grace_ms: u64,

    /// Connections one client address (an IPv6 /64) may hold at once; more are answered
    /// 503 `server_busy` and closed. 0 for no ceiling per address: behind a reverse proxy
    /// every connection comes from the proxy's address.
    #[arg(long, env = "REHOME_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = DEFAULT_MAX_CONNECTIONS_PER_ADDRESS)]
    pub max_connections_per_address: usize,

    /// Connections the hosts of one network (an IPv4 /24; an IPv6 /64, as per address) may
    /// hold at once together; more are answered 503 `server_busy` and closed. 0 for no
    /// ceiling per network: behind a reverse proxy every connection comes from the proxy.
    #[arg(long, env = "REHOME_MAX_CONNECTIONS_PER_NETWORK", default_value_t = DEFAULT_MAX_CONNECTIONS_PER_NETWORK)]
    pub max_connections_per_network: usize,

    /// Of the connection ceiling, slots kept for clients with a valid API key or signed-in
    /// dashboard session: taken only when the others are all taken; there a request's head
    /// must come within 2 s, and a request without a valid key or session is answered 503
    /// `server_busy` and its connection closed. Less than `REHOME_MAX_CONNECTIONS`; by
    /// default an eighth of it (256 of 2048).
    #[arg(long, env = "REHOME_RESERVED_CONNECTIONS")]
    pub reserved_connections: Option<usize>,

    /// Request bodies over 1 MiB read and parsed at once; another waits up to 5 s for a
    /// place, then is answered 503 `server_busy`.
    #[arg(long, env = "REHOME_LARGE_BODIES", default_value_t = DEFAULT_LARGE_BODIES)]
    pub large_bodies: usize,

    /// Megabytes of request bodies held at once while they arrive, all clients together;
    /// a body that would go over is answered 503 `server_busy` at once.
    #[arg(long, env = "REHOME_BODY_MEMORY_MB", default_value_t = DEFAULT_BODY_MEMORY_MB)]
    pub body_memory_mb: u64,

    /// Megabytes of request bodies one client network (an IPv4 /24, an IPv6 /64) may hold
    /// at once; a body that would go over is answered 429 `rate_limited` at once.
    #[arg(long, env = "REHOME_BODY_MEMORY_PER_NETWORK_MB", default_value_t = DEFAULT_BODY_MEMORY_PER_NETWORK_MB)]
    pub body_memory_per_network_mb: u64,

    /// Megabytes of request bodies sent with one API key may hold at once, over all its
    /// networks; a body that would go over is answered 429 `rate_limited` at once.
    #[arg(long, env = "REHOME_BODY_MEMORY_PER_KEY_MB", default_value_t = DEFAULT_BODY_MEMORY_PER_KEY_MB)]
    pub body_memory_per_key_mb: u64,

    /// Seconds a request body may take to arrive in all, however fast it keeps coming;
    /// later answers 408 `request_timeout`.
    #[arg(long, env = "REHOME_BODY_DEADLINE_SECS", default_value_t = DEFAULT_BODY_DEADLINE_SECS)]
    pub body_deadline_secs: u64,

    /// Images decoded at once (uploads, imports, thumbnails); default the number of cores.
    #[arg(long, env = "REHOME_IMAGE_DECODES")]
    pub image_decodes: Option<usize>,

    /// Memory, in MiB, the image decodes in flight may hold between them (each is charged
    /// its estimate from the image's header); an upload waits up to 10 s for room, then is
    /// answered 503 `server_busy`.
    #[arg(long, env = "REHOME_IMAGE_DECODE_MEMORY_MB", default_value_t = DEFAULT_IMAGE_DECODE_MEMORY_MB)]
    pub image_decode_memory_mb: u64,

    /// Accept `http://` webhook URLs (local testing only); otherwise `https://` is required.
    #[arg(long, env = "REHOME_WEBHOOK_ALLOW_HTTP")]
    pub webhook_allow_http: bool,

    /// A webhook delivery that has not answered within this many ms is a failure (retried).
    #[arg(long, env = "REHOME_WEBHOOK_TIMEOUT_MS", default_value_t = DEFAULT_WEBHOOK_TIMEOUT_MS)]
    pub webhook_timeout_ms: u64,

    /// First gap between webhook attempts, in ms; each later gap doubles, up to 1 h.
    #[arg(long, env = "REHOME_WEBHOOK_RETRY_BASE_MS", default_value_t = DEFAULT_WEBHOOK_RETRY_BASE_MS)]
    pub webhook_retry_base_ms: u64,

    /// Seconds after an event's creation (or replay) during which failed deliveries are retried.
    #[arg(long, env = "REHOME_WEBHOOK_RETRY_WINDOW_S", default_value_t = DEFAULT_WEBHOOK_RETRY_WINDOW_S)]
    pub webhook_retry_window_s: u64,

    /// Webhook deliveries in flight at once, over all endpoints.
    #[arg(long, env = "REHOME_WEBHOOK_CONCURRENCY", default_value_t = DEFAULT_WEBHOOK_CONCURRENCY)]
    pub webhook_concurrency: usize,

    /// Webhook deliveries in flight at once to one partner's endpoint.
    #[arg(long, env = "REHOME_WEBHOOK_CONCURRENCY_PER_ENDPOINT", default_value_t = DEFAULT_WEBHOOK_CONCURRENCY_PER_ENDPOINT)]
    pub webhook_concurrency_per_endpoint: usize,

    /// Longest wait, in ms, before the webhook worker looks for events written by another
    /// process or left by a crashed one (events emitted here wake it at once).
    #[arg(long, env = "REHOME_WEBHOOK_POLL_MS", default_value_t = DEFAULT_WEBHOOK_POLL_MS)]
    pub webhook_poll_ms: u64,

    /// Leave thumbnails and image imports queued instead of working on them (a server that
    /// only serves, or a test of what a restart finishes).
    #[arg(long, env = "REHOME_PHOTO_JOBS_PAUSED")]
    pub photo_jobs_paused: bool,

    /// Longest wait, in ms, before the thumbnail and image import workers look for work
    /// queued by another process or left by a crashed one (work queued here wakes them at once).
    #[arg(long, env = "REHOME_PHOTO_POLL_MS", default_value_t = DEFAULT_PHOTO_POLL_MS)]
    pub photo_poll_ms: u64,

    /// Whole-request limit of one image import (connect, redirects and the full body), in ms.
    #[arg(long, env = "REHOME_IMAGE_IMPORT_TIMEOUT_MS", default_value_t = DEFAULT_IMAGE_IMPORT_TIMEOUT_MS)]
    pub image_import_timeout_ms: u64,

    /// Connection limit of one image import, in ms.
    #[arg(long, env = "REHOME_IMAGE_IMPORT_CONNECT_TIMEOUT_MS", default_value_t = DEFAULT_IMAGE_IMPORT_CONNECT_TIMEOUT_MS)]
    pub image_import_connect_timeout_ms: u64,

    /// Attempts at an image import that fails for a passing reason (timeout, connection,
    /// 5xx, 429) before it is reported failed.
    #[arg(long, env = "REHOME_IMAGE_IMPORT_ATTEMPTS", default_value_t = DEFAULT_IMAGE_IMPORT_ATTEMPTS)]
    pub image_import_attempts: u32,

    /// Gap before the second import attempt, in ms; each later gap is four times longer.
    #[arg(long, env = "REHOME_IMAGE_IMPORT_RETRY_BASE_MS", default_value_t = DEFAULT_IMAGE_IMPORT_RETRY_BASE_MS)]
    pub image_import_retry_base_ms: u64,

    /// SMTP server of outgoing mail (invitations, statements), e.g.
    /// `smtps://user:pass@mail.example:465` or `smtp://127.0.0.1:2525` (no TLS, local
    /// only); without it nothing is mailed and invitation links are only shown.
    #[arg(long, env = "REHOME_SMTP_URL", hide_env_values = true)]
    pub smtp_url: Option<Secret>,

    /// Sender of outgoing mail (`Rehome <noreply@rehome.example>`); required with an SMTP URL.
    #[arg(long, env = "REHOME_MAIL_FROM")]
    pub mail_from: Option<String>,

    /// Longest wait, in ms, before the mail worker looks for mail queued by another process,
    /// retries falling due or mail left by a crashed one (mail queued here wakes it at once).
    #[arg(long, env = "REHOME_MAIL_POLL_MS", default_value_t = DEFAULT_MAIL_POLL_MS)]
    pub mail_poll_ms: u64,

    /// Gap before the second attempt at a mail the SMTP server did not take, in ms; each
    /// later gap is twice the one before, up to an hour, for three days.
    #[arg(long, env = "REHOME_MAIL_RETRY_BASE_MS", default_value_t = DEFAULT_MAIL_RETRY_BASE_MS)]
    pub mail_retry_base_ms: u64,

    /// Sign-in lockout period in seconds: five failures for one account within it lock the
    /// account for as long (decisions 8.1: 15 minutes). Shorter only for tests.
    #[arg(long, env = "REHOME_SIGNIN_LOCK_SECONDS", default_value_t = DEFAULT_SIGNIN_LOCK_SECONDS, hide = true)]
    pub signin_lock_seconds: u64,

    /// Failed sign-ins from one client address, over any accounts, within the lockout
    /// period before that address is refused for the rest of it (against password spraying).
    #[arg(long, env = "REHOME_SIGNIN_ADDRESS_LIMIT", default_value_t = DEFAULT_SIGNIN_ADDRESS_LIMIT)]
    pub signin_address_limit: u32,

    /// Passwords hashed or verified at once (Argon2id, about 19 MiB and one core each); the
    /// rest wait up to 5 s, then are answered busy. 0: one per core.
    #[arg(long, env = "REHOME_PASSWORD_WORKERS", default_value_t = 0)]
    pub password_workers: usize,

    /// How long an `Idempotency-Key` and its kept answer last, in seconds (decisions 11.1:
    /// 24 hours). Shorter only for tests.
    #[arg(long, env = "REHOME_IDEMPOTENCY_TTL_S", default_value_t = DEFAULT_IDEMPOTENCY_TTL_S, hide = true)]
    pub idempotency_ttl_s: u64,

    /// Most `Idempotency-Key`s one API key keeps at once; past it the retention job deletes
    /// its oldest first (each run, so a key may go over by what it can send between two
    /// runs). The default is above what the default rate limit (60 a minute) lets a key
    /// send in 24 hours, so it only bounds keys given a higher rate. 1000 to 10000000.
    #[arg(long, env = "REHOME_IDEMPOTENCY_KEYS_PER_API_KEY", default_value_t = DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY)]
    pub idempotency_keys_per_api_key: u64,

    /// Hours after delivery before a sale's money is available to pay (decisions 10.2): the
    /// wallet entry is pending until then. 0 to 8784 (a year).
    #[arg(long, env = "REHOME_SETTLEMENT_HOLD_HOURS", default_value_t = Hold::DEFAULT_HOURS)]
    pub settlement_hold_hours: u32,

    /// How often, in ms, each node checks whether the monthly remittance run is due (and
    /// whether a node that claimed it died): the run itself is due at 00:00 UTC on the 1st.
    #[arg(long, env = "REHOME_REMITTANCE_POLL_MS", default_value_t = DEFAULT_REMITTANCE_POLL_MS, hide = true)]
    pub remittance_poll_ms: u64,

    /// How often, in seconds, the retention job deletes what is past its window (one node
    /// at a time, by lease). 1 to 86400.
    #[arg(long, env = "REHOME_RETENTION_INTERVAL_S", default_value_t = DEFAULT_RETENTION_INTERVAL_S)]
    pub retention_interval_s: u64,

    /// Rows the retention job deletes per statement (each a short write). 1 to 100000.
    #[arg(long, env = "REHOME_RETENTION_BATCH", default_value_t = DEFAULT_RETENTION_BATCH)]
    pub retention_batch: u32,

    /// Pause, in ms, between two batches of the retention job, so requests' writes get the
    /// database between them. 0 to 10000.
    #[arg(long, env = "REHOME_RETENTION_PAUSE_MS", default_value_t = DEFAULT_RETENTION_PAUSE_MS)]
    pub retention_pause_ms: u64,

    /// Hours a failed sign-in is kept (at least the 15-minute lockout period, which counts
    /// them). 1 to 8784.
    #[arg(long, env = "REHOME_RETENTION_SIGN_IN_FAILURES_HOURS", default_value_t = DEFAULT_RETENTION_SIGN_IN_FAILURES_HOURS)]
    pub retention_sign_in_failures_hours: u32,

    /// Days a session is kept after it ended or expired. 0 to 3650.
    #[arg(long, env = "REHOME_RETENTION_SESSIONS_DAYS", default_value_t = DEFAULT_RETENTION_SESSIONS_DAYS)]
    pub retention_sessions_days: u32,

    /// Days an invitation is kept after it was used, replaced or expired. 0 to 3650.
    #[arg(long, env = "REHOME_RETENTION_INVITATIONS_DAYS", default_value_t = DEFAULT_RETENTION_INVITATIONS_DAYS)]
    pub retention_invitations_days: u32,

    /// Days a mail is kept after it was sent or given up (its text is erased at once). 0 to
    /// 3650.
    #[arg(long, env = "REHOME_RETENTION_MAIL_DAYS", default_value_t = DEFAULT_RETENTION_MAIL_DAYS)]
    pub retention_mail_days: u32,

    /// Days a delivered webhook event (its delivery log entry and attempts) is kept after
    /// its delivery; pending and dead events are kept. 1 to 3650.
    #[arg(long, env = "REHOME_RETENTION_WEBHOOK_EVENTS_DAYS", default_value_t = DEFAULT_RETENTION_WEBHOOK_EVENTS_DAYS)]
    pub retention_webhook_events_days: u32,

    /// Days a storefront buyer's name, email, phone and postcode are kept after the order
    /// (docs/security.md: the order's delivery window, the right to cancel and to reject
    /// faulty goods, with room to spare); the order itself is kept. 1 to 3650.
    #[arg(long, env = "REHOME_RETENTION_BUYERS_DAYS", default_value_t = DEFAULT_RETENTION_BUYERS_DAYS)]
    pub retention_buyers_days: u32,

    /// How storefront buyers pay (decisions 14.4): `none` (the order is placed at once and
    /// the marketplace takes payment outside rehome) or `stripe` (Stripe Checkout; needs
    /// REHOME_STRIPE_SECRET_KEY and REHOME_STRIPE_WEBHOOK_SECRET).
    #[arg(long, env = "REHOME_PAYMENTS", default_value = "none")]
    pub payments: PaymentsKind,

    /// Stripe's secret API key (`sk_live_…`, `sk_test_…` or a restricted `rk_…` key allowed
    /// to write Checkout Sessions).
    #[arg(long, env = "REHOME_STRIPE_SECRET_KEY", hide_env_values = true)]
    pub stripe_secret_key: Option<Secret>,

    /// The signing secret (`whsec_…`) of the Stripe webhook endpoint that sends
    /// `checkout.session.*` events to `/payments/stripe/webhook`.
    #[arg(long, env = "REHOME_STRIPE_WEBHOOK_SECRET", hide_env_values = true)]
    pub stripe_webhook_secret: Option<Secret>,

    /// Stripe's API (testing against a stand-in only).
    #[arg(long, env = "REHOME_STRIPE_API_URL", default_value = "https://api.stripe.com")]
    pub stripe_api_url: String,

    /// Address of the metrics listener (`GET /metrics`, Prometheus text format), e.g.
    /// `127.0.0.1:9090`; none when unset. Keep it private: it is not authenticated.
    #[arg(long, env = "REHOME_METRICS_ADDR")]
    pub metrics_addr: Option<SocketAddr>,

    /// Log format: `text` or `json`.
    #[arg(long, env = "REHOME_LOG_FORMAT", default_value = "text")]
    pub log_format: LogFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// How storefront buyers pay (`REHOME_PAYMENTS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PaymentsKind {
    None,
    Stripe,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MediaStoreKind {
    Fs,
    S3,
}

/// A setting that must never reach a log: `Debug` prints `[redacted]`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self(value.to_owned())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// The defaults `rehome serve` starts with, read from the clap declarations above with
/// no argument and no environment: each default is written once, there, and tests that
/// build on `Config::default()` see exactly what a server started without settings does.
impl Default for Config {
    fn default() -> Self {
        use clap::{CommandFactory, FromArgMatches, Parser};

        #[derive(Parser)]
        struct Defaults {
            #[command(flatten)]
            config: Config,
        }
        let command = Defaults::command().mut_args(|arg| arg.env(None));
        let defaults = command
            .try_get_matches_from(["rehome"])
            .and_then(|matches| Defaults::from_arg_matches(&matches))
            .expect("every setting of `rehome serve` has a default that parses (config::tests)");
        defaults.config
    }
}

impl Config {
    /// Checks the settings and fills the URLs that default from the bound address.
    pub fn resolve(mut self, bound: SocketAddr) -> anyhow::Result<Self> {
        if self.rate_limit == 0 {
            bail!("REHOME_RATE_LIMIT must be at least 1");
        }
        if self.marketplace_rate_limit == 0 {
            bail!("REHOME_MARKETPLACE_RATE_LIMIT must be at least 1");
        }
        if self.max_body_bytes < 1024 {
            bail!("REHOME_MAX_BODY_BYTES must be at least 1024");
        }
        if self.ops_token.as_ref().is_some_and(|t| t.expose().len() < 16) {
            bail!("REHOME_OPS_TOKEN must be at least 16 characters");
        }
        within("REHOME_WEBHOOK_TIMEOUT_MS", self.webhook_timeout_ms, 100..=600_000)?;
        within("REHOME_WEBHOOK_POLL_MS", self.webhook_poll_ms, 10..=600_000)?;
        within("REHOME_WEBHOOK_RETRY_BASE_MS", self.webhook_retry_base_ms, 1..=3_600_000)?;
        within("REHOME_WEBHOOK_RETRY_WINDOW_S", self.webhook_retry_window_s, 1..=2_592_000)?;
        within("REHOME_WEBHOOK_CONCURRENCY", self.webhook_concurrency, 1..=10_000)?;
        within("REHOME_WEBHOOK_CONCURRENCY_PER_ENDPOINT", self.webhook_concurrency_per_endpoint, 1..=10_000)?;
        within("REHOME_PHOTO_POLL_MS", self.photo_poll_ms, 10..=600_000)?;
        within("REHOME_IMAGE_IMPORT_TIMEOUT_MS", self.image_import_timeout_ms, 100..=600_000)?;
        within("REHOME_IMAGE_IMPORT_CONNECT_TIMEOUT_MS", self.image_import_connect_timeout_ms, 100..=600_000)?;
        within("REHOME_IMAGE_IMPORT_ATTEMPTS", self.image_import_attempts, 1..=10)?;
        within("REHOME_IMAGE_IMPORT_RETRY_BASE_MS", self.image_import_retry_base_ms, 1..=3_600_000)?;
        within("REHOME_HEADER_TIMEOUT_MS", self.header_timeout_ms, 100..=600_000)?;
        within("REHOME_MAX_CONNECTIONS", self.max_connections, 1..=1_000_000)?;
        within("REHOME_BODY_MIN_RATE", self.body_min_rate, 1..=1_073_741_824)?;
        within("REHOME_BODY_GRACE_MS", self.body_grace_ms, 100..=3_600_000)?;
        self.check_edge()?;
        self.check_s3()?;
        self.check_mail()?;
        self.check_payments()?;
        within("REHOME_IDEMPOTENCY_TTL_S", self.idempotency_ttl_s, 1..=604_800)?;
        within("REHOME_IDEMPOTENCY_KEYS_PER_API_KEY", self.idempotency_keys_per_api_key, 1_000..=10_000_000)?;
        if Hold::hours(self.settlement_hold_hours).is_none() {
            bail!("REHOME_SETTLEMENT_HOLD_HOURS must be 0 to {}", Hold::MAX_HOURS);
        }
        within("REHOME_REMITTANCE_POLL_MS", self.remittance_poll_ms, 10..=3_600_000)?;
        within("REHOME_SIGNIN_LOCK_SECONDS", self.signin_lock_seconds, 1..=86_400)?;
        within("REHOME_SIGNIN_ADDRESS_LIMIT", self.signin_address_limit, 1..=u64::from(u32::MAX))?;
        self.check_retention()?;
        let public = base_url(self.public_url.take(), || format!("http://{bound}")).context("REHOME_PUBLIC_URL")?;
        let market = base_url(self.marketplace_url.take(), || format!("{public}/marketplace"))
            .context("REHOME_MARKETPLACE_URL")?;
        let media =
            base_url(self.media_public_url.take(), || format!("{public}/media")).context("REHOME_MEDIA_PUBLIC_URL")?;
        self.public_url = Some(public);
        self.marketplace_url = Some(market);
        self.media_public_url = Some(media);
        Ok(self)
    }

    /// Of the connection ceiling, the slots kept for clients with a valid key or session.
    pub fn reserved_connections(&self) -> usize {
        self.reserved_connections.unwrap_or(self.max_connections / 8).min(self.max_connections.saturating_sub(1))
    }

    /// The bounds of the edge beyond the connection limits above.
    fn check_edge(&self) -> anyhow::Result<()> {
        within("REHOME_MAX_CONNECTIONS_PER_ADDRESS (0: no ceiling)", self.max_connections_per_address, 0..=1_000_000)?;
        within("REHOME_MAX_CONNECTIONS_PER_NETWORK (0: no ceiling)", self.max_connections_per_network, 0..=1_000_000)?;
        if let Some(reserved) = self.reserved_connections.filter(|&n| n >= self.max_connections) {
            anyhow::bail!(
                "REHOME_RESERVED_CONNECTIONS must be less than REHOME_MAX_CONNECTIONS ({}), got {reserved}",
                self.max_connections
            );
        }
        within("REHOME_LARGE_BODIES", self.large_bodies, 1..=10_000)?;
        within("REHOME_BODY_MEMORY_MB", self.body_memory_mb, 1..=1_048_576)?;
        within("REHOME_BODY_MEMORY_PER_NETWORK_MB", self.body_memory_per_network_mb, 1..=1_048_576)?;
        within("REHOME_BODY_MEMORY_PER_KEY_MB", self.body_memory_per_key_mb, 1..=1_048_576)?;
        within("REHOME_BODY_DEADLINE_SECS", self.body_deadline_secs, 1..=86_400)?;
        if let Some(decodes) = self.image_decodes {
            within("REHOME_IMAGE_DECODES", decodes, 1..=1_024)?;
        }
        within("REHOME_IMAGE_DECODE_MEMORY_MB", self.image_decode_memory_mb, 16..=1_048_576)
    }

    /// Images decoded at once: `REHOME_IMAGE_DECODES`, or the number of cores.
    pub fn image_decodes(&self) -> usize {
        self.image_decodes.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, usize::from))
    }

    /// The settings of the `s3` media store, when it is chosen.
    fn check_s3(&mut self) -> anyhow::Result<()> {
        if self.media_store != MediaStoreKind::S3 {
            return Ok(());
        }
        if self.s3_bucket.as_deref().is_none_or(|b| b.trim().is_empty()) {
            bail!("REHOME_MEDIA_STORE=s3 needs REHOME_S3_BUCKET");
        }
        if let Some(endpoint) = self.s3_endpoint.take() {
            self.s3_endpoint = Some(base_url(Some(endpoint), String::new).context("REHOME_S3_ENDPOINT")?);
        }
        if self.s3_access_key_id.is_some() != self.s3_secret_access_key.is_some() {
            bail!(
                "REHOME_S3_ACCESS_KEY_ID and REHOME_S3_SECRET_ACCESS_KEY must be given together \
                 (or neither, for the instance role)"
            );
        }
        Ok(())
    }

    /// The retention job's interval, batches and windows.
    fn check_retention(&self) -> anyhow::Result<()> {
        within("REHOME_RETENTION_INTERVAL_S", self.retention_interval_s, 1..=86_400)?;
        within("REHOME_RETENTION_BATCH", self.retention_batch, 1..=100_000)?;
        within("REHOME_RETENTION_PAUSE_MS", self.retention_pause_ms, 0..=10_000)?;
        within("REHOME_RETENTION_SIGN_IN_FAILURES_HOURS", self.retention_sign_in_failures_hours, 1..=8_784)?;
        within("REHOME_RETENTION_SESSIONS_DAYS", self.retention_sessions_days, 0..=3_650)?;
        within("REHOME_RETENTION_INVITATIONS_DAYS", self.retention_invitations_days, 0..=3_650)?;
        within("REHOME_RETENTION_MAIL_DAYS", self.retention_mail_days, 0..=3_650)?;
        within("REHOME_RETENTION_BUYERS_DAYS", self.retention_buyers_days, 1..=3_650)?;
        within("REHOME_RETENTION_WEBHOOK_EVENTS_DAYS", self.retention_webhook_events_days, 1..=3_650)
    }

    /// Stripe's keys when buyers pay through it; its API over https (or plain http to this
    /// machine, for a stand-in).
    fn check_payments(&self) -> anyhow::Result<()> {
        if self.payments == PaymentsKind::None {
            return Ok(());
        }
        let key = self.stripe_secret_key.as_ref().map(Secret::expose).unwrap_or_default();
        if !["sk_", "rk_"].iter().any(|prefix| key.starts_with(prefix)) {
            bail!(
                "REHOME_PAYMENTS=stripe needs REHOME_STRIPE_SECRET_KEY, a secret key (sk_…) or restricted key (rk_…)"
            );
        }
        let secret = self.stripe_webhook_secret.as_ref().map(Secret::expose).unwrap_or_default();
        if !secret.starts_with("whsec_") {
            bail!("REHOME_PAYMENTS=stripe needs REHOME_STRIPE_WEBHOOK_SECRET, the endpoint's signing secret (whsec_…)");
        }
        let api = url::Url::parse(&self.stripe_api_url).context("REHOME_STRIPE_API_URL")?;
        let local = matches!(api.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
        if api.scheme() != "https" && !(api.scheme() == "http" && local) {
            bail!("REHOME_STRIPE_API_URL must be an https URL (plain http only to this machine, for a stand-in)");
        }
        Ok(())
    }

    /// The mail settings: an SMTP URL lettre takes, with a sender that is one address.
    fn check_mail(&self) -> anyhow::Result<()> {
        within("REHOME_MAIL_POLL_MS", self.mail_poll_ms, 10..=600_000)?;
        within("REHOME_MAIL_RETRY_BASE_MS", self.mail_retry_base_ms, 1..=3_600_000)?;
        let Some(url) = &self.smtp_url else {
            return Ok(());
        };
        if self.mail_from.as_deref().is_none_or(|f| f.trim().is_empty()) {
            bail!("REHOME_SMTP_URL needs REHOME_MAIL_FROM (the sender address)");
        }
        // lettre's message never repeats the URL, so no password reaches the error.
        if let Err(e) = smtp::transport(url.expose()) {
            bail!(
                "REHOME_SMTP_URL must be smtp://host[:port] (no TLS, local servers only), \
                 smtp://host[:port]?tls=required (STARTTLS) or smtps://host[:port] (TLS), with \
                 user:password@ when the server asks for it: {e}"
            );
        }
        let from = self.mail_from.as_deref().unwrap_or_default();
        if let Err(e) = from.parse::<lettre::message::Mailbox>() {
            bail!("REHOME_MAIL_FROM must be one address, like 'Rehome <noreply@rehome.example>': {e}");
        }
        Ok(())
    }

    /// The settlement hold (checked by [`Config::resolve`]).
    pub fn hold(&self) -> Hold {
        Hold::hours(self.settlement_hold_hours).unwrap_or_default()
    }

    /// True when outgoing mail is configured (an SMTP URL and a sender).
    pub fn mail_enabled(&self) -> bool {
        self.smtp_url.is_some() && self.mail_from.is_some()
    }

    /// True when the service is reached over https: cookies then carry `Secure`.
    pub fn secure_cookies(&self) -> bool {
        self.public_url().starts_with("https://")
    }

    pub fn public_url(&self) -> &str {
        self.public_url.as_deref().unwrap_or_default()
    }

    pub fn marketplace_url(&self) -> &str {
        self.marketplace_url.as_deref().unwrap_or_default()
    }

    /// The base of every photo URL (`<base>/<name>`): the media public URL when given,
    /// else this server's media route.
    pub fn media_url(&self) -> &str {
        self.media_public_url.as_deref().unwrap_or_default()
    }
}

/// An absolute http(s) URL without a trailing slash.
/// Checks one setting against its allowed values, stated once: the check and its message
/// ("REHOME_X must be 1 to 10000 (it is 0)") come from the same range.
fn within<T: TryInto<u64> + Copy + fmt::Display>(
    name: &str,
    value: T,
    allowed: std::ops::RangeInclusive<u64>,
) -> anyhow::Result<()> {
    if value.try_into().is_ok_and(|v| allowed.contains(&v)) {
        return Ok(());
    }
    bail!("{name} must be {} to {} (it is {value})", allowed.start(), allowed.end())
}

fn base_url(given: Option<String>, default: impl FnOnce() -> String) -> anyhow::Result<String> {
    let url = given.unwrap_or_else(default);
    let url = url.trim_end_matches('/').to_owned();
    if !(url.starts_with("http://") || url.starts_with("https://")) || url.contains(char::is_whitespace) {
        bail!("'{url}' is not an absolute http(s) URL");
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each setting out of range is named alone, with its range and the value given, from the
    /// range it is checked against.
    #[test]
    fn a_setting_out_of_range_is_named_with_its_range_and_value() {
        let addr = "127.0.0.1:8080".parse().unwrap();
        let error = Config { large_bodies: 0, ..Config::default() }.resolve(addr).unwrap_err().to_string();
        assert_eq!(error, "REHOME_LARGE_BODIES must be 1 to 10000 (it is 0)");
        let error = Config { retention_mail_days: 3_651, ..Config::default() }.resolve(addr).unwrap_err().to_string();
        assert_eq!(error, "REHOME_RETENTION_MAIL_DAYS must be 0 to 3650 (it is 3651)");
        assert!(within("REHOME_X", 0_usize, 0..=0).is_ok() && within("REHOME_X", -1_i64, 0..=5).is_err());
    }

    /// The defaults come from the clap declarations (the same `rehome serve` starts with)
    /// and pass the start-up checks. (Checked against the former hand-written
    /// `impl Default` when it was replaced: every field equal.)
    #[test]
    fn the_defaults_are_the_declared_ones_and_pass_the_checks() {
        let config = Config::default();
        assert_eq!((config.rate_limit, config.addr.to_string().as_str()), (DEFAULT_RATE_LIMIT, DEFAULT_ADDR));
        assert_eq!(
            (config.media_dir.as_path(), config.media_store),
            (std::path::Path::new("./media"), MediaStoreKind::Fs)
        );
        assert!(config.resolve("127.0.0.1:8080".parse().unwrap()).is_ok());
    }

    #[test]
    fn urls_default_from_the_bound_address() {
        let config = Config::default().resolve("127.0.0.1:9000".parse().unwrap()).unwrap();
        assert_eq!(config.public_url(), "http://127.0.0.1:9000");
        assert_eq!(config.marketplace_url(), "http://127.0.0.1:9000/marketplace");
    }

    #[test]
    fn given_urls_lose_their_trailing_slash_and_must_be_http() {
        let config = Config { public_url: Some("https://api.example/".into()), ..Config::default() };
        let config = config.resolve("127.0.0.1:9000".parse().unwrap()).unwrap();
        assert_eq!(config.public_url(), "https://api.example");
        let bad = Config { marketplace_url: Some("ftp://x".into()), ..Config::default() };
        assert!(bad.resolve("127.0.0.1:9000".parse().unwrap()).is_err());
    }

    #[test]
    fn webhook_settings_out_of_range_are_refused() {
        let bound = "127.0.0.1:9000".parse().unwrap();
        assert!(Config { webhook_timeout_ms: 99, ..Config::default() }.resolve(bound).is_err());
        assert!(Config { webhook_retry_base_ms: 0, ..Config::default() }.resolve(bound).is_err());
        assert!(Config { webhook_retry_window_s: 31 * 24 * 3600, ..Config::default() }.resolve(bound).is_err());
        assert!(Config { webhook_concurrency: 0, ..Config::default() }.resolve(bound).is_err());
        assert!(Config { webhook_poll_ms: 5, ..Config::default() }.resolve(bound).is_err());
        assert!(Config::default().resolve(bound).is_ok());
    }

    #[test]
    fn photo_settings_out_of_range_are_refused() {
        let bound = "127.0.0.1:9000".parse().unwrap();
        assert!(Config { photo_poll_ms: 5, ..Config::default() }.resolve(bound).is_err());
        assert!(Config { image_import_timeout_ms: 50, ..Config::default() }.resolve(bound).is_err());
        assert!(Config { image_import_attempts: 0, ..Config::default() }.resolve(bound).is_err());
        assert!(Config { image_import_retry_base_ms: 0, ..Config::default() }.resolve(bound).is_err());
    }

    #[test]
    fn photo_urls_default_to_the_media_route_unless_a_media_public_url_is_given() {
        let bound = "127.0.0.1:9000".parse().unwrap();
        assert_eq!(Config::default().resolve(bound).unwrap().media_url(), "http://127.0.0.1:9000/media");
        let cdn = Config { media_public_url: Some("https://cdn.example/photos/".into()), ..Config::default() };
        assert_eq!(cdn.resolve(bound).unwrap().media_url(), "https://cdn.example/photos");
        assert!(Config { media_public_url: Some("cdn.example".into()), ..Config::default() }.resolve(bound).is_err());
    }

    #[test]
    fn the_s3_store_needs_a_bucket_an_http_endpoint_and_both_keys_or_neither() {
        let bound = "127.0.0.1:9000".parse().unwrap();
        let s3 = || Config { media_store: MediaStoreKind::S3, s3_bucket: Some("photos".into()), ..Config::default() };
        assert!(s3().resolve(bound).is_ok());
        let error = Config { s3_bucket: None, ..s3() }.resolve(bound).unwrap_err();
        assert!(error.to_string().contains("REHOME_S3_BUCKET"), "{error}");
        assert!(Config { s3_bucket: Some(" ".into()), ..s3() }.resolve(bound).is_err());
        assert!(Config { s3_endpoint: Some("minio:9000".into()), ..s3() }.resolve(bound).is_err());
        let local = Config { s3_endpoint: Some("http://127.0.0.1:9000/".into()), ..s3() }.resolve(bound).unwrap();
        assert_eq!(local.s3_endpoint.as_deref(), Some("http://127.0.0.1:9000"));
        assert!(Config { s3_access_key_id: Some("AKIA".into()), ..s3() }.resolve(bound).is_err());
        assert!(Config { s3_secret_access_key: Some("s".into()), ..s3() }.resolve(bound).is_err());
        // The filesystem store ignores the S3 settings.
        assert!(Config { s3_access_key_id: Some("AKIA".into()), ..Config::default() }.resolve(bound).is_ok());
    }

    #[test]
    fn secrets_never_print() {
        let config = Config {
            s3_secret_access_key: Some("wJalrXUtnFEMI-very-secret".into()),
            ops_token: Some("ops-token-very-secret".into()),
            data_key: Some("ZGF0YS1rZXktdmVyeS1zZWNyZXQ=".into()),
            ..Config::default()
        };
        let printed = format!("{config:?} {config:#?}");
        assert!(!printed.contains("very-secret") && !printed.contains("ZGF0YS1rZXkt"), "{printed}");
        assert_eq!(printed.matches("[redacted]").count(), 6);
    }

    #[test]
    fn mail_settings_are_checked_at_start_without_printing_the_password() {
        let bound = "127.0.0.1:9000".parse().unwrap();
        let mail = |url: &str, from: &str| Config {
            smtp_url: Some(url.into()),
            mail_from: Some(from.into()),
            ..Config::default()
        };
        for url in ["smtp://127.0.0.1:2525", "smtps://user:pa55@mail.example", "smtp://mail.example:587?tls=required"] {
            assert!(mail(url, "Rehome <noreply@rehome.example>").resolve(bound).is_ok(), "{url}");
        }
        for url in ["http://user:hunter2-secret@mail.example", "smtp://", "mail.example:25", "smtp://h?tls=maybe"] {
            let error = format!("{:#}", mail(url, "noreply@rehome.example").resolve(bound).unwrap_err());
            assert!(error.contains("REHOME_SMTP_URL") && !error.contains("hunter2"), "{error}");
        }
        for from in ["", "not an address", "a@b.example, c@d.example", "a@b.example\r\nBcc: c@d.example"] {
            let error = mail("smtp://127.0.0.1:2525", from).resolve(bound).unwrap_err().to_string();
            assert!(error.contains("REHOME_MAIL_FROM"), "{from:?}: {error}");
        }
        assert!(Config { mail_poll_ms: 5, ..Config::default() }.resolve(bound).is_err());
        assert!(Config { mail_retry_base_ms: 0, ..Config::default() }.resolve(bound).is_err());
        let printed = format!("{:?}", mail("smtps://user:hunter2-secret@mail.example", "a@b.example"));
        assert!(!printed.contains("hunter2"), "{printed}");
    }

    #[test]
    fn retention_settings_out_of_range_are_refused() {
        let bound = "127.0.0.1:9000".parse().unwrap();
        assert!(Config::default().resolve(bound).is_ok());
        for bad in [
            Config { retention_interval_s: 0, ..Config::default() },
            Config { retention_batch: 0, ..Config::default() },
            Config { retention_batch: 100_001, ..Config::default() },
            Config { retention_pause_ms: 10_001, ..Config::default() },
            Config { retention_sign_in_failures_hours: 0, ..Config::default() },
            Config { retention_sessions_days: 3_651, ..Config::default() },
            Config { retention_invitations_days: 3_651, ..Config::default() },
            Config { retention_mail_days: 3_651, ..Config::default() },
            Config { retention_webhook_events_days: 0, ..Config::default() },
        ] {
            let error = bad.resolve(bound).expect_err("out of range").to_string();
            assert!(error.contains("REHOME_RETENTION_"), "{error}");
        }
        let all_reserved = Config { reserved_connections: Some(DEFAULT_MAX_CONNECTIONS), ..Config::default() };
        let error = all_reserved.resolve(bound).expect_err("a reserve as large as the ceiling").to_string();
        assert!(error.contains("REHOME_RESERVED_CONNECTIONS"), "{error}");
        assert_eq!(Config::default().reserved_connections(), DEFAULT_MAX_CONNECTIONS / 8);
        let none_kept = Config { retention_sessions_days: 0, retention_mail_days: 0, ..Config::default() };
        assert!(none_kept.resolve(bound).is_ok());
    }

    #[test]
    fn a_zero_rate_limit_is_refused() {
        let config = Config { rate_limit: 0, ..Config::default() };
        assert!(config.resolve("127.0.0.1:9000".parse().unwrap()).is_err());
    }
}
