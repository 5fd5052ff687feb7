//! Every world the delta encoder accepts, the decoder applies: keyframes
//! and deltas of degenerate worlds made on purpose (everyone on the spawn
//! point with consecutive keys, every lane zero, sparse keys, one row, the
//! most rows a snapshot carries) and of seeded random ones, through the
//! public pieces a server and a client use (`SnapshotHistory`,
//! `DeltaReceiver`).

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use bytes::BytesMut;
use glam::Vec3;
use zao::proto::{
    DeltaReceiver, MAX_CHUNK_ROWS, ParsedDatagram, Received, SnapshotAck, SnapshotChunk,
    SnapshotHistory, split_datagram,
};
use zao_messages::{EntitySnapshot, EntityState};

/// A seeded generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

fn world(tick: u32, entities: Vec<EntityState>) -> EntitySnapshot {
    EntitySnapshot { tick, entities }
}

/// Everyone at one point, keys `start..start + n`.
fn spawn_point(n: u32, start: u32, at: Vec3) -> Vec<EntityState> {
    (0..n)
        .map(|i| EntityState::new(start.checked_add(i).unwrap(), at, 0.0))
        .collect()
}

/// The degenerate worlds and some random ones.
fn worlds() -> Vec<(String, Vec<EntityState>)> {
    let rows = MAX_CHUNK_ROWS as u32;
    let mut out = vec![
        ("empty".to_owned(), Vec::new()),
        ("one row".to_owned(), spawn_point(1, 0, Vec3::ZERO)),
        (
            "one row, the largest key".to_owned(),
            spawn_point(1, u32::MAX, Vec3::ZERO),
        ),
        (
            "one row at the range's corner".to_owned(),
            spawn_point(1, 7, Vec3::splat(-4096.0)),
        ),
    ];
    for n in [2, 100, rows - 1, rows, rows + 1, 3 * rows + 5, 20_000] {
        out.push((
            format!("{n} on the spawn point"),
            spawn_point(n, 0, Vec3::new(12.0, 0.0, -3.5)),
        ));
        out.push((
            format!("{n} with every lane zero"),
            spawn_point(n, 1000, Vec3::splat(-4096.0)),
        ));
    }
    // Consecutive keys ending at the top of the key space.
    out.push((
        "keys up to u32::MAX".to_owned(),
        spawn_point(rows + 10, u32::MAX - rows - 9, Vec3::ZERO),
    ));
    let mut rng = Rng(7);
    // Sparse keys, one point; then sparse keys, random places.
    let sparse: Vec<u32> = {
        let mut keys: Vec<u32> = (0..5000).map(|_| rng.next() as u32).collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    };
    out.push((
        "sparse keys at one point".to_owned(),
        sparse
            .iter()
            .map(|&e| EntityState::new(e, Vec3::ONE, 1.0))
            .collect(),
    ));
    for round in 0..4 {
        let n = 1 + (rng.next() % 6000) as u32;
        let entities = (0..n)
            .map(|e| {
                let at = Vec3::new(rng.unit(), rng.unit(), rng.unit()) * 8000.0 - 4000.0;
                EntityState::new(e * (1 + round), at, rng.unit() * 6.0)
            })
            .collect();
        out.push((format!("random {round} ({n} rows)"), entities));
    }
    out
}

/// Encodes `cur` (as `seq`) against `baseline` and applies every chunk to
/// `receiver`; the receiver must then hold `cur` whole, item for item.
fn send_and_apply(
    history: &mut SnapshotHistory<EntitySnapshot>,
    receiver: &mut DeltaReceiver<EntitySnapshot>,
    seq: u64,
    baseline: u64,
    cur: &EntitySnapshot,
    name: &str,
) {
    history.stage(seq, cur).unwrap();
    let mut datagrams = Vec::new();
    history
        .encode(baseline, &mut BytesMut::new(), &mut datagrams)
        .unwrap_or_else(|e| panic!("{name}: the encoder refused: {e}"));
    history.commit();
    for datagram in &datagrams {
        let Ok(ParsedDatagram::Delta(header, message)) = split_datagram(datagram) else {
            panic!("{name}: not a delta datagram");
        };
        let chunk = SnapshotChunk {
            header,
            message: Received::parse(message).unwrap(),
        };
        receiver
            .handle_chunk(&chunk)
            .unwrap_or_else(|e| panic!("{name}: chunk {} of {}: {e}", header.chunk, header.chunks));
    }
    let got = receiver.snapshot(seq).unwrap().unwrap();
    assert!(got.is_complete(), "{name}");
    let mut want = cur.entities.clone();
    want.sort_by_key(|e| e.entity);
    assert_eq!(got.snapshot.entities, want, "{name}");
    assert_eq!(got.snapshot.tick, cur.tick, "{name}");
}

