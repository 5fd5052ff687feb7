//! The `Encode` trait.

use bytes::BytesMut;

use super::sink::Appender;
use super::{EncodeError, Sink, Writer};

/// The first capacity `to_encoded_vec` gives a value whose size it does not compute
/// first ([`Encode::LEN_WALKS`]).
const GROWING_START: usize = 1024;

/// Bytes of the count of a run of `count` values of `T`: 4 where `T`'s runs
/// carry a wide count ([`Encode::WIDE_COUNT`]), else the varint's.
#[inline(always)]
pub(crate) fn run_count_len<T: Encode>(count: usize) -> usize {
    if T::WIDE_COUNT {
        4
    } else {
        super::varint_len(count as u64)
    }
}

/// Writes the count of a run of `count` values of `T`: 4 bytes where `T`'s
/// runs carry a wide count ([`Encode::WIDE_COUNT`]), else a varint.
///
/// # Panics
/// As [`wide_count`].
#[inline(always)]
pub(crate) fn put_run_count<T: Encode, W: Sink>(w: &mut W, count: usize) {
    if T::WIDE_COUNT {
        w.put_u32_le(wide_count(count));
    } else {
        w.put_len(count);
    }
}

/// A run's count as its 4-byte wire form ([`Encode::WIDE_COUNT`]).
///
/// # Panics
/// If the run holds more than `u32::MAX` values: its count has no wire form.
#[inline(always)]
#[must_use]
pub(crate) fn wide_count(count: usize) -> u32 {
    match u32::try_from(count) {
        Ok(count) => count,
        Err(_) => run_too_long(count),
    }
}

#[cold]
#[inline(never)]
fn run_too_long(count: usize) -> ! {
    panic!("a run of {count} blittable values is longer than its 4-byte count can say (u32::MAX)")
}

