//! Memory per connection, measured: a counting allocator (in this test
//! binary only) measures what the simulated network holds live — both
//! ends of every connection: the server's session (its snapshot receiver,
//! read buffers, queues) and QUIC state, and the client's.
//!
//! `cargo test --test memory -- --nocapture` prints the figures.

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::time::Duration;

use common::game::Game;
use zao::Encode;
use zao::proto::{Channel, Limits, Target};
use zao::sim::LinkSpec;
use zao_messages::{SpawnEntity, WorldSnapshot, samples};

/// Live heap bytes, on this thread, that `f` leaves allocated.
fn live_after(f: impl FnOnce()) -> i64 {
    allocation_counter::measure(f).bytes_current
}

/// The most heap bytes, on this thread, that `f` held at once beyond what
/// was live before it.
fn peak_during(f: impl FnOnce()) -> i64 {
    i64::try_from(allocation_counter::measure(f).bytes_max).unwrap_or(i64::MAX)
}

/// A game of `clients` clients after 3 s of play at 30 Hz both ways,
/// kept alive (leaked) so its memory counts.
fn game_memory(clients: usize) -> i64 {
    live_after(|| {
        let mut game = Game::new(11, clients, LinkSpec::l2(), Limits::default(), 256);
        game.play(90, 30);
        game.drain(Duration::from_secs(2));
        // The tallies are the test's, not the connections': drop them.
        for t in game.downstream.iter_mut().chain(game.upstream.iter_mut()) {
            *t = common::game::Tally::default();
        }
        std::mem::forget(game);
    })
}

#[test]
fn memory_per_connection_is_measured_in_steady_play() {
    let small = game_memory(4);
    let large = game_memory(36);
    let per_connection = (large - small) / 32;
    let worst = Limits::default().worst_case_bytes_per_connection() as i64;
    println!(
        "memory per connection in steady play (both ends, 256-player snapshots at 30 Hz): {} KiB; {} KiB for 4 clients, {} KiB for 36; worst case per end {} KiB",
        per_connection / 1024,
        small / 1024,
        large / 1024,
        worst / 1024
    );
    // Each connection holds at least what it must: the client keeps the
    // latest snapshot it assembled (a counting allocator that counted
    // nothing, or a game that never connected, reads far below it).
    let snapshot = samples::world_snapshot(256).to_encoded_vec().len() as i64;
    assert!(
        per_connection >= snapshot,
        "{per_connection} bytes per connection, under one {snapshot}-byte snapshot"
    );
    // Both ends together stay far inside one end's worst case: the
    // buffers are bounds, not allocations.
    assert!(
        per_connection < worst,
        "{per_connection} bytes per connection"
    );
}

#[test]
fn a_stalled_client_costs_the_server_at_most_the_worst_case() {
    let limits = Limits::default();
    let worst = limits.worst_case_bytes_per_connection() as i64;
    let mut game = Game::new(12, 2, LinkSpec::perfect(), limits, 1024);
    let stalled = game.clients[1].node();
    game.sim
        .set_links(stalled, LinkSpec::blackhole(), LinkSpec::blackhole());
    // Reliable and snapshot broadcasts to a client that acknowledges
    // nothing, for 5 s: its reliable backlog and datagram queue fill to
    // their limits, then the server closes it (code 5) or drops its
    // oldest datagrams, and memory stops growing. The peak is what a
    // server must have room for, so the peak is what is bounded.
    let grew = peak_during(|| {
        for tick in 0..300u32 {
            let snapshot = WorldSnapshot {
                tick,
                ..samples::world_snapshot(1024)
            };
            game.server.send_snapshot(Target::All, &snapshot).unwrap();
            let spawn = SpawnEntity {
                entity: tick,
                ..samples::spawn_entity()
            };
            let _ = game.server.send(Target::All, Channel::RELIABLE, &spawn);
            game.sim.run_for(Duration::from_millis(16));
            while game.server.poll_event().is_some() {}
            for client in &mut game.clients {
                while client.poll_event().is_some() {}
            }
        }
    });
    println!(
        "a stalled client under 1024-player snapshots and reliable broadcasts at 60 Hz for 5 s: the process held at most {} KiB more (worst case per connection {} KiB)",
        grew / 1024,
        worst / 1024
    );
    assert!(grew < worst, "{grew} bytes for one stalled connection");
}
