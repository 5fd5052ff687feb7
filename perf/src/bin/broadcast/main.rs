//! What one server tick costs to broadcast a `WorldSnapshot` at 60 Hz, over
//! real loopback QUIC in one process, and how far one server scales:
//!
//! ```sh
//! cargo run --release -p zao-perf --bin broadcast            # full run, writes BENCHMARKS.md
//! cargo run --release -p zao-perf --bin broadcast -- --quick # 16 clients × 32 players, 1 s, prints only
//! cargo run --release -p zao-perf --bin broadcast -- --profile a 256 1024 10  # one variant, for perf
//! ```
//!
//! Three ways to send the same snapshot to every client, each tick:
//!
//! - **(a) fan-out**: `send_snapshot(Target::All, ..)`: each chunk encoded
//!   once, its `Bytes` shared by every client.
//! - **(b) per client**: `send_snapshot(Target::One(c), ..)` for each client:
//!   the chunks encoded again for every client.
//! - **(c) bare quinn**: a bare quinn server with zao's TLS and transport
//!   settings sending the very datagrams zao sends (`zao::proto::encode_chunks`,
//!   the encoder `send_snapshot` calls, once per tick), client by client as
//!   zao does: `send_datagram` per client per chunk and nothing else.
//!
//! The clients are a `zao_perf::Fleet`: raw quinn connections on one shared
//! tokio runtime, each with its own socket, that count the datagrams they
//! read; towards zao's server they complete zao's handshake and send its
//! heartbeat. Per tick the tool times the send call(s) and the whole tick's
//! work; per run it takes every thread's CPU time: the server's is the tick
//! thread and the sending server's runtime (for zao, the threads
//! `Server::start` started), the process's is everything. The
//! variants of a cell take turns, round by round, so a noisy neighbour hits
//! each alike.
//!
//! Then the scale search (fan-out only: the most clients × players whose
//! tick p99 stays under 16 ms with ≥ 95 % delivered), memory per connected
//! client, and slow clients that stop reading their socket while the server
//! keeps sending.

// Bench code on our own sample values: a panic is a broken report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod report;

use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::runtime::Runtime;
use zao::proto::encode_chunks;
use zao::quic::{Certificate, ClientId, Limits, Server, ServerConfig, Target};
use zao_messages::{WorldSnapshot, samples};
use zao_perf::{
    BareServer, Fleet, FleetConfig, Section, ThreadCpu, current_thread_id, load_average,
    per_tick_us, percentile, rss_kib,
};

use report::Report;

const HZ: f64 = 60.0;
/// Clients and players of the cost table.
const CLIENTS: [usize; 3] = [16, 64, 256];
const PLAYERS: [usize; 2] = [32, 1024];
/// Rounds per cell; each variant runs once per round.
const ROUNDS: usize = 8;
/// One variant's run in one round.
const ROUND: Duration = Duration::from_millis(500);
/// The scale search: clients, then players, each run this long.
const SCALE_CLIENTS: [usize; 5] = [16, 64, 128, 256, 512];
const SCALE_PLAYERS: [usize; 4] = [32, 1024, 2048, 4096];
const SCALE_RUN: Duration = Duration::from_secs(2);
/// What "sustains" means in the scale search.
const TICK_BUDGET: Duration = Duration::from_millis(16);
const MIN_DELIVERY: f64 = 0.95;
/// Target of the cost table: fan-out's server CPU over bare quinn's.
const TARGET: f64 = 1.15;
/// Slow clients: how many stop reading, and for how long the server sends.
const STALLED: usize = 8;
const SLOW_RUN: Duration = Duration::from_secs(5);
/// Clients of the memory measurement.
const MEMORY_CLIENTS: usize = 256;
/// Waits after a run's last tick for datagrams still in flight.
const SETTLE: Duration = Duration::from_millis(250);
/// Connections in their handshake at once while a fleet connects (one
/// host: zao's per-IP pending limit is raised to it).
const CONNECT_WAVE: usize = 32;
/// How long a fleet may take to be seen by its server.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
/// Thread names, for the CPU accounting and `top`.
const CLIENT_THREADS: &str = "bench-client";
const BARE_THREADS: &str = "bare-server";
/// Marks the result line of a `--phase` child.
const PHASE_TAG: &str = "PHASE-RESULT";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    Fanout,
    PerClient,
    Bare,
}

