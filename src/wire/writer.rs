//! A cursor over a caller-owned buffer.

use super::varint::encode_varint;
use super::{Encode, EncodeError};

/// Writes values one after another into a buffer the caller owns.
///
/// [`encode`](Self::encode) checks the capacity of the whole value once, then
/// the value writes itself with the `put_*` primitives. Several messages can
/// share one buffer: call `encode` for each and send
/// [`written`](Self::written).
///
/// The `put_*` methods never panic. They are meant for [`Encode::encode_to`]
/// implementations, which run after the capacity check; should an
/// implementation write more than its [`Encode::encoded_len`] promised, the
/// excess is refused and [`encode`](Self::encode) reports it as an
/// [`EncodeError`].
#[derive(Debug)]
pub struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
    overflow: bool,
}

impl<'a> Writer<'a> {
    /// A writer at the front of `buf`.
    #[inline]
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self {
            buf,
            pos: 0,
            overflow: false,
        }
    }

    /// Encodes one value after what is already written and returns its size.
    ///
    /// # Errors
    /// [`EncodeError`] if the rest of the buffer cannot hold the value; then
    /// nothing is written.
    #[inline]
    pub fn encode<T: Encode + ?Sized>(&mut self, value: &T) -> Result<usize, EncodeError> {
        let needed = value.encoded_len();
        let available = self.remaining();
        if needed > available {
            return Err(EncodeError { needed, available });
        }
        let start = self.pos;
        value.encode_to(self);
        if self.overflow {
            // `encoded_len` under-counted: a bug in a hand-written impl.
            self.overflow = false;
            self.pos = start;
            return Err(EncodeError {
                needed: needed.max(available.saturating_add(1)),
                available,
            });
        }
        Ok(self.pos - start)
    }

    /// Bytes written so far.
    #[inline]
    #[must_use]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left in the buffer.
    #[inline]
    #[must_use]
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// The bytes written so far.
    #[inline]
    #[must_use]
    pub fn written(&self) -> &[u8] {
        self.buf.get(..self.pos).unwrap_or_default()
    }

    /// Writes raw bytes.
    #[inline]
    pub fn put_slice(&mut self, src: &[u8]) {
        let end = self.pos.saturating_add(src.len());
        match self.buf.get_mut(self.pos..end) {
            Some(dst) => {
                dst.copy_from_slice(src);
                self.pos = end;
            }
            None => self.overflow = true,
        }
    }

    /// Writes a fixed-size array of bytes.
    #[inline]
    pub fn put_array<const N: usize>(&mut self, src: [u8; N]) {
        self.put_slice(&src);
    }

    /// Writes one byte.
    #[inline]
    pub fn put_u8(&mut self, value: u8) {
        match self.buf.get_mut(self.pos) {
            Some(dst) => {
                *dst = value;
                self.pos += 1;
            }
            None => self.overflow = true,
        }
    }

    /// Writes a canonical LEB128 varint.
    #[inline]
    pub fn put_varint(&mut self, value: u64) {
        if value < 0x80 {
            self.put_u8(value as u8);
        } else {
            let (bytes, n) = encode_varint(value);
            self.put_slice(bytes.get(..n).unwrap_or(&bytes));
        }
    }

    /// Writes a length or count prefix (a varint).
    #[inline]
    pub fn put_len(&mut self, len: usize) {
        self.put_varint(len as u64);
    }
}

macro_rules! put_le {
    ($($name:ident: $ty:ty),* $(,)?) => {
        impl Writer<'_> {
            $(
                #[doc = concat!("Writes a little-endian `", stringify!($ty), "`.")]
                #[inline]
                pub fn $name(&mut self, value: $ty) {
                    self.put_array(value.to_le_bytes());
                }
            )*
        }
    };
}

put_le!(
    put_u16_le: u16, put_u32_le: u32, put_u64_le: u64, put_u128_le: u128,
    put_i16_le: i16, put_i32_le: i32, put_i64_le: i64, put_i128_le: i128,
    put_f32_le: f32, put_f64_le: f64,
);
