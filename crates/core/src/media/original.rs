//! What the service keeps and serves as a photo's original: never the bytes a client sent.
//!
//! An upload (or an imported image) is typed from its bytes, held to the pixel budget by
//! its header, decoded under the limits of [`thumbnail::decode`], turned upright by its EXIF
//! orientation, and encoded again in its own format. So nothing but pixels survives: no
//! EXIF (the GPS position of a customer's home where a trade-in was photographed, a
//! camera's serial number), no comments or colour-profile payloads, no bytes after the
//! image (a `GIF89a…<script>` polyglot). JPEG is re-encoded at quality 90; PNG, WebP
//! (lossless) and GIF (its first frame) keep every pixel.

use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};

use image::{DynamicImage, ImageFormat};

use super::{sniff, thumbnail, ImageKind};

const JPEG_QUALITY: u8 = 90;

/// A photo ready to store.
#[derive(Debug)]
pub struct Original {
    pub kind: ImageKind,
    pub bytes: Vec<u8>,
    /// As served: after the orientation was applied.
    pub width: u32,
    pub height: u32,
}

/// Why bytes do not make a photo.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Not a JPEG, PNG, WebP or GIF whose header parses.
    #[error("not a readable image")]
    Unsupported,
    /// More pixels than [`sniff::MAX_PIXELS`], by its header: never decoded.
    #[error("{width}×{height} pixels is over the budget")]
    TooManyPixels { width: u32, height: u32 },
    /// The header parses but the pixels do not decode.
    #[error("{0}")]
    Undecodable(String),
}

/// The photo `bytes` make, cleaned. CPU work (a decode and an encode): call it off the
/// async threads. Never panics on any input.
pub fn prepare(bytes: &[u8]) -> Result<Original, Refusal> {
    let (kind, width, height) = sniff::identify(bytes).ok_or(Refusal::Unsupported)?;
    if !sniff::within_pixel_budget(width, height) {
        return Err(Refusal::TooManyPixels { width, height });
    }
    catch_unwind(AssertUnwindSafe(|| {
        let image = thumbnail::decode(bytes, kind).map_err(Refusal::Undecodable)?;
        let bytes = encode(&image, kind).map_err(Refusal::Undecodable)?;
        Ok(Original { kind, bytes, width: image.width(), height: image.height() })
    }))
    .unwrap_or_else(|_| Err(Refusal::Undecodable("the codec panicked".to_owned())))
}

/// A JPEG of `image`'s pixels with `jpeg-encoder` (AVX2 when the CPU has it): about four
/// times faster than the `image` crate's encoder on a 12-megapixel photo, which matters as
/// the upload waits for it.
fn jpeg(image: &DynamicImage) -> Result<Vec<u8>, String> {
    let rgb = image.to_rgb8();
    let (width, height) = (u16::try_from(rgb.width()), u16::try_from(rgb.height()));
    let (Ok(width), Ok(height)) = (width, height) else {
        return Err("the image is too wide or tall for JPEG".to_owned());
    };
    let mut out = Vec::new();
    jpeg_encoder::Encoder::new(&mut out, JPEG_QUALITY)
        .encode(rgb.as_raw(), width, height, jpeg_encoder::ColorType::Rgb)
        .map_err(|e| format!("cannot encode the jpg image: {e}"))?;
    Ok(out)
}

/// A GIF of `image`'s pixels with their exact palette, or `None` when they have more colours
/// than a GIF's 256 (never the first frame of a GIF, only a composite of it on a
/// transparent canvas can reach 257). The `image` crate's encoder copies the pixels twice
/// and looks each one up in a `BTreeMap`: a 6000×6000 canvas took 5 s and 470 MB. Here one
/// pass with the previous pixel remembered and a small map builds the palette and the
/// indices (a byte a pixel) together. Every transparent pixel is one transparent colour.
fn gif(image: &DynamicImage) -> Option<Result<Vec<u8>, String>> {
    const TRANSPARENT: u32 = 1 << 24;
    let (Ok(width), Ok(height)) = (u16::try_from(image.width()), u16::try_from(image.height())) else {
        return Some(Err("the image is too wide or tall for GIF".to_owned()));
    };
    let converted;
    let rgba = match image.as_rgba8() {
        Some(rgba) => rgba,
        None => {
            converted = image.to_rgba8();
            &converted
        }
    };
    let mut palette: Vec<u8> = Vec::with_capacity(3 * 256);
    let mut lookup: std::collections::HashMap<u32, u8> = std::collections::HashMap::with_capacity(256);
    let mut transparent = None;
    let mut indices = Vec::with_capacity(rgba.as_raw().len() / 4);
    let mut previous: Option<(u32, u8)> = None;
    for pixel in rgba.as_raw().chunks_exact(4) {
        let key = if pixel[3] == 0 {
            TRANSPARENT
        } else {
            u32::from(pixel[0]) << 16 | u32::from(pixel[1]) << 8 | u32::from(pixel[2])
        };
        let index = match previous {
            Some((seen, index)) if seen == key => index,
            _ => {
                let index = match lookup.get(&key) {
                    Some(&index) => index,
                    None => {
                        let index = u8::try_from(lookup.len()).ok()?;
                        lookup.insert(key, index);
                        if key == TRANSPARENT {
                            transparent = Some(index);
                            palette.extend_from_slice(&[0, 0, 0]);
                        } else {
                            palette.extend_from_slice(&pixel[..3]);
                        }
                        index
                    }
                };
                previous = Some((key, index));
                index
            }
        };
        indices.push(index);
    }
    let mut out = Vec::new();
    let written = gif::Encoder::new(&mut out, width, height, &palette).and_then(|mut encoder| {
        let frame = gif::Frame {
            width,
            height,
            transparent,
            buffer: std::borrow::Cow::Borrowed(&indices),
            ..gif::Frame::default()
        };
        encoder.write_frame(&frame)
    });
    Some(written.map(|()| out).map_err(|e| format!("cannot encode the gif image: {e}")))
}

