//! Codec rows C1–C16 of the test matrix: hostile bytes are errors, never
//! panics. Allocation claims ("no allocation before the error") are proven
//! in `tests/alloc.rs`, which has the counting allocator.

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::num::{NonZeroU16, NonZeroU32, NonZeroU64};

use common::{Rng, golden_files, varint};
use zao::zerocopy::{Immutable, IntoBytes};
use zao::{
    Decode, DecodeError, DecodeLimits, Encode, EncodeError, NetMessage, Writer, decode_message,
    split_message,
};
use zao_messages::{
    GameMessage, Inventory, PlayerInput, PlayerMoved, PlayerState, SpawnEntity, SpawnEntityRef,
    Stance, WorldSnapshot, samples,
};

/// Decodes `bytes` as a body of every reference message type.
fn decode_every_body(bytes: &[u8]) -> [Result<(), DecodeError>; 6] {
    [
        PlayerMoved::decode(bytes).map(drop),
        PlayerInput::decode(bytes).map(drop),
        SpawnEntity::decode(bytes).map(drop),
        SpawnEntityRef::decode(bytes).map(drop),
        WorldSnapshot::decode(bytes).map(drop),
        Inventory::decode(bytes).map(drop),
    ]
}

/// A length-prefixed string body of SpawnEntity with the fixed part filled.
fn spawn_with_name_prefix(prefix: &[u8]) -> Vec<u8> {
    let mut bytes = samples::spawn_entity().to_encoded_vec();
    bytes.truncate(34);
    bytes.extend_from_slice(prefix);
    bytes
}

#[test]
fn c1_empty_input_is_unexpected_end() {
    for result in decode_every_body(&[]) {
        assert_eq!(result, Err(DecodeError::UnexpectedEnd));
    }
    assert_eq!(GameMessage::decode(&[]), Err(DecodeError::UnexpectedEnd));
    assert_eq!(split_message(&[]), Err(DecodeError::UnexpectedEnd));
    assert_eq!(String::decode(&[]), Err(DecodeError::UnexpectedEnd));
    assert_eq!(u64::decode(&[]), Err(DecodeError::UnexpectedEnd));
}

#[test]
fn c2_every_strict_prefix_of_every_golden_message_fails() {
    for (name, file) in golden_files() {
        assert!(GameMessage::decode(&file).is_ok(), "{name} itself decodes");
        for end in 0..file.len() {
            let prefix = &file[..end];
            assert!(
                GameMessage::decode(prefix).is_err(),
                "{name}[..{end}] decoded"
            );
            // The body alone, under its own type.
            if end >= 1 {
                let body = &prefix[1..];
                let result = match file[0] {
                    1 => PlayerMoved::decode(body).map(drop),
                    2 => PlayerInput::decode(body).map(drop),
                    3 => SpawnEntity::decode(body).map(drop),
                    4 => WorldSnapshot::decode(body).map(drop),
                    5 => Inventory::decode(body).map(drop),
                    id => panic!("unknown id {id}"),
                };
                assert!(result.is_err(), "{name} body[..{}] decoded", end - 1);
            }
        }
    }
}

#[test]
fn c3_huge_length_claims_are_refused() {
    for claim in [1u64 << 32, u64::from(u32::MAX), u64::MAX] {
        let mut prefix = varint(claim);
        prefix.push(b'x');
        // A string (SpawnEntity's name).
        let err = SpawnEntity::decode(&spawn_with_name_prefix(&prefix)).unwrap_err();
        assert_eq!(err, DecodeError::OverLimit, "string claim {claim}");
        assert_eq!(String::decode(&prefix), Err(DecodeError::OverLimit));
        assert_eq!(<&[u8]>::decode(&prefix), Err(DecodeError::OverLimit));
        // A map (Inventory's slots) and a byte sequence.
        let mut inventory = vec![1, 0, 0, 0];
        inventory.extend_from_slice(&prefix);
        assert_eq!(Inventory::decode(&inventory), Err(DecodeError::OverLimit));
        assert_eq!(Vec::<u8>::decode(&prefix), Err(DecodeError::OverLimit));
        // Even with the limits off, the remaining input bounds every claim.
        let unlimited = DecodeLimits::DANGEROUS_UNLIMITED;
        let err = String::decode_with_limits(&prefix, unlimited).unwrap_err();
        assert_eq!(err, DecodeError::LengthExceedsRemaining, "claim {claim}");
    }
    // WorldSnapshot's players: a 4-byte count, whose largest claim is
    // `u32::MAX` (the other bounds of a wide count: `c4_a_wide_count_...`).
    let mut snapshot = vec![1, 0, 0, 0];
    snapshot.extend_from_slice(&u32::MAX.to_le_bytes());
    snapshot.push(b'x');
    assert_eq!(
        WorldSnapshot::decode(&snapshot),
        Err(DecodeError::OverLimit)
    );
    let err = WorldSnapshot::decode_with_limits(&snapshot, DecodeLimits::DANGEROUS_UNLIMITED)
        .unwrap_err();
    assert_eq!(err, DecodeError::LengthExceedsRemaining);
}

