//! The mail outbox and its SMTP sender, against a real local SMTP server
//! (`tests/smtp/server.py`, aiosmtpd): what arrives, attachments, a server down then up, a
//! restart with mail queued, two nodes on one PostgreSQL database, permanent refusals.
//! Without aiosmtpd these tests say so and pass, unless `REHOME_TEST_REQUIRE_PYTHON=1` is set.

mod claims;
mod delivery;
mod retries;

use std::time::Duration;

use rehome::store::{enqueue_mail, MailRecord, NewMail};

use crate::helpers::{on_raw, TestApp};

/// A plain message to `to`.
pub fn plain<'a>(to: &'a str, subject: &'a str, text: &'a str) -> NewMail<'a> {
    NewMail { brand_id: None, to, subject, text, html: None, attachment: None }
}

/// Queues `mails` in one transaction of the test's own on the app's database, as a use case
/// does in its transaction (no wake-up: the worker finds them at its next poll).
pub async fn enqueue(app: &TestApp, mails: &[NewMail<'_>]) {
    let raw = app.db.raw().await;
    on_raw!(&raw, |pool| {
        let mut tx = pool.begin().await.expect("begin");
        for mail in mails {
            enqueue_mail((&mut *tx).into(), &crate::helpers::test_sealer(), mail).await.expect("enqueue mail");
        }
        tx.commit().await.expect("commit");
    });
    raw.close().await;
}

/// The outbox's rows, oldest first.
pub async fn outbox(app: &TestApp) -> Vec<MailRecord> {
    app.store.mail_outbox(1000).await.expect("read the outbox")
}

/// Waits (at most `secs` s) until `done` holds of the outbox; returns the last rows read.
pub async fn wait_outbox(app: &TestApp, secs: u64, done: impl Fn(&[MailRecord]) -> bool) -> Vec<MailRecord> {
    app.run_pending().await;
    let found =
        crate::helpers::poll(Duration::from_secs(secs), || async { Some(outbox(app).await).filter(|r| done(r)) });
    match found.await {
        Some(rows) => rows,
        None => outbox(app).await,
    }
}
