//! Photos are never served as uploaded (issue 18, item 7): EXIF metadata (a GPS position, a
//! camera's serial) is gone, the orientation it gave is applied, and bytes hidden after the
//! image are not kept.

use image::ImageFormat;

use super::*;
use crate::helpers::{assert_error, spawn_app};

/// A big-endian EXIF block: IFD0 with Orientation, Make (a camera serial) and a GPS IFD
/// pointer; the GPS IFD with a latitude.
fn exif_block(orientation: u16) -> Vec<u8> {
    let make = b"CAM-SERIAL-0042\0";
    let entry = |tag: u16, kind: u16, count: u32, value: [u8; 4]| {
        let mut e = Vec::new();
        e.extend_from_slice(&tag.to_be_bytes());
        e.extend_from_slice(&kind.to_be_bytes());
        e.extend_from_slice(&count.to_be_bytes());
        e.extend_from_slice(&value);
        e
    };
    // Offsets from the TIFF header: IFD0 at 8 (3 entries: 2 + 36 + 4 = 42 bytes), then the
    // Make text (16), then the GPS IFD (2 entries: 2 + 24 + 4 = 30), then its rationals.
    let make_at = 8 + 42;
    let gps_at = make_at + make.len() as u32;
    let latitude_at = gps_at + 30;
    let mut tiff = b"MM\0\x2a\0\0\0\x08".to_vec();
    tiff.extend_from_slice(&3u16.to_be_bytes());
    let [o1, o2] = orientation.to_be_bytes();
    tiff.extend(entry(0x0112, 3, 1, [o1, o2, 0, 0]));
    tiff.extend(entry(0x010F, 2, make.len() as u32, make_at.to_be_bytes()));
    tiff.extend(entry(0x8825, 4, 1, gps_at.to_be_bytes()));
    tiff.extend_from_slice(&0u32.to_be_bytes());
    tiff.extend_from_slice(make);
    tiff.extend_from_slice(&2u16.to_be_bytes());
    tiff.extend(entry(0x0001, 2, 2, *b"N\0\0\0"));
    tiff.extend(entry(0x0002, 5, 3, latitude_at.to_be_bytes()));
    tiff.extend_from_slice(&0u32.to_be_bytes());
    for (numerator, denominator) in [(51u32, 1u32), (30, 1), (2_644, 100)] {
        tiff.extend_from_slice(&numerator.to_be_bytes());
        tiff.extend_from_slice(&denominator.to_be_bytes());
    }
    let mut block = b"Exif\0\0".to_vec();
    block.extend(tiff);
    block
}

/// A JPEG of `width`×`height` with an APP1 EXIF segment right after its SOI marker.
fn jpeg_with_exif(width: u32, height: u32, orientation: u16) -> Vec<u8> {
    let plain = image_bytes(ImageFormat::Jpeg, width, height);
    let exif = exif_block(orientation);
    let mut jpeg = plain[..2].to_vec();
    jpeg.extend_from_slice(&[0xFF, 0xE1]);
    jpeg.extend_from_slice(&(exif.len() as u16 + 2).to_be_bytes());
    jpeg.extend(exif);
    jpeg.extend_from_slice(&plain[2..]);
    jpeg
}

/// The JPEG marker segments before the image data (`0xE1` is APP1, where EXIF lives).
fn segments(jpeg: &[u8]) -> Vec<u8> {
    let mut markers = Vec::new();
    let mut at = 2;
    while at + 4 <= jpeg.len() && jpeg[at] == 0xFF {
        let marker = jpeg[at + 1];
        if marker == 0xDA {
            break;
        }
        markers.push(marker);
        at += 2 + usize::from(u16::from_be_bytes([jpeg[at + 2], jpeg[at + 3]]));
    }
    markers
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test]
async fn exif_metadata_is_stripped_and_its_orientation_applied() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let sent = jpeg_with_exif(40, 30, 6);
    assert!(segments(&sent).contains(&0xE1) && contains(&sent, b"CAM-SERIAL-0042"), "the test's JPEG has EXIF");
    // The decoders read it as we wrote it: rotate 90° clockwise.
    let photo = uploaded(&app, &partner.key, &sent).await;
    assert_eq!((photo["width"].as_i64(), photo["height"].as_i64()), (Some(30), Some(40)), "{photo}");
    let (status, mime, served) = fetch(photo["url"].as_str().unwrap()).await;
    assert_eq!((status, mime.as_str()), (200, "image/jpeg"));
    assert!(!segments(&served).contains(&0xE1), "no APP1 (EXIF) segment is served: {:?}", segments(&served));
    assert!(!contains(&served, b"Exif") && !contains(&served, b"CAM-SERIAL"));
    assert_eq!(dimensions(&served), (30, 40), "served upright");
}

#[tokio::test]
async fn a_gif_with_a_script_after_it_is_served_re_encoded() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let mut polyglot = image_bytes(ImageFormat::Gif, 12, 12);
    polyglot.extend_from_slice(b"<script>fetch('/v1/listings')</script>");
    let photo = uploaded(&app, &partner.key, &polyglot).await;
    assert_eq!(photo["mime"], "image/gif");
    let (status, _, served) = fetch(photo["url"].as_str().unwrap()).await;
    assert_eq!(status, 200);
    assert!(!contains(&served, b"<script"), "the bytes after the image are not served");
    assert_eq!(dimensions(&served), (12, 12));
}

#[tokio::test]
async fn an_image_whose_pixels_do_not_decode_is_refused_and_nothing_is_stored() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let mut broken = image_bytes(ImageFormat::Png, 64, 64);
    let cut = broken.len() - 30;
    broken.truncate(cut); // the header parses, the image data is cut short
    assert_error(upload(&app, &partner.key, &broken, None).await, 415, "unsupported_mime").await;
    assert!(!app.dir.path().join("media").exists() || walk_files(&app.dir.path().join("media")) == 0);
}

fn walk_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| if e.path().is_dir() { walk_files(&e.path()) } else { 1 }).sum())
        .unwrap_or(0)
}
