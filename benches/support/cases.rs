//! The benchmark cases and every measured operation, defined once for
//! `benches/tiers.rs` (criterion) and `examples/bench_report.rs` (the
//! BENCHMARKS.md report), which include this file with `#[path]`.
//!
//! Each [`Row`] is one operation of one library on one case's value, as a
//! closure that runs it `iters` times: the loop is monomorphized inside the
//! closure, so a measurement pays one dynamic call per batch, not per op.
//! Every library encodes the same data (`zao_messages::samples`, mirrored by
//! `peers`), and every decoder is checked to give that data back before any
//! row is built.

use std::fmt::Debug;
use std::hint::black_box;

use rkyv::api::high::{HighDeserializer, HighSerializer, HighValidator};
use rkyv::rancor;
use rkyv::ser::allocator::{Arena, ArenaHandle};
use rkyv::util::AlignedVec;
use zao::zerocopy::{FromBytes, IntoBytes};
use zao::{Decode, Encode};
use zao_messages::{self as zm, samples};

use crate::peers::{self, pb};

/// Zao, the subject.
pub(crate) const ZAO: &str = "zao";
/// bincode's legacy (fixed-width integer) config: a wire size, not timed.
pub(crate) const BINCODE_FIXINT: &str = "bincode-fixint";
/// The physical floor: the memory image copied with zerocopy, no format.
pub(crate) const RAW: &str = "raw copy (zerocopy)";

/// What a row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Op {
    /// Encode into a new `Vec` (each library's one-call API).
    EncodeFresh,
    /// Encode into a buffer the caller keeps and reuses.
    EncodeReuse,
    /// Decode to an owned value (rkyv: validate, then deserialize).
    Decode,
    /// Zao: decode into a warmed value, reusing its allocations. Raw: copy
    /// into a warmed `Vec`.
    DecodeInPlace,
    /// Zao: decode to a type that borrows its strings from the input.
    DecodeBorrowed,
    /// rkyv: validated zero-copy access to the archived value, no owned value.
    Access,
}

impl Op {
    /// The label in criterion ids and in the report.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::EncodeFresh => "encode-fresh",
            Self::EncodeReuse => "encode-reuse",
            Self::Decode => "decode",
            Self::DecodeInPlace => "decode-in-place",
            Self::DecodeBorrowed => "decode-borrowed",
            Self::Access => "access-validated",
        }
    }
}

/// One operation of one library, runnable in batches.
pub(crate) struct Row {
    /// The library.
    pub(crate) lib: &'static str,
    /// The operation.
    pub(crate) op: Op,
    run: Box<dyn FnMut(u64)>,
}

impl Row {
    /// Runs the operation `iters` times.
    pub(crate) fn run(&mut self, iters: u64) {
        (self.run)(iters);
    }
}

/// One message case: wire sizes and the rows of every library.
pub(crate) struct Case {
    /// `PlayerMoved`, `WorldSnapshot(32)`, ...
    pub(crate) name: String,
    /// Encoded size per library, in row order.
    pub(crate) wire: Vec<(&'static str, usize)>,
    /// The operations.
    pub(crate) rows: Vec<Row>,
}

impl Case {
    fn push(&mut self, lib: &'static str, op: Op, run: impl FnMut(u64) + 'static) {
        self.rows.push(Row {
            lib,
            op,
            run: Box::new(run),
        });
    }
}

/// The cases, by message and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Tier 0, blittable.
    PlayerMoved,
    /// Tier 1, fixed size with checked fields.
    PlayerInput,
    /// Tier 2, fixed fields and a string.
    SpawnEntity,
    /// Tier 3, a blittable run of this many players.
    WorldSnapshot(usize),
    /// Tier 3, a map of this many slots.
    Inventory(usize),
}

/// Every case, in report order.
pub(crate) const KINDS: [Kind; 6] = [
    Kind::PlayerMoved,
    Kind::PlayerInput,
    Kind::SpawnEntity,
    Kind::WorldSnapshot(32),
    Kind::WorldSnapshot(1024),
    Kind::Inventory(128),
];

