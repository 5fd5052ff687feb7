//! A graceful drain on the simulated network (docs/FLEET.md): the server
//! stops admitting, every reliable message queued for a client before the
//! drain arrives, in order on ordered channels and exactly once on
//! unordered ones, and only then the client learns the close and its
//! reason ("server shutting down"). Over every link row, L1–L6, and
//! against the plain close, which loses what is still in flight.

use std::collections::BTreeSet;
use std::time::Duration;

use zao::proto::{
    Channel, ChannelKind, ClientEvent, ClientId, CloseCode, ClosedBy, Direction, DisconnectReason,
    Limits, Protocol, RefuseReason, ServerEvent, Target,
};
use zao::sim::{LinkSpec, Sim, SimClient, SimClientConfig, SimServerConfig};
use zao::{Decode, Encode, NetMessage};

const STEP: Duration = Duration::from_millis(5);
const CLIENTS: usize = 4;
/// Messages of each reliable kind queued for every client when the drain
/// starts: tens of kilobytes, several round trips of a congestion window.
const QUEUED: u32 = 400;
const REASON: &str = "server shutting down";

/// An ordered game event (a chat line, a score change).
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 30)]
struct Event {
    seq: u32,
    text: String,
}

/// A reward: must arrive, order does not matter.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 31)]
struct Reward {
    seq: u32,
}

fn protocol() -> (Protocol, Channel, Channel) {
    let mut p = Protocol::new();
    let events = p.add_channel("events", ChannelKind::ReliableOrdered);
    let rewards = p.add_channel("rewards", ChannelKind::ReliableUnordered);
    p.add::<Event>(events, Direction::ServerToClient)
        .add::<Reward>(rewards, Direction::ServerToClient);
    (p, events, rewards)
}

/// What a client got before its connection ended.
#[derive(Debug, Default)]
struct Got {
    events: Vec<u32>,
    rewards: BTreeSet<u32>,
    reward_copies: usize,
    end: Option<DisconnectReason>,
}

/// `CLIENTS` clients over `link`, `QUEUED` messages of each kind queued for
/// each, then the server drains (or, with `graceful` false, closes as a
/// plain stop does). Returns what each client got, and whether the server
/// was drained within the deadline.
fn drain_over(
    link: LinkSpec,
    seed: u64,
    graceful: bool,
    deadline: Duration,
) -> (Vec<Got>, bool, Sim) {
    let (protocol, events, rewards) = protocol();
    let mut sim = Sim::new(seed);
    let mut limits = Limits::default();
    limits.reliable_backlog = 4 << 20;
    let mut config = SimServerConfig::new(protocol.clone());
    config.limits = limits.clone();
    let mut server = sim.start_server(config).unwrap();
    let mut clients: Vec<SimClient> = (0..CLIENTS)
        .map(|_| {
            let mut config = SimClientConfig::new(protocol.clone()).with_link(link.clone());
            config.limits = limits.clone();
            sim.connect(config).unwrap()
        })
        .collect();
    let mut ids: Vec<ClientId> = Vec::new();
    for _ in 0..12_000 {
        sim.run_for(STEP);
        while let Some(e) = server.poll_event() {
            if let ServerEvent::Connected { client, .. } = e {
                ids.push(client);
            }
        }
        for c in &mut clients {
            while c.poll_event().is_some() {}
        }
        if ids.len() == CLIENTS && clients.iter().all(|c| c.is_connected()) {
            break;
        }
    }
    assert_eq!(ids.len(), CLIENTS, "every client connects");

    let text = "x".repeat(64);
    for &id in &ids {
        for seq in 0..QUEUED {
            let event = Event {
                seq,
                text: text.clone(),
            };
            server.send(Target::One(id), events, &event).unwrap();
            server
                .send(Target::One(id), rewards, &Reward { seq })
                .unwrap();
        }
    }
    let deadline = sim.now() + deadline;
    if graceful {
        server.drain(REASON, deadline);
        // Sends after the drain began are refused, as to a gone client.
        assert!(
            server
                .send(Target::One(ids[0]), rewards, &Reward { seq: QUEUED })
                .is_err()
        );
    } else {
        for &id in &ids {
            server.disconnect(id, REASON);
        }
    }

    // A newcomer during the drain is refused as draining.
    let mut late = graceful.then(|| {
        let mut config = SimClientConfig::new(protocol.clone()).with_link(LinkSpec::l1());
        config.limits = limits.clone();
        sim.connect(config).unwrap()
    });
    let mut late_end = None;

    let mut got: Vec<Got> = (0..CLIENTS).map(|_| Got::default()).collect();
    let mut drained_at = None;
    for _ in 0..80_000 {
        sim.run_for(STEP);
        while server.poll_event().is_some() {}
        for (c, got) in clients.iter_mut().zip(&mut got) {
            while let Some(e) = c.poll_event() {
                match e {
                    ClientEvent::Message { channel, message } if channel == events => {
                        got.events.push(message.decode::<Event>().unwrap().seq);
                    }
                    ClientEvent::Message { message, .. } => {
                        let seq = message.decode::<Reward>().unwrap().seq;
                        if !got.rewards.insert(seq) {
                            got.reward_copies += 1;
                        }
                    }
                    ClientEvent::Disconnected { reason } => got.end = Some(reason),
                    _ => {}
                }
            }
        }
        if let Some(late) = &mut late {
            while let Some(e) = late.poll_event() {
                if let ClientEvent::Disconnected { reason } = e {
                    late_end = Some(reason);
                }
            }
        }
        if drained_at.is_none() && server.is_drained() {
            drained_at = Some(sim.now());
        }
        if got.iter().all(|g| g.end.is_some())
            && (late.is_none() || late_end.is_some())
            && (drained_at.is_some() || !graceful)
        {
            break;
        }
    }
    if graceful {
        assert!(
            matches!(
                late_end,
                Some(DisconnectReason::Refused(RefuseReason::Draining))
            ),
            "a client arriving during the drain is refused as draining: {late_end:?}"
        );
    }
    let drained = drained_at.is_some_and(|at| at <= deadline + STEP);
    (got, drained, sim)
}

