//! Measures Zao against the peer codecs on every benchmark case and writes
//! `BENCHMARKS.md` and `docs/bench.svg`:
//!
//! ```sh
//! cargo run --profile bench -p zao-bench --bin bench_report
//! ```
//!
//! `[profile.bench]` is fat LTO with one codegen unit, and `.cargo/config.toml`
//! aligns every function and loop to 64 bytes (the report says so, or that a
//! RUSTFLAGS variable overrode it). The tool runs the
//! rows of `bench/benches/support/` (the same closures `bench/benches/tiers.rs` runs
//! under criterion) in [`PROCESSES`] separate worker processes of itself,
//! one after another, under the system allocator: in each, every row is
//! calibrated to a batch of a few milliseconds, then all rows of a case take
//! turns, round after round, and each row keeps the median of its rounds.
//! The report gives each row's median over the processes and their spread,
//! and judges each target by a paired ratio: in each process, the median
//! over the rounds of Zao's time over the peer's in the same round, then the
//! median over the processes.
//! Each process places every destination and decode input at its own offset
//! within a 4 KiB page (the same offset for every library), so that no one
//! heap layout's luck decides a row, and each runs its own build of the same
//! code, linked with its own order of functions (profile `bench-layout`,
//! lld's `--shuffle-sections`; `--one-layout` runs this binary in every
//! process instead), so that no one code layout's luck decides one either.
//! Allocations are counted in a separate pass, by `bench/src/bin/bench_allocs.rs`
//! under a counting allocator, so no timed row pays for the counting.
//!
//! Other modes, for one row at a time:
//!
//! ```sh
//! # one process, only Zao's rows of one case
//! cargo run --profile bench -p zao-bench --bin bench_report -- --worker --case SpawnEntity --lib zao
//! # the same with buffers 1664 bytes into a page (process 2's placement)
//! cargo run --profile bench -p zao-bench --bin bench_report -- --worker --placement 1664 --case SpawnEntity
//! # no timing: run the selected rows N times (for `valgrind --tool=callgrind`;
//! # the difference between N and 2N is N operations' instructions)
//! cargo run --profile bench -p zao-bench --bin bench_report -- --iters 100000 --case SpawnEntity --lib zao --op decode
//! # the whole report, and every row's times saved as TSV: case, library, op,
//! # median ns, ns per process, then each process's rounds (`;` between processes)
//! cargo run --profile bench -p zao-bench --bin bench_report -- --save /tmp/rows.tsv
//! ```

// Report code on our own sample values: a panic is a broken report, not a
// crashed server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

#[path = "../placement.rs"]
mod placement;
#[path = "../../benches/support/mod.rs"]
mod support;
#[path = "../../benches/support/text_sizes.rs"]
mod text_sizes;

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::cases::{KINDS, Kind};
use support::harness::{Case, Op};
use support::libs::{RAW, ZAO, ZAO_GAME};
use zao_perf::{Section, machine, today};

/// Worker processes; each row reports the median of theirs.
const PROCESSES: usize = 5;
/// Timed rounds per row in one process; the median is kept.
const ROUNDS: usize = 19;
/// How far apart in a 4 KiB page the worker processes place their buffers:
/// process `p` starts every destination and input `p * PLACEMENT_STEP` bytes
/// (modulo the page) past a page boundary. 26 × 64: five processes land
/// spread over the page, none on another's cache-line set.
const PLACEMENT_STEP: usize = 26 * 64;
/// Wall time of one timed batch of one row.
const BATCH: Duration = Duration::from_millis(4);
/// A row holds when Zao's time over the best peer's is at most this...
const HOLD: f64 = 1.00;
/// ... or at most this where the best peer is at the raw-copy floor,
const TIE: f64 = 1.03;
/// ... that is, within this factor of the raw copy.
const AT_FLOOR: f64 = 1.1;
/// Each `_with_limits` decode against its plain form (issue 45): within 5 %.
const LIMITS_SAME: f64 = 1.05;
/// A blittable run's copy at its worst placement against its best (issue
/// 45): within this factor.
const PLACEMENT_SLACK: f64 = 1.5;
/// Target (c): Zao within this factor of the raw copy.
const RAW_SLACK: f64 = 1.2;
/// Target (b): borrowed decode against the best owned decode.
const BORROWED_GAIN: f64 = 3.0;
/// The peers of target (e): no compression of integers beyond their width
/// (bincode's standard config is the exception: it writes varints).
const FIXED_WIDTH: [&str; 3] = ["speedy", "wincode", "bincode-fixint"];
/// The crates whose versions the report names.
const CRATES: [&str; 15] = [
    "criterion",
    "bitcode",
    "bincode",
    "postcard",
    "rkyv",
    "speedy",
    "wincode",
    "rmp-serde",
    "serde_json",
    "prost",
    "zerocopy",
    "glam",
    "serde",
    "foldhash",
    "allocation-counter",
];

/// Which rows a run covers (`--case`, `--lib`, `--op`; none means all).
#[derive(Default)]
struct Filter {
    cases: Vec<String>,
    libs: Vec<String>,
    ops: Vec<Op>,
}

impl Filter {
    fn case(&self, kind: Kind) -> bool {
        self.cases.is_empty() || self.cases.contains(&kind.name())
    }

    fn row(&self, lib: &str, op: Op) -> bool {
        (self.libs.is_empty() || self.libs.iter().any(|l| l == lib))
            && (self.ops.is_empty() || self.ops.contains(&op))
    }

    /// The same selection as command-line arguments.
    fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        for c in &self.cases {
            args.extend(["--case".to_owned(), c.clone()]);
        }
        for l in &self.libs {
            args.extend(["--lib".to_owned(), l.clone()]);
        }
        for o in &self.ops {
            args.extend(["--op".to_owned(), o.label().to_owned()]);
        }
        args
    }
}

enum Mode {
    Report {
        save: Option<PathBuf>,
        one_layout: bool,
    },
    Worker {
        placement: usize,
    },
    Iters(u64),
}

fn main() {
    let mut filter = Filter::default();
    let mut mode = Mode::Report {
        save: None,
        one_layout: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--worker" => mode = Mode::Worker { placement: 0 },
            "--placement" => {
                let offset = value().parse().expect("--placement BYTES");
                match &mut mode {
                    Mode::Worker { placement } => *placement = offset,
                    _ => panic!("--placement comes after --worker"),
                }
            }
            "--iters" => mode = Mode::Iters(value().parse().expect("--iters N")),
            "--save" => match &mut mode {
                Mode::Report { save, .. } => *save = Some(value().into()),
                _ => panic!("--save is for the report"),
            },
            "--one-layout" => match &mut mode {
                Mode::Report { one_layout, .. } => *one_layout = true,
                _ => panic!("--one-layout is for the report"),
            },
            "--case" => {
                let name = value();
                assert!(Kind::from_name(&name).is_some(), "no case {name:?}");
                filter.cases.push(name);
            }
            "--lib" => filter.libs.push(value()),
            "--op" => {
                let label = value();
                filter
                    .ops
                    .push(Op::from_label(&label).unwrap_or_else(|| panic!("no op {label:?}")));
            }
            other => panic!("unknown argument {other:?}"),
        }
    }
    match mode {
        Mode::Worker { placement } => {
            support::harness::set_placement(placement);
            worker(&filter);
        }
        Mode::Iters(iters) => {
            for kind in KINDS.into_iter().filter(|&k| filter.case(k)) {
                let mut case = kind.build();
                for row in case.rows.iter_mut().filter(|r| filter.row(r.lib, r.op)) {
                    row.run(iters);
                }
            }
        }
        Mode::Report { save, one_layout } => report(&filter, save.as_deref(), one_layout),
    }
}