impl Variant {
    const ALL: [Self; 3] = [Self::Fanout, Self::PerClient, Self::Bare];

    fn label(self) -> &'static str {
        match self {
            Self::Fanout => "(a) fan-out",
            Self::PerClient => "(b) per client",
            Self::Bare => "(c) bare quinn",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|v| v.label().get(1..2) == Some(s))
    }
}

/// One or more runs of one variant, pooled.
#[derive(Default)]
struct Run {
    sends: Vec<Duration>,
    ticks: Vec<Duration>,
    server_cpu: Duration,
    process_cpu: Duration,
    expected: u64,
    delivered: u64,
    chunks: usize,
}

impl Run {
    fn absorb(&mut self, other: Self) {
        self.sends.extend(other.sends);
        self.ticks.extend(other.ticks);
        self.server_cpu += other.server_cpu;
        self.process_cpu += other.process_cpu;
        self.expected += other.expected;
        self.delivered += other.delivered;
        self.chunks = other.chunks;
    }

    fn server_us(&self) -> f64 {
        per_tick_us(self.server_cpu, self.ticks.len())
    }

    fn process_us(&self) -> f64 {
        per_tick_us(self.process_cpu, self.ticks.len())
    }

    fn delivery(&self) -> f64 {
        self.delivered as f64 / self.expected.max(1) as f64
    }

    fn sustained(&self) -> bool {
        percentile(&self.ticks, 0.99) < TICK_BUDGET && self.delivery() >= MIN_DELIVERY
    }
}

struct Cell {
    clients: usize,
    players: usize,
    runs: Vec<(Variant, Run)>,
}

impl Cell {
    fn run(&self, v: Variant) -> &Run {
        &self.runs.iter().find(|(w, _)| *w == v).unwrap().1
    }
}

struct ScaleRow {
    clients: usize,
    players: usize,
    run: Run,
}

/// RSS per client, KiB.
struct Memory {
    clients: usize,
    zao_connect: f64,
    bare_connect: f64,
    zao_after_run: f64,
    run_delivery: f64,
}

impl Memory {
    fn to_line(&self) -> String {
        format!(
            "{} {} {} {} {}",
            self.clients,
            self.zao_connect,
            self.bare_connect,
            self.zao_after_run,
            self.run_delivery
        )
    }

    fn from_line(line: &str) -> Self {
        let v = numbers(line);
        Self {
            clients: v[0] as usize,
            zao_connect: v[1],
            bare_connect: v[2],
            zao_after_run: v[3],
            run_delivery: v[4],
        }
    }
}

struct SlowResult {
    stalled: usize,
    /// (seconds since the first send, RSS KiB)
    rss_kib: Vec<(f64, u64)>,
    queued_per_client: u64,
    sent_bytes_per_client: u64,
    snapshot_bytes: usize,
    chunks: usize,
    seconds: f64,
    healthy_delivery: f64,
    still_connected: usize,
}

impl SlowResult {
    fn to_line(&self) -> String {
        let mut line = format!(
            "{} {} {} {} {} {} {} {}",
            self.stalled,
            self.queued_per_client,
            self.sent_bytes_per_client,
            self.snapshot_bytes,
            self.chunks,
            self.seconds,
            self.healthy_delivery,
            self.still_connected
        );
        for (t, kib) in &self.rss_kib {
            line.push_str(&format!(" {t} {kib}"));
        }
        line
    }

    fn from_line(line: &str) -> Self {
        let v = numbers(line);
        Self {
            stalled: v[0] as usize,
            queued_per_client: v[1] as u64,
            sent_bytes_per_client: v[2] as u64,
            snapshot_bytes: v[3] as usize,
            chunks: v[4] as usize,
            seconds: v[5],
            healthy_delivery: v[6],
            still_connected: v[7] as usize,
            rss_kib: v[8..].chunks(2).map(|p| (p[0], p[1] as u64)).collect(),
        }
    }
}

fn numbers(line: &str) -> Vec<f64> {
    line.split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect()
}

