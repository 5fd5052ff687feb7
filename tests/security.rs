//! Security rows of the test matrix over real loopback QUIC: S1 (never
//! finishes the handshake), S2 (wrong protocol or token), S3 (4 GiB frame),
//! S4 (oversize datagram), S5 (idle, trickle, stream hoarding), S7
//! (certificate mismatch), and C14 at the transport (unknown message id).
//! Misbehaving peers are raw quinn connections speaking as much of zao as
//! the attack needs.

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::net::{client_config, connect, connect_default, server_with, wait_client, wait_server};
use zao::proto::{
    Channel, Direction, Hello, HelloReply, PROTOCOL_MAGIC, Protocol, RefuseReason, frame_header,
};
use zao::quic::quinn::{self, ConnectionError};
use zao::quic::{
    Certificate, Client, ClientConfig, ClientEvent, ClientId, DisconnectReason, Limits, Server,
    ServerConfig, ServerEvent, Side, Target,
};
use zao::{Decode, Encode};
use zao_messages::{Inventory, PlayerInput, PlayerMoved, SpawnEntity, WorldSnapshot, samples};

/// A bare QUIC connection to a zao server, on a runtime of its own.
struct Raw {
    rt: tokio::runtime::Runtime,
    _endpoint: quinn::Endpoint,
    conn: quinn::Connection,
}

fn raw_connect(server: &Server) -> Raw {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let config = client_config(server).quinn_client_config().unwrap();
    let addr = server.local_addr();
    let (endpoint, conn) = rt.block_on(async move {
        let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        endpoint.set_default_client_config(config);
        let conn = endpoint.connect(addr, "localhost").unwrap().await.unwrap();
        (endpoint, conn)
    });
    Raw {
        rt,
        _endpoint: endpoint,
        conn,
    }
}

/// A raw connection that completed zao's handshake and that the server
/// reported as connected, with the id it got.
fn admitted(server: &mut Server) -> (Raw, ClientId) {
    let raw = raw_connect(server);
    assert!(matches!(
        raw.handshake(&zao_messages::protocol()),
        HelloReply::Welcome { .. }
    ));
    let Some(ServerEvent::Connected { client, .. }) =
        wait_server(server, Duration::from_secs(5), |e| {
            matches!(e, ServerEvent::Connected { .. })
        })
    else {
        panic!("the server never reported the raw client");
    };
    (raw, client)
}

/// `PlayerInput` framed as a message (`id + body`).
fn input_message() -> Vec<u8> {
    let mut buf = vec![0u8; 64];
    let n = zao::encode_message(&samples::player_input(), &mut buf).unwrap();
    buf.truncate(n);
    buf
}

fn framed(payload: &[u8]) -> Vec<u8> {
    let (header, n) = frame_header(payload.len());
    let mut out = header[..n].to_vec();
    out.extend_from_slice(payload);
    out
}

impl Raw {
    /// Sends a hello for `protocol` and returns the server's reply.
    fn handshake(&self, protocol: &Protocol) -> HelloReply {
        let hello = Hello {
            magic: PROTOCOL_MAGIC,
            version: env!("CARGO_PKG_VERSION").to_owned(),
            protocol_hash: protocol.hash(),
            messages: protocol.entries().to_vec(),
            token: None,
        };
        self.rt.block_on(async {
            let (mut send, mut recv) = self.conn.open_bi().await.unwrap();
            send.write_all(&framed(&hello.to_vec())).await.unwrap();
            send.finish().unwrap();
            let reply = recv.read_to_end(64 * 1024).await.unwrap();
            let mut r = zao::Reader::new(&reply);
            let len = r.get_varint().unwrap() as usize;
            HelloReply::decode(r.take(len).unwrap()).unwrap()
        })
    }

    /// Waits for the connection to close; returns why, and how long it took.
    fn closed_within(&self, limit: Duration) -> (ConnectionError, Duration) {
        let start = Instant::now();
        let err = self
            .rt
            .block_on(async { tokio::time::timeout(limit, self.conn.closed()).await })
            .unwrap_or_else(|_| panic!("still open after {limit:?}"));
        (err, start.elapsed())
    }
}