/// One worker process: measures the selected rows and prints
/// `wire\tcase\tlib\tbytes`, `time\tcase\tlib\top\tns` (the median round)
/// and `rounds\tcase\tlib\top\tns,ns,...` lines; the report reads the
/// rounds.
fn worker(filter: &Filter) {
    if filter.case(Kind::WorldSnapshot(placement::PLAYERS)) && filter.libs.is_empty() {
        eprintln!("  placement sweep");
        for s in placement::sweep() {
            println!(
                "placement\t{}\t{}\t{}\t{}\t{}",
                s.row, s.best, s.best_at, s.worst, s.worst_at
            );
        }
    }
    for kind in KINDS.into_iter().filter(|&k| filter.case(k)) {
        let case = kind.build();
        for (lib, bytes) in &case.wire {
            println!("wire\t{}\t{lib}\t{bytes}", case.name);
        }
        eprintln!("  {} ({} rows)", case.name, case.rows.len());
        for (lib, op, ns, rounds) in measure(case, filter) {
            println!("time\t{}\t{lib}\t{}\t{ns}", kind.name(), op.label());
            let rounds: Vec<String> = rounds.iter().map(f64::to_string).collect();
            println!(
                "rounds\t{}\t{lib}\t{}\t{}",
                kind.name(),
                op.label(),
                rounds.join(",")
            );
        }
    }
}

/// Calibrates every selected row, then runs the interleaved rounds; returns
/// each row's median time per operation and its time in every round.
fn measure(mut case: Case, filter: &Filter) -> Vec<(&'static str, Op, f64, Vec<f64>)> {
    case.rows.retain(|r| filter.row(r.lib, r.op));
    let iters: Vec<u64> = case.rows.iter_mut().map(calibrate).collect();
    let count = case.rows.len();
    let mut samples = vec![Vec::with_capacity(ROUNDS); count];
    for round in 0..ROUNDS {
        // Rotate the starting row so that no row always follows the same one.
        for k in 0..count {
            let i = (k + round) % count;
            let start = Instant::now();
            case.rows[i].run(iters[i]);
            samples[i].push(start.elapsed().as_nanos() as f64 / iters[i] as f64);
        }
    }
    case.rows
        .iter()
        .zip(samples)
        .map(|(row, samples)| (row.lib, row.op, median(samples.clone()), samples))
        .collect()
}

/// Warms a row up and returns the iterations that fill one batch.
fn calibrate(row: &mut support::harness::Row) -> u64 {
    row.run(16);
    let mut iters = 1u64;
    loop {
        let start = Instant::now();
        row.run(iters);
        let elapsed = start.elapsed();
        if elapsed >= BATCH / 8 || iters >= 1 << 32 {
            let per_op = elapsed.as_secs_f64() / iters as f64;
            return ((BATCH.as_secs_f64() / per_op).ceil() as u64).max(1);
        }
        iters *= 2;
    }
}