impl Kind {
    /// The case's name.
    pub(crate) fn name(self) -> String {
        match self {
            Self::PlayerMoved => "PlayerMoved".to_owned(),
            Self::PlayerInput => "PlayerInput".to_owned(),
            Self::SpawnEntity => "SpawnEntity".to_owned(),
            Self::WorldSnapshot(n) => format!("WorldSnapshot({n})"),
            Self::Inventory(n) => format!("Inventory({n})"),
        }
    }

    /// Builds the case's rows (encoding the value once per library and
    /// checking that it decodes back).
    pub(crate) fn build(self) -> Case {
        let mut case = Case {
            name: self.name(),
            wire: Vec::new(),
            rows: Vec::new(),
        };
        match self {
            Self::PlayerMoved => {
                let value = samples::player_moved();
                zao_rows(&mut case, value);
                peer_rows(
                    &mut case,
                    peers::PlayerMoved::from(&value),
                    pb::PlayerMoved::from(&value),
                );
                raw_player_moved(&mut case, value);
            }
            Self::PlayerInput => {
                let value = samples::player_input();
                zao_rows(&mut case, value);
                peer_rows(
                    &mut case,
                    peers::PlayerInput::from(&value),
                    pb::PlayerInput::from(&value),
                );
            }
            Self::SpawnEntity => {
                let value = samples::spawn_entity();
                zao_rows(&mut case, value.clone());
                zao_borrowed_spawn(&mut case, &value);
                peer_rows(
                    &mut case,
                    peers::SpawnEntity::from(&value),
                    pb::SpawnEntity::from(&value),
                );
            }
            Self::WorldSnapshot(n) => {
                let value = samples::world_snapshot(n);
                zao_rows(&mut case, value.clone());
                peer_rows(
                    &mut case,
                    peers::WorldSnapshot::from(&value),
                    pb::WorldSnapshot::from(&value),
                );
                raw_world_snapshot(&mut case, value);
            }
            Self::Inventory(n) => {
                let value = samples::inventory(n);
                zao_rows(&mut case, value.clone());
                peer_rows(
                    &mut case,
                    peers::Inventory::from(&value),
                    pb::Inventory::from(&value),
                );
            }
        }
        case
    }
}

/// A buffer for the encode-reuse rows: the encoding plus slack.
fn buffer_for(wire: usize) -> Vec<u8> {
    vec![0u8; wire + 64]
}

fn zao_rows<T>(case: &mut Case, value: T)
where
    T: Encode + for<'de> Decode<'de> + Clone + PartialEq + Debug + 'static,
{
    let bytes = value.to_vec();
    assert_eq!(T::decode(&bytes).as_ref(), Ok(&value), "zao round trip");
    case.wire.push((ZAO, bytes.len()));

    let v = value.clone();
    case.push(ZAO, Op::EncodeFresh, move |iters| {
        for _ in 0..iters {
            black_box(black_box(&v).to_vec());
        }
    });
    let v = value.clone();
    let mut buf = buffer_for(bytes.len());
    case.push(ZAO, Op::EncodeReuse, move |iters| {
        for _ in 0..iters {
            let _ = black_box(black_box(&v).encode(black_box(&mut buf)));
        }
    });
    let b = bytes.clone();
    case.push(ZAO, Op::Decode, move |iters| {
        for _ in 0..iters {
            let _ = black_box(T::decode(black_box(&b)));
        }
    });
    // Warmed: it already holds a decoded value of this size.
    let mut warm = value;
    assert_eq!(warm.decode_in_place(&bytes), Ok(()));
    case.push(ZAO, Op::DecodeInPlace, move |iters| {
        for _ in 0..iters {
            let _ = black_box(black_box(&mut warm).decode_in_place(black_box(&bytes)));
        }
    });
}

fn zao_borrowed_spawn(case: &mut Case, value: &zm::SpawnEntity) {
    let bytes = value.to_vec();
    assert_eq!(
        zm::SpawnEntityRef::decode(&bytes)
            .map(|r| r.to_owned())
            .as_ref(),
        Ok(value),
        "zao borrowed round trip"
    );
    case.push(ZAO, Op::DecodeBorrowed, move |iters| {
        for _ in 0..iters {
            let _ = black_box(zm::SpawnEntityRef::decode(black_box(&bytes)));
        }
    });
}

