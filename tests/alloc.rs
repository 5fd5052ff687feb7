//! Allocation claims, proven with a counting global allocator in a test
//! binary of its own (flatbuffers' alloc check):
//! - encoding into a caller's buffer allocates nothing;
//! - `decode_in_place` into a warmed value allocates nothing;
//! - hostile length claims fail before anything is allocated;
//! - elsewhere, what a decode allocates stays within `DecodeLimits`.
//!
//! The counters are per thread, so tests running in parallel do not see each
//! other's allocations. The allocator comes from the allocation-counter crate,
//! linked into this test binary only.

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::collections::HashMap;

use common::{Rng, varint};
use zao::{Decode, DecodeLimits, Encode, encode_message};
use zao_messages::{
    GameMessage, Inventory, PlayerInput, PlayerMoved, SpawnEntity, SpawnEntityRef, WorldSnapshot,
    samples,
};

/// Runs `f` and returns its result with (allocations, bytes allocated) on
/// this thread. allocation-counter installs the counting global allocator
/// (it needs `unsafe`, which our crates forbid).
fn counted<R>(f: impl FnOnce() -> R) -> (R, usize, usize) {
    let mut result = None;
    let info = allocation_counter::measure(|| result = Some(f()));
    let result = result.expect("measured closure ran");
    (result, info.count_total as usize, info.bytes_total as usize)
}

fn assert_no_alloc<R>(what: &str, f: impl FnOnce() -> R) -> R {
    let (result, allocs, bytes) = counted(f);
    assert_eq!(allocs, 0, "{what}: {allocs} allocations ({bytes} bytes)");
    result
}

#[test]
fn the_counter_counts() {
    let (v, allocs, bytes) = counted(|| vec![0u8; 100]);
    assert_eq!((allocs, bytes), (1, 100));
    drop(v);
}

#[test]
fn player_moved_encodes_into_a_16_byte_array_without_allocating() {
    let msg = samples::player_moved();
    let mut buf = [0u8; 16];
    let n = assert_no_alloc("PlayerMoved encode", || msg.encode(&mut buf));
    assert_eq!(n, Ok(16));
    assert_eq!(buf[..4], 7u32.to_le_bytes());
    let back = assert_no_alloc("PlayerMoved decode", || PlayerMoved::decode(&buf));
    assert_eq!(back, Ok(msg));
}

#[test]
fn world_snapshot_of_1024_players_encodes_into_exactly_16390_bytes_without_allocating() {
    let msg = samples::world_snapshot(1024);
    let mut buf = vec![0u8; 16_390];
    let n = assert_no_alloc("WorldSnapshot(1024) encode", || msg.encode(&mut buf));
    assert_eq!(n, Ok(16_390));
    assert_eq!(msg.encoded_len(), 16_390);
    assert_eq!(WorldSnapshot::decode(&buf), Ok(msg));
}

#[test]
fn every_reference_message_encodes_into_a_caller_buffer_without_allocating() {
    let mut buf = vec![0u8; 64 * 1024];
    let moved = samples::player_moved();
    let input = samples::player_input();
    let spawn = samples::spawn_entity();
    let snapshot = samples::world_snapshot(1024);
    let inventory = samples::inventory(128);
    assert_no_alloc("encode", || {
        moved.encode(&mut buf).unwrap();
        input.encode(&mut buf).unwrap();
        spawn.encode(&mut buf).unwrap();
        snapshot.encode(&mut buf).unwrap();
        inventory.encode(&mut buf).unwrap();
        encode_message(&spawn, &mut buf).unwrap();
        encode_message(&inventory, &mut buf).unwrap();
        // Several into one buffer through a writer.
        let mut w = zao::Writer::new(&mut buf);
        w.encode(&moved).unwrap();
        w.encode(&snapshot).unwrap();
    });
    // A warmed Vec and BytesMut are reused, not regrown.
    let mut vec = Vec::with_capacity(32 * 1024);
    let mut bytes = bytes::BytesMut::with_capacity(32 * 1024);
    assert_no_alloc("encode_to_vec / encode_to_bytes", || {
        for _ in 0..10 {
            vec.clear();
            snapshot.encode_to_vec(&mut vec);
            bytes.clear();
            snapshot.encode_to_bytes(&mut bytes);
        }
    });
    // Too small a buffer: an error, still no allocation.
    assert_no_alloc("C15", || {
        assert!(snapshot.encode(&mut buf[..100]).is_err());
        assert!(spawn.encode(&mut buf[..spawn.encoded_len() - 1]).is_err());
    });
}

