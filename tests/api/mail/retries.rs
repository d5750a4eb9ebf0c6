//! Durability: an SMTP server that is down delays mail and never loses or doubles it,
//! across a restart and across two nodes; a permanent refusal is not retried.

use std::collections::HashMap;

use rehome::app::Server;
use rehome::config::Config;
use tokio::sync::oneshot;

use super::*;
use crate::helpers::{mail_to, on_postgres, open_store, spawn_app_on, spawn_app_with_mail, SmtpServer};

#[tokio::test]
async fn with_the_server_down_mail_waits_with_its_attempts_then_arrives_once() {
    let Some(mut smtp) = SmtpServer::down("with_the_server_down") else { return };
    let app = spawn_app_with_mail(&smtp, |_| {}).await;
    enqueue(&app, &[plain("zoe@brand.example", "Welcome", "Hello")]).await;

    // Nothing listens: the attempts fail and are recorded, each with the next one's time.
    let rows = wait_outbox(&app, 20, |rows| rows.first().is_some_and(|r| r.attempts >= 3)).await;
    let row = &rows[0];
    assert!(row.attempts >= 3, "{rows:?}");
    assert!(row.sent_at.is_none() && row.failed_at.is_none(), "{row:?}");
    assert!(row.last_error.as_deref().is_some_and(|e| !e.is_empty()), "{row:?}");
    assert!(row.next_attempt_at > row.created_at, "no retry planned: {row:?}");
    assert!(!row.erased, "{row:?}");
    assert!(smtp.received().is_empty());

    smtp.up().await;
    let received = smtp.wait_for(1, 20).await;
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].subject, "Welcome");
    let rows = wait_outbox(&app, 5, |rows| rows[0].sent_at.is_some()).await;
    assert!(rows[0].sent_at.is_some() && rows[0].last_error.is_none() && rows[0].erased, "{rows:?}");
    // Sent once, and never again: nothing is left to claim.
    assert_eq!(app.run_pending().await, 0);
    assert_eq!(smtp.received().len(), 1);
    app.stop().await;
}

#[tokio::test]
async fn mail_queued_before_a_restart_is_sent_once_by_the_next_server() {
    let Some(mut smtp) = SmtpServer::down("mail_queued_before_a_restart") else { return };
    let app = spawn_app_with_mail(&smtp, |_| {}).await;
    enqueue(&app, &[plain("zoe@brand.example", "Before the restart", "Hello")]).await;
    wait_outbox(&app, 20, |rows| rows.first().is_some_and(|r| r.attempts >= 1 && r.last_error.is_some())).await;
    let (db, dir) = app.stop_and_keep().await;

    smtp.up().await;
    let app = spawn_app_on(db, dir, |c| mail_to(&smtp, c)).await;
    let received = smtp.wait_for(1, 20).await;
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].subject, "Before the restart");
    wait_outbox(&app, 5, |rows| rows[0].sent_at.is_some()).await;
    assert_eq!(app.run_pending().await, 0);
    assert_eq!(smtp.received().len(), 1);
    app.stop().await;
}

#[tokio::test]
async fn two_nodes_on_one_database_send_each_message_once() {
    if !on_postgres() {
        eprintln!("two_nodes_on_one_database: skipped: two nodes share a PostgreSQL database (REHOME_TEST_POSTGRES)");
        return;
    }
    let Some(smtp) = SmtpServer::start("two_nodes_on_one_database").await else { return };
    let app = spawn_app_with_mail(&smtp, |_| {}).await;
    // The second node: another store (its own pool) and worker on the same database.
    let mut config =
        Config { addr: "127.0.0.1:0".parse().unwrap(), media_dir: app.dir.path().join("media"), ..Config::default() };
    mail_to(&smtp, &mut config);
    let server = Server::bind(config, open_store(&app.db.url).await).await.expect("bind the second node");
    let (stop, stopped) = oneshot::channel::<()>();
    let second = tokio::spawn(server.run_until(async move {
        let _ = stopped.await;
    }));

    const N: usize = 60;
    let subjects: Vec<String> = (0..N).map(|i| format!("Message {i}")).collect();
    let mails: Vec<_> = subjects.iter().map(|s| plain("zoe@brand.example", s, "Hello")).collect();
    // In a few transactions, so both nodes find work while more comes.
    for chunk in mails.chunks(15) {
        enqueue(&app, chunk).await;
    }

    smtp.wait_for(N, 60).await;
    // Every row sent: no node has anything left to send (again).
    wait_outbox(&app, 10, |rows| rows.iter().all(|r| r.sent_at.is_some())).await;
    let received = smtp.received();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for mail in &received {
        *counts.entry(mail.subject.as_str()).or_default() += 1;
    }
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "sent more than once: {twice:?}");
    assert_eq!(received.len(), N, "missing: {:?}", subjects.iter().filter(|s| !counts.contains_key(s.as_str())));
    let rows = wait_outbox(&app, 5, |rows| rows.iter().all(|r| r.sent_at.is_some())).await;
    assert!(rows.iter().all(|r| r.sent_at.is_some() && r.attempts == 1), "{rows:?}");

    let _ = stop.send(());
    second.await.expect("second node task").expect("second node");
    app.stop().await;
}

#[tokio::test]
async fn a_refused_recipient_or_a_bad_address_fails_once_and_is_not_retried() {
    let refused = "nobody@brand.example";
    let Some(smtp) = SmtpServer::start_rejecting("a_refused_recipient", &[refused]).await else { return };
    let app = spawn_app_with_mail(&smtp, |_| {}).await;
    enqueue(
        &app,
        &[
            plain(refused, "To nobody", "Hello"),
            plain("not an address", "To no address", "Hello"),
            plain("zoe@brand.example\r\nBcc: victim@evil.example", "Injected", "Hello"),
            plain("zoe@brand.example", "To Zoë", "Hello"),
        ],
    )
    .await;

    let received = smtp.wait_for(1, 20).await;
    let rows = wait_outbox(&app, 10, |rows| rows.iter().all(|r| r.sent_at.is_some() || r.failed_at.is_some())).await;
    // No retry is due, now or later.
    assert_eq!(app.run_pending().await, 0);
    let rows_after = outbox(&app).await;
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].subject, "To Zoë");
    assert_eq!(smtp.received().len(), 1);

    let (nobody, no_address, injected, zoe) = (&rows_after[0], &rows_after[1], &rows_after[2], &rows_after[3]);
    assert!(zoe.sent_at.is_some(), "{rows:?}");
    for row in [nobody, no_address, injected] {
        assert!(row.failed_at.is_some() && row.sent_at.is_none(), "{row:?}");
        assert_eq!(row.attempts, 1, "retried: {row:?}");
        assert!(row.erased, "{row:?}");
    }
    assert!(nobody.last_error.as_deref().is_some_and(|e| e.contains("550")), "{nobody:?}");
    assert!(no_address.last_error.as_deref().is_some_and(|e| e.contains("recipient")), "{no_address:?}");
    assert!(injected.last_error.as_deref().is_some_and(|e| e.contains("recipient")), "{injected:?}");
    app.stop().await;
}
