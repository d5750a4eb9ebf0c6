//! Password hashing and verification, a few at a time. Argon2id holds about 19 MiB and tens
//! of milliseconds of one core per password (`domain::password`), so 256 sign-ins at once,
//! each on a blocking thread of its own, took the process from 53 MB to 4.9 GB and every
//! other request waited on the CPU (issue 35). Here at most `workers` run at once (by
//! default one per core: more would only share the same cores); the rest wait in line, up
//! to [`QUEUE_WAIT`], and past it are answered busy (the dashboard: 503 with
//! `Retry-After`), having checked nothing.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use rehome_domain::password::{self, HashError, Password};

/// Longest a password waits for a worker before it is answered busy.
pub const QUEUE_WAIT: Duration = Duration::from_secs(5);

/// Seconds a busy answer asks the client to wait (`Retry-After`).
pub const RETRY_AFTER_SECONDS: u32 = 2;

#[derive(Debug, thiserror::Error)]
pub enum HashingError {
    /// Every worker stayed busy for [`QUEUE_WAIT`]: nothing was checked.
    #[error("every password worker is busy: try again shortly")]
    Busy,
    /// The blocking task panicked or was cancelled.
    #[error("password hashing did not finish: {0}")]
    Interrupted(String),
    #[error(transparent)]
    Hash(#[from] HashError),
}

/// The bounded line of password work.
#[derive(Debug, Clone)]
pub struct PasswordPool {
    permits: Arc<Semaphore>,
    wait: Duration,
}

impl PasswordPool {
    /// `workers` at once (0: one per core).
    pub fn new(workers: usize) -> Self {
        let workers = if workers == 0 { std::thread::available_parallelism().map_or(1, usize::from) } else { workers };
        Self { permits: Arc::new(Semaphore::new(workers)), wait: QUEUE_WAIT }
    }

    /// Runs `work` on a blocking thread once a worker is free. The permit goes with the
    /// work, so a request abandoned meanwhile still counts until its hash is done.
    async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Result<T, HashingError> {
        let acquire = Arc::clone(&self.permits).acquire_owned();
        let permit = match tokio::time::timeout(self.wait, acquire).await {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) | Err(_) => return Err(HashingError::Busy),
        };
        tokio::task::spawn_blocking(move || {
            let done = work();
            drop(permit);
            done
        })
        .await
        .map_err(|e| HashingError::Interrupted(e.to_string()))
    }

    /// True when `candidate` is the password of `stored`; without a stored hash, one
    /// verification of a dummy is spent all the same (so no answer is quicker) and false.
    pub async fn verify(&self, candidate: &str, stored: Option<String>) -> Result<bool, HashingError> {
        let candidate = candidate.to_owned();
        self.run(move || match stored {
            Some(stored) => password::verify(&candidate, &stored),
            None => password::verify_dummy(&candidate),
        })
        .await
    }

    /// The PHC string of `password`.
    pub async fn hash(&self, password: Password) -> Result<String, HashingError> {
        Ok(self.run(move || password::hash(&password)).await??)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn work_beyond_the_workers_waits_and_past_the_wait_is_busy() {
        let pool = PasswordPool { permits: Arc::new(Semaphore::new(1)), wait: Duration::from_millis(50) };
        let held = Arc::clone(&pool.permits).acquire_owned().await.unwrap();
        assert!(matches!(pool.verify("x", None).await, Err(HashingError::Busy)));
        drop(held);
        assert!(!pool.verify("x", None).await.unwrap());
        let password = Password::parse("correct horse battery").unwrap();
        let stored = pool.hash(password).await.unwrap();
        assert!(pool.verify("correct horse battery", Some(stored)).await.unwrap());
        assert_eq!(pool.permits.available_permits(), 1, "every permit comes back");
    }
}
