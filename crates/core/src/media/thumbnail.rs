//! Thumbnails: `medium` fits 300×300 and `large` 1024×1024, aspect kept, never enlarged.
//! Decoding is bounded (dimensions and allocation) so a small file that declares a huge
//! canvas (a decompression bomb) fails fast instead of exhausting memory.

use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};

use image::codecs::jpeg::JpegEncoder;
use image::metadata::Orientation;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits};

use super::ImageKind;

pub const MEDIUM: u32 = 300;
pub const LARGE: u32 = 1024;
/// Widest or tallest image decoded.
pub const MAX_DIMENSION: u32 = 16_384;
/// Most memory a decoder may allocate: a 12-megapixel RGB photo needs 36 MB; an
/// RGBA 8192×8192 canvas 256 MiB.
pub const MAX_ALLOC: u64 = 256 * 1024 * 1024;
const JPEG_QUALITY: u8 = 82;

/// One encoded thumbnail.
#[derive(Debug)]
pub struct Encoded {
    pub bytes: Vec<u8>,
    /// `jpg`, or `png` when the photo has transparency.
    pub extension: &'static str,
    pub width: u32,
    pub height: u32,
}

#[derive(Debug)]
pub struct Thumbnails {
    pub medium: Encoded,
    pub large: Encoded,
}

/// The size of a `width`×`height` image scaled to fit in `max`×`max`, aspect kept (each side
/// rounded, at least 1); unchanged when it already fits.
pub fn fit_within(width: u32, height: u32, max: u32) -> (u32, u32) {
    if width <= max && height <= max {
        return (width, height);
    }
    let (w, h, m) = (u64::from(width), u64::from(height), u64::from(max));
    let scaled = |side: u64, other: u64| ((side * m + other / 2) / other).clamp(1, m) as u32;
    if width >= height {
        (max, scaled(h, w))
    } else {
        (scaled(w, h), max)
    }
}

/// Decodes a photo under the limits (GIF: its first frame) and makes both thumbnails.
/// The error is a short reason for the log. Never panics on any input.
pub fn make(bytes: &[u8], kind: ImageKind) -> Result<Thumbnails, String> {
    catch_unwind(AssertUnwindSafe(|| make_unguarded(bytes, kind)))
        .unwrap_or_else(|_| Err("the decoder panicked".to_owned()))
}

fn make_unguarded(bytes: &[u8], kind: ImageKind) -> Result<Thumbnails, String> {
    let image = decode(bytes, kind)?;
    let large = scaled(&image, LARGE);
    let medium = scaled(&large, MEDIUM);
    Ok(Thumbnails { medium: encode(&medium)?, large: encode(&large)? })
}

/// Decodes with the limits and turns the image upright by its EXIF orientation (JPEG,
/// WebP); the bare decode the performance figures compare against.
pub fn decode(bytes: &[u8], kind: ImageKind) -> Result<DynamicImage, String> {
    let unreadable = |e: image::ImageError| format!("cannot decode the {} image: {e}", kind.extension());
    // Photos stored before the pixel budget was enforced are held to it here.
    let (width, height) = ImageReader::with_format(Cursor::new(bytes), kind.format())
        .into_dimensions()
        .map_err(|e| format!("cannot read the {} header: {e}", kind.extension()))?;
    if !super::sniff::within_pixel_budget(width, height) {
        return Err(format!("{width}×{height} is over the pixel budget"));
    }
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_DIMENSION);
    limits.max_image_height = Some(MAX_DIMENSION);
    limits.max_alloc = Some(MAX_ALLOC);
    let mut reader = ImageReader::with_format(Cursor::new(bytes), kind.format());
    reader.limits(limits.clone());
    let mut decoder = reader.into_decoder().map_err(unreadable)?;
    if kind == ImageKind::Png && sixteen_bits(decoder.color_type()) {
        return png_as_eight_bits(bytes);
    }
    limits.reserve(decoder.total_bytes()).map_err(unreadable)?;
    // An orientation that cannot be read is no orientation: the pixels are still the photo.
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    let mut image = DynamicImage::from_decoder(decoder).map_err(unreadable)?;
    image.apply_orientation(orientation);
    Ok(image)
}

/// Two bytes a channel.
pub(crate) fn sixteen_bits(color: image::ColorType) -> bool {
    color.bytes_per_pixel() == 2 * color.channel_count()
}

