//! Idempotency keys: claimed by inserting a row (the primary key makes exactly one claimer
//! win, on one node or many), completed with the kept answer, released on failure.
//!
//! Every operation takes a batch: the core's writer (`rehome_core::idempotency`) gathers
//! the operations of concurrent requests and runs them together, a few statements for many
//! keys, so that a keyed request costs little more than one without a key.

use std::collections::{HashMap, HashSet};

use sqlx::FromRow;

use super::{on_pool, placeholders, Store, StoreError};
use rehome_domain::idempotency::{self, Claim, Kept, KeptAnswer, KeyClaim};

#[derive(FromRow)]
struct Row {
    key_id: i64,
    idem_key: String,
    fingerprint: Vec<u8>,
    state: String,
    status: Option<i64>,
    content_type: Option<String>,
    headers: Option<String>,
    body: Option<Vec<u8>>,
    body_deflated: i64,
}

/// A kept body as its answer had it, from its stored bytes and packing.
fn unpack(stored: Option<Vec<u8>>, packing: i64) -> Result<Vec<u8>, sqlx::Error> {
    let unknown = || std::io::Error::new(std::io::ErrorKind::InvalidData, format!("unknown packing {packing}"));
    let packing = idempotency::Packing::from_stored(packing).ok_or_else(unknown);
    packing
        .and_then(|packing| idempotency::unpack(stored.unwrap_or_default(), packing))
        .map_err(|e| sqlx::Error::Decode(Box::new(e)))
}

/// Most keys per statement: well under both backends' limits on bound parameters.
pub const MAX_BATCH: usize = 100;

