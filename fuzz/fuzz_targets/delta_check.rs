//! The checks of the `delta_snapshots` fuzz target, shared with
//! `tests/fuzz_delta.rs` (which replays `fuzz/seeds/delta/` in `cargo
//! test`).
//!
//! The first byte chooses:
//! - **even: quantized values.** The rest decoded as `EntitySnapshot`
//!   (quantized positions and headings) and as bare `QF32`, `QVec3`,
//!   `QAngle` and `QQuat` values: never a panic, and canonical (a value that
//!   decodes re-encodes to exactly the input, `encoded_len` included).
//! - **odd: a client's `DeltaReceiver`** fed datagrams: the rest is a run of
//!   `len:u8 bytes`, each a datagram as it arrives. `ff a b` stands for the
//!   genuine delta datagram of snapshot `a % 4 + 1` against baseline
//!   `b % seq` (0: the keyframe), chunk `c` (the byte after), from a real
//!   server history, so the fuzzer mixes real chunks with mutated and
//!   arbitrary ones. Never a panic; a chunk the receiver applies never
//!   breaks a snapshot it already completed; and every snapshot completed
//!   from genuine chunks only is exactly the server's.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use bytes::{Bytes, BytesMut};
use glam::Vec3;
use zao::proto::{
    DeltaReceiver, ParsedDatagram, Received, SnapshotChunk, SnapshotHistory, split_datagram,
};
use zao::wire::{QAngle, QF32, QQuat, QVec3};
use zao::{Decode, Encode};
use zao_messages::{EntitySnapshot, EntityState};

/// Snapshots in the server's history.
pub(crate) const SEQS: u64 = 4;

/// The whole check; returns the snapshots the receiver completed from
/// genuine chunks only (each checked equal to the server's).
pub(crate) fn check(data: &[u8]) -> usize {
    let Some((&mode, rest)) = data.split_first() else {
        return 0;
    };
    if mode % 2 == 0 {
        quantized(rest);
        0
    } else {
        receiver(rest)
    }
}

/// Decodes as `T`; if that works, the encoding must be the input.
fn canonical<T>(data: &[u8])
where
    T: for<'de> Decode<'de> + Encode + core::fmt::Debug,
{
    if let Ok(value) = T::decode(data) {
        assert_eq!(value.encoded_len(), data.len(), "encoded_len of {value:?}");
        let mut out = vec![0; data.len()];
        assert_eq!(value.encode(&mut out), Ok(data.len()), "{value:?}");
        assert_eq!(out, data, "re-encoding of {value:?}");
    }
}

fn quantized(data: &[u8]) {
    canonical::<EntitySnapshot>(data);
    canonical::<QF32<-8000, 8000, 1000>>(data);
    canonical::<QF32<0, 1, 255>>(data);
    canonical::<QVec3<-4096, 4096, 1000>>(data);
    canonical::<QAngle<12>>(data);
    canonical::<QAngle<7>>(data);
    canonical::<QQuat<9>>(data);
    canonical::<QQuat<15>>(data);
    canonical::<Vec<QVec3<-4096, 4096, 1000>>>(data);
}

/// The server's world at snapshot `seq`: entities moving, one leaving
/// and one joining each tick, so deltas carry changes, removals and
/// additions.
pub(crate) fn world(seq: u64) -> EntitySnapshot {
    let entities = (seq as u32..seq as u32 + 24)
        .map(|e| {
            let t = seq as f32;
            let p = Vec3::new(e as f32 * 3.0 + t * 0.5, -(e as f32) + t * 0.25, 0.125 * t);
            EntityState::new(e, p, e as f32 * 0.1 + t * 0.05)
        })
        .collect();
    EntitySnapshot {
        tick: 100 + seq as u32,
        entities,
    }
}

/// Every genuine delta datagram: by (seq, baseline), its chunks. Built
/// once: the same for every input.
pub(crate) fn genuine() -> &'static BTreeMap<(u64, u64), Vec<Bytes>> {
    static GENUINE: OnceLock<BTreeMap<(u64, u64), Vec<Bytes>>> = OnceLock::new();
    GENUINE.get_or_init(build_genuine)
}

fn build_genuine() -> BTreeMap<(u64, u64), Vec<Bytes>> {
    let mut history = SnapshotHistory::<EntitySnapshot>::new(8);
    let mut scratch = BytesMut::with_capacity(2048);
    let mut all = BTreeMap::new();
    for seq in 1..=SEQS {
        history.stage(seq, &world(seq)).expect("distinct keys");
        for baseline in 0..seq {
            let mut chunks = Vec::new();
            history
                .encode(baseline, &mut scratch, &mut chunks)
                .expect("a small world encodes");
            all.insert((seq, baseline), chunks);
        }
        history.commit();
    }
    all
}

fn receiver(mut data: &[u8]) -> usize {
    let genuine = genuine();
    let mut rx = DeltaReceiver::<EntitySnapshot>::new();
    // Seqs whose every applied chunk was genuine.
    let mut clean: BTreeMap<u64, bool> = BTreeMap::new();
    let mut completed: BTreeMap<u64, EntitySnapshot> = BTreeMap::new();
    let mut rebuilt = 0;
    while let Some((&len, rest)) = data.split_first() {
        let len = usize::from(len).min(rest.len());
        let (bytes, tail) = rest.split_at(len);
        data = tail;
        let (datagram, real) = match bytes {
            [0xff, a, b, c, ..] => {
                let seq = u64::from(*a) % SEQS + 1;
                let baseline = u64::from(*b) % seq;
                let chunks = &genuine[&(seq, baseline)];
                (chunks[usize::from(*c) % chunks.len()].clone(), true)
            }
            _ => (Bytes::copy_from_slice(bytes), false),
        };
        let Ok(ParsedDatagram::Delta(header, message)) = split_datagram(&datagram) else {
            continue;
        };
        let Ok(message) = Received::parse(message) else {
            continue;
        };
        let chunk = SnapshotChunk { header, message };
        let _ = rx.ack();
        // A refused chunk is dropped: every refusal is the receiver's to make.
        if let Ok(applied) = rx.handle_chunk(&chunk) {
            let clean = clean.entry(applied.seq).or_insert(true);
            *clean &= real;
            if applied.complete {
                let got = rx
                    .snapshot(applied.seq)
                    .expect("a completed snapshot decodes")
                    .expect("a completed snapshot is held");
                assert!(
                    got.is_complete(),
                    "seq {} completed, not whole",
                    applied.seq
                );
                if *clean && applied.seq <= SEQS {
                    let mut want = world(applied.seq);
                    want.entities.sort_by_key(|e| e.entity);
                    assert_eq!(got.snapshot, want, "seq {} rebuilt", applied.seq);
                    rebuilt += 1;
                }
                completed.insert(applied.seq, got.snapshot);
            }
        }
        // What was completed stays as it was.
        for (seq, snapshot) in &completed {
            if let Ok(Some(now)) = rx.snapshot(*seq) {
                assert_eq!(&now.snapshot, snapshot, "completed seq {seq} changed");
            }
        }
    }
    rebuilt
}