fn app_close(err: &ConnectionError) -> (u64, String) {
    match err {
        ConnectionError::ApplicationClosed(c) => (
            c.error_code.into_inner(),
            String::from_utf8_lossy(&c.reason).into_owned(),
        ),
        other => panic!("expected an application close, got {other}"),
    }
}

#[test]
fn s1_a_connection_that_never_says_hello_is_closed_at_the_deadline_and_sent_nothing() {
    let limits = Limits {
        handshake_timeout: Duration::from_secs(1),
        ..Limits::default()
    };
    let mut server = server_with(limits, None);
    let (mut legit, _) = connect_default(&mut server);
    let raw = raw_connect(&server);
    // Game data flows to every *authenticated* client meanwhile.
    for tick in 0..20 {
        server
            .send_snapshot(
                Target::All,
                &WorldSnapshot {
                    tick,
                    ..samples::world_snapshot(8)
                },
            )
            .unwrap();
        server
            .send(Target::All, Channel::Reliable, &samples::spawn_entity())
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    let (err, after) = raw.closed_within(Duration::from_secs(5));
    assert_eq!(app_close(&err).0, 3, "handshake timeout code: {err}");
    assert!(after < Duration::from_secs(3), "closed after {after:?}");
    // It was sent nothing: no stream, no datagram.
    let got_stream = raw
        .rt
        .block_on(async { raw.conn.accept_uni().await.is_ok() });
    assert!(!got_stream, "an unauthenticated connection got a stream");
    assert!(
        raw.rt
            .block_on(async { raw.conn.read_datagram().await.is_err() })
    );
    assert_eq!(server.clients().len(), 1, "only the legit client");
    assert!(
        wait_client(&mut legit, Duration::from_secs(2), |e| matches!(
            e,
            ClientEvent::Message { .. }
        ))
        .is_some()
    );
}

#[test]
fn s2_a_wrong_protocol_or_token_is_refused_with_a_reason_both_sides_read() {
    // Protocol: the client lacks Inventory and moves SpawnEntity to unreliable.
    let mut server = server_with(Limits::default(), None);
    let mut theirs = Protocol::new();
    theirs
        .add::<PlayerMoved>(Channel::Unreliable, Direction::Both)
        .add::<PlayerInput>(Channel::Unreliable, Direction::ClientToServer)
        .add::<SpawnEntity>(Channel::Unreliable, Direction::Both)
        .add::<WorldSnapshot>(Channel::Snapshot, Direction::ServerToClient);
    let config = ClientConfig {
        protocol: theirs,
        ..client_config(&server)
    };
    let mut client = Client::connect(config).unwrap();
    let reason = client.wait_connected(Duration::from_secs(10)).unwrap_err();
    let DisconnectReason::Refused(RefuseReason::ProtocolMismatch { detail }) = &reason else {
        panic!("{reason}");
    };
    assert!(
        detail.contains("SpawnEntity") && detail.contains("id 3"),
        "{detail}"
    );
    let seen = wait_server(&mut server, Duration::from_secs(5), |e| {
        matches!(e, ServerEvent::Refused { .. })
    });
    match seen {
        Some(ServerEvent::Refused {
            reason: RefuseReason::ProtocolMismatch { detail: d },
            ..
        }) => assert_eq!(&d, detail),
        other => panic!("{other:?}"),
    }
    assert!(server.clients().is_empty());

    // Tokens: an auth callback that knows one good token and one expired one.
    let cert = Certificate::self_signed(&["localhost"]).unwrap();
    let mut config = ServerConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        cert,
        zao_messages::protocol(),
    );
    config.auth = Some(Arc::new(|req: &zao::quic::AuthRequest<'_>| {
        match req.token {
            Some(b"letmein") => Ok(()),
            Some(b"old") => Err("token expired".to_owned()),
            _ => Err("unknown token".to_owned()),
        }
    }));
    let mut server = Server::start(config).unwrap();
    for (token, want) in [
        (Some(&b"nope"[..]), "unknown token"),
        (Some(b"old"), "token expired"),
        (None, "unknown token"),
    ] {
        let config = ClientConfig {
            token: token.map(<[u8]>::to_vec),
            ..client_config(&server)
        };
        let mut client = Client::connect(config).unwrap();
        match client.wait_connected(Duration::from_secs(10)) {
            Err(DisconnectReason::Refused(RefuseReason::Unauthorized { detail })) => {
                assert_eq!(detail, want)
            }
            other => panic!("{other:?}"),
        }
        let seen = wait_server(&mut server, Duration::from_secs(5), |e| {
            matches!(e, ServerEvent::Refused { .. })
        });
        assert!(
            matches!(
                seen,
                Some(ServerEvent::Refused {
                    reason: RefuseReason::Unauthorized { .. },
                    ..
                })
            ),
            "{seen:?}"
        );
    }
    let config = ClientConfig {
        token: Some(b"letmein".to_vec()),
        ..client_config(&server)
    };
    let (_ok, _) = connect(&mut server, config);
    assert_eq!(server.clients().len(), 1);
}