/// The 4-byte count of a run of blittable structs (docs/WIRE.md §5) is
/// checked as every count is: cut short, over `max_collection`, past the
/// input (also as the elements' minimum size of an outer `Vec`), and in a
/// decode in place.
#[test]
fn c4_a_wide_count_is_checked_as_any_count() {
    // Cut inside the count.
    for cut in 4..8 {
        let bytes = &[0, 0, 0, 0, 3, 0, 0, 0][..cut];
        assert_eq!(
            WorldSnapshot::decode(bytes),
            Err(DecodeError::UnexpectedEnd),
            "{cut}"
        );
    }
    // At `max_collection` the input is what is short; past it, the limit.
    let max = u32::try_from(DecodeLimits::DEFAULT.max_collection).unwrap();
    for (count, err) in [
        (max, DecodeError::LengthExceedsRemaining),
        (max + 1, DecodeError::OverLimit),
    ] {
        let mut bytes = vec![0, 0, 0, 0];
        bytes.extend_from_slice(&count.to_le_bytes());
        assert_eq!(WorldSnapshot::decode(&bytes), Err(err), "{count}");
        let mut warm = samples::world_snapshot(3);
        assert_eq!(warm.decode_in_place(&bytes), Err(err), "{count} in place");
    }
    // A `Vec` of such runs: each takes at least its 4-byte count, so 3 of
    // them cannot fit in 8 bytes.
    assert_eq!(<Vec<PlayerState> as Decode>::MIN_SIZE, 4);
    assert_eq!(
        Vec::<Vec<PlayerState>>::decode(&[3, 0, 0, 0, 0, 0, 0, 0, 0]),
        Err(DecodeError::LengthExceedsRemaining)
    );
    assert_eq!(
        Vec::<Vec<PlayerState>>::decode(&[2, 0, 0, 0, 0, 0, 0, 0, 0]),
        Ok(vec![Vec::new(), Vec::new()])
    );
}

/// A `Box` is transparent for one value, but a run of boxes is not a run of
/// blittable structs: it keeps the varint count, both ways.
#[test]
fn a_run_of_boxed_blittable_structs_has_a_varint_count() {
    let players = samples::world_snapshot(3).players;
    let boxed: Vec<Box<PlayerState>> = players.iter().copied().map(Box::new).collect();
    let bytes = boxed.to_encoded_vec();
    assert_eq!(bytes.len(), 1 + 16 * 3);
    assert_eq!(bytes[0], 3);
    assert_eq!(boxed.encoded_len(), bytes.len());
    assert_eq!(Vec::<Box<PlayerState>>::decode(&bytes), Ok(boxed));
}

#[test]
fn c4_claims_within_limits_but_past_the_input_are_refused() {
    // A 100-byte name with 3 bytes present.
    let err = SpawnEntity::decode(&spawn_with_name_prefix(&[100, b'a', b'b', b'c'])).unwrap_err();
    assert_eq!(err, DecodeError::LengthExceedsRemaining);
    // 1000 players (16 000 bytes) with one present.
    let mut bytes = vec![0, 0, 0, 0];
    bytes.extend_from_slice(&1000u32.to_le_bytes());
    bytes.extend_from_slice(&[0u8; 16]);
    assert_eq!(
        WorldSnapshot::decode(&bytes),
        Err(DecodeError::LengthExceedsRemaining)
    );
    // 50 inventory slots (650 bytes) with 13 present.
    let mut bytes = vec![0, 0, 0, 0, 50];
    bytes.extend_from_slice(&[0u8; 13]);
    assert_eq!(
        Inventory::decode(&bytes),
        Err(DecodeError::LengthExceedsRemaining)
    );
}

#[test]
fn c5_nested_claims_adding_up_past_the_limit_are_refused() {
    // 4 000 empty inner vectors: 4 001 bytes on the wire, but 4 000 × 24 bytes
    // of `Vec` headers in memory. Each claim alone is fine; together they pass
    // the allocation budget.
    let mut bytes = varint(4000);
    bytes.extend(std::iter::repeat_n(0u8, 4000));
    let limits = DecodeLimits {
        max_alloc: 64 * 1024,
        ..DecodeLimits::DEFAULT
    };
    assert!(
        Vec::<Vec<u32>>::decode(&bytes).is_ok(),
        "fits the default budget"
    );
    assert_eq!(
        Vec::<Vec<u32>>::decode_with_limits(&bytes, limits),
        Err(DecodeError::OverLimit)
    );
    // Amplification under the default limits: 60 000 one-byte `None`s stand
    // for 60 000 × 1 032 bytes.
    let mut bytes = varint(60_000);
    bytes.extend(std::iter::repeat_n(0u8, 60_000));
    assert_eq!(
        Vec::<Option<[u64; 128]>>::decode(&bytes),
        Err(DecodeError::OverLimit)
    );
    // Inner vectors that each claim their share of a message limit.
    let mut bytes = varint(3);
    for _ in 0..3 {
        bytes.extend_from_slice(&varint(400));
        bytes.extend(std::iter::repeat_n(7u8, 400));
    }
    let limits = DecodeLimits {
        max_alloc: 1000,
        ..DecodeLimits::DEFAULT
    };
    assert_eq!(
        Vec::<Vec<u8>>::decode_with_limits(&bytes, limits),
        Err(DecodeError::OverLimit)
    );
    assert_eq!(Vec::<Vec<u8>>::decode(&bytes).unwrap().len(), 3);
}

#[test]
fn c6_count_times_element_size_overflow_is_over_limit() {
    let unlimited = DecodeLimits::DANGEROUS_UNLIMITED;
    for count in [u64::MAX / 2, u64::MAX / 8 + 1, u64::MAX] {
        let bytes = varint(count);
        assert_eq!(
            Vec::<u64>::decode_with_limits(&bytes, unlimited),
            Err(DecodeError::OverLimit),
            "count {count}"
        );
        assert_eq!(
            Vec::<[u64; 1024]>::decode_with_limits(&bytes, unlimited),
            Err(DecodeError::OverLimit),
            "count {count}"
        );
    }
}