/// `ratio` to two decimals, or to three where two would print one of
/// `limits` for a ratio on the other side of it (a row at 1.004× misses a
/// 1.00× rule, and "1.00×: MISSES" would read as a contradiction).
fn times(ratio: f64, limits: &[f64]) -> String {
    let two = format!("{ratio:.2}");
    if limits
        .iter()
        .any(|&limit| ratio != limit && two == format!("{limit:.2}"))
    {
        format!("{ratio:.3}×")
    } else {
        format!("{two}×")
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// One row's result.
struct Measured {
    lib: String,
    op: Op,
    /// Nanoseconds per operation, one per process.
    runs: Vec<f64>,
    /// Nanoseconds per operation in every round, one list per process.
    rounds: Vec<Vec<f64>>,
    /// Their median.
    ns: f64,
    /// Allocations and bytes allocated per operation (the counting pass).
    allocs: Option<(f64, f64)>,
}

impl Measured {
    /// Half the range of the processes' times, relative to their median.
    fn spread(&self) -> f64 {
        let max = self.runs.iter().copied().fold(f64::MIN, f64::max);
        let min = self.runs.iter().copied().fold(f64::MAX, f64::min);
        (max - min) / 2.0 / self.ns
    }
}

/// A paired ratio of two rows (see [`CaseResult::ratio`]).
#[derive(Clone, Copy)]
struct Ratio {
    /// The median over the processes.
    median: f64,
    /// The lowest process.
    low: f64,
    /// The highest process.
    high: f64,
}

impl Ratio {
    /// "(processes 0.98–1.02)".
    fn range(&self) -> String {
        format!("(processes {:.2}–{:.2})", self.low, self.high)
    }
}

/// One case's results.
struct CaseResult {
    kind: Kind,
    name: String,
    wire: Vec<(String, usize)>,
    rows: Vec<Measured>,
}

impl CaseResult {
    fn ns(&self, lib: &str, op: Op) -> Option<f64> {
        self.row(lib, op).map(|m| m.ns)
    }

    fn row(&self, lib: &str, op: Op) -> Option<&Measured> {
        self.rows.iter().find(|m| m.lib == lib && m.op == op)
    }

    fn wire(&self, lib: &str) -> Option<usize> {
        self.wire.iter().find(|(l, _)| l == lib).map(|&(_, n)| n)
    }

    /// Every library, in row order.
    fn libs(&self) -> impl Iterator<Item = &str> + '_ {
        self.wire.iter().map(|(lib, _)| lib.as_str())
    }

    /// The peer codecs: the ranked libraries but Zao.
    fn peers(&self) -> impl Iterator<Item = &str> + '_ {
        self.libs().filter(|&lib| ranked(lib) && lib != ZAO)
    }

    /// The time of row `a` over row `b`, paired: in each process, the median
    /// over its rounds of `a`'s time over `b`'s in the same round; then the
    /// median over the processes, with the lowest and highest process.
    /// Drift that slows a whole round or a whole process slows both rows of
    /// a pair, so it cancels instead of landing on whichever row it hit.
    fn ratio(&self, a: (&str, Op), b: (&str, Op)) -> Option<Ratio> {
        let (a, b) = (self.row(a.0, a.1)?, self.row(b.0, b.1)?);
        let per_process: Vec<f64> = a
            .rounds
            .iter()
            .zip(&b.rounds)
            .map(|(a, b)| median(a.iter().zip(b).map(|(a, b)| a / b).collect()))
            .collect();
        if per_process.is_empty() {
            return None;
        }
        Some(Ratio {
            median: median(per_process.clone()),
            low: per_process.iter().copied().fold(f64::MAX, f64::min),
            high: per_process.iter().copied().fold(f64::MIN, f64::max),
        })
    }

    /// The peer that Zao's `op` compares worst with, by the paired ratio
    /// of Zao's `op` over the peer's `peer_op`, and that ratio.
    fn toughest_peer(&self, op: Op, peer_op: Op) -> Option<(&str, Ratio)> {
        self.peers()
            .filter_map(|lib| Some((lib, self.ratio((ZAO, op), (lib, peer_op))?)))
            .max_by(|a, b| a.1.median.total_cmp(&b.1.median))
    }

    /// The fastest peer for `op`.
    fn best_peer(&self, op: Op) -> Option<(&str, f64)> {
        self.peers()
            .filter_map(|lib| Some((lib, self.ns(lib, op)?)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// The fastest time of `op` over every library, the raw copy included.
    fn fastest(&self, op: Op) -> f64 {
        self.libs()
            .filter_map(|lib| self.ns(lib, op))
            .fold(f64::INFINITY, f64::min)
    }

    /// Zao's place among the codecs for `op` (1 = fastest), and how many.
    fn zao_rank(&self, op: Op) -> Option<(usize, usize)> {
        let zao = self.ns(ZAO, op)?;
        let peers: Vec<f64> = self.peers().filter_map(|l| self.ns(l, op)).collect();
        let ahead = peers.iter().filter(|&&ns| ns < zao).count();
        Some((ahead + 1, peers.len() + 1))
    }

    /// The holds rule for Zao's `op` against the best peer's `peer_op`:
    /// the verdict and a line of evidence.
    fn judge(&self, op: Op, peer_op: Op) -> Option<(bool, String)> {
        let zao = self.row(ZAO, op)?;
        let (peer, paired) = self.toughest_peer(op, peer_op)?;
        let best = self.ns(peer, peer_op)?;
        let ratio = paired.median;
        let floor = self.ns(RAW, peer_op);
        let at_floor = self
            .ratio((peer, peer_op), (RAW, peer_op))
            .is_some_and(|r| r.median <= AT_FLOOR);
        let ok = ratio <= HOLD || (at_floor && ratio <= TIE);
        let peer_spread = self.row(peer, peer_op).map_or(0.0, Measured::spread);
        let why = if ratio <= HOLD {
            "fastest".to_owned()
        } else if ok {
            format!("tie within {:.0} % at the raw floor", (TIE - 1.0) * 100.0)
        } else {
            format!("{peer} is faster")
        };
        let floor = floor.map_or(String::new(), |raw| format!(", raw copy {} ns", ns(raw)));
        Some((
            ok,
            format!(
                "{} {}: zao {} ns ±{} vs best peer {peer} {} ns ±{}{floor}: {} {}: {} — {why}",
                self.name,
                op.label(),
                ns(zao.ns),
                pct(zao.spread()),
                ns(best),
                pct(peer_spread),
                times(ratio, &[HOLD, TIE]),
                paired.range(),
                verdict(ok),
            ),
        ))
    }
}

fn report(filter: &Filter, save: Option<&Path>, one_layout: bool) {
    let begun = Instant::now();
    // The workspace root: BENCHMARKS.md, docs/, target/ and Cargo.lock.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("bench/ sits in the workspace");
    let load = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    // The allocation pass first: a failure there costs no timing run.
    eprintln!("allocation pass");
    let allocs = allocation_counts(root);
    let layouts = if one_layout {
        Layouts::One("`--one-layout`".to_owned())
    } else {
        layout_builds(root)
    };
    let started = Instant::now();
    let mut wire: Vec<(String, String, usize)> = Vec::new();
    // Every row's rounds, one list per process (its `time` line is their
    // median, so the report derives it rather than reading it).
    let mut rounds: Vec<(String, String, Op, Vec<Vec<f64>>)> = Vec::new();
    let mut sweeps: Vec<Placed> = Vec::new();
    for p in 0..PROCESSES {
        eprintln!("process {} of {PROCESSES}", p + 1);
        let out = Command::new(layouts.exe(p))
            .arg("--worker")
            .args(["--placement".to_owned(), (p * PLACEMENT_STEP).to_string()])
            .args(filter.args())
            .stderr(Stdio::inherit())
            .output()
            .expect("run a worker process");
        assert!(out.status.success(), "worker process failed");
        for line in String::from_utf8(out.stdout).expect("utf-8").lines() {
            let f: Vec<&str> = line.split('\t').collect();
            match f[0] {
                "wire" if p == 0 => {
                    wire.push((f[1].to_owned(), f[2].to_owned(), f[3].parse().unwrap()))
                }
                "placement" => {
                    let run = (
                        f[2].parse().unwrap(),
                        f[3].parse().unwrap(),
                        f[4].parse().unwrap(),
                        f[5].parse().unwrap(),
                    );
                    match sweeps.iter_mut().find(|t| t.row == f[1]) {
                        Some(t) => t.runs.push(run),
                        None => sweeps.push(Placed {
                            row: f[1].to_owned(),
                            runs: vec![run],
                        }),
                    }
                }
                "rounds" => {
                    let op = Op::from_label(f[3]).unwrap();
                    let these: Vec<f64> = f[4].split(',').map(|v| v.parse().unwrap()).collect();
                    match rounds
                        .iter_mut()
                        .find(|t| t.0 == f[1] && t.1 == f[2] && t.2 == op)
                    {
                        Some(t) => t.3.push(these),
                        None => rounds.push((f[1].to_owned(), f[2].to_owned(), op, vec![these])),
                    }
                }
                _ => {}
            }
        }
    }
    let run_secs = started.elapsed().as_secs_f64();

    let results: Vec<CaseResult> = KINDS
        .into_iter()
        .filter(|&k| filter.case(k))
        .map(|kind| {
            let name = kind.name();
            let rows = rounds
                .iter()
                .filter(|t| t.0 == name)
                .map(|(_, lib, op, rounds)| {
                    let runs: Vec<f64> = rounds.iter().map(|r| median(r.clone())).collect();
                    Measured {
                        lib: lib.clone(),
                        op: *op,
                        ns: median(runs.clone()),
                        runs,
                        rounds: rounds.clone(),
                        allocs: allocs
                            .iter()
                            .find(|a| a.0 == name && a.1 == *lib && a.2 == *op)
                            .map(|a| (a.3, a.4)),
                    }
                })
                .collect();
            CaseResult {
                kind,
                wire: wire
                    .iter()
                    .filter(|w| w.0 == name)
                    .map(|w| (w.1.clone(), w.2))
                    .collect(),
                name,
                rows,
            }
        })
        .collect();

    if let Some(path) = save {
        let mut tsv = String::new();
        for r in &results {
            for m in &r.rows {
                let runs: Vec<String> = m.runs.iter().map(|v| format!("{v:.3}")).collect();
                let rounds: Vec<String> = m
                    .rounds
                    .iter()
                    .map(|p| {
                        p.iter()
                            .map(|v| format!("{v:.3}"))
                            .collect::<Vec<_>>()
                            .join(",")
                    })
                    .collect();
                writeln!(
                    tsv,
                    "{}\t{}\t{}\t{:.3}\t{}\t{}",
                    r.name,
                    m.lib,
                    m.op.label(),
                    m.ns,
                    runs.join(","),
                    rounds.join(";")
                )
                .unwrap();
            }
        }
        fs::write(path, tsv).expect("write --save file");
    }

    let targets = targets(&results, &sweeps);
    print_summary(&results, &targets);
    if !filter.cases.is_empty() || !filter.libs.is_empty() || !filter.ops.is_empty() {
        println!("a selection was measured: BENCHMARKS.md is left as it is");
        return;
    }
    let svg = svg(&results);
    let mut markdown = markdown(&results, &targets, run_secs, load.trim(), root, &layouts);
    // Other tools own marked sections of the same file (zao-perf's
    // broadcast, snapshot_report, the TypeScript client's `npm run
    // bench:write`): carry them over.
    let old = fs::read_to_string(root.join("BENCHMARKS.md")).unwrap_or_default();
    for name in ["broadcast", "snapshots", "typescript"] {
        if let Some(block) = Section::new(name).find(&old) {
            markdown = format!("{}\n\n{block}\n", markdown.trim_end());
        }
    }
    fs::create_dir_all(root.join("docs")).expect("create docs/");
    fs::write(root.join("docs/bench.svg"), svg).expect("write docs/bench.svg");
    fs::write(root.join("BENCHMARKS.md"), markdown).expect("write BENCHMARKS.md");
    println!(
        "wrote BENCHMARKS.md and docs/bench.svg; measured in {run_secs:.1} s, total {:.1} s",
        begun.elapsed().as_secs_f64()
    );
}

/// Which code layouts the worker processes run.
enum Layouts {
    /// Every process runs this binary, for this reason (`--one-layout`, or
    /// why no layout could be built).
    One(String),
    /// Process `p` runs the binary at index `p`, linked with seed `p + 1`.
    Each(Vec<PathBuf>),
}

impl Layouts {
    fn exe(&self, p: usize) -> PathBuf {
        match self {
            Self::Each(exes) => exes[p].clone(),
            Self::One(_) => std::env::current_exe().expect("own path"),
        }
    }
}

/// Builds one binary per worker process, each the bench profile's code
/// linked with its own order of functions (lld's `--shuffle-sections`, seed
/// `p + 1`), so that no one build's code placement decides a row
/// (docs/DECISIONS.md, "Each worker process runs its own code layout").
/// The builds go to `target/bench-layout/` (profile `bench-layout`); the
/// first compiles the dependencies there, each later one only relinks
/// this example. Needs `cargo` (run under `cargo run`) and lld (Rust's
/// default linker on x86_64 Linux); without either, every process runs
/// this binary, and the report says so.
fn layout_builds(root: &Path) -> Layouts {
    let Ok(cargo) = std::env::var("CARGO") else {
        return Layouts::One("not run under `cargo run`".to_owned());
    };
    let dir = root.join("target").join("bench-layout").join("layouts");
    if let Err(e) = fs::create_dir_all(&dir) {
        return Layouts::One(format!("cannot create {}: {e}", dir.display()));
    }
    let mut exes = Vec::new();
    for p in 0..PROCESSES {
        let seed = p + 1;
        eprintln!("layout build {seed} of {PROCESSES}");
        let out = Command::new(&cargo)
            .current_dir(root)
            .args([
                "rustc",
                "--quiet",
                "--profile",
                "bench-layout",
                "-p",
                "zao-bench",
                "--bin",
                "bench_report",
                "--message-format",
                "json-render-diagnostics",
                "--",
                "-C",
            ])
            .arg(format!("link-arg=-Wl,--shuffle-sections=.text*={seed}"))
            .stderr(Stdio::inherit())
            .output();
        // Cargo's JSON messages: the example's artifact names its binary.
        let built = out.ok().filter(|o| o.status.success()).and_then(|o| {
            o.stdout.split(|&b| b == b'\n').find_map(|line| {
                let m: serde_json::Value = serde_json::from_slice(line).ok()?;
                (m["reason"] == "compiler-artifact" && m["target"]["name"] == "bench_report")
                    .then(|| m["executable"].as_str().map(PathBuf::from))?
            })
        });
        let Some(built) = built else {
            return Layouts::One(format!("layout build {seed} failed"));
        };
        let exe = dir.join(format!("bench_report-{seed}"));
        if let Err(e) = fs::copy(&built, &exe) {
            return Layouts::One(format!("cannot copy {}: {e}", built.display()));
        }
        exes.push(exe);
    }
    Layouts::Each(exes)
}

/// Runs `bench/src/bin/bench_allocs.rs` and parses its counts: `(case, library,
/// op, allocations, bytes)` per op. Run by hand (the binary, not `cargo
/// run`), the tool uses the `bench_allocs` binary beside it (build both:
/// `cargo build --profile bench -p zao-bench --bin bench_report --bin
/// bench_allocs`). Under `cargo run`, cargo builds and runs it with the same
/// profile unless the binary beside this one is at least as new.
fn allocation_counts(root: &Path) -> Vec<(String, String, Op, f64, f64)> {
    let exe = std::env::current_exe().expect("own path");
    let sibling = exe.with_file_name("bench_allocs");
    let modified = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
    let fresh = matches!((modified(&sibling), modified(&exe)), (Some(a), Some(b)) if a >= b);
    let mut command = match std::env::var("CARGO") {
        Ok(cargo) if !fresh => {
            let profile = if cfg!(debug_assertions) {
                "dev"
            } else {
                "bench"
            };
            let mut c = Command::new(cargo);
            c.args([
                "run",
                "--quiet",
                "--profile",
                profile,
                "-p",
                "zao-bench",
                "--bin",
                "bench_allocs",
            ]);
            c.current_dir(root);
            c
        }
        _ => Command::new(sibling),
    };
    let out = command
        .stderr(Stdio::inherit())
        .output()
        .expect("run bench_allocs");
    assert!(out.status.success(), "bench_allocs failed");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            Some((
                f.first()?.to_string(),
                f.get(1)?.to_string(),
                Op::from_label(f.get(2)?)?,
                f.get(3)?.parse().ok()?,
                f.get(4)?.parse().ok()?,
            ))
        })
        .collect()
}

/// One row of the placement sweep, per process: the best distance's ns and
/// the distance, the worst's and its distance.
struct Placed {
    row: String,
    runs: Vec<(f64, usize, f64, usize)>,
}

impl Placed {
    /// Worst over best, the median over the processes.
    fn ratio(&self) -> f64 {
        median(self.runs.iter().map(|r| r.2 / r.0).collect())
    }

    fn line(&self) -> String {
        let ratios: Vec<f64> = self.runs.iter().map(|r| r.2 / r.0).collect();
        let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ratios.iter().copied().fold(0.0, f64::max);
        let worst_at: Vec<String> = self.runs.iter().map(|r| r.3.to_string()).collect();
        format!(
            "{}: best {} ns, worst {} ns (at distances {}): worst/best {} (processes {:.2}–{:.2})",
            self.row,
            ns(median(self.runs.iter().map(|r| r.0).collect())),
            ns(median(self.runs.iter().map(|r| r.2).collect())),
            worst_at.join(", "),
            times(self.ratio(), &[PLACEMENT_SLACK]),
            lo,
            hi
        )
    }
}

/// One target's verdict, with a line of evidence per case.
struct Target {
    title: String,
    holds: bool,
    lines: Vec<String>,
}

fn verdict(holds: bool) -> &'static str {
    if holds { "holds" } else { "MISSES" }
}

