//! The derives: enums with explicit tags, borrowed fields, tolerant
//! versioning, blittable types, generics, message ids and fingerprints.

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::collections::{BTreeMap, HashMap};

mod common;

use common::Rng;
use zao::zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};
use zao::{Decode, DecodeError, Encode, NetMessage, Schema};
use zao_messages::{
    Inventory, PlayerInput, PlayerMoved, PlayerState, SpawnEntity, SpawnEntityRef, WorldSnapshot,
};

#[derive(Debug, PartialEq, Encode, Decode)]
enum Command {
    #[zao(tag = 0)]
    Stop,
    #[zao(tag = 5)]
    Move { x: i16, y: i16 },
    #[zao(tag = 200)]
    Say(String),
}

#[test]
fn enums_write_their_explicit_tags() {
    assert_eq!(Command::Stop.to_encoded_vec(), [0]);
    assert_eq!(
        Command::Move { x: 1, y: -1 }.to_encoded_vec(),
        [5, 1, 0, 0xff, 0xff]
    );
    assert_eq!(
        Command::Say("hi".into()).to_encoded_vec(),
        [0xc8, 0x01, 2, b'h', b'i']
    );
    for cmd in [
        Command::Stop,
        Command::Move { x: 3, y: 4 },
        Command::Say("yo".into()),
    ] {
        assert_eq!(Command::decode(&cmd.to_encoded_vec()), Ok(cmd));
    }
    for tag in [1u8, 4, 6, 0x7f] {
        assert_eq!(
            Command::decode(&[tag, 0, 0, 0, 0]),
            Err(DecodeError::InvalidTag)
        );
    }
    assert_eq!(Command::FIXED_SIZE, None);
    assert_eq!(Command::MAX_SIZE, None, "a String is unbounded");
}

/// An enum whose variants carry no data writes its tag alone, however the
/// variants are spelled (unit, empty tuple, empty braces) and whether a tag
/// takes one varint byte or two.
#[derive(Clone, Copy, Debug, PartialEq, Encode, Decode)]
enum Mode {
    #[zao(tag = 0)]
    Idle,
    #[zao(tag = 3)]
    Walk(),
    #[zao(tag = 300)]
    Fly {},
}

#[test]
fn enums_without_data_write_their_tag_alone() {
    assert_eq!(Mode::Idle.to_encoded_vec(), [0]);
    assert_eq!(Mode::Walk().to_encoded_vec(), [3]);
    assert_eq!(Mode::Fly {}.to_encoded_vec(), [0xac, 0x02]);
    let all = vec![Mode::Fly {}, Mode::Idle, Mode::Walk(), Mode::Idle];
    assert_eq!(all.to_encoded_vec(), [4, 0xac, 0x02, 0, 3, 0]);
    assert_eq!(Vec::<Mode>::decode(&all.to_encoded_vec()), Ok(all));
}

/// In place, a tag that matches the value's variant decodes into that
/// variant's fields; any other tag replaces the value. Either way the result
/// is what a fresh decode gives, and bad input is refused the same way.
#[test]
fn enums_decode_in_place_into_the_same_variant_or_a_new_one() {
    let values = [
        Command::Stop,
        Command::Move { x: 3, y: -4 },
        Command::Say("hello".into()),
        Command::Say(String::new()),
        Command::Move { x: -1, y: 7 },
    ];
    // Every value decoded over every other: same variant and new variant.
    for old in &values {
        for new in &values {
            let mut value = Command::decode(&old.to_encoded_vec()).unwrap();
            value.decode_in_place(&new.to_encoded_vec()).unwrap();
            assert_eq!(&value, new, "{old:?} then {new:?}");
        }
    }
    // The matching variant keeps its string's buffer.
    let mut value = Command::Say(String::with_capacity(64));
    value
        .decode_in_place(&Command::Say("hi".into()).to_encoded_vec())
        .unwrap();
    let Command::Say(text) = &value else {
        panic!("{value:?}")
    };
    assert_eq!((text.as_str(), text.capacity()), ("hi", 64));
    // Bad input: an unknown tag, a truncated field, a bad string, trailing
    // bytes; the errors of a fresh decode, and the value stays usable.
    let mut bad_utf8 = Command::Say("ab".into()).to_encoded_vec();
    *bad_utf8.last_mut().unwrap() = 0xff;
    let mut trailing = Command::Move { x: 1, y: 2 }.to_encoded_vec();
    trailing.push(0);
    for input in [
        &[7u8, 0, 0, 0, 0][..],
        &[5, 1, 0, 0],
        &[0xc8, 0x01, 5, b'a'],
        &bad_utf8,
        &trailing,
    ] {
        for old in &values {
            let mut value = Command::decode(&old.to_encoded_vec()).unwrap();
            assert_eq!(
                value.decode_in_place(input),
                Command::decode(input).map(|_| ()),
                "{input:?} over {old:?}"
            );
            value.decode_in_place(&old.to_encoded_vec()).unwrap();
            assert_eq!(&value, old);
        }
    }
}

