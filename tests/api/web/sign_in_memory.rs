//! Password hashing is bounded: 256 sign-ins sent at once to the real binary leave its peak
//! resident memory (`VmHWM`) under 200 MB. Each Argon2id verification holds about 19 MiB,
//! so unbounded they would take gigabytes. A process of its own, so that no other test's
//! memory counts; Linux only (it reads `/proc`).

use std::process::{Child, Command, Stdio};

use super::bursts::{burst, sign_in_form};
use super::{Browser, INCORRECT};
use crate::helpers::{binary_env, free_port, memory_kib, TestDb, REHOME_BIN};

const AT_ONCE: usize = 256;
const PEAK_LIMIT_KB: u64 = 200 * 1024;

struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn two_hundred_and_fifty_six_sign_ins_at_once_stay_under_200_mb() {
    if !std::path::Path::new("/proc/self/status").exists() {
        eprintln!("two_hundred_and_fifty_six_sign_ins_at_once_stay_under_200_mb: SKIPPED: no /proc (not Linux)");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let db = TestDb::create(dir.path()).await;
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let child = Command::new(REHOME_BIN)
        .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .env_remove("REHOME_DATA_KEY")
        .env_remove("REHOME_DATA_KEY_FILE")
        .env_remove("RUST_LOG")
        .envs(binary_env(&db.url))
        .env("REHOME_MEDIA_DIR", dir.path().join("media"))
        // Every attempt from this one address reaches the password check, and its 256
        // connections (people at 256 addresses, here all on loopback) are all served.
        .env("REHOME_SIGNIN_ADDRESS_LIMIT", "100000")
        .env("REHOME_MAX_CONNECTIONS_PER_ADDRESS", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start rehome serve");
    let server = Serving(child);
    assert!(crate::helpers::answers_ok(&format!("{base}/readyz"), 30).await, "the server never became ready");

    let mut browser = Browser::at(&base);
    let csrf = browser.get("/dashboard/login").await.csrf();
    // Distinct unknown emails: each one's own allowance is untouched, and an unknown email
    // costs a (dummy) verification like a known one.
    let forms = (0..AT_ONCE).map(|n| sign_in_form(&format!("someone{n}@nowhere.example"), "a wrong password!", &csrf));
    let pages = burst(&base, "/dashboard/login", &browser.cookie_header(), forms.collect()).await;

    let (_, peak) = memory_kib(server.0.id()).expect("the server's VmHWM");
    let incorrect = pages.iter().filter(|p| p.status == 401 && p.body.contains(INCORRECT)).count();
    let busy = pages.iter().filter(|p| p.status == 503 && p.headers.contains_key("retry-after")).count();
    eprintln!("{AT_ONCE} sign-ins at once: {incorrect} checked, {busy} answered busy; peak resident memory {peak} kB");
    let statuses: Vec<_> = pages.iter().map(|p| p.status).collect();
    assert_eq!(incorrect + busy, AT_ONCE, "each is refused as incorrect or answered busy: {statuses:?}");
    assert!(incorrect > 0, "some were checked");
    assert!(peak < PEAK_LIMIT_KB, "peak resident memory {peak} kB, over {PEAK_LIMIT_KB} kB");
    drop(server);
}
