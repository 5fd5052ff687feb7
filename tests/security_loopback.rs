//! Security rows that need real sockets and real TLS verification: S7
//! (a certificate hash mismatch) and, as a check of the quinn driver
//! around the sessions that tests/security.rs attacks on the simulated
//! network, S1 (no hello) and S2 (a wrong protocol) over loopback QUIC,
//! and S11 with a slow auth callback (the simulation skips the callback of
//! a closed session, so only real time shows the race).

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::time::{Duration, Instant};

use std::sync::Arc;

use common::net::{client_config, server_with, wait_client, wait_server};
use zao::proto::{Channel, Direction, Protocol, RefuseReason, WaitError};
use zao::quic::quinn;
use zao::quic::{
    AuthCallback, Certificate, Client, ClientConfig, ClientEvent, CloseCode, ClosedBy,
    DisconnectReason, Identity, Limits, Server, ServerConfig, ServerEvent,
};
use zao_messages::{PlayerMoved, SpawnEntity};

#[test]
fn s7_a_certificate_hash_mismatch_aborts_with_a_clear_error() {
    let server = server_with(Limits::default(), None);
    let wrong = Certificate::self_signed(&["localhost"]).unwrap().sha256();
    let config = ClientConfig::pinned(server.local_addr(), wrong, zao_messages::protocol());
    let client = Client::connect(config).unwrap();
    match client.wait_connected(Duration::from_secs(10)) {
        Err(WaitError::Closed(DisconnectReason::CertificateMismatch {
            expected,
            presented,
        })) => {
            assert_eq!(expected, vec![wrong]);
            assert_eq!(presented, Some(server.certificate_hash()));
            let text = DisconnectReason::CertificateMismatch {
                expected,
                presented,
            }
            .to_string();
            assert!(
                text.contains(&server.certificate_hash().to_string()),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(server.clients().is_empty());
}

#[test]
fn s1_over_loopback_a_connection_without_hello_is_closed_at_the_deadline() {
    let mut limits = Limits::default();
    limits.handshake_timeout = Duration::from_secs(1);
    let server = server_with(limits, None);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let config = client_config(&server).quinn_client_config().unwrap();
    let addr = server.local_addr();
    let (err, took) = rt.block_on(async move {
        let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        endpoint.set_default_client_config(config);
        let conn = endpoint.connect(addr, "localhost").unwrap().await.unwrap();
        let start = Instant::now();
        let err = tokio::time::timeout(Duration::from_secs(5), conn.closed())
            .await
            .unwrap();
        (err, start.elapsed())
    });
    match err {
        quinn::ConnectionError::ApplicationClosed(close) => {
            assert_eq!(
                CloseCode::from_wire(close.error_code.into_inner()),
                CloseCode::HandshakeTimeout
            );
        }
        other => panic!("{other}"),
    }
    assert!(took < Duration::from_millis(1500), "{took:?}");
}

#[test]
fn s2_over_loopback_a_wrong_protocol_is_refused_with_the_message_named() {
    let mut server = server_with(Limits::default(), None);
    let mut other = Protocol::new();
    other
        .add::<PlayerMoved>(Channel::UNRELIABLE, Direction::Both)
        .add::<SpawnEntity>(Channel::UNRELIABLE, Direction::Both);
    let mut config = client_config(&server);
    config.protocol = other;
    let client = Client::connect(config).unwrap();
    match client.wait_connected(Duration::from_secs(10)) {
        Err(WaitError::Closed(DisconnectReason::Refused(RefuseReason::ProtocolMismatch {
            detail,
        }))) => {
            assert!(
                detail.contains("PlayerInput") || detail.contains("SpawnEntity"),
                "{detail}"
            );
        }
        other => panic!("{other:?}"),
    }
    let refused = wait_server(&mut server, Duration::from_secs(5), |e| {
        matches!(e, ServerEvent::Refused { .. })
    });
    assert!(refused.is_some());
}

/// A connection that closes while its authentication runs must not take the
/// identity from the live connection that holds it: a third login with the
/// same identity still replaces the live one (the default policy).
#[test]
fn s11_a_connection_closed_during_its_auth_leaves_the_identity_to_the_live_one() {
    // "alice" answers at once; "alice-slow" is alice too, a second later.
    let auth: AuthCallback = Arc::new(|request| {
        Box::pin(async move {
            let token = request.token.unwrap_or_default();
            if token == b"alice-slow" {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Ok(Identity::new("alice"))
        })
    });
    let mut config = ServerConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        Certificate::self_signed(&["localhost"]).unwrap(),
        zao_messages::protocol(),
    );
    config.auth = Some(auth);
    let mut server = Server::start(config).unwrap();
    let login = |server: &Server, token: &[u8]| {
        let mut config = client_config(server);
        config.token = Some(token.to_vec());
        Client::connect(config).unwrap()
    };

    let mut live = login(&server, b"alice");
    let live_id = live.wait_connected(Duration::from_secs(10)).unwrap();
    // The slow login's hello reaches the server and its auth starts; then
    // it leaves, and its auth answers after it closed.
    let slow = login(&server, b"alice-slow");
    let start = Instant::now();
    while server.handshakes().pending + server.handshakes().connected < 2
        && start.elapsed() < Duration::from_secs(5)
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(200));
    drop(slow);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(live.is_connected());

    // A third login as alice is a duplicate of the live connection.
    let third = login(&server, b"alice");
    let third_id = third.wait_connected(Duration::from_secs(10)).unwrap();
    let replaced = wait_client(&mut live, Duration::from_secs(5), |e| {
        matches!(
            e,
            ClientEvent::Disconnected {
                reason: DisconnectReason::Closed {
                    by: ClosedBy::Peer,
                    code: CloseCode::Replaced,
                    ..
                }
            }
        )
    });
    assert!(
        replaced.is_some(),
        "the live alice ({live_id}) was not replaced"
    );
    let start = Instant::now();
    while server.clients() != vec![third_id] && start.elapsed() < Duration::from_secs(5) {
        while server.poll_event().is_some() {}
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(server.clients(), vec![third_id]);
    assert_eq!(server.handshakes().connected, 1);
}