#[test]
fn c7_bad_varints_are_refused() {
    let eleven = [0xffu8; 11];
    assert_eq!(split_message(&eleven), Err(DecodeError::VarintOverflow));
    assert_eq!(String::decode(&eleven), Err(DecodeError::VarintOverflow));
    assert_eq!(
        u64::decode(&[0xff; 8]),
        Ok(u64::MAX),
        "fixed-width is not a varint"
    );
    assert_eq!(usize::decode(&eleven), Err(DecodeError::VarintOverflow));
    // The continuation bit on the last byte: the varint never ends.
    assert_eq!(split_message(&[0x80]), Err(DecodeError::UnexpectedEnd));
    assert_eq!(
        String::decode(&[0xff, 0xff]),
        Err(DecodeError::UnexpectedEnd)
    );
    assert_eq!(
        GameMessage::decode(&[0x81]),
        Err(DecodeError::UnexpectedEnd)
    );
    // Non-minimal forms, for an id, a length and a count.
    assert_eq!(
        split_message(&[0x80, 0x00]),
        Err(DecodeError::NonCanonicalVarint)
    );
    assert_eq!(
        GameMessage::decode(&[0x81, 0x00]),
        Err(DecodeError::NonCanonicalVarint)
    );
    assert_eq!(
        String::decode(&[0x80, 0x00]),
        Err(DecodeError::NonCanonicalVarint)
    );
    assert_eq!(
        Vec::<u32>::decode(&[0x80, 0x80, 0x00]),
        Err(DecodeError::NonCanonicalVarint)
    );
    // A message id past u32.
    assert_eq!(
        split_message(&[0xff, 0xff, 0xff, 0xff, 0x1f]),
        Err(DecodeError::VarintOverflow)
    );
}

#[test]
fn c8_invalid_utf8_is_refused() {
    let cases: [&[u8]; 5] = [
        &[0xff],             // never valid
        &[0xc0, 0x80],       // overlong NUL
        &[0xed, 0xa0, 0x80], // surrogate U+D800
        &[0xe2, 0x82],       // truncated €
        &[b'o', b'k', 0xfe], // valid, then not
    ];
    for bad in cases {
        let mut prefixed = varint(bad.len() as u64);
        prefixed.extend_from_slice(bad);
        assert_eq!(
            String::decode(&prefixed),
            Err(DecodeError::InvalidUtf8),
            "{bad:x?}"
        );
        assert_eq!(<&str>::decode(&prefixed), Err(DecodeError::InvalidUtf8));
        assert_eq!(Cow::<str>::decode(&prefixed), Err(DecodeError::InvalidUtf8));
        assert_eq!(Box::<str>::decode(&prefixed), Err(DecodeError::InvalidUtf8));
        let spawn = spawn_with_name_prefix(&prefixed);
        assert_eq!(SpawnEntity::decode(&spawn), Err(DecodeError::InvalidUtf8));
        assert_eq!(
            SpawnEntityRef::decode(&spawn),
            Err(DecodeError::InvalidUtf8)
        );
        let mut in_place = samples::spawn_entity();
        assert_eq!(
            in_place.decode_in_place(&spawn),
            Err(DecodeError::InvalidUtf8)
        );
    }
}

#[test]
fn c9_invalid_tags_and_values_are_refused() {
    // Stance: 0..=2 are variants; max+1, 255 and u32::MAX are not.
    for tag in [3u64, 255, u64::from(u32::MAX)] {
        assert_eq!(
            Stance::decode(&varint(tag)),
            Err(DecodeError::InvalidTag),
            "{tag}"
        );
        let mut input = samples::player_input().to_encoded_vec();
        input.pop();
        input.extend_from_slice(&varint(tag));
        assert_eq!(
            PlayerInput::decode(&input),
            Err(DecodeError::InvalidTag),
            "{tag}"
        );
    }
    // Past u32: no variant either (an enum of one-byte tags reads one byte).
    assert_eq!(
        Stance::decode(&varint(u64::from(u32::MAX) + 1)),
        Err(DecodeError::InvalidTag)
    );
    // Button bits that no button uses.
    let mut input = samples::player_input().to_encoded_vec();
    input[5] = 0x40;
    assert_eq!(PlayerInput::decode(&input), Err(DecodeError::InvalidValue));
    // bool: only 0 and 1.
    for byte in 2..=255u8 {
        assert_eq!(
            bool::decode(&[byte]),
            Err(DecodeError::InvalidTag),
            "{byte}"
        );
        assert_eq!(
            Option::<u8>::decode(&[byte, 0]),
            Err(DecodeError::InvalidTag),
            "{byte}"
        );
    }
    assert_eq!(bool::decode(&[1]), Ok(true));
    // NonZero: zero is not a value.
    assert_eq!(NonZeroU16::decode(&[0, 0]), Err(DecodeError::InvalidValue));
    assert_eq!(NonZeroU32::decode(&[0; 4]), Err(DecodeError::InvalidValue));
    assert_eq!(NonZeroU64::decode(&[0; 8]), Err(DecodeError::InvalidValue));
    assert_eq!(
        NonZeroU32::decode(&[1, 0, 0, 0]).map(NonZeroU32::get),
        Ok(1)
    );
    // char: a surrogate and past U+10FFFF.
    assert_eq!(
        char::decode(&0xd800u32.to_le_bytes()),
        Err(DecodeError::InvalidValue)
    );
    assert_eq!(
        char::decode(&0x11_0000u32.to_le_bytes()),
        Err(DecodeError::InvalidValue)
    );
}

/// A recursive type: decoding nests through `Box`, so depth is limited.
#[derive(Debug, PartialEq, Encode, Decode)]
enum Tree {
    #[zao(tag = 0)]
    Leaf(u8),
    #[zao(tag = 1)]
    Node(Box<Tree>, Box<Tree>),
}

