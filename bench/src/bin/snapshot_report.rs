//! Snapshot bandwidth and cost (issue 13): writes the marked "Snapshots"
//! section of BENCHMARKS.md from one run.
//!
//! ```sh
//! cargo run --release -p zao-bench --bin snapshot_report            # full run, writes BENCHMARKS.md
//! cargo run --release -p zao-bench --bin snapshot_report -- --quick # a short run, prints only
//! ```
//!
//! The workload (`bench/benches/support/world.rs`, seeded): 1024 players over
//! ±2 km at 60 Hz, a third idle, most walking at 5 m/s and turning, some
//! sprinting at 10 m/s, three joining and three leaving a second.
//!
//! 1. **Bytes per client per tick** for the same world in every format:
//!    Zao's full snapshot of the `f32` data (as `send_snapshot` chunks it),
//!    Zao's quantized keyframe and deltas (baselines 1, 3 and 10 ticks
//!    old, as `send_delta_snapshot` chunks them), bitcode and bincode on
//!    the `f32` data, bitcode on the quantized integers, bitcode on a
//!    simple hand-written delta of them, and the raw memory image. Every
//!    delta is applied back and checked.
//! 2. **Server CPU per tick** broadcasting to 64 and 256 clients whose
//!    round trips spread from 20 to 300 ms, delta against today's full
//!    snapshot, side by side on the simulated network (quinn-proto's QUIC,
//!    real encryption, no sockets): the send call plus the server's QUIC
//!    work.
//! 3. **Client cost**: applying a tick's delta, against decoding a full
//!    snapshot.

// Report code on our own values: a panic is a broken report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

#[path = "../../benches/support/world.rs"]
#[allow(dead_code)]
mod world;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use glam::Vec3;
use zao::proto::{
    Channel, ClientEvent, DeltaReceiver, Direction, Limits, Protocol, SnapshotChunk,
    SnapshotHistory, Target, encode_chunks,
};
use zao::sim::{LinkSpec, Sim, SimClient, SimClientConfig, SimServerConfig};
use zao::zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};
use zao::{Decode, Encode, NetMessage, Snapshot, SnapshotItem};
use zao_messages::{EntitySnapshot, EntityState};

use world::World;
use zao_perf::{Section, percentile, us};

const HZ: u32 = 60;
const PLAYERS: usize = 1024;
const SEED: u64 = 1;

/// The `f32` world as Zao sends it today: 20 bytes a player, blittable.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Encode,
    Decode,
    SnapshotItem,
    FromBytes,
    IntoBytes,
    Immutable,
    KnownLayout,
)]
#[zerocopy(crate = "zao::zerocopy")]
#[zao(blittable)]
#[repr(C)]
struct FloatState {
    #[zao(key)]
    entity: u32,
    position: Vec3,
    heading: f32,
}

/// The full snapshot of the `f32` world.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage, Snapshot)]
#[zao(id = 40)]
struct FloatSnapshot {
    #[zao(tick)]
    tick: u32,
    #[zao(items)]
    players: Vec<FloatState>,
}

/// The peers' mirrors.
mod peer {
    #[derive(bitcode::Encode, bincode::Encode)]
    pub(crate) struct Float {
        pub(crate) entity: u32,
        pub(crate) position: [f32; 3],
        pub(crate) heading: f32,
    }

    #[derive(bitcode::Encode, bincode::Encode)]
    pub(crate) struct Floats {
        pub(crate) tick: u32,
        pub(crate) players: Vec<Float>,
    }

    #[derive(Clone, Copy, PartialEq, bitcode::Encode, bitcode::Decode)]
    pub(crate) struct Quant {
        pub(crate) entity: u32,
        pub(crate) position: [u32; 3],
        pub(crate) heading: u16,
    }

    #[derive(bitcode::Encode, bitcode::Decode)]
    pub(crate) struct Quants {
        pub(crate) tick: u32,
        pub(crate) players: Vec<Quant>,
    }

    /// A changed player: its index in the baseline's list and the change
    /// of each quantized value.
    #[derive(bitcode::Encode, bitcode::Decode)]
    pub(crate) struct Changed {
        pub(crate) index: u32,
        pub(crate) position: [i32; 3],
        pub(crate) heading: i16,
    }