#[derive(Debug, PartialEq, Encode, Decode)]
enum Fixed {
    #[zao(tag = 1)]
    A(u32),
    #[zao(tag = 2)]
    B(f32),
}

#[test]
fn sizes_are_known_at_compile_time() {
    assert_eq!(Fixed::FIXED_SIZE, Some(5));
    assert_eq!(<(u8, u16, [u32; 3])>::FIXED_SIZE, Some(15));
    assert_eq!(Option::<u64>::MAX_SIZE, Some(9));
    assert_eq!(PlayerMoved::FIXED_SIZE, Some(16));
    assert_eq!(PlayerInput::FIXED_SIZE, Some(15));
    assert_eq!(SpawnEntity::FIXED_SIZE, None);
    assert_eq!(<Command as Decode<'_>>::MIN_SIZE, 1);
    assert_eq!(<PlayerMoved as Decode<'_>>::MIN_SIZE, 16);
    assert_eq!(<SpawnEntity as Decode<'_>>::MIN_SIZE, 35);
}

/// Version 1 and version 2 of one message, the second with a field appended.
#[derive(Debug, Default, PartialEq, Encode, Decode, NetMessage)]
#[zao(tolerant, id = 40)]
struct ScoreV1 {
    player: u32,
    score: i32,
}

#[derive(Debug, Default, PartialEq, Encode, Decode, NetMessage)]
#[zao(tolerant, id = 40)]
struct ScoreV2 {
    player: u32,
    score: i32,
    title: String,
}

#[test]
fn tolerant_types_skip_appended_fields_and_default_missing_ones() {
    let v1 = ScoreV1 {
        player: 1,
        score: -5,
    };
    let v2 = ScoreV2 {
        player: 1,
        score: -5,
        title: "ace".into(),
    };
    // The body is length-prefixed.
    assert_eq!(v1.to_encoded_vec(), [8, 1, 0, 0, 0, 0xfb, 0xff, 0xff, 0xff]);
    assert_eq!(ScoreV1::FIXED_SIZE, Some(9));
    // A new writer, an old reader: the title is skipped.
    assert_eq!(
        ScoreV1::decode(&v2.to_encoded_vec()),
        Ok(ScoreV1 {
            player: 1,
            score: -5
        })
    );
    // An old writer, a new reader: the title is defaulted.
    assert_eq!(
        ScoreV2::decode(&v1.to_encoded_vec()),
        Ok(ScoreV2 {
            title: String::new(),
            ..v2
        })
    );
    let mut in_place = ScoreV2 {
        title: "stale".into(),
        ..Default::default()
    };
    in_place.decode_in_place(&v1.to_encoded_vec()).unwrap();
    assert_eq!(in_place.title, "");
    // Inside a sequence, each element skips its own extras.
    let list = vec![
        ScoreV2 {
            player: 2,
            ..Default::default()
        },
        ScoreV2 {
            player: 3,
            ..Default::default()
        },
    ];
    let old: Vec<ScoreV1> = Vec::decode(&list.to_encoded_vec()).unwrap();
    assert_eq!(old.iter().map(|s| s.player).collect::<Vec<_>>(), [2, 3]);
    // A body that claims more than remains, and a truncated field, still fail.
    assert_eq!(
        ScoreV1::decode(&[9, 1, 0, 0, 0]),
        Err(DecodeError::LengthExceedsRemaining)
    );
    assert_eq!(ScoreV1::decode(&[2, 1, 0]), Err(DecodeError::UnexpectedEnd));
    // Old and new agree on the fingerprint: appending is the contract.
    assert_eq!(ScoreV1::FINGERPRINT, ScoreV2::FINGERPRINT);
}

#[derive(Debug, PartialEq, Encode, Decode)]
struct Borrowed<'a> {
    name: &'a str,
    blob: &'a [u8],
    id: u8,
}

#[test]
fn borrowed_fields_point_into_the_input() {
    let value = Borrowed {
        name: "héllo",
        blob: &[1, 2, 3],
        id: 9,
    };
    let bytes = value.to_encoded_vec();
    let back = Borrowed::decode(&bytes).unwrap();
    assert_eq!(back, value);
    assert!(
        bytes.as_ptr_range().contains(&back.name.as_ptr()),
        "no copy"
    );
    assert!(
        bytes.as_ptr_range().contains(&back.blob.as_ptr()),
        "no copy"
    );
}

#[derive(Debug, PartialEq, Encode, Decode)]
struct Pair<T> {
    a: T,
    b: T,
}

#[derive(Debug, PartialEq, Encode, Decode)]
struct Tuple(u8, String);

#[derive(Debug, PartialEq, Encode, Decode)]
struct Unit;

#[test]
fn generic_tuple_and_unit_structs() {
    let pair = Pair {
        a: "x".to_owned(),
        b: "yz".to_owned(),
    };
    assert_eq!(pair.to_encoded_vec(), [1, b'x', 2, b'y', b'z']);
    assert_eq!(Pair::<String>::decode(&pair.to_encoded_vec()), Ok(pair));
    assert_eq!(Pair::<u16>::FIXED_SIZE, Some(4));
    let t = Tuple(7, "q".into());
    assert_eq!(Tuple::decode(&t.to_encoded_vec()), Ok(t));
    assert_eq!(Unit.to_encoded_vec(), Vec::<u8>::new());
    assert_eq!(Unit::decode(&[]), Ok(Unit));
    assert_eq!(Unit::decode(&[0]), Err(DecodeError::TrailingBytes));
}

/// The same fields as `PlayerState`, encoded field by field.
#[derive(Debug, PartialEq, Encode, Decode)]
struct PlayerStateByField {
    entity: u32,
    position: glam::Vec3,
}

#[test]
fn a_blittable_image_equals_the_field_by_field_encoding() {
    let players: Vec<PlayerState> = (0..100)
        .map(|i| PlayerState {
            entity: i * 7,
            position: glam::Vec3::new(i as f32, -1.0, 0.25),
        })
        .collect();
    let by_field: Vec<PlayerStateByField> = players
        .iter()
        .map(|p| PlayerStateByField {
            entity: p.entity,
            position: p.position,
        })
        .collect();
    for (image, fields) in players.iter().zip(&by_field) {
        assert_eq!(image.to_encoded_vec(), fields.to_encoded_vec());
    }
    assert_eq!(PlayerState::FINGERPRINT, PlayerStateByField::FINGERPRINT);
    // The run: a 4-byte count for the blittable type (docs/WIRE.md §5), a
    // varint for the other, then the same elements.
    let (image, fields) = (players.to_encoded_vec(), by_field.to_encoded_vec());
    assert_eq!(image[..4], 100u32.to_le_bytes());
    assert_eq!(fields[0], 100);
    assert_eq!(image[4..], fields[1..]);
    assert_ne!(
        Vec::<PlayerState>::FINGERPRINT,
        Vec::<PlayerStateByField>::FINGERPRINT
    );
    let back: Vec<PlayerState> = Vec::decode(&image).unwrap();
    assert_eq!(back, players);
}

#[derive(
    Clone, Copy, Debug, PartialEq, Encode, Decode, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[zerocopy(crate = "zao::zerocopy")]
#[zao(blittable)]
#[repr(C)]
struct Texel {
    rgba: [u8; 4],
    depth: f32,
}

#[test]
fn blittable_arrays_and_runs_round_trip() {
    let texels = vec![
        Texel {
            rgba: [1, 2, 3, 4],
            depth: 0.5
        };
        33
    ];
    let bytes = texels.to_encoded_vec();
    assert_eq!(bytes.len(), 4 + 33 * 8);
    // A run of references is the same run: the same 4-byte count.
    let refs: Vec<&Texel> = texels.iter().collect();
    assert_eq!(refs.to_encoded_vec(), bytes);
    assert_eq!(refs.encoded_len(), bytes.len());
    assert_eq!(Vec::<Texel>::decode(&bytes), Ok(texels.clone()));
    let array: [Texel; 3] = [texels[0]; 3];
    assert_eq!(array.to_encoded_vec().len(), 24);
    // decode_in_place reuses a longer vector (truncates) and a shorter one (grows).
    let mut long = vec![
        Texel {
            rgba: [0; 4],
            depth: 0.0
        };
        100
    ];
    long.decode_in_place(&bytes).unwrap();
    assert_eq!(long, texels);
    let mut short: Vec<Texel> = Vec::new();
    short.decode_in_place(&bytes).unwrap();
    assert_eq!(short, texels);
}

#[test]
fn message_ids_and_names() {
    assert_eq!((PlayerMoved::ID, PlayerMoved::NAME), (1, "PlayerMoved"));
    assert_eq!((PlayerInput::ID, PlayerInput::NAME), (2, "PlayerInput"));
    assert_eq!((SpawnEntity::ID, SpawnEntityRef::ID), (3, 3));
    assert_eq!((WorldSnapshot::ID, Inventory::ID), (4, 5));
    assert_eq!(ScoreV1::ID, 40);
}

// Twins of reference types with one change each, for the fingerprint tests.
#[allow(dead_code, unreachable_pub)]
mod changed {
    use super::*;

    #[derive(Encode)]
    pub struct RenamedField {
        pub entity: u32,
        pub pos: glam::Vec3,
    }

    #[derive(Encode)]
    pub struct RetypedField {
        pub entity: u64,
        pub position: glam::Vec3,
    }

    #[derive(Encode)]
    pub struct Reordered {
        pub position: glam::Vec3,
        pub entity: u32,
    }

    /// `PlayerState` with a field renamed, one level down in a snapshot.
    #[derive(Encode)]
    pub struct InnerChanged {
        pub entity: u32,
        pub where_: glam::Vec3,
    }

    #[derive(Encode)]
    pub struct Snapshot {
        pub tick: u32,
        pub players: Vec<InnerChanged>,
    }

    /// The same as `PlayerState`, under another name.
    #[derive(Encode)]
    pub struct SameShape {
        pub entity: u32,
        pub position: glam::Vec3,
    }

    #[derive(Encode)]
    pub enum Reversed {
        #[zao(tag = 2)]
        B(f32),
        #[zao(tag = 1)]
        A(u32),
    }
}

#[test]
fn fingerprints_follow_field_names_types_and_order() {
    let base = PlayerMoved::FINGERPRINT;
    assert_eq!(
        base,
        PlayerState::FINGERPRINT,
        "same fields, same fingerprint"
    );
    assert_eq!(
        base,
        changed::SameShape::FINGERPRINT,
        "the type's name does not count"
    );
    assert_ne!(base, changed::RenamedField::FINGERPRINT);
    assert_ne!(base, changed::RetypedField::FINGERPRINT);
    assert_ne!(base, changed::Reordered::FINGERPRINT);
    // A change one level down reaches the outer type.
    assert_ne!(WorldSnapshot::FINGERPRINT, changed::Snapshot::FINGERPRINT);
    // Borrowed and owned twins match.
    assert_eq!(SpawnEntity::FINGERPRINT, SpawnEntityRef::FINGERPRINT);
    assert_eq!(String::FINGERPRINT, <&str>::FINGERPRINT);
    assert_eq!(Vec::<u8>::FINGERPRINT, bytes::Bytes::FINGERPRINT);
    // Reordering variants in the source keeps the fingerprint.
    assert_eq!(Fixed::FINGERPRINT, changed::Reversed::FINGERPRINT);
    // Every reference message differs from every other.
    let all = [
        PlayerMoved::FINGERPRINT,
        PlayerInput::FINGERPRINT,
        SpawnEntity::FINGERPRINT,
        WorldSnapshot::FINGERPRINT,
        Inventory::FINGERPRINT,
    ];
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            assert_ne!(a, b);
        }
    }
    // Maps: a sorted-map reader refuses unsorted input, so the two differ.
    assert_ne!(
        HashMap::<u32, u32>::FINGERPRINT,
        BTreeMap::<u32, u32>::FINGERPRINT
    );
}

