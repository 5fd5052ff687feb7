//! A hostile server against a client's delta snapshots
//! (`../shared/TEST-MATRIX.md` H1–H3), through the public API: chunks made
//! by hand or by the real encoder with their headers changed, fed to a
//! `DeltaReceiver` and a `JitterBuffer`, memory measured by a counting
//! allocator (this binary only).

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use glam::Vec3;
use zao::proto::{
    ApplyError, DeltaHeader, DeltaReceiver, JitterBuffer, JitterConfig, MAX_CHUNK_ROWS,
    ParsedDatagram, Received, SnapshotChunk, SnapshotHistory, SnapshotItem, split_datagram,
};
use zao::wire::bits::BitWriter;
use zao::{DecodeError, Encode, NetMessage};
use zao_messages::{EntitySnapshot, EntityState};

/// Live heap bytes, on this thread, that `f` leaves allocated.
fn live_after(f: impl FnOnce()) -> i64 {
    allocation_counter::measure(f).bytes_current
}

/// The chunks of `snapshot` encoded as a keyframe, parsed.
fn keyframe_chunks(snapshot: &EntitySnapshot) -> Vec<SnapshotChunk> {
    let mut history = SnapshotHistory::<EntitySnapshot>::new(2);
    history.stage(1, snapshot).unwrap();
    let mut datagrams = Vec::new();
    history
        .encode(0, &mut BytesMut::new(), &mut datagrams)
        .unwrap();
    datagrams
        .iter()
        .map(|d| match split_datagram(d) {
            Ok(ParsedDatagram::Delta(header, message)) => SnapshotChunk {
                header,
                message: Received::parse(message).unwrap(),
            },
            _ => panic!("not a delta datagram"),
        })
        .collect()
}

/// A hand-made keyframe chunk of `EntitySnapshot` that adds `rows` rows
/// costing no bit each (consecutive keys, every lane its frame's base).
fn zero_bit_rows(rows: u64) -> Bytes {
    let mut message = vec![EntitySnapshot::ID as u8];
    message.extend_from_slice(
        &EntitySnapshot {
            tick: 1,
            entities: Vec::new(),
        }
        .to_encoded_vec(),
    );
    let mut bits = vec![0u8; 64];
    let mut w = BitWriter::new(&mut bits);
    w.put_bits(0, 32); // lo
    w.put_bool(true); // the last chunk
    w.put_gamma(0); // nothing removed (nothing kept: a keyframe)
    w.put_gamma(rows); // added
    // The gaps' code: no zero flag, no escape, width 0: a gap of 0 costs
    // nothing.
    w.put_bool(false);
    w.put_bool(false);
    w.put_bits(0, 6);
    for lane in 0..<EntityState as SnapshotItem>::LANES {
        w.put_bits(0, <EntityState as SnapshotItem>::lane(lane).width());
        w.put_bits(0, 6);
    }
    let n = w.finish().unwrap();
    message.extend_from_slice(&bits[..n]);
    Bytes::from(message)
}

#[test]
fn h1_chunk_headers_claiming_4096_chunks_for_128_snapshots_stay_within_the_limit() {
    // A real chunk with a key range (the first of five), made to claim
    // 4096 chunks, for 128 different sequence numbers.
    let n = 5 * MAX_CHUNK_ROWS as u32;
    let world = EntitySnapshot {
        tick: 1,
        entities: (0..n)
            .map(|e| EntityState::new(e, Vec3::ZERO, 0.0))
            .collect(),
    };
    let first = keyframe_chunks(&world).remove(0);
    assert!(first.header.chunks > 1);
    let limit = 1 << 20;
    let mut receiver = DeltaReceiver::<EntitySnapshot>::new().with_memory_limit(limit);
    let grew = live_after(|| {
        for seq in 1..=128 {
            let chunk = SnapshotChunk {
                header: DeltaHeader {
                    seq,
                    baseline: 0,
                    chunk: 0,
                    chunks: 4096,
                },
                message: first.message.clone(),
            };
            let _ = receiver.handle_chunk(&chunk);
            assert!(
                receiver.memory_used() <= limit,
                "{} bytes held at seq {seq}",
                receiver.memory_used()
            );
        }
        std::mem::forget(receiver);
    });
    // Charged bytes are the rows; the heap adds the maps' nodes. Before,
    // each claim allocated 4096 empty parts: 40 MB for these 128.
    assert!(grew < 2 * limit as i64, "the receiver grew {grew} bytes");
    // Under the default limit the same stays far below it too.
    let mut receiver = DeltaReceiver::<EntitySnapshot>::new();
    for seq in 1..=128 {
        let chunk = SnapshotChunk {
            header: DeltaHeader {
                seq,
                baseline: 0,
                chunk: 0,
                chunks: 4096,
            },
            message: first.message.clone(),
        };
        receiver.handle_chunk(&chunk).unwrap();
    }
    assert!(receiver.memory_used() <= zao::proto::DEFAULT_SNAPSHOT_MEMORY);
}