/// The same rows for every peer codec.
fn peer_rows<P, B>(case: &mut Case, value: P, proto: B)
where
    P: bitcode::Encode + bitcode::DecodeOwned,
    P: bincode::Encode + bincode::Decode<()>,
    P: serde::Serialize + serde::de::DeserializeOwned,
    P: rkyv::Archive
        + for<'a> rkyv::Serialize<HighSerializer<AlignedVec, ArenaHandle<'a>, rancor::Error>>
        + for<'a, 'b> rkyv::Serialize<
            HighSerializer<&'b mut AlignedVec, ArenaHandle<'a>, rancor::Error>,
        >,
    P::Archived: for<'a> rkyv::bytecheck::CheckBytes<HighValidator<'a, rancor::Error>>
        + rkyv::Deserialize<P, HighDeserializer<rancor::Error>>,
    P: speedy::Writable<speedy::LittleEndian> + for<'a> speedy::Readable<'a, speedy::LittleEndian>,
    P: wincode::SchemaWrite<wincode::config::DefaultConfig, Src = P>
        + for<'de> wincode::SchemaRead<'de, wincode::config::DefaultConfig, Dst = P>,
    P: Clone + PartialEq + Debug + 'static,
    B: prost::Message + Default + Clone + PartialEq + 'static,
{
    bitcode_rows(case, value.clone());
    wincode_rows(case, value.clone());
    speedy_rows(case, value.clone());
    bincode_rows(case, value.clone());
    postcard_rows(case, value.clone());
    rkyv_rows(case, value.clone());
    prost_rows(case, proto);
    rmp_rows(case, value.clone());
    json_rows(case, value);
}

fn bitcode_rows<P>(case: &mut Case, value: P)
where
    P: bitcode::Encode + bitcode::DecodeOwned + Clone + PartialEq + Debug + 'static,
{
    const LIB: &str = "bitcode";
    let bytes = bitcode::encode(&value);
    assert_eq!(bitcode::decode::<P>(&bytes).expect(LIB), value, "{LIB}");
    case.wire.push((LIB, bytes.len()));

    let v = value.clone();
    case.push(LIB, Op::EncodeFresh, move |iters| {
        for _ in 0..iters {
            black_box(bitcode::encode(black_box(&v)));
        }
    });
    // bitcode's own reusable buffer, for encode and for decode.
    let mut buf = bitcode::Buffer::new();
    case.push(LIB, Op::EncodeReuse, move |iters| {
        for _ in 0..iters {
            black_box(buf.encode(black_box(&value)));
        }
    });
    let mut buf = bitcode::Buffer::new();
    case.push(LIB, Op::Decode, move |iters| {
        for _ in 0..iters {
            let _ = black_box(buf.decode::<P>(black_box(&bytes)));
        }
    });
}

fn wincode_rows<P>(case: &mut Case, value: P)
where
    P: wincode::SchemaWrite<wincode::config::DefaultConfig, Src = P>
        + for<'de> wincode::SchemaRead<'de, wincode::config::DefaultConfig, Dst = P>
        + Clone
        + PartialEq
        + Debug
        + 'static,
{
    const LIB: &str = "wincode";
    let bytes = wincode::serialize(&value).expect(LIB);
    assert_eq!(
        wincode::deserialize::<P>(&bytes).expect(LIB),
        value,
        "{LIB}"
    );
    case.wire.push((LIB, bytes.len()));

    let v = value.clone();
    case.push(LIB, Op::EncodeFresh, move |iters| {
        for _ in 0..iters {
            let _ = black_box(wincode::serialize(black_box(&v)));
        }
    });
    let mut buf = buffer_for(bytes.len());
    case.push(LIB, Op::EncodeReuse, move |iters| {
        for _ in 0..iters {
            let mut out: &mut [u8] = black_box(&mut buf);
            let _ = black_box(wincode::serialize_into(&mut out, black_box(&value)));
        }
    });
    case.push(LIB, Op::Decode, move |iters| {
        for _ in 0..iters {
            let _ = black_box(wincode::deserialize::<P>(black_box(&bytes)));
        }
    });
}