fn targets(results: &[CaseResult], sweeps: &[Placed]) -> Vec<Target> {
    let mut out = Vec::new();
    let reference = || {
        results
            .iter()
            .filter(|r| r.kind.is_reference() || matches!(r.kind, Kind::InventoryFixed(_)))
    };

    // (a) Zao fastest for encode-reuse and owned decode on every case.
    let mut lines = Vec::new();
    let mut holds = true;
    for r in reference() {
        for op in [Op::EncodeReuse, Op::Decode] {
            if let Some((ok, line)) = r.judge(op, op) {
                holds &= ok;
                lines.push(line);
            }
        }
    }
    out.push(Target {
        title: format!(
            "(a) encode-reuse and decode: Zao fastest on every case (time ≤ {HOLD:.2}× the \
             best peer's, or ≤ {TIE:.2}× where that peer is within {AT_FLOOR}× of the raw copy)"
        ),
        holds,
        lines,
    });

    // (b) Borrowed and in-place decode.
    let mut lines = Vec::new();
    let mut holds = true;
    for r in reference() {
        if let Some(borrowed) = r.row(ZAO, Op::DecodeBorrowed)
            && let Some((peer, paired)) = r.toughest_peer(Op::DecodeBorrowed, Op::Decode)
        {
            let best = r.ns(peer, Op::Decode).unwrap_or(f64::NAN);
            let gain = 1.0 / paired.median;
            let ok = gain >= BORROWED_GAIN;
            holds &= ok;
            lines.push(format!(
                "{} decode-borrowed: zao {} ns ±{} vs best peer owned decode {peer} {} ns: \
                 {gain:.2}× faster (processes {:.2}–{:.2}; need ≥ {BORROWED_GAIN:.0}×): {}",
                r.name,
                ns(borrowed.ns),
                pct(borrowed.spread()),
                ns(best),
                1.0 / paired.high,
                1.0 / paired.low,
                verdict(ok),
            ));
            if let (Some(floor), Some(to_peer), Some(to_zao)) = (
                r.row(RAW, Op::DecodeBorrowed),
                r.ratio((peer, Op::Decode), (RAW, Op::DecodeBorrowed)),
                r.ratio((ZAO, Op::DecodeBorrowed), (RAW, Op::DecodeBorrowed)),
            ) {
                lines.push(format!(
                    "{} floor of a safe borrowed decode (the UTF-8 validation of the name alone, \
                     where it lies): {} ns ±{}, so at most {:.2}× faster than {peer}'s owned \
                     decode; zao's borrowed decode is {:.2}× the floor (for information)",
                    r.name,
                    ns(floor.ns),
                    pct(floor.spread()),
                    to_peer.median,
                    to_zao.median,
                ));
            }
        }
        if matches!(
            r.kind,
            Kind::SpawnEntity
                | Kind::WorldSnapshot(_)
                | Kind::Inventory(_)
                | Kind::InventoryFixed(_)
        ) && let Some(in_place) = r.row(ZAO, Op::DecodeInPlace)
            && let Some((peer, paired)) = r.toughest_peer(Op::DecodeInPlace, Op::Decode)
        {
            let ratio = paired.median;
            let ok = ratio <= HOLD;
            holds &= ok;
            lines.push(format!(
                "{} decode-in-place: zao {} ns ±{} vs best peer decode {peer} {} ns ({} {}): {}",
                r.name,
                ns(in_place.ns),
                pct(in_place.spread()),
                ns(r.ns(peer, Op::Decode).unwrap_or(f64::NAN)),
                times(ratio, &[HOLD]),
                paired.range(),
                verdict(ok),
            ));
        }
    }
    out.push(Target {
        title: "(b) borrowed decode of SpawnEntity ≥ 3× faster than the best peer's owned \
                decode; decode_in_place faster than every peer's decode on SpawnEntity, \
                WorldSnapshot and Inventory"
            .to_owned(),
        holds,
        lines,
    });

    // (c) Within 1.2× of the raw copy.
    let mut lines = Vec::new();
    let mut holds = true;
    for r in results {
        for (op, judged) in [
            (Op::EncodeReuse, true),
            (Op::Decode, true),
            (Op::DecodeInPlace, false),
        ] {
            let (Some(zao), Some(raw), Some(paired)) =
                (r.row(ZAO, op), r.ns(RAW, op), r.ratio((ZAO, op), (RAW, op)))
            else {
                continue;
            };
            let ratio = paired.median;
            let ok = ratio <= RAW_SLACK;
            // The target names these cases; the floors of the others are
            // reported beside, for information.
            let judged = judged
                && (r.name.starts_with("PlayerMoved") || r.name.starts_with("WorldSnapshot"));
            if judged {
                holds &= ok;
            }
            let tag = if judged {
                verdict(ok)
            } else {
                "for information"
            };
            lines.push(format!(
                "{} {}: zao {} ns ±{} vs raw copy {} ns: {ratio:.2}× {} (need ≤ {RAW_SLACK}×): {tag}",
                r.name,
                op.label(),
                ns(zao.ns),
                pct(zao.spread()),
                ns(raw),
                paired.range(),
            ));
        }
    }
    out.push(Target {
        title: "(c) PlayerMoved and WorldSnapshot encode and decode within 1.2× of the raw \
                zerocopy copy"
            .to_owned(),
        holds,
        lines,
    });

    // (d) Zero allocations.
    let mut lines = Vec::new();
    let mut holds = true;
    for r in results {
        let count = |op| r.row(ZAO, op).and_then(|m| m.allocs).map(|(n, _)| n);
        let (Some(enc), Some(dec)) = (count(Op::EncodeReuse), count(Op::DecodeInPlace)) else {
            continue;
        };
        let ok = enc == 0.0 && dec == 0.0;
        holds &= ok;
        lines.push(format!(
            "{}: encode-reuse {} / decode-in-place {} allocations per op: {}",
            r.name,
            allocs(enc),
            allocs(dec),
            verdict(ok)
        ));
    }
    out.push(Target {
        title: "(d) zero allocations on Zao's encode-reuse and decode_in_place".to_owned(),
        holds,
        lines,
    });

    // (e) Wire size, as written (bincode included) and against the peers
    // that really are fixed-width.
    let mut lines = Vec::new();
    let mut holds = true;
    let mut holds_varint = true;
    for r in results.iter().filter(|r| r.kind.is_reference()) {
        let Some(zao) = r.wire(ZAO) else { continue };
        let Some((peer, smallest)) = FIXED_WIDTH
            .iter()
            .filter_map(|&lib| Some((lib, r.wire(lib)?)))
            .min_by_key(|&(_, n)| n)
        else {
            continue;
        };
        let ok = zao <= smallest;
        holds &= ok;
        holds_varint &= zao <= r.wire("bincode").unwrap_or(0);
        let sizes: Vec<String> = FIXED_WIDTH
            .iter()
            .filter_map(|&lib| Some(format!("{lib} {}", r.wire(lib)?)))
            .collect();
        lines.push(format!(
            "{}: zao {zao} B vs smallest fixed-width {peer} {smallest} B ({}; beside it \
             bincode standard {} B and bitcode {} B, which pack integers): {}",
            r.name,
            sizes.join(", "),
            r.wire("bincode").unwrap_or(0),
            r.wire("bitcode").unwrap_or(0),
            verdict(ok),
        ));
    }
    lines.push(format!(
        "Against bincode's varint encoding too: {} (not a target: Zao writes \
         fixed-width integers so that a blittable run is one copy)",
        verdict(holds_varint)
    ));
    out.push(Target {
        title: "(e) Zao's wire size ≤ the smallest fixed-width peer (speedy / wincode / \
                bincode with fixed-width integers) on every case, bitcode's beside it"
            .to_owned(),
        holds,
        lines,
    });

    // (i) Every decode entry point costs the same for the same limits: a
    // server that sets its own limits calls the `_with_limits` forms.
    let mut lines = Vec::new();
    let mut holds = true;
    for r in reference() {
        for (with, plain) in [
            (Op::DecodeLimits, Op::Decode),
            (Op::DecodeInPlaceLimits, Op::DecodeInPlace),
        ] {
            let (Some(a), Some(b), Some(paired)) = (
                r.row(ZAO, with),
                r.row(ZAO, plain),
                r.ratio((ZAO, with), (ZAO, plain)),
            ) else {
                continue;
            };
            let ok = paired.median <= LIMITS_SAME;
            holds &= ok;
            lines.push(format!(
                "{} {}: {} ns ±{} vs {} {} ns ±{}: {} {}: {}",
                r.name,
                with.label(),
                ns(a.ns),
                pct(a.spread()),
                plain.label(),
                ns(b.ns),
                pct(b.spread()),
                times(paired.median, &[LIMITS_SAME]),
                paired.range(),
                verdict(ok)
            ));
        }
    }
    out.push(Target {
        title: format!(
            "(i) every decode entry point costs the same for the same limits: \
             `decode_with_limits` ≤ {LIMITS_SAME:.2}× `decode` and \
             `decode_in_place_with_limits` ≤ {LIMITS_SAME:.2}× `decode_in_place` \
             (the limits read from a value, not a constant) on every case"
        ),
        holds,
        lines,
    });

    // (j) A blittable run's copy wherever the allocator put the buffers.
    if !sweeps.is_empty() {
        let mut lines = Vec::new();
        let mut holds = true;
        for sweep in sweeps {
            let judged = sweep.row.starts_with("zao");
            let ok = sweep.ratio() <= PLACEMENT_SLACK;
            if judged {
                holds &= ok;
            }
            let tail = if judged {
                verdict(ok).to_owned()
            } else if ok {
                "no bad window on this host".to_owned()
            } else {
                "this host has a bad window".to_owned()
            };
            lines.push(format!("{}: {tail}", sweep.line()));
        }
        out.push(Target {
            title: format!(
                "(j) a blittable run's copy at its worst placement within \
                 {PLACEMENT_SLACK:.1}× of its best: `WorldSnapshot({})` encoded into a \
                 slice and decoded in place with (destination − source) mod 4096 swept \
                 over every {}th byte, the plain copy beside them (not judged) saying \
                 whether this host has a bad window at all",
                placement::PLAYERS,
                placement::STEP
            ),
            holds,
            lines,
        });
    }

    // (f) Encode into a new buffer.
    let mut lines = Vec::new();
    let mut holds = true;
    for r in results {
        if let Some((ok, line)) = r.judge(Op::EncodeFresh, Op::EncodeFresh) {
            holds &= ok;
            lines.push(line);
        }
    }
    out.push(Target {
        title: "(f) encode-fresh (one call into a new buffer): Zao fastest on every case, \
                by the rule of (a)"
            .to_owned(),
        holds,
        lines,
    });

    // (g) The nested general workload, (h) the event log.
    for (general, title) in [
        (
            Kind::Nested(0),
            "(g) the nested general workload: Zao fastest on encode-reuse and decode, \
             by the rule of (a)",
        ),
        (
            Kind::Events(0),
            "(h) the event log (enums with data, strings; a second general workload, \
             added after issue 10 was filed): Zao fastest on encode-reuse and decode, \
             by the rule of (a)",
        ),
    ] {
        out.push(general_target(results, general, title));
    }
    out
}

