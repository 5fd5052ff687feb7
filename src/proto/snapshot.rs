//! Snapshots: split into independently decodable chunks on send, sequenced
//! on receipt so the newest always wins.

use core::ops::Range;
use std::collections::HashMap;

use bytes::{Bytes, BytesMut};

use crate::wire::varint_len;
use crate::{NetMessage, Writer};

use super::{DATAGRAM_BUDGET, SnapshotHeader, snapshot_datagram};

/// Worst-case bytes of a snapshot datagram's header: the kind, a sequence
/// number, a chunk index and a chunk count (docs/WIRE.md §12.6).
pub const SNAPSHOT_HEADER_MAX: usize = 1 + 10 + 5 + 5;

/// A message that can travel on [`Channel::SNAPSHOT`](super::Channel::SNAPSHOT)
/// split into parts: each part holds a range of the snapshot's items and is a
/// whole, valid message of the same type, so losing one datagram loses only
/// its items.
///
/// For `WorldSnapshot { tick, players }`, a part is the tick and a slice of
/// the players.
pub trait Snapshot: NetMessage {
    /// How many items can be split between parts.
    fn items(&self) -> usize;

    /// Encoded length of the part holding `items`.
    fn part_len(&self, items: Range<usize>) -> usize;

    /// Writes the part holding `items`: exactly `part_len(items)` bytes.
    fn encode_part(&self, items: Range<usize>, w: &mut Writer<'_>);
}

/// The item ranges of a snapshot's chunks.
pub type ChunkPlan = Vec<Range<usize>>;

/// Most chunks one snapshot may be split into; a header claiming more is
/// malformed (it bounds the receiver's bookkeeping).
pub const MAX_CHUNKS: u32 = 4096;

/// Splits `snapshot` into as few parts as possible with every part at most
/// `max_part_len` bytes. `None` if one item alone is too large or the
/// snapshot needs more than [`MAX_CHUNKS`] parts.
#[must_use]
pub fn plan_chunks<S: Snapshot>(snapshot: &S, max_part_len: usize) -> Option<ChunkPlan> {
    let items = snapshot.items();
    if snapshot.part_len(0..items) <= max_part_len {
        return Some(core::iter::once(0..items).collect());
    }
    if items == 0 {
        // Not even the empty part fits.
        return None;
    }
    let mut plan = Vec::new();
    let mut start = 0;
    while start < items {
        // Gallop, then bisect, for the largest `end` that fits:
        // `part_len` grows with the range.
        let fits = |end: usize| snapshot.part_len(start..end) <= max_part_len;
        if !fits(start + 1) {
            return None;
        }
        let (mut lo, mut step) = (start + 1, 1);
        while lo + step <= items && fits(lo + step) {
            lo += step;
            step *= 2;
        }
        let mut hi = (lo + step).min(items + 1); // exclusive bound that may not fit
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) { lo = mid } else { hi = mid }
        }
        plan.push(start..lo);
        start = lo;
        if plan.len() > MAX_CHUNKS as usize {
            return None;
        }
    }
    Some(plan)
}

/// Encodes `snapshot` as sequence number `seq`: split into the fewest
/// chunks that each fit [`DATAGRAM_BUDGET`] with their header, each chunk a
/// whole datagram appended to `out`, encoded once for every connection
/// that gets it. `scratch` is reused between calls. Returns the number of
/// chunks, or `None` if one item alone does not fit a datagram (or the
/// snapshot needs more than [`MAX_CHUNKS`]).
pub fn encode_chunks<S: Snapshot>(
    snapshot: &S,
    seq: u64,
    scratch: &mut BytesMut,
    out: &mut Vec<Bytes>,
) -> Option<usize> {
    let id_len = varint_len(u64::from(S::ID));
    let budget = DATAGRAM_BUDGET.saturating_sub(SNAPSHOT_HEADER_MAX + id_len);
    let plan = plan_chunks(snapshot, budget)?;
    let chunks = u32::try_from(plan.len()).ok()?;
    for (i, range) in plan.iter().enumerate() {
        let header = SnapshotHeader {
            seq,
            chunk: i as u32,
            chunks,
        };
        let part_len = snapshot.part_len(range.clone());
        out.push(snapshot_datagram(scratch, header, id_len + part_len, |w| {
            w.put_varint(u64::from(S::ID));
            snapshot.encode_part(range.clone(), w);
        }));
    }
    Some(plan.len())
}

/// What to do with a received snapshot chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotVerdict {
    /// Deliver it: it is newer than anything delivered for its chunk.
    Deliver,
    /// Drop it: a newer snapshot's chunk at the same place was delivered.
    Stale,
    /// Drop it: this chunk was already delivered (a duplicated datagram).
    Duplicate,
}

#[derive(Debug, Default)]
struct Latest {
    /// How many chunks the newest snapshot had.
    chunks: u32,
    /// The newest sequence number seen.
    newest: u64,
    /// The newest sequence number when the chunk count last changed:
    /// nothing at or below it may land under the new count, whose indexes
    /// cover other items.
    floor: u64,
    /// Per chunk index, the sequence number last delivered (0: none).
    delivered: Vec<u64>,
}

/// Sequences received snapshot chunks, per message id and per chunk index:
/// a chunk is delivered once, and only if no newer snapshot's chunk at the
/// same index was delivered before it. A lost chunk never holds back the
/// ones after it, and a late chunk of the previous snapshot still lands if
/// its place has nothing newer (jitter of about a tick would otherwise drop
/// most multi-chunk snapshots). Each chunk carries its own tick: merge by
/// tick per entity. When the number of chunks changes, only a newer
/// snapshot is taken, and the bookkeeping restarts.
#[derive(Debug, Default)]
pub struct SnapshotReceiver {
    latest: HashMap<u32, Latest>,
}

