//! Security rows of the test matrix on the simulated network: S1–S6 and
//! S8–S13, C14 at the transport, the slow consumer (close code 5), a full
//! inbound queue, the bounded client waits and the async auth callback.
//! Attackers are raw QUIC peers (`zao::sim::RawPeer`) speaking as much of
//! zao as the attack needs; every run is seeded and on virtual time.
//! S7 (certificate mismatch) needs real TLS verification: it is in
//! `tests/security_loopback.rs`, over real sockets.

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use zao::proto::{
    AuthCallback, AuthError, Channel, ClientEvent, ClientId, CloseCode, ClosedBy, DisconnectReason,
    DuplicateIdentity, Hello, HelloReply, Identity, Limits, Outgoing, Protocol, RefuseReason, Role,
    SendError, ServerEvent, StreamId, Target, frame_header,
};
use zao::sim::quinn_proto::{TransportConfig, VarInt};
use zao::sim::{
    LinkSpec, RawPeer, RawPeerConfig, Sim, SimClient, SimClientConfig, SimServer, SimServerConfig,
};
use zao::{Decode, Encode, NetMessage};
use zao_messages::{PlayerInput, PlayerMoved, SpawnEntity, WorldSnapshot, samples};

const STEP: Duration = Duration::from_millis(10);

fn protocol() -> Protocol {
    zao_messages::protocol()
}

fn sim_with(limits: Limits) -> (Sim, SimServer) {
    sim_with_auth(limits, None)
}

fn sim_with_auth(limits: Limits, auth: Option<AuthCallback>) -> (Sim, SimServer) {
    let mut sim = Sim::new(3);
    let mut config = SimServerConfig::new(protocol());
    config.limits = limits;
    config.auth = auth;
    let server = sim.start_server(config).unwrap();
    (sim, server)
}

fn client(sim: &mut Sim, token: Option<&[u8]>) -> SimClient {
    let mut config = SimClientConfig::new(protocol());
    config.token = token.map(<[u8]>::to_vec);
    sim.connect(config).unwrap()
}

fn events(server: &mut SimServer) -> Vec<ServerEvent> {
    core::iter::from_fn(|| server.poll_event()).collect()
}

fn client_events(client: &mut SimClient) -> Vec<ClientEvent> {
    core::iter::from_fn(|| client.poll_event()).collect()
}

fn framed(payload: &[u8]) -> Vec<u8> {
    let (header, n) = frame_header(payload.len());
    let mut out = header[..n].to_vec();
    out.extend_from_slice(payload);
    out
}

/// `msg` as a message: id, then body.
fn message<M: NetMessage>(msg: &M) -> Vec<u8> {
    // Not `.to_vec()`: `Bytes` is `Encode`, and `Encode::to_vec` would add
    // a length prefix.
    Vec::from(
        &Outgoing::encode(msg, &mut bytes::BytesMut::new())
            .unwrap()
            .message()[..],
    )
}

/// The client's reliable stream, as a raw peer opens it: the channel header
/// (0, the reliable channel), then frames.
fn reliable() -> StreamId {
    StreamId::uni(Role::Client, 0)
}

/// A raw peer's reply to its hello, once it arrived.
fn reply(sim: &Sim, raw: &RawPeer) -> Option<HelloReply> {
    let bytes = raw.received(sim, StreamId::CONTROL);
    let mut r = zao::Reader::new(&bytes);
    let len = r.get_varint().ok()? as usize;
    HelloReply::decode(r.take(len).ok()?).ok()
}

/// A raw peer that says hello and is admitted; its id on the server.
fn admitted(sim: &mut Sim, server: &mut SimServer, config: RawPeerConfig) -> (RawPeer, ClientId) {
    let raw = sim.raw_peer(config).unwrap();
    sim.run_for(Duration::from_millis(100));
    assert!(raw.is_connected(sim), "QUIC handshake");
    let hello = Hello::new(&protocol(), None).to_encoded_vec();
    raw.write(sim, StreamId::CONTROL, &framed(&hello));
    raw.finish(sim, StreamId::CONTROL);
    sim.run_for(Duration::from_millis(100));
    assert!(matches!(reply(sim, &raw), Some(HelloReply::Welcome { .. })));
    let id = events(server)
        .into_iter()
        .find_map(|e| match e {
            ServerEvent::Connected { client, .. } => Some(client),
            _ => None,
        })
        .expect("the server reported the raw peer");
    (raw, id)
}

/// Runs until `raw`'s connection closes, up to `limit`; returns why and when.
fn closed(sim: &mut Sim, raw: &RawPeer, limit: Duration) -> (DisconnectReason, Duration) {
    let end = sim.elapsed() + limit;
    while sim.elapsed() < end {
        if let Some(reason) = raw.close_reason(sim) {
            return (reason, sim.elapsed());
        }
        sim.run_for(STEP);
    }
    panic!("still open after {limit:?}");
}

fn peer_close(code: CloseCode) -> impl Fn(&DisconnectReason) -> bool {
    move |r| matches!(r, DisconnectReason::Closed { by: ClosedBy::Peer, code: c, .. } if *c == code)
}