/// A value that writes itself into a buffer the caller owns.
///
/// Every type knows its exact [`encoded_len`](Self::encoded_len) before it
/// writes, so [`encode`](Self::encode) checks capacity once and then writes
/// without further failure, and the growable forms
/// ([`encode_to_vec`](Self::encode_to_vec), [`encode_to_bytes`](Self::encode_to_bytes),
/// [`to_encoded_vec`](Self::to_encoded_vec)) reserve once and append without zero-filling
/// (or, where the size is itself a walk over values of varying size, grow
/// the buffer as they append instead of walking twice).
/// Most types derive this trait; see the crate docs for the attributes.
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
    /// Whether [`encoded_len`](Self::encoded_len) walks a collection of
    /// values of varying size one by one (a `Vec` of strings or of enums):
    /// the growable forms then append without a size pass first, growing
    /// the buffer as they go, since that pass would cost about as much as
    /// the encode. `false` for any type whose size takes a few steps.
    #[doc(hidden)]
    const LEN_WALKS: bool = false;
    /// Whether a run of the type (a `Vec` or a slice) carries its count as a
    /// 4-byte little-endian number instead of a varint: `true` for
    /// `#[zao(blittable)]` structs only (docs/WIRE.md §5), so that the run
    /// stays at the alignment of what precedes it.
    #[doc(hidden)]
    const WIDE_COUNT: bool = false;

    /// Exact number of bytes [`encode`](Self::encode) will write.
    fn encoded_len(&self) -> usize;

    /// Writes the value into `w`: a [`Writer`] over a caller's buffer, whose
    /// capacity the caller has checked (use [`Writer::encode`] rather than
    /// calling this directly), or the end of a `Vec<u8>` / `BytesMut`.
    fn encode_to<W: Sink>(&self, w: &mut W);

    /// Writes the value into the front of `buf` and returns the bytes written.
    /// Up to 8 bytes of `buf` past them may have been overwritten too: a
    /// short slice inside a run of values (a name in a `Vec` of structs) is
    /// copied by moves of fixed size, with no branch on its length, where
    /// `buf` has the room.
    ///
    /// # Errors
    /// [`EncodeError`] if `buf` is shorter than [`encoded_len`](Self::encoded_len),
    /// with that size; `buf` may then have been partly overwritten.
    #[inline(always)]
    fn encode(&self, buf: &mut [u8]) -> Result<usize, EncodeError> {
        Writer::new(buf).encode(self)
    }

    /// Appends the encoding to `vec` and returns the bytes written. It
    /// reserves [`encoded_len`](Self::encoded_len) once (growing only when
    /// the spare capacity is too small: clear and reuse one `Vec` to encode
    /// without allocating) and appends without zero-filling first. A value
    /// whose size is a walk over values of varying size (a `Vec` of strings
    /// or of enums with data) is appended with no size pass, `vec` growing
    /// as the writes need.
    #[inline(always)]
    fn encode_to_vec(&self, vec: &mut Vec<u8>) -> usize {
        Appender::<Vec<u8>>::encode(vec, self)
    }

    /// Appends the encoding to a `BytesMut`, the transport's buffer type:
    /// encode once, `freeze`, and hand clones of the `Bytes` to every peer.
    /// Reserves once (or grows as it appends, as
    /// [`encode_to_vec`](Self::encode_to_vec) does), never zero-fills.
    /// Returns the bytes written.
    #[inline(always)]
    fn encode_to_bytes(&self, buf: &mut BytesMut) -> usize {
        Appender::<BytesMut>::encode(buf, self)
    }

    /// The encoding in a new `Vec`, for when no buffer is at hand: one
    /// allocation, one pass, no zero-fill. The `Vec` holds exactly the
    /// encoding; a type of variable size gets 17 bytes of spare capacity
    /// beyond it, so that a short slice at the end of the encoding (a name,
    /// a tag) is copied inline as everywhere else, not by a call to `memcpy`
    /// (an exact-size buffer never has room for the inline copy's zeroed
    /// chunk at its end). A value whose size is a walk over values of
    /// varying size is written with no size pass: the `Vec` starts at 1 KiB
    /// and grows as it is written, and keeps at most a quarter of the
    /// encoding (and 1 KiB) of spare capacity.
    #[inline(always)]
    fn to_encoded_vec(&self) -> Vec<u8> {
        if Self::LEN_WALKS {
            let mut vec = Vec::with_capacity(GROWING_START);
            let len = Appender::<Vec<u8>, true>::append_growing(&mut vec, self);
            // Growth doubles: give back what is far beyond the encoding.
            if vec.capacity() - len > len / 4 + GROWING_START {
                vec.shrink_to(len + super::writer::INLINE_COPY + 1);
            }
            return vec;
        }
        let (len, slack) = match Self::FIXED_SIZE {
            Some(len) => (len, 0),
            // More room than `INLINE_COPY`, as `Appender::put_slice` asks.
            None => (self.encoded_len(), super::writer::INLINE_COPY + 1),
        };
        let mut vec = Vec::with_capacity(len.saturating_add(slack));
        Appender::<Vec<u8>>::append(&mut vec, self, len);
        vec
    }

    /// Writes a run of values. Blittable types override this with one copy of
    /// the whole run; `Vec<T>`, slices and arrays call it.
    #[doc(hidden)]
    #[inline(always)]
    fn encode_slice<W: Sink>(items: &[Self], w: &mut W)
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
                let outer = w.mark_run(true);
                for item in items {
                    item.encode_to(w);
                }
                w.mark_run(outer);
            }
        }
    }

    /// Writes a run of values whose count is known only at run time, count
    /// first: a `Vec` or a slice. The same bytes as the count (a varint, or
    /// 4 bytes where [`WIDE_COUNT`](Self::WIDE_COUNT) is set) then
    /// [`encode_slice`](Self::encode_slice), which is what it writes unless a
    /// blittable type writes the count and its memory image behind one
    /// check ([`Sink::put_counted`], [`Sink::put_counted32`]), the image
    /// copied without branching on its length when short (arrays keep
    /// `encode_slice`: their length is a constant and has no count).
    #[doc(hidden)]
    #[inline(always)]
    fn encode_run<W: Sink>(items: &[Self], w: &mut W)
    where
        Self: Sized,
    {
        put_run_count::<Self, W>(w, items.len());
        Self::encode_slice(items, w);
    }

    /// Encoded size of a run of values.
    #[doc(hidden)]
    #[inline(always)]
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