/// A recursive type through `Vec<Self>`: the derive must not loop on its own
/// constants, and the value round-trips.
#[derive(Debug, PartialEq, Encode, Decode)]
struct Node {
    value: u32,
    children: Vec<Node>,
}

#[test]
fn recursive_types_derive_and_round_trip() {
    let tree = Node {
        value: 1,
        children: vec![
            Node {
                value: 2,
                children: vec![],
            },
            Node {
                value: 3,
                children: vec![Node {
                    value: 4,
                    children: vec![],
                }],
            },
        ],
    };
    assert_eq!(Node::decode(&tree.to_encoded_vec()), Ok(tree));
    assert_eq!(Node::FIXED_SIZE, None);
    assert_ne!(Node::FINGERPRINT, 0);
}

// Blittable values of every size class the derive reads through words
// (`image_words`: whole 8-byte words, then a 4-, 2- and 1-byte tail), and
// past its limit, where it copies bytes.
macro_rules! blobs {
    ($($name:ident: $n:literal),* $(,)?) => {$(
        #[derive(
            Clone, Copy, Debug, PartialEq, Encode, Decode, FromBytes, IntoBytes, Immutable,
            KnownLayout,
        )]
        #[zerocopy(crate = "zao::zerocopy")]
        #[zao(blittable)]
        #[repr(C)]
        struct $name {
            bytes: [u8; $n],
        }
    )*};
}

