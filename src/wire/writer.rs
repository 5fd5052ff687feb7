//! A cursor over a caller-owned buffer.

use super::{Encode, EncodeError, Sink};

/// Writes values one after another into a buffer the caller owns.
///
/// [`encode`](Self::encode) checks the capacity of the whole value once, then
/// the value writes itself with the `put_*` primitives. Several messages can
/// share one buffer: call `encode` for each, then send the first
/// [`position`](Self::position) bytes of the buffer.
///
/// The `put_*` methods (also those of [`Sink`], which `Writer` implements)
/// never panic. They are meant for [`Encode::encode_to`] implementations,
/// which run after the capacity check; should an
/// implementation write more than its [`Encode::encoded_len`] promised, the
/// excess is refused and [`encode`](Self::encode) reports it as an
/// [`EncodeError`].
#[derive(Debug)]
pub struct Writer<'a> {
    /// The part of the buffer not written yet. Writes split their bytes off
    /// its front, so with a window of constant length the compiler can see
    /// every bound and drop the checks.
    rest: &'a mut [u8],
    /// The buffer's length: the position is this less what is left, so a
    /// write updates the rest alone (no second counter to keep in step).
    len: usize,
    overflow: bool,
    /// Inside a run of values ([`Sink::mark_run`]).
    in_run: bool,
}