#[test]
fn s1_a_connection_that_never_says_hello_is_closed_at_the_deadline_and_sent_nothing() {
    let mut limits = Limits::default();
    limits.handshake_timeout = Duration::from_secs(2);
    let (mut sim, server) = sim_with(limits);
    let raw = sim.raw_peer(RawPeerConfig::new()).unwrap();
    let (reason, at) = closed(&mut sim, &raw, Duration::from_secs(5));
    assert!(peer_close(CloseCode::HandshakeTimeout)(&reason), "{reason}");
    assert!(
        at >= Duration::from_secs(2) && at <= Duration::from_millis(2100),
        "closed at {at:?}, deadline 2 s"
    );
    assert_eq!(raw.data_bytes_received(&sim), 0, "no game data");
    assert_eq!(raw.datagrams_received(&sim), 0, "no game data");
    assert_eq!(server.handshakes().pending, 0, "the slot is back");
    assert!(server.clients().is_empty());
}

#[test]
fn s2_a_wrong_protocol_or_token_is_refused_with_a_reason_both_sides_read() {
    let auth: AuthCallback = Arc::new(|request| {
        Box::pin(async move {
            match request.token.as_deref() {
                Some(b"secret") => Ok(Identity::new("alice")),
                _ => Err(AuthError::Rejected("bad token".into())),
            }
        })
    });
    let (mut sim, mut server) = sim_with_auth(Limits::default(), Some(auth));
    // Another protocol: SpawnEntity on another channel.
    let mut other = Protocol::new();
    other
        .add::<PlayerMoved>(Channel::UNRELIABLE, zao::proto::Direction::Both)
        .add::<PlayerInput>(Channel::UNRELIABLE, zao::proto::Direction::ClientToServer)
        .add::<SpawnEntity>(Channel::UNRELIABLE, zao::proto::Direction::Both)
        .add::<WorldSnapshot>(Channel::SNAPSHOT, zao::proto::Direction::ServerToClient)
        .add::<zao_messages::Inventory>(Channel::RELIABLE, zao::proto::Direction::Both);
    let mut wrong = sim.connect(SimClientConfig::new(other)).unwrap();
    let mut bad_token = client(&mut sim, Some(b"guess"));
    let good = client(&mut sim, Some(b"secret"));
    sim.run_for(Duration::from_secs(2));

    let refused = |c: &mut SimClient| match client_events(c).pop() {
        Some(ClientEvent::Disconnected {
            reason: DisconnectReason::Refused(r),
        }) => r,
        other => panic!("{other:?}"),
    };
    let r = refused(&mut wrong);
    assert!(
        matches!(&r, RefuseReason::ProtocolMismatch { detail } if detail.contains("SpawnEntity")),
        "{r}"
    );
    assert_eq!(
        refused(&mut bad_token),
        RefuseReason::Unauthorized {
            detail: "bad token".into()
        }
    );
    assert!(good.is_connected());
    let seen = events(&mut server);
    let server_refusals: Vec<&RefuseReason> = seen
        .iter()
        .filter_map(|e| match e {
            ServerEvent::Refused { reason, .. } => Some(reason),
            _ => None,
        })
        .collect();
    assert_eq!(server_refusals.len(), 2, "{seen:?}");
    assert!(server_refusals.contains(&&r));
    // The identity the callback returned arrives with the connection.
    assert!(seen.iter().any(|e| matches!(
        e,
        ServerEvent::Connected { identity: Some(i), .. } if i.key == "alice"
    )));
    assert_eq!(server.handshakes().pending, 0);
    assert_eq!(server.handshakes().connected, 1);
}

#[test]
fn s3_a_4_gib_frame_closes_the_connection_before_buffering() {
    let (mut sim, mut server) = sim_with(Limits::default());
    let (raw, _) = admitted(&mut sim, &mut server, RawPeerConfig::new());
    // The channel header, then a frame that claims 4 GiB, then some body.
    let mut attack = vec![0x00, 0x80, 0x80, 0x80, 0x80, 0x10];
    attack.extend_from_slice(&[7u8; 1000]);
    raw.write(&mut sim, reliable(), &attack);
    let info = allocation_counter::measure(|| sim.run_for(Duration::from_millis(50)));
    let (reason, _) = closed(&mut sim, &raw, Duration::from_secs(1));
    assert!(
        peer_close(CloseCode::ProtocolViolation)(&reason),
        "{reason}"
    );
    // The claim is refused at its prefix: nothing near the message limit
    // (256 KiB), let alone 4 GiB, is ever reserved for it.
    assert!(
        info.bytes_max < 64 * 1024,
        "peak allocation while handling the claim: {} bytes",
        info.bytes_max
    );
}

