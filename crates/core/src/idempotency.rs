//! The idempotency writer: one task per node that gathers the key operations of concurrent
//! requests (claims, kept answers, releases) and writes them a batch at a time — group
//! commit. A request waits for its own batch to commit, so nothing is answered before it is
//! durable; under load a batch holds many requests' operations, and the statements and
//! commits they share are what keep a keyed request nearly as cheap as one without a key.

use std::sync::{Arc, OnceLock};

use tokio::sync::{mpsc, oneshot};

use rehome_domain::idempotency::{Claim as IdempotencyClaim, KeptAnswer, KeyClaim};
use rehome_store::{Store, StoreError, MAX_IDEMPOTENCY_BATCH};

/// Operations waiting for the writer; senders wait when it is this far behind.
const QUEUE: usize = 4 * MAX_IDEMPOTENCY_BATCH;

enum Op {
    Claim(KeyClaim, oneshot::Sender<Result<IdempotencyClaim, Arc<StoreError>>>),
    Keep(KeptAnswer, oneshot::Sender<Result<(), Arc<StoreError>>>),
    Release((i64, String), oneshot::Sender<Result<(), Arc<StoreError>>>),
}

/// The node's idempotency writer; its task starts with the first operation.
pub struct IdempotencyLog {
    store: Store,
    queue: OnceLock<mpsc::Sender<Op>>,
}

/// The writer stopped (the node is shutting down) before the operation ran.
fn stopped() -> Arc<StoreError> {
    Arc::new(StoreError::Database(sqlx::Error::PoolClosed))
}

impl IdempotencyLog {
    pub fn new(store: Store) -> Self {
        Self { store, queue: OnceLock::new() }
    }

    pub async fn claim(&self, claim: KeyClaim) -> Result<IdempotencyClaim, Arc<StoreError>> {
        let (tx, rx) = oneshot::channel();
        self.send(Op::Claim(claim, tx)).await?;
        rx.await.map_err(|_| stopped())?
    }

    /// Keeps the answer of the request that holds the key.
    pub async fn keep(&self, answer: KeptAnswer) -> Result<(), Arc<StoreError>> {
        let (tx, rx) = oneshot::channel();
        self.send(Op::Keep(answer, tx)).await?;
        rx.await.map_err(|_| stopped())?
    }

    /// Forgets the key of a request that did not succeed.
    pub async fn release(&self, key_id: i64, key: String) -> Result<(), Arc<StoreError>> {
        let (tx, rx) = oneshot::channel();
        self.send(Op::Release((key_id, key), tx)).await?;
        rx.await.map_err(|_| stopped())?
    }

    async fn send(&self, op: Op) -> Result<(), Arc<StoreError>> {
        let queue = self.queue.get_or_init(|| {
            let (tx, rx) = mpsc::channel(QUEUE);
            tokio::spawn(write_batches(self.store.clone(), rx));
            tx
        });
        queue.send(op).await.map_err(|_| stopped())
    }
}

/// Runs until every sender is gone: takes what is queued (up to a batch), writes it, answers.
async fn write_batches(store: Store, mut queue: mpsc::Receiver<Op>) {
    let mut deferred: Vec<Op> = Vec::new();
    loop {
        let mut batch = std::mem::take(&mut deferred);
        if batch.is_empty() {
            match queue.recv().await {
                Some(op) => batch.push(op),
                None => return,
            }
        }
        while batch.len() < MAX_IDEMPOTENCY_BATCH {
            match queue.try_recv() {
                Ok(op) => batch.push(op),
                Err(_) => break,
            }
        }
        deferred = write_batch(&store, batch).await;
    }
}

/// Writes one batch: the kept answers and releases, then the claims. A key claimed twice in
/// one batch (a client's concurrent duplicates) is left for the next batch, where it finds
/// the first claim: one statement may not touch a row twice.
async fn write_batch(store: &Store, batch: Vec<Op>) -> Vec<Op> {
    let mut claims: Vec<KeyClaim> = Vec::new();
    let mut claim_replies = Vec::new();
    let mut answers: Vec<KeptAnswer> = Vec::new();
    let mut released: Vec<(i64, String)> = Vec::new();
    let mut settle_replies = Vec::new();
    let mut deferred = Vec::new();
    for op in batch {
        match op {
            Op::Claim(claim, reply) if claims.iter().any(|c| c.key_id == claim.key_id && c.key == claim.key) => {
                deferred.push(Op::Claim(claim, reply));
            }
            Op::Claim(claim, reply) => {
                claims.push(claim);
                claim_replies.push(reply);
            }
            Op::Keep(answer, reply) => {
                answers.push(answer);
                settle_replies.push(reply);
            }
            Op::Release(key, reply) => {
                released.push(key);
                settle_replies.push(reply);
            }
        }
    }
    if !settle_replies.is_empty() {
        let result = store.settle_idempotency(&answers, &released).await.map_err(Arc::new);
        for reply in settle_replies {
            let _ = reply.send(result.clone());
        }
    }
    if !claims.is_empty() {
        match store.claim_idempotency(&claims).await {
            Ok(outcomes) => {
                for (reply, outcome) in claim_replies.into_iter().zip(outcomes) {
                    let _ = reply.send(Ok(outcome));
                }
            }
            Err(e) => {
                let e = Arc::new(e);
                for reply in claim_replies {
                    let _ = reply.send(Err(e.clone()));
                }
            }
        }
    }
    deferred
}
