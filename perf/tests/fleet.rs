//! The fleet against real servers over loopback: zao's handshake admits
//! it, zao's heartbeat keeps it past the silence timeout (and without the
//! heartbeat it is closed), and it counts what it is sent.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use zao::proto::encode_chunks;
use zao::quic::{
    Certificate, CloseCode, DisconnectReason, Limits, Server, ServerConfig, ServerEvent, Target,
};
use zao_perf::{BareServer, Fleet, FleetConfig};

const CLIENTS: usize = 3;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

fn server(limits: &Limits) -> Server {
    let cert = Certificate::self_signed(&["localhost"]).unwrap();
    let mut config = ServerConfig::new(
        (Ipv4Addr::LOCALHOST, 0).into(),
        cert,
        zao_messages::protocol(),
    );
    config.limits = limits.clone();
    Server::start(config).unwrap()
}

fn fleet_config(server: &Server, limits: &Limits) -> FleetConfig {
    FleetConfig::zao(server, &zao_messages::protocol(), limits).unwrap()
}

/// Waits up to 5 s for `fleet` to have read `n` datagrams; how many it read.
fn received(fleet: &Fleet, n: usize) -> u64 {
    let end = Instant::now() + Duration::from_secs(5);
    while fleet.received() < n as u64 && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(5));
    }
    fleet.received()
}

/// Polls `server` for `time`; the events it had.
fn events_for(server: &mut Server, time: Duration) -> Vec<ServerEvent> {
    let end = Instant::now() + time;
    let mut events = Vec::new();
    while Instant::now() < end {
        events.extend(core::iter::from_fn(|| server.poll_event()));
        std::thread::sleep(Duration::from_millis(5));
    }
    events
}

/// A server that closes clients silent for 400 ms; a fleet that does or
/// does not send heartbeats, watched for 1.2 s. The clients it still has.
fn after_silence(heartbeat: bool) -> (usize, Vec<DisconnectReason>) {
    let rt = runtime();
    let mut limits = Limits::default();
    limits.silence_timeout = Some(Duration::from_millis(400));
    let mut server = server(&limits);
    let mut fleet_limits = limits.clone();
    if !heartbeat {
        fleet_limits.silence_timeout = None;
    }
    let fleet = Fleet::connect(&rt, CLIENTS, &fleet_config(&server, &fleet_limits)).unwrap();
    assert_eq!(fleet.ids().len(), CLIENTS, "every client welcomed");
    let events = events_for(&mut server, Duration::from_millis(1200));
    let connected = events
        .iter()
        .filter(|e| matches!(e, ServerEvent::Connected { .. }))
        .count();
    assert_eq!(connected, CLIENTS);
    let gone = events
        .into_iter()
        .filter_map(|e| match e {
            ServerEvent::Disconnected { reason, .. } => Some(reason),
            _ => None,
        })
        .collect();
    let left = server.clients().len();
    fleet.close();
    server.shutdown();
    (left, gone)
}

#[test]
fn zao_heartbeats_keep_the_fleet_past_the_silence_timeout() {
    let (left, gone) = after_silence(true);
    assert_eq!((left, gone), (CLIENTS, vec![]));
    // The control: the same clients without heartbeats are closed as silent.
    let (left, gone) = after_silence(false);
    assert_eq!(left, 0);
    assert_eq!(gone.len(), CLIENTS);
    for reason in gone {
        assert!(
            matches!(
                reason,
                DisconnectReason::Closed {
                    code: CloseCode::Silent,
                    ..
                }
            ),
            "{reason:?}"
        );
    }
}

#[test]
fn both_fleets_count_every_chunk_they_are_sent() {
    let rt = runtime();
    let limits = Limits::default();
    let snapshot = zao_messages::samples::world_snapshot(256);

    let mut zao = server(&limits);
    let fleet = Fleet::connect(
        &rt,
        CLIENTS,
        &fleet_config(&zao, &limits).shared_socket(true),
    )
    .unwrap();
    let _ = events_for(&mut zao, Duration::from_millis(50));
    let chunks = zao.send_snapshot(Target::All, &snapshot).unwrap();
    assert!(chunks > 1, "a snapshot of several datagrams");
    assert_eq!(
        received(&fleet, chunks * CLIENTS),
        (chunks * CLIENTS) as u64
    );
    fleet.close();
    zao.shutdown();

    let mut bare = BareServer::start(&limits, &zao_messages::protocol(), 1, "bare-test").unwrap();
    let config = FleetConfig::bare(&bare, &limits, 8).unwrap();
    let fleet = Fleet::connect(&rt, CLIENTS, &config).unwrap();
    assert!(
        fleet.ids().is_empty(),
        "no zao handshake with a bare server"
    );
    assert!(bare.wait_for(CLIENTS, Duration::from_secs(5)));
    let (mut scratch, mut datagrams) = (bytes::BytesMut::new(), Vec::new());
    assert_eq!(
        encode_chunks(&snapshot, 1, &mut scratch, &mut datagrams),
        Some(chunks)
    );
    for conn in bare.connections() {
        for d in &datagrams {
            conn.send_datagram(d.clone()).unwrap();
        }
    }
    assert_eq!(
        received(&fleet, chunks * CLIENTS),
        (chunks * CLIENTS) as u64
    );
    fleet.close();
    bare.stop();
}
