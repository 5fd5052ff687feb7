//! A fleet on one machine: K zao server processes side by side, each with
//! its own clients, as a fleet manager packs game servers onto a node
//! (docs/FLEET.md). Each process broadcasts a 1024-player `WorldSnapshot`
//! at 60 Hz to its clients (fan-out, as the broadcast tool's (a)); the tool
//! reports each server's tick p99 and delivery, and the machine's total CPU,
//! as K grows, so a game sees how the per-process cost adds up.
//!
//! ```sh
//! cargo run --release -p zao-perf --bin servers            # K = 1, 2, 4, 8; writes BENCHMARKS.md
//! cargo run --release -p zao-perf --bin servers -- --quick # K = 1, 2 for 2 s, prints only
//! ```
//!
//! The parent starts K copies of itself (`--server`); each binds its server
//! on 127.0.0.1, connects its clients (raw quinn connections that speak
//! zao's handshake and count datagrams, `zao_perf::Fleet`), says `READY`,
//! and waits; once all are ready the parent says `go` to every one, so the
//! K servers tick at the same time. Each then prints its figures.

// Bench code on our own sample values: a panic is a broken report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use zao::quic::{Certificate, Limits, Server, ServerConfig, Target};
use zao_messages::samples;
use zao_perf::{
    Fleet, FleetConfig, Section, ThreadCpu, current_thread_id, load_average, machine, percentile,
    today,
};

const HZ: f64 = 60.0;
/// Clients and players of each server.
const CLIENTS: usize = 64;
const PLAYERS: usize = 1024;
const SERVERS: [usize; 4] = [1, 2, 4, 8];
const RUN: Duration = Duration::from_secs(5);
/// What "keeps up" means: the broadcast tool's bar.
const TICK_BUDGET: Duration = Duration::from_millis(16);
const CONNECT_WAVE: usize = 16;
/// Waits after the last tick for datagrams still in flight.
const SETTLE: Duration = Duration::from_millis(300);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--server") {
        let n = |i: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap();
        server(n(1), n(2), Duration::from_millis(n(3) as u64));
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let (counts, run): (&[usize], Duration) = if quick {
        (&SERVERS[..2], Duration::from_secs(2))
    } else {
        (&SERVERS, RUN)
    };
    let load_before = load_average();
    let mut rows = Vec::new();
    for &k in counts {
        eprintln!("{k} server process(es) × {CLIENTS} clients × {PLAYERS} players, {run:?}");
        let row = run_servers(k, run);
        eprintln!("  {}", row.line());
        rows.push(row);
    }
    let body = report(&rows, run, (load_before, load_average()));
    println!("{body}");
    if !quick {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../BENCHMARKS.md");
        Section::new("servers").write(&path, &body).unwrap();
        eprintln!("wrote {}", path.display());
    }
}

/// What one server process measured.
#[derive(Clone, Debug, Default)]
struct ServerRun {
    tick_p50: Duration,
    tick_p99: Duration,
    /// Datagrams its clients counted over those sent to them.
    delivered: f64,
    /// CPU of the server: the tick thread and the threads `Server::start`
    /// started.
    server_cpu: Duration,
    /// CPU of the whole process: the server and its clients.
    process_cpu: Duration,
    wall: Duration,
}

impl ServerRun {
    fn to_line(&self) -> String {
        format!(
            "RESULT {} {} {} {} {} {}",
            self.tick_p50.as_nanos(),
            self.tick_p99.as_nanos(),
            self.delivered,
            self.server_cpu.as_nanos(),
            self.process_cpu.as_nanos(),
            self.wall.as_nanos()
        )
    }

    fn from_line(line: &str) -> Option<Self> {
        let mut f = line.strip_prefix("RESULT ")?.split(' ');
        let mut ns = || -> Option<Duration> { Some(Duration::from_nanos(f.next()?.parse().ok()?)) };
        let tick_p50 = ns()?;
        let tick_p99 = ns()?;
        let delivered = f.next()?.parse().ok()?;
        let mut ns = || -> Option<Duration> { Some(Duration::from_nanos(f.next()?.parse().ok()?)) };
        Some(Self {
            tick_p50,
            tick_p99,
            delivered,
            server_cpu: ns()?,
            process_cpu: ns()?,
            wall: ns()?,
        })
    }
}