#[test]
fn s3_a_4_gib_frame_closes_the_connection_before_buffering() {
    let mut server = server_with(Limits::default(), None);
    let (raw, _) = admitted(&mut server);
    raw.rt.block_on(async {
        let mut send = raw.conn.open_uni().await.unwrap();
        // Varint 2^32, then a little of the "body".
        send.write_all(&[0x80, 0x80, 0x80, 0x80, 0x10, 1, 2, 3])
            .await
            .unwrap();
    });
    let (err, _) = raw.closed_within(Duration::from_secs(5));
    let (code, reason) = app_close(&err);
    assert_eq!(code, 2, "protocol violation: {reason}");
    assert!(reason.contains("over the"), "{reason}");
    let gone = wait_server(&mut server, Duration::from_secs(5), |e| {
        matches!(e, ServerEvent::Disconnected { .. })
    });
    assert!(gone.is_some());
}

#[test]
fn c14_an_unknown_message_id_disconnects_the_peer() {
    let mut server = server_with(Limits::default(), None);
    let (raw, _) = admitted(&mut server);
    raw.rt.block_on(async {
        let mut send = raw.conn.open_uni().await.unwrap();
        send.write_all(&framed(&[99, 1, 2, 3])).await.unwrap();
    });
    let (err, _) = raw.closed_within(Duration::from_secs(5));
    let (code, reason) = app_close(&err);
    assert_eq!((code, reason.as_str()), (2, "unknown message id 99"));
    let gone = wait_server(&mut server, Duration::from_secs(5), |e| {
        matches!(e, ServerEvent::Disconnected { .. })
    });
    assert!(gone.is_some());
}

#[test]
fn s4_an_oversize_datagram_is_dropped_and_counted() {
    let limits = Limits {
        max_datagram_payload: 500,
        ..Limits::default()
    };
    let mut server = server_with(limits, None);
    let (raw, client) = admitted(&mut server);
    let mut big = vec![0x01, 0x90, 0x07]; // unreliable, one message of 912 bytes
    big.extend(std::iter::repeat_n(0u8, 912));
    let mut small = vec![0x01];
    let input = input_message();
    small.push(input.len() as u8);
    small.extend_from_slice(&input);
    raw.conn.send_datagram(Bytes::from(big)).unwrap();
    raw.conn.send_datagram(Bytes::from(small)).unwrap();
    let got = wait_server(&mut server, Duration::from_secs(5), |e| {
        matches!(e, ServerEvent::Message { .. })
    });
    match got {
        Some(ServerEvent::Message {
            channel: Channel::Unreliable,
            payload,
            ..
        }) => assert_eq!(&payload[..], &input[..]),
        other => panic!("{other:?}"),
    }
    let stats = server.stats(client).unwrap();
    assert_eq!(stats.datagrams_dropped, 1, "{stats:?}");
    assert!(
        raw.conn.close_reason().is_none(),
        "a dropped datagram is not a disconnect"
    );
}