blobs!(
    Blob1: 1, Blob2: 2, Blob3: 3, Blob5: 5, Blob7: 7, Blob8: 8, Blob13: 13, Blob15: 15,
    Blob16: 16, Blob17: 17, Blob24: 24, Blob31: 31, Blob32: 32, Blob33: 33, Blob40: 40,
);

/// A blittable value of mixed alignment: 4 + 2 + 2 + 4 bytes.
#[derive(
    Clone, Copy, Debug, PartialEq, Encode, Decode, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[zerocopy(crate = "zao::zerocopy")]
#[zao(blittable)]
#[repr(C)]
struct Mixed {
    id: u32,
    a: u16,
    b: i16,
    c: f32,
}

fn check_blob<T>(n: usize)
where
    T: for<'de> Decode<'de> + FromBytes + IntoBytes + Immutable + PartialEq + std::fmt::Debug,
{
    for seed in 0..64u8 {
        let image: Vec<u8> = (0..n as u8)
            .map(|i| i.wrapping_mul(37).wrapping_add(seed.wrapping_mul(101)))
            .collect();
        let expected = T::read_from_bytes(&image).unwrap();
        assert_eq!(T::decode(&image).as_ref(), Ok(&expected), "{n} bytes");
        // decode_from, inside a larger value, at an odd offset.
        let mut framed = vec![0xEE];
        framed.extend_from_slice(&image);
        framed.push(0x7F);
        let (lead, value, tail) = <(u8, T, u8)>::decode(&framed).unwrap();
        assert_eq!(
            (lead, &value, tail),
            (0xEE, &expected, 0x7F),
            "{n} bytes, framed"
        );
        assert_eq!(
            value.as_bytes(),
            &image[..],
            "{n} bytes: the image comes back"
        );
        assert_eq!(
            T::decode(&image[..n - 1]),
            Err(DecodeError::UnexpectedEnd),
            "{n} bytes, one short"
        );
        let mut long = image.clone();
        long.push(0);
        assert_eq!(
            T::decode(&long),
            Err(DecodeError::TrailingBytes),
            "{n} bytes, one over"
        );
        assert_eq!(
            <(u8, T, u8)>::decode(&framed[..n]),
            Err(DecodeError::UnexpectedEnd),
            "{n} bytes, framed and cut"
        );
    }
}