/// K processes run together.
struct Row {
    servers: usize,
    runs: Vec<ServerRun>,
}

impl Row {
    fn p99s(&self) -> Vec<Duration> {
        let mut p99s: Vec<Duration> = self.runs.iter().map(|r| r.tick_p99).collect();
        p99s.sort_unstable();
        p99s
    }

    /// Cores the servers took, and the whole machine's load (servers and
    /// their clients).
    fn cores(&self) -> (f64, f64) {
        let wall = self
            .runs
            .iter()
            .map(|r| r.wall.as_secs_f64())
            .fold(0.0, f64::max);
        let sum = |f: fn(&ServerRun) -> Duration| -> f64 {
            self.runs.iter().map(|r| f(r).as_secs_f64()).sum::<f64>() / wall
        };
        (sum(|r| r.server_cpu), sum(|r| r.process_cpu))
    }

    fn line(&self) -> String {
        let p99s = self.p99s();
        let (server, total) = self.cores();
        format!(
            "tick p99 median {:.2} ms, worst {:.2} ms; delivered ≥ {:.1} %; servers {server:.2} cores, machine {total:.2} cores",
            ms(percentile(&p99s, 0.5)),
            ms(*p99s.last().unwrap()),
            100.0 * self.runs.iter().map(|r| r.delivered).fold(1.0, f64::min),
        )
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Starts `k` server processes, lets them tick together for `run`, and
/// collects their figures.
fn run_servers(k: usize, run: Duration) -> Row {
    let exe = std::env::current_exe().unwrap();
    let mut children: Vec<(Child, BufReader<std::process::ChildStdout>)> = (0..k)
        .map(|_| {
            let mut child = Command::new(&exe)
                .args([
                    "--server",
                    &CLIENTS.to_string(),
                    &PLAYERS.to_string(),
                    &run.as_millis().to_string(),
                ])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let out = BufReader::new(child.stdout.take().unwrap());
            (child, out)
        })
        .collect();
    for (_, out) in &mut children {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "READY", "a server process did not start");
    }
    for (child, _) in &mut children {
        writeln!(child.stdin.as_mut().unwrap(), "go").unwrap();
    }
    let runs = children
        .into_iter()
        .map(|(mut child, mut out)| {
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            assert!(child.wait().unwrap().success());
            ServerRun::from_line(line.trim()).expect("a server's figures")
        })
        .collect();
    Row { servers: k, runs }
}

/// One server process: bind, connect its clients, wait for `go`, tick.
fn server(clients: usize, players: usize, run: Duration) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let before: HashSet<u64> = ThreadCpu::now().ids().collect();
    let mut limits = Limits::default();
    limits.max_pending_per_ip = CONNECT_WAVE;
    limits.max_clients_per_ip = limits.max_clients;
    let mut config = ServerConfig::new(
        (Ipv4Addr::LOCALHOST, 0).into(),
        Certificate::self_signed(&["localhost"]).unwrap(),
        zao_messages::protocol(),
    );
    config.limits = limits.clone();
    let mut server = Server::start(config).unwrap();
    let zao_threads: HashSet<u64> = ThreadCpu::now()
        .ids()
        .filter(|t| !before.contains(t))
        .collect();
    // Clients connect `max_pending_per_ip` at a time.
    let fleet_config = FleetConfig::zao(&server, &zao_messages::protocol(), &limits).unwrap();
    let fleet = Fleet::connect(&rt, clients, &fleet_config).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.clients().len() < clients {
        assert!(Instant::now() < deadline, "the clients never connected");
        while server.poll_event().is_some() {}
        std::thread::sleep(Duration::from_millis(5));
    }
    while server.poll_event().is_some() {}

    println!("READY");
    std::io::stdout().flush().unwrap();
    let mut go = String::new();
    std::io::stdin().read_line(&mut go).unwrap();

