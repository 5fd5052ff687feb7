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
//! library's pair of functions live in `benches/support/`, shared with
//! `examples/bench_report.rs`, which writes BENCHMARKS.md from the same rows.
//! `cargo bench` builds with `[profile.bench]` (fat LTO, one codegen unit),
//! as the report does.

mod support;

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

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

criterion_group! {
    name = benches;
    // Short windows: ~200 rows must finish in a few minutes. The report tool
    // interleaves its runs instead, for ratios from one moment of the machine.
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20);
    targets = tiers
}
criterion_main!(benches);
