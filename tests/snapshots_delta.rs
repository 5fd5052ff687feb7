//! Delta snapshots on the simulated network (issue 13, test matrix
//! "Snapshot" guarantees): the server broadcasts a moving world with
//! `send_delta_snapshot` every tick; each client applies chunks with a
//! `DeltaReceiver`, acknowledges what it holds, and renders through a
//! `JitterBuffer`.
//!
//! - Every chunk a client applies holds exactly the server's quantized
//!   items of its tick, and every snapshot it completes is exactly the
//!   server's world at that tick (L2, L3, L5, several chunks a snapshot).
//! - Through the jitter buffer, the ticks usable before their render time
//!   are at least (1 − loss) − 2 % (L1, L2, L3, L6).
//! - The server encodes each tick once per distinct baseline among its
//!   clients, never once per client.
//!
//! Each scenario prints its figures (`--nocapture`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

#[path = "../bench/benches/support/world.rs"]
#[allow(dead_code)]
mod world;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use zao::proto::{
    ApplyError, Channel, ClientEvent, DeltaReceiver, Direction, JitterBuffer, JitterConfig, Limits,
    Protocol, SnapshotChunk, Target,
};
use zao::sim::{LinkSpec, Sim, SimClient, SimClientConfig, SimServer, SimServerConfig};
use zao_messages::{EntitySnapshot, EntityState};

use world::World;

/// Virtual time between polls.
const STEP: Duration = Duration::from_millis(5);

fn protocol() -> Protocol {
    let mut p = zao_messages::protocol();
    p.add::<EntitySnapshot>(Channel::SNAPSHOT, Direction::ServerToClient);
    p
}

fn limits() -> Limits {
    let mut limits = Limits::default();
    // One attempt that may take longer than the default 10 s over L5's 1 s
    // latency.
    limits.handshake_timeout = Duration::from_secs(30);
    limits
}

/// What a scenario measured.
#[derive(Debug, Default)]
struct Report {
    ticks: u64,
    /// Per client.
    on_time: Vec<u64>,
    chunks_on_time: Vec<u64>,
    chunks_late: Vec<u64>,
    completed: Vec<u64>,
    chunks_applied: u64,
    items_checked: u64,
    snapshots_checked: u64,
    most_chunks: u32,
    missing_baseline: u64,
    malformed: u64,
    /// Per tick: encodes and the baselines clients saw.
    encodes: BTreeMap<u64, usize>,
    baselines: BTreeMap<u64, BTreeSet<u64>>,
    bytes_per_client: f64,
    /// Bytes queued to all clients, and of those the copies of earlier
    /// ticks' chunks sent to lossy clients.
    sent_bytes: u64,
    resent_bytes: u64,
    delay: Duration,
}

impl Report {
    /// The worst client's fraction of ticks usable before render time.
    fn usable(&self) -> f64 {
        self.on_time
            .iter()
            .map(|n| *n as f64 / self.ticks as f64)
            .fold(f64::INFINITY, f64::min)
    }

    fn print(&self, name: &str) {
        let chunks: Vec<String> = self
            .chunks_on_time
            .iter()
            .zip(&self.chunks_late)
            .map(|(a, b)| format!("{:.1} %", 100.0 * *a as f64 / (*a + *b).max(1) as f64))
            .collect();
        let encodes: f64 =
            self.encodes.values().sum::<usize>() as f64 / self.encodes.len().max(1) as f64;
        println!(
            "{name}: {} ticks x {} clients | usable before render time {:.1} % (worst client; chunks on time {}) | snapshots completed {:?}, {} checked exact, {} chunk items checked, up to {} chunks a snapshot | missing baseline {}, malformed {} | {:.0} B per client per tick, {encodes:.2} encodes per tick | render delay {:?}",
            self.ticks,
            self.on_time.len(),
            100.0 * self.usable(),
            chunks.join(", "),
            self.completed,
            self.snapshots_checked,
            self.items_checked,
            self.most_chunks,
            self.missing_baseline,
            self.malformed,
            self.bytes_per_client,
            self.delay,
        );
    }
}