    /// What a user would write by hand around a general-purpose codec.
    #[derive(bitcode::Encode, bitcode::Decode)]
    pub(crate) struct HandDelta {
        pub(crate) tick: u32,
        pub(crate) changed: Vec<Changed>,
        pub(crate) added: Vec<Quant>,
        pub(crate) removed: Vec<u32>,
    }
}

fn quant(e: &EntityState) -> peer::Quant {
    peer::Quant {
        entity: e.entity,
        position: e.position.steps(),
        heading: e.heading.step() as u16,
    }
}

/// The hand-written delta of `cur` against `base` (both by entity).
fn hand_delta(base: &[peer::Quant], cur: &[peer::Quant], tick: u32) -> peer::HandDelta {
    let mut d = peer::HandDelta {
        tick,
        changed: Vec::new(),
        added: Vec::new(),
        removed: Vec::new(),
    };
    let (mut i, mut j) = (0, 0);
    while i < base.len() || j < cur.len() {
        match (base.get(i), cur.get(j)) {
            (Some(b), Some(c)) if b.entity == c.entity => {
                if b != c {
                    d.changed.push(peer::Changed {
                        index: i as u32,
                        position: [0, 1, 2].map(|k| c.position[k] as i32 - b.position[k] as i32),
                        heading: c.heading.wrapping_sub(b.heading) as i16,
                    });
                }
                i += 1;
                j += 1;
            }
            (Some(b), c) if c.is_none_or(|c| b.entity < c.entity) => {
                d.removed.push(b.entity);
                i += 1;
            }
            (_, Some(c)) => {
                d.added.push(*c);
                j += 1;
            }
            _ => break,
        }
    }
    d
}

/// Applies a hand-written delta, to check it.
fn apply_hand(base: &[peer::Quant], d: &peer::HandDelta) -> Vec<peer::Quant> {
    let mut out: Vec<peer::Quant> = base.to_vec();
    for c in &d.changed {
        let b = &mut out[c.index as usize];
        for k in 0..3 {
            b.position[k] = (b.position[k] as i32 + c.position[k]) as u32;
        }
        b.heading = b.heading.wrapping_add(c.heading as u16);
    }
    out.retain(|p| !d.removed.contains(&p.entity));
    out.extend(d.added.iter().copied());
    out.sort_by_key(|p| p.entity);
    out
}

fn float_snapshot(world: &World) -> FloatSnapshot {
    FloatSnapshot {
        tick: world.tick,
        players: world
            .floats()
            .into_iter()
            .map(|(entity, p, heading)| FloatState {
                entity,
                position: Vec3::from_array(p),
                heading,
            })
            .collect(),
    }
}

fn datagram_bytes(chunks: &[Bytes]) -> usize {
    chunks.iter().map(Bytes::len).sum()
}

/// Bytes per tick of every format, averaged; encode and apply times.
#[derive(Default)]
struct Sizes {
    ticks: usize,
    rows: BTreeMap<&'static str, u64>,
    encode_keyframe: Vec<Duration>,
    encode_delta: Vec<Duration>,
    apply_delta: Vec<Duration>,
    build_delta: Vec<Duration>,
    decode_full: Vec<Duration>,
    chunks_delta: Vec<usize>,
    chunks_full: Vec<usize>,
}

const ZAO_FULL: &str = "Zao full (f32, send_snapshot chunks)";
const ZAO_KEY: &str = "Zao quantized keyframe";
const ZAO_D1: &str = "Zao delta, baseline 1 tick old";
const ZAO_D3: &str = "Zao delta, baseline 3 ticks old";
const ZAO_D10: &str = "Zao delta, baseline 10 ticks old";
const BITCODE_F32: &str = "bitcode, f32 data";
const BINCODE_F32: &str = "bincode, f32 data";
const BITCODE_Q: &str = "bitcode, quantized integers";
const HAND_D1: &str = "bitcode, hand-written delta, baseline 1 tick old";
const HAND_D3: &str = "bitcode, hand-written delta, baseline 3 ticks old";
const HAND_D10: &str = "bitcode, hand-written delta, baseline 10 ticks old";
const RAW: &str = "raw copy (f32 memory image)";
const ROWS: [&str; 12] = [
    ZAO_FULL,
    ZAO_KEY,
    ZAO_D1,
    ZAO_D3,
    ZAO_D10,
    BITCODE_F32,
    BINCODE_F32,
    BITCODE_Q,
    HAND_D1,
    HAND_D3,
    HAND_D10,
    RAW,
];