fn speedy_rows<P>(case: &mut Case, value: P)
where
    P: speedy::Writable<speedy::LittleEndian>
        + for<'a> speedy::Readable<'a, speedy::LittleEndian>
        + Clone
        + PartialEq
        + Debug
        + 'static,
{
    const LIB: &str = "speedy";
    let bytes = value.write_to_vec().expect(LIB);
    assert_eq!(P::read_from_buffer(&bytes).expect(LIB), value, "{LIB}");
    case.wire.push((LIB, bytes.len()));

    let v = value.clone();
    case.push(LIB, Op::EncodeFresh, move |iters| {
        for _ in 0..iters {
            let _ = black_box(black_box(&v).write_to_vec());
        }
    });
    let mut buf = buffer_for(bytes.len());
    case.push(LIB, Op::EncodeReuse, move |iters| {
        for _ in 0..iters {
            let _ = black_box(black_box(&value).write_to_buffer(black_box(&mut buf)));
        }
    });
    case.push(LIB, Op::Decode, move |iters| {
        for _ in 0..iters {
            let _ = black_box(P::read_from_buffer(black_box(&bytes)));
        }
    });
}

fn bincode_rows<P>(case: &mut Case, value: P)
where
    P: bincode::Encode + bincode::Decode<()> + Clone + PartialEq + Debug + 'static,
{
    const LIB: &str = "bincode";
    let config = bincode::config::standard();
    let bytes = bincode::encode_to_vec(&value, config).expect(LIB);
    let (back, _) = bincode::decode_from_slice::<P, _>(&bytes, config).expect(LIB);
    assert_eq!(back, value, "{LIB}");
    case.wire.push((LIB, bytes.len()));
    // Wire size only: bincode with fixed-width integers (its legacy config),
    // the fixed-width form the size target compares against.
    let fixint = bincode::encode_to_vec(&value, bincode::config::legacy()).expect(LIB);
    case.wire.push((BINCODE_FIXINT, fixint.len()));

    let v = value.clone();
    case.push(LIB, Op::EncodeFresh, move |iters| {
        for _ in 0..iters {
            let _ = black_box(bincode::encode_to_vec(black_box(&v), config));
        }
    });
    let mut buf = buffer_for(bytes.len());
    case.push(LIB, Op::EncodeReuse, move |iters| {
        for _ in 0..iters {
            let _ = black_box(bincode::encode_into_slice(
                black_box(&value),
                black_box(&mut buf),
                config,
            ));
        }
    });
    case.push(LIB, Op::Decode, move |iters| {
        for _ in 0..iters {
            let _ = black_box(bincode::decode_from_slice::<P, _>(
                black_box(&bytes),
                config,
            ));
        }
    });
}

fn postcard_rows<P>(case: &mut Case, value: P)
where
    P: serde::Serialize + serde::de::DeserializeOwned + Clone + PartialEq + Debug + 'static,
{
    const LIB: &str = "postcard";
    let bytes = postcard::to_allocvec(&value).expect(LIB);
    assert_eq!(
        postcard::from_bytes::<P>(&bytes).expect(LIB),
        value,
        "{LIB}"
    );
    case.wire.push((LIB, bytes.len()));

    let v = value.clone();
    case.push(LIB, Op::EncodeFresh, move |iters| {
        for _ in 0..iters {
            let _ = black_box(postcard::to_allocvec(black_box(&v)));
        }
    });
    let mut buf = buffer_for(bytes.len());
    case.push(LIB, Op::EncodeReuse, move |iters| {
        for _ in 0..iters {
            let _ = black_box(postcard::to_slice(black_box(&value), black_box(&mut buf)));
        }
    });
    case.push(LIB, Op::Decode, move |iters| {
        for _ in 0..iters {
            let _ = black_box(postcard::from_bytes::<P>(black_box(&bytes)));
        }
    });
}

