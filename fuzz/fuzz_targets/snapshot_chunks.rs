//! Snapshot datagrams, both ways.
//!
//! Receive: arbitrary datagrams (raw bytes, and well-formed snapshot chunks
//! with arbitrary headers) through `split_datagram` and one
//! `SnapshotReceiver`, as the transport does. Never a panic; per message id
//! (the receiver's contract, src/proto/snapshot.rs): each (seq, chunk) is
//! delivered at most once, only if no newer seq was delivered at the same
//! chunk index, and a valid chunk of a seq newer than everything delivered
//! is always delivered (seq 0 aside: the receiver's "nothing yet", never
//! sent, as senders count from 1).
//! Unreliable datagrams split into non-empty messages that re-pack to the
//! same bytes.
//!
//! Pack: `UnreliablePacker` with an arbitrary datagram limit, fed messages
//! that fit a datagram alone (the transport refuses others before packing):
//! every datagram is within the limit and they split back into the same
//! messages in order.
//!
//! Send: `plan_chunks` of a `WorldSnapshot` of arbitrary size with an
//! arbitrary maximum part length: the chunks cover every player exactly
//! once, in order, each fits and all but the last are full, each decodes as
//! a `WorldSnapshot` holding its players bit for bit, and the chunks survive
//! `snapshot_datagram` / `split_datagram` / `SnapshotReceiver`.

#![no_main]
// Our code only: `fuzz_target!` expands to a `#[no_mangle] extern "C"` entry
// point, but lints do not fire inside another crate's macro expansion.
#![forbid(unsafe_code)]

use std::collections::{HashMap, HashSet};

use arbitrary::Arbitrary;
use bytes::{Bytes, BytesMut};
use glam::Vec3;
use libfuzzer_sys::fuzz_target;
use zao::proto::{
    MAX_CHUNKS, ParsedDatagram, Snapshot, SnapshotHeader, SnapshotReceiver, SnapshotVerdict,
    UnreliablePacker, plan_chunks, snapshot_datagram, split_datagram,
};
use zao::{Decode, Encode, NetMessage, Writer};
use zao_messages::{PlayerState, WorldSnapshot};

#[derive(Arbitrary, Debug)]
struct Input {
    datagrams: Vec<Datagram>,
    tick: u32,
    players: u16,
    seed: u32,
    max_part_len: u16,
    unreliable: Vec<Vec<u8>>,
    max_datagram: u16,
}

#[derive(Arbitrary, Debug)]
enum Datagram {
    Raw(Vec<u8>),
    /// A snapshot chunk built with `snapshot_datagram`. Small seqs, so that
    /// they collide; `high` moves them near `u64::MAX`.
    Chunk {
        id: u8,
        seq: u16,
        high: bool,
        chunk: u16,
        chunks: u16,
        body: Vec<u8>,
    },
}

/// A fixed bug's switch: `SnapshotReceiver` once forgot what it delivered
/// at each index when a snapshot's chunk count changed
/// (tests/fuzz_regressions.rs). `true` makes the model forget too, to look
/// past that bug if it ever returns; `false` checks the fixed rule.
const KNOWN_BUG_HISTORY_RESET_ON_COUNT_CHANGE: bool = false;

/// What has been delivered for one message id.
#[derive(Default)]
struct Seen {
    newest: Option<u64>,
    /// The chunk count of the last delivered chunk.
    chunks: Option<u32>,
    /// Per chunk index, the newest seq delivered there.
    by_index: HashMap<u32, u64>,
    delivered: HashSet<(u64, u32)>,
}

fuzz_target!(|input: Input| {
    receive(&input.datagrams);
    send(&input);
    pack(&input.unreliable, usize::from(input.max_datagram));
});

