//! The server's side of delta snapshots: a short history of the snapshots
//! it sent, and their deltas encoded once per baseline.

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::marker::PhantomData;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::Writer;
use crate::wire::{Lane, varint_len};

use super::super::{
    DATAGRAM_BUDGET, DELTA_HEADER_MAX, DeltaHeader, MAX_CHUNKS, SendError, SnapshotAck,
    put_delta_header,
};
use super::codec::{DeltaEncoder, Layout};
use super::item::{DeltaSnapshot, SnapshotItem, SnapshotKey};
use super::table::Table;

/// Snapshots a server keeps per type by default, and a client keeps whole:
/// 128 ticks, about two seconds at 60 Hz. A client whose newest
/// acknowledged snapshot is older gets keyframes.
pub const DEFAULT_HISTORY: usize = 128;

/// One snapshot type's delta encoder: the snapshots sent (the last
/// `capacity` of them), each a possible baseline, and the snapshot being
/// sent, encoded against any of them. [`ServerCore::send_delta_snapshot`](crate::proto::ServerCore::send_delta_snapshot)
/// keeps one per type; use it directly to encode deltas for a transport
/// of your own, a replay or a measurement:
///
/// ```text
/// history.stage(seq, &snapshot)?;          // the snapshot to send
/// for each distinct baseline b among the clients (history.baseline(ack)):
///     history.encode(b, &mut scratch, &mut datagrams)?;   // once per b
/// history.commit();                        // it becomes a baseline
/// ```
pub struct SnapshotHistory<S> {
    capacity: usize,
    /// Sent snapshots by ascending sequence number.
    ring: VecDeque<(u64, Arc<Table>)>,
    /// The snapshot being sent: its sequence number, items and header bytes.
    current: Option<(u64, Arc<Table>)>,
    header: Vec<u8>,
    lanes: Vec<Lane>,
    empty: Table,
    encoder: DeltaEncoder,
    _snapshot: PhantomData<fn() -> S>,
}

impl<S> core::fmt::Debug for SnapshotHistory<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SnapshotHistory")
            .field("capacity", &self.capacity)
            .field("kept", &self.ring.len())
            .field("staged", &self.current.as_ref().map(|c| c.0))
            .finish_non_exhaustive()
    }
}

