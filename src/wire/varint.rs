//! Canonical LEB128 varints (docs/WIRE.md §2).
//!
//! Seven bits a byte, least significant group first, the high bit set on every
//! byte but the last. Only the shortest form is accepted: a last byte of
//! `0x00` after another byte is rejected, so each value has one encoding.

use super::DecodeError;

/// Longest varint of a `u64`: ten bytes.
pub const MAX_VARINT_LEN: usize = 10;

/// Bytes the varint encoding of `value` takes (1 to 10).
#[inline(always)]
#[must_use]
pub const fn varint_len(value: u64) -> usize {
    // Most lengths and counts on the wire take one byte: a predicted branch
    // for them, not the bit count's chain of dependent arithmetic on the way
    // to the allocation's size (`to_vec` of a `SpawnEntity`).
    if value < 0x80 {
        return 1;
    }
    // Counts of 128 to 16 383 (a snapshot of a thousand entities) the same:
    // the bit count's chain sat on the critical path of every `to_vec` of
    // such a snapshot, ahead of the allocation.
    if value < 0x4000 {
        return 2;
    }
    // One byte per started group of seven bits.
    let bits = 64 - (value | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// [`encode_varint`] out of line, for values of three bytes or more, which
/// are rare on the wire (the writer inlines the one- and two-byte forms).
#[cold]
#[inline(never)]
pub(crate) fn encode_varint_long(value: u64) -> ([u8; MAX_VARINT_LEN], usize) {
    encode_varint(value)
}

/// Writes `value` into a ten-byte scratch array and returns it with its length.
#[inline(always)]
pub(crate) fn encode_varint(mut value: u64) -> ([u8; MAX_VARINT_LEN], usize) {
    let mut out = [0u8; MAX_VARINT_LEN];
    let mut n = 0;
    for byte in &mut out {
        n += 1;
        if value < 0x80 {
            *byte = value as u8;
            break;
        }
        *byte = (value as u8) | 0x80;
        value >>= 7;
    }
    (out, n)
}

/// Reads one canonical varint from the front of `bytes`, of any length;
/// returns it and the number of bytes it took. `Reader::get_varint` reads
/// the one- and two-byte forms itself and calls this for the rest.
///
/// # Errors
/// [`DecodeError::UnexpectedEnd`] if the input ends mid-varint,
/// [`DecodeError::VarintOverflow`] past ten bytes or 64 bits, and
/// [`DecodeError::NonCanonicalVarint`] for a non-minimal form.
#[cold]
#[inline(never)]
pub(crate) fn decode_varint_slow(bytes: &[u8]) -> Result<(u64, usize), DecodeError> {
    let mut value = 0u64;
    for (i, &byte) in bytes.iter().take(MAX_VARINT_LEN).enumerate() {
        let group = u64::from(byte & 0x7f);
        if i == MAX_VARINT_LEN - 1 && group > 1 {
            // The tenth byte holds bit 63 alone.
            return Err(DecodeError::VarintOverflow);
        }
        value |= group << (7 * i);
        if byte < 0x80 {
            if byte == 0 && i > 0 {
                return Err(DecodeError::NonCanonicalVarint);
            }
            return Ok((value, i + 1));
        }
    }
    if bytes.len() >= MAX_VARINT_LEN {
        Err(DecodeError::VarintOverflow)
    } else {
        Err(DecodeError::UnexpectedEnd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Reader;

    /// What a reader makes of `bytes`: the value and the bytes it took.
    fn read(bytes: &[u8]) -> Result<(u64, usize), DecodeError> {
        let mut r = Reader::new(bytes);
        let value = r.get_varint()?;
        Ok((value, bytes.len() - r.remaining()))
    }

    #[test]
    fn lengths_match_encodings() {
        for value in [
            0,
            1,
            127,
            128,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let (bytes, n) = encode_varint(value);
            assert_eq!(n, varint_len(value), "{value}");
            assert_eq!(read(&bytes), Ok((value, n)), "{value}");
            assert_eq!(decode_varint_slow(&bytes), Ok((value, n)), "{value}");
        }
    }

    #[test]
    fn known_encodings() {
        assert_eq!(encode_varint(0).0[..1], [0x00]);
        assert_eq!(encode_varint(300).0[..2], [0xac, 0x02]);
        assert_eq!(
            encode_varint(u64::MAX).0,
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
    }

    #[test]
    fn rejects_bad_forms() {
        for bytes in [&[0x80, 0x00][..], &[0x80, 0x80, 0x00]] {
            assert_eq!(read(bytes), Err(DecodeError::NonCanonicalVarint));
        }
        assert_eq!(read(&[0xff; 11]), Err(DecodeError::VarintOverflow));
        assert_eq!(read(&[0xff; 10]), Err(DecodeError::VarintOverflow));
        assert_eq!(read(&[0x80]), Err(DecodeError::UnexpectedEnd));
        assert_eq!(read(&[]), Err(DecodeError::UnexpectedEnd));
        let mut ten = [0xff; 10];
        ten[9] = 0x02;
        assert_eq!(read(&ten), Err(DecodeError::VarintOverflow));
    }
}
