//! One-copy encoding for blittable values (tier 0): the wire form is the
//! little-endian memory image, so a value or a whole run of values is one
//! `copy_from_slice` each way. zerocopy proves the casts sound; these helpers
//! are what primitives, glam types and `#[zao(blittable)]` derives call.
//!
//! On a big-endian target the memory image is not the wire form, so callers
//! take these paths only under `cfg!(target_endian = "little")`
//! (`encode_blit_run` checks for itself).

use zerocopy::{FromBytes, Immutable, IntoBytes, Unalign};

use super::{DecodeError, Encode, Reader, Sink};

/// Writes `value`'s memory image.
#[inline(always)]
pub fn encode_blit<T: IntoBytes + Immutable, W: Sink>(value: &T, w: &mut W) {
    w.put_slice(value.as_bytes());
}

/// Writes the memory image of a whole run of values: one copy.
#[inline(always)]
pub fn encode_blit_slice<T: IntoBytes + Immutable, W: Sink>(items: &[T], w: &mut W) {
    w.put_slice(items.as_bytes());
}

/// Writes the count and the memory image of a run whose length varies from
/// value to value (a `Vec`; `Encode::encode_run`), behind one check: where
/// the count takes one byte ([`Sink::put_counted`]), and always for the
/// 4-byte count of a run of `#[zao(blittable)]` structs
/// ([`Encode::WIDE_COUNT`], [`Sink::put_counted32`]). That count is
/// fixed-width so that the run lies at the alignment of what comes before
/// it: a header of 4-byte fields puts the run at a multiple of 4, where
/// `memcpy`'s stores are aligned (a one-byte count would put it at 1 mod
/// 4). Short runs are copied with no branch on their length
/// ([`Sink::put_varying`]). On a big-endian target it is the count and the
/// type's own `encode_slice`, so callers need no check of their own.
///
/// # Panics
/// If a run with a 4-byte count holds more than `u32::MAX` values.
#[inline(always)]
pub fn encode_blit_run<T: IntoBytes + Immutable + Encode, W: Sink>(items: &[T], w: &mut W) {
    if cfg!(target_endian = "little") {
        // Values wider than half the short copy take it only one at a time.
        let wide = size_of::<T>() > super::writer::INLINE_COPY / 2;
        if T::WIDE_COUNT {
            w.put_counted32(
                super::encode::wide_count(items.len()),
                items.as_bytes(),
                wide,
            );
        } else {
            w.put_counted(items.len(), items.as_bytes(), wide);
        }
    } else {
        super::encode::put_run_count::<T, W>(w, items.len());
        T::encode_slice(items, w);
    }
}

/// Reads a value from its memory image: one copy, no validation (every bit
/// pattern is a valid `T`, which `FromBytes` proves).
///
/// # Errors
/// [`DecodeError::UnexpectedEnd`] if too few bytes remain.
#[inline(always)]
pub fn decode_blit<T: FromBytes>(r: &mut Reader<'_>) -> Result<T, DecodeError> {
    T::read_from_bytes(r.take(size_of::<T>())?).map_err(|_| DecodeError::UnexpectedEnd)
}

/// A whole message that is one blittable `T`: exactly its memory image, one
/// length check and one copy. `N` must be `size_of::<T>()` (checked at
/// compile time; stable Rust cannot name that size as an array length in
/// generic code, so the derive passes it).
///
/// The bytes go through a `&[u8; N]` before the copy: with the length in the
/// type, LLVM moves the value as one 16-byte load and store. Copying from the
/// slice after a `match` on the length split `PlayerMoved` into 4 + 8 + 4
/// bytes (the `Result`'s error payload overlaps the value's bytes). Zao's
/// `PlayerMoved` decode over speedy's went from 1.38–1.52× to 1.28–1.34×
/// (`bench_report --worker --case PlayerMoved`, three alternating pairs).
///
/// # Errors
/// [`DecodeError::UnexpectedEnd`] if `bytes` is shorter than `T`,
/// [`DecodeError::TrailingBytes`] if it is longer.
#[inline(always)]
pub fn decode_blit_exact<T: FromBytes, const N: usize>(bytes: &[u8]) -> Result<T, DecodeError> {
    const { assert!(N == size_of::<T>(), "N must be size_of::<T>()") };
    match <&[u8; N]>::try_from(bytes) {
        // The lengths agree (asserted above), so the read cannot fail and
        // the fallback folds away.
        Ok(image) => Ok(T::read_from_bytes(image).unwrap_or_else(|_| T::new_zeroed())),
        Err(_) => Err(blit_len_error(bytes.len(), N, usize::MAX)),
    }
}

