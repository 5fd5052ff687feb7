//! Strings: a varint byte length, then UTF-8 checked on decode (docs/WIRE.md §4).

use std::borrow::Cow;

use crate::wire::schema::Shape;
use crate::wire::{Decode, DecodeError, Encode, Reader, Schema, Writer, varint_len};

impl Encode for str {
    #[inline]
    fn encoded_len(&self) -> usize {
        varint_len(self.len() as u64) + self.len()
    }

    #[inline]
    fn encode_to(&self, w: &mut Writer<'_>) {
        w.put_len(self.len());
        w.put_slice(self.as_bytes());
    }
}

impl Schema for str {
    const SHAPE: Shape = Shape::Str;
    // `Box<str>` decodes as a string, entering no level of depth.
    const BOXED_SHAPE: Shape = Shape::Str;
}

/// Reads a length-prefixed UTF-8 string without copying it.
#[inline]
fn borrow_str<'de>(r: &mut Reader<'de>, allocates: bool) -> Result<&'de str, DecodeError> {
    let len = r.get_byte_len(allocates)?;
    core::str::from_utf8(r.take(len)?).map_err(|_| DecodeError::InvalidUtf8)
}

impl<'de: 'a, 'a> Decode<'de> for &'a str {
    const MIN_SIZE: usize = 1;

    #[inline]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        borrow_str(r, false)
    }
}

impl Encode for String {
    #[inline]
    fn encoded_len(&self) -> usize {
        self.as_str().encoded_len()
    }

    #[inline]
    fn encode_to(&self, w: &mut Writer<'_>) {
        self.as_str().encode_to(w);
    }
}

impl<'de> Decode<'de> for String {
    const MIN_SIZE: usize = 1;

    #[inline]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        borrow_str(r, true).map(String::from)
    }

    #[inline]
    fn decode_in_place_from(&mut self, r: &mut Reader<'de>) -> Result<(), DecodeError> {
        let s = borrow_str(r, true)?;
        self.clear();
        self.push_str(s);
        Ok(())
    }
}

impl Schema for String {
    const SHAPE: Shape = Shape::Str;
}

impl<'de> Decode<'de> for Box<str> {
    const MIN_SIZE: usize = 1;

    #[inline]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        borrow_str(r, true).map(Box::from)
    }
}

impl Encode for Cow<'_, str> {
    #[inline]
    fn encoded_len(&self) -> usize {
        (**self).encoded_len()
    }

    #[inline]
    fn encode_to(&self, w: &mut Writer<'_>) {
        (**self).encode_to(w);
    }
}

/// Decodes borrowed: a `Cow` from `decode` points into the input.
impl<'de: 'a, 'a> Decode<'de> for Cow<'a, str> {
    const MIN_SIZE: usize = 1;

    #[inline]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        borrow_str(r, false).map(Cow::Borrowed)
    }
}

impl Schema for Cow<'_, str> {
    const SHAPE: Shape = Shape::Str;
}