/// The target of a general workload (`kind`'s variant, any size).
fn general_target(results: &[CaseResult], kind: Kind, title: &str) -> Target {
    let mut lines = Vec::new();
    let mut holds = true;
    for r in results
        .iter()
        .filter(|r| core::mem::discriminant(&r.kind) == core::mem::discriminant(&kind))
    {
        for op in [Op::EncodeReuse, Op::Decode] {
            if let Some((ok, line)) = r.judge(op, op) {
                holds &= ok;
                lines.push(line);
            }
        }
        let bytes = |lib: &str| {
            r.row(lib, Op::Decode)
                .and_then(|m| m.allocs)
                .map(|(_, b)| b)
        };
        if let Some(zao) = bytes(ZAO) {
            let fewer = r
                .peers()
                .filter(|&l| bytes(l).is_some_and(|b| b < zao))
                .count();
            lines.push(format!(
                "{} decode allocates {} bytes per op; {fewer} peers allocate fewer (for information)",
                r.name,
                allocs(zao),
            ));
        }
    }
    Target {
        title: title.to_owned(),
        holds,
        lines,
    }
}

/// Nanoseconds with about three significant digits.
fn ns(value: f64) -> String {
    if value < 10.0 {
        format!("{value:.2}")
    } else if value < 100.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.0}")
    }
}

