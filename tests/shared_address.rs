//! Many players behind one address (NAT, a campus, a LAN party): they
//! connect together over real loopback sockets, all from 127.0.0.1, and a
//! client the server must still turn away reads why and, where a new
//! attempt may succeed, tries again within its handshake deadline.

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::net::{client_config, connect_default, server_with, wait_server};
use zao::Encode;
use zao::proto::{
    DisconnectReason, HelloReply, Limits, RefuseReason, Session, SessionConfig, SessionEvent,
    StreamId, WaitError, frame_header,
};
use zao::quic::{Client, ServerEvent};

/// The requirement: 64 players behind one address, connecting within the
/// same second, are all connected within 5 s and none is refused.
#[test]
fn sixty_four_clients_from_one_address_connect_at_once() {
    const PLAYERS: usize = 64;
    let mut server = server_with(Limits::default(), None);
    let start = Instant::now();
    let clients: Vec<Client> = (0..PLAYERS)
        .map(|_| Client::connect(client_config(&server)).unwrap())
        .collect();
    let mut ids = Vec::new();
    for client in &clients {
        let left = Duration::from_secs(5).saturating_sub(start.elapsed());
        match client.wait_connected(left) {
            Ok(id) => ids.push(id),
            Err(e) => panic!("client {} of {PLAYERS}: {e}", ids.len() + 1),
        }
    }
    let took = start.elapsed();
    assert!(took < Duration::from_secs(5), "{took:?}");
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), PLAYERS);
    let end = Instant::now() + Duration::from_secs(5);
    while server.clients().len() < PLAYERS && Instant::now() < end {
        while server.poll_event().is_some() {}
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(server.clients().len(), PLAYERS);
    let stats = server.handshakes();
    // Nobody was turned away, and past the per-address cap the players
    // proved their address (a Retry) rather than being refused.
    assert_eq!(stats.refused, 0, "{stats:?}");
    assert!(stats.retried > 0, "{stats:?}");
    println!("{PLAYERS} clients from one address connected in {took:?}: {stats:?}");
}