#[test]
fn s4_an_oversize_datagram_is_dropped_and_counted() {
    let mut limits = Limits::default();
    limits.max_datagram_payload = 300;
    let (mut sim, mut server) = sim_with(limits);
    let (raw, id) = admitted(&mut sim, &mut server, RawPeerConfig::new());
    let input = message(&samples::player_input());
    // 30 packed inputs: a well-formed datagram of 1 + 30 × 17 bytes.
    let mut big = vec![0x01];
    for _ in 0..30 {
        big.extend_from_slice(&framed(&input));
    }
    assert!(big.len() > 300);
    assert!(raw.send_datagram(&mut sim, Bytes::from(big)));
    sim.run_for(Duration::from_millis(100));
    assert!(
        !events(&mut server)
            .iter()
            .any(|e| matches!(e, ServerEvent::Message { .. }))
    );
    assert_eq!(server.stats(id).unwrap().datagrams_dropped, 1);
    // The connection lives on: a small one arrives.
    let small = [&[0x01][..], &framed(&input)].concat();
    assert!(raw.send_datagram(&mut sim, Bytes::from(small)));
    sim.run_for(Duration::from_millis(100));
    let all = events(&mut server);
    let got: Vec<_> = all
        .iter()
        .filter(|e| matches!(e, ServerEvent::Message { .. }))
        .collect();
    assert_eq!(
        got.len(),
        1,
        "{all:?} {:?} {:?}",
        server.stats(id),
        raw.close_reason(&sim)
    );
    assert!(raw.close_reason(&sim).is_none());
}

#[test]
fn s5_idle_trickling_and_stream_hoarding_connections_are_closed_by_the_silence_timeout() {
    let mut limits = Limits::default();
    limits.silence_timeout = Some(Duration::from_secs(2));
    let (mut sim, mut server) = sim_with(limits);
    // Idle after the handshake.
    let (idle, _) = admitted(&mut sim, &mut server, RawPeerConfig::new());
    let mut heard = vec![sim.elapsed()];
    // Trickle: one byte of a 100-byte frame every 100 ms, never whole.
    let (trickle, _) = admitted(&mut sim, &mut server, RawPeerConfig::new());
    heard.push(sim.elapsed());
    trickle.write(&mut sim, reliable(), &[0x00, 100]);
    // Hoarding: opens its stream and tries more than it may.
    let (hoard, _) = admitted(&mut sim, &mut server, RawPeerConfig::new());
    heard.push(sim.elapsed());
    hoard.write(&mut sim, reliable(), &[0x00]);
    let extra = hoard.write(&mut sim, StreamId::uni(Role::Client, 1), &[0x00]);
    assert_eq!(extra, 0, "QUIC holds a second stream back: one per channel");
    let raws = [idle, trickle, hoard];
    let mut closed_at = [None; 3];
    for _ in 0..40 {
        trickle.write(&mut sim, reliable(), &[1]);
        sim.run_for(Duration::from_millis(100));
        for (raw, at) in raws.iter().zip(&mut closed_at) {
            if at.is_none() && raw.close_reason(&sim).is_some() {
                *at = Some(sim.elapsed());
            }
        }
    }
    for ((raw, at), heard) in raws.iter().zip(closed_at).zip(heard) {
        let reason = raw.close_reason(&sim).expect("closed");
        assert!(peer_close(CloseCode::Silent)(&reason), "{reason}");
        // Each was last heard at its hello, 100 ms before `heard`; the
        // close is seen within the 100 ms step after.
        let after = at.unwrap() - heard;
        assert!(
            after >= Duration::from_millis(1900) && after <= Duration::from_millis(2100),
            "closed {after:?} after its hello was answered (silence 2 s)"
        );
    }
    assert_eq!(server.handshakes().connected, 0);
}

#[test]
fn s6_an_unreliable_flood_is_cut_to_the_rate_then_disconnected() {
    let mut limits = Limits::default();
    limits.receive_rate.messages_per_second = 100;
    limits.receive_rate.burst = 100;
    let (mut sim, mut server) = sim_with(limits);
    let mut flooder = client(&mut sim, None);
    let mut legit = client(&mut sim, None);
    sim.run_for(Duration::from_millis(500));
    let flooder_id = flooder.id().unwrap();
    let legit_id = legit.id().unwrap();
    events(&mut server);
    let mut received = 0;
    let mut closed_at = None;
    let flood_start = sim.elapsed();
    // 1000 messages a second (10x the rate) for up to 10 s, in 10 ms ticks.
    for tick in 0..1000u32 {
        if flooder.is_connected() {
            for _ in 0..10 {
                let _ = flooder.send(Channel::UNRELIABLE, &samples::player_input());
            }
            flooder.flush();
        }
        if tick % 3 == 0 {
            legit
                .send(Channel::UNRELIABLE, &samples::player_input())
                .unwrap();
            legit.flush();
        }
        sim.run_for(STEP);
        for e in events(&mut server) {
            match e {
                ServerEvent::Message { client, .. } if client == flooder_id => received += 1,
                ServerEvent::Disconnected { client, reason } => {
                    assert_eq!(client, flooder_id, "only the flooder is cut");
                    assert_eq!(
                        reason,
                        DisconnectReason::Closed {
                            by: ClosedBy::Local,
                            code: CloseCode::Flooding,
                            reason: "over the receive rate".into()
                        }
                    );
                    closed_at = Some(sim.elapsed());
                }
                _ => {}
            }
        }
        if closed_at.is_some() {
            break;
        }
    }
    let closed_at = closed_at.expect("a sustained flood disconnects");
    // Three one-second windows over twice the rate, then the cut: not
    // before the third window (the first may have begun before the
    // flood), and soon after it.
    let flooded_for = closed_at - flood_start;
    assert!(
        flooded_for >= Duration::from_secs(2) && flooded_for < Duration::from_millis(4500),
        "cut after {flooded_for:?} of flooding"
    );
    // Excess dropped: at most the burst plus the rate over the flood.
    let bound = 100 + 100 * (closed_at.as_secs() + 1);
    assert!(received <= bound, "{received} delivered, bound {bound}");
    assert!(received >= 100, "the rate still gets through: {received}");
    assert!(legit.is_connected());
    assert!(server.stats(legit_id).unwrap().rate_limited == 0);
}

