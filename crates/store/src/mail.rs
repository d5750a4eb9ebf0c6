//! The mail outbox: messages written in the transaction of what caused them, sent by the
//! mail worker (`jobs::mail`) and retried until the SMTP server takes them.
//!
//! The text and attachment are sealed with the data key as they are queued (an invitation
//! holds a sign-up link, a statement the brand's figures), bound to the recipient and
//! subject; once a message is sent or given up they are erased (the row keeps recipient,
//! subject and times).

use chrono::{DateTime, Utc};
use sqlx::FromRow;

use super::queue::LeasedQueue;
use super::{on_conn, on_pool, Conn, Sealer, Store, StoreError, Ts};

/// A message to queue. The sender is the server's `REHOME_MAIL_FROM`.
#[derive(Debug, Clone)]
pub struct NewMail<'a> {
    /// The brand the message is about, when there is one.
    pub brand_id: Option<i64>,
    pub to: &'a str,
    pub subject: &'a str,
    pub text: &'a str,
    /// An HTML part with the same words, sent beside the text (`multipart/alternative`).
    pub html: Option<&'a str>,
    /// `(file name, media type, bytes)`.
    pub attachment: Option<(&'a str, &'a str, &'a [u8])>,
}

/// Queues `mail` on `conn`, the caller's transaction, due at once, its text and attachment
/// sealed with `sealer`.
pub async fn enqueue_mail(conn: Conn<'_>, sealer: &Sealer, mail: &NewMail<'_>) -> Result<(), StoreError> {
    let now = Ts::now();
    let aad = mail_aad(mail.to, mail.subject);
    let seal = |bytes: &[u8]| sealer.seal(&aad, bytes).map_err(|e| StoreError::Sealing(e.to_string()));
    let text = seal(mail.text.as_bytes())?;
    let html = mail.html.map(|html| seal(html.as_bytes())).transpose()?;
    let (name, kind, bytes) = match mail.attachment {
        Some((name, kind, bytes)) => (Some(name), Some(kind), Some(seal(bytes)?)),
        None => (None, None, None),
    };
    on_conn!(conn, |c| {
        sqlx::query(
            "INSERT INTO mail_outbox (brand_id, to_address, subject, text_body, sealed_text, attachment_name,
                                      attachment_type, attachment, created_at, next_attempt_at, sealed_html)
             VALUES ($1, $2, $3, '', $4, $5, $6, $7, $8, $8, $9)",
        )
        .bind(mail.brand_id)
        .bind(mail.to)
        .bind(mail.subject)
        .bind(text)
        .bind(name)
        .bind(kind)
        .bind(bytes)
        .bind(now)
        .bind(html)
        .execute(&mut *c)
        .await?;
        Ok(())
    })
}

/// A message's words: plain text, and the same as HTML when there is an HTML part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailBody {
    pub text: String,
    pub html: Option<String>,
}

/// What a message's sealed parts are bound to: moved to another row, they do not open.
fn mail_aad(to: &str, subject: &str) -> Vec<u8> {
    [b"rehome mail\0".as_slice(), to.as_bytes(), b"\0", subject.as_bytes()].concat()
}

/// A claimed row as stored: the text sealed (or, queued before sealing, in the clear).
#[derive(Debug, FromRow)]
struct ClaimedRow {
    id: i64,
    to_address: String,
    subject: String,
    text_body: String,
    sealed_text: Option<Vec<u8>>,
    sealed_html: Option<Vec<u8>>,
    attachment_name: Option<String>,
    attachment_type: Option<String>,
    attachment: Option<Vec<u8>>,
    attempts: i64,
    created_at: Ts,
}

impl ClaimedRow {
    /// The message as sent, its sealed parts opened; `None` when they do not open with this
    /// data key (the server started with another key than the one that queued it).
    fn open(self, sealer: Option<&Sealer>) -> ClaimedMail {
        let mut mail = ClaimedMail {
            id: self.id,
            to_address: self.to_address,
            subject: self.subject,
            text_body: self.text_body,
            html_body: None,
            attachment_name: self.attachment_name,
            attachment_type: self.attachment_type,
            attachment: self.attachment,
            attempts: self.attempts,
            created_at: self.created_at,
            undecryptable: false,
        };
        let Some(sealed) = self.sealed_text else { return mail };
        let aad = mail_aad(&mail.to_address, &mail.subject);
        let opened = sealer.and_then(|sealer| {
            let text = String::from_utf8(sealer.open(&aad, &sealed).ok()?).ok()?;
            let html = match &self.sealed_html {
                Some(bytes) => Some(String::from_utf8(sealer.open(&aad, bytes).ok()?).ok()?),
                None => None,
            };
            let attachment = match &mail.attachment {
                Some(bytes) => Some(sealer.open(&aad, bytes).ok()?),
                None => None,
            };
            Some((text, html, attachment))
        });
        match opened {
            Some((text, html, attachment)) => {
                mail.text_body = text;
                mail.html_body = html;
                mail.attachment = attachment;
            }
            None => {
                mail.attachment = None;
                mail.undecryptable = true;
            }
        }
        mail
    }
}