fn rkyv_rows<P>(case: &mut Case, value: P)
where
    P: rkyv::Archive
        + for<'a> rkyv::Serialize<HighSerializer<AlignedVec, ArenaHandle<'a>, rancor::Error>>
        + for<'a, 'b> rkyv::Serialize<
            HighSerializer<&'b mut AlignedVec, ArenaHandle<'a>, rancor::Error>,
        > + Clone
        + PartialEq
        + Debug
        + 'static,
    P::Archived: for<'a> rkyv::bytecheck::CheckBytes<HighValidator<'a, rancor::Error>>
        + rkyv::Deserialize<P, HighDeserializer<rancor::Error>>,
{
    const LIB: &str = "rkyv";
    let bytes = rkyv::to_bytes::<rancor::Error>(&value).expect(LIB);
    assert_eq!(
        rkyv::from_bytes::<P, rancor::Error>(&bytes).expect(LIB),
        value,
        "{LIB}"
    );
    case.wire.push((LIB, bytes.len()));

    let v = value.clone();
    case.push(LIB, Op::EncodeFresh, move |iters| {
        for _ in 0..iters {
            let _ = black_box(rkyv::to_bytes::<rancor::Error>(black_box(&v)));
        }
    });
    // A reused output buffer and a reused scratch arena.
    let mut out = AlignedVec::<16>::with_capacity(bytes.len());
    let mut arena = Arena::new();
    case.push(LIB, Op::EncodeReuse, move |iters| {
        for _ in 0..iters {
            out.clear();
            let _ = black_box(
                rkyv::api::high::to_bytes_in_with_alloc::<_, _, rancor::Error>(
                    black_box(&value),
                    &mut out,
                    arena.acquire(),
                ),
            );
        }
    });
    let b = bytes.clone();
    case.push(LIB, Op::Decode, move |iters| {
        for _ in 0..iters {
            let _ = black_box(rkyv::from_bytes::<P, rancor::Error>(black_box(&b)));
        }
    });
    case.push(LIB, Op::Access, move |iters| {
        for _ in 0..iters {
            let _ = black_box(rkyv::access::<P::Archived, rancor::Error>(black_box(
                &bytes,
            )));
        }
    });
}

fn prost_rows<B>(case: &mut Case, value: B)
where
    B: prost::Message + Default + Clone + PartialEq + 'static,
{
    const LIB: &str = "prost";
    let bytes = value.encode_to_vec();
    assert!(B::decode(bytes.as_slice()).expect(LIB) == value, "{LIB}");
    case.wire.push((LIB, bytes.len()));

    let v = value.clone();
    case.push(LIB, Op::EncodeFresh, move |iters| {
        for _ in 0..iters {
            black_box(black_box(&v).encode_to_vec());
        }
    });
    let mut buf = Vec::with_capacity(bytes.len());
    case.push(LIB, Op::EncodeReuse, move |iters| {
        for _ in 0..iters {
            buf.clear();
            let _ = black_box(black_box(&value).encode(&mut buf));
        }
    });
    case.push(LIB, Op::Decode, move |iters| {
        for _ in 0..iters {
            let _ = black_box(B::decode(black_box(bytes.as_slice())));
        }
    });
}

fn rmp_rows<P>(case: &mut Case, value: P)
where
    P: serde::Serialize + serde::de::DeserializeOwned + Clone + PartialEq + Debug + 'static,
{
    const LIB: &str = "rmp-serde";
    let bytes = rmp_serde::to_vec(&value).expect(LIB);
    assert_eq!(
        rmp_serde::from_slice::<P>(&bytes).expect(LIB),
        value,
        "{LIB}"
    );
    case.wire.push((LIB, bytes.len()));

    let v = value.clone();
    case.push(LIB, Op::EncodeFresh, move |iters| {
        for _ in 0..iters {
            let _ = black_box(rmp_serde::to_vec(black_box(&v)));
        }
    });
    let mut buf = Vec::with_capacity(bytes.len());
    case.push(LIB, Op::EncodeReuse, move |iters| {
        for _ in 0..iters {
            buf.clear();
            let _ = black_box(rmp_serde::encode::write(&mut buf, black_box(&value)));
        }
    });
    case.push(LIB, Op::Decode, move |iters| {
        for _ in 0..iters {
            let _ = black_box(rmp_serde::from_slice::<P>(black_box(&bytes)));
        }
    });
}

fn json_rows<P>(case: &mut Case, value: P)
where
    P: serde::Serialize + serde::de::DeserializeOwned + Clone + PartialEq + Debug + 'static,
{
    const LIB: &str = "serde_json";
    let bytes = serde_json::to_vec(&value).expect(LIB);
    assert_eq!(
        serde_json::from_slice::<P>(&bytes).expect(LIB),
        value,
        "{LIB}"
    );
    case.wire.push((LIB, bytes.len()));

    let v = value.clone();
    case.push(LIB, Op::EncodeFresh, move |iters| {
        for _ in 0..iters {
            let _ = black_box(serde_json::to_vec(black_box(&v)));
        }
    });
    let mut buf = Vec::with_capacity(bytes.len());
    case.push(LIB, Op::EncodeReuse, move |iters| {
        for _ in 0..iters {
            buf.clear();
            let _ = black_box(serde_json::to_writer(&mut buf, black_box(&value)));
        }
    });
    case.push(LIB, Op::Decode, move |iters| {
        for _ in 0..iters {
            let _ = black_box(serde_json::from_slice::<P>(black_box(&bytes)));
        }
    });
}

