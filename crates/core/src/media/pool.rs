//! The image decodes in flight: at most a few at once (about the cores), each charged the
//! memory its header says it will hold against a budget, so that six uploads of a
//! 40-megapixel picture (a 154 KB PNG decodes to 159 MB) cannot take a gigabyte at once.
//! A decode waits for its place and its memory, first come first served, for a while; then
//! the upload is answered 503 and a background job tries again later.
//!
//! The charge is an estimate from the header, never less than the decoded pixels
//! themselves ([`cleaning_cost`], [`thumbnail_cost`]). A decode charged more than the
//! whole budget is charged the whole budget: it runs, alone.

use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use image::{ImageDecoder, ImageReader};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{sniff, thumbnail, ImageKind};

/// The memory budget is counted in units of this many bytes (a semaphore counts in `u32`).
const UNIT: u64 = 64 * 1024;

#[derive(Debug, Clone)]
pub struct DecodePool(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    places: Arc<Semaphore>,
    memory: Arc<Semaphore>,
    budget_units: u32,
    wait: Duration,
}

/// No place or memory freed up within the wait.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the image decodes stayed busy")]
pub struct DecodeBusy;

/// A decode's place and memory, given back when dropped.
#[derive(Debug)]
pub struct DecodePermit {
    _memory: OwnedSemaphorePermit,
    _place: OwnedSemaphorePermit,
}

impl DecodePool {
    /// At most `at_once` decodes, holding at most `budget_bytes` between them; a decode waits
    /// at most `wait` to start.
    pub fn new(at_once: usize, budget_bytes: u64, wait: Duration) -> Self {
        let budget_units = u32::try_from(budget_bytes.div_ceil(UNIT)).unwrap_or(u32::MAX).max(1);
        Self(Arc::new(Inner {
            places: Arc::new(Semaphore::new(at_once.max(1))),
            memory: Arc::new(Semaphore::new(budget_units as usize)),
            budget_units,
            wait,
        }))
    }

    /// A place for a decode expected to hold `cost` bytes, once the budget has room for it.
    pub async fn admit(&self, cost: u64) -> Result<DecodePermit, DecodeBusy> {
        self.admit_within(cost, self.0.wait).await
    }

    /// As [`DecodePool::admit`], waiting at most `wait` (background work may wait longer).
    pub async fn admit_within(&self, cost: u64, wait: Duration) -> Result<DecodePermit, DecodeBusy> {
        let units = u32::try_from(cost.div_ceil(UNIT)).unwrap_or(u32::MAX).clamp(1, self.0.budget_units);
        let admitted = tokio::time::timeout(wait, async {
            // Memory first: a decode waiting for memory holds no place another could use.
            let memory = self.0.memory.clone().acquire_many_owned(units).await.ok()?;
            let place = self.0.places.clone().acquire_owned().await.ok()?;
            Some(DecodePermit { _memory: memory, _place: place })
        })
        .await;
        admitted.ok().flatten().ok_or(DecodeBusy)
    }
}

/// What a decode of `bytes` will hold, from its header: the decoded pixels in the
/// decoder's own layout, their width and height, and whether EXIF turns them (a turned
/// copy is made). `None` when the header does not parse (the image is refused without a
/// decode) or is over the pixel budget.
fn header(bytes: &[u8]) -> Option<(ImageKind, u64, u64, bool)> {
    let (kind, width, height) = sniff::identify(bytes)?;
    if !sniff::within_pixel_budget(width, height) {
        return None;
    }
    catch_unwind(AssertUnwindSafe(|| {
        let mut decoder = ImageReader::with_format(Cursor::new(bytes), kind.format()).into_decoder().ok()?;
        let turned = decoder.orientation().is_ok_and(|o| o != image::metadata::Orientation::NoTransforms);
        let mut decoded = decoder.total_bytes();
        if kind == ImageKind::Png && thumbnail::sixteen_bits(decoder.color_type()) {
            // Read as 8 bits a channel (`thumbnail::decode`).
            decoded /= 2;
        }
        if kind == ImageKind::Gif {
            // The first frame is decoded into a buffer of its own when it is not the
            // canvas, and may be larger than the canvas the header declares.
            decoded += 4 * gif_first_frame_pixels(bytes).unwrap_or(0);
        }
        Some((kind, decoded, u64::from(width) * u64::from(height), turned))
    }))
    .ok()
    .flatten()
}