impl Store {
    /// Claims each key of `claims` (at most [`MAX_BATCH`], no key twice) in one
    /// transaction, and answers in the same order. A row past its expiry, or left `running`
    /// past its lease by a node that died, is taken over. Claims are written in key order,
    /// so batches of two nodes never wait on each other in a cycle.
    pub async fn claim_idempotency(&self, claims: &[KeyClaim]) -> Result<Vec<Claim>, StoreError> {
        if claims.is_empty() {
            return Ok(Vec::new());
        }
        let mut order: Vec<usize> = (0..claims.len()).collect();
        order.sort_by(|&a, &b| (claims[a].key_id, &claims[a].key).cmp(&(claims[b].key_id, &claims[b].key)));
        let values = placeholders(claims.len(), 6, |p| {
            format!("({}, {}, {}, 'running', {}, {}, {})", p[0], p[1], p[2], p[3], p[4], p[5])
        });
        let insert = format!(
            "INSERT INTO idempotency_keys (key_id, idem_key, fingerprint, state, created_at, lease_until, expires_at)
             VALUES {values}
             ON CONFLICT (key_id, idem_key) DO UPDATE SET
                 fingerprint = excluded.fingerprint, state = 'running', status = NULL, content_type = NULL,
                 headers = NULL, body = NULL, body_deflated = 0, created_at = excluded.created_at, lease_until = excluded.lease_until,
                 expires_at = excluded.expires_at
             WHERE idempotency_keys.expires_at <= excluded.created_at
                OR (idempotency_keys.state = 'running' AND idempotency_keys.lease_until <= excluded.created_at)
             RETURNING key_id, idem_key"
        );
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let mut query = sqlx::query_as::<_, (i64, String)>(&insert);
            for &i in &order {
                let c = &claims[i];
                query = query
                    .bind(c.key_id)
                    .bind(c.key.as_str())
                    .bind(&c.fingerprint[..])
                    .bind(c.now)
                    .bind(c.lease_until)
                    .bind(c.expires_at);
            }
            let claimed: HashSet<(i64, String)> = query.fetch_all(&mut *tx).await?.into_iter().collect();
            let is_claimed = |c: &KeyClaim| claimed.contains(&(c.key_id, c.key.clone()));
            let held: Vec<&KeyClaim> = claims.iter().filter(|c| !is_claimed(c)).collect();
            let mut kept: HashMap<(i64, String), Kept> = HashMap::new();
            if !held.is_empty() {
                let pairs = placeholders(held.len(), 2, |p| format!("({}, {})", p[0], p[1]));
                let select = format!(
                    "SELECT key_id, idem_key, fingerprint, state, status, content_type, headers, body, body_deflated
                     FROM idempotency_keys
                     WHERE (key_id, idem_key) IN (VALUES {pairs})"
                );
                let mut query = sqlx::query_as::<_, Row>(&select);
                for c in &held {
                    query = query.bind(c.key_id).bind(c.key.as_str());
                }
                for row in query.fetch_all(&mut *tx).await? {
                    let found = if row.state == "done" {
                        Kept::Done {
                            fingerprint: row.fingerprint,
                            status: row.status.and_then(|s| u16::try_from(s).ok()).unwrap_or(200),
                            content_type: row.content_type,
                            // Rows kept before the headers were: none.
                            headers: row.headers.and_then(|h| serde_json::from_str(&h).ok()).unwrap_or_default(),
                            body: unpack(row.body, row.body_deflated)?,
                        }
                    } else {
                        Kept::Running { fingerprint: row.fingerprint }
                    };
                    kept.insert((row.key_id, row.idem_key), found);
                }
            }
            tx.commit().await?;
            Ok(claims
                .iter()
                .map(|c| match kept.remove(&(c.key_id, c.key.clone())) {
                    Some(found) => Claim::Held(found),
                    None if is_claimed(c) => Claim::Claimed,
                    // Held a moment ago and released since: as if still running (retry).
                    None => Claim::Held(Kept::Running { fingerprint: c.fingerprint.to_vec() }),
                })
                .collect())
        })
    }

    /// Keeps the answers of requests that held their keys, and forgets the keys of requests
    /// that did not succeed (so that a corrected retry may run), in one transaction.
    pub async fn settle_idempotency(
        &self,
        answers: &[KeptAnswer],
        released: &[(i64, String)],
    ) -> Result<(), StoreError> {
        let mut answers: Vec<&KeptAnswer> = answers.iter().collect();
        answers.sort_by(|a, b| (a.key_id, &a.key).cmp(&(b.key_id, &b.key)));
        let mut released: Vec<&(i64, String)> = released.iter().collect();
        released.sort();
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            if !answers.is_empty() {
                let rows = placeholders(answers.len(), 7, |p| format!("({})", p.join(", ")));
                let update = format!(
                    "UPDATE idempotency_keys SET state = 'done', status = v.column3, content_type = v.column4,
                         headers = v.column5, body = v.column6, body_deflated = v.column7
                     FROM (VALUES {rows}) AS v
                     WHERE idempotency_keys.key_id = v.column1 AND idempotency_keys.idem_key = v.column2"
                );
                let packed: Vec<_> = answers.iter().map(|a| idempotency::pack(&a.body)).collect();
                let mut query = sqlx::query(&update);
                for (a, (body, packing)) in answers.iter().zip(&packed) {
                    query = query
                        .bind(a.key_id)
                        .bind(a.key.as_str())
                        .bind(i64::from(a.status))
                        .bind(a.content_type.as_deref())
                        .bind(serde_json::to_string(&a.headers).ok())
                        .bind(body.as_ref())
                        .bind(*packing as i64);
                }
                query.execute(&mut *tx).await?;
            }
            if !released.is_empty() {
                let pairs = placeholders(released.len(), 2, |p| format!("({}, {})", p[0], p[1]));
                let delete = format!(
                    "DELETE FROM idempotency_keys WHERE state = 'running' AND (key_id, idem_key) IN (VALUES {pairs})"
                );
                let mut query = sqlx::query(&delete);
                for (key_id, key) in &released {
                    query = query.bind(*key_id).bind(key.as_str());
                }
                query.execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(())
        })
    }
}