/// A 16-bit PNG read as 8 bits a channel (the thumbnails and the cleaned original are 8-bit
/// anyway), under the same allocation limit: half the memory of its 16-bit pixels.
fn png_as_eight_bits(bytes: &[u8]) -> Result<DynamicImage, String> {
    let unreadable = |e: png::DecodingError| format!("cannot decode the png image: {e}");
    let mut decoder = png::Decoder::new_with_limits(
        Cursor::new(bytes),
        png::Limits { bytes: usize::try_from(MAX_ALLOC).unwrap_or(usize::MAX) },
    );
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().map_err(unreadable)?;
    let size = reader.output_buffer_size().ok_or("the png image is too large to decode")?;
    if u64::try_from(size).unwrap_or(u64::MAX) > MAX_ALLOC {
        return Err("the png image is over the decode memory limit".to_owned());
    }
    let mut pixels = vec![0; size];
    let frame = reader.next_frame(&mut pixels).map_err(unreadable)?;
    pixels.truncate(frame.buffer_size());
    let (width, height) = (frame.width, frame.height);
    let wrong = || "the png image's pixels do not fill it".to_owned();
    Ok(match frame.color_type {
        png::ColorType::Rgba => {
            DynamicImage::ImageRgba8(image::RgbaImage::from_raw(width, height, pixels).ok_or_else(wrong)?)
        }
        png::ColorType::Rgb => {
            DynamicImage::ImageRgb8(image::RgbImage::from_raw(width, height, pixels).ok_or_else(wrong)?)
        }
        png::ColorType::GrayscaleAlpha => {
            DynamicImage::ImageLumaA8(image::GrayAlphaImage::from_raw(width, height, pixels).ok_or_else(wrong)?)
        }
        png::ColorType::Grayscale => {
            DynamicImage::ImageLuma8(image::GrayImage::from_raw(width, height, pixels).ok_or_else(wrong)?)
        }
        png::ColorType::Indexed => return Err("the png image's palette was not expanded".to_owned()),
    })
}

fn scaled(image: &DynamicImage, max: u32) -> DynamicImage {
    let (width, height) = fit_within(image.width(), image.height(), max);
    if (width, height) == (image.width(), image.height()) {
        image.clone()
    } else {
        // Area averaging: fast and free of aliasing when shrinking a photo several times.
        image.thumbnail_exact(width, height)
    }
}

fn encode(image: &DynamicImage) -> Result<Encoded, String> {
    let mut out = Cursor::new(Vec::new());
    let extension = if image.color().has_alpha() {
        DynamicImage::ImageRgba8(image.to_rgba8()).write_to(&mut out, ImageFormat::Png).map_err(|e| e.to_string())?;
        "png"
    } else {
        let rgb = image.to_rgb8();
        JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY).encode_image(&rgb).map_err(|e| e.to_string())?;
        "jpg"
    };
    Ok(Encoded { bytes: out.into_inner(), extension, width: image.width(), height: image.height() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Rgba, RgbaImage};

    #[test]
    fn fitting_keeps_the_aspect_and_never_enlarges() {
        assert_eq!(fit_within(4000, 3000, 1024), (1024, 768));
        assert_eq!(fit_within(3000, 4000, 300), (225, 300));
        assert_eq!(fit_within(1024, 1024, 300), (300, 300));
        assert_eq!(fit_within(200, 100, 300), (200, 100));
        assert_eq!(fit_within(300, 300, 300), (300, 300));
        assert_eq!(fit_within(10_000, 1, 300), (300, 1));
        assert_eq!(fit_within(1, 10_000, 300), (1, 300));
        assert_eq!(fit_within(1001, 1000, 1000), (1000, 999));
        assert_eq!(fit_within(u32::MAX, u32::MAX - 1, 1024), (1024, 1024));
    }

    #[test]
    fn thumbnails_fit_their_boxes_and_keep_transparency() {
        let opaque = DynamicImage::ImageRgb8(image::RgbImage::from_pixel(1500, 600, image::Rgb([1, 2, 3])));
        let mut png = Cursor::new(Vec::new());
        opaque.write_to(&mut png, ImageFormat::Png).unwrap();
        let thumbs = make(png.get_ref(), ImageKind::Png).unwrap();
        assert_eq!((thumbs.large.width, thumbs.large.height, thumbs.large.extension), (1024, 410, "jpg"));
        assert_eq!((thumbs.medium.width, thumbs.medium.height), (300, 120));

        let clear = DynamicImage::ImageRgba8(RgbaImage::from_pixel(40, 80, Rgba([0, 0, 0, 0])));
        let mut png = Cursor::new(Vec::new());
        clear.write_to(&mut png, ImageFormat::Png).unwrap();
        let thumbs = make(png.get_ref(), ImageKind::Png).unwrap();
        assert_eq!((thumbs.medium.width, thumbs.medium.height, thumbs.medium.extension), (40, 80, "png"));
    }

    #[test]
    fn garbage_is_a_reason_not_a_panic() {
        assert!(make(b"\x89PNG\r\n\x1a\nnonsense", ImageKind::Png).is_err());
        assert!(make(&[0xFF, 0xD8, 0xFF, 0, 1, 2, 3], ImageKind::Jpeg).is_err());
        assert!(make(b"GIF89a\x01", ImageKind::Gif).is_err());
        assert!(make(b"RIFF\0\0\0\0WEBPVP8 ", ImageKind::Webp).is_err());
    }
}
