//! Soak (matrix row L5) on the simulated network: 16 clients for 10
//! minutes of virtual time over L5 (1 s one-way latency, ±100 ms jitter,
//! 25 % loss, 25 % duplicates, both ways), at 30 Hz, both directions:
//! reliable, unreliable and snapshots. It runs in every `cargo test`
//! (seconds of wall time); `ZAO_SOAK_SECS` changes its length.
//!
//! The real-socket soak (the same game over loopback QUIC with the link
//! conditioner, in real time) stays for releases: `cargo test --release
//! --test soak -- --ignored --nocapture`.

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::time::{Duration, Instant};

use common::game::Game;
use zao::proto::Limits;
use zao::sim::LinkSpec;

const HZ: u32 = 30;
const CLIENTS: usize = 16;

fn seconds() -> u32 {
    std::env::var("ZAO_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600)
}

#[test]
fn l5_soak_16_clients_10_minutes_both_directions() {
    let wall = Instant::now();
    let mut limits = Limits::default();
    limits.handshake_timeout = Duration::from_secs(30);
    // Connected over the latency alone, then L5 (QUIC's handshake backs off
    // for tens of seconds under 25 % loss; docs/LINKS.md).
    let mut game = Game::connected_over(
        5,
        CLIENTS,
        LinkSpec::latency(Duration::from_secs(1)),
        LinkSpec::l5(),
        limits,
        32,
    );
    let seconds = seconds();
    game.play(seconds * HZ, HZ);
    game.drain(Duration::from_secs(60));
    // Reliable exactly once and in order both ways, unreliable at most
    // once, snapshot ticks never backwards, nobody disconnected.
    game.assert_guarantees("soak");
    let sent = game.sent();
    let lowest = |t: &[common::game::Tally], f: fn(&common::game::Tally) -> usize| {
        t.iter().map(f).min().unwrap_or(0) as f64 / f64::from(sent)
    };
    let unreliable_down = lowest(&game.downstream, |t| t.unreliable.len());
    let unreliable_up = lowest(&game.upstream, |t| t.unreliable.len());
    let snapshots = lowest(&game.downstream, |t| t.snapshots.len());
    println!("{}", game.report("soak"));
    println!(
        "soak: worst client: unreliable {:.1} % down, {:.1} % up, snapshots {:.1} %; {seconds} s virtual in {:?} wall",
        100.0 * unreliable_down,
        100.0 * unreliable_up,
        100.0 * snapshots,
        wall.elapsed()
    );
    // Unreliable: what 25 % loss leaves, less 2 % (the matrix's bound).
    assert!(
        unreliable_down >= 0.73,
        "unreliable down {unreliable_down:.3}"
    );
    assert!(unreliable_up >= 0.73, "unreliable up {unreliable_up:.3}");
    // Snapshots: newest-wins under ±100 ms of jitter, as L5 in tests/links.rs
    // (0.461 measured there, less its 5 % margin).
    assert!(snapshots >= 0.461 - 0.05, "snapshots {snapshots:.3}");
}
