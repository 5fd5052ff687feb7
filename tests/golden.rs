//! Golden wire vectors: one file per reference message in `assets/golden/`,
//! each the framed message (`id + body`) of the fixed value in
//! `zao_messages::samples`. A change to the wire format fails here, on purpose.
//!
//! To re-create the files after a deliberate format change:
//! `ZAO_BLESS=1 cargo test --test golden` (and update docs/WIRE.md).

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::PathBuf;

use zao::{Decode, Encode, NetMessage, decode_message, encode_message};
use zao_messages::{
    GameMessage, Inventory, PlayerInput, PlayerMoved, SpawnEntity, SpawnEntityRef, WorldSnapshot,
    samples,
};

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("assets/golden")
        .join(format!("{name}.bin"))
}

/// Reads the golden file, or writes it from `fresh` under `ZAO_BLESS=1`.
fn golden(name: &str, fresh: &[u8]) -> Vec<u8> {
    let path = golden_path(name);
    if std::env::var_os("ZAO_BLESS").is_some() {
        std::fs::write(&path, fresh).unwrap();
    }
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn framed<M: NetMessage>(msg: &M) -> Vec<u8> {
    let mut buf = vec![0u8; zao::message_len(msg)];
    let n = encode_message(msg, &mut buf).unwrap();
    assert_eq!(n, buf.len());
    buf
}

/// Decodes the golden file, checks the value, re-encodes to the same bytes.
fn check<M>(name: &str, expected: &M)
where
    M: NetMessage + for<'de> Decode<'de> + PartialEq + std::fmt::Debug,
{
    let file = golden(name, &framed(expected));
    let decoded: M = decode_message(&file).unwrap();
    assert_eq!(&decoded, expected, "{name}: decoded value");
    assert_eq!(framed(&decoded), file, "{name}: re-encoding");
    assert!(GameMessage::decode(&file).is_ok(), "{name}: dispatch by id");
}

#[test]
fn player_moved() {
    check("player_moved", &samples::player_moved());
    // id 1, entity 7, x 1.5, y -2.0, z 3.25: the memory image.
    let expected = [
        0x01, // id
        0x07, 0x00, 0x00, 0x00, // entity
        0x00, 0x00, 0xc0, 0x3f, // 1.5
        0x00, 0x00, 0x00, 0xc0, // -2.0
        0x00, 0x00, 0x50, 0x40, // 3.25
    ];
    assert_eq!(golden("player_moved", &expected), expected);
}

#[test]
fn player_input() {
    check("player_input", &samples::player_input());
    let expected = [
        0x02, // id
        0xe8, 0x03, 0x00, 0x00, // tick 1000
        0x05, 0x00, // FIRE | JUMP
        0x00, 0x00, 0x00, 0x3f, // aim.x 0.5
        0x00, 0x00, 0x80, 0xbf, // aim.y -1.0
        0x01, // Crouching
    ];
    assert_eq!(golden("player_input", &expected), expected);
}

#[test]
fn spawn_entity() {
    check("spawn_entity", &samples::spawn_entity());
    let file = golden("spawn_entity", &framed(&samples::spawn_entity()));
    let expected: &[u8] = &[
        0x03, // id
        0x2a, 0x00, 0x00, 0x00, // entity 42
        0x03, 0x00, // prefab 3
        0x00, 0x00, 0x20, 0x41, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0xc0, // (10, 0, -4)
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80,
        0x3f, // identity quaternion (0, 0, 0, 1)
        0x06, b'G', b'o', b'b', b'l', b'i', b'n', // name
    ];
    assert_eq!(file, expected);
    // The borrowed twin reads the same bytes without copying the name.
    let borrowed: SpawnEntityRef<'_> = decode_message(&file).unwrap();
    assert_eq!(borrowed.to_owned(), samples::spawn_entity());
    assert_eq!(framed(&borrowed), file);
}

#[test]
fn world_snapshot() {
    check("world_snapshot", &samples::world_snapshot(3));
    let expected: &[u8] = &[
        0x04, // id
        0xf4, 0x01, 0x00, 0x00, // tick 500
        0x03, 0x00, 0x00, 0x00, // 3 players: a blittable run's count is 4 bytes
        0x64, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x3f, 0x00, 0x00, 0x00,
        0x80, // entity 100 at (0, 0.5, -0)
        0x65, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x3f, 0x00, 0x00, 0x80,
        0xbf, // entity 101 at (1, 0.5, -1)
        0x66, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x3f, 0x00, 0x00, 0x00,
        0xc0, // entity 102 at (2, 0.5, -2)
    ];
    assert_eq!(golden("world_snapshot", expected), expected);
}

/// `HashMap` slots go out in iteration order, so the file holds them sorted
/// by slot and the re-encoding is compared entry by entry, order aside.
#[test]
fn inventory() {
    let value = samples::inventory(3);
    let expected: &[u8] = &[
        0x05, // id
        0x09, 0x00, 0x00, 0x00, // owner 9
        0x03, // 3 slots
        0x00, 0x00, 0x00, 0x00, 0xe8, 0x03, 0x00, 0x00, 0x01, 0x00, 0x64, 0x00,
        0x00, // slot 0: item 1000, count 1, durability 100, flags 0
        0x01, 0x00, 0x00, 0x00, 0xe9, 0x03, 0x00, 0x00, 0x02, 0x00, 0x63, 0x00,
        0x01, // slot 1: item 1001, count 2, durability 99, flags 1
        0x02, 0x00, 0x00, 0x00, 0xea, 0x03, 0x00, 0x00, 0x03, 0x00, 0x62, 0x00,
        0x02, // slot 2: item 1002, count 3, durability 98, flags 2
    ];
    let file = golden("inventory", expected);
    assert_eq!(file, expected);
    let decoded: Inventory = decode_message(&file).unwrap();
    assert_eq!(decoded, value);
    let again = framed(&decoded);
    assert_eq!(again.len(), file.len());
    assert_eq!(again[..6], file[..6], "id, owner and count");
    let mut entries: Vec<&[u8]> = again[6..].chunks(13).collect();
    entries.sort();
    let sorted: Vec<u8> = entries.concat();
    assert_eq!(sorted, file[6..], "the same entries");
}

/// The sizes the crate docs promise, measured.
#[test]
fn documented_sizes() {
    assert_eq!(samples::player_moved().encoded_len(), 16);
    assert_eq!(PlayerMoved::FIXED_SIZE, Some(16));
    assert_eq!(samples::player_input().encoded_len(), 15);
    assert_eq!(PlayerInput::FIXED_SIZE, Some(15));
    assert_eq!(samples::spawn_entity().encoded_len(), 34 + 1 + 6);
    assert_eq!(samples::world_snapshot(32).encoded_len(), 520);
    assert_eq!(samples::world_snapshot(1024).encoded_len(), 16_392);
    assert_eq!(samples::inventory(128).encoded_len(), 4 + 2 + 128 * 13);
    assert_eq!(SpawnEntity::FIXED_SIZE, None);
    assert_eq!(WorldSnapshot::MAX_SIZE, None);
}
