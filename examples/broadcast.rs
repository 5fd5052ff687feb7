//! What one server tick costs to broadcast a `WorldSnapshot` at 60 Hz, over
//! real loopback QUIC in one process, and how far one server scales:
//!
//! ```sh
//! cargo run --release --example broadcast            # full run, writes BENCHMARKS.md
//! cargo run --release --example broadcast -- --quick # 16 clients × 32 players, 1 s, prints only
//! ```
//!
//! Three ways to send the same snapshot to every client, each tick:
//!
//! - **(a) fan-out**: `Server::send_snapshot(Target::All, ..)`: each chunk
//!   encoded once, its `Bytes` shared by every client.
//! - **(b) per client**: `send_snapshot(Target::One(c), ..)` for each client:
//!   the chunks encoded again for every client.
//! - **(c) floor**: a bare quinn server (zao's TLS and transport settings, no
//!   zao in between) sending chunk datagrams encoded once before the run:
//!   `send_datagram` per client per chunk and nothing else.
//!
//! The clients are raw quinn connections on one shared tokio runtime, each
//! with its own socket; for (a) and (b) they complete zao's handshake. They
//! count the datagrams they read. Per tick the tool times the send call(s)
//! and the whole tick's work; per run it takes every thread's CPU time from
//! `/proc/self/task/*/schedstat` (nanoseconds): the server's is the tick
//! thread plus the server runtime's threads, the process's is everything,
//! clients included. The variants of a cell take turns, round by round, so
//! a noisy neighbour hits each alike.
//!
//! Then the scale search (fan-out only: the most clients × players whose
//! tick p99 stays under 16 ms with ≥ 95 % delivered), memory per connected
//! client (RSS from `/proc/self/status`), and slow clients that stop reading
//! their socket while the server keeps sending.

// Bench code on our own sample values: a panic is a broken report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::{Bytes, BytesMut};
use zao::proto::{
    HelloReply, Protocol, Snapshot, SnapshotHeader, frame_header, plan_chunks, snapshot_datagram,
};
use zao::quic::quinn::crypto::rustls::QuicServerConfig;
use zao::quic::quinn::{self, Connection, Endpoint, EndpointConfig, VarInt};
use zao::quic::{
    Certificate, ClientConfig, ClientId, Limits, Server, ServerConfig, Target, rustls,
};
use zao::{Decode, Encode, Message};
use zao_messages::{WorldSnapshot, samples};

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
/// Target of the cost table: fan-out's server CPU over the floor's.
const TARGET: f64 = 1.15;
/// Slow clients: how many stop reading, and for how long the server sends.
const STALLED: usize = 8;
const SLOW_RUN: Duration = Duration::from_secs(5);
/// Clients of the memory measurement.
const MEMORY_CLIENTS: usize = 256;
/// Waits after a run's last tick for datagrams still in flight.
const SETTLE: Duration = Duration::from_millis(250);
/// Worst-case bytes of a snapshot datagram's header: as `SNAPSHOT_HEADER_MAX`
/// in src/quic/server.rs (kind, seq, chunk, chunks).
const SNAPSHOT_HEADER_MAX: usize = 1 + 10 + 5 + 5;
/// zao's heartbeat datagram (unreliable, one message of id 0, empty): what a
/// zao client sends when idle, so the server's silence timeout holds off.
const HEARTBEAT: [u8; 3] = [0x01, 0x01, 0x00];
const HEARTBEAT_EVERY: Duration = Duration::from_secs(5);
/// Thread names, for the CPU accounting.
const ZAO_THREADS: &str = "zao-server";
const BARE_THREADS: &str = "bare-server";
const CLIENT_THREADS: &str = "bench-client";
/// Connections opened at once while a fleet connects.
const CONNECT_WAVE: usize = 32;
/// Marks the result line of a `--phase` child.
const PHASE_TAG: &str = "PHASE-RESULT";
const MARK_START: &str = "<!-- broadcast:start -->";
const MARK_END: &str = "<!-- broadcast:end -->";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    Fanout,
    PerClient,
    Floor,
    /// The floor in the fan-out's loop order (each chunk to every client,
    /// then the next chunk): tells the order's cost from zao's.
    FloorChunkMajor,
}

impl Variant {
    const ALL: [Self; 4] = [
        Self::Fanout,
        Self::PerClient,
        Self::Floor,
        Self::FloorChunkMajor,
    ];

