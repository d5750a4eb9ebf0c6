//! The composition root: the state, one router of the API and the dashboard, and the
//! background work; runs until a shutdown signal. The API (`http`) and the dashboard
//! (`web`) name the state (`state`), never each other nor this.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use tokio::net::TcpListener;

use crate::config::Config;
use crate::http::auth::Identity;
use crate::http::serve::{ConnectionLimits, Nobody, Vouch};
use crate::jobs::remittances::Remittances;
use crate::jobs::retention::{Retention, Settings as RetentionSettings};
use crate::jobs::upkeep::{CountFolds, LimiterUpkeep};
use crate::jobs::{Deliverer, ImportSettings, ImportWorker, MailWorker, ThumbnailWorker, WorkerSettings};
use crate::media;
use crate::state::AppState;
use crate::store::Store;

/// How long shutdown waits for the work requests began and did not wait for.
const UNAWAITED_GRACE: Duration = Duration::from_secs(10);

/// The one router: the API's routes, the dashboard under `/dashboard` (outside the `/v1`
/// gate, so its pages never count against the API's per-address limit, decisions 9.6) and
/// the storefront under `/marketplace` (with a limit of its own, decisions 14.7), with the
/// API's answers to unknown paths and methods.
pub fn router(state: AppState) -> Router {
    let dashboard = crate::web::router(&state).layer(crate::http::body_limit(&state));
    crate::http::routes(&state)
        .nest("/dashboard", dashboard)
        .route("/dashboard/", crate::http::routing::get(crate::web::to_home))
        .merge(crate::storefront::router(&state))
        .merge(crate::storefront::payments::router())
        .route("/", crate::http::routing::get(crate::storefront::front_door))
        .fallback(crate::http::unknown_route)
        .method_not_allowed_fallback(crate::http::method_not_allowed)
        .with_state(state)
}

/// A bound, ready server.
pub struct Server {
    listener: TcpListener,
    /// The metrics listener, when `REHOME_METRICS_ADDR` is set.
    metrics: Option<TcpListener>,
    state: AppState,
}

impl Server {
    /// Binds the configured address (port 0 picks a free one) over an opened store.
    pub async fn bind(config: Config, store: Store) -> anyhow::Result<Self> {
        let listener =
            TcpListener::bind(config.addr).await.with_context(|| format!("cannot listen on {}", config.addr))?;
        let metrics = match config.metrics_addr {
            Some(addr) => {
                Some(TcpListener::bind(addr).await.with_context(|| format!("cannot listen for metrics on {addr}"))?)
            }
            None => None,
        };
        let config = config.resolve(listener.local_addr()?)?;
        if let Some(url) = &config.public_url {
            // For the command line's links (`users invite-link`); serving does not need it.
            if let Err(error) = store.record_public_url(url).await {
                tracing::warn!(%error, "cannot record the public URL for the command line");
            }
        }
        let media = media::from_config(&config)?;
        // A listing event's `data` is the listing as the API lists it (decisions 15.3).
        store.set_listing_view(crate::http::listings::event_view(&config));
        let payments = crate::payments::from_config(&config).context("cannot build the payment service's client")?;
        let server = Self { listener, metrics, state: AppState::new(config, store, media, payments) };
        server.add_photo_workers()?;
        server.add_mail_worker()?;
        server.add_payment_worker();
        Ok(server)
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().unwrap_or_else(|_| self.state.config.addr)
    }