#[test]
fn h2_a_chunk_adding_a_row_per_bit_is_bounded() {
    let header = DeltaHeader {
        seq: 1,
        baseline: 0,
        chunk: 0,
        chunks: 1,
    };
    let chunk = |rows| SnapshotChunk {
        header,
        message: Received::parse(zero_bit_rows(rows)).unwrap(),
    };
    // A few bytes claiming a hundred thousand rows: refused before any is
    // made.
    let mut receiver = DeltaReceiver::<EntitySnapshot>::new();
    let mut result = None;
    let grew = live_after(|| result = Some(receiver.handle_chunk(&chunk(100_000))));
    assert_eq!(
        result.unwrap(),
        Err(ApplyError::Malformed(DecodeError::OverLimit))
    );
    assert!(grew < 64 * 1024, "{grew} bytes for a refused chunk");
    // At the bound, it applies: 4096 rows from a few bytes, no more.
    let applied = receiver
        .handle_chunk(&chunk(MAX_CHUNK_ROWS as u64))
        .unwrap();
    assert!(applied.complete);
    let whole = receiver.snapshot(1).unwrap().unwrap();
    assert_eq!(whole.snapshot.entities.len(), MAX_CHUNK_ROWS);
    // And a receiver with little memory refuses it, whole.
    let mut small = DeltaReceiver::<EntitySnapshot>::new().with_memory_limit(16 * 1024);
    assert_eq!(
        small.handle_chunk(&chunk(MAX_CHUNK_ROWS as u64)),
        Err(ApplyError::OverMemory)
    );
    assert!(small.memory_used() <= 16 * 1024);
}

#[test]
fn h3_a_tick_far_in_the_future_or_past_is_refused_and_the_buffer_stays_bounded() {
    let config = JitterConfig::from_hz(60.0);
    let mut buffer = JitterBuffer::<EntityState>::new(config);
    let start = Instant::now();
    let dt = Duration::from_secs(1) / 60;
    let item = |e| vec![EntityState::new(e, Vec3::ZERO, 0.0)];
    for tick in 1..=60u64 {
        buffer.insert(start + dt * tick as u32, tick, 1, item(1));
    }
    let delay_before = buffer.delay();
    // A chunk from the far future, and one from long ago.
    let at = start + dt * 61;
    assert!(!buffer.insert(at, u64::MAX / 2, 1, item(2)));
    assert!(!buffer.insert(at, u64::MAX, 1, item(2)));
    assert!(!buffer.insert(at, 1_000_000, 1, item(2)));
    assert_eq!(buffer.stats().ticks_refused, 3);
    // The render delay did not move, and time keeps rendering.
    assert_eq!(buffer.delay(), delay_before);
    for tick in 61..=600u64 {
        buffer.insert(start + dt * tick as u32, tick, 1, item(1));
        // Bounded: never more than the window of ticks.
        assert!(buffer.len() <= 256);
    }
    let sample = buffer.sample(start + dt * 600);
    assert!(sample.from.is_some() || sample.to.is_some());
    assert!(buffer.latency() < Duration::from_secs(1));
    // A restarted server's clock: after a run of refusals the buffer
    // starts over from it, and renders again.
    for k in 0..40u64 {
        buffer.insert(start + dt * (601 + k) as u32, 5_000_000 + k, 1, item(3));
    }
    assert!(!buffer.is_empty());
    let sample = buffer.sample(start + dt * 700);
    assert!(sample.from.is_some() || sample.to.is_some());
    // A server racing ahead of real time (every tick at one instant):
    // render time never passes them, and still the buffer holds at most
    // its window.
    let frozen = start + dt * 800;
    for tick in 5_000_100..5_002_000u64 {
        buffer.insert(frozen, tick, 1, item(4));
        assert!(buffer.len() <= 256, "{} ticks held", buffer.len());
    }
    // A server whose ticks swing by seconds (within the plausible span):
    // the delay grows to cover the swing, render time falls seconds
    // behind, and still the buffer holds at most its window.
    let mut fresh = JitterBuffer::<EntityState>::new(JitterConfig::from_hz(60.0));
    for k in 0..2_000u64 {
        let tick = 1_000 + k + if k % 2 == 1 { 590 } else { 0 };
        fresh.insert(start + dt * k as u32, tick, 1, item(5));
        assert!(fresh.len() <= 256, "{} ticks held at {k}", fresh.len());
    }
    // A delay built from anything never panics.
    let _ = buffer.delay();
    let _ = buffer.latency();
}