/// `image` in `kind`'s format, with nothing but its pixels.
fn encode(image: &DynamicImage, kind: ImageKind) -> Result<Vec<u8>, String> {
    let mut out = Cursor::new(Vec::new());
    let written = match kind {
        ImageKind::Jpeg => return jpeg(image),
        ImageKind::Png => image.write_to(&mut out, ImageFormat::Png),
        // The WebP and GIF encoders take 8-bit RGB(A) only.
        ImageKind::Webp if image.color().has_alpha() => {
            DynamicImage::ImageRgba8(image.to_rgba8()).write_to(&mut out, ImageFormat::WebP)
        }
        ImageKind::Webp => DynamicImage::ImageRgb8(image.to_rgb8()).write_to(&mut out, ImageFormat::WebP),
        ImageKind::Gif => match gif(image) {
            Some(written) => return written,
            None => DynamicImage::ImageRgba8(image.to_rgba8()).write_to(&mut out, ImageFormat::Gif),
        },
    };
    written.map_err(|e| format!("cannot encode the {} image: {e}", kind.extension()))?;
    Ok(out.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Rgb, RgbImage};

    fn encoded(image: &DynamicImage, format: ImageFormat) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        image.write_to(&mut out, format).unwrap();
        out.into_inner()
    }

    #[test]
    fn every_type_keeps_its_format_and_lossless_ones_their_pixels() {
        let image = DynamicImage::ImageRgb8(RgbImage::from_fn(9, 7, |x, y| Rgb([x as u8 * 20, y as u8 * 30, 77])));
        for (format, kind) in [
            (ImageFormat::Jpeg, ImageKind::Jpeg),
            (ImageFormat::Png, ImageKind::Png),
            (ImageFormat::WebP, ImageKind::Webp),
            (ImageFormat::Gif, ImageKind::Gif),
        ] {
            let original = prepare(&encoded(&image, format)).unwrap();
            assert_eq!((original.kind, original.width, original.height), (kind, 9, 7));
            assert_eq!(sniff::sniff(&original.bytes), Some(kind));
            if matches!(kind, ImageKind::Png | ImageKind::Webp | ImageKind::Gif) {
                let back = image::load_from_memory(&original.bytes).unwrap().to_rgb8();
                assert_eq!(back, image.to_rgb8(), "{kind:?} is lossless");
            }
        }
    }

    #[test]
    fn a_gif_keeps_its_exact_colours_and_transparency() {
        let image = DynamicImage::ImageRgba8(image::RgbaImage::from_fn(40, 30, |x, y| match (x + y) % 3 {
            0 => image::Rgba([0, 0, 0, 0]),
            1 => image::Rgba([250, 10, 10, 255]),
            _ => image::Rgba([(x % 8) as u8 * 30, (y % 8) as u8 * 30, 200, 255]),
        }));
        let original = prepare(&encoded(&image, ImageFormat::Gif)).unwrap();
        let back = image::load_from_memory(&original.bytes).unwrap().to_rgba8();
        for (sent, kept) in image.to_rgba8().pixels().zip(back.pixels()) {
            assert!(sent == kept || (sent[3] == 0 && kept[3] == 0), "{sent:?} became {kept:?}");
        }
        // More than 256 colours (only a composite can have them) still makes a GIF.
        let many = DynamicImage::ImageRgb8(RgbImage::from_fn(40, 30, |x, y| Rgb([x as u8 * 6, y as u8 * 8, 1])));
        assert!(gif(&many).is_none());
        assert_eq!(sniff::sniff(&encode(&many, ImageKind::Gif).unwrap()), Some(ImageKind::Gif));
    }

    #[test]
    fn bytes_after_the_image_are_not_kept() {
        let image = DynamicImage::ImageRgb8(RgbImage::from_pixel(4, 4, Rgb([1, 2, 3])));
        let mut polyglot = encoded(&image, ImageFormat::Gif);
        polyglot.extend_from_slice(b"<script>alert(document.cookie)</script>");
        let original = prepare(&polyglot).unwrap();
        assert!(!original.bytes.windows(7).any(|w| w == b"<script"));
    }

    #[test]
    fn refusals_say_why() {
        assert_eq!(prepare(b"hello").unwrap_err(), Refusal::Unsupported);
        let image = DynamicImage::ImageRgb8(RgbImage::from_pixel(64, 64, Rgb([9, 9, 9])));
        let mut png = encoded(&image, ImageFormat::Png);
        let len = png.len();
        png.truncate(len - 30); // the header stands, the pixels are cut
        assert!(matches!(prepare(&png), Err(Refusal::Undecodable(_))));
    }
}