/// A fraction as a percentage.
fn pct(value: f64) -> String {
    if value < 0.1 {
        format!("{:.1} %", value * 100.0)
    } else {
        format!("{:.0} %", value * 100.0)
    }
}

fn allocs(value: f64) -> String {
    if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.2}")
    }
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

fn markdown(
    results: &[CaseResult],
    targets: &[Target],
    run_secs: f64,
    load: &str,
    root: &Path,
    layouts: &Layouts,
) -> String {
    let mut md = String::new();
    let w = &mut md;
    writeln!(w, "# Benchmarks\n").unwrap();
    writeln!(
        w,
        "Zao against peer codecs on the reference messages (`zao_messages::samples`), \
         an inventory with one fixed-seed hasher for every library, a nested \
         ~1 MB game-state workload (`bench/benches/support/nested.rs`) and a ~1 MB event \
         log of enums with data and strings (`bench/benches/support/events.rs`), every \
         library encoding the same data. Written by \
         `cargo run --profile bench -p zao-bench --bin bench_report` on {}; compare ratios, \
         not nanoseconds from another day or machine. `cargo bench --bench tiers` \
         measures the same rows under criterion.\n",
        today()
    )
    .unwrap();
    writeln!(w, "- Machine: {}", machine()).unwrap();
    writeln!(
        w,
        "- Load average when the run started (1, 5, 15 min): {}",
        load.split(' ').take(3).collect::<Vec<_>>().join(", ")
    )
    .unwrap();
    writeln!(
        w,
        "- Toolchain: {}; `[profile.bench]`: fat LTO, one codegen unit; {}",
        rustc_version(),
        if code_aligned() {
            "every function and loop aligned to 64 bytes (`.cargo/config.toml`)"
        } else {
            "**functions not aligned** (a RUSTFLAGS variable replaced `.cargo/config.toml`): \
             rows may move with code placement"
        }
    )
    .unwrap();
    writeln!(w, "- Crates (from Cargo.lock): {}", crate_versions(root)).unwrap();
    writeln!(
        w,
        "- Run: {PROCESSES} worker processes one after another, {}, each {ROUNDS} interleaved \
         rounds of ~{} ms batches per row (median kept); each time below is the median of \
         the {PROCESSES} processes, ± half their range; each ratio a target judges is \
         paired round by round (see Method), with its lowest and highest process; \
         measured in {run_secs:.0} s.\n",
        match layouts {
            Layouts::Each(_) => format!(
                "each from its own build of the same code, linked with its own order of \
                 functions (`--shuffle-sections` seeds 1–{PROCESSES})"
            ),
            Layouts::One(why) => format!(
                "**all from one build** ({why}): rows within a few % of 1.00× may follow \
                 that build's code placement"
            ),
        },
        BATCH.as_millis()
    )
    .unwrap();
    writeln!(
        w,
        "![Encode-reuse and decode time per case, as a multiple of the fastest \
         library](docs/bench.svg)\n"
    )
    .unwrap();

    writeln!(w, "## Targets\n").unwrap();
    for t in targets {
        writeln!(w, "### {}: **{}**\n", t.title, verdict(t.holds)).unwrap();
        for line in &t.lines {
            writeln!(w, "- {line}").unwrap();
        }
        writeln!(w).unwrap();
    }
    writeln!(
        w,
        "Reading the targets: a row **holds** when Zao's paired ratio to every peer \
         is at most {HOLD:.2}× (the line names the peer with the highest ratio), or at \
         most {TIE:.2}× where that peer is within {AT_FLOOR}× of the raw copy (the \
         physical floor, where the rest is noise). \"Peer decode\" is a decode to an owned value (rkyv: validate, then \
         deserialize); rkyv's validated access builds no value and is listed under each \
         table with Zao's other decode forms. bincode is timed in its standard config \
         (varint integers); for the wire-size target (e) its fixed-width form (legacy \
         config, bincode-fixint) is the fixed-width peer.\n"
    )
    .unwrap();

    writeln!(w, "## Results\n").unwrap();
    writeln!(
        w,
        "Times are nanoseconds per operation (median of the processes ± half their \
         range); ratios are to the fastest row of the column, the raw copy included. \
         Allocations and bytes are per operation, counted in the separate pass.\n"
    )
    .unwrap();
    for r in results {
        case_table(w, r);
    }

    w.push_str(&text_sizes::section());

    writeln!(w, "## Method\n").unwrap();
    for line in [
        "**Same value, same type, everywhere.** Every library, Zao included, encodes \
         one set of mirror structs (`bench/benches/support/peers.rs`) deriving every \
         library's traits: `[f32; N]` for glam's vectors and quaternions (the same \
         bytes; the peers cannot derive over glam's types), the buttons as their raw \
         `u16` bits, `#[repr(C)]` where Zao's type is, and `HashMap<u32, ItemStack>` \
         for the inventory; prost encodes protobuf twins with nested `Vec3`/`Quat` \
         messages. Zao's bytes for a mirror decode as the `zao_messages` type to the \
         sample and back (checked before timing). Zao's rows on its own \
         `zao_messages` types (glam's SIMD-aligned `Quat`, `Buttons` that refuse \
         unknown bits) are listed in italics for information: they are not ranked and \
         judge no target (why: `docs/DECISIONS.md`). The fixed-hasher inventory uses foldhash's \
         `FixedState` (one seed) in every library's map, so every library writes the \
         slots in the same order (prost's maps take only std's hasher: no prost row). \
         The nested workload is one set of types deriving every library's traits, so \
         every library encodes the very same value (no prost row: protobuf has no \
         tuples or unit-enum fields); so is the event log. Each decoder is checked to return the value \
         before anything is timed.",
        "**One harness.** Every library is a pair of functions (encode into a reused \
         destination, decode) plus its one-call encode (`bench/benches/support/libs.rs`), \
         driven by one generic function (`bench/benches/support/harness.rs`): every row \
         passes its inputs and result through `std::hint::black_box` the same way, \
         the raw copy included; a library's encode rows read one source value; every \
         reused destination and every decode input starts on a 64-byte boundary, and \
         the blittable runs that are copied (players) start on one in every library's \
         value.",
        "**encode-reuse** writes into a buffer the caller keeps: Zao `encode(&mut [u8])`, \
         bitcode `Buffer::encode`, bincode `encode_into_slice`, postcard `to_slice`, \
         speedy `write_to_buffer`, wincode `serialize_into(&mut [u8])`, rkyv \
         `to_bytes_in_with_alloc` through a `Buffer` over such a slice, with a reused `Arena`, \
         prost / rmp-serde / serde_json into a cleared `Vec`. **encode-fresh** is each \
         library's one-call encode into a new buffer (Zao `to_encoded_vec`).",
        "**decode** builds an owned value and drops it: Zao `decode`, bitcode `decode`, \
         bincode `decode_from_slice` (standard config), postcard `from_bytes`, speedy \
         `read_from_buffer`, wincode `deserialize`, rkyv `from_bytes` (bytecheck \
         validation, then deserialize), prost `Message::decode`, rmp-serde and \
         serde_json `from_slice`. Zao's `decode_in_place` reuses a warmed value; its \
         borrowed decode is `SpawnEntityRef`; rkyv's `access` validates without \
         building a value.",
        "**Raw copy** is the physical floor: `IntoBytes` + `copy_from_slice` / \
         `extend_from_slice` to encode; to decode, the 16 bytes as two words, transmuted \
         (PlayerMoved: `read_from_bytes` took twice as long through a stack slot), or a \
         slice cast and `to_vec` / `extend_from_slice` (WorldSnapshot: tick and count as \
         `u32`, then the players) to decode. It checks lengths and nothing else. \
         PlayerInput (an enum and a padding byte) has no memory image to copy, so its \
         floor is what a hand-written encoder does: each field's bytes stored at a fixed \
         offset (Zao's 15-byte layout), and to decode, each field read from its offset, \
         with only the checks a safe decode cannot skip (the length, the stance's byte). \
         Inventory(128) has a floor for encode-reuse (and, under std's hasher, decode): \
         the owner, the count and 13 bytes per slot at fixed offsets, stored eight slots \
         per length check; to decode, the length checked against the count and each slot \
         inserted in wire order into a map made with room for all (docs/DECISIONS.md, \
         \"The inventory has a floor\"). Target (c) judges PlayerMoved and WorldSnapshot only; the rule of (a) uses every \
         case's floor.",
        "**Wire bytes** are the body each library writes (Zao: without the message id).",
        "**Timing.** `[profile.bench]` builds with fat LTO and one codegen unit. Each \
         of the worker processes calibrates every row to the batch length, then all \
         rows of a case take turns for every round (the start rotates), and each row \
         keeps its median round; the report takes each row's median over the \
         processes. A target's ratio is paired: in each process, Zao's time over the \
         peer's in the same round (the two batches a few milliseconds apart), its \
         median over the rounds, then the median over the processes, so a slow \
         spell of the machine slows both sides of a pair instead of whichever row it \
         hit (why: `docs/DECISIONS.md`). Every library encodes from the one instance of the case's value \
         (the same heap addresses for all) and writes into (or decodes from) a buffer \
         at the same offset within a 4 KiB page; that offset moves from one process \
         to the next, so the median does not repeat one heap layout's luck (glibc \
         randomizes heap addresses only above the page). The workers run under the system allocator; allocations are \
         counted afterwards by `bench/src/bin/bench_allocs.rs`, a separate binary with \
         allocation-counter's counting allocator.",
        "**Code placement.** `.cargo/config.toml` aligns every function and loop of \
         every crate to 64 bytes. Without it, a library's hot loop lands wherever \
         the rest of the binary pushes it, and its time moved by up to 40 % between \
         two builds that changed only Zao's code (wincode's fixed-hasher Inventory \
         encode: 96–102 ns in one, 134–141 ns in the other); aligned, the peers' rows \
         of the two builds agree within their process spread (`docs/DECISIONS.md`). \
         Aligned code still moves a row by up to 12 % with where each function lands \
         relative to the others (the same instructions, by callgrind's count), for \
         Zao and the peers alike, so each worker process runs its own build: the \
         same code, linked with its own order of functions (lld's \
         `--shuffle-sections`, one seed per process, profile `bench-layout`), and a \
         row's median is taken over layouts as well as over buffer placements.",
        "**Noise.** Rows near 1 ns measure loop throughput, a few CPU cycles: they move \
         by a few tenths of a nanosecond between runs and buffer offsets. The \
         ± column shows how far the processes disagreed; compare within one report, \
         not across reports.",
    ] {
        writeln!(w, "- {line}").unwrap();
    }
    md
}