impl<'a> Writer<'a> {
    /// A writer at the front of `buf`.
    #[inline(always)]
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self {
            len: buf.len(),
            rest: buf,
            overflow: false,
            in_run: false,
        }
    }

    /// Encodes one value after what is already written and returns its size.
    /// Up to 8 bytes past the new position may have been overwritten (see
    /// [`Encode::encode`]); later writes may or may not cover them.
    ///
    /// # Errors
    /// [`EncodeError`] if the rest of the buffer cannot hold the value; then
    /// nothing counts as written: the position does not move and the bytes
    /// before it are as they were, though bytes after it may have been
    /// overwritten. (If a hand-written impl writes more than its
    /// `encoded_len` promised, the error is returned too.)
    // Always inlined: the result then stays in registers instead of a
    // 24-byte out-parameter the caller reloads (measured with a
    // min-of-batches probe: SpawnEntity encode 14.0 -> 4.3 ns).
    #[inline(always)]
    pub fn encode<T: Encode + ?Sized>(&mut self, value: &T) -> Result<usize, EncodeError> {
        let available = self.remaining();
        // One pass into a reborrow of the rest: every write is checked
        // anyway (a hand-written impl may break its `encoded_len`), the size
        // is computed only when the value did not fit, and a value that did
        // not fit leaves this writer's rest for the next one. A size pass
        // first cost a seventh of the nested workload's encode (the walk
        // over every entity, twice).
        let mut sub = Writer::new(&mut *self.rest);
        match T::FIXED_SIZE {
            // A fixed-size value writes through a window of exactly its
            // size: one capacity check, and the compiler folds every check
            // after it.
            Some(size) => {
                // Refused before the window is cut, not after: the
                // compiler then lays the loop out as one straight path
                // (PlayerInput encode-reuse 1.05 -> 1.01x speedy, the same
                // instructions as speedy's loop).
                if available < size {
                    return Err(too_small(value, available));
                }
                sub.put_fixed(size, |w| value.encode_to(w));
            }
            None => value.encode_to(&mut sub),
        }
        let written = available - sub.rest.len();
        if sub.overflow {
            return Err(too_small(value, available));
        }
        self.rest = core::mem::take(&mut self.rest)
            .get_mut(written..)
            .unwrap_or_default();
        Ok(written)
    }

    /// Refuses a write that did not fit when `left` bytes were left: the
    /// writer takes no further bytes, and its position stays where it was.
    #[inline(always)]
    fn refuse(&mut self, left: usize) {
        // The buffer was too small: an error, laid out of line so that
        // every write that fits falls through.
        core::hint::cold_path();
        self.overflow = true;
        self.len -= left - self.rest.len();
    }

    /// Bytes written so far.
    #[inline(always)]
    #[must_use]
    pub fn position(&self) -> usize {
        self.len - self.rest.len()
    }

    /// Bytes left in the buffer.
    #[inline(always)]
    #[must_use]
    pub fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// Whether a write did not fit (a hand-written impl wrote more than its
    /// `encoded_len`); the writer then takes no further bytes.
    #[inline(always)]
    #[must_use]
    pub fn overflowed(&self) -> bool {
        self.overflow
    }

    /// Writes raw bytes.
    // Always inlined: a call that takes the writer makes the compiler keep
    // its state in memory on every path of the caller (a cold long-varint
    // path did that to every encode of a string).
    #[inline(always)]
    pub fn put_slice(&mut self, src: &[u8]) {
        let left = self.rest.len();
        match core::mem::take(&mut self.rest).split_at_mut_checked(src.len()) {
            Some((head, tail)) => {
                copy_bytes(head, src);
                self.rest = tail;
            }
            None => self.refuse(left),
        }
    }

    /// Writes raw bytes whose length is known only at run time (see
    /// [`Sink::put_varying`]). In a run of values and with room for 16
    /// bytes, a slice of at most 16 is copied with no branch on its length,
    /// and up to 8 bytes after it are overwritten: bytes past the position,
    /// which later writes may or may not cover.
    #[inline(always)]
    pub fn put_varying(&mut self, src: &[u8]) {
        let n = src.len();
        if self.in_run
            && n <= INLINE_COPY
            && let Some(window) = self.rest.first_chunk_mut::<INLINE_COPY>()
        {
            copy_short(window, src);
            self.rest = core::mem::take(&mut self.rest)
                .get_mut(n..)
                .unwrap_or_default();
            return;
        }
        self.put_slice(src);
    }

    /// Writes a fixed-size array of bytes.
    #[inline(always)]
    pub fn put_array<const N: usize>(&mut self, src: [u8; N]) {
        let left = self.rest.len();
        match core::mem::take(&mut self.rest).split_first_chunk_mut::<N>() {
            Some((head, tail)) => {
                *head = src;
                self.rest = tail;
            }
            None => self.refuse(left),
        }
    }

    /// Writes one byte.
    #[inline(always)]
    pub fn put_u8(&mut self, value: u8) {
        self.put_array([value]);
    }

    /// Writes `size` bytes through `write`, which gets a writer over exactly
    /// that window: one bounds check here, and with a constant `size` the
    /// compiler removes the checks inside. Returns whether the window fit
    /// and `write` filled it exactly.
    #[inline(always)]
    pub fn put_fixed(&mut self, size: usize, write: impl FnOnce(&mut Writer<'_>)) -> bool {
        let left = self.rest.len();
        let Some((window, tail)) = core::mem::take(&mut self.rest).split_at_mut_checked(size)
        else {
            self.refuse(left);
            return false;
        };
        let mut sub = Writer::new(window);
        write(&mut sub);
        if sub.overflow || !sub.rest.is_empty() {
            self.refuse(left);
            return false;
        }
        self.rest = tail;
        true
    }

    /// Writes `count` values of `size` bytes each, one window per value cut
    /// from one capacity check for the whole run: with a constant `size` no
    /// check is left in the loop. `items` must yield `count` values.
    #[doc(hidden)]
    #[inline(always)]
    pub fn put_run<I: Iterator>(
        &mut self,
        count: usize,
        size: usize,
        items: I,
        mut write: impl FnMut(&mut Writer<'_>, I::Item),
    ) -> bool {
        let total = count.saturating_mul(size);
        let left = self.rest.len();
        let Some((run, tail)) = core::mem::take(&mut self.rest).split_at_mut_checked(total) else {
            self.refuse(left);
            return false;
        };
        let mut ok = size > 0 || count == 0;
        // The windows drive the loop and the items are pulled: the windows'
        // end is the loop's own exit. Driving it from the items' `for_each`
        // (hashbrown's fold) left the windows' check at the loop's latch, a
        // second taken branch per map entry: Inventory(128) encode-reuse
        // 144-148 -> 139-141 ns, encode-fresh 164-169 -> 157-158 ns. The
        // windows come in groups of `RUN_UNROLL`, cut at constant offsets
        // from one check per group, so an entry pays for the items' own
        // checks only (wincode's unchecked pointer pays the same): against
        // wincode in one worker, Inventory(128) encode-reuse 1.10-1.32x at
        // one window per check, 1.01-1.08x at two, 0.97-1.04x at four
        // (eight: see `RUN_UNROLL`).
        let mut items = items;
        let mut one = |window: &mut [u8], item| {
            let mut sub = Writer::new(window);
            write(&mut sub, item);
            !sub.overflow && sub.rest.is_empty()
        };
        let size = size.max(1);
        let mut groups = run.chunks_exact_mut(size.saturating_mul(RUN_UNROLL));
        'groups: for group in &mut groups {
            for window in group.chunks_exact_mut(size) {
                let Some(item) = items.next() else {
                    ok = false;
                    break 'groups;
                };
                ok &= one(window, item);
            }
        }
        if ok {
            for window in groups.into_remainder().chunks_exact_mut(size) {
                let Some(item) = items.next() else {
                    ok = false;
                    break;
                };
                ok &= one(window, item);
            }
        }
        if !ok || items.next().is_some() {
            self.refuse(left);
            return false;
        }
        self.rest = tail;
        true
    }

    /// Writes `head`, then `src`, behind one check for both (a count and
    /// the run it counts); refuses both where they do not fit. `wide`: a
    /// run of values too wide for a short copy, copied whole. The one-byte
    /// count of `put_counted` and the 4-byte one of `put_counted32` both
    /// come here: callgrind counts the same instructions per encode on
    /// every row of the report as with the two spelled out (one more per
    /// Inventory(128) encode-reuse). A timing gap once measured against an
    /// earlier form of this helper (Inventory(128) encode-fresh 0.93 ->
    /// 0.99× wincode) is within what the code's address alone moves that
    /// row (docs/DECISIONS.md, "A fixed-size run is cut eight windows per
    /// check").
    #[inline(always)]
    fn put_headed<const H: usize>(&mut self, head: [u8; H], src: &[u8], wide: bool) {
        let n = src.len();
        let left = self.rest.len();
        match core::mem::take(&mut self.rest).split_at_mut_checked(n + H) {
            Some((dst, tail)) => {
                let (h, body) = dst.split_at_mut(H);
                h.copy_from_slice(&head);
                if wide {
                    super::blit::copy_run(body, src);
                } else {
                    copy_bytes(body, src);
                }
                self.rest = tail;
            }
            None => self.refuse(left),
        }
    }

    /// Writes a canonical LEB128 varint.
    #[inline(always)]
    pub fn put_varint(&mut self, value: u64) {
        Sink::put_varint(self, value);
    }

    /// Writes a length or count prefix (a varint).
    #[inline(always)]
    pub fn put_len(&mut self, len: usize) {
        Sink::put_len(self, len);
    }
}

