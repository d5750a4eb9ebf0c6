//! One integrator's full sync: walks a brand's whole catalogue with `updated_since` and
//! `next_cursor` on one keep-alive connection, parsing every page as a client would, and
//! prints `rows seconds pages`. The client of issue 34's sync-walk figure
//! (`bench/scale.py run`), in Rust so that the walk measures the server rather than a Python
//! client's JSON parsing.
//!
//!     cargo run --release --example sync_walk -- http://127.0.0.1:8080 <api key> [per_page]

use std::time::Instant;

use anyhow::{bail, Context};

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(base), Some(key)) = (args.next(), args.next()) else {
        bail!("usage: sync_walk BASE_URL API_KEY [PER_PAGE]");
    };
    let per_page: u32 = args.next().map_or(Ok(100), |n| n.parse()).context("per_page")?;
    let client = reqwest::Client::new();
    let mut url = format!("{base}/v1/listings?updated_since=1970-01-01T00:00:00Z&per_page={per_page}");
    let (mut rows, mut pages) = (0usize, 0usize);
    let started = Instant::now();
    loop {
        let response = client.get(&url).bearer_auth(&key).send().await?;
        let status = response.status();
        let body = response.bytes().await?;
        if !status.is_success() {
            bail!("page {pages}: {status} {}", String::from_utf8_lossy(&body));
        }
        let page: serde_json::Value = serde_json::from_slice(&body)?;
        rows += page["data"].as_array().context("no data")?.len();
        pages += 1;
        if page["meta"]["has_more"] != serde_json::Value::Bool(true) {
            break;
        }
        let cursor = page["meta"]["next_cursor"].as_str().context("has_more without next_cursor")?;
        let cursor: String = url::form_urlencoded::byte_serialize(cursor.as_bytes()).collect();
        url = format!("{base}/v1/listings?cursor={cursor}&per_page={per_page}");
    }
    println!("{rows} {:.3} {pages}", started.elapsed().as_secs_f64());
    Ok(())
}