struct Client {
    sim: SimClient,
    receiver: DeltaReceiver<EntitySnapshot>,
    jitter: JitterBuffer<EntityState>,
    acked: u64,
}

struct Run {
    sim: Sim,
    server: SimServer,
    clients: Vec<Client>,
    world: World,
    /// The server's world at each tick, items by key.
    sent: BTreeMap<u64, EntitySnapshot>,
    report: Report,
    sent_bytes: u64,
}

impl Run {
    /// A server and one client per link, connected over `connect` (if
    /// given) then playing over their links.
    fn new(
        seed: u64,
        links: &[LinkSpec],
        connect: Option<LinkSpec>,
        players: usize,
        hz: u32,
    ) -> Self {
        Self::with_limits(seed, links, connect, players, hz, &limits())
    }

    /// As [`new`](Self::new), every endpoint with `limits`.
    fn with_limits(
        seed: u64,
        links: &[LinkSpec],
        connect: Option<LinkSpec>,
        players: usize,
        hz: u32,
        limits: &Limits,
    ) -> Self {
        let mut sim = Sim::new(seed);
        let mut config = SimServerConfig::new(protocol());
        config.limits = limits.clone();
        let server = sim.start_server(config).unwrap();
        let tick = Duration::from_secs(1) / hz;
        let mut clients: Vec<Client> = links
            .iter()
            .map(|link| {
                let mut config = SimClientConfig::new(protocol())
                    .with_link(connect.clone().unwrap_or_else(|| link.clone()));
                config.limits = limits.clone();
                Client {
                    sim: sim.connect(config).unwrap(),
                    receiver: DeltaReceiver::new(),
                    jitter: JitterBuffer::new(JitterConfig::new(tick)),
                    acked: 0,
                }
            })
            .collect();
        let deadline = sim.elapsed() + Duration::from_secs(30);
        while sim.elapsed() < deadline && !clients.iter().all(|c| c.sim.is_connected()) {
            sim.run_for(STEP);
        }
        for (c, link) in clients.iter_mut().zip(links) {
            assert!(c.sim.is_connected(), "every client connects");
            sim.set_links(c.sim.node(), link.clone(), link.clone());
        }
        let n = clients.len();
        Self {
            sim,
            server,
            clients,
            world: World::new(seed, players, hz),
            sent: BTreeMap::new(),
            report: Report {
                on_time: vec![0; n],
                chunks_on_time: vec![0; n],
                chunks_late: vec![0; n],
                completed: vec![0; n],
                ..Report::default()
            },
            sent_bytes: 0,
        }
    }

    /// Plays `seconds` at `hz`, then lets the last snapshots arrive.
    fn play(&mut self, seconds: u32, hz: u32) {
        let period = Duration::from_secs(1) / hz;
        let start = self.sim.elapsed();
        for tick in 0..seconds * hz {
            let due = start + period * tick;
            while self.sim.elapsed() < due {
                self.sim.run_for(STEP.min(due - self.sim.elapsed()));
                self.poll();
            }
            self.world.step();
            let snapshot = self.world.snapshot();
            let sent = self
                .server
                .send_delta_snapshot(Target::All, &snapshot)
                .unwrap();
            self.server.flush();
            assert_eq!(u64::from(snapshot.tick), sent.seq, "one send a tick");
            self.report.encodes.insert(sent.seq, sent.encodes);
            self.sent_bytes += sent.sent_bytes as u64;
            self.report.resent_bytes += sent.resent_bytes as u64;
            let mut sorted = snapshot;
            sorted.entities.sort_by_key(|e| e.entity);
            self.sent.insert(sent.seq, sorted);
            self.report.ticks += 1;
        }
        for _ in 0..(3000 / STEP.as_millis() as u32) {
            self.sim.run_for(STEP);
            self.poll();
        }
        let r = &mut self.report;
        for (i, c) in self.clients.iter().enumerate() {
            let stats = c.jitter.stats();
            r.on_time[i] = stats.ticks_on_time;
            r.chunks_on_time[i] = stats.chunks_on_time;
            r.chunks_late[i] = stats.chunks_late;
            r.completed[i] = c.receiver.stats().completed;
            r.missing_baseline += c.receiver.stats().missing_baseline;
            r.malformed += c.receiver.stats().malformed;
            r.delay = r.delay.max(c.jitter.delay());
        }
        r.sent_bytes = self.sent_bytes;
        r.bytes_per_client = self.sent_bytes as f64 / (r.ticks as f64 * self.clients.len() as f64);
    }