/// The largest blittable value the derive reads through [`image_words`]
/// (four words); a larger one is copied as bytes ([`decode_blit_exact`],
/// [`decode_blit`]), where a memcpy is the right tool.
pub const WORD_IMAGE_MAX: usize = 32;

/// The `N`-byte image as `K = N.div_ceil(8)` little-endian words, zero past
/// the end, read with loads of constant size (8, then 4, 2 and 1 for a
/// tail). Only for little-endian targets, where the words' first `N` bytes
/// are the image again.
///
/// The derive turns the words into the value with a size-shrinking
/// `zerocopy::transmute!` (it names the concrete type; generic code cannot
/// transmute). The value then stays in registers from the load to the
/// caller's slot. Read with `read_from_bytes`, a 16-byte `PlayerMoved` went
/// through a stack temporary, one store and one reload more: its decode
/// took 0.75–0.77 ns against speedy's 0.55–0.67 (1.15–1.37×), and takes
/// 0.55–0.66 ns through the words, the same instructions as speedy's
/// (1.00–1.01×; `bench_report --worker --case PlayerMoved --op decode`,
/// three buffer offsets).
#[inline(always)]
#[must_use]
pub fn image_words<const N: usize, const K: usize>(image: &[u8; N]) -> [u64; K] {
    const { assert!(K == N.div_ceil(8), "K must be N.div_ceil(8)") };
    let mut words = [0u64; K];
    for (i, word) in words.iter_mut().enumerate() {
        *word = word_at(image, i * 8);
    }
    words
}

/// The word of `image` that starts at byte `at`: one load when 8 bytes
/// remain, else the tail's bytes assembled from 4-, 2- and 1-byte loads.
#[inline(always)]
fn word_at<const N: usize>(image: &[u8; N], at: usize) -> u64 {
    if N.saturating_sub(at) >= 8 {
        return load(image, at, 8);
    }
    let (mut word, mut shift, mut at) = (0, 0, at);
    for len in [4, 2, 1] {
        if N.saturating_sub(at) >= len {
            word |= load(image, at, len) << shift;
            shift += 8 * len;
            at += len;
        }
    }
    word
}

/// `len` (1, 2, 4 or 8) little-endian bytes of `image` at `at`.
#[inline(always)]
fn load<const N: usize>(image: &[u8; N], at: usize, len: usize) -> u64 {
    let Some(b) = image.get(at..at + len) else {
        return 0;
    };
    match len {
        8 => u64::from_le_bytes(b.try_into().unwrap_or_default()),
        4 => u32::from_le_bytes(b.try_into().unwrap_or_default()).into(),
        2 => u16::from_le_bytes(b.try_into().unwrap_or_default()).into(),
        _ => b.first().map_or(0, |&b| b.into()),
    }
}

/// Copies a value's `N`-byte image into `dst` in 8-byte words (then 4-,
/// 2- and 1-byte pieces for a tail), for a value of at most
/// [`WORD_IMAGE_MAX`] bytes; a larger one is one `copy_from_slice`. Does
/// nothing if `src` is not `N` bytes (the derive passes the value's image).
///
/// A 16-byte `PlayerMoved` as one 16-byte load and store took 2.79 ns per
/// encode into a reused slice on a Zen 2 core (AMD EPYC, family 23, model
/// 49), against 2.47 ns for speedy's 4 + 8 + 4; as two 8-byte words it
/// reads 0.964× speedy's (it was 1.133×; `ab.py 2`, paired worker runs at
/// five placements). On a Zen 4 the 16-byte form read 0.72× speedy's; the
/// words were not measured there (two stores are still fewer than speedy's
/// three).
#[inline(always)]
pub fn copy_image<const N: usize>(dst: &mut [u8; N], src: &[u8]) {
    debug_assert_eq!(src.len(), N, "copy_image takes a value's whole image");
    let Ok(src) = <&[u8; N]>::try_from(src) else {
        return;
    };
    if N > WORD_IMAGE_MAX {
        dst.copy_from_slice(src);
        return;
    }
    let mut at = 0;
    for len in [8, 8, 8, 8, 4, 2, 1] {
        if N - at >= len {
            if let (Some(d), Some(s)) = (dst.get_mut(at..at + len), src.get(at..at + len)) {
                d.copy_from_slice(s);
            }
            at += len;
        }
    }
}

