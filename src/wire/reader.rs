//! A cursor over untrusted input.

use super::varint::decode_varint_slow;
use super::{Decode, DecodeError, DecodeLimits};

/// Reads values one after another from untrusted bytes.
///
/// Every read is bounds-checked and returns an error rather than panicking.
/// A reader carries the [`DecodeLimits`] of the decode it serves, the current
/// nesting depth and what is left of the allocation budget. Decoding several
/// messages from one buffer is `reader.decode()` in a loop; [`rest`](Self::rest)
/// gives what is left.
#[derive(Debug)]
pub struct Reader<'de> {
    bytes: &'de [u8],
    limits: DecodeLimits,
    depth: u32,
    budget: usize,
}

impl<'de> Reader<'de> {
    /// A reader over `bytes` with [`DecodeLimits::DEFAULT`].
    #[inline(always)]
    #[must_use]
    pub fn new(bytes: &'de [u8]) -> Self {
        Self::with_limits(bytes, DecodeLimits::DEFAULT)
    }

    /// A reader over `bytes` with the given limits.
    #[inline(always)]
    #[must_use]
    pub fn with_limits(bytes: &'de [u8], limits: DecodeLimits) -> Self {
        Self {
            bytes,
            limits,
            depth: 0,
            budget: limits.max_alloc,
        }
    }

