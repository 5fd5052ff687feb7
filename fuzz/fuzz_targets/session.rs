//! One connection's sans-IO `Session`, server or client, driven by a script
//! of peer bytes, datagrams, virtual time, admission answers and the
//! application's reads and sends: admission, framing and rate limits
//! together, with their invariants checked (`session_check.rs`; the input
//! format is `session_script.rs`). Both are shared with
//! `tests/fuzz_session.rs`, which replays `fuzz/seeds/session/` in
//! `cargo test`.

#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;

#[path = "session_check.rs"]
mod session_check;
#[path = "session_script.rs"]
mod session_script;

fuzz_target!(|data: &[u8]| session_check::check(data));