impl SnapshotReceiver {
    /// A receiver that has seen nothing.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Decides on one chunk of message `id`.
    #[must_use = "the verdict says whether to deliver"]
    pub fn handle_chunk(&mut self, id: u32, header: SnapshotHeader) -> SnapshotVerdict {
        if header.chunks > MAX_CHUNKS || header.chunk >= header.chunks {
            return SnapshotVerdict::Duplicate;
        }
        let latest = self.latest.entry(id).or_default();
        if header.chunks != latest.chunks {
            if !latest.delivered.is_empty() && header.seq <= latest.newest {
                return SnapshotVerdict::Stale;
            }
            latest.floor = latest.newest;
            latest.chunks = header.chunks;
            latest.delivered.clear();
            latest.delivered.resize(header.chunks as usize, 0);
        }
        if header.seq <= latest.floor {
            return SnapshotVerdict::Stale;
        }
        let Some(slot) = latest.delivered.get_mut(header.chunk as usize) else {
            return SnapshotVerdict::Duplicate;
        };
        if header.seq > *slot {
            *slot = header.seq;
            latest.newest = latest.newest.max(header.seq);
            SnapshotVerdict::Deliver
        } else if header.seq == *slot {
            SnapshotVerdict::Duplicate
        } else {
            SnapshotVerdict::Stale
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Decode, Encode, Schema};

    /// A tick and items of 10 bytes each.
    #[derive(Encode, Decode, crate::NetMessage)]
    #[zao(id = 9)]
    struct Snap {
        tick: u32,
        items: Vec<[u8; 10]>,
    }

    impl Snapshot for Snap {
        fn items(&self) -> usize {
            self.items.len()
        }
        fn part_len(&self, items: Range<usize>) -> usize {
            4 + crate::varint_len(items.len() as u64) + 10 * items.len()
        }
        fn encode_part(&self, items: Range<usize>, w: &mut Writer<'_>) {
            w.put_u32_le(self.tick);
            w.put_len(items.len());
            for item in self.items.get(items).unwrap_or_default() {
                w.put_slice(item);
            }
        }
    }

    #[test]
    fn plans_cover_every_item_once_within_the_size() {
        let _ = Snap::FINGERPRINT;
        for n in [0usize, 1, 5, 99, 100, 101, 1000] {
            let snap = Snap {
                tick: 1,
                items: vec![[1; 10]; n],
            };
            for max in [15usize, 50, 105, 1200] {
                let plan = plan_chunks(&snap, max).unwrap_or_default();
                assert!(!plan.is_empty() || n == 0);
                let covered: Vec<usize> = plan.iter().flat_map(Clone::clone).collect();
                assert_eq!(covered, (0..n).collect::<Vec<_>>(), "n {n} max {max}");
                for r in &plan {
                    assert!(snap.part_len(r.clone()) <= max);
                }
                // Greedy: every chunk but the last is full.
                for r in plan.iter().rev().skip(1) {
                    assert!(snap.part_len(r.start..r.end + 1) > max);
                }
            }
        }
        assert!(
            plan_chunks(
                &Snap {
                    tick: 1,
                    items: vec![[0; 10]; 3]
                },
                14
            )
            .is_none()
        );
    }

    #[test]
    fn newest_wins_per_chunk_and_chunks_deliver_once() {
        let h = |seq, chunk, chunks| SnapshotHeader { seq, chunk, chunks };
        let mut r = SnapshotReceiver::new();
        assert_eq!(r.handle_chunk(1, h(5, 0, 2)), SnapshotVerdict::Deliver);
        assert_eq!(r.handle_chunk(1, h(5, 0, 2)), SnapshotVerdict::Duplicate);
        assert_eq!(r.handle_chunk(1, h(4, 0, 2)), SnapshotVerdict::Stale);
        // A late chunk of an older snapshot lands where nothing newer has.
        assert_eq!(r.handle_chunk(1, h(4, 1, 2)), SnapshotVerdict::Deliver);
        assert_eq!(r.handle_chunk(1, h(7, 1, 2)), SnapshotVerdict::Deliver);
        assert_eq!(r.handle_chunk(1, h(5, 1, 2)), SnapshotVerdict::Stale);
        assert_eq!(r.handle_chunk(1, h(7, 0, 2)), SnapshotVerdict::Deliver);
        // A new chunk count: only newer snapshots, then per chunk again.
        assert_eq!(r.handle_chunk(1, h(6, 0, 3)), SnapshotVerdict::Stale);
        assert_eq!(r.handle_chunk(1, h(8, 2, 3)), SnapshotVerdict::Deliver);
        assert_eq!(r.handle_chunk(1, h(7, 0, 2)), SnapshotVerdict::Stale);
        assert_eq!(r.handle_chunk(1, h(8, 0, 3)), SnapshotVerdict::Deliver);
        // Another message id has its own sequence.
        assert_eq!(r.handle_chunk(2, h(1, 0, 1)), SnapshotVerdict::Deliver);
        // Nonsense headers are dropped.
        assert_ne!(r.handle_chunk(1, h(9, 3, 2)), SnapshotVerdict::Deliver);
        assert_ne!(
            r.handle_chunk(1, h(9, 0, u32::MAX)),
            SnapshotVerdict::Deliver
        );
    }
}
