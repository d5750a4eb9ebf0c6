//! Mail with two `rehome serve` processes on one database, configured through the
//! environment as in production: each queued message reaches the SMTP server once.

use rehome::store::{enqueue_mail, NewMail};

use super::*;
use crate::helpers::{SmtpServer, TEST_MAIL_FROM};

/// The ids of the messages a node logged as sent (`mail sent mail_id=…`).
fn sent_ids(node: &Node) -> Vec<String> {
    node.log_text()
        .lines()
        .filter(|l| l.contains("mail sent"))
        .filter_map(|l| field(l, "mail_id").map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_processes_send_each_queued_message_once() {
    if !on_postgres_or_skip("mail on two processes") {
        return;
    }
    let Some(smtp) = SmtpServer::start("mail on two processes").await else { return };
    let url = smtp.url();
    let env = [
        ("REHOME_SMTP_URL", url.as_str()),
        ("REHOME_MAIL_FROM", TEST_MAIL_FROM),
        ("REHOME_MAIL_POLL_MS", "50"),
        ("REHOME_MAIL_RETRY_BASE_MS", "100"),
    ];
    let Some(cluster) = Cluster::start("mail on two processes", 1000, &env).await else { return };

    const N: usize = 40;
    let subjects: Vec<String> = (0..N).map(|i| format!("Message {i}")).collect();
    for chunk in subjects.chunks(10) {
        let mut tx = cluster.pg.begin().await.expect("begin");
        for subject in chunk {
            let mail = NewMail {
                brand_id: None,
                to: "zoe@brand.example",
                subject,
                text: "Hello",
                html: None,
                attachment: None,
            };
            enqueue_mail((&mut *tx).into(), &crate::helpers::test_sealer(), &mail).await.expect("enqueue");
        }
        tx.commit().await.expect("commit");
    }

    let received = smtp.wait_for(N, 60).await;
    assert_eq!(received.len(), N, "received {} of {N}", received.len());
    // Every row recorded sent: neither node has anything left to send (again).
    let unsent = || async {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM mail_outbox WHERE sent_at IS NULL")
            .fetch_one(&cluster.pg)
            .await
            .expect("count unsent");
        (n == 0).then_some(())
    };
    crate::helpers::poll(Duration::from_secs(10), unsent).await;
    let received = smtp.received();
    let subjects_received: HashSet<&str> = received.iter().map(|m| m.subject.as_str()).collect();
    assert_eq!((received.len(), subjects_received.len()), (N, N), "a message arrived twice");
    // Every message was sent by one node, once.
    let logged: Vec<String> = cluster.nodes.iter().flat_map(sent_ids).collect();
    let unique: HashSet<&String> = logged.iter().collect();
    assert_eq!(
        (logged.len(), unique.len()),
        (N, N),
        "sent per node: {:?}",
        cluster.nodes.iter().map(|n| sent_ids(n).len()).collect::<Vec<_>>()
    );
    let unsent: i64 = sqlx::query_scalar("SELECT count(*) FROM mail_outbox WHERE sent_at IS NULL")
        .fetch_one(&cluster.pg)
        .await
        .expect("count unsent mail");
    assert_eq!(unsent, 0);
}