/// Runs `--phase ARGS` in a fresh process of this tool; its result line.
fn phase(args: &[&str]) -> String {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .arg("--phase")
        .args(args)
        .stderr(std::process::Stdio::inherit())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(PHASE_TAG))
        .unwrap_or_else(|| panic!("phase {args:?} failed: {}", out.status))
        .to_owned()
}

fn main() {
    let started = Instant::now();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let load_before = load_average();
    let clients_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(CLIENT_THREADS)
        .enable_all()
        .build()
        .unwrap();
    if let Some(i) = args.iter().position(|a| a == "--profile") {
        profile(&clients_rt, &args[i + 1..]);
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--phase") {
        let arg = |k: usize| args.get(i + k).map(String::as_str);
        let n: u64 = arg(2).and_then(|v| v.parse().ok()).expect("--phase NAME N");
        let line = match arg(1) {
            Some("slow") => slow_clients(&clients_rt, Duration::from_secs(n)).to_line(),
            Some("memory") => memory(&clients_rt, n as usize).to_line(),
            other => panic!("unknown phase {other:?}"),
        };
        println!("{PHASE_TAG} {line}");
        return;
    }
    let (clients, players, rounds, round) = if quick {
        (&CLIENTS[..1], &PLAYERS[..1], 1, Duration::from_secs(1))
    } else {
        (&CLIENTS[..], &PLAYERS[..], ROUNDS, ROUND)
    };

    // The memory phases run in fresh processes of this tool: RSS grows and
    // shrinks with what the allocator keeps, so a heap that earlier phases
    // grew would hide what these measure.
    let slow_secs = if quick { 1 } else { SLOW_RUN.as_secs() };
    let slow = SlowResult::from_line(&phase(&["slow", &slow_secs.to_string()]));
    let memory_clients = if quick { 16 } else { MEMORY_CLIENTS };
    let memory = Memory::from_line(&phase(&["memory", &memory_clients.to_string()]));

    // The cost table, `--runs N` times over (3 unless --quick): the
    // comparison with bare quinn reports each cell's median ratio.
    let repeats: usize = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(if quick { 1 } else { 3 });
    let mut reps: Vec<Vec<Cell>> = Vec::new();
    for rep in 0..repeats.max(1) {
        let mut cells = Vec::new();
        for &n in clients {
            eprintln!("cost table, run {} of {repeats}: {n} clients", rep + 1);
            let mut bench = Bench::start(&clients_rt, n, true, false).0;
            for &p in players {
                let mut runs: Vec<(Variant, Run)> =
                    Variant::ALL.iter().map(|&v| (v, Run::default())).collect();
                for r in 0..rounds {
                    for k in 0..runs.len() {
                        let (v, pooled) = &mut runs[(k + r) % Variant::ALL.len()];
                        pooled.absorb(bench.run(*v, p, round));
                    }
                }
                cells.push(Cell {
                    clients: n,
                    players: p,
                    runs,
                });
            }
            bench.stop();
        }
        reps.push(cells);
    }

    let scale = if quick {
        Vec::new()
    } else {
        scale_search(&clients_rt)
    };
    let secs = started.elapsed().as_secs_f64();
    let section = Report {
        reps: &reps,
        scale: &scale,
        memory: &memory,
        slow: &slow,
        rounds,
        round,
        seconds: secs,
        load: (load_before, load_average()),
    }
    .to_markdown();
    println!("{section}");
    if quick {
        println!("--quick: BENCHMARKS.md left as it was; total {secs:.1} s");
    } else {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../BENCHMARKS.md");
        Section::new("broadcast").write(&path, &section).unwrap();
        println!("wrote the broadcast section of BENCHMARKS.md; total {secs:.1} s");
    }
    clients_rt.shutdown_timeout(Duration::from_millis(500));
}

