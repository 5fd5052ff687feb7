//! Quantized values and a client's delta-snapshot receiver on arbitrary
//! bytes, mixed with genuine delta chunks from a real server history
//! (`delta_check.rs`, shared with `tests/fuzz_delta.rs`, which replays
//! `fuzz/seeds/delta/` in `cargo test`).

#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;

#[path = "delta_check.rs"]
mod delta_check;

fuzz_target!(|data: &[u8]| {
    delta_check::check(data);
});
