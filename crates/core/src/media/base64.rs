//! Base64 photo payloads: standard alphabet, padding optional, whitespace ignored, an
//! optional `data:<type>;base64,` prefix. The decoded size is known from the text's length
//! before anything is decoded, and decoding writes straight into one buffer of that size.

use base64::alphabet::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;

const ENGINE: GeneralPurpose = GeneralPurpose::new(
    &STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// Whitespace-free text is decoded in place; otherwise this many significant characters
/// (a multiple of 4) are gathered at a time.
const CHUNK: usize = 16 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// Nothing to decode.
    Empty,
    /// Not base64 (or a `data:` URI that is not base64).
    Invalid,
    /// The decoded bytes would be `limit` or more.
    TooLarge,
}

/// The base64 text of a payload, without a `data:...;base64,` prefix.
pub fn strip_data_uri(text: &str) -> Result<&str, DecodeError> {
    let text = text.trim_start();
    if !text.get(..5).is_some_and(|head| head.eq_ignore_ascii_case("data:")) {
        return Ok(text);
    }
    let (meta, payload) = text.split_once(',').ok_or(DecodeError::Invalid)?;
    // `get`, not indexing: the media type may hold multi-byte characters.
    let is_base64 =
        meta.len().checked_sub(7).and_then(|at| meta.get(at..)).is_some_and(|t| t.eq_ignore_ascii_case(";base64"));
    if is_base64 {
        Ok(payload)
    } else {
        Err(DecodeError::Invalid)
    }
}

/// The number of bytes `symbols` base64 characters (padding excluded) decode to, or `None`
/// when no base64 text has that many.
pub fn decoded_len(symbols: usize) -> Option<usize> {
    let tail = match symbols % 4 {
        0 => 0,
        2 => 1,
        3 => 2,
        _ => return None,
    };
    Some(symbols / 4 * 3 + tail)
}

/// What decoding `significant` characters may briefly need: 3 bytes per started group of 4.
fn reserved(significant: usize) -> usize {
    significant.div_ceil(4) * 3
}