    let tick_thread = current_thread_id().unwrap_or(0);
    let mut snapshot = samples::world_snapshot(players);
    let ticks = (run.as_secs_f64() * HZ).round() as usize;
    let period = Duration::from_secs_f64(1.0 / HZ);
    let mut times = Vec::with_capacity(ticks);
    let mut expected = 0u64;
    let received_before = fleet.received();
    let cpu_before = ThreadCpu::now();
    let started = Instant::now();
    let mut next = Instant::now();
    for tick in 0..ticks {
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
        snapshot.tick = tick as u32;
        let t0 = Instant::now();
        let chunks = server.send_snapshot(Target::All, &snapshot).unwrap();
        while server.poll_event().is_some() {}
        server.flush();
        times.push(t0.elapsed());
        expected += (chunks * clients) as u64;
        next += period;
        next = next.max(Instant::now());
    }
    std::thread::sleep(SETTLE);
    let cpu_after = ThreadCpu::now();
    let result = ServerRun {
        tick_p50: percentile(&times, 0.5),
        tick_p99: percentile(&times, 0.99),
        delivered: (fleet.received() - received_before) as f64 / expected.max(1) as f64,
        server_cpu: cpu_after.cpu_since(&cpu_before, |tid, _| {
            tid == tick_thread || zao_threads.contains(&tid)
        }),
        process_cpu: cpu_after.cpu_since(&cpu_before, |_, _| true),
        wall: started.elapsed(),
    };
    println!("{}", result.to_line());
    fleet.close();
}

fn report(rows: &[Row], run: Duration, load: (String, String)) -> String {
    let mut w = String::new();
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    writeln!(
        w,
        "### A fleet on one machine\n\n\
         `cargo run --release -p zao-perf --bin servers` ({}, {}, {cores} cores; load {} before, {} after).\n\n\
         K server processes side by side, as a fleet packs game servers onto a node, each with\n\
         its own {CLIENTS} clients (in its own process, raw quinn connections that count\n\
         datagrams) and a {PLAYERS}-player `WorldSnapshot` broadcast at {HZ} Hz (fan-out), all\n\
         ticking together for {:.0} s. Tick: the send, the event poll and the flush on the\n\
         server's tick thread; p99 of each server, then the median and worst over the K.\n\
         Cores: CPU time over wall time, summed over the processes: the servers' own threads,\n\
         and the machine's total with every client.\n",
        machine(),
        today(),
        load.0,
        load.1,
        run.as_secs_f64()
    )
    .unwrap();
    writeln!(
        w,
        "| servers | clients in all | tick p99, median of servers (ms) | worst server (ms) | delivered, worst server | servers' CPU (cores) | per server | machine total (cores) | every tick p99 under {} ms |",
        TICK_BUDGET.as_millis()
    )
    .unwrap();
    writeln!(w, "|---|---|---|---|---|---|---|---|---|").unwrap();
    for row in rows {
        let p99s = row.p99s();
        let (server, total) = row.cores();
        let worst = *p99s.last().unwrap();
        writeln!(
            w,
            "| {} | {} | {:.2} | {:.2} | {:.1} % | {server:.2} | {:.2} | {total:.2} | {} |",
            row.servers,
            row.servers * CLIENTS,
            ms(percentile(&p99s, 0.5)),
            ms(worst),
            100.0 * row.runs.iter().map(|r| r.delivered).fold(1.0, f64::min),
            server / row.servers as f64,
            if worst <= TICK_BUDGET { "yes" } else { "no" }
        )
        .unwrap();
    }
    let per_server: Vec<f64> = rows
        .iter()
        .map(|r| r.cores().0 / r.servers as f64)
        .collect();
    let (lo, hi) = (
        per_server.iter().copied().fold(f64::INFINITY, f64::min),
        per_server.iter().copied().fold(0.0, f64::max),
    );
    writeln!(
        w,
        "\nEach server's own threads took {lo:.2}–{hi:.2} cores across these K (the \"per server\"\n\
         column): the fleet's cost is about K times one server's. Here the clients\n\
         run on the same {cores} cores as the servers, so once the machine total nears the core\n\
         count, every process's ticks slip together; on a fleet's node the clients are\n\
         elsewhere and the servers' column is what fills it."
    )
    .unwrap();
    w
}
