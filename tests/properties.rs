//! Seeded properties of the codec over random reference messages:
//! - `decode(encode(x)) == x` (bit-exact for floats);
//! - `encoded_len(x)` is what `encode` writes;
//! - canonical: if `decode(b)` is `Ok(x)` then `encode(x) == b` (maps with
//!   two or more `HashMap` entries aside: their order is the map's own);
//! - every strict prefix of an encoding fails;
//! - `decode_in_place` gives what `decode` gives, whatever the target held.

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::fmt::Debug;

use common::Rng;
use zao::{Decode, DecodeError, Encode, Writer};
use zao_messages::{
    GameMessage, Inventory, PlayerInput, PlayerMoved, SpawnEntityRef, WorldSnapshot,
};

const CASES: u64 = 300;

/// Checks every property for one value. Equality is on the encoding, which
/// compares floats bit by bit (NaN included) where `PartialEq` would not.
fn check<T>(value: &T, previous: &T, seed: u64)
where
    T: Encode + for<'de> Decode<'de> + Clone + Debug,
{
    let len = value.encoded_len();
    let mut buf = vec![0u8; len + 8];
    let written = value.encode(&mut buf).unwrap();
    assert_eq!(written, len, "seed {seed}: encoded_len");
    let bytes = &buf[..len];

    let decoded = T::decode(bytes).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    assert_eq!(decoded.to_encoded_vec(), bytes, "seed {seed}: round trip");

    let mut in_place = previous.clone();
    in_place.decode_in_place(bytes).unwrap();
    assert_eq!(
        in_place.to_encoded_vec(),
        bytes,
        "seed {seed}: decode_in_place"
    );

    // Prefixes: every one fails. Checking them all is quadratic, so large
    // values check the short ones and a sample of the rest.
    let ends: Vec<usize> = if len <= 256 {
        (0..len).collect()
    } else {
        (0..64)
            .chain((0..64).map(|i| len - 1 - i * (len / 64).max(1) % len))
            .collect()
    };
    for end in ends {
        assert!(
            T::decode(&bytes[..end]).is_err(),
            "seed {seed}: prefix {end} of {len}"
        );
    }
}

#[test]
fn player_moved() {
    for seed in 0..CASES {
        let mut rng = Rng::new(seed);
        let (a, b) = (rng.player_moved(false), rng.player_moved(false));
        check(&a, &b, seed);
    }
}

#[test]
fn player_input() {
    for seed in 0..CASES {
        let mut rng = Rng::new(seed);
        let (a, b) = (rng.player_input(false), rng.player_input(false));
        check(&a, &b, seed);
    }
}

#[test]
fn spawn_entity() {
    for seed in 0..CASES {
        let mut rng = Rng::new(seed);
        let (a, b) = (rng.spawn_entity(false), rng.spawn_entity(false));
        check(&a, &b, seed);
        // The borrowed twin reads the same bytes to the same value.
        let bytes = a.to_encoded_vec();
        let borrowed = SpawnEntityRef::decode(&bytes).unwrap();
        assert_eq!(borrowed.to_owned().to_encoded_vec(), bytes, "seed {seed}");
        assert_eq!(borrowed.to_encoded_vec(), bytes, "seed {seed}");
    }
}

#[test]
fn world_snapshot() {
    for seed in 0..CASES {
        let mut rng = Rng::new(seed);
        let (a, b) = (rng.world_snapshot(false), rng.world_snapshot(false));
        check(&a, &b, seed);
    }
}

#[test]
fn inventory() {
    for seed in 0..CASES {
        let mut rng = Rng::new(seed);
        let (a, b) = (rng.inventory(), rng.inventory());
        // HashMap order is the map's own: compare values, not bytes.
        let bytes = a.to_encoded_vec();
        assert_eq!(bytes.len(), a.encoded_len(), "seed {seed}");
        assert_eq!(Inventory::decode(&bytes).unwrap(), a, "seed {seed}");
        let mut in_place = b.clone();
        in_place.decode_in_place(&bytes).unwrap();
        assert_eq!(in_place, a, "seed {seed}");
        for end in 0..bytes.len().min(300) {
            assert!(
                Inventory::decode(&bytes[..end]).is_err(),
                "seed {seed}: prefix {end}"
            );
        }
    }
}