fn shutting_down(reason: &Option<DisconnectReason>) -> bool {
    matches!(
        reason,
        Some(DisconnectReason::Closed { by: ClosedBy::Peer, code: CloseCode::Normal, reason })
            if reason == REASON
    )
}

#[test]
fn a_drain_delivers_every_queued_reliable_message_then_closes_over_l1_to_l6() {
    let rows = [
        ("L1", LinkSpec::l1()),
        ("L2", LinkSpec::l2()),
        ("L3", LinkSpec::l3()),
        ("L4", LinkSpec::l4()),
        ("L5", LinkSpec::l5()),
        ("L6", LinkSpec::l6()),
    ];
    let all: Vec<u32> = (0..QUEUED).collect();
    // L5 (a quarter of packets lost, a second each way) needs minutes for
    // 400 unordered messages a client, each on a stream of its own.
    let deadline = Duration::from_secs(300);
    for (i, (row, link)) in rows.into_iter().enumerate() {
        let (got, drained, sim) = drain_over(link, 40 + i as u64, true, deadline);
        println!(
            "{row}: every client closed at {:.2} s of virtual time (connecting included), {CLIENTS} clients × {QUEUED} ordered + {QUEUED} unordered",
            sim.elapsed().as_secs_f64()
        );
        assert!(drained, "{row}: the server drained before its deadline");
        for (c, g) in got.iter().enumerate() {
            assert_eq!(
                g.events, all,
                "{row}: client {c} got every ordered message, in order"
            );
            assert_eq!(
                g.rewards.len(),
                QUEUED as usize,
                "{row}: client {c} got every unordered message"
            );
            assert_eq!(g.reward_copies, 0, "{row}: client {c} got each once");
            assert!(
                shutting_down(&g.end),
                "{row}: client {c} was told why: {:?}",
                g.end
            );
        }
    }
}

#[test]
fn a_plain_close_loses_what_is_in_flight_where_a_drain_does_not() {
    // The contrast that shows the drain test can fail: the same queue
    // closed at once over L3 leaves clients short.
    let (got, _, _) = drain_over(LinkSpec::l3(), 7, false, Duration::from_secs(300));
    let delivered: usize = got.iter().map(|g| g.events.len() + g.rewards.len()).sum();
    let queued = CLIENTS * 2 * QUEUED as usize;
    println!("plain close over L3: {delivered} of {queued} messages delivered");
    assert!(
        delivered < queued,
        "a close without a drain drops queued messages"
    );
    assert!(got.iter().all(|g| g.end.is_some()));
}