/// An `Option` of an exact-size payload is decoded without a branch on its
/// tag: the payload's bytes are decoded whatever the tag. Only a payload that
/// is there may fail the decode: `None` followed by bytes that are no valid
/// payload (a 7 where a `bool` or a `Stance` would be) decodes, `Some` with
/// them does not, a tag past 1 is refused, and at every length, near the end
/// of the input or not, each form decodes as the branching path decodes it.
#[test]
fn c9_option_tags_alone_decide_what_is_read() {
    fn check<T>(payload: &[u8], valid: bool)
    where
        T: for<'de> Decode<'de> + Encode + PartialEq + std::fmt::Debug,
    {
        // `(Option<T>, u8)`: the option, then one byte; `None` then the
        // payload's bytes as the next fields, when they are valid ones.
        let none_then = [&[0u8, payload.len() as u8][..], payload].concat();
        assert_eq!(
            <(Option<T>, Vec<u8>)>::decode(&none_then),
            Ok((None, payload.to_vec())),
            "None, then the payload's bytes as a byte string"
        );
        let some = [&[1u8][..], payload].concat();
        let decoded = Option::<T>::decode(&some);
        if valid {
            let value = decoded.unwrap();
            assert!(value.is_some());
            assert_eq!(value.to_encoded_vec(), some);
        } else {
            assert_eq!(decoded, Err(DecodeError::InvalidTag), "Some(invalid)");
        }
        // A tag of 2 or more, with or without a payload after it.
        for tag in [2u8, 3, 0x80, 0xff] {
            assert_eq!(Option::<T>::decode(&[tag]), Err(DecodeError::InvalidTag));
            let tagged = [&[tag][..], payload].concat();
            assert_eq!(Option::<T>::decode(&tagged), Err(DecodeError::InvalidTag));
        }
        // Every cut of `Some` fails; `None` alone decodes, at the very end.
        for end in 0..some.len() {
            assert!(Option::<T>::decode(&some[..end]).is_err(), "cut at {end}");
        }
        assert_eq!(Option::<T>::decode(&[0]), Ok(None));
        // In place, over both starting states.
        for start in [None, Option::<T>::decode(&some).ok().flatten()] {
            let mut target = start;
            assert_eq!(target.decode_in_place(&none_then[..1]), Ok(()));
            assert!(target.is_none());
            if valid {
                let mut target = Option::<T>::None;
                assert_eq!(target.decode_in_place(&some), Ok(()));
                assert_eq!(target.to_encoded_vec(), some);
            }
        }
    }
    check::<u32>(&[1, 2, 3, 4], true);
    check::<(u16, f32)>(&[9, 8, 0, 0, 128, 63], true);
    check::<bool>(&[1], true);
    check::<bool>(&[7], false);
    check::<Stance>(&[2], true);
    check::<Stance>(&[7], false);
    check::<(u32, Stance)>(&[1, 0, 0, 0, 7], false);
    check::<(u32, Stance)>(&[1, 0, 0, 0, 1], true);
    // `None` followed by bytes that are no valid payload, inside a struct.
    let bytes = [0u8, 7, 7];
    assert_eq!(<(Option<bool>, u8, u8)>::decode(&bytes), Ok((None, 7, 7)));
    assert_eq!(
        <(Option<(u32, Stance)>, [u8; 5])>::decode(&[0, 9, 9, 9, 9, 9]),
        Ok((None, [9; 5]))
    );
}

#[test]
fn c10_nesting_past_the_depth_limit_is_refused_without_stack_overflow() {
    // A left spine a million deep: 0x01 repeated, then nothing.
    let deep = vec![0x01u8; 1_000_000];
    assert_eq!(Tree::decode(&deep), Err(DecodeError::DepthExceeded));
    // Nested vectors, too.
    let deep = vec![0x01u8; 100];
    assert_eq!(
        Vec::<Vec<Vec<Vec<Vec<u8>>>>>::decode_with_limits(
            &deep,
            DecodeLimits {
                max_depth: 3,
                ..DecodeLimits::DEFAULT
            }
        ),
        Err(DecodeError::DepthExceeded)
    );
    // Within the limit a tree round-trips.
    let tree = Tree::Node(
        Box::new(Tree::Leaf(1)),
        Box::new(Tree::Node(Box::new(Tree::Leaf(2)), Box::new(Tree::Leaf(3)))),
    );
    let bytes = tree.to_encoded_vec();
    assert_eq!(bytes, [1, 0, 1, 1, 0, 2, 0, 3]);
    assert_eq!(Tree::decode(&bytes), Ok(tree));
    // Exactly at the limit decodes, one past does not.
    let limits = DecodeLimits {
        max_depth: 4,
        ..DecodeLimits::DEFAULT
    };
    let mut at_limit = vec![1u8; 4];
    at_limit.extend_from_slice(&[0, 9, 0, 9, 0, 9, 0, 9, 0, 9]);
    assert!(Tree::decode_with_limits(&at_limit, limits).is_ok());
    let mut past = vec![1u8; 5];
    past.extend_from_slice(&[0, 9, 0, 9, 0, 9, 0, 9, 0, 9, 0, 9]);
    assert_eq!(
        Tree::decode_with_limits(&past, limits),
        Err(DecodeError::DepthExceeded)
    );
}

#[test]
fn c11_trailing_bytes_are_refused() {
    for (name, file) in golden_files() {
        let mut longer = file.clone();
        longer.push(0);
        assert_eq!(
            GameMessage::decode(&longer),
            Err(DecodeError::TrailingBytes),
            "{name}"
        );
    }
    let mut moved = samples::player_moved().to_encoded_vec();
    moved.push(0xaa);
    assert_eq!(PlayerMoved::decode(&moved), Err(DecodeError::TrailingBytes));
    let mut in_place = PlayerMoved::default();
    assert_eq!(
        in_place.decode_in_place(&moved),
        Err(DecodeError::TrailingBytes)
    );
    // decode_prefix hands the rest back instead.
    let (value, rest) = PlayerMoved::decode_prefix(&moved).unwrap();
    assert_eq!((value, rest), (samples::player_moved(), &[0xaa][..]));
}