    /// Decodes the next value.
    ///
    /// # Errors
    /// Any [`DecodeError`] the value's rules produce.
    #[inline(always)]
    pub fn decode<T: Decode<'de>>(&mut self) -> Result<T, DecodeError> {
        T::decode_from(self)
    }

    /// Decodes the next value into `value`, reusing its allocations.
    ///
    /// # Errors
    /// Any [`DecodeError`]; `value` is then valid but unspecified.
    #[inline(always)]
    pub fn decode_in_place<T: Decode<'de>>(&mut self, value: &mut T) -> Result<(), DecodeError> {
        value.decode_in_place_from(self)
    }

    /// The bytes not read yet.
    #[inline(always)]
    #[must_use]
    pub fn rest(&self) -> &'de [u8] {
        self.bytes
    }

    /// How many bytes are not read yet.
    #[inline(always)]
    #[must_use]
    pub fn remaining(&self) -> usize {
        self.bytes.len()
    }

    /// Whether every byte has been read.
    #[inline(always)]
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The limits this reader enforces.
    #[inline(always)]
    #[must_use]
    pub fn limits(&self) -> &DecodeLimits {
        &self.limits
    }

    /// Checks that every byte was read.
    ///
    /// # Errors
    /// [`DecodeError::TrailingBytes`] otherwise.
    #[inline(always)]
    pub fn finish(&self) -> Result<(), DecodeError> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(DecodeError::TrailingBytes)
        }
    }

    /// Takes the next `n` bytes.
    ///
    /// # Errors
    /// [`DecodeError::UnexpectedEnd`] if fewer remain.
    #[inline(always)]
    pub fn take(&mut self, n: usize) -> Result<&'de [u8], DecodeError> {
        match self.bytes.split_at_checked(n) {
            Some((head, tail)) => {
                self.bytes = tail;
                Ok(head)
            }
            None => Err(DecodeError::UnexpectedEnd),
        }
    }

    /// Takes the next `N` bytes as an array.
    ///
    /// # Errors
    /// [`DecodeError::UnexpectedEnd`] if fewer remain.
    #[inline(always)]
    pub fn take_array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        match self.bytes.split_first_chunk::<N>() {
            Some((head, tail)) => {
                self.bytes = tail;
                Ok(*head)
            }
            None => Err(DecodeError::UnexpectedEnd),
        }
    }

    /// Takes the next `N` bytes as a borrowed array (no copy).
    ///
    /// # Errors
    /// [`DecodeError::UnexpectedEnd`] if fewer remain.
    #[inline(always)]
    pub fn take_chunk<const N: usize>(&mut self) -> Result<&'de [u8; N], DecodeError> {
        match self.bytes.split_first_chunk::<N>() {
            Some((head, tail)) => {
                self.bytes = tail;
                Ok(head)
            }
            None => Err(DecodeError::UnexpectedEnd),
        }
    }

    /// Reads one byte.
    ///
    /// # Errors
    /// [`DecodeError::UnexpectedEnd`] at the end of input.
    #[inline(always)]
    pub fn get_u8(&mut self) -> Result<u8, DecodeError> {
        match self.bytes.split_first() {
            Some((&b, tail)) => {
                self.bytes = tail;
                Ok(b)
            }
            None => Err(DecodeError::UnexpectedEnd),
        }
    }

    /// Reads a canonical LEB128 varint.
    ///
    /// # Errors
    /// [`DecodeError::UnexpectedEnd`], [`DecodeError::VarintOverflow`] or
    /// [`DecodeError::NonCanonicalVarint`].
    #[inline(always)]
    pub fn get_varint(&mut self) -> Result<u64, DecodeError> {
        // The one- and two-byte forms (every length and count under 16 384)
        // step past themselves by a slice pattern, so the compiler sees
        // that the rest is the input less one or two bytes; stepping by a
        // returned length kept a clamp (two conditional moves) on every
        // read of a length or count, and returning the rest from a helper
        // instead cost WorldSnapshot(32) decode 18 instructions more.
        match *self.bytes {
            [b0, ref rest @ ..] if b0 < 0x80 => {
                self.bytes = rest;
                Ok(u64::from(b0))
            }
            [b0, b1, ref rest @ ..] if b1 < 0x80 && b1 != 0 => {
                self.bytes = rest;
                Ok(u64::from(b0 & 0x7f) | u64::from(b1) << 7)
            }
            // A zero second byte (a non-minimal form), longer forms and
            // the end of input.
            _ => {
                let (value, n) = decode_varint_slow(self.bytes)?;
                self.bytes = self.bytes.get(n..).unwrap_or_default();
                Ok(value)
            }
        }
    }

    /// Reads a varint that must fit a `u32`.
    ///
    /// # Errors
    /// As [`get_varint`](Self::get_varint), and [`DecodeError::VarintOverflow`]
    /// above `u32::MAX`.
    #[inline(always)]
    pub fn get_varint_u32(&mut self) -> Result<u32, DecodeError> {
        u32::try_from(self.get_varint()?).map_err(|_| DecodeError::VarintOverflow)
    }

    /// Reads the length of a string or byte string and checks it against
    /// [`DecodeLimits::max_string`], the remaining input and the allocation
    /// budget (charged only when `allocates`), before anything is allocated.
    ///
    /// # Errors
    /// [`DecodeError::OverLimit`] or [`DecodeError::LengthExceedsRemaining`].
    #[inline(always)]
    pub fn get_byte_len(&mut self, allocates: bool) -> Result<usize, DecodeError> {
        let len = self.get_varint()?;
        let len = usize::try_from(len).map_err(|_| DecodeError::OverLimit)?;
        if len > self.limits.max_string {
            return Err(DecodeError::OverLimit);
        }
        if len > self.bytes.len() {
            return Err(DecodeError::LengthExceedsRemaining);
        }
        if allocates {
            self.charge(len)?;
        }
        Ok(len)
    }

    /// Reads the element count of a collection and checks it before anything
    /// is allocated: against [`DecodeLimits::max_collection`], against the
    /// remaining input (each element takes at least `min_wire` bytes), and
    /// against the allocation budget (each element costs `mem_size` bytes).
    ///
    /// # Errors
    /// [`DecodeError::OverLimit`] or [`DecodeError::LengthExceedsRemaining`].
    #[inline(always)]
    pub fn get_count(&mut self, min_wire: usize, mem_size: usize) -> Result<usize, DecodeError> {
        let count = self.get_varint()?;
        let count = usize::try_from(count).map_err(|_| DecodeError::OverLimit)?;
        self.check_count(count, min_wire, mem_size)
    }

    /// Reads the count of a run of values: a varint ([`get_count`](Self::get_count)),
    /// or where `wide`, a 4-byte little-endian count (a run of
    /// `#[zao(blittable)]` structs, docs/WIRE.md §5) checked the same way.
    ///
    /// # Errors
    /// [`DecodeError::UnexpectedEnd`], [`DecodeError::OverLimit`] or
    /// [`DecodeError::LengthExceedsRemaining`].
    #[inline(always)]
    pub fn get_run_count(
        &mut self,
        wide: bool,
        min_wire: usize,
        mem_size: usize,
    ) -> Result<usize, DecodeError> {
        if !wide {
            return self.get_count(min_wire, mem_size);
        }
        // Stepping past the count by a slice pattern, as `get_varint`
        // does: the compiler then sees the rest is the input less 4 bytes.
        let count = match *self.bytes {
            [b0, b1, b2, b3, ref rest @ ..] => {
                self.bytes = rest;
                u32::from_le_bytes([b0, b1, b2, b3])
            }
            _ => return Err(DecodeError::UnexpectedEnd),
        };
        let count = usize::try_from(count).map_err(|_| DecodeError::OverLimit)?;
        self.check_count(count, min_wire, mem_size)
    }

    /// The checks of a count just read, a varint or a wide one: the limit,
    /// the remaining input and the budget.
    #[inline(always)]
    fn check_count(
        &mut self,
        count: usize,
        min_wire: usize,
        mem_size: usize,
    ) -> Result<usize, DecodeError> {
        if count > self.limits.max_collection {
            return Err(DecodeError::OverLimit);
        }
        let wire = count.checked_mul(min_wire).ok_or(DecodeError::OverLimit)?;
        if wire > self.bytes.len() {
            return Err(DecodeError::LengthExceedsRemaining);
        }
        self.charge(count.checked_mul(mem_size).ok_or(DecodeError::OverLimit)?)?;
        Ok(count)
    }

    /// Charges `bytes` of memory against the allocation budget.
    ///
    /// # Errors
    /// [`DecodeError::OverLimit`] once the budget is spent.
    #[inline(always)]
    pub fn charge(&mut self, bytes: usize) -> Result<(), DecodeError> {
        match self.budget.checked_sub(bytes) {
            Some(left) => {
                self.budget = left;
                Ok(())
            }
            None => Err(DecodeError::OverLimit),
        }
    }

    /// Charges a buffer that a decode in place reuses: it already holds
    /// `held` bytes (its capacity) and the decode needs `needed`. A warmed
    /// value keeps its capacity across decodes, so what it holds, not only
    /// what this decode adds, counts against the budget: otherwise a value
    /// decoded in place again and again could end up holding far more than
    /// one decode may allocate. Returns whether the buffer may keep its
    /// excess capacity; `false` means the caller must release it (and then
    /// `needed` is what was charged).
    ///
    /// # Errors
    /// [`DecodeError::OverLimit`] if even `needed` does not fit.
    #[inline(always)]
    pub fn charge_reuse(&mut self, held: usize, needed: usize) -> Result<bool, DecodeError> {
        if held > needed && self.charge(held).is_ok() {
            return Ok(true);
        }
        self.charge(needed)?;
        Ok(held <= needed)
    }

    /// Enters one level of nesting.
    ///
    /// # Errors
    /// [`DecodeError::DepthExceeded`] past [`DecodeLimits::max_depth`].
    #[inline(always)]
    pub fn enter(&mut self) -> Result<(), DecodeError> {
        if self.depth >= self.limits.max_depth {
            return Err(DecodeError::DepthExceeded);
        }
        self.depth += 1;
        Ok(())
    }

    /// Leaves one level of nesting.
    #[inline(always)]
    pub fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Reads a varint length prefix and splits off that many bytes as a
    /// reader of its own, sharing this one's limits, depth and budget (give it
    /// back with [`join`](Self::join)). Used for `#[zao(tolerant)]` bodies.
    ///
    /// # Errors
    /// [`DecodeError::OverLimit`] past the message limit, or
    /// [`DecodeError::LengthExceedsRemaining`].
    #[inline(always)]
    pub fn split_body(&mut self) -> Result<Reader<'de>, DecodeError> {
        let len = self.get_varint()?;
        let len = usize::try_from(len).map_err(|_| DecodeError::OverLimit)?;
        if len > self.limits.max_message {
            return Err(DecodeError::OverLimit);
        }
        if len > self.bytes.len() {
            return Err(DecodeError::LengthExceedsRemaining);
        }
        let body = self.take(len)?;
        Ok(Reader {
            bytes: body,
            limits: self.limits,
            depth: self.depth,
            budget: self.budget,
        })
    }

    /// Takes back a reader made by [`split_body`](Self::split_body): its
    /// spent budget counts here; its unread bytes (fields appended by a newer
    /// writer) are skipped.
    #[inline(always)]
    pub fn join(&mut self, body: Reader<'de>) {
        self.budget = self.budget.min(body.budget);
    }
}

macro_rules! get_le {
    ($($name:ident: $ty:ty),* $(,)?) => {
        impl Reader<'_> {
            $(
                #[doc = concat!("Reads a little-endian `", stringify!($ty), "`.")]
                ///
                /// # Errors
                /// [`DecodeError::UnexpectedEnd`] if too few bytes remain.
                #[inline(always)]
                pub fn $name(&mut self) -> Result<$ty, DecodeError> {
                    Ok(<$ty>::from_le_bytes(self.take_array()?))
                }
            )*
        }
    };
}

get_le!(
    get_u16_le: u16, get_u32_le: u32, get_u64_le: u64, get_u128_le: u128,
    get_i16_le: i16, get_i32_le: i32, get_i64_le: i64, get_i128_le: i128,
    get_f32_le: f32, get_f64_le: f64,
);
