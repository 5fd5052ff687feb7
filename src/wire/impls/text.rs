//! Strings: a varint byte length, then UTF-8 checked on decode (docs/WIRE.md §4).

use std::borrow::Cow;

use ascii::AsAsciiStr;

use crate::wire::schema::Shape;
use crate::wire::{Decode, DecodeError, Encode, Reader, Schema, Sink, varint_len};

impl Encode for str {
    #[inline(always)]
    fn encoded_len(&self) -> usize {
        varint_len(self.len() as u64) + self.len()
    }

    #[inline(always)]
    fn encode_to<W: Sink>(&self, w: &mut W) {
        w.put_prefixed(self.as_bytes());
    }
}

impl Schema for str {
    const SHAPE: Shape = Shape::Str;
    // `Box<str>` decodes as a string, entering no level of depth.
    const BOXED_SHAPE: Shape = Shape::Str;
}

/// Reads a length-prefixed UTF-8 string without copying it.
#[inline(always)]
fn borrow_str<'de>(r: &mut Reader<'de>, allocates: bool) -> Result<&'de str, DecodeError> {
    let len = r.get_byte_len(allocates)?;
    utf8(r.take(len)?)
}

/// Strings up to this long are validated by [`utf8`]'s byte loop.
const SHORT: usize = 16;

/// `bytes` as a `&str` if they are all ASCII: an inlined check, then the
/// `ascii` crate's cast (see [`utf8`]).
#[inline(always)]
fn ascii(bytes: &[u8]) -> Option<&str> {
    bytes.as_ascii_str().ok().map(ascii::AsciiStr::as_str)
}

/// `bytes` as a `&str`, validated.
///
/// ASCII first: `[u8]::is_ascii` inlines (the standard library's UTF-8
/// validator is a call, and its result comes back through memory), and
/// the `ascii` crate turns the checked bytes into a `&str` without `unsafe`
/// here. Borrowed SpawnEntity decode, a 6-byte name: 6.5 -> 3.1 ns.
///
/// Anything else goes to the standard library's validation: up to 16 bytes
/// through `utf8_chunks`, whose byte loop costs less than `from_utf8`'s
/// setup for its word-at-a-time path (release build, one loop per length:
/// 17 bytes with accents 6.0 against 7.8 ns; at 26 ASCII bytes `from_utf8`
/// wins, 3.3 against 7.7). Longer text goes to `simdutf8`, which validates
/// 64-byte blocks with SIMD (AVX2, SSE4.2 or NEON, chosen at run time) and
/// hands shorter input to the standard library, whose validator drops to a
/// byte at a time around every non-ASCII character (the event log's decode:
/// 1.17 -> 0.92× bitcode's, see `long_string`). Every path gives the same
/// answer.
///
/// # Errors
/// [`DecodeError::InvalidUtf8`] if `bytes` is not UTF-8.
#[inline(always)]
pub fn utf8(bytes: &[u8]) -> Result<&str, DecodeError> {
    if let Some(text) = ascii(bytes) {
        return Ok(text);
    }
    if bytes.len() <= SHORT {
        // A chunk with no invalid bytes after it is the last one: all of
        // `bytes` is then valid.
        return match bytes.utf8_chunks().next() {
            None => Ok(""),
            Some(chunk) if chunk.invalid().is_empty() => Ok(chunk.valid()),
            Some(_) => Err(DecodeError::InvalidUtf8),
        };
    }
    simdutf8::basic::from_utf8(bytes).map_err(|_| DecodeError::InvalidUtf8)
}

impl<'de: 'a, 'a> Decode<'de> for &'a str {
    const MIN_SIZE: usize = 1;

    #[inline(always)]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        borrow_str(r, false)
    }
}

impl Encode for String {
    #[inline(always)]
    fn encoded_len(&self) -> usize {
        self.as_str().encoded_len()
    }

    #[inline(always)]
    fn encode_to<W: Sink>(&self, w: &mut W) {
        self.as_str().encode_to(w);
    }
}

/// Owned strings longer than this are validated where they lie
/// ([`long_string`]).
const LONG: usize = 16;

