//! Link rows L1–L8 of the test matrix: a server and a client over loopback
//! QUIC, both ends' packets through the seeded link conditioner, and the
//! guarantees each channel keeps:
//! - reliable: every message exactly once, in order;
//! - snapshot: delivered ticks strictly increase, a loss never delays later
//!   snapshots, the delivered fraction stays above a calibrated bound;
//! - unreliable: at most once;
//! - a blackhole shorter than the idle timeout keeps the connection, a
//!   longer one ends it within (T, 2T).
//!
//! Each scenario prints its measured figures (run with `--nocapture`).

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::net::{client_config, connect, server_with, wait_server};
use zao::proto::Channel;
use zao::quic::{ClientEvent, ConditionerConfig, DisconnectReason, Limits, ServerEvent, Target};
use zao_messages::{GameMessage, PlayerMoved, SpawnEntity, WorldSnapshot, samples};

/// Ticks per second the scenarios send at.
const HZ: u32 = 30;

struct Outcome {
    sent: u32,
    delivered: u32,
    latencies: Vec<Duration>,
}

impl Outcome {
    fn fraction(&self) -> f64 {
        f64::from(self.delivered) / f64::from(self.sent)
    }

    fn percentile(&self, p: f64) -> Duration {
        let mut l = self.latencies.clone();
        l.sort();
        l.get(((l.len() as f64 * p) as usize).min(l.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    }
}

fn limits() -> Limits {
    Limits {
        handshake_timeout: Duration::from_secs(30),
        ..Limits::default()
    }
}

/// Runs `seconds` of 30 Hz play under `conditions` in both directions and
/// checks the channel guarantees; returns the snapshot figures.
fn play(name: &str, conditions: ConditionerConfig, seconds: u32) -> Outcome {
    let mut server = server_with(limits(), Some(conditions.with_seed(11)));
    let mut config = client_config(&server);
    config.conditioner = Some(conditions.with_seed(22));
    config.limits = limits();
    let (mut client, id) = connect(&mut server, config);

    let ticks = seconds * HZ;
    let start = Instant::now();
    let mut sent_at = Vec::with_capacity(ticks as usize);
    let mut reliable = Vec::new();
    let mut unreliable = HashSet::new();
    let mut last_tick: Option<u32> = None;
    let mut outcome = Outcome {
        sent: ticks,
        delivered: 0,
        latencies: Vec::new(),
    };
    let mut receive =
        |client: &mut zao::quic::Client, sent_at: &[Instant], reliable: &mut Vec<u32>| {
            while let Some(event) = client.poll_event() {
                let ClientEvent::Message { channel, payload } = event else {
                    assert!(
                        matches!(event, ClientEvent::Connected { .. }),
                        "{name}: {event:?}"
                    );
                    continue;
                };
                match (channel, GameMessage::decode(&payload).unwrap()) {
                    (Channel::Reliable, GameMessage::SpawnEntity(s)) => reliable.push(s.entity),
                    (Channel::Unreliable, GameMessage::PlayerMoved(m)) => {
                        assert!(
                            unreliable.insert(m.entity),
                            "{name}: unreliable {} twice",
                            m.entity
                        );
                    }
                    (Channel::Snapshot, GameMessage::WorldSnapshot(s)) => {
                        assert!(
                            last_tick.is_none_or(|last| s.tick > last),
                            "{name}: tick {} after {last_tick:?}",
                            s.tick
                        );
                        last_tick = Some(s.tick);
                        outcome.delivered += 1;
                        outcome.latencies.push(sent_at[s.tick as usize].elapsed());
                    }
                    (channel, other) => panic!("{name}: {other:?} on {channel:?}"),
                }
            }
        };
    for tick in 0..ticks {
        let due = start + Duration::from_secs_f64(f64::from(tick) / f64::from(HZ));
        while Instant::now() < due {
            receive(&mut client, &sent_at, &mut reliable);
            std::thread::sleep(Duration::from_millis(1));
        }
        sent_at.push(Instant::now());
        server
            .send_snapshot(
                Target::All,
                &WorldSnapshot {
                    tick,
                    ..samples::world_snapshot(32)
                },
            )
            .unwrap();
        let spawn = SpawnEntity {
            entity: tick,
            ..samples::spawn_entity()
        };
        server
            .send(Target::One(id), Channel::Reliable, &spawn)
            .unwrap();
        let moved = PlayerMoved {
            entity: tick,
            ..samples::player_moved()
        };
        server
            .send(Target::All, Channel::Unreliable, &moved)
            .unwrap();
        server.flush();
    }
    // Drain: every reliable message must still arrive.
    let drain_end = Instant::now() + conditions.latency * 4 + Duration::from_secs(20);
    while reliable.len() < ticks as usize && Instant::now() < drain_end {
        receive(&mut client, &sent_at, &mut reliable);
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(
        reliable,
        (0..ticks).collect::<Vec<_>>(),
        "{name}: reliable exactly once, in order"
    );
    assert!(server.stats(id).is_some(), "{name}: still connected");
    println!(
        "{name}: snapshots delivered {}/{} = {:.1} %, latency p50 {:?} p99 {:?}, unreliable {}/{}",
        outcome.delivered,
        outcome.sent,
        100.0 * outcome.fraction(),
        outcome.percentile(0.5),
        outcome.percentile(0.99),
        unreliable.len(),
        ticks,
    );
    outcome
}

/// No head-of-line blocking: a snapshot arrives in about the link's one-way
/// latency plus jitter, whatever was lost before it.
fn assert_no_stall(name: &str, o: &Outcome, c: &ConditionerConfig) {
    let bound = c.latency + c.jitter + Duration::from_millis(150);
    assert!(
        o.percentile(0.99) <= bound,
        "{name}: p99 {:?} over {bound:?}",
        o.percentile(0.99)
    );
}

fn scenario(name: &str, seconds: u32, min_fraction: f64) {
    let c = ConditionerConfig::preset(name).unwrap();
    let o = play(name, c, seconds);
    assert!(
        o.fraction() >= min_fraction,
        "{name}: delivered {:.3} < {min_fraction}",
        o.fraction()
    );
    assert_no_stall(name, &o, &c);
}

// Bounds are (1 − loss) − 2 %, less what newest-wins drops by design where
// jitter or reordering exceeds the 33 ms tick (calibrated; see each).

#[test]
fn l1_40ms_6ms_jitter_0_2_percent_loss() {
    scenario("L1", 4, 0.998 - 0.02);
}

#[test]
fn l2_100ms_15ms_jitter_2_percent_loss() {
    scenario("L2", 4, 0.98 - 0.02);
}

#[test]
fn l3_200ms_30ms_jitter_10_percent_loss() {
    // ±30 ms jitter reorders some neighbours; the older one is then stale.
    scenario("L3", 4, 0.90 - 0.12);
}

#[test]
fn l4_250ms_250ms_jitter_5_percent_loss_10_percent_duplicates() {
    // ±250 ms jitter against a 33 ms tick: most snapshots are overtaken by
    // a newer one, and newest-wins drops them. What arrives is fresh.
    scenario("L4", 4, 0.10);
}

#[test]
fn l5_1s_100ms_jitter_25_percent_loss_25_percent_duplicates() {
    // The short CI form of the soak (the 10-minute run is `soak` in
    // tests/soak.rs): the link turns harsh after the handshake.
    let c = ConditionerConfig {
        start_after: Duration::from_secs(1),
        ..ConditionerConfig::preset("L5").unwrap()
    };
    let o = play("L5", c, 5);
    assert!(o.fraction() >= 0.45, "L5: delivered {:.3}", o.fraction());
    assert_no_stall("L5", &o, &c);
}

#[test]
fn l6_50ms_with_a_quarter_of_packets_held_back() {
    // A held-back snapshot arrives after its successor and is stale.
    scenario("L6", 4, 0.70);
}

#[test]
fn l7_a_blackhole_shorter_than_the_idle_timeout_keeps_the_connection() {
    let c = ConditionerConfig::preset("L7").unwrap();
    // 2 s of play, 5 s of blackhole, 2 s after: `play` asserts the reliable
    // stream caught up and the client is still connected.
    let o = play("L7", c, 9);
    assert!(
        o.fraction() > 0.3 && o.fraction() < 0.6,
        "L7: {:.3}",
        o.fraction()
    );
}

#[test]
fn l7_a_blackhole_longer_than_the_idle_timeout_ends_it_within_t_to_2t() {
    let idle = Duration::from_secs(2);
    let limits = Limits {
        idle_timeout: idle,
        keep_alive: Duration::from_millis(300),
        ..Limits::default()
    };
    let start = Duration::from_secs(1);
    let c = ConditionerConfig {
        blackhole: Some((start, Duration::from_secs(60))),
        ..ConditionerConfig::default()
    };
    let mut server = server_with(limits.clone(), Some(c));
    let began = Instant::now();
    let mut config = client_config(&server);
    config.conditioner = Some(c);
    config.limits = limits;
    let (_client, id) = connect(&mut server, config);
    let event = wait_server(&mut server, Duration::from_secs(10), |e| {
        matches!(e, ServerEvent::Disconnected { .. })
    });
    let after = began.elapsed().saturating_sub(start);
    match event {
        Some(ServerEvent::Disconnected { client, reason }) => {
            assert_eq!(client, id);
            assert_eq!(reason, DisconnectReason::TimedOut);
        }
        other => panic!("{other:?}"),
    }
    // The two conditioners' clocks start when their sockets are made, some
    // milliseconds apart, so the blackhole's start is known to ±0.1 s.
    let slack = Duration::from_millis(100);
    assert!(
        after + slack > idle && after < 2 * idle,
        "ended {after:?} into the blackhole (T = {idle:?})"
    );
    println!("L7 (long blackhole): disconnected {after:?} into it, T = {idle:?}");
}

#[test]
fn l8_mtu_clamped_to_1200_splits_snapshots_and_never_truncates() {
    let c = ConditionerConfig::preset("L8").unwrap();
    let mut server = server_with(limits(), Some(c.with_seed(3)));
    let mut config = client_config(&server);
    config.conditioner = Some(c.with_seed(4));
    let (mut client, _) = connect(&mut server, config);
    let mut complete = 0;
    for tick in 0..20u32 {
        let chunks = server
            .send_snapshot(
                Target::All,
                &WorldSnapshot {
                    tick,
                    ..samples::world_snapshot(1024)
                },
            )
            .unwrap();
        assert!(
            chunks >= 14,
            "16 kB in 1200-byte datagrams: {chunks} chunks"
        );
        let mut players = HashSet::new();
        let end = Instant::now() + Duration::from_secs(2);
        while players.len() < 1024 && Instant::now() < end {
            match client.poll_event() {
                Some(ClientEvent::Message { payload, .. }) => {
                    if let GameMessage::WorldSnapshot(s) = GameMessage::decode(&payload).unwrap()
                        && s.tick == tick
                    {
                        players.extend(s.players.iter().map(|p| p.entity));
                    }
                }
                Some(_) => {}
                None => std::thread::sleep(Duration::from_millis(1)),
            }
        }
        complete += usize::from(players.len() == 1024);
    }
    // No loss on this link: nearly every snapshot arrives whole.
    assert!(complete >= 18, "{complete}/20 snapshots complete");
    println!("L8: {complete}/20 snapshots of 1024 players arrived whole through MTU 1200");
}
