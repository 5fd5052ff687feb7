//! Soak (matrix row L5, ignored by default): 16 clients for 10 minutes over
//! the L5 link (1 s one-way latency, ±100 ms jitter, 25 % loss, 25 %
//! duplicates, both ways), checking that the reliable channel never breaks
//! its promise and that memory stays flat.
//!
//! `cargo test --release --test soak -- --ignored --nocapture`
//! (`ZAO_SOAK_SECS` shortens it).

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::time::{Duration, Instant};

use common::net::{client_config, server_with, wait_server};
use zao::proto::Channel;
use zao::quic::{Client, ClientEvent, ConditionerConfig, Limits, ServerEvent, Target};
use zao_messages::{GameMessage, SpawnEntity, WorldSnapshot, samples};

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// What one client saw.
#[derive(Default)]
struct Seen {
    reliable: Vec<u32>,
    last_tick: Option<u32>,
    snapshots: u32,
    violations: Vec<String>,
}

#[test]
#[ignore = "10 minutes; run on purpose"]
fn l5_soak_16_clients() {
    let secs: u64 = std::env::var("ZAO_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let link = ConditionerConfig {
        start_after: Duration::from_secs(1),
        ..ConditionerConfig::preset("L5").unwrap()
    };
    let limits = Limits {
        handshake_timeout: Duration::from_secs(30),
        ..Limits::default()
    };
    let mut server = server_with(limits.clone(), Some(link.with_seed(1)));
    let mut clients: Vec<Client> = (0..16)
        .map(|i| {
            let mut config = client_config(&server);
            config.conditioner = Some(link.with_seed(100 + i));
            config.limits = limits.clone();
            Client::connect(config).unwrap()
        })
        .collect();
    for c in &mut clients {
        c.wait_connected(Duration::from_secs(30)).unwrap();
    }
    let mut connected = 0;
    while connected < 16 {
        wait_server(&mut server, Duration::from_secs(10), |e| {
            matches!(e, ServerEvent::Connected { .. })
        })
        .unwrap();
        connected += 1;
    }
    let mut seen: Vec<Seen> = (0..16).map(|_| Seen::default()).collect();
    let start = Instant::now();
    let mut memory = Vec::new();
    let mut tick = 0u32;
    let hz = 30.0;
    while start.elapsed() < Duration::from_secs(secs) {
        let due = start + Duration::from_secs_f64(f64::from(tick) / hz);
        while Instant::now() < due {
            std::thread::sleep(Duration::from_millis(2));
        }
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
        server.send(Target::All, Channel::Reliable, &spawn).unwrap();
        server.flush();
        while server.poll_event().is_some() {}
        for (c, s) in clients.iter_mut().zip(&mut seen) {
            while let Some(event) = c.poll_event() {
                match event {
                    ClientEvent::Message { payload, .. } => {
                        match GameMessage::decode(&payload).unwrap() {
                            GameMessage::SpawnEntity(m) => {
                                if m.entity as usize != s.reliable.len() {
                                    s.violations.push(format!(
                                        "reliable {} after {} messages",
                                        m.entity,
                                        s.reliable.len()
                                    ));
                                }
                                s.reliable.push(m.entity);
                            }
                            GameMessage::WorldSnapshot(m) => {
                                if s.last_tick.is_some_and(|t| m.tick <= t) {
                                    s.violations
                                        .push(format!("tick {} after {:?}", m.tick, s.last_tick));
                                }
                                s.last_tick = Some(m.tick);
                                s.snapshots += 1;
                            }
                            other => s.violations.push(format!("unexpected {other:?}")),
                        }
                    }
                    ClientEvent::Disconnected { reason } => {
                        s.violations.push(format!("disconnected: {reason}"))
                    }
                    ClientEvent::Connected { .. } => {}
                }
            }
        }
        if tick.is_multiple_of(300) {
            memory.push((start.elapsed().as_secs(), rss_kib()));
            println!(
                "soak {:>4} s: RSS {} KiB",
                start.elapsed().as_secs(),
                rss_kib()
            );
        }
        tick += 1;
    }
    // Drain: the reliable stream must catch up completely.
    let drain_end = Instant::now() + Duration::from_secs(60);
    while Instant::now() < drain_end && seen.iter().any(|s| s.reliable.len() < tick as usize) {
        for (c, s) in clients.iter_mut().zip(&mut seen) {
            while let Some(ClientEvent::Message { payload, .. }) = c.poll_event() {
                if let Ok(GameMessage::SpawnEntity(m)) = GameMessage::decode(&payload) {
                    if m.entity as usize != s.reliable.len() {
                        s.violations.push(format!(
                            "reliable {} after {}",
                            m.entity,
                            s.reliable.len()
                        ));
                    }
                    s.reliable.push(m.entity);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    for (i, s) in seen.iter().enumerate() {
        assert!(
            s.violations.is_empty(),
            "client {i}: {:?}",
            &s.violations[..s.violations.len().min(5)]
        );
        assert_eq!(
            s.reliable.len(),
            tick as usize,
            "client {i}: every reliable message"
        );
        println!(
            "client {i:>2}: reliable {}/{tick} in order, snapshots {}/{tick} = {:.1} %",
            s.reliable.len(),
            s.snapshots,
            100.0 * f64::from(s.snapshots) / f64::from(tick)
        );
    }
    // Flat memory: after the first minute, RSS grows less than 16 MiB.
    let warm = memory
        .iter()
        .find(|(t, _)| *t >= 60)
        .or(memory.last())
        .map_or(0, |m| m.1);
    let end = rss_kib();
    println!("soak: {tick} ticks, RSS {warm} KiB after warm-up, {end} KiB at the end");
    assert!(
        end < warm + 16 * 1024,
        "memory grew from {warm} to {end} KiB"
    );
}