/// A long string's bytes validated where they lie, then copied: the standard
/// library's validator skips ASCII a word at a time itself, and for text
/// that is not all ASCII the inline ASCII check would scan up to the first
/// other byte for nothing, and the `ascii` crate then counts those bytes
/// again, one at a time, for an error that is thrown away. Event log
/// (`bench_report`, paired against bitcode): decode 1.157 -> 1.137,
/// `decode_in_place` 0.744 -> 0.710; SpawnEntity's 6-byte name keeps the
/// inline path (267 -> 269 instructions per decode, the same time).
///
/// The validator is `simdutf8`'s: the event log's text (a third of its
/// events carry 4-120 characters, one in twenty of them two or three bytes
/// long) spent a third of the decode in the standard library's validator,
/// which falls back to a byte at a time at every non-ASCII character.
/// Paired against bitcode's decode in 3 processes: decode 1.164-1.176 ->
/// 0.916-0.923, `decode_in_place` 0.787-0.800 -> 0.574-0.577; SpawnEntity
/// decode 1.001 -> 0.999 speedy's (its name takes the inline path).
#[inline(never)]
fn long_string(bytes: &[u8]) -> Result<String, DecodeError> {
    simdutf8::basic::from_utf8(bytes)
        .map(str::to_owned)
        .map_err(|_| DecodeError::InvalidUtf8)
}

impl<'de> Decode<'de> for String {
    const MIN_SIZE: usize = 1;

    #[inline(always)]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        let len = r.get_byte_len(true)?;
        let bytes = r.take(len)?;
        // A long string: `long_string`. A short one that is ASCII is
        // checked inline where it lies, then copied (SpawnEntity decode 1.06
        // -> 0.96x speedy); any other is copied, then validated where it
        // landed.
        if bytes.len() > LONG {
            return long_string(bytes);
        }
        if let Some(text) = ascii(bytes) {
            return Ok(text.to_owned());
        }
        String::from_utf8(bytes.to_vec()).map_err(|_| DecodeError::InvalidUtf8)
    }

    /// Reuses the `String`'s capacity, charging all of it against the
    /// allocation budget; capacity the budget cannot hold is released first.
    #[inline(always)]
    fn decode_in_place_from(&mut self, r: &mut Reader<'de>) -> Result<(), DecodeError> {
        let len = r.get_byte_len(false)?;
        if !r.charge_reuse(self.capacity(), len)? {
            *self = String::new();
        }
        let bytes = r.take(len)?;
        let text = if len > LONG {
            // See `long_string`.
            simdutf8::basic::from_utf8(bytes).ok()
        } else {
            ascii(bytes)
        };
        if let Some(text) = text {
            self.clear();
            // Exactly `len`: what the budget charged.
            self.reserve_exact(len);
            self.push_str(text);
            return Ok(());
        }
        // A short string that is not ASCII, or any invalid one: copied
        // into the string's own buffer, then validated there.
        let mut buf = core::mem::take(self).into_bytes();
        buf.clear();
        if buf.capacity() < len {
            // Exactly `len`: what the budget charged.
            buf.reserve_exact(len);
        }
        buf.extend_from_slice(bytes);
        match String::from_utf8(buf) {
            Ok(text) => {
                *self = text;
                Ok(())
            }
            Err(e) => {
                // Keep the capacity, drop the invalid bytes.
                let mut buf = e.into_bytes();
                buf.clear();
                *self = String::from_utf8(buf).unwrap_or_default();
                Err(DecodeError::InvalidUtf8)
            }
        }
    }
}

impl Schema for String {
    const SHAPE: Shape = Shape::Str;
}

impl<'de> Decode<'de> for Box<str> {
    const MIN_SIZE: usize = 1;

    #[inline(always)]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        borrow_str(r, true).map(Box::from)
    }
}

impl Encode for Cow<'_, str> {
    #[inline(always)]
    fn encoded_len(&self) -> usize {
        (**self).encoded_len()
    }

    #[inline(always)]
    fn encode_to<W: Sink>(&self, w: &mut W) {
        (**self).encode_to(w);
    }
}

/// Decodes borrowed: a `Cow` from `decode` points into the input.
impl<'de: 'a, 'a> Decode<'de> for Cow<'a, str> {
    const MIN_SIZE: usize = 1;

    #[inline(always)]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        borrow_str(r, false).map(Cow::Borrowed)
    }
}

impl Schema for Cow<'_, str> {
    const SHAPE: Shape = Shape::Str;
}