    fn poll(&mut self) {
        let now = self.sim.now();
        while self.server.poll_event().is_some() {}
        for c in &mut self.clients {
            while let Some(event) = c.sim.poll_event() {
                if let ClientEvent::Disconnected { reason } = event {
                    panic!("client disconnected: {reason}");
                }
            }
            while let Some(chunk) = c.sim.poll_snapshot() {
                self.report
                    .baselines
                    .entry(chunk.header.seq)
                    .or_default()
                    .insert(chunk.header.baseline);
                check_chunk(c, &chunk, &self.sent, &mut self.report, now);
            }
            let ack = c.receiver.ack();
            if ack.newest != c.acked {
                c.sim.send_acks(&[ack]).unwrap();
                c.acked = ack.newest;
            }
            let _ = c.jitter.sample(now);
        }
    }
}

/// Applies one chunk and checks it against the server's world.
fn check_chunk(
    c: &mut Client,
    chunk: &SnapshotChunk,
    sent: &BTreeMap<u64, EntitySnapshot>,
    report: &mut Report,
    now: std::time::Instant,
) {
    let mut items = Vec::new();
    let applied = match c.receiver.handle_chunk_into(chunk, Some(&mut items)) {
        Ok(applied) => applied,
        // Dropped, never applied: counted in the receiver's stats.
        Err(ApplyError::MissingBaseline(_) | ApplyError::Duplicate | ApplyError::Stale) => return,
        Err(e) => panic!("chunk {:?}: {e}", chunk.header),
    };
    let server = &sent[&applied.seq];
    assert_eq!(applied.tick, u64::from(server.tick));
    for item in &items {
        let at = server
            .entities
            .binary_search_by_key(&item.entity, |e| e.entity)
            .unwrap_or_else(|_| panic!("entity {} is not in tick {}", item.entity, server.tick));
        assert_eq!(*item, server.entities[at], "tick {}", server.tick);
    }
    report.items_checked += items.len() as u64;
    report.chunks_applied += 1;
    report.most_chunks = report.most_chunks.max(applied.chunks);
    c.jitter.insert(now, applied.tick, applied.chunks, items);
    if applied.complete {
        let got = c.receiver.snapshot(applied.seq).unwrap().unwrap();
        assert!(got.is_complete());
        assert_eq!(got.snapshot, *server, "snapshot {} rebuilt", applied.seq);
        report.snapshots_checked += 1;
    }
}

/// (1 − loss) − 2 %: the matrix's bound.
fn bound(link: &LinkSpec) -> f64 {
    (1.0 - link.loss) - 0.02
}

/// The usable fraction through the jitter buffer, with a world whose
/// deltas fit one datagram (as the link matrix's snapshots).
fn usable(name: &str, link: LinkSpec) -> Report {
    let hz = 30;
    let mut run = Run::new(11, &[link.clone(), link.clone()], None, 64, hz);
    run.play(20, hz);
    run.report.print(name);
    assert_eq!(run.report.malformed, 0);
    let got = run.report.usable();
    let want = bound(&link);
    assert!(
        got >= want,
        "{name}: {:.1} % of ticks usable before render time, need {:.1} %",
        100.0 * got,
        100.0 * want
    );
    run.report
}

