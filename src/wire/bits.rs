//! Bit-level cursors for bit-packed data (docs/WIRE.md §7.1): quantized
//! values and delta snapshots write fields of any width from 0 to 64 bits
//! one after another, least significant bit first, and the last byte is
//! padded with zero bits.
//!
//! Like [`Writer`](super::Writer) and [`Reader`](super::Reader), neither
//! cursor panics: a writer that runs out of room sets a flag and drops the
//! bits, a reader that runs out of input returns
//! [`DecodeError::UnexpectedEnd`], and a reader refuses padding that is not
//! zero.

use super::DecodeError;

/// The number of bits needed to write every value from 0 to `max`: 0 for
/// 0, 1 for 1, 2 for 2–3, …, 64 for values of 2⁶³ and more.
#[inline]
#[must_use]
pub const fn bits_for(max: u64) -> u32 {
    u64::BITS - max.leading_zeros()
}

/// The low `bits` bits of all ones: the largest value of a `bits`-bit field.
#[inline]
#[must_use]
pub const fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Writes bit fields into a byte buffer the caller owns, least significant
/// bit first: the first field written starts at bit 0 of byte 0.
///
/// Bits gather in a 64-bit register and go out a byte at a time; call
/// [`finish`](Self::finish) to write the last, partial byte (padded with
/// zeros) and learn the length.
#[derive(Debug)]
pub struct BitWriter<'a> {
    buf: &'a mut [u8],
    /// Whole bytes written to `buf`.
    pos: usize,
    acc: u64,
    /// Bits waiting in `acc`, always below 8 between calls.
    pending: u32,
    overflow: bool,
}

impl<'a> BitWriter<'a> {
    /// A writer at the start of `buf`.
    #[inline]
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self {
            buf,
            pos: 0,
            acc: 0,
            pending: 0,
            overflow: false,
        }
    }

    /// Writes the low `bits` bits of `value` (`bits` ≤ 64; higher bits of
    /// `value` are ignored).
    #[inline]
    pub fn put_bits(&mut self, value: u64, bits: u32) {
        let bits = bits.min(64);
        let value = value & mask(bits);
        // `pending` < 8, so a field of up to 56 bits fits the register.
        if bits > 56 {
            self.put_bits(value, 32);
            self.put_bits(value >> 32, bits - 32);
            return;
        }
        self.acc |= value << self.pending;
        self.pending += bits;
        while self.pending >= 8 {
            self.put_byte(self.acc as u8);
            self.acc >>= 8;
            self.pending -= 8;
        }
    }

    /// Writes one bit.
    #[inline]
    pub fn put_bool(&mut self, value: bool) {
        self.put_bits(u64::from(value), 1);
    }

    /// Writes `value` (below `u64::MAX`) in Elias gamma code: for
    /// `x = value + 1` of `n` bits, `n − 1` zero bits, a one bit, then the
    /// low `n − 1` bits of `x`: [`gamma_len`] bits in all, 1 for zero, 3 for
    /// 1 and 2. Counts and gaps that are usually small cost a few bits.
    #[inline]
    pub fn put_gamma(&mut self, value: u64) {
        let x = value.saturating_add(1);
        let n = bits_for(x);
        // n − 1 zeros and the one: at most 64 bits.
        self.put_bits(0, n - 1);
        self.put_bits(1, 1);
        self.put_bits(x, n - 1);
    }

    #[inline]
    fn put_byte(&mut self, byte: u8) {
        match self.buf.get_mut(self.pos) {
            Some(slot) => {
                *slot = byte;
                self.pos += 1;
            }
            None => self.overflow = true,
        }
    }

    /// Bits written so far, the partial byte included.
    #[inline]
    #[must_use]
    pub fn bit_position(&self) -> usize {
        self.pos * 8 + self.pending as usize
    }

    /// Whether a write did not fit the buffer.
    #[inline]
    #[must_use]
    pub fn overflowed(&self) -> bool {
        self.overflow
    }

    /// Writes the partial last byte, padded with zero bits, and returns the
    /// bytes written; `None` if the buffer was too small.
    #[inline]
    pub fn finish(mut self) -> Option<usize> {
        if self.pending > 0 {
            self.put_byte(self.acc as u8);
            self.acc = 0;
            self.pending = 0;
        }
        (!self.overflow).then_some(self.pos)
    }
}

/// Bits [`BitWriter::put_gamma`] takes for `value`.
#[inline]
#[must_use]
pub const fn gamma_len(value: u64) -> usize {
    let x = value.saturating_add(1);
    2 * bits_for(x) as usize - 1
}

/// Reads bit fields from untrusted bytes in the order [`BitWriter`] wrote
/// them. Every read is checked; [`finish`](Self::finish) checks that only
/// zero padding (less than a byte) is left.
#[derive(Debug)]
pub struct BitReader<'de> {
    bytes: &'de [u8],
    acc: u64,
    /// Bits loaded in `acc`.
    loaded: u32,
}

impl<'de> BitReader<'de> {
    /// A reader over `bytes`.
    #[inline]
    #[must_use]
    pub fn new(bytes: &'de [u8]) -> Self {
        Self {
            bytes,
            acc: 0,
            loaded: 0,
        }
    }

