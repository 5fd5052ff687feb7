//! The allocation pass of the benchmark report: runs every row of
//! `bench/benches/support/` a fixed number of times under allocation-counter's
//! counting global allocator and prints, per row, allocations and bytes
//! allocated per operation as tab-separated lines
//! (`case, library, operation, allocations, bytes`).
//!
//! It is a binary of its own because the counting allocator is global:
//! `bench/src/bin/bench_report.rs` times every row under the system allocator and
//! runs this one for the counts.
//!
//! ```sh
//! cargo run --profile bench -p zao-bench --bin bench_allocs
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

#[path = "../../benches/support/mod.rs"]
mod support;

use support::cases::KINDS;

/// Operations per count (the counts are divided by this).
const ITERS: u64 = 32;

fn main() {
    for kind in KINDS {
        let mut case = kind.build();
        for row in &mut case.rows {
            // Warm first: a first call may fill lazily sized caches.
            row.run(2);
            let info = allocation_counter::measure(|| row.run(ITERS));
            println!(
                "{}\t{}\t{}\t{}\t{}",
                case.name,
                row.lib,
                row.op.label(),
                info.count_total as f64 / ITERS as f64,
                info.bytes_total as f64 / ITERS as f64,
            );
        }
    }
}