#[test]
fn s13_a_reliable_flood_closes_the_connection_and_no_reliable_message_is_dropped_silently() {
    let mut limits = Limits::default();
    limits.receive_rate.messages_per_second = 100;
    limits.receive_rate.burst = 100;
    let (mut sim, mut server) = sim_with(limits);
    let mut flooder = client(&mut sim, None);
    sim.run_for(Duration::from_millis(500));
    events(&mut server);
    let mut entities = Vec::new();
    let mut close = None;
    let mut next = 0u32;
    for _ in 0..300 {
        // 1000 reliable messages a second.
        for _ in 0..10 {
            let spawn = SpawnEntity {
                entity: next,
                ..samples::spawn_entity()
            };
            if flooder.send(Channel::RELIABLE, &spawn).is_ok() {
                next += 1;
            }
        }
        sim.run_for(STEP);
        for e in events(&mut server) {
            match e {
                ServerEvent::Message { message, .. } => {
                    entities.push(message.decode::<SpawnEntity>().unwrap().entity);
                }
                ServerEvent::Disconnected { reason, .. } => close = Some(reason),
                _ => {}
            }
        }
        if close.is_some() {
            break;
        }
    }
    assert!(
        matches!(
            close,
            Some(DisconnectReason::Closed {
                by: ClosedBy::Local,
                code: CloseCode::Flooding,
                ..
            })
        ),
        "{close:?}"
    );
    // What was delivered is every message up to the close, in order: the
    // excess closed the connection instead of vanishing.
    assert!(!entities.is_empty());
    assert!(
        entities.iter().copied().eq(0..entities.len() as u32),
        "{entities:?}"
    );
    sim.run_for(Duration::from_millis(200));
    let events = client_events(&mut flooder);
    assert!(
        events.iter().any(|e| matches!(
            e,
            ClientEvent::Disconnected {
                reason: DisconnectReason::Closed {
                    by: ClosedBy::Peer,
                    code: CloseCode::Flooding,
                    ..
                }
            }
        )),
        "{events:?}"
    );
}

#[test]
fn s8_a_connection_flood_from_one_address_stays_bounded_and_a_legit_client_connects() {
    let limits = Limits::default();
    // One real address (it answers Retries): its unvalidated handshakes,
    // then its validated ones, each capped.
    let per_ip = limits.max_pending_per_ip + limits.max_clients_per_ip;
    let (mut sim, mut server) = sim_with(limits);
    let attacker: std::net::IpAddr = "10.9.0.1".parse().unwrap();
    let raws: Vec<RawPeer> = (0..1000)
        .map(|port| {
            let mut config = RawPeerConfig::new();
            config.addr = Some(std::net::SocketAddr::new(attacker, 1000 + port));
            sim.raw_peer(config).unwrap()
        })
        .collect();
    let mut legit = None;
    let mut most = 0;
    for i in 0..300 {
        sim.run_for(STEP);
        most = most.max(sim.server_connections());
        if i == 50 {
            legit = Some(client(&mut sim, None));
        }
    }
    let legit = legit.unwrap();
    assert!(
        legit.is_connected(),
        "a legit client gets in during the flood"
    );
    // The server held at most one address's share of handshakes, plus the
    // legit client: memory stays bounded whatever the flood's size.
    assert!(most <= per_ip + 1, "{most} connections held at once");
    let stats = server.handshakes();
    assert!(stats.refused >= 1000 - per_ip as u64, "{stats:?}");
    // Each refused attempt reads why (QUIC's CONNECTION_REFUSED).
    let refused = raws
        .iter()
        .filter(|r| {
            matches!(
                r.close_reason(&sim),
                Some(DisconnectReason::Refused(RefuseReason::Busy))
            )
        })
        .count();
    assert!(refused >= 1000 - per_ip, "{refused} attempts saw a refusal");
    events(&mut server);
}

fn transport(configure: impl FnOnce(&mut TransportConfig)) -> RawPeerConfig {
    let mut t = Limits::default().transport_config(&Protocol::new());
    configure(&mut t);
    let mut config = RawPeerConfig::new();
    config.transport = Arc::new(t);
    config
}

/// Says hello with `config`'s transport and returns the reply.
fn hello_with(sim: &mut Sim, config: RawPeerConfig) -> Option<HelloReply> {
    let raw = sim.raw_peer(config).unwrap();
    sim.run_for(Duration::from_millis(100));
    raw.write(
        sim,
        StreamId::CONTROL,
        &framed(&Hello::new(&protocol(), None).to_encoded_vec()),
    );
    raw.finish(sim, StreamId::CONTROL);
    sim.run_for(Duration::from_millis(100));
    reply(sim, &raw)
}