/// Whether `lib` is ranked among the codecs: not the raw copy (the floor)
/// and not Zao's rows on its game types (for information).
fn ranked(lib: &str) -> bool {
    lib != RAW && lib != ZAO_GAME
}

fn case_table(w: &mut String, r: &CaseResult) {
    writeln!(w, "### {}\n", r.name).unwrap();
    writeln!(
        w,
        "| library | wire bytes | encode-reuse ns | ratio | decode ns | ratio | \
         encode-fresh ns | ratio | allocations per op (encode-reuse / decode) | \
         bytes allocated per decode |"
    )
    .unwrap();
    writeln!(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|").unwrap();
    for lib in r.libs() {
        let name = match lib {
            ZAO => "**zao**".to_owned(),
            RAW | ZAO_GAME => format!("*{lib}*"),
            _ => lib.to_owned(),
        };
        let cell = |op: Op| -> (String, String) {
            let Some(m) = r.row(lib, op) else {
                return ("–".to_owned(), "–".to_owned());
            };
            let best_codec = r
                .libs()
                .filter(|&l| ranked(l))
                .filter_map(|l| r.ns(l, op))
                .fold(f64::INFINITY, f64::min);
            let text = format!("{} ±{}", ns(m.ns), pct(m.spread()));
            let text = if ranked(lib) && m.ns <= best_codec {
                format!("**{text}**")
            } else {
                text
            };
            (text, format!("{:.2}×", m.ns / r.fastest(op)))
        };
        let (enc, enc_ratio) = cell(Op::EncodeReuse);
        let (dec, dec_ratio) = cell(Op::Decode);
        let (fresh, fresh_ratio) = cell(Op::EncodeFresh);
        let count = |op| {
            r.row(lib, op)
                .and_then(|m| m.allocs)
                .map_or("–".to_owned(), |(n, _)| allocs(n))
        };
        let bytes = r
            .row(lib, Op::Decode)
            .and_then(|m| m.allocs)
            .map_or("–".to_owned(), |(_, b)| allocs(b));
        writeln!(
            w,
            "| {name} | {} | {enc} | {enc_ratio} | {dec} | {dec_ratio} | {fresh} | \
             {fresh_ratio} | {} / {} | {bytes} |",
            r.wire(lib).unwrap_or(0),
            count(Op::EncodeReuse),
            count(Op::Decode),
        )
        .unwrap();
    }
    let best_decode = r.best_peer(Op::Decode).map_or(f64::NAN, |(_, ns)| ns);
    if let (Some((enc_rank, n)), Some((dec_rank, _))) =
        (r.zao_rank(Op::EncodeReuse), r.zao_rank(Op::Decode))
    {
        writeln!(
            w,
            "\nZao ranks {} of {n} codecs in encode-reuse and {} of {n} in decode \
             (the raw copy is not ranked). Other decode forms, against the best peer's \
             owned decode ({} ns):\n",
            ordinal(enc_rank),
            ordinal(dec_rank),
            ns(best_decode),
        )
        .unwrap();
    }
    for (lib, op, what) in [
        (
            ZAO,
            Op::DecodeInPlace,
            "zao `decode_in_place` (warmed value)",
        ),
        (
            ZAO,
            Op::DecodeLimits,
            "zao `decode_with_limits` (limits from a value)",
        ),
        (
            ZAO,
            Op::DecodeInPlaceLimits,
            "zao `decode_in_place_with_limits` (warmed value, limits from a value)",
        ),
        (ZAO, Op::DecodeBorrowed, "zao borrowed (`SpawnEntityRef`)"),
        (
            ZAO_GAME,
            Op::DecodeInPlace,
            "zao `decode_in_place` on the `zao_messages` type (warmed value)",
        ),
        (
            RAW,
            Op::DecodeBorrowed,
            "floor of a borrowed decode (UTF-8 validation of the name alone)",
        ),
        (RAW, Op::DecodeInPlace, "raw copy into a warmed `Vec`"),
        (
            "rkyv",
            Op::Access,
            "rkyv `access` (validated, no value built)",
        ),
    ] {
        if let Some(m) = r.row(lib, op) {
            writeln!(
                w,
                "- {what}: {} ns ±{}, {:.2}× the best peer decode, {} allocations per op",
                ns(m.ns),
                pct(m.spread()),
                m.ns / best_decode,
                m.allocs.map_or("–".to_owned(), |(n, _)| allocs(n)),
            )
            .unwrap();
        }
    }
    writeln!(w).unwrap();
}

fn print_summary(results: &[CaseResult], targets: &[Target]) {
    println!(
        "{:<28} {:>7} {:>9} {:>6} {:>9} {:>6} {:>9} {:>6} {:>9}",
        "case", "bytes", "enc ns", "×best", "dec ns", "×best", "fresh ns", "×best", "in-place"
    );
    for r in results {
        let cell = |op: Op| -> (String, String) {
            let Some(zao) = r.ns(ZAO, op) else {
                return ("–".to_owned(), "–".to_owned());
            };
            let ratio = r
                .best_peer(op)
                .map_or("–".to_owned(), |(_, best)| format!("{:.2}", zao / best));
            (ns(zao), ratio)
        };
        let (enc, enc_r) = cell(Op::EncodeReuse);
        let (dec, dec_r) = cell(Op::Decode);
        let (fresh, fresh_r) = cell(Op::EncodeFresh);
        println!(
            "{:<28} {:>7} {enc:>9} {enc_r:>6} {dec:>9} {dec_r:>6} {fresh:>9} {fresh_r:>6} {:>9}",
            r.name,
            r.wire(ZAO).map_or("–".to_owned(), |n| n.to_string()),
            r.ns(ZAO, Op::DecodeInPlace).map_or("–".to_owned(), ns),
        );
    }
    for t in targets {
        let head: String = t.title.chars().take(3).collect();
        println!("target {head} {}", verdict(t.holds));
        for line in t
            .lines
            .iter()
            .filter(|l| l.contains("MISSES") || l.starts_with("Against"))
        {
            println!("    {line}");
        }
    }
}

/// Bar chart of the ratios: encode-reuse and decode side by side, one block
/// of bars per case, log scale from 1× (fastest) up.
fn svg(results: &[CaseResult]) -> String {
    const LABEL_W: f64 = 150.0;
    const PANEL_W: f64 = 380.0;
    const GAP: f64 = 40.0;
    const BAR_H: f64 = 11.0;
    const STEP: f64 = 14.0;
    const HEADER: f64 = 22.0;
    const TOP: f64 = 56.0;
    let panels = [(Op::EncodeReuse, "encode-reuse"), (Op::Decode, "decode")];

    let max_ratio = results
        .iter()
        .flat_map(|r| {
            panels.iter().flat_map(move |&(op, _)| {
                let fastest = r.fastest(op);
                r.libs().filter_map(move |l| Some(r.ns(l, op)? / fastest))
            })
        })
        .fold(1.0, f64::max);
    let ticks: Vec<f64> = (0..)
        .flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(e)))
        .take_while(|&t| t <= max_ratio * 1.0001)
        .collect();
    let top_tick = (0..)
        .flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(e)))
        .find(|&t| t >= max_ratio)
        .unwrap_or(10.0)
        .max(2.0);
    let scale = |ratio: f64| PANEL_W * ratio.max(1.0).ln() / top_tick.ln();

    let height = TOP
        + results
            .iter()
            .map(|r| HEADER + STEP * r.wire.len() as f64)
            .sum::<f64>()
        + 20.0;
    let width = LABEL_W + 2.0 * PANEL_W + GAP + 40.0;
    let mut s = String::new();
    writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="10">"#
    )
    .unwrap();
    writeln!(
        s,
        r##"<rect width="100%" height="100%" fill="#ffffff"/><text x="10" y="18" font-size="13" font-weight="bold">Time as a multiple of the fastest library (log scale, lower is better)</text>"##
    )
    .unwrap();
    for (p, &(_, title)) in panels.iter().enumerate() {
        let x0 = LABEL_W + p as f64 * (PANEL_W + GAP);
        writeln!(
            s,
            r#"<text x="{x0:.0}" y="38" font-size="12" font-weight="bold">{title}</text>"#
        )
        .unwrap();
        for &t in &ticks {
            let x = x0 + scale(t);
            writeln!(
                s,
                r##"<line x1="{x:.1}" y1="44" x2="{x:.1}" y2="{:.0}" stroke="#dee2e6"/><text x="{x:.1}" y="52" text-anchor="middle" fill="#868e96">{t}×</text>"##,
                height - 20.0
            )
            .unwrap();
        }
    }
    let mut y = TOP;
    for r in results {
        writeln!(
            s,
            r#"<text x="10" y="{:.0}" font-size="11" font-weight="bold">{}</text>"#,
            y + 15.0,
            r.name
        )
        .unwrap();
        y += HEADER;
        for lib in r.libs() {
            let color = match lib {
                ZAO => "#e8590c",
                ZAO_GAME => "#f5a97f",
                RAW => "#495057",
                _ => "#74a9cf",
            };
            writeln!(
                s,
                r#"<text x="{:.0}" y="{:.1}" text-anchor="end">{lib}</text>"#,
                LABEL_W - 8.0,
                y + BAR_H - 2.0
            )
            .unwrap();
            for (p, &(op, _)) in panels.iter().enumerate() {
                let x0 = LABEL_W + p as f64 * (PANEL_W + GAP);
                let Some(v) = r.ns(lib, op) else { continue };
                let ratio = v / r.fastest(op);
                let w = scale(ratio).max(2.0);
                writeln!(
                    s,
                    r##"<rect x="{x0:.0}" y="{y:.1}" width="{w:.1}" height="{BAR_H}" fill="{color}"/><text x="{:.1}" y="{:.1}" fill="#343a40">{ratio:.2}×</text>"##,
                    x0 + w + 3.0,
                    y + BAR_H - 2.0
                )
                .unwrap();
            }
            y += STEP;
        }
    }
    s.push_str("</svg>\n");
    s
}