    /// Reads a field of `bits` bits (≤ 64).
    ///
    /// # Errors
    /// [`DecodeError::UnexpectedEnd`] if the input holds fewer bits.
    #[inline]
    pub fn get_bits(&mut self, bits: u32) -> Result<u64, DecodeError> {
        let bits = bits.min(64);
        if bits > 56 {
            let low = self.get_bits(32)?;
            let high = self.get_bits(bits - 32)?;
            return Ok(low | (high << 32));
        }
        while self.loaded < bits {
            let Some((&byte, rest)) = self.bytes.split_first() else {
                return Err(DecodeError::UnexpectedEnd);
            };
            self.bytes = rest;
            self.acc |= u64::from(byte) << self.loaded;
            self.loaded += 8;
        }
        let value = self.acc & mask(bits);
        // `bits` ≤ 56 < 64: the shift is defined.
        self.acc >>= bits;
        self.loaded -= bits;
        Ok(value)
    }

    /// Reads one bit.
    ///
    /// # Errors
    /// [`DecodeError::UnexpectedEnd`] at the end of input.
    #[inline]
    pub fn get_bool(&mut self) -> Result<bool, DecodeError> {
        Ok(self.get_bits(1)? == 1)
    }

    /// Reads a value written by [`BitWriter::put_gamma`].
    ///
    /// # Errors
    /// [`DecodeError::UnexpectedEnd`], or [`DecodeError::VarintOverflow`]
    /// past 64 bits.
    #[inline]
    pub fn get_gamma(&mut self) -> Result<u64, DecodeError> {
        let mut zeros = 0u32;
        while !self.get_bool()? {
            zeros += 1;
            if zeros > 63 {
                return Err(DecodeError::VarintOverflow);
            }
        }
        let low = self.get_bits(zeros)?;
        // x is a one followed by `zeros` (≤ 63) low bits: x ≥ 1.
        let x = (1u64 << zeros) | low;
        Ok(x - 1)
    }

    /// Bits not read yet.
    #[inline]
    #[must_use]
    pub fn remaining_bits(&self) -> usize {
        self.bytes.len() * 8 + self.loaded as usize
    }

    /// Checks that what is left is the zero padding of the last byte.
    ///
    /// # Errors
    /// [`DecodeError::TrailingBytes`] if a whole byte or more is left,
    /// [`DecodeError::InvalidValue`] if a padding bit is set.
    #[inline]
    pub fn finish(&self) -> Result<(), DecodeError> {
        if !self.bytes.is_empty() || self.loaded >= 8 {
            return Err(DecodeError::TrailingBytes);
        }
        if self.acc & mask(self.loaded) != 0 {
            return Err(DecodeError::InvalidValue);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_of_every_width_come_back_in_order() {
        let fields: Vec<(u64, u32)> = (0..=64u32)
            .map(|bits| {
                (
                    0x9e37_79b9_7f4a_7c15u64.rotate_left(bits) & mask(bits),
                    bits,
                )
            })
            .collect();
        let mut buf = [0u8; 2000];
        let mut w = BitWriter::new(&mut buf);
        for &(v, bits) in &fields {
            w.put_bits(v, bits);
            w.put_gamma(v >> 1);
        }
        let len = w.finish().unwrap();
        let mut r = BitReader::new(&buf[..len]);
        for &(v, bits) in &fields {
            assert_eq!(r.get_bits(bits).unwrap(), v, "{bits} bits");
            assert_eq!(r.get_gamma().unwrap(), v >> 1);
        }
        r.finish().unwrap();
    }

    #[test]
    fn lsb_first_and_padding_is_checked() {
        let mut buf = [0u8; 2];
        let mut w = BitWriter::new(&mut buf);
        w.put_bits(0b101, 3);
        w.put_bits(0b11, 2);
        w.put_bits(1, 4);
        assert_eq!(w.bit_position(), 9);
        assert_eq!(w.finish(), Some(2));
        assert_eq!(buf, [0b0011_1101, 0]);
        assert_eq!(buf[0] & 0b111, 0b101);
        let mut r = BitReader::new(&[0b1000_0000]);
        assert_eq!(r.get_bits(3).unwrap(), 0);
        assert_eq!(r.finish(), Err(DecodeError::InvalidValue));
        assert_eq!(
            BitReader::new(&[0, 0]).finish(),
            Err(DecodeError::TrailingBytes)
        );
        assert_eq!(
            BitReader::new(&[1]).get_bits(9),
            Err(DecodeError::UnexpectedEnd)
        );
    }

    #[test]
    fn gamma_sizes_and_hostile_input() {
        for (v, len) in [(0u64, 1), (1, 3), (2, 3), (3, 5), (6, 5), (7, 7)] {
            assert_eq!(gamma_len(v), len, "{v}");
        }
        // 64 zero bits: no value has that many.
        let zeros = [0u8; 9];
        assert_eq!(
            BitReader::new(&zeros).get_gamma(),
            Err(DecodeError::VarintOverflow)
        );
        let mut small = [0u8; 1];
        let mut w = BitWriter::new(&mut small);
        w.put_bits(u64::MAX, 16);
        assert!(w.overflowed());
        assert_eq!(w.finish(), None);
    }
}