impl Sizes {
    fn add(&mut self, row: &'static str, bytes: usize) {
        *self.rows.entry(row).or_default() += bytes as u64;
    }

    fn mean(&self, row: &str) -> f64 {
        self.rows.get(row).copied().unwrap_or(0) as f64 / self.ticks.max(1) as f64
    }
}

/// Part 1 and 3: every format on `ticks` ticks after a warm-up.
fn sizes(ticks: usize) -> Sizes {
    let mut world = World::new(SEED, PLAYERS, HZ);
    for _ in 0..HZ {
        world.step();
    }
    let mut history = SnapshotHistory::<EntitySnapshot>::new(16);
    let mut receiver = DeltaReceiver::<EntitySnapshot>::new();
    let mut past: VecDeque<(u64, Vec<peer::Quant>)> = VecDeque::new();
    let mut scratch = BytesMut::with_capacity(2048);
    let mut chunks = Vec::new();
    let mut full = FloatSnapshot {
        tick: 0,
        players: Vec::new(),
    };
    let mut s = Sizes::default();
    let bitcode_config = bincode::config::standard();
    for seq in 1..=(ticks as u64 + 10) {
        world.step();
        let floats = float_snapshot(&world);
        let snapshot = world.snapshot();
        history.stage(seq, &snapshot).unwrap();
        let mut sorted: Vec<peer::Quant> = snapshot.entities.iter().map(quant).collect();
        sorted.sort_by_key(|p| p.entity);
        let measured = seq > 10;

        // The client: apply this tick's delta against the snapshot 3
        // ticks old (keyframes until it has one) and check it.
        let baseline = seq.saturating_sub(3);
        chunks.clear();
        history.encode(baseline, &mut scratch, &mut chunks).unwrap();
        let started = Instant::now();
        for chunk in &chunks {
            let chunk = parse(chunk);
            receiver.handle_chunk(&chunk).unwrap();
        }
        let applied = started.elapsed();
        let started = Instant::now();
        let rebuilt = receiver.snapshot(seq).unwrap().unwrap();
        let built = started.elapsed();
        let mut want = snapshot.clone();
        want.entities.sort_by_key(|e| e.entity);
        assert_eq!(rebuilt.snapshot, want, "delta of tick {seq} applied back");

        if measured {
            s.ticks += 1;
            s.apply_delta.push(applied);
            s.build_delta.push(built);
            s.chunks_delta.push(chunks.len());
            for (row, k) in [(ZAO_D1, 1u64), (ZAO_D3, 3), (ZAO_D10, 10)] {
                chunks.clear();
                let started = Instant::now();
                history.encode(seq - k, &mut scratch, &mut chunks).unwrap();
                if k == 3 {
                    s.encode_delta.push(started.elapsed());
                }
                s.add(row, datagram_bytes(&chunks));
            }
            chunks.clear();
            let started = Instant::now();
            history.encode(0, &mut scratch, &mut chunks).unwrap();
            s.encode_keyframe.push(started.elapsed());
            s.add(ZAO_KEY, datagram_bytes(&chunks));

            chunks.clear();
            encode_chunks(&floats, seq, &mut scratch, &mut chunks).unwrap();
            s.add(ZAO_FULL, datagram_bytes(&chunks));
            s.chunks_full.push(chunks.len());
            let started = Instant::now();
            for chunk in &chunks {
                // A chunk's message after the 4-byte-or-so header.
                let message = full_message(chunk);
                full.decode_in_place(black_box(&message[varint_len(&message)..]))
                    .unwrap();
                black_box(&full);
            }
            s.decode_full.push(started.elapsed());

            let peer_floats = peer::Floats {
                tick: floats.tick,
                players: floats
                    .players
                    .iter()
                    .map(|p| peer::Float {
                        entity: p.entity,
                        position: p.position.to_array(),
                        heading: p.heading,
                    })
                    .collect(),
            };
            s.add(BITCODE_F32, bitcode::encode(&peer_floats).len());
            s.add(
                BINCODE_F32,
                bincode::encode_to_vec(&peer_floats, bitcode_config)
                    .unwrap()
                    .len(),
            );
            let quants = peer::Quants {
                tick: snapshot.tick,
                players: snapshot.entities.iter().map(quant).collect(),
            };
            s.add(BITCODE_Q, bitcode::encode(&quants).len());
            for (row, k) in [(HAND_D1, 1u64), (HAND_D3, 3), (HAND_D10, 10)] {
                let base = &past.iter().find(|(t, _)| *t == seq - k).unwrap().1;
                let d = hand_delta(base, &sorted, snapshot.tick);
                let bytes = bitcode::encode(&d);
                let back: peer::HandDelta = bitcode::decode(&bytes).unwrap();
                assert!(apply_hand(base, &back) == sorted, "hand delta applies");
                s.add(row, bytes.len());
            }
            s.add(RAW, 8 + floats.players.as_bytes().len());
        }
        history.commit();
        past.push_back((seq, sorted));
        if past.len() > 11 {
            past.pop_front();
        }
    }
    s
}