fn refusal(client: &Client, within: Duration) -> RefuseReason {
    match client.wait_connected(within) {
        Err(WaitError::Closed(DisconnectReason::Refused(reason))) => reason,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn refusals(server: &mut zao::quic::Server, within: Duration) -> usize {
    let end = Instant::now() + within;
    let mut n = 0;
    while wait_server(server, end.saturating_duration_since(Instant::now()), |e| {
        matches!(e, ServerEvent::Refused { .. })
    })
    .is_some()
    {
        n += 1;
    }
    n
}

#[test]
fn a_draining_server_says_so_at_once_and_is_not_retried() {
    let mut server = server_with(Limits::default(), None);
    let (_playing, _) = connect_default(&mut server);
    server.set_draining(true);
    let start = Instant::now();
    let client = Client::connect(client_config(&server)).unwrap();
    assert_eq!(
        refusal(&client, Duration::from_secs(5)),
        RefuseReason::Draining
    );
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(refusals(&mut server, Duration::from_millis(500)), 1);
    // The connected client plays on; draining off admits again.
    assert_eq!(server.clients().len(), 1);
    server.set_draining(false);
    connect_default(&mut server);
}

#[test]
fn a_full_server_is_retried_within_the_deadline_then_named() {
    let mut limits = Limits::default();
    limits.max_clients = 1;
    limits.handshake_timeout = Duration::from_secs(2);
    let mut server = server_with(limits.clone(), None);
    let (_playing, _) = connect_default(&mut server);
    let mut config = client_config(&server);
    config.limits = limits;
    let start = Instant::now();
    let client = Client::connect(config).unwrap();
    assert_eq!(
        refusal(&client, Duration::from_secs(5)),
        RefuseReason::ServerFull
    );
    // It tried again (the server refused it more than once), and gave up
    // within its deadline.
    assert!(
        start.elapsed() < Duration::from_millis(2500),
        "{:?}",
        start.elapsed()
    );
    assert!(refusals(&mut server, Duration::from_millis(500)) >= 2);
}

#[test]
fn a_client_over_the_per_address_cap_is_told_the_cap() {
    let mut limits = Limits::default();
    limits.max_clients_per_ip = 2;
    limits.handshake_timeout = Duration::from_secs(1);
    let mut server = server_with(limits.clone(), None);
    let _first = connect_default(&mut server);
    let _second = connect_default(&mut server);
    let mut config = client_config(&server);
    config.limits = limits;
    let client = Client::connect(config).unwrap();
    assert_eq!(
        refusal(&client, Duration::from_secs(5)),
        RefuseReason::TooManyFromAddress { max: 2 }
    );
}

/// A server with one pending handshake allowed turns concurrent attempts
/// away at the QUIC level; the clients read `Busy`, not a bare transport
/// code, and come back until they are in.
#[test]
fn clients_turned_away_as_busy_come_back_and_connect() {
    let mut limits = Limits::default();
    limits.max_pending_handshakes = 1;
    limits.retry_threshold = 1;
    limits.handshake_timeout = Duration::from_secs(10);
    let mut server = server_with(limits.clone(), None);
    let clients: Vec<Client> = (0..6)
        .map(|_| {
            let mut config = client_config(&server);
            config.limits = limits.clone();
            Client::connect(config).unwrap()
        })
        .collect();
    for client in &clients {
        client.wait_connected(Duration::from_secs(10)).unwrap();
    }
    let end = Instant::now() + Duration::from_secs(5);
    while server.clients().len() < 6 && Instant::now() < end {
        while server.poll_event().is_some() {}
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(server.clients().len(), 6);
    assert!(server.handshakes().refused > 0, "{:?}", server.handshakes());
}

/// The session's side, without a network: a retryable refusal plans a new
/// attempt (no event, no close reason), the restart keeps the first
/// deadline, and once the deadline leaves no time the refusal is final.
/// The configuration of a client that can open new connections, and a
/// server address no packet goes to.
fn retrying() -> (Arc<SessionConfig>, SocketAddr) {
    let mut config = SessionConfig::new(zao_messages::protocol(), Limits::default());
    config.retry = true;
    (Arc::new(config), ([192, 0, 2, 1], 4433).into())
}

#[test]
fn a_refused_session_retries_under_its_first_deadline() {
    let (config, server) = retrying();
    let start = Instant::now();
    let deadline = start + Limits::default().handshake_timeout;
    let mut s = Session::client(config.clone(), server, start);
    let refuse = |s: &mut Session, now: Instant, reason: RefuseReason| {
        s.handle_connected(now, Some(1200));
        let reply = HelloReply::Refused(reason).to_encoded_vec();
        let (header, n) = frame_header(reply.len());
        s.handle_stream_bytes(now, StreamId::CONTROL, &[&header[..n], &reply[..]].concat());
    };

    refuse(&mut s, start, RefuseReason::ServerFull);
    let at = s.poll_retry().expect("a retry planned");
    assert!(
        at > start && at < start + Duration::from_millis(100),
        "{:?}",
        at - start
    );
    assert!(s.close_reason().is_none());
    assert!(s.poll_event().is_none());
    s.restart(at);
    assert_eq!(s.retries(), 1);
    assert!(s.poll_retry().is_none());
    assert_eq!(s.poll_timeout(), Some(deadline));

    // A refusal no retry gets past is final at once.
    refuse(&mut s, at, RefuseReason::Draining);
    assert!(s.poll_retry().is_none());
    assert_eq!(
        s.close_reason(),
        Some(&DisconnectReason::Refused(RefuseReason::Draining))
    );
    assert!(matches!(
        s.poll_event(),
        Some(SessionEvent::Closed(DisconnectReason::Refused(
            RefuseReason::Draining
        )))
    ));

    // Near the deadline a full server is final too.
    let mut s = Session::client(config.clone(), server, start);
    refuse(
        &mut s,
        deadline - Duration::from_millis(100),
        RefuseReason::ServerFull,
    );
    assert!(s.poll_retry().is_none());
    assert_eq!(
        s.close_reason(),
        Some(&DisconnectReason::Refused(RefuseReason::ServerFull))
    );

    // A busy server is momentary: retried within the connect deadline.
    let mut s = Session::client(config.clone(), server, start);
    refuse(
        &mut s,
        deadline - Duration::from_millis(100),
        RefuseReason::Busy,
    );
    let at = s.poll_retry().expect("a busy server is tried again");
    s.restart(at);
    assert_eq!(
        s.poll_timeout(),
        Some(at + Limits::default().handshake_timeout)
    );

    // Without `retry` (a driver that cannot reconnect), never.
    let plain = Arc::new(SessionConfig::new(
        zao_messages::protocol(),
        Limits::default(),
    ));
    let mut s = Session::client(plain, server, start);
    refuse(&mut s, start, RefuseReason::ServerFull);
    assert!(s.poll_retry().is_none());
    assert!(s.close_reason().is_some());
}

/// An attempt whose handshake deadline passes is followed by another within
/// the connect deadline; the application's close between attempts ends
/// the retries, and it hears why.
#[test]
fn a_timed_out_attempt_retries_until_the_connect_deadline_and_a_close_ends_it() {
    let (config, server) = retrying();
    let start = Instant::now();
    let limits = Limits::default();
    let mut s = Session::client(config.clone(), server, start);
    assert_eq!(s.connect_deadline(), start + limits.connect_timeout);
    let mut now;
    let mut attempts = 1;
    loop {
        now = s.poll_timeout().expect("an attempt has a deadline");
        s.handle_timeout(now);
        let Some(at) = s.poll_retry() else { break };
        assert!(s.poll_event().is_none(), "no event between attempts");
        s.restart(at);
        attempts += 1;
    }
    // 10 s attempts within 60 s: six, the last cut at the deadline.
    assert_eq!(attempts, 6);
    assert_eq!(now, start + limits.connect_timeout);
    assert_eq!(s.close_reason(), Some(&DisconnectReason::HandshakeTimedOut));

    // Closed by the application while waiting for the next attempt.
    let mut s = Session::client(config, server, start);
    s.handle_timeout(start + limits.handshake_timeout);
    assert!(s.poll_retry().is_some());
    s.close(zao::proto::CloseCode::Normal, "leaving");
    assert!(s.poll_retry().is_none(), "no attempt after the close");
    assert!(matches!(
        s.poll_event(),
        Some(SessionEvent::Closed(DisconnectReason::Closed { .. }))
    ));
}