/// Exact-size messages take a one-compare path when the length is right;
/// every wrong length must still get the error the general path gives, in
/// its order: the size limit first, then the fields' own errors, then the
/// missing or trailing bytes.
#[test]
fn c11_exact_size_messages_keep_the_general_errors_at_every_length() {
    let input = samples::player_input().to_encoded_vec();
    let mut bad_stance = input.clone();
    *bad_stance.last_mut().unwrap() = 9;
    let small = DecodeLimits {
        max_message: input.len() - 1,
        ..DecodeLimits::DEFAULT
    };
    for len in 0..=input.len() + 2 {
        let mut bytes = input.clone();
        bytes.resize(len, 0);
        let expected = match len.cmp(&input.len()) {
            core::cmp::Ordering::Less => Err(DecodeError::UnexpectedEnd),
            core::cmp::Ordering::Equal => Ok(samples::player_input()),
            core::cmp::Ordering::Greater => Err(DecodeError::TrailingBytes),
        };
        assert_eq!(PlayerInput::decode(&bytes), expected, "{len}");
        let mut in_place = PlayerInput::default();
        assert_eq!(
            in_place.decode_in_place(&bytes).map(|()| in_place),
            expected,
            "{len}"
        );
        // A field's error comes before the trailing bytes.
        if len >= input.len() {
            let mut stance_bytes = bad_stance.clone();
            stance_bytes.resize(len, 0);
            assert_eq!(
                PlayerInput::decode(&stance_bytes),
                Err(DecodeError::InvalidTag),
                "{len}"
            );
        }
        // The size limit comes before everything, the right length included.
        let over = if len > small.max_message {
            Err(DecodeError::MessageTooLarge)
        } else {
            Err(DecodeError::UnexpectedEnd)
        };
        assert_eq!(
            PlayerInput::decode_with_limits(&bytes, small),
            over,
            "{len}"
        );
        assert_eq!(
            in_place.decode_in_place_with_limits(&bytes, small),
            over.map(|_: PlayerInput| ()),
            "{len}"
        );
    }
}

#[test]
fn c12_floats_round_trip_bit_exact() {
    let specials = [
        f32::NAN,
        f32::from_bits(0x7fc0_1234), // quiet NaN with payload
        f32::from_bits(0x7f80_0001), // signalling NaN
        f32::from_bits(0xffc0_0000), // negative NaN
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.0,
        0.0,
        f32::from_bits(1), // smallest subnormal
        f32::from_bits(0x007f_ffff),
        f32::MIN_POSITIVE,
        f32::MAX,
    ];
    for x in specials {
        let bytes = x.to_encoded_vec();
        assert_eq!(bytes, x.to_bits().to_le_bytes());
        assert_eq!(f32::decode(&bytes).unwrap().to_bits(), x.to_bits());
        let moved = PlayerMoved {
            entity: 1,
            position: glam::Vec3::new(x, -x, x),
        };
        let back = PlayerMoved::decode(&moved.to_encoded_vec()).unwrap();
        assert_eq!(back.position.x.to_bits(), x.to_bits());
        assert_eq!(back.position.y.to_bits(), (-x).to_bits());
        let run = vec![x; 5];
        let back = Vec::<f32>::decode(&run.to_encoded_vec()).unwrap();
        assert!(back.iter().all(|y| y.to_bits() == x.to_bits()));
    }
    for bits in [
        f64::NAN.to_bits() | 0xbeef,
        (-0.0f64).to_bits(),
        1,
        f64::INFINITY.to_bits(),
    ] {
        let x = f64::from_bits(bits);
        assert_eq!(f64::decode(&x.to_encoded_vec()).unwrap().to_bits(), bits);
    }
}

#[test]
fn c13_duplicate_map_keys_are_refused() {
    // Inventory with slot 4 twice.
    let mut bytes = vec![9, 0, 0, 0, 2];
    for _ in 0..2 {
        bytes.extend_from_slice(&4u32.to_le_bytes());
        bytes.extend_from_slice(&[1, 0, 0, 0, 1, 0, 1, 0, 0]);
    }
    assert_eq!(Inventory::decode(&bytes), Err(DecodeError::DuplicateKey));
    let mut warm = samples::inventory(8);
    assert_eq!(warm.decode_in_place(&bytes), Err(DecodeError::DuplicateKey));
    // The same pairs as a HashMap and a BTreeMap.
    let dup = [2u8, 5, 1, 5, 2];
    assert_eq!(
        HashMap::<u8, u8>::decode(&dup),
        Err(DecodeError::DuplicateKey)
    );
    assert_eq!(
        BTreeMap::<u8, u8>::decode(&dup),
        Err(DecodeError::DuplicateKey)
    );
    // A BTreeMap must arrive in ascending order (its one canonical form);
    // a HashMap may arrive in any order.
    let descending = [2u8, 6, 1, 5, 2];
    assert_eq!(
        BTreeMap::<u8, u8>::decode(&descending),
        Err(DecodeError::DuplicateKey)
    );
    assert_eq!(
        HashMap::<u8, u8>::decode(&descending).map(|m| m.len()),
        Ok(2)
    );
    let ascending = [2u8, 5, 2, 6, 1];
    assert_eq!(
        BTreeMap::<u8, u8>::decode(&ascending)
            .unwrap()
            .to_encoded_vec(),
        ascending
    );
}

/// A map of fixed-size entries is inserted in a spread order (halves
/// alternating), but the error reported is still the first one in wire
/// order: a repeated key before an invalid bool is `DuplicateKey`, an
/// invalid bool at or before a repeated key is `InvalidTag`, wherever the
/// two lie in the run.
#[test]
fn c13_map_errors_come_in_wire_order() {
    for count in 2..=12u8 {
        for first in 0..count {
            for second in 0..count {
                if first == second {
                    continue;
                }
                // Entries (key, bool): distinct keys, valid bools; then one
                // entry repeats key 0 (or entry 0 repeats key 1) and one
                // carries the bool 2.
                let mut entries: Vec<[u8; 2]> = (0..count).map(|k| [k, k % 2]).collect();
                let dup = if first == 0 { 1 } else { 0 };
                entries[usize::from(first)][0] = dup;
                entries[usize::from(second)][1] = 2;
                let mut bytes = vec![count];
                bytes.extend(entries.iter().flatten());
                // The repeat is met at the later of the two entries.
                let dup_at = if first == 0 { 1 } else { usize::from(first) };
                let expected = if dup_at < usize::from(second) {
                    DecodeError::DuplicateKey
                } else {
                    DecodeError::InvalidTag
                };
                assert_eq!(
                    HashMap::<u8, bool>::decode(&bytes),
                    Err(expected),
                    "{count} entries, repeat at {dup_at}, bad bool at {second}"
                );
                let mut warmed: HashMap<u8, bool> = (0..40).map(|k| (k, true)).collect();
                assert_eq!(
                    warmed.decode_in_place(&bytes),
                    Err(expected),
                    "in place: {count} entries, repeat at {dup_at}, bad bool at {second}"
                );
            }
        }
    }
}