    fn label(self) -> &'static str {
        match self {
            Self::Fanout => "(a) fan-out",
            Self::PerClient => "(b) per client",
            Self::Floor => "(c) bare quinn",
            Self::FloorChunkMajor => "(d) bare, chunk-major",
        }
    }

    fn bare(self) -> bool {
        matches!(self, Self::Floor | Self::FloorChunkMajor)
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
        pct(&self.ticks, 0.99) < TICK_BUDGET && self.delivery() >= MIN_DELIVERY
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
        let v: Vec<f64> = numbers(line);
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
            write!(line, " {t} {kib}").unwrap();
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

fn numbers(line: &str) -> Vec<f64> {
    line.split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect()
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

    let mut cells = Vec::new();
    for &n in clients {
        eprintln!("cost table: {n} clients");
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

    let scale = if quick {
        Vec::new()
    } else {
        scale_search(&clients_rt)
    };
    let load_after = load_average();
    let secs = started.elapsed().as_secs_f64();
    let section = report(
        &cells,
        &scale,
        &memory,
        &slow,
        (rounds, round),
        secs,
        (&load_before, &load_after),
    );
    println!("{section}");
    if quick {
        println!("--quick: BENCHMARKS.md left as it was; total {secs:.1} s");
    } else {
        write_section(&section);
        println!("wrote the broadcast section of BENCHMARKS.md; total {secs:.1} s");
    }
    clients_rt.shutdown_timeout(Duration::from_millis(500));
}

/// `--profile a|b|c|d CLIENTS PLAYERS SECONDS`: one variant alone, for
/// `perf record`.
fn profile(rt: &tokio::runtime::Runtime, args: &[String]) {
    let usage = "--profile a|b|c|d CLIENTS PLAYERS SECONDS";
    let variant = args.first().and_then(|v| Variant::parse(v)).expect(usage);
    let num = |i: usize| -> usize { args.get(i).and_then(|v| v.parse().ok()).expect(usage) };
    let (n, players, secs) = (num(1), num(2), num(3));
    let mut bench = Bench::start(rt, n, variant.bare(), false).0;
    let run = bench.run(variant, players, Duration::from_secs(secs as u64));
    println!(
        "{} {n} clients × {players} players: server CPU {} µs/tick, process CPU {} µs/tick, \
         send p50 {} µs p99 {} µs, tick p99 {} µs, delivered {:.1} %",
        variant.label(),
        fmt_us(run.server_us()),
        fmt_us(run.process_us()),
        us(pct(&run.sends, 0.5)),
        us(pct(&run.sends, 0.99)),
        us(pct(&run.ticks, 0.99)),
        run.delivery() * 100.0
    );
    bench.stop();
}

/// RSS per connected client: a zao fleet, then a bare quinn fleet beside
/// it (both kept, so neither reuses the other's freed memory), then the
/// zao server sending 1024-player snapshots. Each fleet's clients share
/// one socket, so a client's share is its connection state alone.
fn memory(rt: &tokio::runtime::Runtime, n: usize) -> Memory {
    eprintln!("memory: {n} clients");
    let (mut bench, zao_connect, bare_connect) = Bench::start(rt, n, true, true);
    let before = rss_kib();
    let run = bench.run(Variant::Fanout, 1024, Duration::from_secs(2));
    let grown = rss_kib().saturating_sub(before) as f64 / n as f64;
    bench.stop();
    Memory {
        clients: n,
        zao_connect,
        bare_connect,
        zao_after_run: zao_connect + grown,
        run_delivery: run.delivery(),
    }
}

/// Servers and their client fleets for one clients count.
struct Bench {
    zao: Server,
    zao_ids: Vec<ClientId>,
    zao_fleet: Fleet,
    bare: Option<(Bare, Fleet)>,
    snapshots: HashMap<usize, (WorldSnapshot, Vec<Bytes>)>,
}

impl Bench {
    /// Starts zao's server (and, with `bare`, the bare quinn one) and
    /// connects `n` clients to each, every client on its own socket or,
    /// with `shared`, all of a fleet on one. Returns the RSS each fleet
    /// added per client, KiB.
    fn start(rt: &tokio::runtime::Runtime, n: usize, bare: bool, shared: bool) -> (Self, f64, f64) {
        let mut zao = start_zao();
        let before = rss_kib();
        let hello = hello_frame(&zao_messages::protocol());
        let zao_fleet = Fleet::connect(
            rt,
            n,
            client_config(zao.local_addr(), zao.certificate_hash()),
            zao.local_addr(),
            Some(hello),
            shared,
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        while zao.clients().len() < n {
            assert!(
                Instant::now() < deadline,
                "the zao server never saw {n} clients"
            );
            while zao.poll_event().is_some() {}
            std::thread::sleep(Duration::from_millis(5));
        }
        while zao.poll_event().is_some() {}
        let zao_connect = rss_kib().saturating_sub(before) as f64 / n as f64;
        let zao_ids = zao.clients();
        let (bare, bare_connect) = if bare {
            let server = Bare::start();
            let before = rss_kib();
            let fleet = Fleet::connect(
                rt,
                n,
                client_config(server.addr, server.hash),
                server.addr,
                None,
                shared,
            );
            let server = server.wait_for(n);
            let per = rss_kib().saturating_sub(before) as f64 / n as f64;
            (Some((server, fleet)), per)
        } else {
            (None, 0.0)
        };
        let bench = Self {
            zao,
            zao_ids,
            zao_fleet,
            bare,
            snapshots: HashMap::new(),
        };
        (bench, zao_connect, bare_connect)
    }

    /// One variant for `duration` at 60 Hz, then a settle for stragglers.
    fn run(&mut self, variant: Variant, players: usize, duration: Duration) -> Run {
        let max = match &self.bare {
            Some((bare, _)) => bare.conns[0].max_datagram_size().unwrap(),
            None => 0,
        };
        let (snapshot, floor_chunks) = self.snapshots.entry(players).or_insert_with(|| {
            let s = samples::world_snapshot(players);
            let chunks = if max > 0 {
                encode_chunks(&s, max)
            } else {
                Vec::new()
            };
            (s, chunks)
        });
        let (received, server_threads) = if variant.bare() {
            (self.bare.as_ref().unwrap().1.received.clone(), BARE_THREADS)
        } else {
            (self.zao_fleet.received.clone(), ZAO_THREADS)
        };
        let ticks = (duration.as_secs_f64() * HZ).round() as usize;
        let period = Duration::from_secs_f64(1.0 / HZ);
        let mut run = Run {
            sends: Vec::with_capacity(ticks),
            ticks: Vec::with_capacity(ticks),
            ..Run::default()
        };
        let delivered_before = received.load(Ordering::Relaxed);
        let cpu_before = threads();
        let mut next = Instant::now();
        for tick in 0..ticks {
            let now = Instant::now();
            // Sleep, not spin: a spinning tick thread would take a core from
            // the quinn threads being measured on this 2-core machine, and
            // `sleep` wakes within ~0.1 ms of a 16.7 ms period.
            if next > now {
                std::thread::sleep(next - now);
            }
            let t0 = Instant::now();
            let (send, expected) = match variant {
                Variant::Fanout => {
                    snapshot.tick = tick as u32;
                    let s = Instant::now();
                    let chunks = self.zao.send_snapshot(Target::All, snapshot).unwrap();
                    let send = s.elapsed();
                    run.chunks = chunks;
                    (send, (chunks * self.zao_ids.len()) as u64)
                }
                Variant::PerClient => {
                    snapshot.tick = tick as u32;
                    let s = Instant::now();
                    let mut sent = 0;
                    for &c in &self.zao_ids {
                        let chunks = self.zao.send_snapshot(Target::One(c), snapshot).unwrap();
                        run.chunks = chunks;
                        sent += chunks;
                    }
                    (s.elapsed(), sent as u64)
                }
                Variant::Floor => {
                    let conns = &self.bare.as_ref().unwrap().0.conns;
                    let s = Instant::now();
                    for conn in conns {
                        for d in floor_chunks.iter() {
                            let _ = conn.send_datagram(d.clone());
                        }
                    }
                    run.chunks = floor_chunks.len();
                    (s.elapsed(), (conns.len() * floor_chunks.len()) as u64)
                }
                Variant::FloorChunkMajor => {
                    let conns = &self.bare.as_ref().unwrap().0.conns;
                    let s = Instant::now();
                    for d in floor_chunks.iter() {
                        for conn in conns {
                            let _ = conn.send_datagram(d.clone());
                        }
                    }
                    run.chunks = floor_chunks.len();
                    (s.elapsed(), (conns.len() * floor_chunks.len()) as u64)
                }
            };
            if !variant.bare() {
                // What a game's tick does besides: read events, flush packing.
                while self.zao.poll_event().is_some() {}
                self.zao.flush();
            }
            run.ticks.push(t0.elapsed());
            run.sends.push(send);
            run.expected += expected;
            next += period;
            // Behind schedule: start the next tick now, without a catch-up burst.
            next = next.max(Instant::now());
        }
        std::thread::sleep(SETTLE);
        let cpu_after = threads();
        let me = u64::from(std::process::id());
        run.server_cpu = cpu_delta(&cpu_before, &cpu_after, |tid, name| {
            tid == me || name == server_threads
        });
        run.process_cpu = cpu_delta(&cpu_before, &cpu_after, |_, _| true);
        run.delivered = received.load(Ordering::Relaxed) - delivered_before;
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

fn start_zao() -> Server {
    let cert = Certificate::self_signed(&["localhost"]).unwrap();
    let mut config = ServerConfig::new(
        (Ipv4Addr::LOCALHOST, 0).into(),
        cert,
        zao_messages::protocol(),
    );
    config.limits = limits();
    Server::start(config).unwrap()
}

/// zao's default limits, with room for the largest fleet.
fn limits() -> Limits {
    let mut limits = Limits::default();
    limits.max_clients = 1024;
    limits
}

fn client_config(addr: SocketAddr, hash: zao::quic::CertHash) -> quinn::ClientConfig {
    ClientConfig::pinned(addr, hash, zao_messages::protocol())
        .quinn_client_config()
        .unwrap()
}

/// A bare quinn server with zao's TLS and transport settings, which only
/// accepts connections: the floor.
struct Bare {
    rt: tokio::runtime::Runtime,
    endpoint: Endpoint,
    addr: SocketAddr,
    hash: zao::quic::CertHash,
    accepted: tokio::sync::mpsc::UnboundedReceiver<Connection>,
    conns: Vec<Connection>,
}

impl Bare {
    /// As `Server::start`: a runtime of zao's default two workers, TLS 1.3
    /// with ring and zao's ALPN, zao's transport config and accept bound.
    fn start() -> Self {
        let cert = Certificate::self_signed(&["localhost"]).unwrap();
        let workers = ServerConfig::new(
            (Ipv4Addr::LOCALHOST, 0).into(),
            cert.clone(),
            Protocol::new(),
        )
        .worker_threads;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name(BARE_THREADS)
            .enable_all()
            .build()
            .unwrap();
        let limits = limits();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(cert.chain.clone(), cert.key.clone_key())
            .unwrap();
        tls.alpn_protocols = vec![b"zao/1".to_vec()];
        let crypto = QuicServerConfig::try_from(tls).unwrap();
        let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        config.transport_config(Arc::new(limits.transport_config(&zao_messages::protocol())));
        config.max_incoming(limits.max_pending_handshakes.max(1));
        let socket = std::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let endpoint = {
            let _guard = rt.enter();
            Endpoint::new(
                EndpointConfig::default(),
                Some(config),
                socket,
                Arc::new(quinn::TokioRuntime),
            )
            .unwrap()
        };
        let addr = endpoint.local_addr().unwrap();
        let (tx, accepted) = tokio::sync::mpsc::unbounded_channel();
        let accepting = endpoint.clone();
        rt.spawn(async move {
            while let Some(incoming) = accepting.accept().await {
                let tx = tx.clone();
                tokio::spawn(async move {
                    if let Ok(conn) = incoming.await {
                        let _ = tx.send(conn);
                    }
                });
            }
        });
        Self {
            rt,
            endpoint,
            addr,
            hash: cert.sha256(),
            accepted,
            conns: Vec::new(),
        }
    }

    fn wait_for(mut self, n: usize) -> Self {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.conns.len() < n {
            assert!(Instant::now() < deadline, "the bare server never saw {n}");
            match self.accepted.try_recv() {
                Ok(conn) => self.conns.push(conn),
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        self
    }

    fn stop(self) {
        self.endpoint.close(VarInt::from_u32(0), b"done");
        self.rt.shutdown_timeout(Duration::from_millis(200));
    }
}

/// The chunk datagrams `Server::send_snapshot` would send (sequence 1), for
/// the floor to send as they are.
fn encode_chunks(snapshot: &WorldSnapshot, max_datagram: usize) -> Vec<Bytes> {
    let id_len = zao::varint_len(u64::from(WorldSnapshot::ID));
    let plan = plan_chunks(snapshot, max_datagram - SNAPSHOT_HEADER_MAX - id_len).unwrap();
    let mut scratch = BytesMut::new();
    let chunks = plan.len() as u32;
    plan.iter()
        .enumerate()
        .map(|(i, range)| {
            let header = SnapshotHeader {
                seq: 1,
                chunk: i as u32,
                chunks,
            };
            let len = id_len + snapshot.part_len(range.clone());
            snapshot_datagram(&mut scratch, header, len, |w| {
                w.put_varint(u64::from(WorldSnapshot::ID));
                snapshot.encode_part(range.clone(), w);
            })
        })
        .collect()
}

/// A hello for `protocol`, length-framed, as a zao client sends it.
fn hello_frame(protocol: &Protocol) -> Bytes {
    let hello = zao::proto::Hello::new(protocol, None).to_vec();
    let (header, n) = frame_header(hello.len());
    let mut out = header[..n].to_vec();
    out.extend_from_slice(&hello);
    Bytes::from(out)
}

/// Raw quinn clients that count the datagrams they read.
struct Fleet {
    endpoints: Vec<Endpoint>,
    conns: Vec<Connection>,
    received: Arc<AtomicU64>,
}

impl Fleet {
    /// Connects `n` clients on `rt`, each on its own socket or, with
    /// `shared`, all on one; with `hello`, each completes zao's handshake
    /// and sends heartbeats as a zao client does.
    fn connect(
        rt: &tokio::runtime::Runtime,
        n: usize,
        config: quinn::ClientConfig,
        addr: SocketAddr,
        hello: Option<Bytes>,
        shared: bool,
    ) -> Self {
        let received = Arc::new(AtomicU64::new(0));
        let one = shared.then(|| {
            let _guard = rt.enter();
            client_endpoint(config.clone())
        });
        let mut fleet = Self {
            endpoints: one.iter().cloned().collect(),
            conns: Vec::with_capacity(n),
            received: received.clone(),
        };
        // A zao server admits a few handshakes per address at once.
        let wave = if shared {
            limits().max_pending_per_ip
        } else {
            CONNECT_WAVE
        };
        let mut left = n;
        while left > 0 {
            let now = left.min(wave);
            left -= now;
            let tasks: Vec<_> = (0..now)
                .map(|_| {
                    let (config, one, hello) = (config.clone(), one.clone(), hello.clone());
                    rt.spawn(async move {
                        let endpoint = one.unwrap_or_else(|| client_endpoint(config));
                        let (conn, _) = connect(&endpoint, addr, hello).await;
                        (endpoint, conn)
                    })
                })
                .collect();
            for task in tasks {
                let (endpoint, conn) = rt.block_on(task).unwrap();
                rt.spawn(drain(conn.clone(), received.clone()));
                if hello.is_some() {
                    rt.spawn(heartbeat(conn.clone()));
                }
                if !shared {
                    fleet.endpoints.push(endpoint);
                }
                fleet.conns.push(conn);
            }
        }
        fleet
    }

    fn close(self) {
        for conn in &self.conns {
            conn.close(VarInt::from_u32(0), b"done");
        }
        drop(self.endpoints);
    }
}

/// A client endpoint on a socket of its own (in a runtime's context).
fn client_endpoint(config: quinn::ClientConfig) -> Endpoint {
    let mut endpoint = Endpoint::client((Ipv4Addr::LOCALHOST, 0).into()).unwrap();
    endpoint.set_default_client_config(config);
    endpoint
}

/// One raw connection; with `hello`, zao's handshake on it. Returns the
/// client id the server assigned.
async fn connect(
    endpoint: &Endpoint,
    addr: SocketAddr,
    hello: Option<Bytes>,
) -> (Connection, Option<u64>) {
    // A server refuses handshakes past its per-address limit (one shared
    // socket is one address): retry those.
    let mut tries = 0;
    let conn = loop {
        let connecting = endpoint.connect(addr, "localhost").unwrap();
        match tokio::time::timeout(Duration::from_secs(20), connecting).await {
            Ok(Ok(conn)) => break conn,
            Ok(Err(_)) if tries < 100 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Ok(Err(e)) => panic!("QUIC handshake failed: {e}"),
            Err(_) => panic!("QUIC handshake timed out"),
        }
    };
    let Some(hello) = hello else {
        return (conn, None);
    };
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    send.write_all(&hello).await.unwrap();
    send.finish().unwrap();
    let reply = recv.read_to_end(64 * 1024).await.unwrap();
    let mut r = zao::Reader::new(&reply);
    let len = r.get_varint().unwrap() as usize;
    match HelloReply::decode(r.take(len).unwrap()).unwrap() {
        HelloReply::Welcome { client_id } => (conn, Some(client_id)),
        HelloReply::Refused(reason) => panic!("refused: {reason}"),
    }
}

async fn drain(conn: Connection, received: Arc<AtomicU64>) {
    while conn.read_datagram().await.is_ok() {
        received.fetch_add(1, Ordering::Relaxed);
    }
}

async fn heartbeat(conn: Connection) {
    loop {
        tokio::time::sleep(HEARTBEAT_EVERY).await;
        if conn.send_datagram(Bytes::from_static(&HEARTBEAT)).is_err() {
            return;
        }
    }
}

/// The fan-out at growing clients × players, each until it no longer
/// sustains 60 Hz.
fn scale_search(rt: &tokio::runtime::Runtime) -> Vec<ScaleRow> {
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
fn slow_clients(rt: &tokio::runtime::Runtime, duration: Duration) -> SlowResult {
    eprintln!("slow clients: {STALLED} stalled, {duration:?}");
    let mut server = start_zao();
    let addr = server.local_addr();
    let config = client_config(addr, server.certificate_hash());
    let hello = hello_frame(&zao_messages::protocol());
    let healthy = Fleet::connect(rt, 1, config.clone(), addr, Some(hello.clone()), false);
    // The stalled clients' runtime runs only while they connect: afterwards
    // nothing reads their sockets, sends ACKs or drives their connections.
    let stalled_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let stalled: Vec<(Endpoint, Connection, Option<u64>)> = stalled_rt.block_on(async {
        let mut out = Vec::new();
        for _ in 0..STALLED {
            let endpoint = client_endpoint(config.clone());
            let (conn, id) = connect(&endpoint, addr, Some(hello.clone())).await;
            out.push((endpoint, conn, id));
        }
        out
    });
    while server.clients().len() < STALLED + 1 {
        while server.poll_event().is_some() {}
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut snapshot = samples::world_snapshot(1024);
    let snapshot_bytes = zao::message_len(&snapshot);
    let mut chunks = 0;
    let start_rss = rss_kib();
    let mut rss = vec![(0.0, start_rss)];
    let ticks = (duration.as_secs_f64() * HZ).round() as usize;
    let period = Duration::from_secs_f64(1.0 / HZ);
    let started = Instant::now();
    let before = healthy.received.load(Ordering::Relaxed);
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
            rss.push((started.elapsed().as_secs_f64(), rss_kib()));
        }
    }
    std::thread::sleep(SETTLE);
    let healthy_delivery =
        (healthy.received.load(Ordering::Relaxed) - before) as f64 / expected.max(1) as f64;
    let ids: Vec<ClientId> = stalled.iter().map(|s| ClientId(s.2.unwrap())).collect();
    let stats: Vec<_> = ids.iter().filter_map(|&c| server.stats(c)).collect();
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

/// Every thread of this process: (name, CPU time).
fn threads() -> HashMap<u64, (String, Duration)> {
    let mut out = HashMap::new();
    for entry in fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(tid) = entry.file_name().to_string_lossy().parse::<u64>() else {
            continue;
        };
        let path = entry.path();
        let name = fs::read_to_string(path.join("comm")).unwrap_or_default();
        let ns = fs::read_to_string(path.join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0);
        out.insert(tid, (name.trim().to_owned(), Duration::from_nanos(ns)));
    }
    out
}

fn cpu_delta(
    before: &HashMap<u64, (String, Duration)>,
    after: &HashMap<u64, (String, Duration)>,
    pick: impl Fn(u64, &str) -> bool,
) -> Duration {
    after
        .iter()
        .filter(|(tid, (name, _))| pick(**tid, name))
        .map(|(tid, (_, t))| t.saturating_sub(before.get(tid).map_or(Duration::ZERO, |b| b.1)))
        .sum()
}

fn rss_kib() -> u64 {
    fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn machine() -> String {
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    // Field 19 of /proc/self/stat (after the parenthesised name): the nice value.
    let nice = fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1.to_owned();
            rest.split_whitespace().nth(16).map(str::to_owned)
        })
        .unwrap_or_default();
    format!(
        "{cpu}, {cores} logical cores, {} {}; run at nice {nice}",
        std::env::consts::ARCH,
        std::env::consts::OS
    )
}

fn pct(samples: &[Duration], q: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn per_tick_us(cpu: Duration, ticks: usize) -> f64 {
    cpu.as_secs_f64() * 1e6 / ticks.max(1) as f64
}

fn us(d: Duration) -> String {
    fmt_us(d.as_secs_f64() * 1e6)
}

fn fmt_us(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn ratio(a: f64, b: f64) -> String {
    format!("{:.2}×", a / b.max(f64::MIN_POSITIVE))
}

fn today() -> String {
    let days = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400) as i64;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn report(
    cells: &[Cell],
    scale: &[ScaleRow],
    memory: &Memory,
    slow: &SlowResult,
    (rounds, round): (usize, Duration),
    secs: f64,
    load: (&str, &str),
) -> String {
    let mut w = String::new();
    writeln!(w, "## Broadcast: server cost per tick\n").unwrap();
    writeln!(
        w,
        "Written by `cargo run --release --example broadcast` on {}, in {secs:.0} s; \
         load average {} before, {} after (a fuzzer and other builds share the \
         machine at lower priority).\n",
        today(),
        load.0,
        load.1
    )
    .unwrap();
    writeln!(
        w,
        "- Machine: {}. The server, its clients and the tick thread share \
         these cores in one process over loopback, so the clients' decryption \
         competes with the server for CPU.",
        machine()
    )
    .unwrap();
    writeln!(
        w,
        "- Each tick at 60 Hz sends `samples::world_snapshot(players)` to every \
         client: (a) `send_snapshot(Target::All)`, chunks encoded once; (b) \
         `send_snapshot(Target::One(c))` per client, chunks encoded per client; \
         (c) the floor: a bare quinn server with zao's TLS and transport \
         settings sending the same chunk datagrams, encoded before the run, \
         client by client; (d) the floor in (a)'s loop order, chunk by chunk \
         to every client. Clients are raw quinn connections on one 2-thread \
         tokio runtime, each on its own socket, reading datagrams in a loop."
    )
    .unwrap();
    writeln!(
        w,
        "- **server CPU** is the tick thread plus the server runtime's two \
         threads (quinn packetizing, encrypting, sending), from \
         `/proc/self/task/*/schedstat`; **process CPU** adds the clients. \
         **send** is the wall time of the tick's send call(s); **tick** adds \
         polling events and `flush`. The variants of a cell take turns over \
         {rounds} round(s) of {:.1} s each; percentiles pool the rounds.\n",
        round.as_secs_f64()
    )
    .unwrap();
    report_costs(&mut w, cells);
    report_scale(&mut w, scale);
    report_memory(&mut w, memory, slow);
    w
}

fn report_costs(w: &mut String, cells: &[Cell]) {
    writeln!(w, "### Cost per tick\n").unwrap();
    writeln!(
        w,
        "| clients | players | chunks | variant | server CPU µs/tick | process CPU µs/tick | send p50 µs | send p99 µs | tick p99 µs | delivered |"
    )
    .unwrap();
    writeln!(w, "|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|").unwrap();
    for cell in cells {
        for (v, run) in &cell.runs {
            writeln!(
                w,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} % |",
                cell.clients,
                cell.players,
                run.chunks,
                v.label(),
                fmt_us(run.server_us()),
                fmt_us(run.process_us()),
                us(pct(&run.sends, 0.5)),
                us(pct(&run.sends, 0.99)),
                us(pct(&run.ticks, 0.99)),
                run.delivery() * 100.0
            )
            .unwrap();
        }
    }
    writeln!(
        w,
        "\n### Zao over the floor (target: (a)/(c) server CPU ≤ {TARGET}×)\n"
    )
    .unwrap();
    writeln!(
        w,
        "| clients | players | a/c server CPU | b/c server CPU | a/c process CPU | b/c process CPU | a/c send p50 | b/c send p50 | a/c send p99 | a/d server CPU | a/d send p50 | target |"
    )
    .unwrap();
    writeln!(w, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|").unwrap();
    let mut misses = 0;
    for cell in cells {
        let (a, b, c, d) = (
            cell.run(Variant::Fanout),
            cell.run(Variant::PerClient),
            cell.run(Variant::Floor),
            cell.run(Variant::FloorChunkMajor),
        );
        let holds = a.server_us() <= TARGET * c.server_us();
        misses += usize::from(!holds);
        let p = |r: &Run, q| pct(&r.sends, q).as_secs_f64();
        writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell.clients,
            cell.players,
            ratio(a.server_us(), c.server_us()),
            ratio(b.server_us(), c.server_us()),
            ratio(a.process_us(), c.process_us()),
            ratio(b.process_us(), c.process_us()),
            ratio(p(a, 0.5), p(c, 0.5)),
            ratio(p(b, 0.5), p(c, 0.5)),
            ratio(p(a, 0.99), p(c, 0.99)),
            ratio(a.server_us(), d.server_us()),
            ratio(p(a, 0.5), p(d, 0.5)),
            if holds { "holds" } else { "MISSES" }
        )
        .unwrap();
    }
    writeln!(
        w,
        "\n(a)/(c) ≤ {TARGET}×: {} of {} cells hold. (a)/(d) compares zao with a \
         floor that sends in zao's order: where it is near 1× and (a)/(c) is \
         not, the cost is the order, not zao's code.\n",
        cells.len() - misses,
        cells.len()
    )
    .unwrap();
}

fn report_scale(w: &mut String, scale: &[ScaleRow]) {
    if scale.is_empty() {
        return;
    }
    writeln!(w, "### Scale: one server at 60 Hz\n").unwrap();
    writeln!(
        w,
        "Fan-out (a) only, {:.0} s per row; each clients count runs up the \
         players until a row misses. Sustained: tick p99 under {} ms and at \
         least {:.0} % of datagrams delivered.\n",
        SCALE_RUN.as_secs_f64(),
        TICK_BUDGET.as_millis(),
        MIN_DELIVERY * 100.0
    )
    .unwrap();
    writeln!(
        w,
        "| clients | players | chunks | datagrams/s | server CPU µs/tick | tick p50 µs | tick p99 µs | delivered | sustained |"
    )
    .unwrap();
    writeln!(w, "|--:|--:|--:|--:|--:|--:|--:|--:|---|").unwrap();
    for row in scale {
        let r = &row.run;
        writeln!(
            w,
            "| {} | {} | {} | {:.0} | {} | {} | {} | {:.1} % | {} |",
            row.clients,
            row.players,
            r.chunks,
            (row.clients * r.chunks) as f64 * HZ,
            fmt_us(r.server_us()),
            us(pct(&r.ticks, 0.5)),
            us(pct(&r.ticks, 0.99)),
            r.delivery() * 100.0,
            if r.sustained() { "yes" } else { "no" }
        )
        .unwrap();
    }
    // Largest by datagrams per tick: clients × chunks.
    let best = scale
        .iter()
        .filter(|r| r.run.sustained())
        .max_by_key(|r| (r.clients * r.run.chunks, r.clients));
    match best {
        Some(b) => writeln!(
            w,
            "\n**Largest sustained: {} clients × {} players at 60 Hz** ({} chunks, \
             {:.0} datagrams/s; tick p99 {} µs, {:.1} % delivered), on the cores \
             above shared with the clients.\n",
            b.clients,
            b.players,
            b.run.chunks,
            (b.clients * b.run.chunks) as f64 * HZ,
            us(pct(&b.run.ticks, 0.99)),
            b.run.delivery() * 100.0
        )
        .unwrap(),
        None => writeln!(w, "\nNo row sustained 60 Hz.\n").unwrap(),
    }
}

fn report_memory(w: &mut String, m: &Memory, slow: &SlowResult) {
    writeln!(w, "### Memory per connected client\n").unwrap();
    writeln!(
        w,
        "RSS growth while {} clients connect, divided by them; each fleet's \
         clients share one socket, and both ends of every connection live in \
         this process, so a figure is the server's share plus the client's \
         quinn connection.\n",
        m.clients
    )
    .unwrap();
    writeln!(w, "| | KiB per client |\n|---|--:|").unwrap();
    writeln!(
        w,
        "| zao server + raw client, connected | {:.0} |",
        m.zao_connect
    )
    .unwrap();
    writeln!(
        w,
        "| bare quinn server + raw client, connected | {:.0} |",
        m.bare_connect
    )
    .unwrap();
    writeln!(
        w,
        "| zao's own share (the difference) | {:.0} |",
        m.zao_connect - m.bare_connect
    )
    .unwrap();
    writeln!(
        w,
        "| zao, after 2 s of 1024-player snapshots ({:.1} % delivered: one client socket \
         cannot read them all, so the server's queues fill) | {:.0} |",
        m.run_delivery * 100.0,
        m.zao_after_run
    )
    .unwrap();
    writeln!(
        w,
        "| zao's limit per connection (`Limits::worst_case_bytes_per_connection`) | {} |",
        limits().worst_case_bytes_per_connection() / 1024
    )
    .unwrap();

    let at = |t: f64| {
        slow.rss_kib
            .iter()
            .min_by(|a, b| (a.0 - t).abs().total_cmp(&(b.0 - t).abs()))
            .unwrap()
    };
    let (start, one, last) = (slow.rss_kib[0], at(1.0), slow.rss_kib.last().unwrap());
    let chunk_kib = slow.snapshot_bytes as f64 / slow.chunks.max(1) as f64 / 1024.0;
    let per = |kib: u64| kib as f64 / slow.stalled as f64;
    writeln!(
        w,
        "\n**Slow clients.** {} clients stop reading their sockets (their runtime \
         stops: no reads, no ACKs) while the server sends 1024-player snapshots \
         ({} B in {} chunks) to them and to one healthy client for {:.0} s. Per \
         stalled client the server was handed {} chunk datagrams (~{:.0} KiB) \
         and put {:.0} KiB on the wire before the congestion window closed; the \
         rest was dropped oldest-first in quinn's {} KiB datagram send buffer \
         (the `Bytes` it holds are shared with every other client's). RSS: {} \
         KiB before sending, {} KiB at {:.1} s, {} KiB at {:.1} s: {:+.0} KiB \
         per stalled client in the first second, {:+.0} KiB after it. {} of {} \
         stalled clients still connected; the healthy client got {:.1} % of its \
         chunks.\n",
        slow.stalled,
        slow.snapshot_bytes,
        slow.chunks,
        slow.seconds,
        slow.queued_per_client,
        slow.queued_per_client as f64 * chunk_kib,
        slow.sent_bytes_per_client as f64 / 1024.0,
        limits().datagram_send_buffer / 1024,
        start.1,
        one.1,
        one.0,
        last.1,
        last.0,
        per(one.1.saturating_sub(start.1)),
        per(last.1.saturating_sub(one.1)),
        slow.still_connected,
        slow.stalled,
        slow.healthy_delivery * 100.0
    )
    .unwrap();
    let samples: Vec<String> = slow
        .rss_kib
        .iter()
        .map(|(t, k)| format!("{t:.1} s: {k}"))
        .collect();
    writeln!(w, "RSS samples (KiB): {}.", samples.join(", ")).unwrap();
}

/// Replaces the marked section of BENCHMARKS.md (appends the markers if
/// they are missing).
fn write_section(section: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("BENCHMARKS.md");
    let old = fs::read_to_string(&path).unwrap_or_default();
    let block = format!("{MARK_START}\n{section}{MARK_END}");
    let new = match (old.find(MARK_START), old.find(MARK_END)) {
        (Some(s), Some(e)) if s < e => {
            format!("{}{block}{}", &old[..s], &old[e + MARK_END.len()..])
        }
        _ => format!("{}\n\n{block}\n", old.trim_end()),
    };
    fs::write(&path, new).unwrap();
}