#[test]
fn s9_peers_without_usable_datagrams_are_refused_at_the_handshake() {
    let (mut sim, _server) = sim_with(Limits::default());
    let none = hello_with(
        &mut sim,
        transport(|t| {
            t.datagram_receive_buffer_size(None);
        }),
    );
    assert_eq!(
        none,
        Some(HelloReply::Refused(RefuseReason::DatagramsTooSmall {
            max: 0,
            required: zao::proto::DATAGRAM_BUDGET as u64
        }))
    );
    let tiny = hello_with(
        &mut sim,
        transport(|t| {
            t.datagram_receive_buffer_size(Some(60));
        }),
    );
    assert!(
        matches!(tiny, Some(HelloReply::Refused(RefuseReason::DatagramsTooSmall { max, .. })) if max < 60),
        "{tiny:?}"
    );
}

/// What one normal client receives while the server broadcasts, with or
/// without a peer with tiny stream windows beside it.
fn broadcast_to_a_normal_client(with_tiny_peer: bool) -> (Vec<u32>, usize, Option<Tiny>) {
    let (mut sim, mut server) = sim_with(Limits::default());
    let mut normal = client(&mut sim, None);
    sim.run_for(Duration::from_millis(200));
    let tiny = with_tiny_peer.then(|| {
        let config = transport(|t| {
            t.stream_receive_window(VarInt::from_u32(64));
            t.receive_window(VarInt::from_u32(64));
        });
        admitted(&mut sim, &mut server, config).0
    });
    events(&mut server);
    let (mut reliable, mut chunks) = (Vec::new(), 0);
    for tick in 0..90u32 {
        server
            .send_snapshot(
                Target::All,
                &WorldSnapshot {
                    tick,
                    ..samples::world_snapshot(1024)
                },
            )
            .unwrap();
        let spawn = SpawnEntity {
            entity: tick,
            ..samples::spawn_entity()
        };
        server.send(Target::All, Channel::RELIABLE, &spawn).unwrap();
        sim.run_for(Duration::from_millis(33));
        for e in client_events(&mut normal) {
            if let ClientEvent::Message { message, .. } = e {
                match message.id() {
                    3 => reliable.push(message.decode::<SpawnEntity>().unwrap().entity),
                    4 => chunks += 1,
                    _ => {}
                }
            }
        }
    }
    sim.run_for(Duration::from_secs(1));
    for e in client_events(&mut normal) {
        if let ClientEvent::Message { message, .. } = e {
            match message.id() {
                3 => reliable.push(message.decode::<SpawnEntity>().unwrap().entity),
                4 => chunks += 1,
                _ => {}
            }
        }
    }
    let tiny = tiny.map(|t| Tiny {
        closed: t.close_reason(&sim),
        received: t.received(&sim, StreamId::uni(Role::Server, 0)).len(),
    });
    (reliable, chunks, tiny)
}

/// How the peer with tiny stream windows ended.
#[derive(Debug)]
struct Tiny {
    closed: Option<DisconnectReason>,
    /// Bytes it received on the server's reliable stream.
    received: usize,
}

#[test]
fn s9_a_peer_with_tiny_stream_windows_changes_no_other_clients_traffic() {
    let alone = broadcast_to_a_normal_client(false);
    let beside = broadcast_to_a_normal_client(true);
    assert_eq!(alone.0, (0..90).collect::<Vec<_>>());
    assert_eq!(beside.0, alone.0, "reliable messages");
    // Chunks are sized for zao's datagram budget, never for the smallest
    // peer: the normal client gets the very same chunks.
    assert_eq!(beside.1, alone.1, "snapshot chunks");
    assert!(alone.1 >= 90 * 14);
    // The tiny-window peer itself is served alone, at its own pace (it
    // receives the reliable stream, as much as its windows let through),
    // or closed as too slow once its backlog fills: nothing else.
    let tiny = beside.2.unwrap();
    println!("S9: the tiny-window peer ended with {tiny:?}");
    match &tiny.closed {
        None => assert!(tiny.received > 0, "{tiny:?}"),
        Some(reason) => assert!(peer_close(CloseCode::TooSlow)(reason), "{tiny:?}"),
    }
}

#[test]
fn s10_address_validation_engages_under_spoofed_attempts_and_a_legit_client_connects() {
    let mut limits = Limits::default();
    limits.max_pending_handshakes = 64;
    limits.max_pending_per_ip = 4;
    limits.retry_threshold = 16;
    let (mut sim, server) = sim_with(limits);
    // Spoofed sources: 200 addresses that never hear back.
    for i in 0..200u32 {
        let mut config = RawPeerConfig::new();
        config.addr = Some(std::net::SocketAddr::from((
            [10, 8, (i >> 8) as u8, i as u8],
            4000,
        )));
        config.down = LinkSpec::blackhole();
        sim.raw_peer(config).unwrap();
    }
    sim.run_for(Duration::from_millis(200));
    let during = server.handshakes();
    assert!(during.retried > 0, "retries engaged: {during:?}");
    assert!(
        during.pending <= 16,
        "spoofers hold at most the retry threshold: {during:?}"
    );
    let legit = client(&mut sim, None);
    sim.run_for(Duration::from_millis(500));
    assert!(
        legit.is_connected(),
        "a validated client gets in: {:?}",
        server.handshakes()
    );
    // The spoofed handshakes end at the deadline and drain; nothing stays.
    sim.run_for(Duration::from_secs(20));
    assert_eq!(server.handshakes().pending, 0);
    assert_eq!(sim.server_connections(), 1);
}