/// Decodes a photo payload, refusing before decoding when it would reach `limit` bytes.
pub fn decode(text: &str, limit: usize) -> Result<Vec<u8>, DecodeError> {
    let text = strip_data_uri(text)?;
    let bytes = text.as_bytes();
    let mut significant = 0usize;
    let mut padding = 0usize;
    for &b in bytes {
        if b.is_ascii_whitespace() {
            continue;
        }
        significant += 1;
        if b == b'=' {
            padding += 1;
        } else if padding > 0 {
            return Err(DecodeError::Invalid); // data after padding
        }
    }
    if significant == 0 {
        return Err(DecodeError::Empty);
    }
    if padding > 2 {
        return Err(DecodeError::Invalid);
    }
    let size = decoded_len(significant - padding).ok_or(DecodeError::Invalid)?;
    if size >= limit {
        return Err(DecodeError::TooLarge);
    }
    if size == 0 {
        return Err(DecodeError::Empty);
    }
    // The engine sizes its output by whole 4-character groups (padding included) before
    // trimming; reserving that much up front means the buffer is never reallocated.
    let mut out = Vec::with_capacity(reserved(significant));
    if significant == bytes.len() {
        ENGINE.decode_vec(bytes, &mut out).map_err(|_| DecodeError::Invalid)?;
    } else {
        let mut chunk = [0u8; CHUNK];
        let mut filled = 0;
        for &b in bytes.iter().filter(|b| !b.is_ascii_whitespace()) {
            chunk[filled] = b;
            filled += 1;
            if filled == CHUNK {
                ENGINE.decode_vec(&chunk[..], &mut out).map_err(|_| DecodeError::Invalid)?;
                filled = 0;
            }
        }
        ENGINE.decode_vec(&chunk[..filled], &mut out).map_err(|_| DecodeError::Invalid)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};

    #[test]
    fn decoded_length_follows_from_the_symbol_count() {
        assert_eq!(decoded_len(0), Some(0));
        assert_eq!(decoded_len(1), None);
        assert_eq!(decoded_len(2), Some(1));
        assert_eq!(decoded_len(3), Some(2));
        assert_eq!(decoded_len(4), Some(3));
        assert_eq!(decoded_len(5), None);
        // 10 MiB: 13,981,014 symbols without padding, 13,981,016 characters with it.
        assert_eq!(decoded_len(13_981_014), Some(10_485_760));
        assert_eq!(decoded_len(13_981_012), Some(10_485_759));
        for n in 0..200usize {
            let data = vec![7u8; n];
            assert_eq!(decoded_len(STANDARD_NO_PAD.encode(&data).len()), Some(n));
        }
    }

    #[test]
    fn padding_whitespace_and_prefixes_are_tolerated() {
        let data: Vec<u8> = (0..=255u8).cycle().take(50_000).collect();
        let padded = STANDARD.encode(&data);
        let bare = STANDARD_NO_PAD.encode(&data);
        assert_eq!(decode(&padded, 1 << 20), Ok(data.clone()));
        assert_eq!(decode(&bare, 1 << 20), Ok(data.clone()));
        let wrapped: String =
            padded.as_bytes().chunks(76).map(|l| std::str::from_utf8(l).unwrap()).collect::<Vec<_>>().join("\r\n");
        assert_eq!(decode(&format!(" \n{wrapped}\n "), 1 << 20), Ok(data.clone()));
        assert_eq!(decode(&format!("data:image/png;base64,{padded}"), 1 << 20), Ok(data.clone()));
        assert_eq!(decode(&format!("DATA:image/png;BASE64,{bare}"), 1 << 20), Ok(data));
    }

    #[test]
    fn the_output_buffer_is_allocated_once() {
        for n in [1usize, 2, 3, 4, 5, 100, 12_287, 12_288, 12_289, 40_000] {
            let data = vec![9u8; n];
            for text in
                [STANDARD.encode(&data), STANDARD_NO_PAD.encode(&data), STANDARD.encode(&data).replace('A', "A ")]
            {
                let significant = text.bytes().filter(|b| !b.is_ascii_whitespace()).count();
                let out = decode(&text, usize::MAX).unwrap();
                assert_eq!(out, data);
                assert_eq!(out.capacity(), reserved(significant), "no reallocation for {n} bytes");
            }
        }
    }

    #[test]
    fn bad_text_empty_text_and_oversize_are_told_apart() {
        assert_eq!(decode("", 100), Err(DecodeError::Empty));
        assert_eq!(decode("  \n ", 100), Err(DecodeError::Empty));
        assert_eq!(decode("data:image/png;base64,", 100), Err(DecodeError::Empty));
        assert_eq!(decode("not base64!", 100), Err(DecodeError::Invalid));
        assert_eq!(decode("abcde", 100), Err(DecodeError::Invalid));
        assert_eq!(decode("ab=c", 100), Err(DecodeError::Invalid));
        assert_eq!(decode("a===", 100), Err(DecodeError::Invalid));
        assert_eq!(decode("-_-_", 100), Err(DecodeError::Invalid), "URL-safe alphabet is not standard");
        assert_eq!(decode("data:image/png,abcd", 100), Err(DecodeError::Invalid));
        assert_eq!(decode("data:imagé;bäse64,abcd", 100), Err(DecodeError::Invalid));
        assert_eq!(decode(&STANDARD.encode([0u8; 100]), 100), Err(DecodeError::TooLarge));
        assert_eq!(decode(&STANDARD.encode([0u8; 99]), 100), Ok(vec![0u8; 99]));
        // Too large is known without decoding: invalid characters are not even looked at.
        assert_eq!(decode(&"!".repeat(200), 100), Err(DecodeError::TooLarge));
    }
}