#[test]
fn c14_unknown_message_ids_are_reported() {
    for id in [0u64, 6, 127, 128, 300, u64::from(u32::MAX)] {
        let mut bytes = varint(id);
        bytes.extend_from_slice(&samples::player_moved().to_encoded_vec());
        assert_eq!(
            GameMessage::decode(&bytes),
            Err(DecodeError::UnknownMessage(id as u32)),
            "id {id}"
        );
    }
    // Asking for one message and finding another.
    let mut buf = [0u8; 32];
    let n = zao::encode_message(&samples::player_input(), &mut buf).unwrap();
    assert_eq!(
        decode_message::<PlayerMoved>(&buf[..n]),
        Err(DecodeError::UnexpectedMessage {
            expected: PlayerMoved::ID,
            found: PlayerInput::ID
        })
    );
}

fn assert_too_small<T: Encode>(value: &T) {
    let len = value.encoded_len();
    let mut buf = vec![0x55u8; len - 1];
    assert_eq!(
        value.encode(&mut buf),
        Err(EncodeError {
            needed: len,
            available: len - 1
        })
    );
    let mut exact = vec![0u8; len];
    assert_eq!(value.encode(&mut exact), Ok(len));
    // Behind a message already written, a value that does not fit counts
    // nothing as written: the position stays, the earlier bytes are kept,
    // and the next value that fits goes right after them.
    let first = samples::player_moved();
    let mut buf = vec![0u8; 16 + len - 1];
    let mut w = Writer::new(&mut buf);
    assert_eq!(w.encode(&first), Ok(16));
    assert_eq!(
        w.encode(value),
        Err(EncodeError {
            needed: len,
            available: len - 1
        })
    );
    assert_eq!(w.position(), 16);
    assert_eq!(w.encode(&0xabu8), Ok(1));
    assert_eq!(w.position(), 17);
    assert_eq!(&buf[..16], first.as_bytes());
    assert_eq!(buf[16], 0xab);
}

#[test]
fn c15_encoding_into_a_short_buffer_reports_sizes() {
    assert_too_small(&samples::player_moved());
    assert_too_small(&samples::player_input());
    assert_too_small(&samples::spawn_entity());
    assert_too_small(&samples::world_snapshot(32));
    assert_too_small(&samples::world_snapshot(1024));
    assert_too_small(&samples::inventory(128));
    let mut buf = [0u8; 16];
    assert_eq!(
        zao::encode_message(&samples::player_moved(), &mut buf),
        Err(EncodeError {
            needed: 17,
            available: 16
        })
    );
    assert_eq!(
        samples::player_moved().encode(&mut []),
        Err(EncodeError {
            needed: 16,
            available: 0
        })
    );
    // Not even the id fits: the size is the id's and the body's.
    let spawn = samples::spawn_entity();
    assert_eq!(
        zao::encode_message(&spawn, &mut []),
        Err(EncodeError {
            needed: zao::message_len(&spawn),
            available: 0
        })
    );
}

/// Writes `wrote` bytes whatever it promised: `FIXED_SIZE` (when `fixed`)
/// and `encoded_len` both say `promised`.
struct Liar<const FIXED: bool> {
    promised: usize,
    wrote: usize,
}

impl<const FIXED: bool> Encode for Liar<FIXED> {
    const FIXED_SIZE: Option<usize> = if FIXED { Some(2) } else { None };

    fn encoded_len(&self) -> usize {
        self.promised
    }

    fn encode_to<W: zao::Sink>(&self, w: &mut W) {
        for _ in 0..self.wrote {
            w.put_u8(0xee);
        }
    }
}

/// Promises `promised` bytes and writes its players as a counted run: a
/// `Vec` of blittable values wider than 8 bytes, whose count takes the
/// growable forms' one-check path with the run: `Sink::put_counted32` for
/// blittable structs (a 4-byte count), `Sink::put_counted` for glam values
/// (a varint count under 128).
struct RunLiar<T> {
    promised: usize,
    players: Vec<T>,
}

impl<T: Encode> Encode for RunLiar<T> {
    fn encoded_len(&self) -> usize {
        self.promised
    }

    fn encode_to<W: zao::Sink>(&self, w: &mut W) {
        self.players.encode_to(w);
    }
}

#[test]
fn a_counted_run_past_the_promised_room_is_refused_by_the_growable_forms() {
    let players = samples::world_snapshot(32).players;
    counted_run_is_refused_past_its_promise(players, &32u32.to_le_bytes());
    let vectors: Vec<glam::Vec3> = (0..32).map(|i| glam::Vec3::splat(i as f32)).collect();
    counted_run_is_refused_past_its_promise(vectors, &[32]);
}