#[test]
fn blittable_values_of_every_size_decode_to_their_image() {
    check_blob::<Blob1>(1);
    check_blob::<Blob2>(2);
    check_blob::<Blob3>(3);
    check_blob::<Blob5>(5);
    check_blob::<Blob7>(7);
    check_blob::<Blob8>(8);
    check_blob::<Blob13>(13);
    check_blob::<Blob15>(15);
    check_blob::<Blob16>(16);
    check_blob::<Blob17>(17);
    check_blob::<Blob24>(24);
    check_blob::<Blob31>(31);
    check_blob::<Blob32>(32);
    check_blob::<Blob33>(33);
    check_blob::<Blob40>(40);
    check_blob::<Mixed>(12);
    check_blob::<PlayerMoved>(16);
}

/// Plain data nested in plain data (a `Vec3` in a `Transform`, tuples of
/// floats) is read bare, not through a `Result` per field (see
/// `Decode::decode_plain`). It must read the same values and refuse every
/// short input as the checked path does, in a struct of exact size, in
/// the checked prefix of a struct of variable size, and in a generic one.
#[derive(Clone, Copy, Debug, PartialEq, Encode, Decode)]
struct Vec3 {
    x: f32,
    y: f32,
    z: f32,
}

#[derive(Clone, Copy, Debug, PartialEq, Encode, Decode)]
struct Pose {
    position: Vec3,
    velocity: (f32, f32, f32),
    spin: (i16, (u8, u64)),
    yaw: f32,
}

