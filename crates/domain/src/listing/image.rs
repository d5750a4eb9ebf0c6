//! The states of a listing's images and of photos, with their stored and wire names.

use crate::wire::wire_names;

/// How far an image import (a `listing_images` row) or a photo's thumbnails (a `photos`
/// row) got: both queues share these states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageStatus {
    /// Waiting for (or being worked on by) the background worker.
    Pending,
    Done,
    /// Given up on; the row says why.
    Failed,
}

/// Where a photo came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PhotoSource {
    /// `POST /v1/listings/upload-photo`.
    Upload,
    /// Fetched by the image import worker from a listing's `images` URL.
    Import,
}

wire_names!(ImageStatus { Pending => "pending", Done => "done", Failed => "failed" });
wire_names!(PhotoSource { Upload => "upload", Import => "import" });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip_through_their_wire_names() {
        for status in ImageStatus::ALL {
            assert_eq!(status.as_str().parse::<ImageStatus>(), Ok(*status));
            let json = format!("\"{}\"", status.as_str());
            assert_eq!(serde_json::from_str::<ImageStatus>(&json).ok(), Some(*status));
        }
        for source in PhotoSource::ALL {
            assert_eq!(source.as_str().parse::<PhotoSource>(), Ok(*source));
        }
    }
}