#[test]
fn s5_idle_trickling_and_stream_hoarding_connections_are_closed_by_a_deadline() {
    let silence = Duration::from_secs(1);
    let limits = Limits {
        silence_timeout: Some(silence),
        ..Limits::default()
    };
    let mut server = server_with(limits.clone(), None);
    // A real client stays: it sends heartbeats when it has nothing to say.
    let mut config = client_config(&server);
    config.limits = limits;
    let (mut good, _) = connect(&mut server, config);

    // Idle after auth.
    let idle = raw_connect(&server);
    assert!(matches!(
        idle.handshake(&zao_messages::protocol()),
        HelloReply::Welcome { .. }
    ));
    // Trickling: one byte of a frame at a time, never a whole message.
    let trickle = raw_connect(&server);
    assert!(matches!(
        trickle.handshake(&zao_messages::protocol()),
        HelloReply::Welcome { .. }
    ));
    let dribbler = trickle.rt.spawn({
        let conn = trickle.conn.clone();
        async move {
            let mut send = conn.open_uni().await.unwrap();
            send.write_all(&[100]).await.unwrap(); // a 100-byte frame...
            for _ in 0..100 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                if send.write_all(&[0]).await.is_err() {
                    return;
                }
            }
        }
    });
    // Hoarding: it may open one stream each way; a second waits forever.
    let hoard = raw_connect(&server);
    assert!(matches!(
        hoard.handshake(&zao_messages::protocol()),
        HelloReply::Welcome { .. }
    ));
    let second = hoard.rt.block_on(async {
        let _first = hoard.conn.open_uni().await.unwrap();
        tokio::time::timeout(Duration::from_millis(300), hoard.conn.open_uni()).await
    });
    assert!(second.is_err(), "a second uni stream must not open");
    // The control stream is done, so one bidi stream may open; a second
    // beside it may not.
    let second_bi = hoard.rt.block_on(async {
        let (mut first, _) = hoard.conn.open_bi().await.unwrap();
        first.write_all(b"hold").await.unwrap();
        tokio::time::timeout(Duration::from_millis(300), hoard.conn.open_bi()).await
    });
    assert!(second_bi.is_err(), "a second bidi stream must not open");

    for raw in [&idle, &trickle, &hoard] {
        let (err, _) = raw.closed_within(silence * 4);
        assert_eq!(app_close(&err).0, 7, "silence timeout: {err}");
    }
    drop(dribbler);
    // The well-behaved client outlived them all.
    std::thread::sleep(silence * 2);
    good.send(Channel::Reliable, &samples::inventory(4))
        .unwrap();
    let got = wait_server(
        &mut server,
        Duration::from_secs(5),
        |e| matches!(e, ServerEvent::Message { payload, .. } if zao::split_message(payload).map(|m| m.0) == Ok(<Inventory as zao::Message>::ID)),
    );
    assert!(
        got.is_some(),
        "the heartbeat kept the real client connected"
    );
    assert!(
        wait_client(&mut good, Duration::from_millis(10), |e| matches!(
            e,
            ClientEvent::Disconnected { .. }
        ))
        .is_none()
    );
}

