//! Zao against the peer codecs, one criterion group per reference message
//! case (`zao_messages::samples` values), encode and decode measured
//! separately, with and without buffer reuse:
//!
//! ```sh
//! cargo bench --bench tiers                    # everything, a few minutes
//! cargo bench --bench tiers -- WorldSnapshot   # one message
//! cargo bench --bench tiers -- --test          # run each once (CI)
//! ```
//!
//! Ids read `case/operation/library`. The cases, the harness and every
//! library's pair of functions live in `bench/benches/support/`, shared with
//! `bench/src/bin/bench_report.rs`, which writes BENCHMARKS.md from the same rows.
//! `cargo bench` builds with `[profile.bench]` (fat LTO, one codegen unit),
//! as the report does.
//!
//! One more group, Zao alone: a `Transform` of plain data nested in plain
//! data (a `Vec3` struct and a tuple of floats), the shape
//! `Decode::decode_plain` reads bare (`cargo bench --bench tiers --
//! Transform`).

mod support;

use std::time::{Duration, Instant};

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use zao::{Decode, Encode};

use support::cases;

fn tiers(c: &mut Criterion) {
    for kind in cases::KINDS {
        let case = kind.build();
        let mut group = c.benchmark_group(case.name.as_str());
        for mut row in case.rows {
            let id = BenchmarkId::new(row.op.label(), row.lib);
            group.bench_function(id, |b| {
                b.iter_custom(|iters| {
                    let start = Instant::now();
                    row.run(iters);
                    start.elapsed()
                });
            });
        }
        group.finish();
    }
}

#[derive(Debug, PartialEq, Encode, Decode)]
struct Vec3 {
    x: f32,
    y: f32,
    z: f32,
}

/// Plain data in plain data: every field a number, a tuple of numbers or a
/// struct of them, so the whole value is one exact-size read.
#[derive(Debug, PartialEq, Encode, Decode)]
struct Transform {
    position: Vec3,
    velocity: (f32, f32, f32),
    yaw: f32,
}

fn plain_nested(c: &mut Criterion) {
    let value = Transform {
        position: Vec3 {
            x: 12.5,
            y: -3.25,
            z: 0.75,
        },
        velocity: (1.5, 0.0, -2.5),
        yaw: 0.5,
    };
    let bytes = value.to_encoded_vec();
    assert_eq!(Transform::decode(&bytes).as_ref(), Ok(&value));
    let mut group = c.benchmark_group("Transform (plain data nested in plain data)");
    group.bench_function(BenchmarkId::new("decode", "zao"), |b| {
        b.iter(|| Transform::decode(black_box(&bytes)).ok());
    });
    group.finish();
}

criterion_group! {
    name = benches;
    // Short windows: ~200 rows must finish in a few minutes. The report tool
    // interleaves its runs instead, for ratios from one moment of the machine.
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20);
    targets = tiers, plain_nested
}
criterion_main!(benches);