/// A world whose deltas over L3 take more than a datagram a tick (256
/// players at 60 Hz, against baselines a round trip old): a tick is lost
/// when any of its chunks is, so it needs the copies a lossy client gets
/// of each tick's chunks with the next tick's
/// (`Limits::delta_redundancy_loss`) to reach the bound.
#[test]
fn l3_ticks_of_several_chunks_stay_usable_with_copies_for_lossy_clients() {
    let hz = 60;
    let play = |redundancy: Option<f64>| {
        let mut limits = limits();
        limits.delta_redundancy_loss = redundancy;
        let links = [LinkSpec::l3(), LinkSpec::l3()];
        let mut run = Run::with_limits(12, &links, None, 256, hz, &limits);
        run.play(10, hz);
        run.report
    };
    let with = play(Limits::default().delta_redundancy_loss);
    with.print("L3, 256 players at 60 Hz, copies for lossy clients");
    let without = play(None);
    without.print("L3, 256 players at 60 Hz, no copies");
    assert!(without.most_chunks > 1, "deltas of more than one datagram");
    assert_eq!(without.resent_bytes, 0);
    // Each copy repeats a chunk sent before: at most twice the bytes.
    assert!(with.resent_bytes > 0);
    assert!(with.resent_bytes <= with.sent_bytes - with.resent_bytes);
    assert_eq!(with.malformed, 0);
    let need = bound(&LinkSpec::l3());
    assert!(
        with.usable() >= need,
        "with copies {:.1} % of ticks usable, need {:.1} %",
        100.0 * with.usable(),
        100.0 * need
    );
    assert!(with.usable() > without.usable());
}

#[test]
fn l1_ticks_usable_before_render_time() {
    let report = usable("L1", LinkSpec::l1());
    // 0.2 % loss, under `delta_redundancy_loss`: nothing is sent twice.
    assert_eq!(report.resent_bytes, 0);
}

#[test]
fn l2_ticks_usable_before_render_time() {
    usable("L2", LinkSpec::l2());
}

#[test]
fn l3_ticks_usable_before_render_time() {
    usable("L3", LinkSpec::l3());
}

#[test]
fn l6_ticks_usable_before_render_time() {
    usable("L6", LinkSpec::l6());
}

/// Every applied chunk and completed snapshot is exactly the server's,
/// with snapshots of several chunks.
fn exact(name: &str, link: LinkSpec, connect: Option<LinkSpec>, seconds: u32) -> Report {
    let hz = 30;
    let loss = link.loss;
    let mut run = Run::new(12, &[link.clone(), link], connect, 600, hz);
    run.play(seconds, hz);
    run.report.print(name);
    let r = run.report;
    assert_eq!(r.malformed, 0, "{name}");
    // The server only names baselines a client acknowledged and still keeps.
    assert_eq!(r.missing_baseline, 0, "{name}");
    assert!(r.most_chunks > 1, "{name}: snapshots of several chunks");
    // A snapshot completes only when every chunk of it arrives (datagrams
    // are not resent): at least (1 − loss)^chunks of the ticks for the
    // largest snapshots, less a quarter for chance.
    let floor = 0.75 * (1.0 - loss).powi(r.most_chunks as i32) * r.ticks as f64;
    for (i, done) in r.completed.iter().enumerate() {
        assert!(
            *done as f64 >= floor,
            "{name}: client {i} completed {done} snapshots of {}, under {floor:.0}",
            r.ticks
        );
    }
    r
}

#[test]
fn l2_every_applied_snapshot_is_the_servers_world() {
    let r = exact("L2 exact", LinkSpec::l2(), None, 15);
    // 2 % loss: most snapshots complete.
    assert!(
        r.completed
            .iter()
            .all(|n| *n as f64 >= 0.8 * r.ticks as f64),
        "{:?}",
        r.completed
    );
}

