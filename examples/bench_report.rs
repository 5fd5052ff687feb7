//! Measures Zao against the peer codecs on every reference message case and
//! writes `BENCHMARKS.md` and `docs/bench.svg` from that one run:
//!
//! ```sh
//! cargo run --release --example bench_report
//! ```
//!
//! It runs the rows of `benches/tiers.rs` (the same closures, from
//! `benches/support/`) with its own timing loop: every row is calibrated to
//! a batch of a few milliseconds, then all rows of a case take turns, round
//! after round, and each row reports the median of its rounds. Interleaving
//! spreads a noisy neighbour over every library alike, so the ratios hold
//! even when the absolute numbers drift. Allocations per operation are
//! counted on this thread with allocation-counter.

// Report code on our own sample values: a panic is a broken report, not a
// crashed server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

#[path = "../benches/support/cases.rs"]
mod cases;
#[path = "../benches/support/peers.rs"]
mod peers;
#[path = "../benches/support/text_sizes.rs"]
mod text_sizes;

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use cases::{Case, KINDS, Kind, Op, RAW, ZAO};
use zao_perf::{Section, machine, today};

/// Timed rounds per row; the median is reported.
const ROUNDS: usize = 31;
/// Wall time of one timed batch of one row.
const BATCH: Duration = Duration::from_millis(4);
/// Operations per allocation count (the count is divided by this).
const ALLOC_ITERS: u64 = 32;
/// Where a peer counts as "at the raw-copy floor", and target (c)'s bar.
const FLOOR_SLACK: f64 = 1.2;
/// How close to the fastest peer counts as a tie in target (a).
const TIE: f64 = 1.05;
/// Target (b): borrowed decode against the best owned decode.
const BORROWED_GAIN: f64 = 3.0;
/// The peers of target (e): no compression of integers beyond their width
/// (bincode's standard config is the exception: it writes varints).
const FIXED_WIDTH: [&str; 3] = ["speedy", "wincode", "bincode-fixint"];
/// The crates whose versions the report names.
const CRATES: [&str; 14] = [
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
    "allocation-counter",
];

/// One row's result.
struct Measured {
    lib: &'static str,
    op: Op,
    ns: f64,
    allocs: f64,
}

/// One case's results.
struct CaseResult {
    kind: Kind,
    name: String,
    wire: Vec<(&'static str, usize)>,
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
        self.wire.iter().find(|(l, _)| *l == lib).map(|&(_, n)| n)
    }

    /// Every library, in row order.
    fn libs(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.wire.iter().map(|&(lib, _)| lib)
    }

    /// The peer codecs: neither Zao nor the raw copy.
    fn peers(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.libs().filter(|&lib| lib != ZAO && lib != RAW)
    }