/// Canonical encoding: mutate valid messages at random; whatever still
/// decodes must re-encode to exactly the bytes it came from.
#[test]
fn whatever_decodes_re_encodes_to_the_same_bytes() {
    let mut accepted = 0;
    for seed in 0..CASES * 10 {
        let mut rng = Rng::new(seed);
        let msg = match rng.below(5) {
            0 => GameMessage::PlayerMoved(rng.player_moved(false)),
            1 => GameMessage::PlayerInput(rng.player_input(false)),
            2 => GameMessage::SpawnEntity(rng.spawn_entity(false)),
            3 => GameMessage::WorldSnapshot(rng.world_snapshot(false)),
            _ => {
                let mut inventory = rng.inventory();
                // One slot at most, so the byte order is fixed.
                let keep = inventory.slots.keys().next().copied();
                inventory.slots.retain(|k, _| Some(*k) == keep);
                GameMessage::Inventory(inventory)
            }
        };
        let mut bytes = vec![0u8; msg.encoded_len()];
        msg.encode(&mut bytes).unwrap();
        for _ in 0..=rng.below(3) {
            let at = rng.below(bytes.len());
            bytes[at] = rng.u8();
        }
        if let Ok(decoded) = GameMessage::decode(&bytes) {
            accepted += 1;
            let mut again = vec![0u8; decoded.encoded_len()];
            decoded.encode(&mut again).unwrap();
            assert_eq!(again, bytes, "seed {seed}");
        }
    }
    assert!(
        accepted > CASES,
        "mutations mostly keep messages decodable: {accepted}"
    );
}