    /// Where the metrics listener listens, when there is one.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().and_then(|listener| listener.local_addr().ok())
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until `shutdown` completes, then finishes in-flight requests and returns.
    pub async fn run_until(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let settings = WorkerSettings::from_config(&self.state.config);
        let deliverer = Deliverer::new(self.state.store.clone(), settings, self.state.outbox.clone())
            .context("cannot build the webhook HTTP client")?
            .counting_into(self.state.metrics.clone());
        // The worker stops with the server (or when `stop` is dropped on an error) and
        // finishes its deliveries in flight before the store closes.
        let (stop, stopped) = tokio::sync::watch::channel(false);
        self.add_periodic_tasks();
        let queue_workers = self.state.queues.spawn_all(&stopped);
        let stopped_metrics = stopped.clone();
        let worker = deliverer.spawn(stopped);
        let app = crate::http::edge(router(self.state.clone()), &self.state);
        let config = &self.state.config;
        let limits = ConnectionLimits {
            header_timeout: Duration::from_millis(config.header_timeout_ms),
            max_connections: config.max_connections,
            max_connections_per_address: config.max_connections_per_address,
            max_connections_per_network: config.max_connections_per_network,
            reserved_connections: config.reserved_connections(),
            body_min_bytes_per_sec: config.body_min_rate,
            body_grace: Duration::from_millis(config.body_grace_ms),
            body_deadline: Duration::from_secs(config.body_deadline_secs),
        };
        let metrics = self.metrics.map(|listener| {
            let app = crate::http::metrics::app(self.state.clone());
            // A few scrapers at most: a small ceiling of its own, apart from the API's.
            let limits = ConnectionLimits { max_connections: 16, reserved_connections: 0, ..limits };
            let mut stopped = stopped_metrics;
            tokio::spawn(crate::http::serve::serve(listener, app, Nobody, limits, async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            }))
        });
        let known = Known(self.state.clone());
        crate::http::serve::serve(self.listener, app, known, limits, async move {
            shutdown.await;
            let _ = stop.send(true);
        })
        .await;
        if let Some(Err(e)) = match metrics {
            Some(handle) => Some(handle.await),
            None => None,
        } {
            tracing::error!(error = %e, "metrics listener failed");
        }
        if let Err(e) = worker.await {
            tracing::error!(error = %e, "webhook worker failed");
        }
        for handle in queue_workers {
            if let Err(e) = handle.await {
                tracing::error!(error = %e, "background worker failed");
            }
        }
        // A reset link asked for just before the signal is still made and mailed.
        self.state.unawaited.close();
        if tokio::time::timeout(UNAWAITED_GRACE, self.state.unawaited.wait()).await.is_err() {
            tracing::warn!("work begun by requests did not finish before shutdown");
        }
        self.state.store.close().await;
        Ok(())
    }
}

impl Server {
    /// The work on a clock, on the runner of the queues: retention, the monthly remittance
    /// run, the listing counts' folds and (on PostgreSQL) the shared rate limiter's upkeep.
    fn add_periodic_tasks(&self) {
        let state = &self.state;
        let retention = Retention::new(state.store.clone(), RetentionSettings::from_config(&state.config));
        state.queues.add(retention.counting_into(state.metrics.clone()).ticker());
        let mail = state.config.mail_enabled().then(|| state.mail.clone());
        let poll = Duration::from_millis(state.config.remittance_poll_ms);
        state.queues.add(Remittances::new(state.store.clone(), mail, poll).ticker());
        state.queues.add(CountFolds::ticker(state.store.clone()));
        if let Some(shared) = state.limiter.shared() {
            state.queues.add(LimiterUpkeep::ticker(shared.clone()));
        }
    }
}

impl Server {
    /// The thumbnail and image import workers, unless `REHOME_PHOTO_JOBS_PAUSED`; they stop
    /// with the webhook worker.
    fn add_photo_workers(&self) -> anyhow::Result<()> {
        let state = &self.state;
        if state.config.photo_jobs_paused {
            return Ok(());
        }
        let poll = Duration::from_millis(state.config.photo_poll_ms);
        let thumbnails = ThumbnailWorker::new(
            state.store.clone(),
            state.media.clone(),
            state.photo_jobs.clone(),
            poll,
            state.decodes.clone(),
        );
        let imports = ImportWorker::new(
            state.store.clone(),
            state.media.clone(),
            state.photo_jobs.clone(),
            ImportSettings::from_config(&state.config),
            state.decodes.clone(),
        )
        .context("cannot build the image import HTTP client")?;
        state.queues.add(thumbnails.runner());
        state.queues.add(imports.runner());
        Ok(())
    }
}

impl Server {
    /// The mail worker, when mail is configured; it stops with the webhook worker.
    fn add_mail_worker(&self) -> anyhow::Result<()> {
        let state = &self.state;
        if !state.config.mail_enabled() {
            return Ok(());
        }
        let worker = MailWorker::new(state.store.clone(), &state.config, state.mail.clone())?;
        state.queues.add(worker.runner());
        Ok(())
    }
}

impl Server {
    /// The job that settles lapsed payment holds, when buyers pay through a gateway.
    fn add_payment_worker(&self) {
        let state = &self.state;
        if let Some(settler) = crate::usecases::marketplace::payments::HoldSettler::new(&state.core) {
            state.queues.add(settler.runner());
        }
    }
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down: finishing in-flight requests");
}

/// Vouches for the clients the reserved connections are for: a valid API key, or a
/// signed-in dashboard session.
#[derive(Clone)]
struct Known(AppState);

impl Vouch for Known {
    async fn vouches(&self, headers: &axum::http::HeaderMap, peer: std::net::IpAddr) -> bool {
        if matches!(crate::http::auth::identify(&self.0.keys, headers, peer).await, Identity::Key(_)) {
            return true;
        }
        let Some(token) = crate::web::cookies::get(headers, crate::web::cookies::SESSION) else {
            return false;
        };
        let session = crate::usecases::people::sessions::session(&self.0.core, token, peer).await;
        session.is_ok_and(|session| session.is_some_and(|s| s.stage() == crate::domain::session::Stage::Full))
    }
}
