//! One-copy encoding for blittable values (tier 0): the wire form is the
//! little-endian memory image, so a value or a whole run of values is one
//! `copy_from_slice` each way. zerocopy proves the casts sound; these helpers
//! are what primitives, glam types and `#[zao(blittable)]` derives call.
//!
//! On a big-endian target the memory image is not the wire form, so callers
//! take these paths only under `cfg!(target_endian = "little")`.

use zerocopy::{FromBytes, Immutable, IntoBytes};

use super::{DecodeError, Reader, Writer};

/// Writes `value`'s memory image.
#[inline]
pub fn encode_blit<T: IntoBytes + Immutable>(value: &T, w: &mut Writer<'_>) {
    w.put_slice(value.as_bytes());
}

/// Writes the memory image of a whole run of values: one copy.
#[inline]
pub fn encode_blit_slice<T: IntoBytes + Immutable>(items: &[T], w: &mut Writer<'_>) {
    w.put_slice(items.as_bytes());
}

/// Reads a value from its memory image: one copy, no validation (every bit
/// pattern is a valid `T`, which `FromBytes` proves).
///
/// # Errors
/// [`DecodeError::UnexpectedEnd`] if too few bytes remain.
#[inline]
pub fn decode_blit<T: FromBytes>(r: &mut Reader<'_>) -> Result<T, DecodeError> {
    T::read_from_bytes(r.take(size_of::<T>())?).map_err(|_| DecodeError::UnexpectedEnd)
}

/// Overwrites `items` with the next `size_of_val(items)` bytes: one copy.
///
/// # Errors
/// [`DecodeError::UnexpectedEnd`] if too few bytes remain.
#[inline]
pub fn decode_blit_slice<T: FromBytes + IntoBytes>(
    items: &mut [T],
    r: &mut Reader<'_>,
) -> Result<(), DecodeError> {
    let dst = items.as_mut_bytes();
    dst.copy_from_slice(r.take(dst.len())?);
    Ok(())
}

/// Resizes `vec` to `count` and copies the next `count` values into it. With
/// a warmed `vec` of the same length this is one copy and no allocation.
///
/// # Errors
/// [`DecodeError::UnexpectedEnd`] if too few bytes remain (checked before
/// resizing), [`DecodeError::OverLimit`] if the size overflows.
#[inline]
pub fn decode_blit_vec<T: FromBytes + IntoBytes>(
    vec: &mut Vec<T>,
    count: usize,
    r: &mut Reader<'_>,
) -> Result<(), DecodeError> {
    let len = count
        .checked_mul(size_of::<T>())
        .ok_or(DecodeError::OverLimit)?;
    let src = r.take(len)?;
    vec.resize_with(count, T::new_zeroed);
    vec.as_mut_slice().as_mut_bytes().copy_from_slice(src);
    Ok(())
}