fn counted_run_is_refused_past_its_promise<T: Encode + IntoBytes + Immutable + Clone>(
    players: Vec<T>,
    count: &[u8],
) {
    let liar = RunLiar {
        promised: 2,
        players: players.clone(),
    };
    let mut vec = vec![1u8];
    assert_eq!(liar.encode_to_vec(&mut vec), 0);
    assert_eq!(vec, [1]);
    assert!(liar.to_encoded_vec().is_empty());
    let mut bytes = bytes::BytesMut::from(&[1u8][..]);
    assert_eq!(liar.encode_to_bytes(&mut bytes), 0);
    assert_eq!(&bytes[..], [1]);
    // Kept to its promise, the same run is appended whole, count first.
    let honest = RunLiar {
        promised: players.encoded_len(),
        players,
    };
    let mut want = count.to_vec();
    want.extend_from_slice(honest.players.as_bytes());
    assert_eq!(honest.to_encoded_vec(), want);
    vec.truncate(1);
    assert_eq!(honest.encode_to_vec(&mut vec), want.len());
    assert_eq!(vec[1..], want);
    bytes.truncate(1);
    assert_eq!(honest.encode_to_bytes(&mut bytes), want.len());
    assert_eq!(bytes[1..], want);
}

#[test]
fn an_impl_that_breaks_its_size_is_refused_without_a_panic() {
    let fixed = |wrote| Liar::<true> { promised: 2, wrote };
    let var = |promised, wrote| Liar::<false> { promised, wrote };
    let mut buf = [0u8; 8];
    // More than the window or the buffer holds: refused with a size above
    // what was there.
    for wrote in [1, 3, 9] {
        let err = fixed(wrote).encode(&mut buf).unwrap_err();
        assert!(err.needed > err.available, "{wrote}: {err:?}");
    }
    assert_eq!(
        var(4, 9).encode(&mut buf),
        Err(EncodeError {
            needed: 9,
            available: 8
        })
    );
    // A writer behind a refused value keeps its position for the next.
    let mut w = Writer::new(&mut buf);
    assert_eq!(w.encode(&7u16), Ok(2));
    assert!(w.encode(&fixed(3)).is_err());
    assert!(w.encode(&var(1, 7)).is_err());
    assert_eq!(w.position(), 2);
    assert_eq!(w.encode(&9u16), Ok(2));
    assert_eq!(&buf[..4], &[7, 0, 9, 0]);
    // The growable forms reserve the promise and never grow for it: a value
    // that writes past the room is refused whole, and so is a fixed-size
    // value that breaks its window. Within the room they take what the impl
    // writes, as a slice does.
    let mut vec = vec![1u8];
    assert_eq!(var(2, 4096).encode_to_vec(&mut vec), 0);
    assert_eq!(fixed(3).encode_to_vec(&mut vec), 0);
    assert_eq!(fixed(1).encode_to_vec(&mut vec), 0);
    assert_eq!(vec, [1]);
    assert!(var(2, 4096).to_encoded_vec().is_empty());
    assert!(fixed(3).to_encoded_vec().is_empty());
    assert_eq!(var(2, 2).encode_to_vec(&mut vec), 2);
    assert_eq!(vec, [1, 0xee, 0xee]);
    assert_eq!(var(4, 1).encode_to_vec(&mut vec), 1);
    assert_eq!(vec, [1, 0xee, 0xee, 0xee]);
    assert_eq!(var(4, 1).to_encoded_vec(), [0xee]);
    // A type whose size is a walk (a Vec of values of varying size) is
    // appended with no size pass, so there is no promise to hold it to: it
    // writes what `encode` writes into a slice, as a slice has no promise
    // either. A fixed-size part that breaks its window still refuses the
    // whole value.
    let liars = vec![var(1, 3), var(0, 2)];
    let mut slice = [0u8; 16];
    assert_eq!(liars.encode(&mut slice), Ok(6));
    vec.truncate(1);
    assert_eq!(liars.encode_to_vec(&mut vec), 6);
    assert_eq!(vec[1..], slice[..6]);
    assert_eq!(liars.to_encoded_vec(), slice[..6]);
    let windows = vec![FixedLiarRun {
        head: fixed(3),
        tail: 7,
        name: String::from("x"),
    }];
    assert!(windows.encode(&mut slice).is_err());
    vec.truncate(1);
    assert_eq!(windows.encode_to_vec(&mut vec), 0);
    assert_eq!(vec, [1]);
    assert!(windows.to_encoded_vec().is_empty());
}

/// A fixed-size liar at the head of a run of fixed-size fields (one window),
/// then a field of varying size.
#[derive(Encode)]
struct FixedLiarRun {
    head: Liar<true>,
    tail: u16,
    name: String,
}

impl zao::Schema for Liar<true> {
    const SHAPE: zao::wire::schema::Shape = zao::wire::schema::Shape::Bytes;
}

/// A lying field ahead of a run of fixed-size fields, which the derive
/// writes through one window.
#[derive(Encode)]
struct LiarFirst {
    head: Liar<false>,
    a: u32,
    b: u16,
}

impl zao::Schema for Liar<false> {
    const SHAPE: zao::wire::schema::Shape = zao::wire::schema::Shape::Bytes;
}

#[test]
fn a_window_past_the_reservation_refuses_the_whole_value() {
    // The head promises no bytes and writes all but 5 of the buffer's room,
    // so the 6-byte window after it no longer fits: the window refuses, and
    // so does the whole encode, leaving the buffer as it was. (Whether the
    // window wrote before refusing cannot be seen from safe code; the
    // up-front check is there for speed.) The room is what the buffer has
    // past its end: the 6 bytes promised are reserved, and a buffer with
    // that much spare capacity is not grown.
    let liar = |wrote| LiarFirst {
        head: Liar { promised: 0, wrote },
        a: 7,
        b: 9,
    };
    let mut vec = Vec::with_capacity(16);
    vec.extend_from_slice(&[1u8, 2]);
    let room = vec.capacity() - vec.len();
    assert_eq!(liar(room - 5).encode_to_vec(&mut vec), 0);
    assert_eq!(vec, [1, 2]);
    let mut bytes = bytes::BytesMut::with_capacity(16);
    bytes.extend_from_slice(&[5u8]);
    let room = bytes.capacity() - bytes.len();
    assert_eq!(liar(room - 5).encode_to_bytes(&mut bytes), 0);
    assert_eq!(&bytes[..], [5]);
    // `to_vec` allocates the 6 bytes and 17 for a short copy's zeroed chunk.
    assert!(liar(18).to_encoded_vec().is_empty());
    // One byte less and the window fits: within the room, the encoding is
    // what the value wrote, as in a slice.
    assert_eq!(liar(17).to_encoded_vec().len(), 23);
    let mut slice = [0u8; 23];
    assert_eq!(liar(17).encode(&mut slice), Ok(23));
    assert_eq!(liar(17).to_encoded_vec(), slice);
    // An honest head: the same window fits and is written.
    let honest = LiarFirst {
        head: Liar {
            promised: 1,
            wrote: 1,
        },
        a: 7,
        b: 9,
    };
    assert_eq!(honest.to_encoded_vec(), [0xee, 7, 0, 0, 0, 9, 0]);
}

