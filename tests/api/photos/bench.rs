//! Photo figures for `docs/performance.md` (ignored; run in release):
//!
//! ```sh
//! cargo test --release --test api photos::bench -- --ignored --nocapture --test-threads 1
//! ```

use std::time::{Duration, Instant};

use image::codecs::jpeg::JpegEncoder;
use image::ImageFormat;
use rehome::media::thumbnail;
use rehome::media::ImageKind;

use super::decoding::{costly_gif, costly_png};
use super::process::Process;
use super::{b64, image_bytes, MAX, UPLOAD};

/// The binary in its own process (`Process`), warmed up with three small uploads; with
/// `thumbnails` false the photo jobs are paused, so that only the request path is measured
/// (thumbnails would read the photo back meanwhile).
async fn bench_server(thumbnails: bool) -> Process {
    let paused = if thumbnails { "false" } else { "true" };
    let server = Process::start(&[("REHOME_PHOTO_JOBS_PAUSED", paused)]).await;
    let small =
        serde_json::to_vec(&serde_json::json!({"image_base64": b64(&image_bytes(ImageFormat::Png, 8, 8))})).unwrap();
    for _ in 0..3 {
        assert_eq!(server.post(UPLOAD, small.clone()).await.0, 201);
    }
    server
}

/// A photo-like JPEG as large as an upload may be: 6000×4000 (24 megapixels, a full-frame
/// camera's), gradients under fine noise, at the highest quality that stays under 10 MiB.
fn ten_mebibyte_jpeg() -> Vec<u8> {
    let mut seed = 0x2545_f491_u32;
    let rgb = image::RgbImage::from_fn(6000, 4000, |x, y| {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        let noise = (seed % 40) as u8;
        image::Rgb([((x / 16) % 200) as u8 + noise, ((y / 12) % 200) as u8 + noise, ((x + y) / 40 % 200) as u8 + noise])
    });
    (70..=100)
        .rev()
        .map(|quality| {
            let mut out = Vec::new();
            JpegEncoder::new_with_quality(&mut out, quality).encode_image(&rgb).unwrap();
            out
        })
        .find(|jpeg| jpeg.len() < MAX)
        .expect("a quality that fits under 10 MiB")
}

fn spread(mut times: Vec<Duration>) -> String {
    times.sort();
    format!("min {:?}, median {:?}, max {:?}", times[0], times[times.len() / 2], times[times.len() - 1])
}

