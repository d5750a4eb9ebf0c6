//! What an image is, from its bytes alone (never the file name), and whether its header
//! really parses.

use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};

use image::{ImageFormat, ImageReader};
pub use rehome_domain::limits::MAX_PIXELS;

/// The photo types the service accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    Jpeg,
    Png,
    Webp,
    Gif,
}

impl ImageKind {
    pub fn mime(self) -> &'static str {
        match self {
            Self::Jpeg => "image/jpeg",
            Self::Png => "image/png",
            Self::Webp => "image/webp",
            Self::Gif => "image/gif",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Self::Jpeg => "jpg",
            Self::Png => "png",
            Self::Webp => "webp",
            Self::Gif => "gif",
        }
    }

    pub fn from_extension(extension: &str) -> Option<Self> {
        match extension {
            "jpg" => Some(Self::Jpeg),
            "png" => Some(Self::Png),
            "webp" => Some(Self::Webp),
            "gif" => Some(Self::Gif),
            _ => None,
        }
    }

    pub fn format(self) -> ImageFormat {
        match self {
            Self::Jpeg => ImageFormat::Jpeg,
            Self::Png => ImageFormat::Png,
            Self::Webp => ImageFormat::WebP,
            Self::Gif => ImageFormat::Gif,
        }
    }
}

/// The type the leading bytes announce.
pub fn sniff(bytes: &[u8]) -> Option<ImageKind> {
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some(ImageKind::Jpeg)
    } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(ImageKind::Png)
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some(ImageKind::Gif)
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some(ImageKind::Webp)
    } else {
        None
    }
}

/// Whether an image of these dimensions is within [`MAX_PIXELS`].
pub fn within_pixel_budget(width: u32, height: u32) -> bool {
    u64::from(width) * u64::from(height) <= MAX_PIXELS
}

/// The type and dimensions of an image whose magic bytes and header both check out.
/// Only the header is read: pixels are decoded later, under limits, by the thumbnail job.
pub fn identify(bytes: &[u8]) -> Option<(ImageKind, u32, u32)> {
    let kind = sniff(bytes)?;
    // Decoders are meant never to panic on bad input; a panic here is still only a refusal.
    let dimensions = catch_unwind(AssertUnwindSafe(|| {
        ImageReader::with_format(Cursor::new(bytes), kind.format()).into_dimensions()
    }));
    match dimensions {
        Ok(Ok((width, height))) if width > 0 && height > 0 => Some((kind, width, height)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{DynamicImage, RgbImage};

    fn encoded(format: ImageFormat) -> Vec<u8> {
        let image = DynamicImage::ImageRgb8(RgbImage::from_pixel(7, 5, image::Rgb([200, 10, 10])));
        let mut out = Cursor::new(Vec::new());
        image.write_to(&mut out, format).unwrap();
        out.into_inner()
    }

    #[test]
    fn the_four_types_are_told_apart_by_their_bytes() {
        for (format, kind) in [
            (ImageFormat::Jpeg, ImageKind::Jpeg),
            (ImageFormat::Png, ImageKind::Png),
            (ImageFormat::WebP, ImageKind::Webp),
            (ImageFormat::Gif, ImageKind::Gif),
        ] {
            let bytes = encoded(format);
            assert_eq!(sniff(&bytes), Some(kind));
            assert_eq!(identify(&bytes), Some((kind, 7, 5)));
        }
    }

    #[test]
    fn other_bytes_and_broken_headers_are_refused() {
        assert_eq!(sniff(b"hello, world"), None);
        assert_eq!(sniff(b""), None);
        assert_eq!(sniff(b"RIFF\0\0\0\0WAVE"), None);
        assert_eq!(sniff(b"<svg xmlns='http://www.w3.org/2000/svg'/>"), None);
        // Right magic, nothing behind it.
        assert_eq!(identify(b"\x89PNG\r\n\x1a\n"), None);
        assert_eq!(identify(&[0xFF, 0xD8, 0xFF, 0xE0, 0, 0]), None);
        assert_eq!(identify(b"GIF89a"), None);
        assert_eq!(identify(b"RIFF\x04\0\0\0WEBP"), None);
        let mut png = encoded(ImageFormat::Png);
        png.truncate(20);
        assert_eq!(identify(&png), None);
    }
}