/// `--profile a|b|c CLIENTS PLAYERS SECONDS`: one variant alone, for
/// `perf record`.
fn profile(rt: &Runtime, args: &[String]) {
    let usage = "--profile a|b|c CLIENTS PLAYERS SECONDS";
    let variant = args.first().and_then(|v| Variant::parse(v)).expect(usage);
    let num = |i: usize| -> usize { args.get(i).and_then(|v| v.parse().ok()).expect(usage) };
    let (n, players, secs) = (num(1), num(2), num(3));
    let mut bench = Bench::start(rt, n, variant == Variant::Bare, false).0;
    let run = bench.run(variant, players, Duration::from_secs(secs as u64));
    println!(
        "{} {n} clients × {players} players: server CPU {} µs/tick, process CPU {} µs/tick, \
         send p50 {} µs p99 {} µs, tick p99 {} µs, delivered {:.1} %",
        variant.label(),
        zao_perf::fmt_us(run.server_us()),
        zao_perf::fmt_us(run.process_us()),
        zao_perf::us(percentile(&run.sends, 0.5)),
        zao_perf::us(percentile(&run.sends, 0.99)),
        zao_perf::us(percentile(&run.ticks, 0.99)),
        run.delivery() * 100.0
    );
    bench.stop();
}

/// zao's default limits, with room for the largest fleet connecting from
/// one host.
fn limits() -> Limits {
    let mut limits = Limits::default();
    limits.max_clients = 1024;
    limits.max_pending_per_ip = CONNECT_WAVE;
    // Every load client connects from 127.0.0.1.
    limits.max_clients_per_ip = limits.max_clients;
    limits
}

/// A zao server on loopback with [`limits`]; its runtime's thread count,
/// for the bare server to match; the threads it started, for the CPU
/// accounting (by id: their names are zao's business).
fn start_zao() -> (Server, usize, HashSet<u64>) {
    let before: HashSet<u64> = ThreadCpu::now().ids().collect();
    let cert = Certificate::self_signed(&["localhost"]).unwrap();
    let mut config = ServerConfig::new(
        (Ipv4Addr::LOCALHOST, 0).into(),
        cert,
        zao_messages::protocol(),
    );
    config.limits = limits();
    let workers = config.worker_threads;
    let server = Server::start(config).unwrap();
    let threads = ThreadCpu::now()
        .ids()
        .filter(|t| !before.contains(t))
        .collect();
    (server, workers, threads)
}

/// A fleet config for zao's server `server`.
fn zao_fleet(server: &Server) -> FleetConfig {
    FleetConfig::zao(server, &zao_messages::protocol(), &limits()).unwrap()
}

/// Polls `server` until it has `n` clients.
fn wait_for_clients(server: &mut Server, n: usize) {
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    while server.clients().len() < n {
        assert!(
            Instant::now() < deadline,
            "the server never saw {n} clients"
        );
        while server.poll_event().is_some() {}
        std::thread::sleep(Duration::from_millis(5));
    }
    while server.poll_event().is_some() {}
}

/// zao's server and, for the bare variant, the bare quinn one, each with
/// its fleet, for one clients count.
struct Bench {
    zao: Server,
    /// The threads `Server::start` started.
    zao_threads: HashSet<u64>,
    /// The thread that ticks: this one.
    tick_thread: u64,
    zao_fleet: Fleet,
    bare: Option<(BareServer, Fleet)>,
    snapshots: HashMap<usize, WorldSnapshot>,
    /// The bare variant's encoding: zao's chunk encoder, buffers reused.
    scratch: BytesMut,
    chunks: Vec<Bytes>,
    bare_seq: u64,
}

impl Bench {
    /// Starts zao's server (and, with `bare`, the bare quinn one) and
    /// connects `n` clients to each, every client on its own socket or,
    /// with `shared`, all of a fleet on one. Returns the RSS each fleet
    /// added per client, KiB.
    fn start(rt: &Runtime, n: usize, bare: bool, shared: bool) -> (Self, f64, f64) {
        let (mut zao, workers, zao_threads) = start_zao();
        let before = rss_kib().unwrap_or(0);
        let config = zao_fleet(&zao).shared_socket(shared);
        let zao_fleet = Fleet::connect(rt, n, &config).unwrap();
        wait_for_clients(&mut zao, n);
        let zao_connect = rss_kib().unwrap_or(0).saturating_sub(before) as f64 / n as f64;
        let (bare, bare_connect) = if bare {
            let mut server =
                BareServer::start(&limits(), &zao_messages::protocol(), workers, BARE_THREADS)
                    .unwrap();
            let before = rss_kib().unwrap_or(0);
            let config = FleetConfig::bare(&server, &limits(), CONNECT_WAVE)
                .unwrap()
                .shared_socket(shared);
            let fleet = Fleet::connect(rt, n, &config).unwrap();
            assert!(
                server.wait_for(n, CONNECT_TIMEOUT),
                "the bare server never saw {n} clients"
            );
            let per = rss_kib().unwrap_or(0).saturating_sub(before) as f64 / n as f64;
            (Some((server, fleet)), per)
        } else {
            (None, 0.0)
        };
        let bench = Self {
            zao,
            zao_threads,
            tick_thread: current_thread_id().unwrap_or(0),
            zao_fleet,
            bare,
            snapshots: HashMap::new(),
            scratch: BytesMut::new(),
            chunks: Vec::new(),
            bare_seq: 0,
        };
        (bench, zao_connect, bare_connect)
    }

