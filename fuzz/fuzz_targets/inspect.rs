//! The inspector (`zao::inspect`) on arbitrary bytes, text, protocol JSON
//! and captures: no panic, the Rust decoders' verdict, and every text
//! round trip (see `inspect_check.rs`, shared with `tests/fuzz_inspect.rs`,
//! which replays `fuzz/seeds/inspect/` in `cargo test`).

#![no_main]
#![forbid(unsafe_code)]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use zao::inspect::Inspector;

#[path = "inspect_check.rs"]
mod inspect_check;

fuzz_target!(|data: &[u8]| {
    static INSPECTOR: OnceLock<Inspector> = OnceLock::new();
    let inspector = INSPECTOR.get_or_init(|| Inspector::from_protocol(&inspect_check::protocol()));
    inspect_check::check(inspector, data);
});
