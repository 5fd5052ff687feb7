//! Where encoded bytes go: the `Sink` trait, for a `Writer` over a caller's
//! slice and for the end of a `Vec<u8>` or a `BytesMut`.

use bytes::BytesMut;

use super::varint::encode_varint_long;
use super::varint_len;
use super::writer::{INLINE_COPY, copy_bytes, copy_short};

/// Where [`Encode::encode_to`](super::Encode::encode_to) writes: a
/// [`Writer`](super::Writer) over a buffer the caller owns (capacity checked
/// once by [`Writer::encode`](super::Writer::encode)), or the end of a
/// `Vec<u8>` or a `BytesMut` with room reserved once for the whole encoding
/// (by [`Encode::encode_to_vec`](super::Encode::encode_to_vec),
/// [`encode_to_bytes`](super::Encode::encode_to_bytes),
/// [`to_encoded_vec`](super::Encode::to_encoded_vec) and
/// [`encode_message_to`](super::encode_message_to)), appended to without
/// zero-filling it first: a run of blittable records is one `memcpy` into
/// its spare capacity.
///
/// Implementing `Encode` by hand means writing `encode_to` against this trait
/// with the `put_*` methods; they never panic.
pub trait Sink {
    /// Writes raw bytes.
    fn put_slice(&mut self, src: &[u8]);

    /// Writes a fixed-size array of bytes.
    fn put_array<const N: usize>(&mut self, src: [u8; N]);

    /// Writes raw bytes whose length is known only at run time (a name, a
    /// small `Vec`'s elements): the same bytes as
    /// [`put_slice`](Self::put_slice), which it calls unless the sink is
    /// inside a run of values ([`mark_run`](Self::mark_run)) and copies a
    /// short slice there with no branch on its length.
    #[inline(always)]
    fn put_varying(&mut self, src: &[u8]) {
        self.put_slice(src);
    }

    /// Marks the writes that follow as the elements of a run of values of
    /// variable size (`true`: a `Vec` of structs, a map's entries) or not,
    /// and returns the mark it replaces, to be put back after the run.
    ///
    /// In a run, the lengths of the elements' names and small `Vec`s vary
    /// from one element to the next, so a branch on a length is
    /// mispredicted about as often as not; there `Writer` and the growable
    /// buffers copy a short slice with no branch on its length. Outside a
    /// run, a message's short slices keep the copy that branches on the
    /// length, cheaper when the branch is predicted (the same message
    /// encoded again).
    #[doc(hidden)]
    #[inline(always)]
    fn mark_run(&mut self, in_run: bool) -> bool {
        let _ = in_run;
        false
    }

    /// A window of a known size: for a [`Writer`](super::Writer), a writer
    /// over exactly the window's bytes; for a growable buffer, the buffer
    /// itself, with room for the window made first.
    type Window<'w>: Sink
    where
        Self: 'w;

    /// Opens a window over the next `size` bytes: one bounds check (or one
    /// growth check) here, and with a constant `size` the compiler removes
    /// the checks of the writes into it. Fill it, then give
    /// [`is_filled`](Self::is_filled) of it to
    /// [`close_window`](Self::close_window). [`put_fixed`](Self::put_fixed)
    /// does all three around a closure.
    fn window(&mut self, size: usize) -> Self::Window<'_>;

    /// Closes a window opened by [`window`](Self::window): a window that was
    /// not filled exactly (a hand-written impl that broke its `FIXED_SIZE`)
    /// makes a [`Writer`](super::Writer) refuse further bytes and its encode
    /// fail.
    fn close_window(&mut self, filled: bool);

    /// For a window: whether exactly its bytes were written. For any other
    /// sink: whether nothing was refused.
    fn is_filled(&self) -> bool;