impl<'a> Sink for Writer<'a> {
    type Window<'w>
        = Writer<'w>
    where
        Self: 'w;

    #[inline(always)]
    fn put_slice(&mut self, src: &[u8]) {
        Writer::put_slice(self, src);
    }

    #[inline(always)]
    fn put_array<const N: usize>(&mut self, src: [u8; N]) {
        Writer::put_array(self, src);
    }

    #[inline(always)]
    fn put_varying(&mut self, src: &[u8]) {
        Writer::put_varying(self, src);
    }

    #[inline(always)]
    fn mark_run(&mut self, in_run: bool) -> bool {
        core::mem::replace(&mut self.in_run, in_run)
    }

    /// A count under 128 (a one-byte varint) behind one check for the count
    /// and the bytes together: a short string's length and its bytes, a
    /// `Vec` of numbers' or glam values' count and their memory image. A
    /// `wide` run is one `memcpy` with no check for a short copy first: only
    /// a single value could take one, and the check cost every encode of
    /// `WorldSnapshot(32)` 2 of its 40 instructions (when its players had
    /// a varint count; `put_counted32` skips it the same way).
    #[inline(always)]
    fn put_counted(&mut self, count: usize, src: &[u8], wide: bool) {
        let n = src.len();
        if count >= 0x80 {
            // Laid out of line: behind a count of 128 or more come at least
            // 128 bytes to copy, which dwarf a taken jump; a short count
            // falls through.
            // (A wide run this long is too long for `put_varying`'s short
            // copy.)
            core::hint::cold_path();
            self.put_len(count);
            self.put_varying(src);
            return;
        }
        if !wide
            && self.in_run
            && n <= INLINE_COPY
            && let Some([len, window @ ..]) = self.rest.first_chunk_mut::<{ INLINE_COPY + 1 }>()
        {
            *len = count as u8;
            copy_short(window, src);
            self.rest = core::mem::take(&mut self.rest)
                .get_mut(n + 1..)
                .unwrap_or_default();
            return;
        }
        self.put_headed([count as u8], src, wide);
    }