impl<S: DeltaSnapshot> SnapshotHistory<S> {
    /// A history keeping the last `capacity` snapshots (at least one).
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        let width = <S::Item as SnapshotItem>::LANES;
        Self {
            capacity: capacity.max(1),
            ring: VecDeque::new(),
            current: None,
            header: Vec::new(),
            lanes: (0..width).map(<S::Item as SnapshotItem>::lane).collect(),
            empty: Table::empty(width),
            encoder: DeltaEncoder::new(),
            _snapshot: PhantomData,
        }
    }

    /// How many snapshots it keeps as baselines.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Takes `snapshot` as sequence number `seq` (above every one before),
    /// to encode against baselines. Items need not be sorted.
    ///
    /// # Errors
    /// [`SendError::DuplicateKey`] if two items share a key.
    pub fn stage(&mut self, seq: u64, snapshot: &S) -> Result<(), SendError> {
        let table = Table::from_items(snapshot.snapshot_items())
            .map_err(|d| SendError::DuplicateKey(d.0))?;
        self.header.clear();
        let len = snapshot.part_len(0..0);
        self.header.resize(len, 0);
        let mut w = Writer::new(&mut self.header);
        snapshot.encode_part(0..0, &mut w);
        self.current = Some((seq, Arc::new(table)));
        Ok(())
    }

    /// The baseline to encode against for a client whose last ack is
    /// `ack`: the newest snapshot it holds that the history still has, or
    /// 0 (a keyframe).
    #[must_use]
    pub fn baseline(&self, ack: Option<SnapshotAck>) -> u64 {
        let Some(ack) = ack else { return 0 };
        let Some(&(oldest, _)) = self.ring.front() else {
            return 0;
        };
        let newest_kept = self.ring.back().map_or(0, |(s, _)| *s);
        let mut seq = ack.newest.min(newest_kept);
        while seq >= oldest && seq > 0 {
            if ack.holds(seq) {
                return seq;
            }
            seq -= 1;
            if ack.newest - seq > 64 {
                break;
            }
        }
        0
    }

    /// Encodes the staged snapshot against `baseline` (0, or one the
    /// history does not have: a keyframe), each chunk a whole delta
    /// datagram (docs/WIRE.md §12.6) appended to `out`, built in `scratch`
    /// (reused). Returns the chunk count (0 if nothing is staged).
    ///
    /// # Errors
    /// [`SendError::TooLarge`] if one item does not fit a datagram or the
    /// delta needs more than [`MAX_CHUNKS`] chunks.
    pub fn encode(
        &mut self,
        baseline: u64,
        scratch: &mut BytesMut,
        out: &mut Vec<Bytes>,
    ) -> Result<usize, SendError> {
        let Some((seq, cur)) = self.current.clone() else {
            return Ok(0);
        };
        let base = match table_in(&self.ring, baseline) {
            Some(base) if baseline > 0 => base,
            _ => &self.empty,
        };
        let baseline = if core::ptr::eq(base, &self.empty) {
            0
        } else {
            baseline
        };
        let id_len = varint_len(u64::from(S::ID));
        let fixed = DELTA_HEADER_MAX + id_len + self.header.len();
        let too_large = SendError::TooLarge {
            size: fixed,
            max: DATAGRAM_BUDGET,
        };
        let budget_bits = DATAGRAM_BUDGET.checked_sub(fixed).ok_or(too_large)? * 8;
        let layout = Layout {
            key_bits: <<S::Item as SnapshotItem>::Key as SnapshotKey>::BITS,
            lanes: &self.lanes,
        };
        let header = &self.header;
        let emit =
            |chunk: u32,
             chunks: u32,
             write: &mut dyn FnMut(&mut crate::wire::bits::BitWriter<'_>)| {
                scratch.clear();
                scratch.resize(DATAGRAM_BUDGET, 0);
                let h = DeltaHeader {
                    seq,
                    baseline,
                    chunk,
                    chunks,
                };
                let mut w = Writer::new(scratch);
                put_delta_header(&mut w, h);
                w.put_varint(u64::from(S::ID));
                w.put_slice(header);
                let at = w.position();
                let tail = scratch.get_mut(at..).unwrap_or_default();
                let mut bits = crate::wire::bits::BitWriter::new(tail);
                write(&mut bits);
                // The plan keeps every chunk within the budget.
                let used = bits.finish().unwrap_or(0);
                debug_assert!(used > 0, "a delta chunk overflowed its datagram");
                scratch.truncate(at + used);
                crate::proto::message::detach(scratch)
            };
        self.encoder
            .encode(
                &layout,
                base,
                &cur,
                budget_bits,
                MAX_CHUNKS as usize,
                emit,
                out,
            )
            .map_err(|_| too_large)
    }

    /// Keeps the staged snapshot as a baseline for the sends that follow.
    pub fn commit(&mut self) {
        if let Some(current) = self.current.take() {
            self.ring.push_back(current);
            while self.ring.len() > self.capacity {
                self.ring.pop_front();
            }
        }
    }
}

/// The snapshot of sequence number `seq` in `ring`.
fn table_in(ring: &VecDeque<(u64, Arc<Table>)>, seq: u64) -> Option<&Table> {
    let &(oldest, _) = ring.front()?;
    let (s, table) = ring.get(usize::try_from(seq.checked_sub(oldest)?).ok()?)?;
    (*s == seq).then_some(&**table)
}

/// Every snapshot type's history, by message id.
#[derive(Default)]
pub(crate) struct Histories {
    by_id: HashMap<u32, Box<dyn Any + Send + Sync>>,
    pub(crate) capacity: Option<usize>,
}

impl core::fmt::Debug for Histories {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Histories")
            .field("types", &self.by_id.len())
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl Histories {
    /// The history of `S`, made on first use (or anew if another type
    /// with the same id used it).
    pub(crate) fn get<S: DeltaSnapshot>(&mut self) -> Option<&mut SnapshotHistory<S>> {
        let capacity = self.capacity.unwrap_or(DEFAULT_HISTORY);
        if !self
            .by_id
            .get(&S::ID)
            .is_some_and(|h| h.is::<SnapshotHistory<S>>())
        {
            self.by_id
                .insert(S::ID, Box::new(SnapshotHistory::<S>::new(capacity)));
        }
        self.by_id
            .get_mut(&S::ID)?
            .downcast_mut::<SnapshotHistory<S>>()
    }
}