#[tokio::test]
#[ignore = "benchmark: run in release with --ignored --nocapture"]
async fn bench_a_ten_mebibyte_upload() {
    let photo = ten_mebibyte_jpeg();
    let body = serde_json::to_vec(&serde_json::json!({"image_base64": b64(&photo), "filename": "big.jpg"})).unwrap();
    println!("photo: 6000x4000 JPEG, {} bytes ({} bytes of JSON)", photo.len(), body.len());
    let client = reqwest::Client::new();

    // The request path alone (thumbnails paused): latency and the server's memory.
    let server = bench_server(false).await;
    let (rss_before, _) = server.memory_kib();
    let mut times = Vec::new();
    let mut peaks = Vec::new();
    for _ in 0..10 {
        let started = Instant::now();
        let (status, _) = server.post(UPLOAD, body.clone()).await;
        times.push(started.elapsed());
        assert_eq!(status, 201);
        peaks.push(server.memory_kib().1);
    }
    let (rss_after, peak) = server.memory_kib();
    println!("upload, request to 201: {}", spread(times));
    println!(
        "server RSS before {rss_before} KiB, after {rss_after} KiB; peak (VmHWM) {} KiB after the first, {peak} KiB after all: growth {} MiB",
        peaks[0],
        mib_over(peak, rss_before)
    );
    drop(server);

    // Thumbnails on: from the 201 to both thumbnails ready, one photo at a time.
    let server = bench_server(true).await;
    let mut times = Vec::new();
    for _ in 0..5 {
        let (status, uploaded) = server.post(UPLOAD, body.clone()).await;
        assert_eq!(status, 201);
        let answered = Instant::now();
        let id = uploaded["attachment_id"].as_i64().unwrap();
        loop {
            let photo: serde_json::Value = client
                .get(server.url(&format!("/v1/listings/photos/{id}")))
                .bearer_auth(&server.key)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if photo["thumbnail_status"] != "pending" {
                assert_eq!(photo["thumbnail_status"], "done", "{photo}");
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        times.push(answered.elapsed());
    }
    println!("thumbnails, 201 to both ready: {}", spread(times));
    println!("server peak (VmHWM) with thumbnails: {} KiB", server.memory_kib().1);
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

/// `{"k0":0,…}`: about 12 bytes a key.
fn key_bomb(keys: usize) -> Vec<u8> {
    let members: Vec<String> = (0..keys).map(|i| format!("\"k{i}\":0")).collect();
    format!("{{{}}}", members.join(",")).into_bytes()
}

fn mib_over(peak: u64, before: u64) -> u64 {
    peak.saturating_sub(before) / 1024
}

/// The figures of issue 35 (items 5 and 7) for `docs/performance.md`, each on a fresh
/// server process; `REHOME_BENCH_BIN` names another build's binary to compare.
#[tokio::test]
#[ignore = "benchmark: run in release with --ignored --nocapture"]
async fn bench_key_bombs_and_costly_pictures() {
    let paused = [("REHOME_PHOTO_JOBS_PAUSED", "true")];
    let bomb = key_bomb(1_160_000);
    at_once(&format!("key bomb ({} bytes)", bomb.len()), "/v1/listings", &bomb, 1).await;
    // Sixteen at once, and another request's latency meanwhile.
    let server = Process::start(&paused).await;
    let client = reqwest::Client::new();
    let mut quiet = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        client.get(server.url("/v1/listings")).bearer_auth(&server.key).send().await.unwrap().bytes().await.unwrap();
        quiet.push(started.elapsed());
    }
    let (_, before) = server.memory_kib();
    let started = Instant::now();
    let done = std::sync::atomic::AtomicBool::new(false);
    let bombs = async {
        let answers = futures_util::future::join_all((0..16).map(|_| server.post("/v1/listings", bomb.clone()))).await;
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        answers
    };
    // Reads for as long as the bombs are being sent and answered.
    let reads = async {
        let mut busy = Vec::new();
        while !done.load(std::sync::atomic::Ordering::Relaxed) {
            let started = Instant::now();
            client
                .get(server.url("/v1/listings"))
                .bearer_auth(&server.key)
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap();
            busy.push(started.elapsed());
        }
        busy
    };
    let (answers, mut busy) = tokio::join!(bombs, reads);
    let took = started.elapsed();
    quiet.sort();
    busy.sort();
    let statuses: Vec<u16> = answers.iter().map(|(s, _)| *s).collect();
    println!(
        "16 key bombs at once: {statuses:?} in {took:?}, peak +{} MiB, RSS after {} MiB; GET /v1/listings median {:?} quiet, {:?} meanwhile",
        mib_over(server.memory_kib().1, before),
        server.memory_kib().0 / 1024,
        quiet[10],
        busy[busy.len() / 2]
    );
    println!("  ({} reads meanwhile, slowest {:?})", busy.len(), busy[busy.len() - 1]);
    drop(server);
    let png = costly_png(6300);
    let body = serde_json::to_vec(&serde_json::json!({"image_base64": b64(&png)})).unwrap();
    at_once(&format!("6300² PNG ({} bytes)", png.len()), UPLOAD, &body, 1).await;
    at_once("6300² PNGs", UPLOAD, &body, 6).await;
    let gif = costly_gif(6000);
    let body = serde_json::to_vec(&serde_json::json!({"image_base64": b64(&gif)})).unwrap();
    at_once(&format!("6000² GIF ({} bytes)", gif.len()), UPLOAD, &body, 1).await;
    at_once("6000² GIFs", UPLOAD, &body, 3).await;
}

/// Sends `body` to `path` `n` times at once, to a fresh server process; prints the answers,
/// how long they took and how much the server's peak memory grew.
async fn at_once(what: &str, path: &str, body: &[u8], n: usize) {
    let server = Process::start(&[("REHOME_PHOTO_JOBS_PAUSED", "true")]).await;
    let (_, before) = server.memory_kib();
    let started = Instant::now();
    let answers = futures_util::future::join_all((0..n).map(|_| server.post(path, body.to_vec()))).await;
    let statuses: Vec<u16> = answers.iter().map(|(s, _)| *s).collect();
    println!(
        "{n} × {what} at once: {statuses:?} in {:?}, peak +{} MiB",
        started.elapsed(),
        mib_over(server.memory_kib().1, before)
    );
}

/// What the JSON shape check costs where it passes (a 10 MiB photo as base64, the largest
/// body) and where it refuses (a key bomb), beside the parse it guards.
#[test]
#[ignore = "benchmark: run in release with --ignored --nocapture"]
fn bench_the_json_shape_check() {
    use rehome::http::body::parse_object;
    let photo = serde_json::to_vec(&serde_json::json!({"image_base64": b64(&vec![7u8; MAX - 1])})).unwrap();
    let bomb = key_bomb(1_160_000);
    let runs = 20;
    let time = |f: &dyn Fn()| {
        let started = Instant::now();
        for _ in 0..runs {
            f();
        }
        started.elapsed() / runs
    };
    let parse = time(&|| {
        let _: serde_json::Value = serde_json::from_slice(&photo).unwrap();
    });
    let checked = time(&|| assert!(parse_object(&photo).is_ok()));
    let refused = time(&|| assert!(parse_object(&bomb).is_err()));
    let unbounded = time(&|| {
        let _: serde_json::Value = serde_json::from_slice(&bomb).unwrap();
    });
    println!(
        "{}-byte photo body: parse alone {parse:?}, shape check and parse {checked:?}; {}-byte key bomb: refused in {refused:?}, parsed whole in {unbounded:?}",
        photo.len(),
        bomb.len()
    );
}