fn alice() -> AuthCallback {
    Arc::new(|request| {
        Box::pin(async move {
            let key =
                String::from_utf8_lossy(request.token.as_deref().unwrap_or_default()).into_owned();
            Ok(Identity::with_data(key, 7u32))
        })
    })
}

#[test]
fn s11_the_same_identity_twice_replaces_the_first_connection_by_default() {
    let (mut sim, mut server) = sim_with_auth(Limits::default(), Some(alice()));
    let mut first = client(&mut sim, Some(b"alice"));
    sim.run_for(Duration::from_millis(300));
    let first_id = first.id().unwrap();
    // The same token again: the same identity (a reconnect, or a replay).
    let second = client(&mut sim, Some(b"alice"));
    sim.run_for(Duration::from_millis(300));
    assert!(second.is_connected());
    assert!(client_events(&mut first).iter().any(|e| matches!(
        e,
        ClientEvent::Disconnected {
            reason: DisconnectReason::Closed {
                by: ClosedBy::Peer,
                code: CloseCode::Replaced,
                ..
            }
        }
    )));
    let seen = events(&mut server);
    assert!(seen.iter().any(|e| matches!(
        e,
        ServerEvent::Disconnected { client, .. } if *client == first_id
    )));
    assert_eq!(server.clients(), vec![second.id().unwrap()]);
    let identity = server.identity(second.id().unwrap()).unwrap();
    assert_eq!(
        (identity.key.as_str(), identity.data::<u32>()),
        ("alice", Some(&7))
    );
    // Nothing leaked: one slot in use.
    assert_eq!(server.handshakes().connected, 1);
}

#[test]
fn s11_the_same_identity_twice_is_refused_when_the_server_keeps_the_first() {
    let mut limits = Limits::default();
    limits.duplicate_identity = DuplicateIdentity::RefuseNew;
    limits.max_clients = 2;
    let (mut sim, mut server) = sim_with_auth(limits, Some(alice()));
    let first = client(&mut sim, Some(b"alice"));
    sim.run_for(Duration::from_millis(300));
    let mut second = client(&mut sim, Some(b"alice"));
    sim.run_for(Duration::from_millis(300));
    assert!(first.is_connected());
    assert!(client_events(&mut second).iter().any(|e| matches!(
        e,
        ClientEvent::Disconnected {
            reason: DisconnectReason::Refused(RefuseReason::AlreadyConnected)
        }
    )));
    // The refused attempt took no slot: another player still fits.
    let bob = client(&mut sim, Some(b"bob"));
    sim.run_for(Duration::from_millis(300));
    assert!(bob.is_connected());
    assert_eq!(server.handshakes().connected, 2);
    events(&mut server);
}

#[test]
fn s12_a_trickled_hello_and_a_stalled_tls_flight_end_at_the_handshake_deadline() {
    let mut limits = Limits::default();
    limits.handshake_timeout = Duration::from_secs(3);
    let (mut sim, server) = sim_with(limits);
    // Hello trickled one byte per second.
    let trickle = sim.raw_peer(RawPeerConfig::new()).unwrap();
    // TLS stalled: nothing from the client after its first flight.
    let mut stalled = RawPeerConfig::new();
    stalled.up.blackholes = vec![Duration::from_millis(1)..Duration::from_secs(3600)];
    let stalled_peer = sim.raw_peer(stalled).unwrap();
    sim.run_for(Duration::from_millis(100));
    assert_eq!(server.handshakes().pending, 2);
    let hello = framed(&Hello::new(&protocol(), None).to_encoded_vec());
    for byte in hello.iter().take(3) {
        trickle.write(&mut sim, StreamId::CONTROL, &[*byte]);
        sim.run_for(Duration::from_millis(930));
    }
    // Both accepted within the first 100 ms: the deadline falls in
    // 3.0-3.1 s, and before it neither is closed.
    assert!(
        sim.elapsed() < Duration::from_secs(3),
        "{:?}",
        sim.elapsed()
    );
    assert_eq!(trickle.close_reason(&sim), None);
    assert_eq!(stalled_peer.close_reason(&sim), None);
    for peer in [&trickle, &stalled_peer] {
        let (reason, at) = closed(&mut sim, peer, Duration::from_secs(2));
        assert!(peer_close(CloseCode::HandshakeTimeout)(&reason), "{reason}");
        assert!(
            at >= Duration::from_secs(3) && at <= Duration::from_millis(3200),
            "{at:?}"
        );
    }
    sim.run_for(Duration::from_millis(300));
    assert_eq!(server.handshakes().pending, 0, "both handshakes ended");
}