fn receive(datagrams: &[Datagram]) {
    let mut rx = SnapshotReceiver::new();
    let mut seen: HashMap<u32, Seen> = HashMap::new();
    let mut buf = BytesMut::new();
    for d in datagrams {
        let datagram = match d {
            Datagram::Raw(bytes) => Bytes::copy_from_slice(bytes),
            Datagram::Chunk {
                id,
                seq,
                high,
                chunk,
                chunks,
                body,
            } => {
                let seq = u64::from(*seq) | if *high { u64::MAX << 16 } else { 0 };
                let header = SnapshotHeader {
                    seq,
                    chunk: u32::from(*chunk),
                    chunks: u32::from(*chunks),
                };
                let mut message = varint(u64::from(*id));
                message.extend_from_slice(body);
                snapshot_datagram(&mut buf, header, message.len(), |w| w.put_slice(&message))
            }
        };
        match split_datagram(&datagram) {
            Ok(ParsedDatagram::Unreliable(messages)) => {
                let mut packed = vec![0x01];
                for m in &messages {
                    assert!(!m.is_empty(), "empty message in {datagram:02x?}");
                    packed.extend_from_slice(&varint(m.len() as u64));
                    packed.extend_from_slice(m);
                }
                assert_eq!(packed, &datagram[..]);
            }
            Ok(ParsedDatagram::Snapshot(h, message)) => {
                assert!(h.chunk < h.chunks, "{h:?}");
                assert!(!message.is_empty());
                // As the transport does: dispatch on the message id.
                let Ok((id, _)) = zao::split_message(&message) else {
                    continue;
                };
                let verdict = rx.handle_chunk(id, h);
                check_verdict(seen.entry(id).or_default(), h, verdict);
                if id == WorldSnapshot::ID && verdict == SnapshotVerdict::Deliver {
                    let _ = zao::decode_message::<WorldSnapshot>(&message);
                }
            }
            // Delta chunks and acks: `fuzz_targets/delta_chunks.rs`.
            Ok(_) | Err(_) => {}
        }
    }
}

fn check_verdict(seen: &mut Seen, h: SnapshotHeader, verdict: SnapshotVerdict) {
    let valid = h.chunk < h.chunks && h.chunks <= MAX_CHUNKS;
    let newest = seen.newest.is_none_or(|n| h.seq > n);
    if valid && newest && h.seq > 0 {
        assert_eq!(verdict, SnapshotVerdict::Deliver, "a newer chunk {h:?}");
    }
    if verdict == SnapshotVerdict::Deliver {
        assert!(valid, "delivered an invalid header {h:?}");
        if seen.chunks.is_some_and(|c| c != h.chunks) {
            assert!(newest, "delivered {h:?}, another chunk count, not newer");
            if KNOWN_BUG_HISTORY_RESET_ON_COUNT_CHANGE {
                seen.by_index.clear();
                seen.delivered.clear();
            }
        }
        seen.chunks = Some(h.chunks);
        assert!(
            seen.delivered.insert((h.seq, h.chunk)),
            "delivered {h:?} twice"
        );
        if let Some(&before) = seen.by_index.get(&h.chunk) {
            assert!(
                h.seq > before,
                "delivered {h:?} after seq {before} at the same index"
            );
        }
        seen.by_index.insert(h.chunk, h.seq);
        seen.newest = Some(seen.newest.map_or(h.seq, |n| n.max(h.seq)));
    }
}

