//! The placement sweep (issue 45): how a blittable run's copy depends on
//! where its destination sits against its source modulo 4 KiB.
//!
//! `WorldSnapshot(1024)`'s player run (16 KiB) is encoded into a caller
//! slice and decoded into a warmed value at every distance
//! `(destination − source) mod 4096` in steps of [`STEP`] bytes, the
//! placement chosen exactly (the slice, or the input, moved within a buffer
//! two pages longer than it needs). A plain `copy_from_slice` of the same
//! run at the same distances says whether the host has a bad window at all;
//! Zao's rows say whether it is routed around. Each distance keeps the
//! median of [`ROUNDS`] batches, the rounds going over every distance in
//! turn, so a burst of noise lands on many distances a little rather than
//! on one distance whole. The slowest distances are then measured again
//! (see `measure`), so that the worst reported is a placement's cost and
//! not the host's noise. With `PLACEMENT_DUMP` set, every distance's
//! median goes to stderr (`dump`, row, distance, ns).

use std::hint::black_box;
use std::time::Instant;

use zao::{Decode, Encode};
use zao_messages::{WorldSnapshot, samples};

/// Distances apart that the sweep measures.
pub(crate) const STEP: usize = 8;
/// Batches per distance; the median is kept.
const ROUNDS: usize = 9;
/// The slowest distances of the sweep measured again.
const CONFIRM: usize = 16;
/// Rounds of that second measurement.
const CONFIRM_ROUNDS: usize = 31;
/// Operations per batch.
const BATCH: usize = 256;
/// Players in the snapshot: a 16 KiB run.
pub(crate) const PLAYERS: usize = 1024;

/// One row of the sweep: the fastest and slowest distance (each the median
/// of its batches), in nanoseconds per operation.
pub(crate) struct Sweep {
    pub(crate) row: &'static str,
    pub(crate) best: f64,
    pub(crate) best_at: usize,
    pub(crate) worst: f64,
    pub(crate) worst_at: usize,
}

/// The rows: Zao's encode into a slice, Zao's decode in place, and the
/// plain copy that tells whether the host has the window.
const ROWS: [&str; 3] = ["zao encode-reuse", "zao decode-in-place", "plain copy"];

/// Runs the three sweeps.
pub(crate) fn sweep() -> Vec<Sweep> {
    vec![sweep_encode(), sweep_decode(), sweep_copy()]
}

fn distances() -> impl Iterator<Item = usize> {
    (0..4096).step_by(STEP)
}

/// The offset into `base` at which `at` bytes further sit `distance` above
/// `other` modulo 4 KiB (`to_dst`: the placed bytes are the destination).
fn offset(base: *const u8, at: usize, other: *const u8, distance: usize, to_dst: bool) -> usize {
    let placed = (base as usize).wrapping_add(at);
    let want = if to_dst {
        (other as usize).wrapping_add(distance)
    } else {
        (other as usize).wrapping_sub(distance)
    };
    want.wrapping_sub(placed) & 4095
}

/// Times `op` at every distance: `op(distance, true)` places its input
/// (untimed), `op(distance, false)` runs one operation. The sweep finds
/// candidates; the slowest [`CONFIRM`] distances and the fastest one are
/// then measured again, [`CONFIRM_ROUNDS`] rounds interleaved among them,
/// and those figures are reported: a slow distance that is a burst of the
/// host's noise does not stay slow, a real bad window does.
fn measure(row: &'static str, mut op: impl FnMut(usize, bool)) -> Sweep {
    let points: Vec<usize> = distances().collect();
    for &d in &points {
        op(d, true);
        op(d, false);
    }
    let medians = rounds(&points, ROUNDS, &mut op);
    if std::env::var_os("PLACEMENT_DUMP").is_some() {
        for (d, m) in points.iter().zip(&medians) {
            eprintln!("dump\t{row}\t{d}\t{m:.1}");
        }
    }
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|&a, &b| medians[a].total_cmp(&medians[b]));
    let mut candidates: Vec<usize> = order
        .iter()
        .rev()
        .take(CONFIRM)
        .map(|&i| points[i])
        .collect();
    candidates.push(points[order[0]]);
    let confirmed = rounds(&candidates, CONFIRM_ROUNDS, &mut op);
    let pick = |better: fn(f64, f64) -> bool| {
        let mut at = 0;
        for i in 1..candidates.len() {
            if better(confirmed[i], confirmed[at]) {
                at = i;
            }
        }
        (confirmed[at], candidates[at])
    };
    let (best, best_at) = pick(|a, b| a < b);
    let (worst, worst_at) = pick(|a, b| a > b);
    Sweep {
        row,
        best,
        best_at,
        worst,
        worst_at,
    }
}

/// Each distance's median over `count` rounds, each round visiting every
/// distance in turn.
fn rounds(points: &[usize], count: usize, op: &mut impl FnMut(usize, bool)) -> Vec<f64> {
    let mut samples = vec![Vec::with_capacity(count); points.len()];
    for _ in 0..count {
        for (i, &d) in points.iter().enumerate() {
            op(d, true);
            let start = Instant::now();
            for _ in 0..BATCH {
                op(d, false);
            }
            samples[i].push(start.elapsed().as_nanos() as f64 / BATCH as f64);
        }
    }
    samples
        .into_iter()
        .map(|mut s| {
            s.sort_by(f64::total_cmp);
            s[s.len() / 2]
        })
        .collect()
}

/// The snapshot and where its player run starts in the encoding (the run
/// is last: tick, count, then 16 bytes a player).
fn snapshot() -> (WorldSnapshot, usize, usize) {
    let value = samples::world_snapshot(PLAYERS);
    let len = value.to_encoded_vec().len();
    (value, len, len - PLAYERS * 16)
}

fn sweep_encode() -> Sweep {
    let (value, len, run_at) = snapshot();
    let mut buf = vec![0u8; len + 8192];
    let src = value.players.as_ptr().cast::<u8>();
    measure(ROWS[0], |d, _| {
        let off = offset(buf.as_ptr(), run_at, src, d, true);
        let dst = &mut buf[off..off + len];
        black_box(black_box(&value).encode(dst).unwrap());
    })
}

fn sweep_decode() -> Sweep {
    let (value, len, run_at) = snapshot();
    let encoded = value.to_encoded_vec();
    let mut warm = value.clone();
    let mut buf = vec![0u8; len + 8192];
    measure(ROWS[1], |d, place| {
        // The warmed value keeps its allocation: every decode writes the
        // same run, so the input is what moves.
        let dst = warm.players.as_ptr().cast::<u8>();
        let off = offset(buf.as_ptr(), run_at, dst, d, false);
        if place {
            buf[off..off + len].copy_from_slice(&encoded);
            return;
        }
        warm.decode_in_place(black_box(&buf[off..off + len]))
            .unwrap();
        black_box(&warm);
    })
}

fn sweep_copy() -> Sweep {
    let (value, _, _) = snapshot();
    let run = PLAYERS * 16;
    let src: Vec<u8> = value.to_encoded_vec()[8..].to_vec();
    let mut buf = vec![0u8; run + 8192];
    measure(ROWS[2], |d, _| {
        let off = offset(buf.as_ptr(), 0, src.as_ptr(), d, true);
        buf[off..off + run].copy_from_slice(black_box(&src));
        black_box(&buf);
    })
}