#[test]
fn c14_an_unknown_message_id_disconnects_the_peer_on_a_stream_and_in_a_datagram() {
    let (mut sim, mut server) = sim_with(Limits::default());
    let (on_stream, _) = admitted(&mut sim, &mut server, RawPeerConfig::new());
    let unknown = [0xe7, 0x07, 1, 2, 3]; // id 999, a body
    on_stream.write(
        &mut sim,
        reliable(),
        &[&[0x00][..], &framed(&unknown)].concat(),
    );
    let (reason, _) = closed(&mut sim, &on_stream, Duration::from_secs(1));
    assert!(
        peer_close(CloseCode::ProtocolViolation)(&reason),
        "{reason}"
    );

    let (in_datagram, _) = admitted(&mut sim, &mut server, RawPeerConfig::new());
    let datagram = [&[0x01][..], &framed(&unknown)].concat();
    assert!(in_datagram.send_datagram(&mut sim, Bytes::from(datagram)));
    let (reason, _) = closed(&mut sim, &in_datagram, Duration::from_secs(1));
    assert!(
        peer_close(CloseCode::ProtocolViolation)(&reason),
        "{reason}"
    );
    // A message the server may not receive (a snapshot from a client).
    let (misdirected, _) = admitted(&mut sim, &mut server, RawPeerConfig::new());
    let snapshot = message(&samples::world_snapshot(2));
    misdirected.write(
        &mut sim,
        reliable(),
        &[&[0x00][..], &framed(&snapshot)].concat(),
    );
    let (reason, _) = closed(&mut sim, &misdirected, Duration::from_secs(1));
    assert!(
        peer_close(CloseCode::ProtocolViolation)(&reason),
        "{reason}"
    );
}

#[test]
fn max_clients_is_enforced_with_a_reason() {
    let mut limits = Limits::default();
    limits.max_clients = 2;
    let (mut sim, _server) = sim_with(limits);
    let a = client(&mut sim, None);
    let b = client(&mut sim, None);
    let mut c = client(&mut sim, None);
    // A full server is retried within the first attempt's handshake
    // deadline, then named.
    sim.run_for(Limits::default().handshake_timeout + Duration::from_millis(500));
    assert!(a.is_connected() && b.is_connected());
    assert!(client_events(&mut c).iter().any(|e| matches!(
        e,
        ClientEvent::Disconnected {
            reason: DisconnectReason::Refused(RefuseReason::ServerFull)
        }
    )));
}

#[test]
fn a_client_too_slow_for_a_reliable_broadcast_is_closed_with_code_5_and_others_get_everything() {
    let (mut sim, mut server) = sim_with(Limits::default());
    let mut fast = client(&mut sim, None);
    let slow = client(&mut sim, None);
    sim.run_for(Duration::from_millis(300));
    let slow_id = slow.id().unwrap();
    // The slow client stops acknowledging anything.
    sim.set_links(slow.node(), LinkSpec::blackhole(), LinkSpec::blackhole());
    events(&mut server);
    let big = zao_messages::samples::inventory(1000);
    let mut closed = None;
    let mut got = 0;
    for _ in 0..200 {
        // 17 KB a tick to everyone.
        server.send(Target::All, Channel::RELIABLE, &big).unwrap();
        sim.run_for(Duration::from_millis(16));
        got += client_events(&mut fast)
            .iter()
            .filter(|e| matches!(e, ClientEvent::Message { .. }))
            .count();
        for e in events(&mut server) {
            if let ServerEvent::Disconnected { client, reason } = e {
                closed = Some((client, reason));
            }
        }
    }
    sim.run_for(Duration::from_secs(1));
    got += client_events(&mut fast)
        .iter()
        .filter(|e| matches!(e, ClientEvent::Message { .. }))
        .count();
    let (client, reason) = closed.expect("the slow client was closed");
    assert_eq!(client, slow_id);
    assert!(
        matches!(
            reason,
            DisconnectReason::Closed {
                by: ClosedBy::Local,
                code: CloseCode::TooSlow,
                ..
            }
        ),
        "{reason}"
    );
    assert_eq!(got, 200, "the fast client got every broadcast");
}

#[test]
fn a_full_inbound_queue_holds_reliable_messages_back_and_drops_datagrams_counted() {
    let mut limits = Limits::default();
    limits.inbound_queue = 8 * 1024;
    let (mut sim, mut server) = sim_with(limits);
    let mut sender = client(&mut sim, None);
    sim.run_for(Duration::from_millis(300));
    let id = sender.id().unwrap();
    events(&mut server);
    // The application does not poll for 3 s while the client sends 500
    // messages a second (within its rate) of 1.7 kB each.
    let mut sent = 0u32;
    let mut refused = 0;
    for _ in 0..300 {
        for _ in 0..5 {
            let inventory = zao_messages::Inventory {
                owner: sent,
                ..samples::inventory(128)
            };
            match sender.send(Channel::RELIABLE, &inventory) {
                Ok(()) => sent += 1,
                Err(SendError::QueueFull) => refused += 1,
                Err(e) => panic!("{e}"),
            }
        }
        sender
            .send(Channel::UNRELIABLE, &samples::player_input())
            .unwrap();
        sender.flush();
        sim.run_for(STEP);
    }
    assert!(refused > 0, "back-pressure reached the sender");
    assert!(
        server.stats(id).unwrap().datagrams_dropped > 0,
        "datagrams dropped, counted"
    );
    // The application polls again: every reliable message accepted by
    // `send` arrives, in order.
    let mut entities = Vec::new();
    for _ in 0..2000 {
        sim.run_for(STEP);
        for e in events(&mut server) {
            if let ServerEvent::Message { message, .. } = e
                && message.id() == zao_messages::Inventory::ID
            {
                entities.push(message.decode::<zao_messages::Inventory>().unwrap().owner);
            }
        }
        if entities.len() as u32 == sent {
            break;
        }
    }
    assert_eq!(entities, (0..sent).collect::<Vec<_>>());
    assert!(sender.is_connected());
}