/// Runs at least this long may be copied by `rep movsb` (glibc takes it
/// from 2 KiB on, more with wider vectors), whose speed can depend on
/// where the destination sits against the source.
pub const STRING_COPY_MIN: usize = 2048;

/// The pieces a run in the bad window is copied in: under every glibc
/// `rep movsb` threshold, so each takes the vector loop.
pub const PIECE: usize = 1024;

/// Whether `dst` sits just above `src` modulo 4 KiB: `(dst − src) mod 4096`
/// in `1..WINDOW`. There, glibc's
/// `rep movsb` copy runs slowly on AMD cores: its loads run ahead into
/// addresses whose low 12 bits its own stores just wrote (4K aliasing).
/// On a Zen 2 EPYC, `WorldSnapshot(1024)` encoded into a caller slice took
/// 9 000 ns at a distance of 24, against 400 at 136 or 696 (measured
/// outside this repository); on the Zen 5 EPYC that wrote BENCHMARKS.md, a
/// 16 KiB copy at any such distance under about 1 KiB takes 1.5× the time
/// it takes at a multiple of 64 or farther (the report's placement sweep:
/// no catastrophe there, and the pieces' gain under 256 bytes is within
/// that host's noise, their loss past about 700 bytes is not).
/// A caller cannot choose where the allocator puts its buffer.
#[inline(always)]
#[must_use]
pub fn near_aliasing(dst: *const u8, src: *const u8) -> bool {
    let distance = (dst as usize).wrapping_sub(src as usize) & 4095;
    distance != 0 && distance < WINDOW
}

/// How far above its source modulo 4 KiB a destination may sit and be in
/// the bad window ([`near_aliasing`]).
pub const WINDOW: usize = 256;

/// `dst.copy_from_slice(src)` for a run (equal lengths), routed around the
/// bad window ([`near_aliasing`]): a long run whose destination sits just
/// above its source modulo 4 KiB is copied in 1 KiB pieces, which glibc
/// copies with its vector loop. Anywhere else it is one `memcpy`.
#[inline(always)]
pub fn copy_run(dst: &mut [u8], src: &[u8]) {
    if src.len() >= STRING_COPY_MIN && near_aliasing(dst.as_ptr(), src.as_ptr()) {
        copy_in_pieces(dst, src);
    } else {
        dst.copy_from_slice(src);
    }
}

#[inline(never)]
#[cold]
fn copy_in_pieces(dst: &mut [u8], src: &[u8]) {
    // Pieces of 1 KiB, front to back. (Back to front a cache line at a
    // time, so that no load reads where a store just went, took 210 ns
    // for 16 KiB against 140 for one `memcpy`: baseline x86-64 has no
    // vector wider than 16 bytes outside glibc's own code.)
    for (d, s) in dst.chunks_mut(PIECE).zip(src.chunks(PIECE)) {
        d.copy_from_slice(s);
    }
}

/// Why `len` bytes are not one `n`-byte value, with `max_message` the
/// limit on a whole input: off the fast path. Scalars in and out, so the
/// value on the fast path stays in registers (a `DecodeLimits` passed here
/// by value put the decoded value through a stack slot: 1 ns to 4.6).
#[cold]
#[inline(never)]
#[must_use]
pub fn blit_len_error(len: usize, n: usize, max_message: usize) -> DecodeError {
    if len > max_message {
        DecodeError::MessageTooLarge
    } else if len < n {
        DecodeError::UnexpectedEnd
    } else {
        DecodeError::TrailingBytes
    }
}

/// Overwrites `items` with the next `size_of_val(items)` bytes: one copy.
///
/// # Errors
/// [`DecodeError::UnexpectedEnd`] if too few bytes remain.
#[inline(always)]
pub fn decode_blit_slice<T: FromBytes + IntoBytes>(
    items: &mut [T],
    r: &mut Reader<'_>,
) -> Result<(), DecodeError> {
    let dst = items.as_mut_bytes();
    copy_run(dst, r.take(dst.len())?);
    Ok(())
}