    /// One variant for `duration` at 60 Hz, then a settle for stragglers.
    fn run(&mut self, variant: Variant, players: usize, duration: Duration) -> Run {
        let snapshot = self
            .snapshots
            .entry(players)
            .or_insert_with(|| samples::world_snapshot(players));
        let fleet = match (&self.bare, variant) {
            (Some((_, fleet)), Variant::Bare) => fleet,
            (None, Variant::Bare) => panic!("no bare server in this bench"),
            _ => &self.zao_fleet,
        };
        let ids: Vec<ClientId> = self.zao.clients();
        let ticks = (duration.as_secs_f64() * HZ).round() as usize;
        let period = Duration::from_secs_f64(1.0 / HZ);
        let mut run = Run {
            sends: Vec::with_capacity(ticks),
            ticks: Vec::with_capacity(ticks),
            ..Run::default()
        };
        let delivered_before = fleet.received();
        let cpu_before = ThreadCpu::now();
        let mut next = Instant::now();
        for tick in 0..ticks {
            let now = Instant::now();
            // Sleep, not spin: a spinning tick thread would take a core from
            // the quinn threads being measured on a 2-core machine, and
            // `sleep` wakes within ~0.1 ms of a 16.7 ms period.
            if next > now {
                std::thread::sleep(next - now);
            }
            snapshot.tick = tick as u32;
            let t0 = Instant::now();
            let (chunks, targets) = match variant {
                Variant::Fanout => {
                    let chunks = self.zao.send_snapshot(Target::All, snapshot).unwrap();
                    (chunks, ids.len())
                }
                Variant::PerClient => {
                    let mut chunks = 0;
                    for &c in &ids {
                        chunks = self.zao.send_snapshot(Target::One(c), snapshot).unwrap();
                    }
                    (chunks, ids.len())
                }
                Variant::Bare => {
                    let conns = self.bare.as_ref().unwrap().0.connections();
                    self.bare_seq += 1;
                    self.chunks.clear();
                    let chunks =
                        encode_chunks(snapshot, self.bare_seq, &mut self.scratch, &mut self.chunks)
                            .unwrap();
                    for conn in conns {
                        for d in &self.chunks {
                            let _ = conn.send_datagram(d.clone());
                        }
                    }
                    (chunks, conns.len())
                }
            };
            let send = t0.elapsed();
            if variant != Variant::Bare {
                // What a game's tick does besides: read events, flush packing.
                while self.zao.poll_event().is_some() {}
                self.zao.flush();
            }
            run.ticks.push(t0.elapsed());
            run.sends.push(send);
            run.chunks = chunks;
            run.expected += (chunks * targets) as u64;
            next += period;
            // Behind schedule: start the next tick now, without a catch-up burst.
            next = next.max(Instant::now());
        }
        std::thread::sleep(SETTLE);
        let cpu_after = ThreadCpu::now();
        // The sending server's: the tick thread and its runtime's threads.
        run.server_cpu = cpu_after.cpu_since(&cpu_before, |tid, name| {
            tid == self.tick_thread
                || match variant {
                    Variant::Bare => name == BARE_THREADS,
                    Variant::Fanout | Variant::PerClient => self.zao_threads.contains(&tid),
                }
        });
        run.process_cpu = cpu_after.cpu_since(&cpu_before, |_, _| true);
        run.delivered = fleet.received() - delivered_before;
        run
    }

    fn stop(self) {
        self.zao_fleet.close();
        self.zao.shutdown();
        if let Some((bare, fleet)) = self.bare {
            fleet.close();
            bare.stop();
        }
    }
}