#[test]
fn a_drain_ends_at_its_deadline_whatever_is_left() {
    // Over L5 four hundred unordered messages take minutes; a 5 s deadline
    // closes every client at it, with the reason, and the server is
    // drained.
    let (got, drained, _) = drain_over(LinkSpec::l5(), 9, true, Duration::from_secs(5));
    let delivered: usize = got.iter().map(|g| g.rewards.len()).sum();
    println!(
        "L5 with a 5 s deadline: {delivered} of {} unordered messages delivered",
        CLIENTS * QUEUED as usize
    );
    assert!(drained, "the server closed every client at the deadline");
    assert!(delivered < CLIENTS * QUEUED as usize);
    assert!(got.iter().all(|g| shutting_down(&g.end)));
}

#[test]
fn a_client_takes_a_finished_ordered_stream_only_after_a_whole_message() {
    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::time::Instant;
    use zao::proto::{HelloReply, Session, SessionConfig, SessionEvent, StreamId, frame_header};

    let config = Arc::new(SessionConfig::new(
        zao_messages::protocol(),
        Limits::default(),
    ));
    let server: SocketAddr = ([192, 0, 2, 1], 4433).into();
    let now = Instant::now();
    let welcomed = || {
        let mut s = Session::client(config.clone(), server, now);
        s.handle_connected(now, Some(1200));
        let reply = HelloReply::Welcome { client_id: 7 }.to_encoded_vec();
        let (header, n) = frame_header(reply.len());
        s.handle_stream_bytes(now, StreamId::CONTROL, &[&header[..n], &reply[..]].concat());
        while s.poll_event().is_some() {}
        assert!(s.is_open());
        s
    };
    let mut message = bytes::BytesMut::new();
    zao::encode_message_to(&zao_messages::samples::spawn_entity(), &mut message);
    let (header, n) = frame_header(message.len());
    // The reliable channel's stream: its header (channel 0), one frame.
    let stream = [&[0u8][..], &header[..n], &message[..]].concat();
    let id = StreamId(3);

    // Finished after a whole message (a draining server): delivered, open.
    let mut s = welcomed();
    s.handle_stream_bytes(now, id, &stream);
    s.handle_stream_finished(now, id);
    assert!(!s.is_closed());
    assert!(matches!(s.poll_event(), Some(SessionEvent::Message { .. })));

    // Finished while the inbound queue is full: whole messages wait for
    // room, then arrive; no violation.
    let mut small = Limits::default();
    small.inbound_queue = message.len();
    let config = Arc::new(SessionConfig::new(zao_messages::protocol(), small));
    let mut s = Session::client(config, server, now);
    s.handle_connected(now, Some(1200));
    let reply = HelloReply::Welcome { client_id: 7 }.to_encoded_vec();
    let (h, hn) = frame_header(reply.len());
    s.handle_stream_bytes(now, StreamId::CONTROL, &[&h[..hn], &reply[..]].concat());
    while s.poll_event().is_some() {}
    let three = [
        &[0u8][..],
        &header[..n],
        &message[..],
        &header[..n],
        &message[..],
        &header[..n],
        &message[..],
    ]
    .concat();
    s.handle_stream_bytes(now, id, &three);
    s.handle_stream_finished(now, id);
    assert!(!s.is_closed(), "{:?}", s.close_reason());
    let mut got = 0;
    for _ in 0..8 {
        while let Some(e) = s.poll_event() {
            got += usize::from(matches!(e, SessionEvent::Message { .. }));
        }
        // The driver's call once the application made room.
        s.handle_timeout(now);
    }
    assert_eq!(got, 3, "every message once there was room");
    assert!(!s.is_closed(), "{:?}", s.close_reason());

    // Finished inside a message: a protocol violation.
    let mut s = welcomed();
    s.handle_stream_bytes(now, id, &stream[..stream.len() - 3]);
    s.handle_stream_finished(now, id);
    assert!(
        matches!(
            s.close_reason(),
            Some(DisconnectReason::Closed {
                code: CloseCode::ProtocolViolation,
                ..
            })
        ),
        "{:?}",
        s.close_reason()
    );
}