/// Reads `count` values from their memory image into a new `Vec` of exactly
/// that capacity, in one pass: the compiler turns it into one allocation and
/// one `memcpy` (no zero-fill before the copy), whatever the alignment of
/// the input.
///
/// # Errors
/// [`DecodeError::UnexpectedEnd`] if too few bytes remain,
/// [`DecodeError::OverLimit`] if the size overflows.
#[inline(always)]
pub fn decode_blit_vec_owned<T: FromBytes + IntoBytes + Immutable>(
    count: usize,
    r: &mut Reader<'_>,
) -> Result<Vec<T>, DecodeError> {
    let src = r.take(run_len::<T>(count)?)?;
    Ok(run(src, count)?.iter().map(read).collect())
}

/// Makes `vec` the next `count` values: the elements it has are overwritten
/// with one copy, the rest appended with another (no zero-fill). With a
/// warmed `vec` of the same length this is one copy and no allocation.
///
/// # Errors
/// [`DecodeError::UnexpectedEnd`] if too few bytes remain (checked before
/// anything changes), [`DecodeError::OverLimit`] if the size overflows.
#[inline(always)]
pub fn decode_blit_vec<T: FromBytes + IntoBytes + Immutable>(
    vec: &mut Vec<T>,
    count: usize,
    r: &mut Reader<'_>,
) -> Result<(), DecodeError> {
    let src = r.take(run_len::<T>(count)?)?;
    if vec.len() == count {
        // The steady state of a warmed value: one copy over what is there.
        copy_run(vec.as_mut_slice().as_mut_bytes(), src);
        return Ok(());
    }
    let keep = vec.len().min(count);
    vec.truncate(keep);
    let (head, tail) = src.split_at(keep * size_of::<T>());
    copy_run(vec.as_mut_slice().as_mut_bytes(), head);
    let tail = run(tail, count - keep)?;
    vec.reserve_exact(tail.len());
    vec.extend(tail.iter().map(read));
    Ok(())
}

/// Bytes of a run of `count` values.
#[inline(always)]
fn run_len<T>(count: usize) -> Result<usize, DecodeError> {
    count
        .checked_mul(size_of::<T>())
        .ok_or(DecodeError::OverLimit)
}

/// `bytes` (exactly `count` values' worth) as unaligned values. Collecting
/// or extending from its iterator is `TrustedLen`, so the `Vec` is written
/// without a capacity check per element, and every element is a whole-value
/// copy, so the loop becomes one `memcpy` (checked in the assembly: a loop
/// over `chunks_exact` with `read_from_bytes` is split into field copies
/// instead).
#[inline(always)]
fn run<T: FromBytes + Immutable>(bytes: &[u8], count: usize) -> Result<&[Unalign<T>], DecodeError> {
    <[Unalign<T>]>::ref_from_bytes_with_elems(bytes, count).map_err(|_| DecodeError::UnexpectedEnd)
}

/// One value out of its unaligned image.
#[inline(always)]
fn read<T: FromBytes + IntoBytes + Immutable>(item: &Unalign<T>) -> T {
    T::read_from_bytes(item.as_bytes()).unwrap_or_else(|_| T::new_zeroed())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every distance, in and out of the window, copies every byte: the
    /// pieces cover the run, the last one short.
    #[test]
    fn a_run_copies_whole_at_every_distance() {
        let src: Vec<u8> = (0..5000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        for len in [STRING_COPY_MIN - 1, STRING_COPY_MIN, 3000, 4096, 5000] {
            let mut buf = vec![0u8; len + 8192];
            for distance in (0..4096).step_by(8).chain([1, 255, 256, 4095]) {
                let base = buf.as_ptr() as usize;
                let want = (src.as_ptr() as usize).wrapping_add(distance);
                let off = want.wrapping_sub(base) & 4095;
                let dst = &mut buf[off..off + len];
                assert_eq!(
                    near_aliasing(dst.as_ptr(), src.as_ptr()),
                    distance != 0 && distance < WINDOW
                );
                dst.fill(0);
                copy_run(dst, &src[..len]);
                assert_eq!(dst, &src[..len], "length {len}, distance {distance}");
            }
        }
    }
}