#[test]
fn s7_a_certificate_hash_mismatch_aborts_with_a_clear_error() {
    let server = server_with(Limits::default(), None);
    let wrong = Certificate::self_signed(&["localhost"]).unwrap().sha256();
    let config = ClientConfig::pinned(server.local_addr(), wrong, zao_messages::protocol());
    let mut client = Client::connect(config).unwrap();
    match client.wait_connected(Duration::from_secs(10)) {
        Err(DisconnectReason::CertificateMismatch {
            expected,
            presented,
        }) => {
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

/// Resident memory of this process, from /proc (Linux).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?.to_owned();
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

#[test]
fn s8_a_connection_flood_from_one_address_stays_bounded_and_legit_clients_connect() {
    let limits = Limits {
        max_pending_handshakes: 16,
        handshake_timeout: Duration::from_secs(1),
        ..Limits::default()
    };
    let mut server = server_with(limits, None);
    let before = rss_kib();
    // 1000 connection attempts from one endpoint (one address), none of
    // which ever says hello.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let config = client_config(&server).quinn_client_config().unwrap();
    let addr = server.local_addr();
    let flood = rt.spawn(async move {
        let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        endpoint.set_default_client_config(config);
        let mut attempts = Vec::new();
        for _ in 0..1000 {
            if let Ok(connecting) = endpoint.connect(addr, "localhost") {
                attempts.push(tokio::spawn(async move {
                    match tokio::time::timeout(Duration::from_secs(10), connecting).await {
                        Ok(Ok(conn)) => conn.closed().await,
                        Ok(Err(e)) => e,
                        Err(_) => ConnectionError::TimedOut,
                    }
                }));
            }
        }
        let mut refused_or_closed = 0;
        for a in attempts {
            if a.await.is_ok() {
                refused_or_closed += 1;
            }
        }
        refused_or_closed
    });
    // Meanwhile a real client still gets in.
    std::thread::sleep(Duration::from_millis(200));
    let (_legit, id) = connect_default(&mut server);
    assert_eq!(server.clients(), vec![id]);
    let ended = rt.block_on(flood).unwrap();
    assert_eq!(ended, 1000, "every flood connection was refused or closed");
    let grown = rss_kib().saturating_sub(before);
    println!("S8: process memory grew {grown} KiB over 1000 attempts");
    assert!(grown < 64 * 1024, "memory grew {grown} KiB");
    assert_eq!(
        server.clients(),
        vec![id],
        "no flood connection became a client"
    );
}

#[test]
fn max_clients_is_enforced_with_a_reason() {
    let limits = Limits {
        max_clients: 2,
        ..Limits::default()
    };
    let mut server = server_with(limits, None);
    let (_a, _) = connect_default(&mut server);
    let (_b, _) = connect_default(&mut server);
    let mut third = Client::connect(client_config(&server)).unwrap();
    assert_eq!(
        third.wait_connected(Duration::from_secs(10)),
        Err(DisconnectReason::Refused(RefuseReason::ServerFull))
    );
    assert_eq!(server.clients().len(), 2);
}

#[test]
fn s6_a_flood_at_ten_times_the_rate_is_cut_then_disconnected() {
    let rate = zao::proto::RateLimit {
        messages_per_second: 100,
        burst: 100,
        flood_windows: 2,
    };
    let limits = Limits {
        receive_rate: rate,
        ..Limits::default()
    };
    let mut server = server_with(limits, None);
    let (raw, client) = admitted(&mut server);
    let input = {
        let message = input_message();
        let mut datagram = vec![0x01, message.len() as u8];
        datagram.extend_from_slice(&message);
        Bytes::from(datagram)
    };
    // 1000 messages a second, ten times the limit, for up to 6 s.
    let conn = raw.conn.clone();
    let flood = raw.rt.spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(1));
        for _ in 0..6000 {
            tick.tick().await;
            if conn.send_datagram(input.clone()).is_err() {
                break;
            }
        }
    });
    let started = Instant::now();
    let mut delivered = 0u32;
    let mut reason = None;
    while started.elapsed() < Duration::from_secs(8) {
        match server.poll_event() {
            Some(ServerEvent::Message { .. }) => delivered += 1,
            Some(ServerEvent::Disconnected {
                client: who,
                reason: r,
            }) => {
                assert_eq!(who, client, "the flooder is the one disconnected");
                reason = Some((r, started.elapsed()));
                break;
            }
            Some(_) => {}
            None => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    let (reason, after) = reason.expect("a sustained flood disconnects");
    assert!(
        matches!(
            reason,
            DisconnectReason::Closed {
                by: Side::Local,
                code: 6,
                ..
            }
        ),
        "{reason:?}"
    );
    let (err, _) = raw.closed_within(Duration::from_secs(2));
    assert_eq!(app_close(&err).0, 6, "flooding close code: {err}");
    // Over the ~2-3 s before the cut, about the rate (plus the burst) got through.
    let secs = after.as_secs_f64();
    assert!(
        f64::from(delivered) <= 100.0 * secs + 100.0 + 50.0,
        "{delivered} delivered in {secs:.1} s: the excess was not dropped"
    );
    assert!(
        delivered >= 100,
        "{delivered}: the allowed rate got through"
    );
    println!(
        "S6: {delivered} of ~{} messages delivered in {secs:.1} s, then disconnected",
        (1000.0 * secs) as u32
    );
    drop(flood);
}