/// Whether this binary was built with `.cargo/config.toml`'s alignment:
/// then every function starts on a 64-byte boundary. Four functions of this
/// file all aligned by chance (at the usual 16) happen once in 256 builds.
fn code_aligned() -> bool {
    let functions = [
        main as fn() as usize,
        rustc_version as fn() -> String as usize,
        code_aligned as fn() -> bool as usize,
        crate_versions as fn(&Path) -> String as usize,
    ];
    functions.iter().all(|address| address % 64 == 0)
}

fn rustc_version() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    std::process::Command::new(rustc)
        .arg("-V")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map_or("unknown".to_owned(), |v| v.trim().to_owned())
}

/// The locked versions of [`CRATES`], read from Cargo.lock now, so the report
/// names what was measured.
fn crate_versions(root: &Path) -> String {
    let lock = fs::read_to_string(root.join("Cargo.lock")).unwrap_or_default();
    let mut packages = Vec::new();
    let mut name = None;
    for line in lock.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = Some(n.trim_matches('"').to_owned());
        } else if let (Some(v), Some(n)) = (line.strip_prefix("version = "), name.take()) {
            packages.push((n, v.trim_matches('"').to_owned()));
        }
    }
    CRATES
        .iter()
        .map(|&c| {
            let versions: Vec<&str> = packages
                .iter()
                .filter(|(n, _)| n == c)
                .map(|(_, v)| v.as_str())
                .collect();
            if versions.is_empty() {
                format!("{c} ?")
            } else {
                format!("{c} {}", versions.join(" + "))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}