/// The width × height of a GIF's first frame, from its image descriptor: after the screen
/// descriptor, its colour table and any extension blocks.
fn gif_first_frame_pixels(bytes: &[u8]) -> Option<u64> {
    let flags = *bytes.get(10)?;
    let mut at = 13 + if flags & 0x80 != 0 { 3 << ((flags & 7) + 1) } else { 0 };
    loop {
        match *bytes.get(at)? {
            // An extension: its label, then sub-blocks until an empty one.
            0x21 => {
                at += 2;
                loop {
                    let size = usize::from(*bytes.get(at)?);
                    at += 1 + size;
                    if size == 0 {
                        break;
                    }
                }
            }
            0x2C => {
                let side = |offset: usize| {
                    Some(u64::from(u16::from_le_bytes([*bytes.get(at + offset)?, *bytes.get(at + offset + 1)?])))
                };
                return Some(side(5)? * side(7)?);
            }
            _ => return None,
        }
    }
}

/// The peak memory of cleaning an upload or import ([`super::original::prepare`]): the
/// decoded pixels, a turned copy if EXIF asks for one, the 8-bit copy the JPEG and WebP
/// encoders take (GIF: a byte a pixel of palette indices; PNG writes straight from the
/// decoded image), and the encoded output. `None` when the image will be refused before
/// any decode.
pub fn cleaning_cost(bytes: &[u8]) -> Option<u64> {
    let (kind, decoded, pixels, turned) = header(bytes)?;
    let copy = match kind {
        ImageKind::Png => 0,
        ImageKind::Jpeg => 3 * pixels,
        ImageKind::Webp => 4 * pixels,
        ImageKind::Gif => pixels,
    };
    let output = match kind {
        ImageKind::Jpeg => pixels / 2,
        ImageKind::Gif => pixels,
        _ => decoded / 2,
    };
    Some(decoded + if turned { decoded } else { 0 } + copy + output)
}

/// The peak memory of making an image's thumbnails ([`thumbnail::make`]): the decoded
/// pixels, a turned copy if EXIF asks for one, and the two small renditions.
pub fn thumbnail_cost(bytes: &[u8]) -> Option<u64> {
    let (_, decoded, _, turned) = header(bytes)?;
    let renditions = 2 * 4 * u64::from(thumbnail::LARGE) * u64::from(thumbnail::LARGE);
    Some(decoded + if turned { decoded } else { 0 } + renditions)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[tokio::test(start_paused = true)]
    async fn decodes_wait_for_memory_then_are_refused_after_the_wait() {
        let pool = DecodePool::new(4, 100 * MIB, Duration::from_secs(10));
        let first = pool.admit(60 * MIB).await.unwrap();
        let second = pool.admit(30 * MIB).await.unwrap();
        // 60 + 30 + 20 is over the budget: the third waits, and gives up after the wait.
        assert!(pool.admit(20 * MIB).await.is_err());
        drop(second);
        let third = pool.admit(20 * MIB).await.unwrap();
        drop((first, third));
    }

    #[tokio::test(start_paused = true)]
    async fn at_most_so_many_decode_at_once_however_small() {
        let pool = DecodePool::new(2, 100 * MIB, Duration::from_secs(1));
        let held = (pool.admit(1).await.unwrap(), pool.admit(1).await.unwrap());
        assert!(pool.admit(1).await.is_err());
        drop(held);
        assert!(pool.admit(1).await.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn a_decode_over_the_whole_budget_runs_alone() {
        let pool = DecodePool::new(4, 100 * MIB, Duration::from_secs(1));
        let alone = pool.admit(500 * MIB).await.unwrap();
        assert!(pool.admit(1).await.is_err(), "nothing runs beside it");
        drop(alone);
        assert!(pool.admit(1).await.is_ok());
    }

    #[test]
    fn the_charge_is_at_least_the_decoded_pixels() {
        let rgba = image::DynamicImage::ImageRgba8(image::RgbaImage::new(300, 200));
        let mut png = Cursor::new(Vec::new());
        rgba.write_to(&mut png, image::ImageFormat::Png).unwrap();
        let png = png.into_inner();
        assert!(cleaning_cost(&png).unwrap() >= 300 * 200 * 4);
        assert!(thumbnail_cost(&png).unwrap() >= 300 * 200 * 4);
        assert_eq!(cleaning_cost(b"not an image"), None);
    }

    #[test]
    fn a_gif_frame_larger_than_its_canvas_is_charged_for() {
        let frame = |width: u32, height: u32| {
            let mut out = Vec::new();
            {
                let mut encoder = image::codecs::gif::GifEncoder::new(&mut out);
                let pixels = image::RgbaImage::from_pixel(width, height, image::Rgba([9, 9, 9, 255]));
                encoder.encode_frame(image::Frame::new(pixels)).unwrap();
            }
            out
        };
        assert_eq!(gif_first_frame_pixels(&frame(30, 20)), Some(600));
        // The same file with a 2×2 canvas: the frame still decodes at 30×20.
        let mut small_canvas = frame(30, 20);
        small_canvas[6..10].copy_from_slice(&[2, 0, 2, 0]);
        assert_eq!(gif_first_frame_pixels(&small_canvas), Some(600));
    }
}
