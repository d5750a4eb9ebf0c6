//! Photo figures for `docs/performance.md` (ignored; run in release):
//!
//! ```sh
//! cargo test --release --test api photos::bench -- --ignored --nocapture --test-threads 1
//! ```

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use image::codecs::jpeg::JpegEncoder;
use image::ImageFormat;
use rehome::domain::user::Role;
use rehome::media::thumbnail;
use rehome::media::ImageKind;

use super::{b64, image_bytes, MAX, UPLOAD};
use crate::helpers::{binary_env, open_store, TestDb};

const BIN: &str = env!("CARGO_BIN_EXE_rehome");

struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `VmRSS` and `VmHWM` (peak) of a process, in KiB.
fn memory_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn serve(dir: &Path, url: &str, port: u16) -> Serving {
    let child = Command::new(BIN)
        .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .envs(binary_env(url))
        .env("REHOME_MEDIA_DIR", dir.join("media"))
        // The request path alone: thumbnails would read the photo back meanwhile.
        .env("REHOME_PHOTO_JOBS_PAUSED", "true")
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start rehome");
    Serving(child)
}

#[tokio::test]
#[ignore = "benchmark: run in release with --ignored --nocapture"]
async fn bench_a_ten_mebibyte_upload() {
    let dir = tempfile::tempdir().unwrap();
    let db = TestDb::create_named(dir.path(), "bench.db").await;
    let store = open_store(&db.url).await;
    rehome::usecases::accounts::create_brand(&store, "acme", "Acme").await.unwrap();
    let user =
        rehome::usecases::accounts::create_user(&store, "acme", "Ada", "ada@acme.example", Role::Admin).await.unwrap();
    let key =
        rehome::usecases::accounts::create_key(&store, user.id, "read,write".parse().unwrap(), None, Some(100_000))
            .await
            .unwrap()
            .secret;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = serve(dir.path(), &db.url, port);
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while client.get(format!("{base}/readyz")).send().await.map(|r| r.status() != 200).unwrap_or(true) {
        assert!(Instant::now() < deadline, "server never ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let small =
        serde_json::to_vec(&serde_json::json!({"image_base64": b64(&image_bytes(ImageFormat::Png, 8, 8))})).unwrap();
    for _ in 0..3 {
        let response =
            client.post(format!("{base}{UPLOAD}")).bearer_auth(&key).header("content-type", "application/json");
        assert_eq!(response.body(small.clone()).send().await.unwrap().status(), 201);
    }
    // One byte under the limit: a real PNG padded after its end chunk.
    let mut photo = image_bytes(ImageFormat::Png, 16, 16);
    photo.resize(MAX - 1, 0);
    let body = serde_json::to_vec(&serde_json::json!({"image_base64": b64(&photo)})).unwrap();
    let pid = server.0.id();
    let (rss_before, _) = memory_kib(pid);
    let mut times = Vec::new();
    let mut peaks = Vec::new();
    for _ in 0..10 {
        let started = Instant::now();
        let response = client
            .post(format!("{base}{UPLOAD}"))
            .bearer_auth(&key)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        let status = response.status();
        let _ = response.bytes().await;
        times.push(started.elapsed());
        assert_eq!(status, 201);
        peaks.push(memory_kib(pid).1);
    }
    times.sort();
    let (rss_after, peak) = memory_kib(pid);
    println!(
        "10 MiB upload ({} bytes of JSON): min {:?}, median {:?}, max {:?}",
        body.len(),
        times[0],
        times[times.len() / 2],
        times[times.len() - 1]
    );
    println!(
        "server RSS before {} KiB, after {} KiB; peak (VmHWM) {} KiB after the first, {} KiB after all: growth {:.2}x the image",
        rss_before,
        rss_after,
        peaks[0],
        peak,
        (peak.saturating_sub(rss_before)) as f64 * 1024.0 / (MAX as f64)
    );
}

/// A 12-megapixel (4000×3000) photo-like JPEG: smooth gradients with fine noise.
fn twelve_megapixel_jpeg() -> Vec<u8> {
    let mut seed = 0x2545_f491_u32;
    let rgb = image::RgbImage::from_fn(4000, 3000, |x, y| {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        let noise = (seed % 24) as u8;
        image::Rgb([((x / 16) % 200) as u8 + noise, ((y / 12) % 200) as u8 + noise, ((x + y) / 40 % 200) as u8 + noise])
    });
    let mut out = Vec::new();
    JpegEncoder::new_with_quality(&mut out, 88).encode_image(&rgb).unwrap();
    out
}

#[test]
#[ignore = "benchmark: run in release with --ignored --nocapture"]
fn bench_thumbnails_of_a_twelve_megapixel_jpeg() {
    let jpeg = twelve_megapixel_jpeg();
    println!("12 MP JPEG: {} bytes", jpeg.len());
    let runs = 10;
    let _ = thumbnail::make(&jpeg, ImageKind::Jpeg).unwrap();
    let started = Instant::now();
    for _ in 0..runs {
        let image = thumbnail::decode(&jpeg, ImageKind::Jpeg).unwrap();
        assert_eq!((image.width(), image.height()), (4000, 3000));
    }
    let decode = started.elapsed() / runs;
    let started = Instant::now();
    for _ in 0..runs {
        let made = thumbnail::make(&jpeg, ImageKind::Jpeg).unwrap();
        assert_eq!((made.large.width, made.medium.width), (1024, 300));
    }
    let make = started.elapsed() / runs;
    // What an upload now costs before it is stored: decode, orient, re-encode (issue 18).
    let started = Instant::now();
    let mut cleaned = 0;
    for _ in 0..runs {
        let original = rehome::media::original::prepare(&jpeg).unwrap();
        assert_eq!((original.width, original.height), (4000, 3000));
        cleaned = original.bytes.len();
    }
    let prepare = started.elapsed() / runs;
    println!(
        "original cleaned (decode + re-encode q90) {:?} ({:.0}% over the decode), {} bytes stored",
        prepare,
        (prepare.as_secs_f64() / decode.as_secs_f64() - 1.0) * 100.0,
        cleaned
    );
    println!(
        "bare decode {:?} ({:.2}/s); decode + both thumbnails + encode {:?} ({:.2}/s, {:.0}% over the decode)",
        decode,
        1.0 / decode.as_secs_f64(),
        make,
        1.0 / make.as_secs_f64(),
        (make.as_secs_f64() / decode.as_secs_f64() - 1.0) * 100.0
    );
}