#[test]
fn l3_every_applied_snapshot_is_the_servers_world() {
    exact("L3 exact", LinkSpec::l3(), None, 15);
}

#[test]
fn l5_every_applied_snapshot_is_the_servers_world() {
    // QUIC's handshake under 25 % loss backs off for tens of seconds: the
    // clients connect over the latency alone (as tests/links.rs).
    exact(
        "L5 exact",
        LinkSpec::l5(),
        Some(LinkSpec::latency(Duration::from_secs(1))),
        20,
    );
}

#[test]
fn a_tick_is_encoded_once_per_distinct_baseline() {
    // Eight clients, round trips from 20 to 300 ms: their acks name
    // different baselines, and clients with the same one share its encode.
    let links: Vec<LinkSpec> = [10u64, 10, 10, 40, 40, 80, 150, 150]
        .iter()
        .map(|ms| LinkSpec::latency(Duration::from_millis(*ms)))
        .collect();
    let hz = 60;
    let mut run = Run::new(13, &links, None, 200, hz);
    run.play(5, hz);
    run.report.print("spread RTTs");
    let r = &run.report;
    for (seq, encodes) in &r.encodes {
        let seen = r.baselines.get(seq).map_or(0, BTreeSet::len);
        assert_eq!(*encodes, seen, "tick {seq}: encodes against baselines seen");
    }
    let total: usize = r.encodes.values().sum();
    assert!(
        total < r.encodes.len() * links.len() / 2,
        "{total} encodes for {} ticks x {} clients",
        r.encodes.len(),
        links.len()
    );
    assert!(
        r.encodes.values().any(|e| *e > 1),
        "the RTTs spread baselines"
    );
    assert_eq!(r.missing_baseline, 0);
}

#[test]
fn a_client_never_applies_a_delta_to_a_baseline_it_lacks() {
    // The client keeps 2 snapshots (and whole ones 64 more), the server
    // 128. A baseline is two one-way latencies old when its delta arrives:
    // at 750 ms each way, 90 ticks at 60 Hz, which the server still has
    // and the client has dropped. Those deltas are refused, keyframes and
    // deltas against what it holds follow; nothing it applies is wrong.
    let link = LinkSpec::latency(Duration::from_millis(750));
    let hz = 60;
    let mut run = Run::new(14, &[link], None, 100, hz);
    run.clients[0].receiver = DeltaReceiver::with_history(2);
    run.play(8, hz);
    run.report.print("short client history");
    assert!(run.report.missing_baseline > 0);
    // Until the server hears the client's first ack (a round trip, 1.5 s,
    // 90 ticks) it sends keyframes, each applied: at least 90 % of them.
    assert!(
        run.report.snapshots_checked >= 81,
        "{} snapshots applied",
        run.report.snapshots_checked
    );
    // A chunk naming a baseline no receiver ever held.
    let mut fresh = DeltaReceiver::<EntitySnapshot>::new();
    let chunk = delta_chunk_against(&mut run, 5).expect("a delta chunk");
    assert_eq!(
        fresh.handle_chunk(&chunk),
        Err(ApplyError::MissingBaseline(chunk.header.baseline))
    );
    assert_eq!(fresh.stats().missing_baseline, 1);
    assert_eq!(fresh.ack().newest, 0);
}

/// A delta chunk (not a keyframe) the server sends next, taken off a
/// client's queue.
fn delta_chunk_against(run: &mut Run, tries: usize) -> Option<SnapshotChunk> {
    for _ in 0..tries {
        run.world.step();
        let snapshot = run.world.snapshot();
        run.server
            .send_delta_snapshot(Target::All, &snapshot)
            .unwrap();
        run.sim.run_for(Duration::from_millis(200));
        while run.clients[0].sim.poll_event().is_some() {}
        while let Some(chunk) = run.clients[0].sim.poll_snapshot() {
            if chunk.header.baseline > 0 {
                return Some(chunk);
            }
        }
    }
    None
}
