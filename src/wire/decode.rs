//! The `Decode` trait.

use core::mem::ManuallyDrop;

use super::{DecodeError, DecodeLimits, Reader};

/// A value that reads itself from untrusted bytes.
///
/// `'de` is the lifetime of the input: borrowed types such as `&'de str` and
/// `&'de [u8]` point into it instead of copying. Implementing it by hand means
/// writing [`decode_from`](Self::decode_from); override
/// [`decode_in_place_from`](Self::decode_in_place_from) to reuse allocations.
pub trait Decode<'de>: Sized {
    /// The fewest bytes any value of the type takes on the wire. Decoders use
    /// it to refuse a count that the remaining input cannot hold, before
    /// allocating. Zero is always safe.
    const MIN_SIZE: usize = 0;

    /// Whether every value takes exactly [`MIN_SIZE`](Self::MIN_SIZE) bytes
    /// (tiers 0 and 1). A struct of such fields then reads all its bytes with
    /// one bounds check, and a run of such values is one check for the run:
    /// each value is then read from a window of exactly its bytes, under
    /// default limits, so an exact-size value must not allocate. An
    /// `Option` of one decodes its payload's window whatever the tag and
    /// drops the result of a `None`, so the decode may run on bytes that
    /// are not its own: it must have no side effects, and must not panic on
    /// any bytes.
    const EXACT_SIZE: bool = false;

    /// Whether a run of the type (a `Vec`) carries its count as a 4-byte
    /// little-endian number instead of a varint; must agree with
    /// `Encode::WIDE_COUNT` (`true` for `#[zao(blittable)]` structs only).
    #[doc(hidden)]
    const WIDE_COUNT: bool = false;

    /// Whether the type is exact-size and every string of its
    /// [`MIN_SIZE`](Self::MIN_SIZE) bytes is a value: numbers, and tuples
    /// and structs of them. Such a value is read by
    /// [`decode_plain`](Self::decode_plain), which returns it bare, not in a
    /// `Result`. An impl that sets it overrides `decode_plain`.
    #[doc(hidden)]
    const INFALLIBLE: bool = false;

    /// Reads a value of an [`INFALLIBLE`](Self::INFALLIBLE) type from a
    /// reader that holds at least [`MIN_SIZE`](Self::MIN_SIZE) bytes (from
    /// a shorter one, the numbers past its end read as zero, never a
    /// panic). A struct or tuple of such
    /// fields is then built from bare values: moving each field out of a
    /// `Result`, whose payload sits a word in, split a `(f32, f32, f32)` or
    /// a `Vec3` at a different offset from the struct's, and the parts were
    /// stored in halves and read back whole (a store-forwarding stall, a
    /// fifth of the nested workload's decode loop).
    #[doc(hidden)]
    #[inline(always)]
    fn decode_plain(_r: &mut Reader<'de>) -> Self {
        // Callers take this path only when `INFALLIBLE` is set, and a type
        // that sets it without overriding this fails to compile here.
        const {
            assert!(
                !Self::INFALLIBLE,
                "an INFALLIBLE type must override decode_plain"
            )
        };
        unreachable!("decode_plain is only called for INFALLIBLE types")
    }

    /// Reads one value from the reader.
    ///
    /// # Errors
    /// Any [`DecodeError`] for input that breaks the type's wire rules.
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError>;

    /// Whether [`decode_then`](Self::decode_then) hands the value on where
    /// it is built, in one of several arms (an enum with data): then a `Vec`
    /// of the type pushes each element through it. Other types keep
    /// `vec.push(T::decode_from(r)?)`, whose inlining the nested workload's
    /// decode depends on (pushing through `decode_then` left `Vec::push` and
    /// two `collect`s of each entity as calls: +12 % instructions).
    ///
    /// `decode_then` reads one value and hands it to `then` where it is
    /// built: a `Vec` pushes each element it decodes (`Push`). The derive
    /// overrides it for enums with data, calling `then` in each variant's
    /// arm. A value built in several arms and then moved goes through a
    /// stack slot that each arm fills with stores of its own fields' widths,
    /// and the move's wide reads of it stall on store forwarding (a
    /// `Vec<Event>` of variants with strings: a tenth of its decode on one
    /// load); in the arm, the value goes straight to its place.
    ///
    /// # Errors
    /// As [`decode_from`](Self::decode_from); `then` is not called.
    ///
    /// `then` is a [`Then`], not a closure: a closure is only hinted inline,
    /// and in a large decode LLVM left `|value| vec.push(value)` a call that
    /// took the value through memory (the nested workload's decode, +12 %
    /// instructions).
    #[doc(hidden)]
    const BUILT_IN_ARMS: bool = false;

    /// See [`BUILT_IN_ARMS`](Self::BUILT_IN_ARMS).
    #[doc(hidden)]
    #[inline(always)]
    fn decode_then<F: Then<Self>>(r: &mut Reader<'de>, then: F) -> Result<F::Output, DecodeError>
    where
        Self: Sized,
    {
        match Self::decode_from(r) {
            Ok(value) => Ok(then.then(value)),
            Err(e) => Err(e),
        }
    }

    /// Reads one value into `self`, reusing its `String`/`Vec`/`HashMap`
    /// capacity. The default replaces `self` with the value
    /// [`decode_from`](Self::decode_from) reads.
    ///
    /// # Errors
    /// As [`decode_from`](Self::decode_from); `self` is then valid but unspecified.
    #[inline]
    fn decode_in_place_from(&mut self, r: &mut Reader<'de>) -> Result<(), DecodeError> {
        *self = Self::decode_from(r)?;
        Ok(())
    }

    /// Decodes `bytes`, which must hold exactly one value, under
    /// [`DecodeLimits::DEFAULT`].
    ///
    /// # Errors
    /// [`DecodeError::TrailingBytes`] if bytes remain after the value, or any
    /// error of the value's rules.
    // The decode entry points are always inlined, with the derived
    // `decode_from`: a decode left as a call returns its value through
    // memory, field by field, and the caller's first wide read of it stalls
    // on store forwarding (SpawnEntity: half the loop's time on one load).
    #[inline(always)]
    fn decode(bytes: &'de [u8]) -> Result<Self, DecodeError> {
        Self::decode_with_limits(bytes, DecodeLimits::DEFAULT)
    }

    /// Decodes `bytes`, which must hold exactly one value, under `limits`.
    ///
    /// # Errors
    /// As [`decode`](Self::decode), and [`DecodeError::MessageTooLarge`] if
    /// `bytes` is longer than `limits.max_message`.
    #[inline(always)]
    fn decode_with_limits(bytes: &'de [u8], limits: DecodeLimits) -> Result<Self, DecodeError> {
        // An exact-size value holds nothing a limit but `max_message`
        // bounds: every entry point takes the type's own whole-input path.
        // The condition is a constant: one path, whose value stays in
        // registers (a runtime test here gave the value a second exit, and
        // LLVM merged both through a stack slot: 1 ns to 4.8).
        if Self::EXACT_SIZE {
            return Self::decode_whole(bytes, limits.max_message);
        }
        check_length::<Self>(bytes, limits)?;
        let mut r = Reader::with_limits(bytes, limits);
        // One match, not `decode_from(..)?` then `finish()?`: with two
        // exits LLVM merged the value and the errors in a stack slot and
        // copied the value through it (WorldSnapshot(32): three stores and
        // three reloads per decode); this way it stays in registers
        // (callgrind: 270 -> 266 instructions per decode, wincode 265).
        match Self::decode_from(&mut r) {
            Ok(value) if r.is_empty() => Ok(value),
            Ok(_) => Err(DecodeError::TrailingBytes),
            Err(e) => Err(e),
        }
    }

    /// For an [`EXACT_SIZE`](Self::EXACT_SIZE) type: decodes `bytes`, which
    /// must be exactly one value of at most `max_message` bytes (the only
    /// limit such a value meets: it holds no collection or string; a wrong
    /// length or size gives the general path's error, out of line). Only
    /// the one number comes in: the whole `DecodeLimits` passed here by
    /// value put the decoded value through a stack slot (`PlayerMoved`
    /// through `decode_with_limits`: 4.6 ns against `decode`'s 0.64). Every decode entry point of such a type
    /// comes here, so `decode`, `decode_with_limits` and the in-place forms
    /// cost the same (a blittable `PlayerMoved` through `decode_with_limits`
    /// took 5.4 ns against `decode`'s 1.0: the derive had given the fast
    /// path to `decode` alone). The derive overrides it for blittable types
    /// with one length check and one copy.
    #[doc(hidden)]
    #[inline(always)]
    fn decode_whole(bytes: &'de [u8], max_message: usize) -> Result<Self, DecodeError> {
        let limits = DecodeLimits {
            max_message,
            ..DecodeLimits::DEFAULT
        };
        if bytes.len() != Self::MIN_SIZE || Self::MIN_SIZE > max_message {
            return Err(size_error::<Self>(bytes, limits));
        }
        let mut r = Reader::with_limits(bytes, limits);
        match Self::decode_from(&mut r) {
            Ok(value) if r.is_empty() => Ok(value),
            Ok(_) => Err(DecodeError::TrailingBytes),
            Err(e) => Err(e),
        }
    }

    /// Decodes one value from the front of `bytes` and returns it with the
    /// bytes after it, for buffers that hold several messages.
    ///
    /// # Errors
    /// As [`decode`](Self::decode), except that trailing bytes are returned.
    #[inline]
    fn decode_prefix(bytes: &'de [u8]) -> Result<(Self, &'de [u8]), DecodeError> {
        if bytes.len() > DecodeLimits::DEFAULT.max_message {
            return Err(DecodeError::MessageTooLarge);
        }
        let mut r = Reader::new(bytes);
        let value = Self::decode_from(&mut r)?;
        Ok((value, r.rest()))
    }

    /// Decodes `bytes`, which must hold exactly one value, into `self`,
    /// reusing its `String`/`Vec`/`HashMap` capacity: no allocation in steady
    /// state.
    ///
    /// # Errors
    /// As [`decode`](Self::decode); `self` is then valid but unspecified.
    #[inline(always)]
    fn decode_in_place(&mut self, bytes: &'de [u8]) -> Result<(), DecodeError> {
        self.decode_in_place_with_limits(bytes, DecodeLimits::DEFAULT)
    }

    /// [`decode_in_place`](Self::decode_in_place) under `limits`.
    ///
    /// What the value holds after the decode is charged against
    /// [`DecodeLimits::max_alloc`], its kept capacity included; if that runs
    /// out, the value is decoded afresh instead (freeing what it held), so
    /// this succeeds whenever [`decode_with_limits`](Self::decode_with_limits)
    /// would.
    ///
    /// # Errors
    /// As [`decode_with_limits`](Self::decode_with_limits); `self` is then
    /// valid but unspecified.
    #[inline(always)]
    fn decode_in_place_with_limits(
        &mut self,
        bytes: &'de [u8],
        limits: DecodeLimits,
    ) -> Result<(), DecodeError> {
        // An exact-size value keeps no capacity to reuse.
        if Self::EXACT_SIZE {
            *self = Self::decode_whole(bytes, limits.max_message)?;
            return Ok(());
        }
        check_length::<Self>(bytes, limits)?;
        let mut r = Reader::with_limits(bytes, limits);
        match self.decode_in_place_from(&mut r) {
            Ok(()) => r.finish(),
            // Capacity the value kept from earlier decodes counts against
            // the budget, so it can run out where a fresh decode would not.
            // The limits come back out of the reader: kept beside it for
            // this rare path, they stayed in registers (or spilled) across
            // the whole decode (WorldSnapshot(1024) decode-in-place with
            // limits from a value: 164 ns against 133).
            Err(DecodeError::OverLimit) => {
                *self = decode_afresh(bytes, r.limits())?;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Decodes a run of values into `items`. Blittable types override this
    /// with one copy of the whole run.
    #[doc(hidden)]
    #[inline(always)]
    fn decode_slice_in_place(items: &mut [Self], r: &mut Reader<'de>) -> Result<(), DecodeError> {
        for item in items {
            item.decode_in_place_from(r)?;
        }
        Ok(())
    }

    /// Decodes `count` values into a new `Vec`. Blittable types override
    /// this to build it with one copy.
    #[doc(hidden)]
    #[inline(always)]
    fn decode_vec(count: usize, r: &mut Reader<'de>) -> Result<Vec<Self>, DecodeError> {
        // The caller has checked `count` against the input and charged it
        // to the budget. Allocating here, not with a `reserve_exact` on an
        // empty `Vec`, skips the growth path's out-of-line `finish_grow`
        // (a tenth of the nested workload's decode instructions).
        let mut vec = Vec::with_capacity(count);
        Self::decode_vec_in_place(&mut vec, count, r)?;
        Ok(vec)
    }

    /// Decodes `count` values into `vec`, reusing its elements and capacity.
    /// Blittable types override this with a resize and one copy.
    #[doc(hidden)]
    #[inline(always)]
    fn decode_vec_in_place(
        vec: &mut Vec<Self>,
        count: usize,
        r: &mut Reader<'de>,
    ) -> Result<(), DecodeError> {
        vec.truncate(count);
        let have = vec.len();
        if Self::EXACT_SIZE && Self::MIN_SIZE > 0 {
            // One bounds check for the whole run, then each value from a
            // window of its constant size, where the compiler drops the
            // checks.
            let run = r.take(
                count
                    .checked_mul(Self::MIN_SIZE)
                    .ok_or(DecodeError::OverLimit)?,
            )?;
            let mut windows = run.chunks_exact(Self::MIN_SIZE);
            for (item, window) in vec.iter_mut().zip(&mut windows) {
                item.decode_in_place_from(&mut Reader::new(window))?;
            }
            // Exactly `count`: what the budget charged, no amortized slack.
            vec.reserve_exact(count - have);
            for window in windows {
                vec.push(Self::decode_from(&mut Reader::new(window))?);
            }
            return Ok(());
        }
        Self::decode_slice_in_place(vec, r)?;
        vec.reserve_exact(count - have);
        if Self::BUILT_IN_ARMS {
            for _ in have..count {
                Self::decode_then(r, Push(vec))?;
            }
        } else {
            for _ in have..count {
                push_in_room(vec, Self::decode_from(r)?);
            }
        }
        Ok(())
    }
}

/// Where [`Decode::decode_then`] hands a decoded value: always inlined,
/// unlike a closure.
#[doc(hidden)]
pub trait Then<T> {
    /// What handing the value on returns.
    type Output;

    /// Hands `value` on.
    fn then(self, value: T) -> Self::Output;
}

/// Pushes the value onto a `Vec`.
#[derive(Debug)]
struct Push<'a, T>(&'a mut Vec<T>);

impl<T> Then<T> for Push<'_, T> {
    type Output = ();

    #[inline(always)]
    fn then(self, value: T) {
        push_in_room(self.0, value);
    }
}

/// `vec.push(value)` with no call that may unwind between the value and its
/// place. `Vec::push` grows through such a call, and must then hold the
/// value's address to drop it if that unwinds: the value is then built in a
/// stack slot and moved in by a call to `memmove` (the nested workload's
/// 168-byte entities: `memmove` 10.4 -> 4.8 % of its decode's perf samples
/// without it). Here the room is made first, with the value not dropped if
/// that unwinds (it leaks), and `push`'s own check is the compare the loop
/// left on, known false: the value's fields are stored straight into the
/// `Vec`. The callers reserve the room, so the loop does not run.
#[inline(always)]
fn push_in_room<T>(vec: &mut Vec<T>, value: T) {
    let value = ManuallyDrop::new(value);
    while vec.len() == vec.capacity() {
        grow_one(vec);
    }
    vec.push(ManuallyDrop::into_inner(value));
}

/// Room for one more element, out of line, off the decode's path.
#[cold]
#[inline(never)]
fn grow_one<T>(vec: &mut Vec<T>) {
    vec.reserve(1);
}

/// The length check before a whole-message decode: `bytes` no longer than
/// `limits.max_message`, and for an exact-size `T` exactly its `MIN_SIZE`
/// bytes. For such a `T` one compare stands for the size limit, the bounds
/// check and the trailing-bytes check, which the compiler does not merge on
/// its own (it keeps a range check and an equality, both on the hot path);
/// every other length goes the general way, for the same error.
#[inline(always)]
fn check_length<'de, T: Decode<'de>>(
    bytes: &'de [u8],
    limits: DecodeLimits,
) -> Result<(), DecodeError> {
    if T::EXACT_SIZE && T::MIN_SIZE <= limits.max_message {
        if bytes.len() != T::MIN_SIZE {
            return Err(size_error::<T>(bytes, limits));
        }
    } else if bytes.len() > limits.max_message {
        return Err(DecodeError::MessageTooLarge);
    }
    Ok(())
}

/// The error of decoding `bytes` as an exact-size `T` when they are not its
/// `MIN_SIZE` bytes: the one the general path gives (too large, too short, a
/// field's own error, or trailing bytes). Out of line and returning only the
/// error, so the hot path's value never meets a value from here (a merged
/// result goes through memory and stalls store forwarding).
#[cold]
#[inline(never)]
fn size_error<'de, T: Decode<'de>>(bytes: &'de [u8], limits: DecodeLimits) -> DecodeError {
    if bytes.len() > limits.max_message {
        return DecodeError::MessageTooLarge;
    }
    let mut r = Reader::with_limits(bytes, limits);
    match T::decode_from(&mut r).and_then(|_| r.finish()) {
        Err(e) => e,
        // A hand-written impl that is not exact-size after all: its length
        // is still wrong.
        Ok(()) if bytes.len() < T::MIN_SIZE => DecodeError::UnexpectedEnd,
        Ok(()) => DecodeError::TrailingBytes,
    }
}

/// The fallback of `decode_in_place_with_limits`, out of line: rare, and a
/// second inlined decode at every call site would only cost code size.
#[cold]
#[inline(never)]
fn decode_afresh<'de, T: Decode<'de>>(
    bytes: &'de [u8],
    limits: &DecodeLimits,
) -> Result<T, DecodeError> {
    T::decode_with_limits(bytes, *limits)
}