    /// The 4-byte count and the run behind one check (`put_headed`).
    #[inline(always)]
    fn put_counted32(&mut self, count: u32, src: &[u8], wide: bool) {
        self.put_headed(count.to_le_bytes(), src, wide);
    }

    #[inline(always)]
    fn window(&mut self, size: usize) -> Writer<'_> {
        let left = self.rest.len();
        match core::mem::take(&mut self.rest).split_at_mut_checked(size) {
            Some((window, tail)) => {
                self.rest = tail;
                Writer::new(window)
            }
            None => {
                self.refuse(left);
                Writer::new(&mut [])
            }
        }
    }

    #[inline(always)]
    fn close_window(&mut self, filled: bool) {
        if !filled {
            self.overflow = true;
        }
    }

    #[inline(always)]
    fn is_filled(&self) -> bool {
        !self.overflow && self.rest.is_empty()
    }

    #[inline(always)]
    fn put_run<I: Iterator>(
        &mut self,
        count: usize,
        size: usize,
        items: I,
        write: impl FnMut(&mut Writer<'_>, I::Item),
    ) -> bool {
        Writer::put_run(self, count, size, items, write)
    }
}

/// The error of a value that did not fit in `available` bytes, out of line:
/// its size is computed only now, on the cold path.
#[cold]
#[inline(never)]
fn too_small<T: Encode + ?Sized>(value: &T, available: usize) -> EncodeError {
    EncodeError {
        // More than was available, even for an impl that broke its promise.
        needed: value.encoded_len().max(available.saturating_add(1)),
        available,
    }
}

/// Windows cut per bounds check in [`Writer::put_run`]: on map entries of
/// 13 bytes 4 beat 2 and 1. 8 measured the same as 4 on an earlier host and
/// better on a Zen 2 (AMD EPYC, family 23, model 49), where a group's
/// bookkeeping (about six instructions) was the gap to wincode's loop:
/// paired worker runs against 4, median of 3 reps of 5 processes, zao ÷
/// wincode, Inventory(128) encode-reuse 1.013 -> 1.003, with the fixed
/// hasher 1.012 -> 0.997, encode-fresh 1.002 -> 0.996, nested world
/// encode-reuse 0.576 -> 0.560, event log 1.003 -> 1.001. One row lost:
/// the fixed-hasher encode-fresh, 1.010 -> 1.087, whose loop is the same
/// machine code as the std-hasher row's (docs/DECISIONS.md, "A fixed-size
/// run is cut eight windows per check"). 6 lost on every Inventory row,
/// 16 lost 10-15 %.
const RUN_UNROLL: usize = 8;