fn varint_len(message: &[u8]) -> usize {
    message
        .iter()
        .position(|b| b & 0x80 == 0)
        .map_or(0, |i| i + 1)
}

/// The message of a snapshot datagram (kind 02).
fn full_message(datagram: &Bytes) -> Bytes {
    match zao::proto::split_datagram(datagram).unwrap() {
        zao::proto::ParsedDatagram::Snapshot(_, message) => message,
        _ => unreachable!("a snapshot datagram"),
    }
}

/// A delta datagram as a client receives it.
fn parse(datagram: &Bytes) -> SnapshotChunk {
    match zao::proto::split_datagram(datagram).unwrap() {
        zao::proto::ParsedDatagram::Delta(header, message) => SnapshotChunk {
            header,
            message: zao::proto::Received::parse(message).unwrap(),
        },
        _ => unreachable!("a delta datagram"),
    }
}

/// Part 2: one broadcast cell.
struct Cpu {
    clients: usize,
    /// Server CPU per tick (send call + QUIC work), µs: full, delta.
    full_us: f64,
    delta_us: f64,
    /// The send call alone, µs.
    full_call_us: f64,
    delta_call_us: f64,
    encodes: f64,
    baselines: f64,
    /// Ticks where the encode count equals the distinct baselines the
    /// clients saw, of those measured.
    equal: usize,
    ticks: usize,
    /// Delta bytes per client per tick, with baselines as old as each
    /// client's round trip.
    delta_bytes: f64,
    /// Clients given a keyframe, over the measured ticks.
    keyframes: usize,
}

/// What one block of ticks cost.
#[derive(Default)]
struct Block {
    ticks: usize,
    /// The server's QUIC work.
    busy: Duration,
    /// The send calls.
    call: Duration,
    encodes: Vec<(u64, usize)>,
    /// Delta bytes over every client.
    bytes: usize,
    keyframes: usize,
}

struct Fleet {
    sim: Sim,
    server: zao::sim::SimServer,
    clients: Vec<(SimClient, DeltaReceiver<EntitySnapshot>, u64)>,
    world: World,
    seq_baselines: BTreeMap<u64, BTreeSet<u64>>,
}

fn protocol() -> Protocol {
    let mut p = Protocol::new();
    p.add::<FloatSnapshot>(Channel::SNAPSHOT, Direction::ServerToClient)
        .add::<EntitySnapshot>(Channel::SNAPSHOT, Direction::ServerToClient);
    p
}

impl Fleet {
    fn new(clients: usize) -> Self {
        let mut limits = Limits::default();
        limits.handshake_timeout = Duration::from_secs(30);
        limits.max_clients = clients.max(1);
        let mut sim = Sim::new(SEED);
        let mut config = SimServerConfig::new(protocol());
        config.limits = limits.clone();
        let server = sim.start_server(config).unwrap();
        let clients: Vec<_> = (0..clients)
            .map(|i| {
                // One-way 10 to 150 ms: round trips from 20 to 300 ms.
                let ms = 10 + (140 * i / clients.saturating_sub(1).max(1)) as u64;
                let mut config = SimClientConfig::new(protocol())
                    .with_link(LinkSpec::latency(Duration::from_millis(ms)));
                config.limits = limits.clone();
                (sim.connect(config).unwrap(), DeltaReceiver::new(), 0)
            })
            .collect();
        let mut fleet = Self {
            sim,
            server,
            clients,
            world: World::new(SEED, PLAYERS, HZ),
            seq_baselines: BTreeMap::new(),
        };
        while !fleet.clients.iter().all(|c| c.0.is_connected()) {
            fleet.sim.run_for(Duration::from_millis(10));
            assert!(
                fleet.sim.elapsed() < Duration::from_secs(30),
                "clients connect"
            );
        }
        fleet
    }