#[derive(Clone, Debug, PartialEq, Encode, Decode)]
struct Mover {
    id: u32,
    pose: Pose,
    alive: bool,
    pose_after_bool: Pose,
    name: String,
    last: (u16, f64),
}

#[derive(Debug, PartialEq, Encode, Decode)]
struct Held<T> {
    value: T,
    tag: (u8, u8),
}

#[test]
fn plain_data_in_plain_data_decodes_bare_and_refuses_short_input() {
    let pose = Pose {
        position: Vec3 {
            x: 1.5,
            y: -2.25,
            z: 3.0,
        },
        velocity: (0.5, f32::MIN_POSITIVE, -7.75),
        spin: (-300, (9, u64::MAX - 1)),
        yaw: 0.125,
    };
    let mover = Mover {
        id: 0xDEAD_BEEF,
        pose,
        alive: true,
        pose_after_bool: Pose { yaw: -1.0, ..pose },
        name: "runner".to_owned(),
        last: (65_535, -0.5),
    };
    let held = Held {
        value: pose,
        tag: (1, 2),
    };
    const { assert!(<Pose as Decode>::EXACT_SIZE && <Pose as Decode>::INFALLIBLE) };
    const { assert!(!<Mover as Decode>::INFALLIBLE) };

    let bytes = pose.to_encoded_vec();
    assert_eq!(bytes.len(), <Pose as Decode>::MIN_SIZE);
    assert_eq!(Pose::decode(&bytes), Ok(pose));
    let bytes = mover.to_encoded_vec();
    assert_eq!(Mover::decode(&bytes), Ok(mover.clone()));
    let bytes_held = held.to_encoded_vec();
    assert_eq!(Held::<Pose>::decode(&bytes_held), Ok(held));

    // Every cut is refused, never read as zeros.
    for cut in 0..bytes.len() {
        assert!(Mover::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        assert!(
            Mover::decode_prefix(&bytes[..cut]).is_err(),
            "prefix cut at {cut}"
        );
    }
    let pose_bytes = pose.to_encoded_vec();
    for cut in 0..pose_bytes.len() {
        assert_eq!(
            Pose::decode_prefix(&pose_bytes[..cut]),
            Err(DecodeError::UnexpectedEnd),
            "cut at {cut}"
        );
    }
    for cut in 0..bytes_held.len() {
        assert!(
            Held::<Pose>::decode(&bytes_held[..cut]).is_err(),
            "cut at {cut}"
        );
    }
    // Read bare from too few bytes, the numbers past the end are zero, and
    // nothing panics.
    let short = Pose::decode_plain(&mut zao::Reader::new(&pose_bytes[..8]));
    assert_eq!(
        short,
        Pose {
            position: Vec3 {
                x: 1.5,
                y: -2.25,
                z: 0.0
            },
            velocity: (0.0, 0.0, 0.0),
            spin: (0, (0, 0)),
            yaw: 0.0,
        }
    );
    // The bool after the first pose is still checked.
    let mut bad = mover.to_encoded_vec();
    let at = 4 + <Pose as Decode>::MIN_SIZE;
    assert_eq!(bad[at], 1);
    bad[at] = 2;
    assert_eq!(Mover::decode(&bad), Err(DecodeError::InvalidTag));
}

#[derive(Clone, Copy, Debug, PartialEq, Encode, Decode)]
enum Mood {
    #[zao(tag = 0)]
    Calm,
    #[zao(tag = 7)]
    Angry,
    #[zao(tag = 127)]
    Asleep,
}

/// Small fields side by side, in one window of fixed-size fields, signed
/// ones negative, then a string after the window.
#[derive(Clone, Debug, PartialEq, Encode, Decode)]
struct SmallFields {
    a: i8,
    b: i16,
    c: bool,
    d: Mood,
    e: u8,
    f: i32,
    g: u16,
    h: f32,
    i: u64,
    name: String,
}

/// Small fields at the window's end, where no write may spill past them.
#[derive(Clone, Copy, Debug, PartialEq, Encode, Decode)]
struct TightEnd {
    a: u64,
    b: u16,
    c: i8,
}

#[derive(Clone, Copy, Debug, PartialEq, Encode, Decode)]
struct ShortWindow {
    a: u8,
    b: i16,
}

#[derive(Clone, Copy, Debug, PartialEq, Encode, Decode)]
struct NineBytes {
    a: u32,
    b: u16,
    c: i16,
    d: u8,
}

/// Every form of the encode of `value`, checked against `fields`: the
/// fields' own encodings one after the other.
fn same_bytes_everywhere<T>(value: &T, fields: &[Vec<u8>])
where
    T: Encode + for<'de> Decode<'de> + PartialEq + std::fmt::Debug,
{
    let expected: Vec<u8> = fields.concat();
    assert_eq!(value.to_encoded_vec(), expected, "{value:?}");
    let mut exact = vec![0u8; expected.len()];
    assert_eq!(value.encode(&mut exact), Ok(expected.len()));
    assert_eq!(exact, expected);
    let mut roomy = vec![0xaa; expected.len() + 16];
    assert_eq!(value.encode(&mut roomy), Ok(expected.len()));
    assert_eq!(roomy[..expected.len()], expected);
    let mut vec = vec![9u8, 9];
    assert_eq!(value.encode_to_vec(&mut vec), expected.len());
    assert_eq!(vec[2..], expected);
    let mut bytes = bytes::BytesMut::new();
    assert_eq!(value.encode_to_bytes(&mut bytes), expected.len());
    assert_eq!(&bytes[..], expected);
    // Compared as bytes: a NaN is not equal to itself.
    assert_eq!(
        T::decode(&expected).map(|back| back.to_encoded_vec()),
        Ok(expected)
    );
}

#[test]
fn small_fields_side_by_side_encode_as_each_alone() {
    let mut rng = Rng::new(10);
    for round in 0..200 {
        let small = SmallFields {
            a: rng.u8() as i8,
            b: rng.u16() as i16,
            c: rng.bool(),
            d: [Mood::Calm, Mood::Angry, Mood::Asleep][rng.below(3)],
            e: rng.u8(),
            f: rng.u32() as i32,
            g: rng.u16(),
            h: rng.f32_bits(),
            i: rng.u64(),
            name: "x".repeat(round % 20),
        };
        let s = &small;
        same_bytes_everywhere(
            s,
            &[
                s.a.to_encoded_vec(),
                s.b.to_encoded_vec(),
                s.c.to_encoded_vec(),
                s.d.to_encoded_vec(),
                s.e.to_encoded_vec(),
                s.f.to_encoded_vec(),
                s.g.to_encoded_vec(),
                s.h.to_encoded_vec(),
                s.i.to_encoded_vec(),
                s.name.to_encoded_vec(),
            ],
        );
        let tight = TightEnd {
            a: rng.u64(),
            b: rng.u16(),
            c: rng.u8() as i8,
        };
        same_bytes_everywhere(
            &tight,
            &[
                tight.a.to_encoded_vec(),
                tight.b.to_encoded_vec(),
                tight.c.to_encoded_vec(),
            ],
        );
        let short = ShortWindow {
            a: rng.u8(),
            b: rng.u16() as i16,
        };
        same_bytes_everywhere(
            &short,
            &[short.a.to_encoded_vec(), short.b.to_encoded_vec()],
        );
        let nine = NineBytes {
            a: rng.u32(),
            b: rng.u16(),
            c: rng.u16() as i16,
            d: rng.u8(),
        };
        same_bytes_everywhere(
            &nine,
            &[
                nine.a.to_encoded_vec(),
                nine.b.to_encoded_vec(),
                nine.c.to_encoded_vec(),
                nine.d.to_encoded_vec(),
            ],
        );
        // In a run: each element through a window of its own.
        let run = vec![nine; round % 5];
        let mut fields = vec![run.len().to_encoded_vec()];
        fields.extend(run.iter().map(Encode::to_encoded_vec));
        same_bytes_everywhere(&run, &fields);
    }
}

/// Blittable images of every length class `encode` copies in words and
/// tail pieces (`blit::copy_image`: 8-byte words, then 4, 2 and 1 bytes),
/// and past its 32-byte limit: each writes exactly its image, leaves the
/// byte after it alone, and refuses a buffer one byte short.
#[test]
fn a_blittable_image_of_any_length_is_copied_exactly() {
    macro_rules! images {
        ($($name:ident $n:literal),*) => {$({
            #[derive(Clone, Copy, Debug, PartialEq, Encode, Decode, FromBytes, IntoBytes, Immutable, KnownLayout)]
            #[zerocopy(crate = "zao::zerocopy")]
            #[zao(blittable)]
            #[repr(C)]
            struct $name {
                bytes: [u8; $n],
            }
            let mut value = $name { bytes: [0; $n] };
            for (i, b) in value.bytes.iter_mut().enumerate() {
                *b = 1 + i as u8;
            }
            let mut buf = [0xeeu8; $n + 1];
            assert_eq!(value.encode(&mut buf), Ok($n), "{}", $n);
            assert_eq!(&buf[..$n], value.as_bytes(), "{}", $n);
            assert_eq!(buf[$n], 0xee, "{}: wrote past the image", $n);
            assert_eq!(value.to_encoded_vec(), value.as_bytes(), "{}", $n);
            assert_eq!($name::decode(&buf[..$n]), Ok(value), "{}", $n);
            let err = value.encode(&mut buf[..$n - 1]).unwrap_err();
            assert_eq!((err.needed, err.available), ($n, $n - 1), "{}", $n);
        })*};
    }
    images!(I1 1, I2 2, I3 3, I7 7, I8 8, I9 9, I13 13, I15 15, I16 16, I17 17, I23 23, I31 31, I32 32, I33 33, I48 48);
}