/// A message a worker now holds the lease of, its sealed parts opened.
#[derive(Debug, Clone)]
pub struct ClaimedMail {
    pub id: i64,
    pub to_address: String,
    pub subject: String,
    pub text_body: String,
    /// The HTML part, when the message has one.
    pub html_body: Option<String>,
    pub attachment_name: Option<String>,
    pub attachment_type: Option<String>,
    pub attachment: Option<Vec<u8>>,
    /// Attempts so far, this one included (a claim counts as an attempt, so one that never
    /// finishes, a crash mid-send, is counted too).
    pub attempts: i64,
    pub created_at: Ts,
    /// Its sealed parts do not open with this server's data key: it cannot be sent.
    pub undecryptable: bool,
}

/// What became of an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MailOutcome {
    /// The SMTP server took the message.
    Sent,
    /// Try again at this instant.
    Retry { at: DateTime<Utc>, error: String },
    /// Given up: the server refused it for good, or it cannot be sent, or it has been
    /// retried for its whole window.
    Failed { error: String },
}

/// A message of the outbox as operators and tests see it.
#[derive(Debug, Clone, FromRow)]
pub struct MailRecord {
    pub id: i64,
    pub to_address: String,
    pub subject: String,
    pub attempts: i64,
    pub created_at: Ts,
    pub next_attempt_at: Ts,
    pub last_error: Option<String>,
    pub sent_at: Option<Ts>,
    pub failed_at: Option<Ts>,
    /// The text and attachment are gone (sent or given up).
    pub erased: bool,
}

/// Messages neither sent nor failed, oldest due first.
const MAIL_QUEUE: LeasedQueue = LeasedQueue {
    table: "mail_outbox",
    from: "mail_outbox q",
    pending: "q.sent_at IS NULL AND q.failed_at IS NULL",
    always_scheduled: true,
    lease: "leased_until",
    touched: false,
    order: "q.next_attempt_at, q.id",
    returning: "id, to_address, subject, text_body, sealed_text, sealed_html, attachment_name, attachment_type, \
                attachment, attempts, created_at",
};

impl Store {
    /// Takes the lease of up to `limit` due messages (oldest due first) for `owner` until
    /// `lease_until`, counting an attempt on each. On PostgreSQL the rows are locked as they
    /// are taken, skipping those another node is taking, so each message is leased by one
    /// worker at a time; SQLite has a single writer.
    pub async fn claim_mail(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<ClaimedMail>, StoreError> {
        let rows: Vec<ClaimedRow> = on_pool!(self, write, |pool| {
            let mut conn = pool.acquire().await?;
            let rows = self.claim_leased((&mut *conn).into(), &MAIL_QUEUE, owner, now, lease_until, limit).await?;
            conn.settle();
            rows
        });
        Ok(rows.into_iter().map(|row| row.open(self.sealer.as_ref())).collect())
    }

    /// Records the outcome of `owner`'s attempt at message `id`. A message the server took
    /// is marked sent whoever holds the lease now (it was sent); a retry or a failure is
    /// recorded only while `owner` still holds the lease. Answers whether the row changed.
    pub async fn record_mail(&self, owner: &str, id: i64, outcome: &MailOutcome) -> Result<bool, StoreError> {
        let now = Ts::now();
        on_pool!(self, write, |pool| {
            let done = match outcome {
                MailOutcome::Sent => sqlx::query(
                    "UPDATE mail_outbox SET sent_at = $2, last_error = NULL, lease_owner = NULL, leased_until = NULL,
                         text_body = '', sealed_text = NULL, sealed_html = NULL, attachment = NULL
                     WHERE id = $1 AND sent_at IS NULL",
                )
                .bind(id)
                .bind(now)
                .execute(pool)
                .await?,
                MailOutcome::Retry { at, error } => {
                    sqlx::query(
                        "UPDATE mail_outbox SET next_attempt_at = $3, last_error = $4, lease_owner = NULL,
                         leased_until = NULL
                     WHERE id = $1 AND lease_owner = $2 AND sent_at IS NULL",
                    )
                    .bind(id)
                    .bind(owner)
                    .bind(Ts::from(*at))
                    .bind(error)
                    .execute(pool)
                    .await?
                }
                MailOutcome::Failed { error } => sqlx::query(
                    "UPDATE mail_outbox SET failed_at = $3, last_error = $4, lease_owner = NULL, leased_until = NULL,
                         text_body = '', sealed_text = NULL, sealed_html = NULL, attachment = NULL
                     WHERE id = $1 AND lease_owner = $2 AND sent_at IS NULL",
                )
                .bind(id)
                .bind(owner)
                .bind(now)
                .bind(error)
                .execute(pool)
                .await?,
            };
            Ok(done.rows_affected() > 0)
        })
    }

    /// Gives up the leases `owner` holds (a worker stopping with nothing in flight), so
    /// another node or the next start takes the messages at once.
    pub async fn release_mail_leases(&self, owner: &str) -> Result<u64, StoreError> {
        self.release_leases(MAIL_QUEUE.table, MAIL_QUEUE.lease, owner).await
    }

    /// The newest `limit` messages of the outbox, oldest first (operators and tests).
    pub async fn mail_outbox(&self, limit: i64) -> Result<Vec<MailRecord>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(
                "SELECT * FROM (SELECT id, to_address, subject, attempts, created_at, next_attempt_at, last_error,
                                       sent_at, failed_at,
                                       (sent_at IS NOT NULL OR failed_at IS NOT NULL) AND text_body = ''
                                           AND sealed_text IS NULL AND attachment IS NULL AS erased
                                FROM mail_outbox ORDER BY id DESC LIMIT $1) newest
                 ORDER BY id",
            )
            .bind(limit)
            .fetch_all(pool)
            .await?)
        })
    }
}