/// The floor for `PlayerMoved`: its 16-byte memory image, copied.
fn raw_player_moved(case: &mut Case, value: zm::PlayerMoved) {
    let bytes = value.as_bytes().to_vec();
    assert_eq!(zm::PlayerMoved::read_from_bytes(&bytes), Ok(value), "{RAW}");
    case.wire.push((RAW, bytes.len()));

    case.push(RAW, Op::EncodeFresh, move |iters| {
        for _ in 0..iters {
            black_box(black_box(&value).as_bytes().to_vec());
        }
    });
    let mut buf = buffer_for(bytes.len());
    case.push(RAW, Op::EncodeReuse, move |iters| {
        for _ in 0..iters {
            let src = black_box(&value).as_bytes();
            black_box(&mut buf)[..src.len()].copy_from_slice(src);
        }
    });
    case.push(RAW, Op::Decode, move |iters| {
        for _ in 0..iters {
            let _ = black_box(zm::PlayerMoved::read_from_bytes(black_box(&bytes)));
        }
    });
}

/// The floor for `WorldSnapshot`: tick and count as `u32`s, then the
/// players' memory image, copied; decode copies it into a new or a warmed
/// `Vec`. Bounds are checked (a slice length), nothing else is.
fn raw_world_snapshot(case: &mut Case, value: zm::WorldSnapshot) {
    fn encode(value: &zm::WorldSnapshot, buf: &mut [u8]) -> usize {
        let players = value.players.as_bytes();
        let end = 8 + players.len();
        buf[..4].copy_from_slice(&value.tick.to_le_bytes());
        buf[4..8].copy_from_slice(&(value.players.len() as u32).to_le_bytes());
        buf[8..end].copy_from_slice(players);
        end
    }
    fn split(bytes: &[u8]) -> Option<(u32, &[zm::PlayerState])> {
        let (tick, rest) = u32::read_from_prefix(bytes).ok()?;
        let (count, rest) = u32::read_from_prefix(rest).ok()?;
        let players = <[zm::PlayerState]>::ref_from_bytes(rest).ok()?;
        (players.len() == count as usize).then_some((tick, players))
    }
    fn decode(bytes: &[u8]) -> Option<zm::WorldSnapshot> {
        let (tick, players) = split(bytes)?;
        Some(zm::WorldSnapshot {
            tick,
            players: players.to_vec(),
        })
    }
    fn decode_in_place(target: &mut zm::WorldSnapshot, bytes: &[u8]) -> Option<()> {
        let (tick, players) = split(bytes)?;
        target.tick = tick;
        target.players.clear();
        target.players.extend_from_slice(players);
        Some(())
    }

    let mut bytes = vec![0u8; 8 + value.players.as_bytes().len()];
    encode(&value, &mut bytes);
    assert_eq!(decode(&bytes).as_ref(), Some(&value), "{RAW}");
    case.wire.push((RAW, bytes.len()));

    let v = value.clone();
    case.push(RAW, Op::EncodeFresh, move |iters| {
        for _ in 0..iters {
            let v = black_box(&v);
            let mut out = vec![0u8; 8 + v.players.as_bytes().len()];
            encode(v, &mut out);
            black_box(out);
        }
    });
    let v = value.clone();
    let mut buf = buffer_for(bytes.len());
    case.push(RAW, Op::EncodeReuse, move |iters| {
        for _ in 0..iters {
            black_box(encode(black_box(&v), black_box(&mut buf)));
        }
    });
    let b = bytes.clone();
    case.push(RAW, Op::Decode, move |iters| {
        for _ in 0..iters {
            black_box(decode(black_box(&b)));
        }
    });
    let mut warm = value;
    case.push(RAW, Op::DecodeInPlace, move |iters| {
        for _ in 0..iters {
            black_box(decode_in_place(black_box(&mut warm), black_box(&bytes)));
        }
    });
}
