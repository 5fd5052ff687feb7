//! The client's side of delta snapshots: chunks applied to the baselines
//! the client holds, reassembled per snapshot, and the acks that tell the
//! server which baselines it may use.

use core::fmt;
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::wire::Lane;
use crate::{DecodeError, DecodeLimits, Reader};

use super::super::{DeltaHeader, Received, SnapshotAck};
use super::codec::{ChunkRows, Layout, decode_chunk};
use super::history::DEFAULT_HISTORY;
use super::item::{DeltaSnapshot, SnapshotItem, SnapshotKey};
use super::table::Table;

/// One chunk of a delta snapshot, as a client receives it
/// ([`ClientCore::poll_snapshot`](crate::proto::ClientCore::poll_snapshot)): its
/// header and its message (`id + delta body`, which only a
/// [`DeltaReceiver`] of its type decodes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotChunk {
    /// Where it belongs.
    pub header: DeltaHeader,
    /// The message, its id parsed.
    pub message: Received,
}

/// Why a received chunk was not applied. None of these is the client's
/// fault to report to the server: drop the chunk (the next snapshot comes
/// within a tick), and count it if you like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApplyError {
    /// The chunk is another message type's.
    WrongType(u32),
    /// The chunk is encoded against a snapshot this client does not hold
    /// (it never had it whole, or dropped it as too old). Never applied.
    MissingBaseline(u64),
    /// This chunk was applied already.
    Duplicate,
    /// The chunk's snapshot is older than the history kept.
    Stale,
    /// The chunk does not decode, or disagrees with the other chunks of
    /// its snapshot.
    Malformed(DecodeError),
    /// Holding the chunk would take the receiver past its memory limit
    /// ([`DeltaReceiver::with_memory_limit`]) even with every snapshot it
    /// may drop dropped.
    OverMemory,
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::WrongType(id) => write!(f, "a chunk of message id {id}, not this type"),
            Self::MissingBaseline(seq) => write!(f, "baseline {seq} is not held"),
            Self::Duplicate => f.write_str("chunk applied already"),
            Self::Stale => f.write_str("chunk older than the history kept"),
            Self::Malformed(e) => write!(f, "malformed chunk: {e}"),
            Self::OverMemory => f.write_str("over the receiver's memory limit"),
        }
    }
}

impl std::error::Error for ApplyError {}

impl From<DecodeError> for ApplyError {
    fn from(e: DecodeError) -> Self {
        Self::Malformed(e)
    }
}

/// A chunk that was applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Applied {
    /// The snapshot's sequence number.
    pub seq: u64,
    /// Its tick ([`DeltaSnapshot::tick`], or `seq` if the type has none).
    pub tick: u64,
    /// The baseline it was encoded against (0: a keyframe).
    pub baseline: u64,
    /// This chunk's index.
    pub chunk: u32,
    /// The snapshot's chunk count.
    pub chunks: u32,
    /// Chunks of the snapshot applied so far, this one included.
    pub received: u32,
    /// Whether the snapshot is now whole: it is a baseline from now on,
    /// and the next [`DeltaReceiver::ack`] says so.
    pub complete: bool,
}

/// A snapshot as reassembled so far.
#[derive(Clone, Debug, PartialEq)]
pub struct Assembled<S> {
    /// Its sequence number.
    pub seq: u64,
    /// Its tick.
    pub tick: u64,
    /// Chunks applied, of `chunks`.
    pub received: u32,
    /// Its chunk count.
    pub chunks: u32,
    /// The snapshot: the header and the items of the chunks applied, in
    /// key order. Whole when `received == chunks`.
    pub snapshot: S,
}

impl<S> Assembled<S> {
    /// Whether every chunk was applied.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.received == self.chunks
    }
}

/// What a receiver did, since it was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReceiverStats {
    /// Chunks applied.
    pub applied: u64,
    /// Snapshots completed.
    pub completed: u64,
    /// Chunks dropped: baseline not held.
    pub missing_baseline: u64,
    /// Chunks dropped: duplicate or stale.
    pub dropped: u64,
    /// Chunks dropped: malformed.
    pub malformed: u64,
}

