//! The log never blocks the server: with standard error a pipe nobody reads (it fills after
//! 64 KiB, a few hundred access log lines), every request is still answered.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::helpers::{binary_env, free_port, TestDb, REHOME_BIN};

#[tokio::test]
async fn requests_are_answered_while_nobody_reads_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let db = TestDb::create(dir.path()).await;
    let port = free_port();
    let metrics_port = free_port();
    let mut server = Command::new(REHOME_BIN)
        .arg("serve")
        .envs(binary_env(&db.url))
        .env("REHOME_ADDR", format!("127.0.0.1:{port}"))
        .env("REHOME_METRICS_ADDR", format!("127.0.0.1:{metrics_port}"))
        .env("REHOME_MEDIA_DIR", dir.path().join("media"))
        // Every request logs a line.
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start rehome");
    // Held and never read: the pipe fills and stays full.
    let _stderr = server.stderr.take();
    // A request that waits on a blocked log never answers: the client gives up instead of
    // the test hanging (a bound for a hang, far above any answer's time).
    let client = reqwest::Client::builder().timeout(Duration::from_secs(20)).build().unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let up =
        || async { client.get(format!("{base}/healthz")).send().await.is_ok_and(|r| r.status() == 200).then_some(()) };
    assert!(crate::helpers::poll(Duration::from_secs(10), up).await.is_some(), "the server did not start");
    let mut answered = 0;
    let mut failed = None;
    'requests: for _ in 0..40 {
        let batch: Vec<_> = (0..100).map(|_| client.get(format!("{base}/healthz")).send()).collect();
        for response in futures_util::future::join_all(batch).await {
            match response {
                Ok(response) if response.status() == 200 => answered += 1,
                other => {
                    failed = Some(format!("{other:?}"));
                    break 'requests;
                }
            }
        }
    }
    let dropped = match failed {
        None => {
            let text = client.get(format!("http://127.0.0.1:{metrics_port}/metrics")).send().await.unwrap();
            let text = text.text().await.unwrap();
            text.lines().find_map(|l| l.strip_prefix("rehome_log_lines_dropped_total ")).map(str::to_owned)
        }
        Some(_) => None,
    };
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(answered, 4000, "a request was not answered: {failed:?}");
    // Dropping and counting, once the queue is full too, is the unit test's in crates/core/src/logging.rs
    // (filling 16k lines here would take a minute of requests).
    let dropped: f64 = dropped.expect("the dropped lines counter").parse().unwrap();
    assert!(dropped >= 0.0);
}