    /// Writes `size` bytes through `write`, in a [`window`](Self::window).
    /// Returns whether `write` wrote exactly `size` bytes.
    #[inline(always)]
    fn put_fixed(&mut self, size: usize, write: impl FnOnce(&mut Self::Window<'_>)) -> bool {
        let filled = {
            let mut window = self.window(size);
            write(&mut window);
            window.is_filled()
        };
        self.close_window(filled);
        filled
    }

    /// Writes `count` values of `size` bytes each, each through a
    /// [`Writer`](super::Writer) over exactly its bytes, cut from one check
    /// for the whole run. `items` must yield `count` values.
    #[doc(hidden)]
    fn put_run<I: Iterator>(
        &mut self,
        count: usize,
        size: usize,
        items: I,
        write: impl FnMut(&mut super::Writer<'_>, I::Item),
    ) -> bool;

    /// Writes one byte.
    #[inline(always)]
    fn put_u8(&mut self, value: u8) {
        self.put_array([value]);
    }

    /// Writes a canonical LEB128 varint.
    #[inline(always)]
    fn put_varint(&mut self, value: u64) {
        if value < 0x80 {
            self.put_u8(value as u8);
        } else if value < 0x4000 {
            // Two bytes, inline: counts and lengths of 128 to 16 383 (a
            // snapshot of 1024 players) are common, not cold.
            self.put_array([value as u8 | 0x80, (value >> 7) as u8]);
        } else {
            // The cold part takes the value, not the sink, and the bytes go
            // out one by one, writes of constant size the compiler inlines:
            // any call that takes the sink (or a buffer it appends to) makes
            // the compiler keep the sink's state in memory on every path.
            let (bytes, n) = encode_varint_long(value);
            for &byte in bytes.iter().take(n) {
                self.put_u8(byte);
            }
        }
    }

    /// Writes a length or count prefix (a varint).
    #[inline(always)]
    fn put_len(&mut self, len: usize) {
        self.put_varint(len as u64);
    }

    /// Writes `src` after its length: a string's or a byte string's
    /// encoding. The same bytes as [`put_len`](Self::put_len) then
    /// [`put_varying`](Self::put_varying), which is what it does unless a
    /// sink can check room for both at once.
    #[inline(always)]
    fn put_prefixed(&mut self, src: &[u8]) {
        self.put_counted(src.len(), src, false);
    }

    /// Writes `count` (a varint), then `src`: a `Vec` of numbers or glam
    /// values, its count and its memory image (a run of blittable structs
    /// has a 4-byte count: [`put_counted32`](Self::put_counted32)). The same bytes as
    /// [`put_len`](Self::put_len) then [`put_varying`](Self::put_varying),
    /// which is what it does unless a sink can check room for both at once.
    /// `wide`: the values are too wide for two of them to take a short
    /// copy, a hint that a sink may skip checking for one.
    #[doc(hidden)]
    #[inline(always)]
    fn put_counted(&mut self, count: usize, src: &[u8], _wide: bool) {
        self.put_len(count);
        self.put_varying(src);
    }

    /// Writes `count` as a little-endian `u32`, then `src`: a `Vec` of
    /// `#[zao(blittable)]` structs, its wide count (docs/WIRE.md §5) and its
    /// memory image. The same bytes as [`put_u32_le`](Self::put_u32_le)
    /// then [`put_varying`](Self::put_varying), which is what it does
    /// unless a sink can check room for both at once. `wide` as for
    /// [`put_counted`](Self::put_counted).
    #[doc(hidden)]
    #[inline(always)]
    fn put_counted32(&mut self, count: u32, src: &[u8], _wide: bool) {
        self.put_u32_le(count);
        self.put_varying(src);
    }

    /// Writes a little-endian `u16`.
    #[inline(always)]
    fn put_u16_le(&mut self, value: u16) {
        self.put_array(value.to_le_bytes());
    }

    /// Writes a little-endian `u32`.
    #[inline(always)]
    fn put_u32_le(&mut self, value: u32) {
        self.put_array(value.to_le_bytes());
    }

    /// Writes a little-endian `u64`.
    #[inline(always)]
    fn put_u64_le(&mut self, value: u64) {
        self.put_array(value.to_le_bytes());
    }

    /// Writes a little-endian `u128`.
    #[inline(always)]
    fn put_u128_le(&mut self, value: u128) {
        self.put_array(value.to_le_bytes());
    }

    /// Writes a little-endian `i16`.
    #[inline(always)]
    fn put_i16_le(&mut self, value: i16) {
        self.put_array(value.to_le_bytes());
    }

    /// Writes a little-endian `i32`.
    #[inline(always)]
    fn put_i32_le(&mut self, value: i32) {
        self.put_array(value.to_le_bytes());
    }

    /// Writes a little-endian `i64`.
    #[inline(always)]
    fn put_i64_le(&mut self, value: i64) {
        self.put_array(value.to_le_bytes());
    }

    /// Writes a little-endian `i128`.
    #[inline(always)]
    fn put_i128_le(&mut self, value: i128) {
        self.put_array(value.to_le_bytes());
    }

    /// Writes a little-endian `f32`.
    #[inline(always)]
    fn put_f32_le(&mut self, value: f32) {
        self.put_array(value.to_le_bytes());
    }

    /// Writes a little-endian `f64`.
    #[inline(always)]
    fn put_f64_le(&mut self, value: f64) {
        self.put_array(value.to_le_bytes());
    }
}

/// Where `encode_to_vec`, `encode_to_bytes`, `to_encoded_vec` and `encode_message_to`
/// encode: the end of a `Vec<u8>` or a `BytesMut` with room already reserved
/// for the whole encoding. Writes append to the spare capacity without
/// zero-filling it first (`#![forbid(unsafe_code)]` rules out writing into
/// uninitialized memory any other way).
///
/// With `GROW` false it never grows the buffer: a write past its capacity
/// (a hand-written impl writing more than the `encoded_len` reserved) is
/// refused, and the caller drops the whole encoding; what the value writes
/// within the room is its encoding, as in a slice (no check that it wrote
/// exactly its `encoded_len`). No growth path means no
/// call that takes the buffer by reference, so the compiler keeps its
/// pointer, length and capacity in registers for the whole encode (a growth
/// call anywhere pinned them to memory: every write stored and reloaded the
/// length, and the caller's first read of the finished `Vec` stalled on
/// store forwarding). With `GROW` true (a type whose size is a walk,
/// [`Encode::LEN_WALKS`](super::Encode::LEN_WALKS), appended with no size
/// pass) a write that does not fit grows the buffer by `grown`, out of
/// line and by value, which keeps the buffer in registers just as well; the
/// exact-size appender has no such path at all, because even a cold call at
/// every write changed the code of small encodes (SpawnEntity encode-fresh
/// 3–25 % slower). A
/// fixed-size window is the buffer itself after one check that the window
/// fits: no zeroed bytes to overwrite (zeroing right after the allocation
/// lets the compiler turn `malloc` + `memset` into `calloc`, off the
/// allocator's fast path) and no stack copy (which stalls on store
/// forwarding too). A write that is refused is laid out of line
/// (`cold_path`), so every write that fits falls through.
#[derive(Debug)]
pub(crate) struct Appender<'a, B, const GROW: bool = false> {
    buf: &'a mut B,
    /// Where the window ends (for the whole encoding: where it must end).
    end: usize,
    overflow: bool,
    /// Inside a run of values ([`Sink::mark_run`]).
    in_run: bool,
}

macro_rules! appender {
    ($($buf:ty),*) => {$(
        impl<'a> Appender<'a, $buf, false> {
            /// Encodes `value` at the end of `buf` and returns the bytes
            /// written: `encode_to_vec` and `encode_to_bytes`. Reserves the
            /// value's size and appends it, or, for a type whose size is a
            /// walk ([`Encode::LEN_WALKS`](super::Encode::LEN_WALKS)),
            /// appends with no size pass and grows `buf` as it goes.
            #[inline(always)]
            pub(crate) fn encode<T: super::Encode + ?Sized>(buf: &'a mut $buf, value: &T) -> usize {
                if T::LEN_WALKS {
                    return Appender::<$buf, true>::append_growing(buf, value);
                }
                let len = T::FIXED_SIZE.unwrap_or_else(|| value.encoded_len());
                buf.reserve(len);
                Self::append(buf, value, len)
            }

            /// Encodes `value` at the end of `buf`, which has room for
            /// `len` more bytes (its size); returns the bytes written, or 0
            /// (and nothing written) if `value` wrote past the room `buf`
            /// has or broke a fixed-size window.
            ///
            /// No check that `value` wrote exactly `len`: a slice holds no
            /// value to its `encoded_len` either, and the check kept the
            /// size in a register across the allocation and every write
            /// (`WorldSnapshot(32)` `to_encoded_vec` 1.06 -> 0.99× wincode's, with
            /// the out-of-line refusals and the wide run below).
            #[inline(always)]
            pub(crate) fn append<T: super::Encode + ?Sized>(buf: &'a mut $buf, value: &T, len: usize) -> usize {
                let start = buf.len();
                let mut sink = Appender::<$buf, false> {
                    end: start.saturating_add(len),
                    buf,
                    overflow: false,
                    in_run: false,
                };
                match T::FIXED_SIZE {
                    // A fixed-size value writes through a window of exactly
                    // its size, as in `Writer::encode`: it is refused if it
                    // breaks it.
                    Some(size) => {
                        let filled = {
                            let mut window = sink.window(size);
                            value.encode_to(&mut window);
                            window.is_filled()
                        };
                        sink.close_window(filled);
                    }
                    None => value.encode_to(&mut sink),
                }
                if sink.overflow {
                    core::hint::cold_path();
                    sink.buf.truncate(start);
                    return 0;
                }
                sink.buf.len() - start
            }
        }

        impl<'a> Appender<'a, $buf, true> {
            /// Encodes `value` at the end of `buf`, growing it as the writes
            /// need: no size pass first (for a type whose size is itself a
            /// walk over its values, [`Encode::LEN_WALKS`](super::Encode::LEN_WALKS)).
            /// Returns the bytes written, or 0 (and nothing written) if a
            /// fixed-size part did not write exactly its size.
            #[inline(always)]
            pub(crate) fn append_growing<T: super::Encode + ?Sized>(buf: &'a mut $buf, value: &T) -> usize {
                let start = buf.len();
                let mut sink = Appender::<$buf, true> {
                    end: usize::MAX,
                    buf,
                    overflow: false,
                    in_run: false,
                };
                value.encode_to(&mut sink);
                if sink.overflow {
                    core::hint::cold_path();
                    sink.buf.truncate(start);
                    return 0;
                }
                sink.buf.len() - start
            }

            /// `buf` with room for `more` bytes, and for the inline copy's
            /// zeroed chunk after them: grown by value and out of line, so
            /// that no call takes the buffer by reference (see [`Appender`]).
            #[cold]
            #[inline(never)]
            fn grown(mut buf: $buf, more: usize) -> $buf {
                buf.reserve(more.saturating_add(INLINE_COPY + 1));
                buf
            }
        }

        impl<const GROW: bool> Appender<'_, $buf, GROW> {
            /// Where the appender grows, makes room for a write of `size`
            /// bytes; the write's own check that it fits follows, and on the
            /// path that did not grow the compiler folds it into this one.
            #[inline(always)]
            fn make_room(&mut self, size: usize) {
                if GROW && size > self.buf.capacity() - self.buf.len() {
                    *self.buf = Appender::<$buf, true>::grown(core::mem::take(self.buf), size);
                }
            }

            /// Makes room for `size` more bytes and returns the room there
            /// is, or `None` where they may not be written: past the
            /// capacity, or after an overflow of a buffer that may not grow.
            #[inline(always)]
            fn room_for(&mut self, size: usize) -> Option<usize> {
                self.make_room(size);
                let room = self.buf.capacity() - self.buf.len();
                ((GROW || !self.overflow) && size <= room).then_some(room)
            }

            /// Appends `head`, then `src`, behind one room check for both
            /// (a count and the run it counts); `false`, and nothing
            /// written, where they do not fit.
            #[inline(always)]
            fn append_headed(&mut self, head: &[u8], src: &[u8]) -> bool {
                if self.room_for(src.len().saturating_add(head.len())).is_none() {
                    return false;
                }
                self.buf.extend_from_slice(head);
                self.extend_run(src);
                true
            }

            /// Appends a run that has room, as `blit::copy_run` copies one:
            /// in pieces where its destination would sit just above its
            /// source modulo 4 KiB. That path zero-fills, then copies into
            /// the slice: appending the pieces instead, or handing the
            /// buffer to a function out of line, kept the buffer's fields
            /// in memory on the hot path too (`WorldSnapshot(32)`
            /// encode-fresh 9.6 ns to 16.5, `SpawnEntity` 7.8 to 17).
            #[inline(always)]
            fn extend_run(&mut self, src: &[u8]) {
                let start = self.buf.len();
                let at = self.buf.as_ptr().wrapping_add(start);
                if src.len() >= super::blit::STRING_COPY_MIN
                    && super::blit::near_aliasing(at, src.as_ptr())
                {
                    self.buf.resize(start + src.len(), 0);
                    if let Some(dst) = self.buf.get_mut(start..) {
                        super::blit::copy_run(dst, src);
                    }
                } else {
                    self.buf.extend_from_slice(src);
                }
            }

            /// Appends `src`; a short one with no branch on its length if
            /// `branch_free`. `wide`: `src` is a run of values too wide for
            /// two to take a short copy, copied whole with no check for one.
            #[inline(always)]
            fn append_slice(&mut self, src: &[u8], branch_free: bool, wide: bool) {
                let Some(room) = self.room_for(src.len()) else {
                    core::hint::cold_path();
                    self.overflow = true;
                    return;
                };
                let start = self.buf.len();
                if !wide && src.len() <= INLINE_COPY && INLINE_COPY < room {
                    // Every append here is of a size checked above, so the
                    // compiler drops `extend_from_slice`'s growth path.
                    self.buf.extend_from_slice(&[0u8; INLINE_COPY]);
                    if branch_free {
                        if let Some(window) = self
                            .buf
                            .get_mut(start..)
                            .and_then(<[u8]>::first_chunk_mut::<INLINE_COPY>)
                        {
                            copy_short(window, src);
                        }
                        self.buf.truncate(start + src.len());
                    } else {
                        self.buf.truncate(start + src.len());
                        if let Some(dst) = self.buf.get_mut(start..) {
                            copy_bytes(dst, src);
                        }
                    }
                } else {
                    self.extend_run(src);
                }
            }
        }

        impl<const GROW: bool> Sink for Appender<'_, $buf, GROW> {
            type Window<'w> = Appender<'w, $buf, GROW> where Self: 'w;

            /// Short slices (labels, small runs) are copied inline, not by
            /// a call to `memcpy` with its own branches on the length (a
            /// third of the nested workload's `to_encoded_vec` time): with more
            /// than [`INLINE_COPY`] bytes of room, that many zero bytes are
            /// appended in one constant-size move, the length steps back to
            /// the slice's end, and the slice is copied over them as
            /// `Writer` copies it. More than, not as many as: zeroing a
            /// whole new allocation of that size (a `PlayerMoved` in
            /// `to_encoded_vec`) lets the compiler turn `malloc` + `memset` into
            /// `calloc`, off the allocator's fast path (1.5× slower).
            #[inline(always)]
            fn put_slice(&mut self, src: &[u8]) {
                self.append_slice(src, false, false);
            }

            /// As `put_slice`, but in a run of values a short slice is
            /// copied into the zeroed bytes before the length steps back,
            /// with no branch on its length ([`copy_short`]).
            #[inline(always)]
            fn put_varying(&mut self, src: &[u8]) {
                self.append_slice(src, self.in_run, false);
            }

            #[inline(always)]
            fn mark_run(&mut self, in_run: bool) -> bool {
                core::mem::replace(&mut self.in_run, in_run)
            }

            /// A `wide` run is one copy, with no check for a short copy
            /// first (only a single value could take one): one room check
            /// and one `extend_from_slice`. Where its count takes one byte,
            /// one check covers the count and the run together, and the run
            /// starts at a fixed offset past the count: the count's varint
            /// and the run's own room check went through a second branch
            /// and a length in a register (`WorldSnapshot(32)` `to_encoded_vec` on
            /// an AMD EPYC, median of 9 paired reps: 1.032 -> 1.022×
            /// wincode's, lower in 7 of the 9, measured when its players
            /// had a varint count; `put_counted32` keeps the one check).
            #[inline(always)]
            fn put_counted(&mut self, count: usize, src: &[u8], wide: bool) {
                if wide && count < 0x80 && self.append_headed(&[count as u8], src) {
                    return;
                }
                self.put_len(count);
                self.append_slice(src, self.in_run, wide);
            }

            /// One check for the count and the run together, as
            /// `put_counted`'s for a one-byte count.
            #[inline(always)]
            fn put_counted32(&mut self, count: u32, src: &[u8], wide: bool) {
                if wide && self.append_headed(&count.to_le_bytes(), src) {
                    return;
                }
                self.put_u32_le(count);
                self.append_slice(src, self.in_run, wide);
            }

            #[inline(always)]
            fn put_array<const N: usize>(&mut self, src: [u8; N]) {
                // A constant size: `extend_from_slice` becomes one move.
                // The check is spelled out rather than `room_for`'s: through
                // its `Option`, Inventory(128) encode-fresh read 0.996 ->
                // 1.062x wincode and the nested workload 0.691 -> 0.711x
                // (paired worker runs on a Zen 2, 3 reps of 5 processes).
                self.make_room(N);
                if (GROW || !self.overflow) && N <= self.buf.capacity() - self.buf.len() {
                    self.buf.extend_from_slice(&src);
                } else {
                    core::hint::cold_path();
                    self.overflow = true;
                }
            }

            #[inline(always)]
            fn put_varint(&mut self, value: u64) {
                if value < 0x80 {
                    self.put_u8(value as u8);
                } else if value < 0x4000 {
                    self.put_array([value as u8 | 0x80, (value >> 7) as u8]);
                } else if GROW
                    || (!self.overflow && varint_len(value) <= self.buf.capacity() - self.buf.len())
                {
                    // Out of line and by value: a call that took the buffer
                    // by reference would pin it to memory for the whole
                    // encode (see the type's docs). `extend` grows it as
                    // needed when the appender may grow.
                    *self.buf = append_long_varint(core::mem::take(self.buf), value);
                } else {
                    core::hint::cold_path();
                    self.overflow = true;
                }
            }

            /// One check that the whole window fits, before any write: on
            /// the path where it does, the checks of the writes into it
            /// follow from this one and fold.
            #[inline(always)]
            fn window(&mut self, size: usize) -> Appender<'_, $buf, GROW> {
                self.make_room(size);
                let start = self.buf.len();
                let overflow = size > self.buf.capacity() - start;
                Appender {
                    buf: &mut *self.buf,
                    end: start.saturating_add(size),
                    overflow,
                    in_run: self.in_run,
                }
            }

            #[inline(always)]
            fn close_window(&mut self, filled: bool) {
                self.overflow |= !filled;
            }

            #[inline(always)]
            fn is_filled(&self) -> bool {
                !self.overflow && self.buf.len() == self.end
            }

            /// A run is zeroed first, then written through windows of the
            /// slice writer, where every per-field check folds: appending
            /// field by field kept the buffer's length in memory (a heap
            /// store may alias it) and made `Inventory(128)` 3× slower.
            #[inline(always)]
            fn put_run<I: Iterator>(
                &mut self,
                count: usize,
                size: usize,
                items: I,
                write: impl FnMut(&mut super::Writer<'_>, I::Item),
            ) -> bool {
                let total = count.saturating_mul(size);
                self.make_room(total);
                let start = self.buf.len();
                if total > self.buf.capacity() - start {
                    core::hint::cold_path();
                    self.overflow = true;
                    return false;
                }
                self.buf.resize(start + total, 0);
                let run = self.buf.get_mut(start..).unwrap_or_default();
                let filled = super::Writer::new(run).put_run(count, size, items, write);
                self.overflow |= !filled;
                filled
            }
        }
    )*};
}

appender!(Vec<u8>, BytesMut);

/// Appends a varint of three bytes or more; see `Appender::put_varint`.
#[cold]
#[inline(never)]
fn append_long_varint<B: Extend<u8>>(mut buf: B, value: u64) -> B {
    let (bytes, n) = encode_varint_long(value);
    buf.extend(bytes.into_iter().take(n));
    buf
}