/// Sequence numbers a receiver keeps whole snapshots beyond its history.
const SLACK: u64 = 64;

/// The memory a receiver holds at most by default: parts of snapshots
/// being reassembled and whole ones (its baselines), 32 MiB.
pub const DEFAULT_SNAPSHOT_MEMORY: usize = 32 << 20;

/// What a part or whole snapshot is charged beside its rows.
const OVERHEAD: usize = 128;

/// Bytes charged for `rows` rows of `width` lanes.
fn charge(rows: usize, width: usize) -> usize {
    rows.saturating_mul(8 + 4 * width).saturating_add(OVERHEAD)
}

/// A snapshot being reassembled. Its parts are kept as they come: a chunk
/// header claiming thousands of chunks costs nothing until they arrive.
#[derive(Debug)]
struct Assembly {
    baseline: u64,
    chunks: u32,
    received: u32,
    tick: u64,
    header: Arc<[u8]>,
    parts: BTreeMap<u32, ChunkRows>,
    /// Bytes charged for the parts.
    charged: usize,
}

/// A whole snapshot the client holds: a baseline.
#[derive(Debug)]
struct Whole {
    tick: u64,
    chunks: u32,
    header: Arc<[u8]>,
    rows: Arc<Table>,
}

/// Reassembles one snapshot type's delta chunks on a client: applies each
/// to the baseline it names (never to one it does not hold), keeps every
/// whole snapshot of the last [`DEFAULT_HISTORY`] (or
/// [`with_history`](Self::with_history)) sequence numbers as a baseline,
/// and says what it holds in [`ack`](Self::ack), which the client sends
/// ([`ClientCore::send_acks`](crate::proto::ClientCore::send_acks)).
///
/// ```text
/// client.poll_snapshot() ─▶ handle_chunk ─▶ Applied { seq, tick, complete, .. }
///                                                    └─▶ snapshot(seq), latest()
/// once a frame:  client.send_acks(&[receiver.ack()])
/// ```
pub struct DeltaReceiver<S> {
    history: u64,
    lanes: Vec<Lane>,
    key_bits: u32,
    limits: DecodeLimits,
    pending: BTreeMap<u64, Assembly>,
    whole: BTreeMap<u64, Whole>,
    /// Bytes charged for the parts and whole snapshots held, and the most.
    used: usize,
    memory: usize,
    newest: u64,
    empty: Table,
    stats: ReceiverStats,
    _snapshot: PhantomData<fn() -> S>,
}