#[test]
fn every_world_the_encoder_accepts_the_decoder_applies() {
    for (name, entities) in worlds() {
        let mut history = SnapshotHistory::<EntitySnapshot>::new(8);
        let mut receiver = DeltaReceiver::<EntitySnapshot>::new();
        // A keyframe of the world.
        let first = world(1, entities.clone());
        send_and_apply(
            &mut history,
            &mut receiver,
            1,
            0,
            &first,
            &format!("{name}, keyframe"),
        );
        // A delta against it: half the rows move, one in ten leaves, and
        // as many join at the spawn point with consecutive keys after the
        // last one.
        let mut next = entities.clone();
        for (i, e) in next.iter_mut().enumerate() {
            if i % 2 == 0 {
                *e = EntityState::new(e.entity, Vec3::new(1.0, 2.0, 3.0), 0.5);
            }
        }
        let leaving: Vec<u32> = next.iter().step_by(10).map(|e| e.entity).collect();
        next.retain(|e| !leaving.contains(&e.entity));
        let top = next.iter().map(|e| e.entity).max().unwrap_or(0);
        let room = u32::MAX - top;
        next.extend(spawn_point(
            room.min(leaving.len() as u32),
            top.saturating_add(1),
            Vec3::ZERO,
        ));
        let second = world(2, next);
        let ack = SnapshotAck {
            id: 6,
            newest: 1,
            held: 0,
        };
        let baseline = history.baseline(Some(ack));
        assert_eq!(baseline, 1, "{name}");
        send_and_apply(
            &mut history,
            &mut receiver,
            2,
            1,
            &second,
            &format!("{name}, delta"),
        );
        // And the same world again: every row unchanged.
        let third = world(3, second.entities.clone());
        send_and_apply(
            &mut history,
            &mut receiver,
            3,
            2,
            &third,
            &format!("{name}, unchanged"),
        );
    }
}

#[test]
fn thousands_on_the_spawn_point_fit_few_chunks_and_apply() {
    // The case that was refused by every client: rows that cost no bits.
    let n = 5 * MAX_CHUNK_ROWS as u32;
    let cur = world(9, spawn_point(n, 0, Vec3::ZERO));
    let mut history = SnapshotHistory::<EntitySnapshot>::new(4);
    history.stage(1, &cur).unwrap();
    let mut datagrams = Vec::new();
    history
        .encode(0, &mut BytesMut::new(), &mut datagrams)
        .unwrap();
    // Cut by the row bound, not by bits: a few chunks, each small.
    assert_eq!(datagrams.len(), 5);
    assert!(
        datagrams.iter().all(|d| d.len() < 200),
        "{:?}",
        datagrams.iter().map(|d| d.len()).collect::<Vec<_>>()
    );
    let mut receiver = DeltaReceiver::<EntitySnapshot>::new();
    let mut history = SnapshotHistory::<EntitySnapshot>::new(4);
    send_and_apply(&mut history, &mut receiver, 1, 0, &cur, "spawn point");
}

/// An item keyed by a whole `u64`: the last key, `u64::MAX`, is a key like
/// any other (the encoder once overflowed past it, the decoder refused it).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, zao::Encode, zao::Decode, zao::SnapshotItem,
)]
struct Wide {
    #[zao(key)]
    id: u64,
    hp: u16,
}

#[derive(
    Clone, Debug, Default, PartialEq, Eq, zao::Encode, zao::Decode, zao::NetMessage, zao::Snapshot,
)]
#[zao(id = 9)]
struct WideSnapshot {
    #[zao(tick)]
    tick: u32,
    #[zao(items)]
    items: Vec<Wide>,
}

#[test]
fn the_largest_u64_key_is_encoded_and_applied() {
    let wide = |id, hp| Wide { id, hp };
    let worlds = [
        vec![wide(u64::MAX, 1)],
        vec![wide(0, 1), wide(u64::MAX, 2)],
        vec![wide(0, 1), wide(u64::MAX - 1, 5), wide(u64::MAX, 3)],
        vec![wide(u64::MAX - 1, 5), wide(u64::MAX, 4)],
        vec![wide(7, 9)],
        vec![wide(7, 9), wide(u64::MAX, 0)],
    ];
    let mut history = SnapshotHistory::<WideSnapshot>::new(8);
    let mut receiver = DeltaReceiver::<WideSnapshot>::new();
    for (i, items) in worlds.iter().enumerate() {
        let seq = i as u64 + 1;
        let cur = WideSnapshot {
            tick: seq as u32,
            items: items.clone(),
        };
        history.stage(seq, &cur).unwrap();
        let mut datagrams = Vec::new();
        // A keyframe first, then each a delta against the one before.
        history
            .encode(seq - 1, &mut BytesMut::new(), &mut datagrams)
            .unwrap_or_else(|e| panic!("world {i}: the encoder refused: {e}"));
        history.commit();
        for datagram in &datagrams {
            let Ok(ParsedDatagram::Delta(header, message)) = split_datagram(datagram) else {
                panic!("world {i}: not a delta datagram");
            };
            let chunk = SnapshotChunk {
                header,
                message: Received::parse(message).unwrap(),
            };
            receiver
                .handle_chunk(&chunk)
                .unwrap_or_else(|e| panic!("world {i}: {e}"));
        }
        let got = receiver.snapshot(seq).unwrap().unwrap();
        assert!(got.is_complete(), "world {i}");
        assert_eq!(got.snapshot, cur, "world {i}");
    }
}
