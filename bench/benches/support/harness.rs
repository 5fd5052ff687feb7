//! The one harness every library goes through: a library is a [`Lib`], a
//! pair of functions (encode into a reused destination, decode to an owned
//! value) plus its one-call encode into a new buffer, and [`rows`] turns it
//! into timed rows the same way for every library. Each row is a closure
//! that runs its operation `iters` times, monomorphized, so a measurement
//! pays one dynamic call per batch, not per operation.
//!
//! Fairness rules, enforced here rather than per library:
//! - every row passes its inputs and its result through `black_box` the same
//!   way (the raw copy included);
//! - every library's encode rows read the one source value of the case (the
//!   same instance for every library that shares its type, so the same heap
//!   addresses), and its decode rows read one input;
//! - every reused destination and every decode input starts at the same
//!   offset within a 4 KiB page (the [`placement`](set_placement), which the
//!   report moves from one worker process to the next), so no library gets a
//!   luckier alignment or a luckier distance between what it reads and what
//!   it writes. (With glibc, heap addresses are random only above the page:
//!   without the move, every process would repeat one layout's luck.)

use std::hint::black_box;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What a row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Op {
    /// Encode into a new buffer (each library's one-call API).
    EncodeFresh,
    /// Encode into a buffer the caller keeps and reuses.
    EncodeReuse,
    /// Decode to an owned value, then drop it (rkyv: validate, then
    /// deserialize).
    Decode,
    /// Zao: decode into a warmed value, reusing its allocations. Raw: copy
    /// into a warmed `Vec`.
    DecodeInPlace,
    /// Zao: decode to a type that borrows its strings from the input.
    DecodeBorrowed,
    /// rkyv: validated zero-copy access to the archived value, no owned value.
    Access,
    /// Zao: `decode_with_limits` with limits from a value (the default
    /// ones, not known at compile time): what a server that sets its own
    /// limits calls.
    DecodeLimits,
    /// Zao: `decode_in_place_with_limits`, the same way.
    DecodeInPlaceLimits,
}

impl Op {
    /// Every operation, in report order.
    pub(crate) const ALL: [Op; 8] = [
        Op::EncodeFresh,
        Op::EncodeReuse,
        Op::Decode,
        Op::DecodeInPlace,
        Op::DecodeBorrowed,
        Op::Access,
        Op::DecodeLimits,
        Op::DecodeInPlaceLimits,
    ];

    /// The label in criterion ids and in the report.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::EncodeFresh => "encode-fresh",
            Self::EncodeReuse => "encode-reuse",
            Self::Decode => "decode",
            Self::DecodeInPlace => "decode-in-place",
            Self::DecodeBorrowed => "decode-borrowed",
            Self::Access => "access-validated",
            Self::DecodeLimits => "decode-with-limits",
            Self::DecodeInPlaceLimits => "decode-in-place-with-limits",
        }
    }

    /// The operation with this label.
    pub(crate) fn from_label(label: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.label() == label)
    }
}

/// One operation of one library, runnable in batches.
pub(crate) struct Row {
    /// The library.
    pub(crate) lib: &'static str,
    /// The operation.
    pub(crate) op: Op,
    run: Box<dyn FnMut(u64)>,
}

impl Row {
    /// Runs the operation `iters` times.
    pub(crate) fn run(&mut self, iters: u64) {
        (self.run)(iters);
    }
}