/// RSS per connected client: a zao fleet, then a bare quinn fleet beside
/// it (both kept, so neither reuses the other's freed memory), then the
/// zao server sending 1024-player snapshots. Each fleet's clients share
/// one socket, so a client's share is its connection state alone.
fn memory(rt: &Runtime, n: usize) -> Memory {
    eprintln!("memory: {n} clients");
    let (mut bench, zao_connect, bare_connect) = Bench::start(rt, n, true, true);
    let before = rss_kib().unwrap_or(0);
    let run = bench.run(Variant::Fanout, 1024, Duration::from_secs(2));
    let grown = rss_kib().unwrap_or(0).saturating_sub(before) as f64 / n as f64;
    bench.stop();
    Memory {
        clients: n,
        zao_connect,
        bare_connect,
        zao_after_run: zao_connect + grown,
        run_delivery: run.delivery(),
    }
}

/// The fan-out at growing clients × players, each until it no longer
/// sustains 60 Hz.
fn scale_search(rt: &Runtime) -> Vec<ScaleRow> {
    let mut rows = Vec::new();
    for &n in &SCALE_CLIENTS {
        eprintln!("scale: {n} clients");
        let mut bench = Bench::start(rt, n, false, false).0;
        let mut any = false;
        for &p in &SCALE_PLAYERS {
            let run = bench.run(Variant::Fanout, p, SCALE_RUN);
            let ok = run.sustained();
            rows.push(ScaleRow {
                clients: n,
                players: p,
                run,
            });
            any |= ok;
            if !ok {
                break;
            }
        }
        bench.stop();
        if !any {
            break;
        }
    }
    rows
}

/// Clients that stop reading their socket (no ACKs: the server's queue for
/// them is what fills) while the server sends 1024-player snapshots to them
/// and to one healthy client.
fn slow_clients(rt: &Runtime, duration: Duration) -> SlowResult {
    eprintln!("slow clients: {STALLED} stalled, {duration:?}");
    let (mut server, ..) = start_zao();
    let config = zao_fleet(&server);
    let healthy = Fleet::connect(rt, 1, &config).unwrap();
    // The stalled clients' runtime runs only while they connect: afterwards
    // nothing reads their sockets, sends ACKs or drives their connections.
    let stalled_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let stalled = Fleet::connect(&stalled_rt, STALLED, &config).unwrap();
    wait_for_clients(&mut server, STALLED + 1);
    let mut snapshot = samples::world_snapshot(1024);
    let snapshot_bytes = zao::message_len(&snapshot);
    let mut chunks = 0;
    let mut rss = vec![(0.0, rss_kib().unwrap_or(0))];
    let ticks = (duration.as_secs_f64() * HZ).round() as usize;
    let period = Duration::from_secs_f64(1.0 / HZ);
    let started = Instant::now();
    let before = healthy.received();
    let mut expected = 0;
    for tick in 0..ticks {
        let next = started + period * tick as u32;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        snapshot.tick = tick as u32;
        chunks = server.send_snapshot(Target::All, &snapshot).unwrap();
        expected += chunks as u64;
        while server.poll_event().is_some() {}
        if (tick + 1) % 30 == 0 {
            rss.push((started.elapsed().as_secs_f64(), rss_kib().unwrap_or(0)));
        }
    }
    std::thread::sleep(SETTLE);
    let healthy_delivery = (healthy.received() - before) as f64 / expected.max(1) as f64;
    let stats: Vec<_> = stalled
        .ids()
        .iter()
        .filter_map(|&c| server.stats(c))
        .collect();
    let still_connected = stats.len();
    let n = stats.len().max(1) as u64;
    let queued_per_client = stats.iter().map(|s| s.messages_out).sum::<u64>() / n;
    let sent_bytes_per_client = stats.iter().map(|s| s.bytes_out).sum::<u64>() / n;
    healthy.close();
    server.shutdown();
    drop(stalled);
    stalled_rt.shutdown_timeout(Duration::from_millis(100));
    SlowResult {
        stalled: STALLED,
        rss_kib: rss,
        queued_per_client,
        sent_bytes_per_client,
        snapshot_bytes,
        chunks,
        seconds: duration.as_secs_f64(),
        healthy_delivery,
        still_connected,
    }
}