    /// Plays `ticks` ticks of one mode.
    fn play(&mut self, delta: bool, ticks: usize) -> Block {
        let period = Duration::from_secs(1) / HZ;
        let busy = self.sim.server_busy();
        let mut b = Block::default();
        for _ in 0..ticks {
            self.world.step();
            if delta {
                let snapshot = self.world.snapshot();
                let started = Instant::now();
                let sent = self
                    .server
                    .send_delta_snapshot(Target::All, &snapshot)
                    .unwrap();
                b.call += started.elapsed();
                b.encodes.push((sent.seq, sent.encodes));
                b.bytes += sent.sent_bytes;
                b.keyframes += sent.keyframes;
            } else {
                let snapshot = float_snapshot(&self.world);
                let started = Instant::now();
                self.server.send_snapshot(Target::All, &snapshot).unwrap();
                b.call += started.elapsed();
            }
            self.sim.run_for(period);
            self.poll();
        }
        b.busy = self.sim.server_busy() - busy;
        b.ticks = ticks;
        b
    }

    fn poll(&mut self) {
        while self.server.poll_event().is_some() {}
        for (client, receiver, acked) in &mut self.clients {
            while let Some(event) = client.poll_event() {
                if let ClientEvent::Disconnected { reason } = event {
                    panic!("a client disconnected: {reason}");
                }
            }
            while let Some(chunk) = client.poll_snapshot() {
                self.seq_baselines
                    .entry(chunk.header.seq)
                    .or_default()
                    .insert(chunk.header.baseline);
                let _ = receiver.handle_chunk(&chunk);
            }
            let ack = receiver.ack();
            if ack.newest != *acked {
                client.send_acks(&[ack]).unwrap();
                *acked = ack.newest;
            }
        }
    }
}

/// Part 2 for `clients` clients: `rounds` rounds, each a block of full
/// broadcast and a block of delta broadcast (after a warm-up of each, so
/// the delta block starts with acks in flight), alternating which goes
/// first.
fn cpu(clients: usize, rounds: usize, block: usize) -> Cpu {
    eprintln!("broadcast to {clients} clients");
    let mut fleet = Fleet::new(clients);
    let warm = HZ as usize / 2;
    let (mut full, mut delta) = (Block::default(), Block::default());
    for round in 0..rounds {
        for full_first in [round % 2 == 0, round % 2 == 1] {
            fleet.play(!full_first, warm);
            let b = fleet.play(!full_first, block);
            let into = if full_first { &mut full } else { &mut delta };
            into.ticks += b.ticks;
            into.busy += b.busy;
            into.call += b.call;
            into.encodes.extend(b.encodes);
            into.bytes += b.bytes;
            into.keyframes += b.keyframes;
        }
    }
    // Let the last chunks arrive before counting baselines.
    for _ in 0..30 {
        fleet.sim.run_for(Duration::from_millis(20));
        fleet.poll();
    }
    let per_tick = |d: Duration, n: usize| d.as_secs_f64() * 1e6 / n.max(1) as f64;
    let mut equal = 0;
    let mut baselines = 0usize;
    for (seq, e) in &delta.encodes {
        let seen = fleet.seq_baselines.get(seq).map_or(0, BTreeSet::len);
        baselines += seen;
        equal += usize::from(seen == *e);
    }
    let encodes = &delta.encodes;
    let n = encodes.len().max(1);
    Cpu {
        clients,
        full_us: per_tick(full.busy + full.call, full.ticks),
        delta_us: per_tick(delta.busy + delta.call, delta.ticks),
        full_call_us: per_tick(full.call, full.ticks),
        delta_call_us: per_tick(delta.call, delta.ticks),
        encodes: encodes.iter().map(|e| e.1).sum::<usize>() as f64 / n as f64,
        baselines: baselines as f64 / n as f64,
        equal,
        ticks: encodes.len(),
        delta_bytes: delta.bytes as f64 / (delta.ticks * clients).max(1) as f64,
        keyframes: delta.keyframes,
    }
}

