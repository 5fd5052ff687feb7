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

use std::collections::{BTreeMap, HashMap};

use common::{Rng, varint};
use zao::{Decode, DecodeError, DecodeLimits, Encode, encode_message};
use zao_messages::{
    GameMessage, Inventory, ItemStack, PlayerInput, PlayerMoved, SpawnEntity, SpawnEntityRef,
    WorldSnapshot, samples,
};

/// An enum with data: strings, a `Vec` of them, plain fields.
#[derive(Clone, Debug, Default, PartialEq, Encode, Decode)]
enum Event {
    #[zao(tag = 0)]
    Chat(String),
    #[zao(tag = 1)]
    Hit { target: u32, amount: f32 },
    #[zao(tag = 2)]
    Tags(Vec<String>),
    #[default]
    #[zao(tag = 3)]
    Idle,
}

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
fn world_snapshot_of_1024_players_encodes_into_exactly_16392_bytes_without_allocating() {
    let msg = samples::world_snapshot(1024);
    let mut buf = vec![0u8; 16_392];
    let n = assert_no_alloc("WorldSnapshot(1024) encode", || msg.encode(&mut buf));
    assert_eq!(n, Ok(16_392));
    assert_eq!(msg.encoded_len(), 16_392);
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
        let s = rng.world_snapshot(true).to_encoded_vec();
        let e = rng.spawn_entity(true).to_encoded_vec();
        let i = rng.inventory().to_encoded_vec();
        let p = rng.player_input(true).to_encoded_vec();
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
    // A `Vec` of enums with strings: each element whose variant comes again
    // decodes into its own fields and keeps its string's buffer.
    let events: Vec<Event> = (0..64)
        .map(|i| match i % 3 {
            0 => Event::Chat(format!("message {i:<56}, warm")),
            1 => Event::Hit {
                target: i,
                amount: 2.5,
            },
            _ => Event::Tags(vec!["a".repeat(i as usize % 7); 3]),
        })
        .collect();
    let mut warm = events.clone();
    for text in ["short", "a longer message, still shorter than the first"] {
        let next: Vec<Event> = events
            .iter()
            .map(|e| match e {
                Event::Chat(_) => Event::Chat(text.to_owned()),
                Event::Hit { target, amount } => Event::Hit {
                    target: target + 1,
                    amount: -amount,
                },
                Event::Tags(tags) => {
                    Event::Tags(tags.iter().map(|t| t.replace('a', "b")).collect())
                }
                Event::Idle => Event::Idle,
            })
            .collect();
        let bytes = next.to_encoded_vec();
        assert_no_alloc("Vec<Event> decode_in_place", || {
            warm.decode_in_place(&bytes).unwrap();
        });
        assert_eq!(warm, next);
    }
    // Borrowed decode never allocates.
    let bytes = samples::spawn_entity().to_encoded_vec();
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
        let mut spawn = samples::spawn_entity().to_encoded_vec();
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

/// A run decoded into a new `Vec` allocates exactly its values' bytes, in
/// one allocation, at every length, whether or not 16 more bytes of input
/// follow it: a decoder that made the `Vec` of a 16-byte window of input
/// and cut it back (as Zao once did) would allocate 16 bytes for a run of 1
/// and fail here. The budget is charged exactly that (one byte less refuses
/// the decode), the values are the run's alone (bytes after a run of bools
/// are not checked as bools), and an empty run allocates nothing.
#[test]
fn short_runs_allocate_exactly_their_values() {
    fn check<T>(items: Vec<T>)
    where
        T: Encode + for<'de> Decode<'de> + PartialEq + std::fmt::Debug + Clone,
    {
        let unlimited = DecodeLimits::DANGEROUS_UNLIMITED;
        // Followed by 16 bytes no bool could be, and alone.
        let followed = (items.clone(), [7u8; 16]).to_encoded_vec();
        let alone = items.to_encoded_vec();
        for (bytes, what) in [(&followed[..], "followed"), (&alone[..], "alone")] {
            let decode = |limits| {
                let mut r = zao::Reader::with_limits(bytes, limits);
                r.decode::<Vec<T>>()
            };
            let (back, allocs, allocated) = counted(|| decode(unlimited));
            let back = back.unwrap_or_else(|e| panic!("{} items {what}: {e}", items.len()));
            assert_eq!(back, items, "{what}");
            let run = items.len() * size_of::<T>();
            if run == 0 {
                assert_eq!(allocs, 0, "an empty run allocates nothing");
                continue;
            }
            assert_eq!(allocs, 1, "{} items {what}", items.len());
            assert_eq!(allocated, run, "{} items {what}", items.len());
            let short = DecodeLimits {
                max_alloc: allocated - 1,
                ..unlimited
            };
            assert_eq!(
                decode(short),
                Err(DecodeError::OverLimit),
                "{} items {what}: {allocated} bytes",
                items.len()
            );
            let exact = DecodeLimits {
                max_alloc: allocated,
                ..unlimited
            };
            assert_eq!(decode(exact).as_ref(), Ok(&items), "{what}");
        }
    }
    let mut rng = Rng::new(3);
    for len in 0..=20usize {
        check(rng.bytes(len));
        check((0..len).map(|_| rng.u32() as u16).collect());
        check((0..len).map(|_| rng.u32()).collect());
        check((0..len).map(|_| rng.u32() % 2 == 1).collect());
    }
    // A bad bool inside a short run is still refused.
    assert_eq!(
        <(Vec<bool>, [u8; 16])>::decode(&[&[3u8, 1, 2, 0][..], &[0; 16]].concat()),
        Err(DecodeError::InvalidTag)
    );
}

/// A `HashMap` is charged the table it really allocates: a budget one byte
/// short of a fresh decode's allocation refuses the decode. (Charging
/// `count × size_of::<(K, V)>()`, as the decoder once did, under-charges
/// hashbrown's table by up to 2.3× and lets this decode through.)
#[test]
fn a_hash_map_is_charged_its_real_table() {
    fn check<K, V>(entries: impl Iterator<Item = (K, V)>)
    where
        K: Encode + for<'de> Decode<'de> + Eq + std::hash::Hash + std::fmt::Debug,
        V: Encode + for<'de> Decode<'de> + PartialEq + std::fmt::Debug,
    {
        let map: HashMap<K, V> = entries.collect();
        let bytes = map.to_encoded_vec();
        let unlimited = DecodeLimits::DANGEROUS_UNLIMITED;
        let (back, _, allocated) =
            counted(|| HashMap::<K, V>::decode_with_limits(&bytes, unlimited));
        assert_eq!(back.as_ref(), Ok(&map));
        let short = DecodeLimits {
            max_alloc: allocated - 1,
            ..unlimited
        };
        let (refused, _, _) = counted(|| HashMap::<K, V>::decode_with_limits(&bytes, short));
        assert_eq!(
            refused,
            Err(DecodeError::OverLimit),
            "{} entries allocate {allocated} bytes",
            map.len()
        );
        // The charge is the table's size, not a loose bound: exactly that
        // budget admits the decode (hashbrown's x86-64 layout, 16-byte groups).
        if cfg!(target_arch = "x86_64") {
            let exact = DecodeLimits {
                max_alloc: allocated,
                ..unlimited
            };
            assert_eq!(HashMap::<K, V>::decode_with_limits(&bytes, exact), Ok(map));
        }
    }
    for count in [1, 2, 3, 4, 7, 8, 13, 14, 15, 28, 29, 100, 128, 1000, 5000] {
        check((0..count as u32).map(|i| {
            let stack = ItemStack {
                item: i,
                count: 1,
                durability: 2,
                flags: 3,
            };
            (i, stack)
        }));
        check((0..count.min(255) as u8).map(|i| (i, i)));
        check((0..count as u64).map(|i| (i, i)));
    }
}

/// Heap that a value decoded in place again and again holds never passes
/// `max_alloc`: the capacity it keeps is charged, and released when the
/// budget cannot hold it. Measured as the net heap each decode leaves
/// behind, added up from an empty value. (Charging only what each decode
/// adds lets every element keep the largest capacity it ever had: these
/// values grow to three times the budget.)
#[test]
fn a_value_decoded_in_place_never_holds_more_than_the_budget() {
    fn run<T>(inputs: &[Vec<u8>], max_alloc: usize)
    where
        T: for<'de> Decode<'de> + Default + std::fmt::Debug + PartialEq,
    {
        let limits = DecodeLimits {
            max_alloc,
            ..DecodeLimits::DEFAULT
        };
        let mut value = T::default();
        let mut held: i64 = 0;
        for (round, input) in inputs.iter().cycle().take(inputs.len() * 3).enumerate() {
            let info = allocation_counter::measure(|| {
                value.decode_in_place_with_limits(input, limits).unwrap();
            });
            held += info.bytes_current;
            assert!(
                held <= max_alloc as i64,
                "round {round}: the value holds {held} bytes, budget {max_alloc}"
            );
            assert_eq!(value, T::decode_with_limits(input, limits).unwrap());
        }
    }
    // Four slots, one big in turn: each slot would keep the big capacity.
    let slots = |big: usize, len: usize| -> Vec<Vec<u8>> {
        (0..4)
            .map(|i| vec![i as u8; if i == big { len } else { 8 }])
            .collect()
    };
    let vecs: Vec<Vec<u8>> = (0..4)
        .map(|big| slots(big, 6000).to_encoded_vec())
        .collect();
    run::<Vec<Vec<u8>>>(&vecs, 10_000);
    let strings: Vec<Vec<u8>> = (0..4)
        .map(|big| {
            let s: Vec<String> = slots(big, 6000)
                .into_iter()
                .map(|v| "x".repeat(v.len()))
                .collect();
            s.to_encoded_vec()
        })
        .collect();
    run::<Vec<String>>(&strings, 10_000);
    let maps: Vec<Vec<u8>> = (0..3)
        .map(|big| {
            let m: Vec<HashMap<u16, u64>> = (0..3)
                .map(|i| {
                    (0..if i == big { 400 } else { 2 })
                        .map(|k| (k, u64::from(k)))
                        .collect()
                })
                .collect();
            m.to_encoded_vec()
        })
        .collect();
    run::<Vec<HashMap<u16, u64>>>(&maps, 16_000);
    // Enums decoded in place keep their variant's buffers: charged too.
    let events: Vec<Vec<u8>> = (0..4)
        .map(|big| {
            let e: Vec<Event> = slots(big, 6000)
                .into_iter()
                .map(|v| Event::Chat("x".repeat(v.len())))
                .collect();
            e.to_encoded_vec()
        })
        .collect();
    run::<Vec<Event>>(&events, 10_000);
}

/// Whatever a decode allocates stays within its budget: seeded random
/// values of types whose memory outgrows their wire size (maps, nested
/// vectors, strings, boxes of `Option`s), decoded under small random
/// budgets, so the budget is what stops the bigger ones.
#[test]
fn random_input_allocation_stays_within_the_budget() {
    fn check<T: Encode + for<'de> Decode<'de>>(value: &T, rng: &mut Rng, refused: &mut usize) {
        let bytes = value.to_encoded_vec();
        let limits = DecodeLimits {
            max_alloc: 64 + rng.below(16 * 1024),
            ..DecodeLimits::DEFAULT
        };
        let (result, _, allocated) = counted(|| T::decode_with_limits(&bytes, limits));
        assert!(
            allocated <= limits.max_alloc,
            "{allocated} bytes allocated under a budget of {}",
            limits.max_alloc
        );
        *refused += usize::from(result.is_err());
    }
    let mut rng = Rng::new(99);
    let mut refused = 0;
    for _ in 0..300 {
        let maps: Vec<HashMap<u16, [u8; 3]>> = (0..rng.below(6))
            .map(|_| {
                (0..rng.below(200))
                    .map(|_| (rng.u16(), [rng.u8(); 3]))
                    .collect()
            })
            .collect();
        check(&maps, &mut rng, &mut refused);
        let nested: Vec<Vec<u32>> = (0..rng.below(40))
            .map(|_| (0..rng.below(60)).map(|_| rng.u32()).collect())
            .collect();
        check(&nested, &mut rng, &mut refused);
        let strings: Vec<String> = (0..rng.below(40))
            .map(|_| {
                let len = rng.below(80);
                rng.string(len)
            })
            .collect();
        check(&strings, &mut rng, &mut refused);
        let tree: BTreeMap<u32, u64> = (0..rng.below(800))
            .map(|_| (rng.u32(), rng.u64()))
            .collect();
        check(&tree, &mut rng, &mut refused);
        let boxes: Vec<Option<Box<[u64; 8]>>> = (0..rng.below(100))
            .map(|_| rng.bool().then(|| Box::new([rng.u64(); 8])))
            .collect();
        check(&boxes, &mut rng, &mut refused);
    }
    // The budgets bind: many decodes were refused, so the bound was tested.
    assert!(refused > 300, "only {refused} of 1500 decodes were refused");
}