/// Several messages share one buffer: a writer appends them, a reader takes
/// them back in order and hands over the rest.
#[test]
fn several_messages_share_one_buffer() {
    for seed in 0..CASES {
        let mut rng = Rng::new(seed);
        let moved = rng.player_moved(true);
        let spawn = rng.spawn_entity(true);
        let snapshot = rng.world_snapshot(true);
        let mut buf = vec![0u8; 32 * 1024];
        let mut w = zao::Writer::new(&mut buf);
        w.encode(&moved).unwrap();
        w.encode(&spawn).unwrap();
        w.encode(&snapshot).unwrap();
        w.put_u8(0xee);
        let n = w.position();
        let mut r = zao::Reader::new(&buf[..n]);
        assert_eq!(r.decode::<PlayerMoved>().unwrap(), moved);
        assert_eq!(r.decode::<SpawnEntityRef<'_>>().unwrap().to_owned(), spawn);
        assert_eq!(r.decode::<WorldSnapshot>().unwrap(), snapshot);
        assert_eq!(r.rest(), [0xee]);
        // PlayerInput and friends via decode_prefix.
        let input = rng.player_input(true);
        let mut bytes = input.to_encoded_vec();
        bytes.extend_from_slice(&moved.to_encoded_vec());
        let (first, rest) = PlayerInput::decode_prefix(&bytes).unwrap();
        assert_eq!(first, input);
        assert_eq!(PlayerMoved::decode(rest).unwrap(), moved);
    }
}

/// `encode_to_vec` appends and reuses capacity; `encode_to_bytes` appends
/// to a `BytesMut`; both give the same bytes as `encode`.
#[test]
fn vec_and_bytes_paths_match_the_slice_path() {
    let mut vec = Vec::new();
    let mut bytes = bytes::BytesMut::new();
    for seed in 0..CASES {
        let mut rng = Rng::new(seed);
        let spawn = rng.spawn_entity(false);
        let expected = {
            let mut buf = vec![0u8; spawn.encoded_len()];
            spawn.encode(&mut buf).unwrap();
            buf
        };
        vec.clear();
        vec.push(0xab);
        assert_eq!(spawn.encode_to_vec(&mut vec), expected.len());
        assert_eq!(vec[0], 0xab);
        assert_eq!(vec[1..], expected[..], "seed {seed}");
        bytes.clear();
        assert_eq!(spawn.encode_to_bytes(&mut bytes), expected.len());
        assert_eq!(bytes[..], expected[..], "seed {seed}");
        assert_eq!(spawn.to_encoded_vec(), expected);
    }
}

/// Short byte strings take their own path into a growable buffer (16 bytes
/// appended, then cut back): every length around it, at every distance from
/// the end of what was reserved, writes what the slice path writes.
#[test]
fn short_byte_strings_append_exactly_their_bytes() {
    fn slice_path(value: &impl Encode) -> Vec<u8> {
        let mut buf = vec![0u8; value.encoded_len()];
        assert_eq!(value.encode(&mut buf), Ok(buf.len()));
        buf
    }
    let mut rng = Rng::new(77);
    for len in 0..=40usize {
        let label = rng.bytes(len);
        // The string last (no room after it in `to_vec`) and followed by more.
        let value = (label.clone(), 0x1122_3344u32);
        assert_eq!(label.to_encoded_vec(), slice_path(&label), "len {len}");
        assert_eq!(value.to_encoded_vec(), slice_path(&value), "len {len}");
        for spare in [0usize, 1, 15, 16, 17, 64] {
            let mut vec = Vec::with_capacity(3 + label.encoded_len() + spare);
            vec.extend_from_slice(&[9, 9, 9]);
            assert_eq!(label.encode_to_vec(&mut vec), label.encoded_len());
            assert_eq!(vec[..3], [9, 9, 9]);
            assert_eq!(vec[3..], slice_path(&label), "len {len}, spare {spare}");
            let mut bytes = bytes::BytesMut::with_capacity(1 + value.encoded_len() + spare);
            bytes.extend_from_slice(&[7]);
            assert_eq!(value.encode_to_bytes(&mut bytes), value.encoded_len());
            assert_eq!(bytes[1..], slice_path(&value), "len {len}, spare {spare}");
        }
    }
}

/// A string or byte string into a caller's buffer takes one check for its
/// length and bytes when the length fits one byte: at every length around
/// that path's end (128) and at every buffer size up to what it needs, it
/// writes what a length then a slice write, fails exactly when the buffer is
/// short, and leaves the writer where it was.
#[test]
fn length_prefixed_writes_fit_exactly_their_bytes() {
    let mut rng = Rng::new(91);
    for len in (0..=20usize).chain(120..=136).chain([300, 20_000]) {
        let label = rng.bytes(len);
        let text: String = label.iter().map(|&b| char::from(b'a' + b % 26)).collect();
        let bytes = bytes::Bytes::from(label.clone());
        // The reference: the length through the general varint write.
        let mut prefix = [0u8; 4];
        let mut w = Writer::new(&mut prefix);
        w.put_len(len);
        let p = w.position();
        // Both types that write through `put_prefixed`.
        type Put<'a> = &'a dyn Fn(&mut Writer<'_>) -> Result<usize, zao::EncodeError>;
        let cases: [(&[u8], &str, Put<'_>); 2] = [
            (&bytes, "Bytes", &|w| w.encode(&bytes)),
            (text.as_bytes(), "str", &|w| w.encode(text.as_str())),
        ];
        for (body, what, put) in cases {
            let mut want = prefix[..p].to_vec();
            want.extend_from_slice(body);
            let sizes: Vec<usize> = if len > 200 {
                vec![0, 1, p, want.len() - 1, want.len(), want.len() + 1]
            } else {
                (0..=want.len() + 2).collect()
            };
            for size in sizes {
                let mut buf = vec![0xeeu8; 3 + size];
                let mut w = Writer::new(&mut buf);
                assert_eq!(w.encode(&[1u8, 2, 3]), Ok(3));
                let got = put(&mut w);
                if size < want.len() {
                    assert!(got.is_err(), "{what} len {len} into {size}");
                    assert_eq!(w.position(), 3, "{what} len {len} into {size}");
                } else {
                    assert_eq!(got, Ok(want.len()), "{what} len {len} into {size}");
                    assert_eq!(w.position(), 3 + want.len());
                    assert_eq!(buf[3..3 + want.len()], want[..], "{what} len {len}");
                }
                assert_eq!(buf[..3], [1, 2, 3]);
            }
        }
    }
}

/// Inside a run of values (the elements of a `Vec` of structs, a map's
/// entries) short slices are copied with no branch on their length, up to 8
/// bytes past them overwritten: at every length from 0 to 20, at the end of
/// the buffer and short of it, into a caller's buffer and into growable
/// ones, the run writes what its elements write one by one outside a run,
/// and fails exactly when the buffer is short.
#[test]
fn short_slices_in_a_run_write_what_they_write_alone() {
    type Element = (Vec<u8>, Vec<u16>, String, Vec<u32>, Vec<bool>, u8);
    let mut rng = Rng::new(5);
    let mut run: Vec<Element> = Vec::new();
    for len in 0..=20usize {
        let text: String = rng
            .bytes(len)
            .iter()
            .map(|&b| char::from(b'a' + b % 26))
            .collect();
        let flags = rng.bytes(len).iter().map(|b| b % 2 == 1).collect();
        run.push((
            rng.bytes(len),
            (0..len / 2).map(|_| rng.u32() as u16).collect(),
            text,
            (0..len / 4).map(|_| rng.u32()).collect(),
            flags,
            len as u8,
        ));
    }
    // Every order of lengths: ascending, descending, shuffled.
    let mut orders = vec![run.clone(), run.iter().rev().cloned().collect()];
    let mut shuffled = run.clone();
    for i in (1..shuffled.len()).rev() {
        shuffled.swap(i, rng.below(i + 1));
    }
    orders.push(shuffled);
    for values in orders {
        // The reference: the count, then each element encoded alone.
        // (Fewer than 128 elements: a one-byte count.)
        let mut want = vec![values.len() as u8];
        for value in &values {
            want.extend_from_slice(&value.to_encoded_vec());
        }
        assert_eq!(values.to_encoded_vec(), want);
        let map: std::collections::BTreeMap<u8, Element> =
            values.iter().map(|v| (v.5, v.clone())).collect();
        let mut map_want = vec![map.len() as u8];
        for (key, value) in &map {
            map_want.push(*key);
            map_want.extend_from_slice(&value.to_encoded_vec());
        }
        assert_eq!(map.to_encoded_vec(), map_want);
        for size in (want.len() - 40..=want.len() + 20).chain([0, 1, 10]) {
            let mut buf = vec![0xeeu8; 2 + size];
            let mut w = Writer::new(&mut buf);
            assert_eq!(w.encode(&[7u8, 8]), Ok(2));
            match w.encode(&values) {
                Ok(n) => {
                    assert!(size >= want.len(), "fit into {size}");
                    assert_eq!(n, want.len());
                    assert_eq!(buf[2..2 + n], want[..], "into {size}");
                    // At most 8 bytes past the encoding are overwritten,
                    // as `Encode::encode` says.
                    let after = (2 + n + 8).min(buf.len());
                    assert!(buf[after..].iter().all(|&b| b == 0xee), "into {size}");
                }
                Err(_) => assert!(size < want.len(), "refused into {size}"),
            }
            assert_eq!(buf[..2], [7, 8]);
        }
        for spare in [0usize, 1, 7, 15, 16, 17, 64] {
            let mut vec = Vec::with_capacity(1 + want.len() + spare);
            vec.push(9);
            assert_eq!(values.encode_to_vec(&mut vec), want.len());
            assert_eq!(vec[1..], want[..], "spare {spare}");
            let mut bytes = bytes::BytesMut::with_capacity(want.len() + spare);
            assert_eq!(map.encode_to_bytes(&mut bytes), map_want.len());
            assert_eq!(bytes[..], map_want[..], "spare {spare}");
        }
    }
}

/// Long runs, copied into a caller's slice and over a warmed `Vec`, come
/// out whole at lengths around 2 and 4 KiB and 3 to 6 bytes into the
/// encoding: encoded into a slice,
/// a `Vec` and a `BytesMut`, and decoded owned, in place over a value of the
/// same length and over a shorter one.
#[test]
fn long_runs_are_copied_whole() {
    let mut rng = Rng::new(11);
    for len in [2047usize, 2048, 2049, 4095, 4096, 4097, 6143, 10_000] {
        let bytes = rng.bytes(len);
        let words: Vec<u32> = (0..len / 4 + 1).map(|_| rng.u32()).collect();
        for head in 0..4usize {
            let header = vec![0x5au8; head];
            let value = (header.clone(), bytes.clone(), words.clone());
            let mut want = Vec::new();
            want.extend_from_slice(&header.to_encoded_vec());
            want.extend_from_slice(&bytes.to_encoded_vec());
            want.extend_from_slice(&words.to_encoded_vec());
            assert_eq!(&want[head + 1 + 2..][..8], &bytes[..8], "len {len}");
            let mut buf = vec![0xeeu8; want.len() + 3];
            assert_eq!(Writer::new(&mut buf[3..]).encode(&value), Ok(want.len()));
            assert_eq!(buf[3..], want[..], "len {len} head {head}");
            let mut vec = vec![1, 2, 3];
            assert_eq!(value.encode_to_vec(&mut vec), want.len());
            assert_eq!(vec[3..], want[..], "len {len} head {head}");
            let mut out = bytes::BytesMut::new();
            assert_eq!(value.encode_to_bytes(&mut out), want.len());
            assert_eq!(out[..], want[..], "len {len} head {head}");
            assert_eq!(
                <(Vec<u8>, Vec<u8>, Vec<u32>)>::decode(&want),
                Ok(value.clone())
            );
            let mut same = value.clone();
            same.1.iter_mut().for_each(|b| *b = !*b);
            same.2.iter_mut().for_each(|w| *w = !*w);
            assert_eq!(same.decode_in_place(&want), Ok(()));
            assert_eq!(same, value, "len {len} head {head}");
            let mut shorter = (vec![], vec![9u8; len / 3], vec![9u32; len / 9]);
            assert_eq!(shorter.decode_in_place(&want), Ok(()));
            assert_eq!(shorter, value, "len {len} head {head}");
        }
    }
}

/// A `&str`, a `String` and a `String` decoded in place decode exactly when
/// the standard library calls their bytes UTF-8, at every length around the
/// ASCII and short-string paths (16 bytes): every string of one and two
/// bytes, and random ones of 3 to 40 bytes drawn from ASCII, continuation,
/// lead and invalid bytes; long strings (SIMD validation from 64 bytes) of
/// valid text up to 300 bytes, whole and with one byte broken anywhere, so
/// an error in any 64-byte block or in the tail is caught.
#[test]
fn strings_are_valid_exactly_when_std_says_so() {
    fn check(bytes: &[u8]) {
        // A byte string's encoding is a string's: the length, the bytes.
        let wire = Encode::to_encoded_vec(bytes);
        let ours = <&str>::decode(&wire);
        let owned = String::decode(&wire);
        let mut in_place = String::from("kept capacity, other text");
        let placed = in_place.decode_in_place(&wire).map(|()| in_place);
        match std::str::from_utf8(bytes) {
            Ok(text) => {
                assert_eq!(ours, Ok(text), "{bytes:x?}");
                assert_eq!(owned.as_deref(), Ok(text), "{bytes:x?}");
                assert_eq!(placed.as_deref(), Ok(text), "{bytes:x?}");
            }
            Err(_) => {
                assert_eq!(ours, Err(DecodeError::InvalidUtf8), "{bytes:x?}");
                assert_eq!(owned, Err(DecodeError::InvalidUtf8), "{bytes:x?}");
                assert_eq!(placed, Err(DecodeError::InvalidUtf8), "{bytes:x?}");
            }
        }
    }
    for a in 0..=255u8 {
        check(&[a]);
        for b in 0..=255u8 {
            check(&[a, b]);
        }
    }
    // Bytes that matter to a validator: ASCII, continuations, the leads of
    // 2-, 3- and 4-byte forms (with their overlong and surrogate edges), and
    // bytes that never appear.
    const PICK: [u8; 14] = [
        b'a', 0x7f, 0x80, 0xbf, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xc0, 0xf5, 0xff,
    ];
    let mut rng = Rng::new(8);
    for _ in 0..200_000 {
        let len = 3 + rng.below(38);
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                if rng.below(3) == 0 {
                    b'a' + rng.below(26) as u8
                } else {
                    PICK[rng.below(PICK.len())]
                }
            })
            .collect();
        check(&bytes);
        // Valid text of mixed widths, whole and cut at every byte.
        let text: String = (0..1 + rng.below(12))
            .filter_map(|_| char::from_u32(rng.below(0x11_0000) as u32 >> (4 * rng.below(5))))
            .collect();
        for cut in 0..=text.len() {
            check(&text.as_bytes()[..cut]);
        }
    }
    for _ in 0..20_000 {
        let len = 17 + rng.below(284);
        let mut text = String::new();
        while text.len() < len {
            text.push(if rng.below(4) == 0 {
                char::from_u32(rng.below(0x11_0000) as u32 >> (4 * rng.below(3))).unwrap_or('é')
            } else {
                char::from(b'a' + rng.below(26) as u8)
            });
        }
        check(text.as_bytes());
        let mut broken = text.into_bytes();
        let at = rng.below(broken.len());
        broken[at] = PICK[2 + rng.below(PICK.len() - 2)];
        check(&broken);
    }
}

/// A run of fixed-size items takes exactly `count` items: one fewer or one
/// more is refused and leaves the writer where it was; exactly `count` are
/// written in order, each in its own window. The counts span several of the
/// groups of windows `put_run` cuts per check and every remainder.
#[test]
fn a_run_takes_exactly_its_count_of_items() {
    // Three groups of eight windows and every remainder.
    for count in 0..=25usize {
        for size in 1..5usize {
            for yielded in [count.saturating_sub(1), count, count + 1] {
                let mut buf = [0xAAu8; 128];
                let mut w = zao::Writer::new(&mut buf);
                w.put_u8(7);
                let ok = w.put_run(count, size, 0..yielded, |w, i| {
                    for _ in 0..size {
                        w.put_u8(i as u8);
                    }
                });
                let exact = yielded == count;
                assert_eq!(ok, exact, "count {count}, size {size}, {yielded} items");
                let expected = if exact { 1 + count * size } else { 1 };
                assert_eq!(
                    w.position(),
                    expected,
                    "count {count}, size {size}, {yielded} items"
                );
                if exact {
                    let run = &buf[1..expected];
                    for (i, window) in run.chunks(size).enumerate() {
                        assert!(
                            window.iter().all(|&b| b == i as u8),
                            "window {i}: {window:?}"
                        );
                    }
                }
            }
        }
    }
}

/// A fixed-size run (a map of fixed-size entries, a `Vec` of a fixed-size
/// non-blittable struct) is written a few windows per bounds check, so every
/// length around that grouping round-trips through the slice, `Vec` and
/// `BytesMut` paths, and a destination one byte short is refused.
#[test]
fn fixed_size_runs_of_every_length_round_trip() {
    use std::collections::{BTreeMap, HashMap};
    let mut rng = Rng::new(7);
    for n in 0..=40_u32 {
        let map: HashMap<u32, (u16, u8)> = (0..n)
            .map(|i| {
                (
                    i.wrapping_mul(2_654_435_761),
                    (rng.below(60_000) as u16, i as u8),
                )
            })
            .collect();
        let tree: BTreeMap<u16, u8> = (0..n).map(|i| (i as u16 * 3, i as u8)).collect();
        let seq: Vec<(u8, u16)> = (0..n).map(|i| (i as u8, i as u16 * 7)).collect();
        let value = (map, tree, seq);
        let len = value.encoded_len();
        let mut buf = vec![0_u8; len];
        assert_eq!(value.encode(&mut buf), Ok(len), "{n} entries");
        assert_eq!(
            <(HashMap<u32, (u16, u8)>, BTreeMap<u16, u8>, Vec<(u8, u16)>)>::decode(&buf).as_ref(),
            Ok(&value)
        );
        let mut vec = Vec::new();
        assert_eq!(value.encode_to_vec(&mut vec), len);
        assert_eq!(vec, buf, "{n} entries, Vec path");
        let mut bytes = bytes::BytesMut::new();
        value.encode_to_bytes(&mut bytes);
        assert_eq!(&bytes[..], &buf[..], "{n} entries, BytesMut path");
        let mut short = vec![0_u8; len - 1];
        assert!(
            value.encode(&mut short).is_err(),
            "{n} entries, one byte short"
        );
    }
}

/// An event with data, as a log or a chat history holds them.
#[derive(Clone, Debug, PartialEq, Encode, Decode)]
enum Event {
    #[zao(tag = 0)]
    Say { from: u32, text: String },
    #[zao(tag = 1)]
    Hit(u32, f32),
    #[zao(tag = 2)]
    Tags(Vec<String>),
    #[zao(tag = 3)]
    Tick,
    #[zao(tag = 300)]
    Far(u64),
}

/// A unit enum with a tag past one varint byte.
#[derive(Clone, Copy, Debug, PartialEq, Encode, Decode)]
enum Wide {
    Near = 1,
    Far = 200,
}

#[derive(Clone, Debug, PartialEq, Encode, Decode)]
struct Log {
    start: u64,
    events: Vec<Event>,
    wide: Vec<Wide>,
    note: Option<String>,
}

/// A type whose size is a walk over values of varying size (`LEN_WALKS`)
/// is appended by the growable forms with no size pass, the buffer growing
/// as it is written: from empty to hundreds of KiB, after a prefix, into a
/// `Vec`, a `BytesMut` and a message frame, every form writes what the slice
/// path writes, and the value decodes back.
#[test]
fn values_whose_size_is_a_walk_grow_the_buffer_and_write_the_slice_path() {
    const { assert!(<Vec<Event> as Encode>::LEN_WALKS) };
    const { assert!(<Log as Encode>::LEN_WALKS) };
    const { assert!(<Option<Vec<String>> as Encode>::LEN_WALKS) };
    const { assert!(<(u8, Vec<Vec<u8>>) as Encode>::LEN_WALKS) };
    const { assert!(!<Vec<u32> as Encode>::LEN_WALKS) };
    const { assert!(!<String as Encode>::LEN_WALKS) };
    const { assert!(<Event as Encode>::LEN_WALKS) };
    const { assert!(!<Wide as Encode>::LEN_WALKS) };
    const { assert!(!<zao_messages::SpawnEntity as Encode>::LEN_WALKS) };
    let mut rng = Rng::new(2026);
    for count in [0usize, 1, 2, 7, 40, 300, 3_000, 20_000] {
        let events: Vec<Event> = (0..count)
            .map(|_| match rng.below(5) {
                0 => Event::Say {
                    from: rng.u32(),
                    text: {
                        let len = rng.below(200);
                        rng.string(len)
                    },
                },
                1 => Event::Hit(rng.u32(), rng.f32_finite()),
                2 => Event::Tags(
                    (0..rng.below(4))
                        .map(|_| {
                            let len = rng.below(20);
                            rng.string(len)
                        })
                        .collect(),
                ),
                3 => Event::Tick,
                _ => Event::Far(rng.u64()),
            })
            .collect();
        let log = Log {
            start: rng.u64(),
            wide: (0..count % 50)
                .map(|_| if rng.bool() { Wide::Near } else { Wide::Far })
                .collect(),
            events,
            note: rng.bool().then(|| rng.string(300)),
        };
        let mut want = vec![0u8; log.encoded_len()];
        assert_eq!(log.encode(&mut want), Ok(want.len()), "count {count}");
        let fresh = log.to_encoded_vec();
        assert_eq!(fresh, want, "count {count}");
        assert!(
            fresh.capacity() - fresh.len() <= want.len() / 4 + 1024,
            "count {count}"
        );
        assert_eq!(Log::decode(&fresh).unwrap(), log, "count {count}");
        let mut vec = vec![5u8; 3];
        assert_eq!(log.encode_to_vec(&mut vec), want.len(), "count {count}");
        assert_eq!(vec[..3], [5, 5, 5]);
        assert_eq!(vec[3..], want[..], "count {count}");
        let mut bytes = bytes::BytesMut::new();
        bytes.extend_from_slice(&[6]);
        assert_eq!(log.encode_to_bytes(&mut bytes), want.len(), "count {count}");
        assert_eq!(bytes[1..], want[..], "count {count}");
        let events = log.events.clone();
        let mut frame = bytes::BytesMut::new();
        let framed = zao::encode_message_to(&Events(events), &mut frame);
        assert_eq!(framed, frame.len());
        assert_eq!(frame[0], 9);
        assert_eq!(frame[1..], log.events.to_encoded_vec()[..], "count {count}");
    }
}

#[derive(Encode, Decode, zao::NetMessage)]
#[zao(id = 9)]
struct Events(Vec<Event>);

/// A `Vec` of blittable values writes its count and its memory image
/// behind one check when the count takes one byte: at every count around
/// that edge (127, 128) and around the inline copy (16 bytes), alone and
/// inside a run of `Vec`s, into a slice of its size or larger and into a
/// growable buffer, it writes the count's varint and each element as the
/// element alone writes it, and a slice one byte short is refused.
#[test]
fn blittable_vecs_write_their_count_and_image() {
    /// The count's varint (a `usize` is one), then each element alone.
    fn reference<T: Encode>(items: &[T]) -> Vec<u8> {
        let mut out = items.len().to_encoded_vec();
        for item in items {
            out.extend_from_slice(&item.to_encoded_vec());
        }
        out
    }
    fn check<T: Encode + Clone>(items: Vec<T>) {
        let want = reference(&items);
        assert_eq!(items.to_encoded_vec(), want, "count {}", items.len());
        for size in [want.len(), want.len() + 1, want.len() + 40] {
            let mut buf = vec![0u8; size];
            assert_eq!(items.encode(&mut buf), Ok(want.len()));
            assert_eq!(buf[..want.len()], want[..]);
        }
        if !want.is_empty() {
            let mut short = vec![0u8; want.len() - 1];
            assert!(items.encode(&mut short).is_err(), "count {}", items.len());
        }
        // In a run: each inner Vec after the outer count.
        let nested = vec![items.clone(), Vec::new(), items];
        let mut want_run = vec![3u8];
        for inner in &nested {
            want_run.extend_from_slice(&reference(inner));
        }
        assert_eq!(nested.to_encoded_vec(), want_run);
        let mut buf = vec![0u8; want_run.len()];
        assert_eq!(nested.encode(&mut buf), Ok(want_run.len()));
        assert_eq!(buf, want_run);
    }
    let mut rng = Rng::new(128);
    for count in (0..=20).chain(120..=136).chain([300, 1024]) {
        check((0..count).map(|_| rng.u32()).collect::<Vec<u32>>());
        check((0..count).map(|_| rng.u8()).collect::<Vec<u8>>());
        check((0..count).map(|_| rng.bool()).collect::<Vec<bool>>());
        check((0..count).map(|_| rng.vec3(true)).collect::<Vec<_>>());
    }
}