/// Messages already received but held back by a full inbound queue are
/// delivered as soon as the application makes room, not at the session's
/// next timer (up to a second later).
#[test]
fn held_back_messages_follow_as_soon_as_the_application_makes_room() {
    let mut limits = Limits::default();
    limits.inbound_queue = 1024;
    let (mut sim, mut server) = sim_with(limits);
    let mut sender = client(&mut sim, None);
    sim.run_for(Duration::from_millis(300));
    events(&mut server);
    // 60 spawns of about 50 bytes: all in the server's hands within a few
    // packets, far more than the 1 KiB queue takes.
    for entity in 0..60 {
        sender
            .send(
                Channel::RELIABLE,
                &SpawnEntity {
                    entity,
                    ..samples::spawn_entity()
                },
            )
            .unwrap();
    }
    sim.run_for(Duration::from_millis(200));
    // The application polls every 10 ms from now on.
    let start = sim.elapsed();
    let mut got = Vec::new();
    while got.len() < 60 && sim.elapsed() - start < Duration::from_secs(5) {
        for e in events(&mut server) {
            if let ServerEvent::Message { message, .. } = e {
                got.push(message.decode::<SpawnEntity>().unwrap().entity);
            }
        }
        sim.run_for(STEP);
    }
    let took = sim.elapsed() - start;
    assert_eq!(got, (0..60).collect::<Vec<_>>());
    // A poll takes about 20 messages; three polls, and a step each.
    assert!(
        took <= Duration::from_millis(100),
        "held-back messages waited {took:?}"
    );
}

#[test]
fn invalid_limits_are_refused_before_anything_starts() {
    let mut sim = Sim::new(1);
    let mut limits = Limits::default();
    limits.silence_timeout = Some(Duration::ZERO);
    let mut config = SimClientConfig::new(protocol());
    config.limits = limits.clone();
    assert!(matches!(
        sim.connect(config),
        Err(zao::quic::StartError::Limits(
            zao::proto::LimitsError::Zero("silence_timeout")
        ))
    ));
    let mut config = SimServerConfig::new(protocol());
    config.limits = limits;
    assert!(sim.start_server(config).is_err());
}

#[test]
fn a_client_whose_handshake_never_finishes_ends_at_its_deadline() {
    let mut limits = Limits::default();
    limits.handshake_timeout = Duration::from_secs(2);
    // Each attempt has 2 s, all of them 5 s: attempts at 0, 2 and 4 s,
    // the last cut short by the connect deadline.
    limits.connect_timeout = Duration::from_secs(5);
    let (mut sim, _server) = sim_with(limits.clone());
    // QUIC connects (its flights take 10 ms each way); then the server's
    // answer to the hello never arrives.
    let mut config = SimClientConfig::new(protocol());
    config.limits = limits;
    config.up = LinkSpec::latency(Duration::from_millis(10));
    config.down = LinkSpec::latency(Duration::from_millis(10));
    config.down.blackholes = vec![Duration::from_millis(25)..Duration::from_secs(3600)];
    let mut stuck = sim.connect(config).unwrap();
    let mut ended = None;
    let start = sim.now();
    while sim.elapsed() < Duration::from_secs(7) && ended.is_none() {
        sim.run_for(STEP);
        ended = client_events(&mut stuck).into_iter().find_map(|e| match e {
            ClientEvent::Disconnected { reason } => Some((reason, sim.elapsed())),
            _ => None,
        });
    }
    let (reason, at) = ended.expect("never connected nor disconnected");
    assert_eq!(reason, DisconnectReason::HandshakeTimedOut);
    assert_eq!(stuck.connect_deadline() - start, Duration::from_secs(5));
    assert!(
        at >= Duration::from_secs(5) && at <= Duration::from_millis(5050),
        "{at:?}"
    );
    assert_eq!(stuck.retries(), 2, "a new attempt after each deadline");
}

#[test]
fn an_auth_callback_that_never_answers_refuses_the_client_at_the_deadline() {
    let mut limits = Limits::default();
    limits.handshake_timeout = Duration::from_secs(2);
    let never: AuthCallback = Arc::new(|_| Box::pin(core::future::pending()));
    let (mut sim, server) = sim_with_auth(limits.clone(), Some(never));
    let mut config = SimClientConfig::new(protocol());
    config.limits = limits;
    // One attempt: the server's deadline ends it.
    config.limits.connect_timeout = config.limits.handshake_timeout;
    let mut c = sim.connect(config).unwrap();
    sim.run_for(Duration::from_millis(2100));
    assert!(client_events(&mut c).iter().any(|e| matches!(
        e,
        ClientEvent::Disconnected {
            reason: DisconnectReason::HandshakeTimedOut
        }
    )));
    assert_eq!(server.handshakes().pending, 0);
    assert_eq!(server.handshakes().connected, 0);
}