#[test]
fn decode_in_place_into_a_warmed_value_allocates_nothing() {
    let mut rng = Rng::new(7);
    // Warm each target with a value at least as large as what follows.
    let mut snapshot = samples::world_snapshot(1024);
    let mut spawn = samples::spawn_entity();
    spawn.name = String::with_capacity(300 * 4); // the longest random name
    let mut inventory = samples::inventory(256);
    let mut input = samples::player_input();
    for _ in 0..50 {
        let s = rng.world_snapshot(true).to_vec();
        let e = rng.spawn_entity(true).to_vec();
        let i = rng.inventory().to_vec();
        let p = rng.player_input(true).to_vec();
        assert_no_alloc("decode_in_place", || {
            snapshot.decode_in_place(&s).unwrap();
            spawn.decode_in_place(&e).unwrap();
            inventory.decode_in_place(&i).unwrap();
            input.decode_in_place(&p).unwrap();
        });
        assert_eq!(snapshot, WorldSnapshot::decode(&s).unwrap());
        assert_eq!(spawn, SpawnEntity::decode(&e).unwrap());
        assert_eq!(inventory, Inventory::decode(&i).unwrap());
        assert_eq!(input, PlayerInput::decode(&p).unwrap());
    }
    // Borrowed decode never allocates.
    let bytes = samples::spawn_entity().to_vec();
    let borrowed = assert_no_alloc("SpawnEntityRef", || SpawnEntityRef::decode(&bytes).unwrap());
    assert_eq!(borrowed.name, "Goblin");
}

#[test]
fn hostile_length_claims_allocate_nothing_before_the_error() {
    let unlimited = DecodeLimits::DANGEROUS_UNLIMITED;
    for claim in [1u64 << 32, u64::from(u32::MAX), u64::MAX, 1000, 60_000] {
        let mut bytes = varint(claim);
        bytes.push(b'x'); // C3: one byte follows
        let mut snapshot = vec![1, 0, 0, 0];
        snapshot.extend_from_slice(&bytes);
        let mut spawn = samples::spawn_entity().to_vec();
        spawn.truncate(34);
        spawn.extend_from_slice(&bytes);
        assert_no_alloc("claims", || {
            assert!(String::decode(&bytes).is_err());
            assert!(String::decode_with_limits(&bytes, unlimited).is_err());
            assert!(Vec::<u64>::decode(&bytes).is_err());
            assert!(Vec::<u64>::decode_with_limits(&bytes, unlimited).is_err());
            assert!(Vec::<Vec<u8>>::decode_with_limits(&bytes, unlimited).is_err());
            assert!(HashMap::<u32, u32>::decode(&bytes).is_err());
            assert!(WorldSnapshot::decode(&snapshot).is_err());
            assert!(WorldSnapshot::decode_with_limits(&snapshot, unlimited).is_err());
            assert!(Inventory::decode(&snapshot).is_err());
            assert!(SpawnEntity::decode(&spawn).is_err());
            assert!(GameMessage::decode(&snapshot).is_err());
        });
    }
    // C5: amplification is refused before the big allocation.
    let mut nones = varint(60_000);
    nones.extend(std::iter::repeat_n(0u8, 60_000));
    assert_no_alloc("C5", || {
        assert!(Vec::<Option<[u64; 128]>>::decode(&nones).is_err());
    });
}

/// Whatever a decode of hostile bytes allocates stays under the budget.
#[test]
fn random_input_allocation_stays_within_the_budget() {
    let limits = DecodeLimits::DEFAULT;
    let mut rng = Rng::new(99);
    let mut worst = 0;
    for _ in 0..2_000 {
        let len = rng.below(4096);
        let mut bytes = rng.bytes(len);
        if !bytes.is_empty() {
            bytes[0] = 1 + rng.u8() % 5; // a known message id
        }
        let (_, _, allocated) = counted(|| GameMessage::decode(&bytes));
        worst = worst.max(allocated);
        // Any allocation is bounded by the input (strings, runs) or by what
        // the budget admits.
        assert!(
            allocated <= limits.max_alloc + 4096,
            "{allocated} bytes from {len}"
        );
    }
    println!("worst allocation from random input: {worst} bytes");
}