fn send(input: &Input) {
    let n = usize::from(input.players) % 5001;
    let max = usize::from(input.max_part_len);
    let mut state = input.seed | 1;
    let mut bits = || {
        // xorshift32: arbitrary float bits, NaNs and subnormals included.
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    };
    let snap = WorldSnapshot {
        tick: input.tick,
        players: (0..n)
            .map(|i| PlayerState {
                entity: i as u32,
                position: Vec3::from_array([bits(), bits(), bits()].map(f32::from_bits)),
            })
            .collect(),
    };
    assert_eq!(snap.part_len(0..n), snap.encoded_len());

    let Some(plan) = plan_chunks(&snap, max) else {
        // Refused only when one player alone (or, empty, the snapshot
        // itself) does not fit, or the parts would be more than MAX_CHUNKS.
        let per_part = (1..=n).rev().find(|&k| snap.part_len(0..k) <= max);
        match per_part {
            None => assert!(
                n > 0 || snap.part_len(0..0) > max,
                "an empty snapshot refused at max {max}"
            ),
            Some(k) => assert!(
                n.div_ceil(k) > MAX_CHUNKS as usize,
                "{n} players refused at max {max}, {k} fit a part"
            ),
        }
        return;
    };
    if n == 0 {
        // An empty snapshot that fits is one part (one that does not is
        // refused, above).
        assert_eq!(plan, vec![0..0], "at max {max}");
        return;
    }
    assert!(plan.len() <= MAX_CHUNKS as usize);
    let mut next = 0;
    for (i, r) in plan.iter().enumerate() {
        assert_eq!(r.start, next, "plan {plan:?}");
        assert!(r.end > r.start, "empty part in {plan:?}");
        next = r.end;
        assert!(snap.part_len(r.clone()) <= max);
        if i + 1 < plan.len() {
            assert!(
                snap.part_len(r.start..r.end + 1) > max,
                "part {r:?} not full"
            );
        }
    }
    assert_eq!(next, n, "plan {plan:?} of {n}");

    let mut rx = SnapshotReceiver::new();
    let mut dgram = BytesMut::new();
    let chunks = plan.len() as u32;
    for (i, r) in plan.iter().enumerate() {
        let len = snap.part_len(r.clone());
        let mut part = vec![0u8; len];
        let mut w = Writer::new(&mut part);
        snap.encode_part(r.clone(), &mut w);
        assert_eq!(w.position(), len);
        let decoded = WorldSnapshot::decode(&part).expect("a part decodes");
        assert_eq!(decoded.tick, snap.tick);
        let want = WorldSnapshot {
            tick: snap.tick,
            players: snap.players[r.clone()].to_vec(),
        };
        assert_eq!(decoded.to_encoded_vec(), want.to_encoded_vec(), "part {r:?}");

        let header = SnapshotHeader {
            seq: 7,
            chunk: i as u32,
            chunks,
        };
        let id = varint(u64::from(WorldSnapshot::ID));
        let datagram = snapshot_datagram(&mut dgram, header, id.len() + len, |w| {
            w.put_slice(&id);
            w.put_slice(&part);
        });
        let Ok(ParsedDatagram::Snapshot(h, message)) = split_datagram(&datagram) else {
            panic!("datagram of part {r:?} did not parse");
        };
        assert_eq!(h, header);
        let msg = zao::decode_message::<WorldSnapshot>(&message).expect("a chunk decodes");
        assert_eq!(msg.to_encoded_vec(), part);
        assert_eq!(
            rx.handle_chunk(WorldSnapshot::ID, h),
            SnapshotVerdict::Deliver
        );
        assert_eq!(
            rx.handle_chunk(WorldSnapshot::ID, h),
            SnapshotVerdict::Duplicate
        );
    }
}

fn pack(messages: &[Vec<u8>], max: usize) {
    let mut packer = UnreliablePacker::new();
    let mut datagrams = Vec::new();
    let mut sent = Vec::new();
    for m in messages {
        // As the transport's send path: a message is `id + body`, never
        // empty, and one that does not fit a datagram alone (kind byte,
        // length, message) is refused before it reaches the packer.
        if m.is_empty() || 1 + varint(m.len() as u64).len() + m.len() > max {
            continue;
        }
        datagrams.extend(packer.push(m, max));
        sent.push(&m[..]);
    }
    datagrams.extend(packer.flush());
    assert!(packer.is_empty());
    let mut got = Vec::new();
    for d in &datagrams {
        assert!(d.len() <= max, "datagram of {} bytes, max {max}", d.len());
        match split_datagram(d) {
            Ok(ParsedDatagram::Unreliable(messages)) => got.extend(messages),
            other => panic!("packed datagram {d:02x?} parsed as {other:?}"),
        }
    }
    assert_eq!(got, sent);
}

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}