    /// The fastest peer for `op`.
    fn best_peer(&self, op: Op) -> (&'static str, f64) {
        self.peers()
            .filter_map(|lib| Some((lib, self.ns(lib, op)?)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("every case has peers")
    }

    /// The fastest time of `op` over every library, the raw copy included.
    fn fastest(&self, op: Op) -> f64 {
        self.libs()
            .filter_map(|lib| self.ns(lib, op))
            .fold(f64::INFINITY, f64::min)
    }

    /// Zao's place among the codecs for `op` (1 = fastest), and how many.
    fn zao_rank(&self, op: Op) -> (usize, usize) {
        let zao = self.ns(ZAO, op).expect("zao row");
        let peers: Vec<f64> = self.peers().filter_map(|l| self.ns(l, op)).collect();
        let ahead = peers.iter().filter(|&&ns| ns < zao).count();
        (ahead + 1, peers.len() + 1)
    }
}

fn main() {
    let started = Instant::now();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut results = Vec::new();
    for kind in KINDS {
        let case = kind.build();
        eprintln!("measuring {} ({} rows)", case.name, case.rows.len());
        results.push(measure(kind, case));
    }
    let run_secs = started.elapsed().as_secs_f64();

    let targets = targets(&results);
    let svg = svg(&results);
    let mut markdown = markdown(&results, &targets, run_secs, root);
    // zao-perf's broadcast tool owns a marked section of the same file: carry it over.
    let old = fs::read_to_string(root.join("BENCHMARKS.md")).unwrap_or_default();
    if let Some(block) = Section::new("broadcast").find(&old) {
        markdown = format!("{}\n\n{block}\n", markdown.trim_end());
    }
    fs::create_dir_all(root.join("docs")).expect("create docs/");
    fs::write(root.join("docs/bench.svg"), svg).expect("write docs/bench.svg");
    fs::write(root.join("BENCHMARKS.md"), markdown).expect("write BENCHMARKS.md");

    print_summary(&results, &targets);
    println!(
        "wrote BENCHMARKS.md and docs/bench.svg; measured in {run_secs:.1} s, total {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// Calibrates every row, runs the interleaved rounds, counts allocations.
fn measure(kind: Kind, mut case: Case) -> CaseResult {
    let iters: Vec<u64> = case.rows.iter_mut().map(calibrate).collect();
    let mut samples = vec![Vec::with_capacity(ROUNDS); case.rows.len()];
    let count = case.rows.len();
    for round in 0..ROUNDS {
        // Rotate the starting row so that no row always follows the same one.
        for k in 0..count {
            let i = (k + round) % count;
            let start = Instant::now();
            case.rows[i].run(iters[i]);
            let ns = start.elapsed().as_nanos() as f64 / iters[i] as f64;
            samples[i].push(ns);
        }
    }
    let rows = case
        .rows
        .iter_mut()
        .zip(samples)
        .map(|(row, mut samples)| {
            samples.sort_by(f64::total_cmp);
            let info = allocation_counter::measure(|| row.run(ALLOC_ITERS));
            Measured {
                lib: row.lib,
                op: row.op,
                ns: samples[samples.len() / 2],
                allocs: info.count_total as f64 / ALLOC_ITERS as f64,
            }
        })
        .collect();
    CaseResult {
        kind,
        name: case.name,
        wire: case.wire,
        rows,
    }
}

/// Warms a row up and returns the iterations that fill one batch.
fn calibrate(row: &mut cases::Row) -> u64 {
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

/// One target's verdict, with a line of evidence per case.
struct Target {
    title: String,
    holds: bool,
    lines: Vec<String>,
}

fn verdict(holds: bool) -> &'static str {
    if holds { "holds" } else { "MISSES" }
}

fn targets(results: &[CaseResult]) -> Vec<Target> {
    let mut out = Vec::new();

    // (a) Zao fastest for encode-reuse and owned decode on every case.
    let mut lines = Vec::new();
    let mut holds = true;
    for r in results {
        let raw = |op| r.ns(RAW, op);
        for op in [Op::EncodeReuse, Op::Decode] {
            let zao = r.ns(ZAO, op).expect("zao row");
            let (peer, best) = r.best_peer(op);
            let at_floor = raw(op).is_some_and(|raw| best <= raw * FLOOR_SLACK);
            let ok = zao <= best || (at_floor && zao <= best * TIE);
            holds &= ok;
            let note = if zao <= best {
                "fastest".to_owned()
            } else if ok {
                format!("tie within {:.0} % at the raw floor", (TIE - 1.0) * 100.0)
            } else {
                format!("{peer} is faster")
            };
            lines.push(format!(
                "{} {}: zao {} ns vs best peer {peer} {} ns ({:.2}×): {} — {note}",
                r.name,
                op.label(),
                ns(zao),
                ns(best),
                zao / best,
                verdict(ok),
            ));
        }
    }
    out.push(Target {
        title: "(a) encode-reuse and decode: Zao fastest on every case (a tie within 5 % \
                accepted only where the fastest peer is at the raw-copy floor)"
            .to_owned(),
        holds,
        lines,
    });

    // (b) Borrowed and in-place decode.
    let mut lines = Vec::new();
    let mut holds = true;
    for r in results {
        let (peer, best) = r.best_peer(Op::Decode);
        if let Some(borrowed) = r.ns(ZAO, Op::DecodeBorrowed) {
            let gain = best / borrowed;
            let ok = gain >= BORROWED_GAIN;
            holds &= ok;
            lines.push(format!(
                "{} decode-borrowed: zao {} ns vs best peer owned decode {peer} {} ns: \
                 {gain:.2}× faster (need ≥ {BORROWED_GAIN:.0}×): {}",
                r.name,
                ns(borrowed),
                ns(best),
                verdict(ok),
            ));
        }
        if matches!(
            r.kind,
            Kind::SpawnEntity | Kind::WorldSnapshot(_) | Kind::Inventory(_)
        ) {
            let in_place = r.ns(ZAO, Op::DecodeInPlace).expect("zao in place");
            let ok = in_place < best;
            holds &= ok;
            lines.push(format!(
                "{} decode-in-place: zao {} ns vs best peer decode {peer} {} ns ({:.2}×): {}",
                r.name,
                ns(in_place),
                ns(best),
                in_place / best,
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
        for (zao_op, raw_op, judged) in [
            (Op::EncodeReuse, Op::EncodeReuse, true),
            (Op::Decode, Op::Decode, true),
            (Op::DecodeInPlace, Op::DecodeInPlace, false),
        ] {
            let (Some(zao), Some(raw)) = (r.ns(ZAO, zao_op), r.ns(RAW, raw_op)) else {
                continue;
            };
            let ratio = zao / raw;
            let ok = ratio <= FLOOR_SLACK;
            if judged {
                holds &= ok;
            }
            let tag = if judged {
                verdict(ok)
            } else {
                "for information"
            };
            lines.push(format!(
                "{} {}: zao {} ns vs raw copy {} ns: {ratio:.2}× (need ≤ {FLOOR_SLACK}×): {tag}",
                r.name,
                zao_op.label(),
                ns(zao),
                ns(raw),
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
        let enc = r.row(ZAO, Op::EncodeReuse).expect("zao row").allocs;
        let dec = r.row(ZAO, Op::DecodeInPlace).expect("zao row").allocs;
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
    let mut holds_fixed = true;
    for r in results {
        let zao = r.wire(ZAO).expect("zao wire");
        let (peer, smallest) = FIXED_WIDTH
            .iter()
            .filter_map(|&lib| Some((lib, r.wire(lib)?)))
            .min_by_key(|&(_, n)| n)
            .expect("fixed-width peers");
        let ok = zao <= smallest;
        holds &= ok;
        holds_fixed &= zao <= r.wire("bincode").unwrap_or(0);
        let sizes: Vec<String> = FIXED_WIDTH
            .iter()
            .filter_map(|&lib| Some(format!("{lib} {}", r.wire(lib)?)))
            .collect();
        lines.push(format!(
            "{}: zao {zao} B vs smallest fixed-width {peer} {smallest} B ({}; beside it \
             bincode standard {} B and bitcode {} B, which pack integers): {}",
            r.name,
            sizes.join(", "),
            r.wire("bincode").expect("bincode wire"),
            r.wire("bitcode").expect("bitcode wire"),
            verdict(ok),
        ));
    }
    lines.push(format!(
        "Against bincode's varint encoding too: {} (not a target: Zao writes \
         fixed-width integers so that a blittable run is one copy)",
        verdict(holds_fixed)
    ));
    out.push(Target {
        title: "(e) Zao's wire size ≤ the smallest fixed-width peer (speedy / wincode / \
                bincode with fixed-width integers) on every case, bitcode's beside it"
            .to_owned(),
        holds,
        lines,
    });
    out
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

fn allocs(value: f64) -> String {
    if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.2}")
    }
}

fn ratio(value: f64, fastest: f64) -> String {
    format!("{:.2}×", value / fastest)
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

fn markdown(results: &[CaseResult], targets: &[Target], run_secs: f64, root: &Path) -> String {
    let mut md = String::new();
    let w = &mut md;
    writeln!(w, "# Benchmarks\n").unwrap();
    writeln!(
        w,
        "Zao against peer codecs on the reference messages (`zao_messages::samples`), \
         every library encoding the same data. Written by \
         `cargo run --release --example bench_report` from one run on {}; compare \
         ratios, not nanoseconds from another day or machine. \
         `cargo bench --bench tiers` measures the same rows under criterion.\n",
        today()
    )
    .unwrap();
    writeln!(w, "- Machine: {}", machine()).unwrap();
    writeln!(w, "- Toolchain: {}", rustc_version()).unwrap();
    writeln!(w, "- Crates (from Cargo.lock): {}", crate_versions(root)).unwrap();
    writeln!(
        w,
        "- Run: {ROUNDS} interleaved rounds of ~{} ms batches per row, median; \
         measured in {run_secs:.0} s.\n",
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
        "Reading the targets: \"peer decode\" is a decode to an owned value (rkyv: \
         validate, then deserialize); rkyv's validated access builds no value and is \
         listed under each table with Zao's other decode forms. A peer is \"at the \
         raw-copy floor\" when it is within {FLOOR_SLACK}× of the raw copy. \
         bincode is timed in its standard config (varint integers); for the \
         wire-size target (e) its fixed-width form (legacy config, bincode-fixint) \
         is the fixed-width peer.\n"
    )
    .unwrap();

    writeln!(w, "## Results\n").unwrap();
    writeln!(
        w,
        "Times are nanoseconds per operation; ratios are to the fastest row of the \
         column, the raw copy included. Allocations are per operation, counted on the \
         measuring thread.\n"
    )
    .unwrap();
    for r in results {
        case_table(w, r);
    }

    w.push_str(&text_sizes::section());

    writeln!(w, "## Method\n").unwrap();
    for line in [
        "**Same data everywhere.** Zao encodes `zao_messages` types; the peers encode \
         mirror structs (`benches/support/peers.rs`) with `[f32; N]` for glam's vectors \
         and quaternions (the same bytes), `#[repr(C)]` where Zao's type is, and \
         `HashMap<u32, ItemStack>` for the inventory; prost encodes protobuf twins with \
         nested `Vec3`/`Quat` messages. Each decoder is checked to return the value \
         before anything is timed.",
        "**encode-reuse** writes into a buffer the caller keeps: Zao `encode(&mut [u8])`, \
         bitcode `Buffer::encode`, bincode `encode_into_slice`, postcard `to_slice`, \
         speedy `write_to_buffer`, wincode `serialize_into(&mut [u8])`, rkyv \
         `to_bytes_in_with_alloc` into a cleared `AlignedVec` with a reused `Arena`, \
         prost / rmp-serde / serde_json into a cleared `Vec`. **encode fresh** is each \
         library's one-call encode into a new `Vec`.",
        "**decode** builds an owned value and drops it: Zao `decode`, bitcode \
         `Buffer::decode` (its reusable decoder), bincode `decode_from_slice` (standard \
         config), postcard `from_bytes`, speedy `read_from_buffer`, wincode \
         `deserialize`, rkyv `from_bytes` (bytecheck validation, then deserialize), \
         prost `Message::decode`, rmp-serde and serde_json `from_slice`. Zao's \
         `decode_in_place` reuses a warmed value; its borrowed decode is \
         `SpawnEntityRef`; rkyv's `access` validates without building a value.",
        "**Raw copy** is the physical floor: `IntoBytes::as_bytes` + `copy_from_slice` \
         to encode, `FromBytes::read_from_bytes` (PlayerMoved) or a slice cast and \
         `to_vec` / `extend_from_slice` (WorldSnapshot: tick and count as `u32`, then \
         the players) to decode. It checks lengths and nothing else.",
        "**Wire bytes** are the body each library writes (Zao: without the message id).",
        "**Timing.** Every row runs as a closure over a batch of iterations with \
         `std::hint::black_box` on inputs and outputs. Rows are calibrated to the batch \
         length, then all rows of a case take turns for every round (the start rotates), \
         and each reports its median round. The binary runs under allocation-counter's \
         counting global allocator (the system allocator plus a thread-local counter), \
         which adds a few nanoseconds to every allocation, equally for every library.",
        "**Noise.** Rows near 1 ns measure loop throughput, a few CPU cycles: they \
         move by a few tenths of a nanosecond between builds (code placement) and \
         runs, so read their ratios as ±30 %. Ratios of rows above ~20 ns repeat \
         within a few percent. Compare within one report, not across reports.",
    ] {
        writeln!(w, "- {line}").unwrap();
    }
    md
}

fn case_table(w: &mut String, r: &CaseResult) {
    writeln!(w, "### {}\n", r.name).unwrap();
    writeln!(
        w,
        "| library | wire bytes | encode-reuse ns | ratio | decode ns | ratio | \
         allocations per op (encode-reuse / decode) | encode fresh `Vec` ns |"
    )
    .unwrap();
    writeln!(w, "|---|--:|--:|--:|--:|--:|--:|--:|").unwrap();
    let enc_fastest = r.fastest(Op::EncodeReuse);
    let dec_fastest = r.fastest(Op::Decode);
    let (_, enc_best_peer) = r.best_peer(Op::EncodeReuse);
    let (_, dec_best_peer) = r.best_peer(Op::Decode);
    for lib in r.libs() {
        let name = match lib {
            ZAO => "**zao**".to_owned(),
            RAW => format!("*{RAW}*"),
            _ => lib.to_owned(),
        };
        let cell = |op: Op, fastest: f64, best_codec: f64| -> (String, String) {
            match r.ns(lib, op) {
                Some(v) => {
                    let codec = lib != RAW;
                    let text = if codec && v <= best_codec.min(r.ns(ZAO, op).unwrap()) {
                        format!("**{}**", ns(v))
                    } else {
                        ns(v)
                    };
                    (text, ratio(v, fastest))
                }
                None => ("–".to_owned(), "–".to_owned()),
            }
        };
        let (enc, enc_ratio) = cell(Op::EncodeReuse, enc_fastest, enc_best_peer);
        let (dec, dec_ratio) = cell(Op::Decode, dec_fastest, dec_best_peer);
        let alloc = |op| r.row(lib, op).map_or("–".to_owned(), |m| allocs(m.allocs));
        let fresh = r.ns(lib, Op::EncodeFresh).map_or("–".to_owned(), ns);
        writeln!(
            w,
            "| {name} | {} | {enc} | {enc_ratio} | {dec} | {dec_ratio} | {} / {} | {fresh} |",
            r.wire(lib).expect("wire"),
            alloc(Op::EncodeReuse),
            alloc(Op::Decode),
        )
        .unwrap();
    }
    let (enc_rank, n) = r.zao_rank(Op::EncodeReuse);
    let (dec_rank, _) = r.zao_rank(Op::Decode);
    writeln!(
        w,
        "\nZao ranks {} of {n} codecs in encode-reuse and {} of {n} in decode \
         (the raw copy is not ranked). Other decode forms, against the best peer's \
         owned decode ({} ns):\n",
        ordinal(enc_rank),
        ordinal(dec_rank),
        ns(dec_best_peer),
    )
    .unwrap();
    for (lib, op, what) in [
        (
            ZAO,
            Op::DecodeInPlace,
            "zao `decode_in_place` (warmed value)",
        ),
        (ZAO, Op::DecodeBorrowed, "zao borrowed (`SpawnEntityRef`)"),
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
                "- {what}: {} ns, {:.2}× the best peer decode, {} allocations per op",
                ns(m.ns),
                m.ns / dec_best_peer,
                allocs(m.allocs)
            )
            .unwrap();
        }
    }
    writeln!(w).unwrap();
}

fn print_summary(results: &[CaseResult], targets: &[Target]) {
    println!(
        "{:<20} {:>6} {:>10} {:>6} {:>10} {:>6} {:>10}   best peer (encode / decode)",
        "case", "bytes", "enc ns", "rank", "dec ns", "rank", "in-place"
    );
    for r in results {
        let (enc_rank, n) = r.zao_rank(Op::EncodeReuse);
        let (dec_rank, _) = r.zao_rank(Op::Decode);
        let (ep, en) = r.best_peer(Op::EncodeReuse);
        let (dp, dn) = r.best_peer(Op::Decode);
        println!(
            "{:<20} {:>6} {:>10} {:>6} {:>10} {:>6} {:>10}   {ep} {} / {dp} {}",
            r.name,
            r.wire(ZAO).unwrap(),
            ns(r.ns(ZAO, Op::EncodeReuse).unwrap()),
            format!("{enc_rank}/{n}"),
            ns(r.ns(ZAO, Op::Decode).unwrap()),
            format!("{dec_rank}/{n}"),
            ns(r.ns(ZAO, Op::DecodeInPlace).unwrap()),
            ns(en),
            ns(dn),
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