/// One message case: wire sizes and the rows of every library.
pub(crate) struct Case {
    /// `PlayerMoved`, `WorldSnapshot(32)`, ...
    pub(crate) name: String,
    /// Encoded size per library, in row order.
    pub(crate) wire: Vec<(&'static str, usize)>,
    /// The operations.
    pub(crate) rows: Vec<Row>,
}

impl Case {
    /// An empty case.
    pub(crate) fn new(name: String) -> Self {
        Self {
            name,
            wire: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// Adds a row that runs `op_once` per iteration, its result through
    /// `black_box`.
    pub(crate) fn push<R>(
        &mut self,
        lib: &'static str,
        op: Op,
        mut op_once: impl FnMut() -> R + 'static,
    ) {
        self.rows.push(Row {
            lib,
            op,
            run: Box::new(move |iters| {
                for _ in 0..iters {
                    black_box(op_once());
                }
            }),
        });
    }
}

/// A library under test, for values of type `T`.
pub(crate) trait Lib<T> {
    /// Its name in the report.
    const NAME: &'static str;
    /// What encode-reuse writes into, kept across iterations.
    type Dst;
    /// What the one-call encode returns.
    type Fresh: AsRef<[u8]>;

    /// A destination that holds `wire` bytes and more.
    fn dst(wire: usize) -> Self::Dst;
    /// Encodes into the reused destination; returns whether it succeeded
    /// (a flag rather than a length: not every library returns one).
    fn encode_reuse(value: &T, dst: &mut Self::Dst) -> bool;
    /// Encodes into a new buffer.
    fn encode_fresh(value: &T) -> Self::Fresh;
    /// Decodes an owned value.
    fn decode(bytes: &[u8]) -> Option<T>;
}

/// Bytes in the page whose offsets [`set_placement`] chooses.
const PAGE: usize = 4096;

/// Where in a page every [`Aligned`] buffer starts.
static PLACEMENT: AtomicUsize = AtomicUsize::new(0);

/// Makes every [`Aligned`] buffer made from now on start `offset` bytes past
/// a 4 KiB boundary (taken modulo the page and rounded down to 64 bytes).
pub(crate) fn set_placement(offset: usize) {
    PLACEMENT.store(offset % PAGE / 64 * 64, Ordering::Relaxed);
}

/// A byte buffer whose usable part starts at the [placement](set_placement)
/// (found with the safe `align_offset`): a 64-byte boundary at the same
/// offset within a page for every library's buffers, so every library
/// writes to and reads from the same alignment.
pub(crate) struct Aligned {
    buf: Vec<u8>,
    offset: usize,
    len: usize,
}

impl Aligned {
    /// `len` zero bytes at the placement.
    pub(crate) fn zeroed(len: usize) -> Self {
        let buf = vec![0u8; len + 2 * PAGE];
        let offset = buf.as_ptr().align_offset(PAGE).min(PAGE) + PLACEMENT.load(Ordering::Relaxed);
        Self { buf, offset, len }
    }

    /// A copy of `bytes` at the placement.
    pub(crate) fn copy_of(bytes: &[u8]) -> Self {
        let mut aligned = Self::zeroed(bytes.len());
        aligned.as_mut().copy_from_slice(bytes);
        aligned
    }
}

impl AsRef<[u8]> for Aligned {
    #[inline(always)]
    fn as_ref(&self) -> &[u8] {
        &self.buf[self.offset..self.offset + self.len]
    }
}

impl AsMut<[u8]> for Aligned {
    #[inline(always)]
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.offset..self.offset + self.len]
    }
}

/// A copy of `items` whose buffer starts on a 64-byte boundary: the source
/// runs that every library copies from then share one alignment. (Allocates
/// until the allocator hands out such an address; a handful of tries.)
pub(crate) fn aligned_vec<T: Clone>(items: &[T]) -> Vec<T> {
    let mut rejected = Vec::new();
    for _ in 0..64 {
        let mut v = Vec::with_capacity(items.len().max(1));
        v.extend_from_slice(items);
        if v.as_ptr().cast::<u8>().align_offset(64) == 0 {
            return v;
        }
        // Kept alive so the next try gets another address.
        rejected.push(v);
    }
    items.to_vec()
}

/// Bytes of slack after the encoding in a reused destination.
pub(crate) const SLACK: usize = 64;

/// Encodes `value` with `L`, checks that it decodes back, and adds `L`'s
/// encode-fresh, encode-reuse and decode rows, which read this very
/// instance. Returns `L`'s encoding.
pub(crate) fn rows<L, T>(case: &mut Case, value: &Rc<T>) -> Aligned
where
    L: Lib<T> + 'static,
    T: PartialEq + std::fmt::Debug + 'static,
{
    let fresh = L::encode_fresh(value);
    let bytes = Aligned::copy_of(fresh.as_ref());
    let wire = bytes.as_ref().len();
    assert_eq!(
        L::decode(bytes.as_ref()).as_ref(),
        Some(&**value),
        "{} round trip",
        L::NAME
    );
    let mut dst = L::dst(wire + SLACK);
    assert!(L::encode_reuse(value, &mut dst), "{} encode-reuse", L::NAME);
    case.wire.push((L::NAME, wire));

    let v = Rc::clone(value);
    let value = Rc::clone(value);
    case.push(L::NAME, Op::EncodeFresh, move || {
        L::encode_fresh(black_box(&*v))
    });
    case.push(L::NAME, Op::EncodeReuse, move || {
        L::encode_reuse(black_box(&*value), black_box(&mut dst))
    });
    let input = Aligned::copy_of(bytes.as_ref());
    case.push(L::NAME, Op::Decode, move || {
        L::decode(black_box(input.as_ref()))
    });
    bytes
}