#[test]
fn bool_runs_take_only_zero_and_one() {
    let flags = vec![true, false, false, true, true];
    let bytes = flags.to_encoded_vec();
    assert_eq!(bytes, [5, 1, 0, 0, 1, 1]);
    assert_eq!(Vec::<bool>::decode(&bytes), Ok(flags.clone()));
    let array = [false, true, true];
    assert_eq!(<[bool; 3]>::decode(&array.to_encoded_vec()), Ok(array));
    // A warmed vector is refilled in place, keeping its allocation.
    let mut warm = vec![false; 8];
    let held = warm.as_ptr();
    assert_eq!(warm.decode_in_place(&bytes), Ok(()));
    assert_eq!((warm.as_slice(), warm.as_ptr()), (flags.as_slice(), held));
    // Any byte but 0 or 1, anywhere in the run, is a bad tag for every form.
    for at in 1..bytes.len() {
        let mut bad = bytes.clone();
        bad[at] = 2;
        assert_eq!(Vec::<bool>::decode(&bad), Err(DecodeError::InvalidTag));
        assert_eq!(
            warm.decode_in_place(&bad),
            Err(DecodeError::InvalidTag),
            "{at}"
        );
        assert_eq!(<[bool; 5]>::decode(&bad[1..]), Err(DecodeError::InvalidTag));
    }
    assert_eq!(
        Vec::<bool>::decode(&[3, 1, 0]),
        Err(DecodeError::LengthExceedsRemaining)
    );
}

#[test]
fn c16_random_bytes_never_panic() {
    let mut rng = Rng::new(16);
    let mut decoded_ok = 0usize;
    for seed in 0..64u64 {
        let mut rng_seed = Rng::new(seed);
        let bytes = rng_seed.bytes(64 * 1024);
        // Whole buffer, and many short windows (short inputs get further).
        let _ = decode_every_body(&bytes);
        let _ = GameMessage::decode(&bytes);
        for _ in 0..2_000 {
            let start = rng.below(bytes.len());
            let len = rng.below(64).min(bytes.len() - start);
            let window = &bytes[start..start + len];
            decoded_ok += decode_every_body(window)
                .iter()
                .filter(|r| r.is_ok())
                .count();
            let _ = GameMessage::decode(window);
        }
    }
    // Mutations of valid messages reach the deeper checks.
    for (name, file) in golden_files() {
        for round in 0..5_000 {
            let mut bytes = file.clone();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(bytes.len());
                match rng.below(4) {
                    0 => bytes[at] ^= 1 << rng.below(8),
                    1 => bytes[at] = rng.u8(),
                    2 => bytes.insert(at, rng.u8()),
                    _ => {
                        bytes.remove(at);
                        if bytes.is_empty() {
                            break;
                        }
                    }
                }
            }
            if let Ok(msg) = GameMessage::decode(&bytes) {
                decoded_ok += 1;
                // Whatever decodes re-encodes to a message of the same size.
                assert_eq!(msg.encoded_len(), bytes.len(), "{name} round {round}");
            }
        }
    }
    assert!(
        decoded_ok > 0,
        "some inputs should decode: the test reaches past the first check"
    );
}

/// A message whose hand-written `Encode` promises more or fewer bytes than
/// it writes.
struct LyingMessage(Liar<false>);

impl Encode for LyingMessage {
    fn encoded_len(&self) -> usize {
        self.0.encoded_len()
    }

    fn encode_to<W: zao::Sink>(&self, w: &mut W) {
        self.0.encode_to(w);
    }
}

impl zao::Schema for LyingMessage {
    const SHAPE: zao::wire::schema::Shape = <u32 as zao::Schema>::SHAPE;
}

impl zao::NetMessage for LyingMessage {
    const ID: u32 = 77;
    const NAME: &'static str = "LyingMessage";
}

#[test]
fn a_message_whose_encoded_len_lies_is_an_error_never_a_padded_frame() {
    use zao::proto::{Outgoing, SendError};
    for (promised, wrote) in [(8, 3), (3, 8), (0, 1), (1, 0)] {
        let liar = LyingMessage(Liar { promised, wrote });
        let mut buf = bytes::BytesMut::new();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Outgoing::encode(&liar, &mut buf)
        }));
        let debug = cfg!(debug_assertions);
        match result {
            // Debug builds stop at the bug's source.
            Err(_) => assert!(debug, "panicked in a release build"),
            Ok(result) => {
                assert!(!debug, "no debug assertion fired");
                // Past the promised room the writer stops, so `written`
                // is what it had when it found out, not always all of it.
                match result {
                    Err(SendError::BadEncodedLen {
                        id: 77,
                        promised: p,
                        written,
                    }) => assert!(p == promised && written != promised),
                    other => panic!("{other:?}"),
                }
            }
        }
    }
    // An honest one frames as before.
    let honest = LyingMessage(Liar {
        promised: 4,
        wrote: 4,
    });
    let out = Outgoing::encode(&honest, &mut bytes::BytesMut::new()).unwrap();
    assert_eq!(&out.frame()[..], &[5, 77, 0xee, 0xee, 0xee, 0xee]);
}
