//! Load tools for zao's transport, on zao's public API only (as quinn's
//! `perf/` is for quinn), and the measuring helpers every tool and example
//! of the workspace shares.
//!
//! ```sh
//! cargo run --release -p zao-perf --bin broadcast            # full run, writes BENCHMARKS.md
//! cargo run --release -p zao-perf --bin broadcast -- --quick # a few seconds, prints only
//! cargo run --release -p zao-perf --bin servers              # K server processes side by side
//! ```
//!
//! - Measuring ([`rss_kib`], [`process_cpu`], [`ThreadCpu`],
//!   [`load_average`], [`percentile`], [`machine`], [`today`]): Linux's
//!   `/proc` figures and the statistics a report takes of them.
//! - Reporting ([`Section`], [`fmt_us`], [`ratio`]): tables and the marked
//!   section a tool owns in a shared markdown file.
//! - Load ([`Fleet`], [`BareServer`]): hundreds of raw QUIC clients that
//!   speak zao's handshake and heartbeat, and the bare quinn server a zao
//!   server is compared with.

#![forbid(unsafe_code)]

mod bare;
mod fleet;
mod machine;
mod os;
mod report;
mod stats;

pub use bare::BareServer;
pub use fleet::{Fleet, FleetConfig, FleetError};
pub use machine::{machine, today};
pub use os::{ThreadCpu, current_thread_id, load_average, nice, process_cpu, rss_kib};
pub use report::{Section, fmt_us, ratio, us};
pub use stats::{per_tick_us, percentile};