fn verdict(ok: bool) -> &'static str {
    if ok { "holds" } else { "MISSES" }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let started = Instant::now();
    let ticks = if quick { 120 } else { 600 };
    eprintln!("sizes over {ticks} ticks");
    let s = sizes(ticks);
    let cells: Vec<Cpu> = if quick {
        vec![cpu(16, 1, 30)]
    } else {
        vec![cpu(64, 2, 120), cpu(256, 2, 120)]
    };
    let report = report(&s, &cells, started.elapsed(), quick);
    print!("{report}");
    if !quick {
        write_section(&report);
        eprintln!("wrote BENCHMARKS.md");
    }
}

fn report(s: &Sizes, cells: &[Cpu], took: Duration, quick: bool) -> String {
    let mut w = String::new();
    let kbit = |bytes: f64| bytes * f64::from(HZ) * 8.0 / 1000.0;
    let bitcode_f32 = s.mean(BITCODE_F32);
    let d3 = s.mean(ZAO_D3);
    let hand3 = s.mean(HAND_D3);
    let key = s.mean(ZAO_KEY);
    let bitcode_q = s.mean(BITCODE_Q);
    writeln!(w, "## Snapshots: bandwidth and cost").unwrap();
    writeln!(w).unwrap();
    writeln!(
        w,
        "Written by `cargo run --release -p zao-bench --bin snapshot_report`{} in {:.0} s. The workload (`bench/benches/support/world.rs`, seed {SEED}): {PLAYERS} players over ±2 km at {HZ} Hz on rolling ground, a third idle, 55 % walking at 5 m/s and turning, 12 % sprinting at 10 m/s, each changing gait and turn now and then; three join and three leave a second. Zao's quantized snapshot is `zao_messages::EntitySnapshot`: a position at 1 mm within ±4 km (`QVec3<-4096, 4096, 1000>`, 23 bits a component) and a 12-bit heading (`QAngle<12>`); the `f32` data is the entity, the position as three `f32` and the heading as an `f32` (20 bytes).",
        if quick { " -- --quick" } else { "" },
        took.as_secs_f64()
    )
    .unwrap();
    writeln!(w).unwrap();
    writeln!(w, "### Targets").unwrap();
    writeln!(w).unwrap();
    writeln!(
        w,
        "- Zao delta (baseline 3 ticks old) ≤ 20 % of bitcode on the `f32` data: {d3:.0} B vs {bitcode_f32:.0} B = {:.1} %: **{}**",
        100.0 * d3 / bitcode_f32,
        verdict(d3 <= 0.2 * bitcode_f32)
    )
    .unwrap();
    writeln!(
        w,
        "- Zao delta (baseline 3 ticks old) ≤ 60 % of bitcode on the simple hand-written delta (same baseline): {d3:.0} B vs {hand3:.0} B = {:.1} %: **{}**",
        100.0 * d3 / hand3,
        verdict(d3 <= 0.6 * hand3)
    )
    .unwrap();
    writeln!(
        w,
        "- Zao's quantized keyframe smaller than bitcode on the quantized integers: {key:.0} B vs {bitcode_q:.0} B ({:.1} %): **{}**",
        100.0 * key / bitcode_q,
        verdict(key < bitcode_q)
    )
    .unwrap();
    for c in cells {
        writeln!(
            w,
            "- Delta broadcast to {} clients ≤ 1.5× today's full broadcast in server CPU per tick: {:.0} µs vs {:.0} µs = {:.2}×: **{}**",
            c.clients,
            c.delta_us,
            c.full_us,
            c.delta_us / c.full_us,
            verdict(c.delta_us <= 1.5 * c.full_us)
        )
        .unwrap();
        writeln!(
            w,
            "- Encodes per tick equal the distinct baselines among {} clients: {} of {} ticks ({:.2} encodes, {:.2} distinct baselines a tick on average): **{}**",
            c.clients,
            c.equal,
            c.ticks,
            c.encodes,
            c.baselines,
            verdict(c.equal == c.ticks)
        )
        .unwrap();
    }
    writeln!(w).unwrap();
    writeln!(w, "### Bytes per client per tick").unwrap();
    writeln!(w).unwrap();
    writeln!(
        w,
        "Mean over {} ticks. Zao's rows are the datagrams `send_snapshot` / `send_delta_snapshot` hand to QUIC, chunk headers included ({:.1} chunks a full snapshot, {:.1} a delta 3 ticks old); the others are one encoded message each (they would need chunking of their own). Every delta was applied back and checked against the world.",
        s.ticks,
        mean_usize(&s.chunks_full),
        mean_usize(&s.chunks_delta),
    )
    .unwrap();
    writeln!(w).unwrap();
    writeln!(
        w,
        "| format | bytes a tick | kbit/s at {HZ} Hz | vs bitcode f32 |"
    )
    .unwrap();
    writeln!(w, "|---|--:|--:|--:|").unwrap();
    for row in ROWS {
        let b = s.mean(row);
        let name = if row.starts_with("Zao") {
            format!("**{row}**")
        } else {
            row.to_owned()
        };
        writeln!(
            w,
            "| {name} | {b:.0} | {:.0} | {:.1} % |",
            kbit(b),
            100.0 * b / bitcode_f32
        )
        .unwrap();
    }
    writeln!(w).unwrap();
    writeln!(w, "### Server CPU per tick, broadcasting").unwrap();
    writeln!(w).unwrap();
    writeln!(
        w,
        "On the simulated network (`zao::sim`): quinn-proto's QUIC with real encryption on a virtual clock, no sockets. Client `i` of `n` has a one-way latency of 10 + 140·i/(n−1) ms (round trips 20–300 ms), no loss; each applies deltas with a `DeltaReceiver` and acks once a tick. Full: `send_snapshot` of the `f32` world (today's broadcast); delta: `send_delta_snapshot` of the quantized world. **Server CPU** is the send call plus the server's QUIC work (`Sim::server_busy`: packetizing, encrypting, reading acks; socket system calls excluded, which would add per datagram and favour the delta further). Blocks of 120 ticks of each, alternating, after half a second of warm-up each; one run."
    )
    .unwrap();
    writeln!(w).unwrap();
    writeln!(
        w,
        "| clients | full: server CPU µs/tick | of which send call | delta: server CPU µs/tick | of which send call (encodes) | delta / full | encodes a tick | distinct baselines a tick | delta bytes per client per tick | keyframes sent |"
    )
    .unwrap();
    writeln!(w, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|").unwrap();
    for c in cells {
        writeln!(
            w,
            "| {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.2}× | {:.2} | {:.2} | {:.0} | {} |",
            c.clients,
            c.full_us,
            c.full_call_us,
            c.delta_us,
            c.delta_call_us,
            c.delta_us / c.full_us,
            c.encodes,
            c.baselines,
            c.delta_bytes,
            c.keyframes,
        )
        .unwrap();
    }
    writeln!(w).unwrap();
    writeln!(
        w,
        "Delta bytes here are larger than the table above's: each client's baseline is as old as its round trip (up to 18 ticks at 300 ms)."
    )
    .unwrap();
    writeln!(w).unwrap();
    writeln!(w, "### Encode and decode").unwrap();
    writeln!(w).unwrap();
    writeln!(
        w,
        "Medians over the ticks of the size run, one thread, release build.\n\n| operation | µs a tick |\n|---|--:|\n| server: encode the keyframe ({PLAYERS} players) | {} |\n| server: encode a delta 3 ticks old | {} |\n| client: apply a delta 3 ticks old (every chunk: decode, check, join) | {} |\n| client: then build the `EntitySnapshot` value | {} |\n| client: decode today's full snapshot (every chunk, `decode_in_place`) | {} |",
        us(percentile(&s.encode_keyframe, 0.5)),
        us(percentile(&s.encode_delta, 0.5)),
        us(percentile(&s.apply_delta, 0.5)),
        us(percentile(&s.build_delta, 0.5)),
        us(percentile(&s.decode_full, 0.5)),
    )
    .unwrap();
    w
}

fn mean_usize(v: &[usize]) -> f64 {
    v.iter().sum::<usize>() as f64 / v.len().max(1) as f64
}

fn write_section(section: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("bench/ sits in the workspace")
        .join("BENCHMARKS.md");
    Section::new("snapshots")
        .write(&path, section)
        .expect("write BENCHMARKS.md");
}
