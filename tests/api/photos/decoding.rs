//! The image decodes' memory budget (issue 35): costly pictures sent together are decoded
//! within the budget, measured on the real binary as its own process.

use std::io::Cursor;

use image::{DynamicImage, ImageFormat, Rgba, RgbaImage};
use serde_json::json;

use super::process::Process;
use super::{b64, UPLOAD};

/// A `side`² RGBA PNG that is mostly transparent with a few stripes: 40 megapixels in
/// under 1 MB, 159 MB once decoded.
pub(super) fn costly_png(side: u32) -> Vec<u8> {
    let stripes = RgbaImage::from_fn(side, side, |x, y| {
        if (x / 64 + y / 64) % 7 == 0 {
            Rgba([200, 30, 30, 255])
        } else {
            Rgba([0, 0, 0, 0])
        }
    });
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgba8(stripes).write_to(&mut out, ImageFormat::Png).unwrap();
    out.into_inner()
}

/// A `side`² RGBA PNG of 16 bits a channel, written row by row (the test never holds its
/// pixels): stripes on transparency, like [`costly_png`].
fn sixteen_bit_png(side: u32) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    let mut encoder = png::Encoder::new(&mut out, side, side);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Sixteen);
    encoder.set_compression(png::Compression::Fast);
    let mut header = encoder.write_header().unwrap();
    {
        let mut writer = header.stream_writer().unwrap();
        let mut row = vec![0u8; side as usize * 8];
        for y in 0..side {
            for x in 0..side as usize {
                let on = (x / 64 + y as usize / 64) % 7 == 0;
                let pixel: [u8; 8] = if on { [200, 0, 30, 0, 30, 0, 255, 255] } else { [0; 8] };
                row[x * 8..x * 8 + 8].copy_from_slice(&pixel);
            }
            std::io::Write::write_all(&mut writer, &row).unwrap();
        }
        writer.finish().unwrap();
    }
    header.finish().unwrap();
    out.into_inner()
}

/// A valid 16-bit 40-megapixel PNG is a photo like any other (it was answered 415): it is
/// read as 8 bits a channel, 160 MB instead of 320, within the decode limit and the budget.
#[tokio::test]
async fn a_sixteen_bit_forty_megapixel_png_is_accepted() {
    let server =
        Process::start(&[("REHOME_PHOTO_JOBS_PAUSED", "true"), ("REHOME_IMAGE_DECODE_MEMORY_MB", "256")]).await;
    let png = sixteen_bit_png(6300);
    let body = serde_json::to_vec(&json!({ "image_base64": b64(&png) })).unwrap();
    let (status, answer) = server.post(UPLOAD, body).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!((answer["width"].as_u64(), answer["height"].as_u64()), (Some(6300), Some(6300)), "{answer}");
}

/// A `side`² GIF of one colour: a few kilobytes that decode to `side`² × 4 bytes.
pub(super) fn costly_gif(side: u32) -> Vec<u8> {
    let mut gif = Vec::new();
    {
        let mut encoder = image::codecs::gif::GifEncoder::new_with_speed(&mut gif, 30);
        let canvas = RgbaImage::from_pixel(side, side, Rgba([20, 120, 20, 255]));
        encoder.encode_frame(image::Frame::new(canvas)).unwrap();
    }
    gif
}

/// Sends `body` to the upload `n` times at once; the statuses, each checked to be a 201 or
/// a `503 server_busy`.
async fn upload_at_once(server: &Process, body: &[u8], n: usize) -> Vec<u16> {
    let sends = (0..n).map(|_| server.post(UPLOAD, body.to_vec()));
    let answers = futures_util::future::join_all(sends).await;
    for (status, answer) in &answers {
        assert!(*status == 201 || (*status == 503 && answer["code"] == "server_busy"), "{status} {answer}");
    }
    answers.into_iter().map(|(status, _)| status).collect()
}

#[tokio::test]
async fn six_forty_megapixel_pictures_at_once_are_decoded_within_the_budget() {
    let server =
        Process::start(&[("REHOME_PHOTO_JOBS_PAUSED", "true"), ("REHOME_IMAGE_DECODE_MEMORY_MB", "256")]).await;
    let png = costly_png(6300);
    let body = serde_json::to_vec(&json!({ "image_base64": b64(&png) })).unwrap();
    let (_, peak_before) = server.memory_kib();
    let statuses = upload_at_once(&server, &body, 6).await;
    let (_, peak) = server.memory_kib();
    let grown_mib = peak.saturating_sub(peak_before) / 1024;
    println!("six 6300² PNGs ({} bytes each) at once: {statuses:?}, peak grew {grown_mib} MiB", png.len());
    assert!(statuses.contains(&201), "{statuses:?}");
    // One decode of 159 MB (and its output) at a time under a 256 MiB budget; six at once
    // grew the peak by about 950 MB.
    assert!(grown_mib < 400, "peak grew {grown_mib} MiB");
}

/// A GIF of a few kilobytes declaring a 6000×6000 canvas decodes to 144 MB: three at once
/// are decoded one by one, and cleaning one no longer copies it twice.
#[tokio::test]
async fn gif_bombs_at_once_are_decoded_within_the_budget() {
    let server =
        Process::start(&[("REHOME_PHOTO_JOBS_PAUSED", "true"), ("REHOME_IMAGE_DECODE_MEMORY_MB", "256")]).await;
    let gif = costly_gif(6000);
    let body = serde_json::to_vec(&json!({ "image_base64": b64(&gif) })).unwrap();
    let (_, peak_before) = server.memory_kib();
    let statuses = upload_at_once(&server, &body, 3).await;
    let (_, peak) = server.memory_kib();
    let grown_mib = peak.saturating_sub(peak_before) / 1024;
    println!("three 6000² GIFs ({} bytes each) at once: {statuses:?}, peak grew {grown_mib} MiB", gif.len());
    assert!(statuses.contains(&201), "{statuses:?}");
    assert!(grown_mib < 400, "peak grew {grown_mib} MiB");
}