/// The longest slice [`copy_bytes`] copies inline (two overlapping 8-byte
/// moves at most).
pub(super) const INLINE_COPY: usize = 16;
const _: () = assert!(INLINE_COPY <= 16, "copy_bytes moves at most 2 × 8 bytes");

/// `dst.copy_from_slice(src)` (equal lengths), with short runs (names,
/// tags) copied inline by two overlapping fixed-size moves instead of a call
/// to `memcpy`: a third of a short string's encode time went to the call.
#[inline(always)]
pub(super) fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    if n > INLINE_COPY || n != dst.len() {
        // A long run is one `memcpy`, whatever its length
        // (docs/DECISIONS.md, "A long run is copied whole"), but where its
        // placement would stall it (`blit::copy_run`).
        super::blit::copy_run(dst, src);
        return;
    }
    fn two<const K: usize>(dst: &mut [u8], src: &[u8]) {
        let n = src.len();
        if let (Some(d), Some(s)) = (dst.first_chunk_mut::<K>(), src.first_chunk::<K>()) {
            *d = *s;
        }
        if let (Some(d), Some(s)) = (
            dst.get_mut(n - K..).and_then(|d| d.first_chunk_mut::<K>()),
            src.get(n - K..).and_then(|s| s.first_chunk::<K>()),
        ) {
            *d = *s;
        }
    }
    match n {
        8..=INLINE_COPY => two::<8>(dst, src),
        4..=7 => two::<4>(dst, src),
        2..=3 => two::<2>(dst, src),
        1 => two::<1>(dst, src),
        _ => {}
    }
}

/// Copies `src`, at most [`INLINE_COPY`] bytes, to the front of `window`
/// with no branch on its length; up to 8 bytes of `window` past the copy
/// are overwritten (with zeros or copies of `src`'s bytes).
///
/// Every move of the ladder below is made whatever the length: two 8-byte
/// moves (at the front and at the end of the copy), two 4-byte, two 2-byte,
/// one 1-byte, largest first. A move longer than `src` takes zeros and
/// lands at the front, where the shorter moves after it put `src`'s bytes
/// back; the others write `src`'s bytes at their own offsets. Whether a
/// move fits is a select, not a jump: a jump per size class (the copy of
/// [`copy_bytes`]) was mispredicted whenever lengths vary from one value to
/// the next, as a game state's names and small `Vec`s do.
#[inline(always)]
pub(super) fn copy_short(window: &mut [u8; INLINE_COPY], src: &[u8]) {
    #[inline(always)]
    fn step<const K: usize>(window: &mut [u8; INLINE_COPY], src: &[u8], at: usize) {
        // `at` is at most `INLINE_COPY - K` (the callers' offsets), so the
        // window always holds the move.
        let from = src.get(at..).and_then(<[u8]>::first_chunk::<K>);
        if let Some(to) = window.get_mut(at..).and_then(<[u8]>::first_chunk_mut::<K>) {
            *to = *from.unwrap_or(&[0; K]);
        }
    }
    let n = src.len();
    step::<8>(window, src, 0);
    step::<8>(window, src, n.saturating_sub(8));
    step::<4>(window, src, 0);
    step::<4>(window, src, n.saturating_sub(4));
    step::<2>(window, src, 0);
    step::<2>(window, src, n.saturating_sub(2));
    step::<1>(window, src, 0);
}

macro_rules! put_le {
    ($($name:ident: $ty:ty),* $(,)?) => {
        impl Writer<'_> {
            $(
                #[doc = concat!("Writes a little-endian `", stringify!($ty), "`.")]
                #[inline(always)]
                pub fn $name(&mut self, value: $ty) {
                    Sink::$name(self, value);
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
