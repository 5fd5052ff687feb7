//! The benchmark support shared by `bench/benches/tiers.rs` (criterion),
//! `bench/src/bin/bench_report.rs` (timing, BENCHMARKS.md) and
//! `bench/src/bin/bench_allocs.rs` (allocation counts), which include it with
//! `#[path]`: the harness, every library as a pair of functions, the peers'
//! mirror types, the nested workload and the cases.

// Benchmark code on our own sample values: a panic is a broken benchmark,
// not a crashed server. Not every binary uses every item.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
#![allow(dead_code)]

/// Derives for every peer codec but prost, spelled once. The item passes
/// through as raw tokens: bincode's derive cannot parse a `$vis` fragment.
macro_rules! peer_type {
    ($($item:tt)*) => {
        #[derive(Clone, Debug, PartialEq)]
        #[derive(serde::Serialize, serde::Deserialize)]
        #[derive(bitcode::Encode, bitcode::Decode)]
        #[derive(bincode::Encode, bincode::Decode)]
        #[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
        #[derive(speedy::Readable, speedy::Writable)]
        #[derive(wincode::SchemaWrite, wincode::SchemaRead)]
        $($item)*
    };
}

pub(crate) mod cases;
pub(crate) mod events;
pub(crate) mod harness;
pub(crate) mod libs;
pub(crate) mod nested;
pub(crate) mod peers;
