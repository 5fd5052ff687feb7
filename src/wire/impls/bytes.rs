//! Byte strings: `&[u8]` borrowed and `bytes::Bytes` owned share the wire
//! form of `Vec<u8>`: a varint length, then the bytes.

use bytes::Bytes;

use crate::wire::schema::Shape;
use crate::wire::{Decode, DecodeError, Encode, Reader, Schema, Sink, varint_len};

impl<'de: 'a, 'a> Decode<'de> for &'a [u8] {
    const MIN_SIZE: usize = 1;

    #[inline(always)]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        let len = r.get_byte_len(false)?;
        r.take(len)
    }
}

impl Encode for Bytes {
    #[inline(always)]
    fn encoded_len(&self) -> usize {
        varint_len(self.len() as u64) + self.len()
    }

    #[inline(always)]
    fn encode_to<W: Sink>(&self, w: &mut W) {
        w.put_prefixed(self);
    }
}

impl<'de> Decode<'de> for Bytes {
    const MIN_SIZE: usize = 1;

    #[inline(always)]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        let len = r.get_byte_len(true)?;
        Ok(Bytes::copy_from_slice(r.take(len)?))
    }
}

/// A byte string, as `&[u8]`: the fingerprint of `Vec<u8>` (docs/WIRE.md §9).
impl Schema for Bytes {
    const SHAPE: Shape = Shape::Bytes;
}
