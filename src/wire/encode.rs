//! The `Encode` trait.

use bytes::BytesMut;

use super::{EncodeError, Writer};

/// A value that writes itself into a buffer the caller owns.
///
/// Every type knows its exact [`encoded_len`](Self::encoded_len) before it
/// writes, so [`encode`](Self::encode) checks capacity once and then writes
/// without further failure. Most types derive this trait; see the crate docs
/// for the attributes.
///
/// Implementing it by hand means writing [`encoded_len`](Self::encoded_len)
/// and [`encode_to`](Self::encode_to), which must write exactly
/// `encoded_len()` bytes.
pub trait Encode {
    /// The encoded size when every value of the type has the same size
    /// (tiers 0 and 1); `None` when it depends on the value.
    const FIXED_SIZE: Option<usize> = None;
    /// The largest encoded size of any value of the type, when it is bounded.
    const MAX_SIZE: Option<usize> = Self::FIXED_SIZE;

    /// Exact number of bytes [`encode`](Self::encode) will write.
    fn encoded_len(&self) -> usize;

    /// Writes the value. The caller has checked that `encoded_len()` bytes
    /// are available; use [`Writer::encode`] rather than calling this directly.
    fn encode_to(&self, w: &mut Writer<'_>);

    /// Writes the value into the front of `buf` and returns the bytes written.
    ///
    /// # Errors
    /// [`EncodeError`] if `buf` is shorter than [`encoded_len`](Self::encoded_len);
    /// `buf` is then untouched.
    #[inline(always)]
    fn encode(&self, buf: &mut [u8]) -> Result<usize, EncodeError> {
        Writer::new(buf).encode(self)
    }

    /// Appends the encoding to `vec`, growing it only when its spare capacity
    /// is too small: clear and reuse one `Vec` to encode without allocating.
    /// Returns the bytes written.
    #[inline]
    fn encode_to_vec(&self, vec: &mut Vec<u8>) -> usize {
        let start = vec.len();
        let len = self.encoded_len();
        vec.resize(start + len, 0);
        let written = self
            .encode(vec.get_mut(start..).unwrap_or_default())
            .unwrap_or(0);
        vec.truncate(start + written);
        written
    }

    /// Appends the encoding to a `BytesMut`, the transport's buffer type:
    /// encode once, `freeze`, and hand clones of the `Bytes` to every peer.
    /// Returns the bytes written.
    #[inline]
    fn encode_to_bytes(&self, buf: &mut BytesMut) -> usize {
        let start = buf.len();
        let len = self.encoded_len();
        buf.resize(start + len, 0);
        let written = self
            .encode(buf.get_mut(start..).unwrap_or_default())
            .unwrap_or(0);
        buf.truncate(start + written);
        written
    }

    /// The encoding in a new `Vec`, for when no buffer is at hand.
    #[inline]
    fn to_vec(&self) -> Vec<u8> {
        let mut vec = Vec::with_capacity(self.encoded_len());
        self.encode_to_vec(&mut vec);
        vec
    }

    /// Writes a run of values. Blittable types override this with one copy of
    /// the whole run; `Vec<T>`, slices and arrays call it.
    #[doc(hidden)]
    #[inline]
    fn encode_slice(items: &[Self], w: &mut Writer<'_>)
    where
        Self: Sized,
    {
        match Self::FIXED_SIZE {
            // Each element through a window of its constant size: one check
            // per element instead of one per field.
            Some(size) => {
                w.put_run(items.len(), size, items.iter(), |w, item| item.encode_to(w));
            }
            None => {
                for item in items {
                    item.encode_to(w);
                }
            }
        }
    }

    /// Encoded size of a run of values.
    #[doc(hidden)]
    #[inline]
    fn slice_encoded_len(items: &[Self]) -> usize
    where
        Self: Sized,
    {
        match Self::FIXED_SIZE {
            Some(size) => size * items.len(),
            None => items.iter().map(Self::encoded_len).sum(),
        }
    }
}