impl<S> fmt::Debug for DeltaReceiver<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaReceiver")
            .field("history", &self.history)
            .field("pending", &self.pending.len())
            .field("whole", &self.whole.len())
            .field("newest", &self.newest)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl<S: DeltaSnapshot> Default for DeltaReceiver<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: DeltaSnapshot> DeltaReceiver<S> {
    /// A receiver keeping the server's default history.
    #[must_use]
    pub fn new() -> Self {
        Self::with_history(DEFAULT_HISTORY)
    }

    /// A receiver keeping whole snapshots of the last `history` sequence
    /// numbers: at least the server's history
    /// ([`ServerCore::set_snapshot_history`](crate::proto::ServerCore::set_snapshot_history)),
    /// or deltas against older baselines are dropped.
    #[must_use]
    pub fn with_history(history: usize) -> Self {
        let width = <S::Item as SnapshotItem>::LANES;
        Self {
            history: history.max(1) as u64,
            lanes: (0..width).map(<S::Item as SnapshotItem>::lane).collect(),
            key_bits: <<S::Item as SnapshotItem>::Key as SnapshotKey>::BITS,
            limits: DecodeLimits::DEFAULT,
            pending: BTreeMap::new(),
            whole: BTreeMap::new(),
            used: 0,
            memory: DEFAULT_SNAPSHOT_MEMORY,
            newest: 0,
            empty: Table::empty(width),
            stats: ReceiverStats::default(),
            _snapshot: PhantomData,
        }
    }

    /// The same receiver holding at most `bytes` of snapshots (parts being
    /// reassembled and whole ones; [`DEFAULT_SNAPSHOT_MEMORY`] otherwise).
    /// A chunk is charged before it is decoded, for the most it could hold;
    /// past the limit the oldest snapshots go first (parts, then whole ones
    /// but the newest and the chunk's baseline), and a chunk that still does
    /// not fit is refused ([`ApplyError::OverMemory`]). A hostile server
    /// cannot make a client hold more.
    #[must_use]
    pub fn with_memory_limit(mut self, bytes: usize) -> Self {
        self.memory = bytes;
        self
    }

    /// Bytes held now (charged): parts and whole snapshots.
    #[must_use]
    pub fn memory_used(&self) -> usize {
        self.used
    }

    /// Applies one chunk.
    ///
    /// # Errors
    /// [`ApplyError`]: the chunk is dropped and nothing changes.
    pub fn handle_chunk(&mut self, chunk: &SnapshotChunk) -> Result<Applied, ApplyError> {
        self.handle_chunk_into(chunk, None)
    }

    /// Applies one chunk and, if `items` is given, replaces its contents
    /// with the chunk's items (its key range at its snapshot, in key
    /// order): what a [`JitterBuffer`](super::JitterBuffer) takes.
    ///
    /// # Errors
    /// [`ApplyError`]: the chunk is dropped and nothing changes.
    pub fn handle_chunk_into(
        &mut self,
        chunk: &SnapshotChunk,
        items: Option<&mut Vec<S::Item>>,
    ) -> Result<Applied, ApplyError> {
        let result = self.apply(chunk, items);
        match &result {
            Ok(applied) => {
                self.stats.applied += 1;
                self.stats.completed += u64::from(applied.complete);
            }
            Err(ApplyError::MissingBaseline(_)) => self.stats.missing_baseline += 1,
            Err(ApplyError::Malformed(e)) => {
                tracing::debug!("delta chunk dropped: {e}");
                self.stats.malformed += 1;
            }
            Err(_) => self.stats.dropped += 1,
        }
        result
    }

    fn apply(
        &mut self,
        chunk: &SnapshotChunk,
        items: Option<&mut Vec<S::Item>>,
    ) -> Result<Applied, ApplyError> {
        let h = chunk.header;
        if chunk.message.id() != S::ID {
            return Err(ApplyError::WrongType(chunk.message.id()));
        }
        if h.seq.saturating_add(self.history) <= self.newest {
            return Err(ApplyError::Stale);
        }
        if self.whole.contains_key(&h.seq) {
            return Err(ApplyError::Duplicate);
        }
        if let Some(a) = self.pending.get(&h.seq) {
            if a.baseline != h.baseline || a.chunks != h.chunks {
                return Err(ApplyError::Malformed(DecodeError::InvalidValue));
            }
            if a.parts.contains_key(&h.chunk) {
                return Err(ApplyError::Duplicate);
            }
        }
        if h.chunks > super::super::MAX_CHUNKS || h.chunk >= h.chunks {
            return Err(ApplyError::Malformed(DecodeError::OverLimit));
        }
        if h.baseline != 0 && !self.whole.contains_key(&h.baseline) {
            return Err(ApplyError::MissingBaseline(h.baseline));
        }
        // Charged before decoding, for the most the chunk can hold: every
        // row of its baseline and as many added rows as a chunk may have.
        let width = self.lanes.len();
        let base_rows = self.whole.get(&h.baseline).map_or(0, |w| w.rows.len());
        let most = charge(
            base_rows + super::codec::MAX_CHUNK_ROWS.min(self.limits.max_collection),
            width,
        );
        self.make_room(most, h.seq, h.baseline)?;
        let base = if h.baseline == 0 {
            &self.empty
        } else {
            match self.whole.get(&h.baseline) {
                Some(w) => &*w.rows,
                None => return Err(ApplyError::MissingBaseline(h.baseline)),
            }
        };
        // The header: the message with no items, then the bits.
        let body = chunk.message.body();
        let mut r = Reader::with_limits(body, self.limits);
        let header: S = r.decode()?;
        if !header.snapshot_items().is_empty() {
            return Err(ApplyError::Malformed(DecodeError::InvalidValue));
        }
        let header_len = body.len() - r.remaining();
        let header_bytes = body.get(..header_len).unwrap_or_default();
        let layout = Layout {
            key_bits: self.key_bits,
            lanes: &self.lanes,
        };
        let rows = decode_chunk(&layout, base, r.rest(), self.limits.max_collection)?;
        // The first chunk starts at the lowest key, the last has no end.
        let last = h.chunk + 1 == h.chunks;
        if (h.chunk == 0 && rows.lo != 0) || (last != rows.hi.is_none()) {
            return Err(ApplyError::Malformed(DecodeError::InvalidValue));
        }
        if let Some(items) = items {
            rows.rows.to_items(items)?;
        }
        let tick = header.tick().unwrap_or(h.seq);
        let cost = charge(rows.rows.len(), width);
        let assembly = self.pending.entry(h.seq).or_insert_with(|| Assembly {
            baseline: h.baseline,
            chunks: h.chunks,
            received: 0,
            tick,
            header: Arc::from(header_bytes),
            parts: BTreeMap::new(),
            charged: 0,
        });
        if &*assembly.header != header_bytes {
            return Err(ApplyError::Malformed(DecodeError::InvalidValue));
        }
        assembly.parts.insert(h.chunk, rows);
        assembly.charged += cost;
        self.used += cost;
        assembly.received += 1;
        let received = assembly.received;
        let complete = received == h.chunks;
        self.newest = self.newest.max(h.seq);
        if complete {
            self.complete(h.seq)?;
        }
        self.prune();
        Ok(Applied {
            seq: h.seq,
            tick,
            baseline: h.baseline,
            chunk: h.chunk,
            chunks: h.chunks,
            received,
            complete,
        })
    }

    /// Joins a snapshot's chunks, which must tile the key space in order.
    fn complete(&mut self, seq: u64) -> Result<(), ApplyError> {
        let Some(assembly) = self.pending.remove(&seq) else {
            return Ok(());
        };
        self.used = self.used.saturating_sub(assembly.charged);
        if assembly.parts.len() != assembly.chunks as usize {
            return Err(ApplyError::Malformed(DecodeError::UnexpectedEnd));
        }
        let mut rows = Table::empty(self.lanes.len());
        let mut expect = Some(0u64);
        for part in assembly.parts.values() {
            if expect != Some(part.lo) {
                return Err(ApplyError::Malformed(DecodeError::InvalidValue));
            }
            rows.extend(&part.rows);
            expect = part.hi;
        }
        self.used += charge(rows.len(), self.lanes.len());
        self.whole.insert(
            seq,
            Whole {
                tick: assembly.tick,
                chunks: assembly.chunks,
                header: assembly.header,
                rows: Arc::new(rows),
            },
        );
        Ok(())
    }

    /// Forgets what is older than the history. Whole snapshots are kept
    /// [`SLACK`] sequence numbers longer: the server names baselines up to
    /// its history behind the snapshot it sends, and snapshots arrive out
    /// of order, so a chunk may land after a newer one moved the floor.
    fn prune(&mut self) {
        let floor = self.newest.saturating_sub(self.history);
        let width = self.lanes.len();
        let mut freed = 0;
        self.pending.retain(|seq, a| {
            let keep = *seq > floor;
            if !keep {
                freed += a.charged;
            }
            keep
        });
        // Keep the newest whole snapshot whatever its age: the server may
        // still name it.
        let newest_whole = self.whole.keys().next_back().copied();
        let floor = floor.saturating_sub(SLACK);
        self.whole.retain(|seq, w| {
            let keep = *seq > floor || Some(*seq) == newest_whole;
            if !keep {
                freed += charge(w.rows.len(), width);
            }
            keep
        });
        self.used = self.used.saturating_sub(freed);
    }

    /// Makes room for `bytes` more within the memory limit: the oldest
    /// parts of other snapshots go first, then the oldest whole snapshots
    /// but the newest and `baseline`.
    fn make_room(&mut self, bytes: usize, seq: u64, baseline: u64) -> Result<(), ApplyError> {
        let width = self.lanes.len();
        while self.used.saturating_add(bytes) > self.memory {
            let part = self.pending.keys().copied().find(|s| *s != seq);
            if let Some(old) = part.and_then(|s| self.pending.remove(&s)) {
                self.used = self.used.saturating_sub(old.charged);
                continue;
            }
            let newest_whole = self.whole.keys().next_back().copied();
            let whole = self
                .whole
                .keys()
                .copied()
                .find(|s| Some(*s) != newest_whole && *s != baseline);
            if let Some(old) = whole.and_then(|s| self.whole.remove(&s)) {
                self.used = self.used.saturating_sub(charge(old.rows.len(), width));
                continue;
            }
            return Err(ApplyError::OverMemory);
        }
        Ok(())
    }

    /// What this client holds, to send to the server
    /// ([`ClientCore::send_acks`](crate::proto::ClientCore::send_acks)):
    /// the newest whole snapshot and the 64 before it.
    #[must_use]
    pub fn ack(&self) -> SnapshotAck {
        let newest = self.whole.keys().next_back().copied().unwrap_or(0);
        let mut held = 0u64;
        for seq in self
            .whole
            .range(newest.saturating_sub(64)..newest)
            .map(|(s, _)| *s)
        {
            held |= 1 << (newest - seq - 1);
        }
        SnapshotAck {
            id: S::ID,
            newest,
            held,
        }
    }

    /// The newest whole snapshot's sequence number (0: none yet).
    #[must_use]
    pub fn newest_complete(&self) -> u64 {
        self.whole.keys().next_back().copied().unwrap_or(0)
    }

    /// The snapshot of sequence number `seq` as reassembled so far (whole
    /// or in part), if the receiver has any of it.
    ///
    /// # Errors
    /// [`DecodeError`] if an item refuses its lanes (a hand-written
    /// [`SnapshotItem`] stricter than its lanes).
    pub fn snapshot(&self, seq: u64) -> Result<Option<Assembled<S>>, DecodeError> {
        if let Some(whole) = self.whole.get(&seq) {
            let mut snapshot = S::decode(&whole.header)?;
            whole.rows.to_items(snapshot.snapshot_items_mut())?;
            return Ok(Some(Assembled {
                seq,
                tick: whole.tick,
                received: whole.chunks,
                chunks: whole.chunks,
                snapshot,
            }));
        }
        let Some(assembly) = self.pending.get(&seq) else {
            return Ok(None);
        };
        let mut snapshot = S::decode(&assembly.header)?;
        let mut rows = Table::empty(self.lanes.len());
        for part in assembly.parts.values() {
            rows.extend(&part.rows);
        }
        rows.to_items(snapshot.snapshot_items_mut())?;
        Ok(Some(Assembled {
            seq,
            tick: assembly.tick,
            received: assembly.received,
            chunks: assembly.chunks,
            snapshot,
        }))
    }

    /// The newest whole snapshot.
    ///
    /// # Errors
    /// As [`snapshot`](Self::snapshot).
    pub fn latest(&self) -> Result<Option<Assembled<S>>, DecodeError> {
        match self.whole.keys().next_back() {
            Some(&seq) => self.snapshot(seq),
            None => Ok(None),
        }
    }

    /// What the receiver did so far.
    #[must_use]
    pub fn stats(&self) -> ReceiverStats {
        self.stats
    }
}
