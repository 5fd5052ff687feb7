//! The transport over real loopback QUIC (quinn on tokio, port 0): the
//! handshake, every channel, fan-out, back-pressure and disconnects. The
//! same sessions run on the simulated network in tests/links.rs and
//! tests/security.rs; these check the quinn driver around them.

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::net::{connect_default, server, server_with, wait_client, wait_server};
use zao::NetMessage;
use zao::proto::Channel;
use zao::quic::{
    ClientEvent, CloseCode, ClosedBy, DisconnectReason, Limits, SendError, ServerEvent, Target,
};
use zao_messages::{
    GameMessage, Inventory, PlayerInput, PlayerMoved, SpawnEntity, WorldSnapshot, samples,
};

#[test]
fn every_channel_delivers_on_a_clean_link() {
    let mut server = server();
    let (mut a, id_a) = connect_default(&mut server);
    let (mut b, id_b) = connect_default(&mut server);
    assert_ne!(id_a, id_b);
    assert_eq!(server.clients(), {
        let mut v = vec![id_a, id_b];
        v.sort();
        v
    });

    // Server to clients: reliable in order, unreliable to one, snapshots to all.
    for i in 0..200u32 {
        let mut spawn = samples::spawn_entity();
        spawn.entity = i;
        server.send(Target::All, Channel::RELIABLE, &spawn).unwrap();
    }
    for i in 0..20u32 {
        let moved = PlayerMoved {
            entity: i,
            ..samples::player_moved()
        };
        server
            .send(Target::One(id_a), Channel::UNRELIABLE, &moved)
            .unwrap();
    }
    let snapshot = samples::world_snapshot(1024);
    let mut chunks = 0;
    for tick in 0..3u32 {
        chunks = server
            .send_snapshot(
                Target::All,
                &WorldSnapshot {
                    tick,
                    ..snapshot.clone()
                },
            )
            .unwrap();
    }
    assert!(chunks > 10, "1024 players take many datagrams: {chunks}");
    server.flush();

    // Clients to server.
    a.send(Channel::UNRELIABLE, &samples::player_input())
        .unwrap();
    a.send(Channel::RELIABLE, &samples::inventory(128)).unwrap();
    b.send(Channel::RELIABLE, &samples::spawn_entity()).unwrap();
    a.flush();

    for (client, is_a) in [(&mut a, true), (&mut b, false)] {
        let mut reliable = Vec::new();
        let mut unreliable = 0;
        let mut players: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
        let end = Instant::now() + Duration::from_secs(10);
        // Until everything arrived (the unreliable datagrams go out last,
        // with the flush), or time is up.
        while Instant::now() < end
            && (reliable.len() < 200
                || players.values().map(BTreeSet::len).sum::<usize>() < 3 * 1024
                || (is_a && unreliable < 20))
        {
            match client.poll_event() {
                Some(ClientEvent::Message { channel, message }) => {
                    match (channel, GameMessage::decode(message.message()).unwrap()) {
                        (Channel::RELIABLE, GameMessage::SpawnEntity(s)) => reliable.push(s.entity),
                        (Channel::UNRELIABLE, GameMessage::PlayerMoved(_)) => unreliable += 1,
                        (Channel::SNAPSHOT, GameMessage::WorldSnapshot(s)) => {
                            let set = players.entry(s.tick).or_default();
                            for p in s.players {
                                assert!(
                                    set.insert(p.entity),
                                    "player {} twice in tick {}",
                                    p.entity,
                                    s.tick
                                );
                            }
                        }
                        other => panic!("unexpected {other:?}"),
                    }
                }
                Some(ClientEvent::Connected { .. }) => {}
                Some(other) => panic!("unexpected {other:?}"),
                None => std::thread::sleep(Duration::from_millis(1)),
            }
        }
        assert_eq!(
            reliable,
            (0..200).collect::<Vec<_>>(),
            "reliable: all, once, in order"
        );
        // Loopback can still drop datagrams under load: most must arrive.
        let delivered: usize = players.values().map(BTreeSet::len).sum();
        assert!(
            delivered >= 3 * 1024 * 9 / 10,
            "snapshot players delivered: {delivered}"
        );
        if is_a {
            assert!(unreliable >= 15, "unreliable: {unreliable} of 20");
        } else {
            assert_eq!(unreliable, 0, "sent to the other client only");
        }
    }

    let mut got = Vec::new();
    let end = Instant::now() + Duration::from_secs(5);
    while got.len() < 3 && Instant::now() < end {
        match server.poll_event() {
            Some(ServerEvent::Message {
                client,
                channel,
                message,
            }) => got.push((client, channel, message.id())),
            Some(_) => {}
            None => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    got.sort();
    let mut want = vec![
        (id_a, Channel::UNRELIABLE, PlayerInput::ID),
        (id_a, Channel::RELIABLE, Inventory::ID),
        (id_b, Channel::RELIABLE, SpawnEntity::ID),
    ];
    want.sort();
    assert_eq!(got, want);
    // Stats see the traffic.
    let stats = server.stats(id_a).unwrap();
    assert!(
        stats.messages_out >= 200 && stats.messages_in >= 2,
        "{stats:?}"
    );
    assert!(stats.rtt > Duration::ZERO);
}

#[test]
fn leaving_is_an_event_with_the_reason_on_both_sides() {
    let mut server = server();
    let (mut client, id) = connect_default(&mut server);
    client.disconnect("gone fishing");
    let event = wait_server(&mut server, Duration::from_secs(5), |e| {
        matches!(e, ServerEvent::Disconnected { .. })
    });
    match event {
        Some(ServerEvent::Disconnected {
            client: who,
            reason:
                DisconnectReason::Closed {
                    by: ClosedBy::Peer,
                    reason,
                    ..
                },
        }) => {
            assert_eq!(who, id);
            assert_eq!(reason, "gone fishing");
        }
        other => panic!("{other:?}"),
    }
    assert!(server.clients().is_empty());
    // A kick reaches the client with its reason.
    let (mut client, id) = connect_default(&mut server);
    server.disconnect(id, "kicked for testing");
    let event = wait_client(&mut client, Duration::from_secs(5), |e| {
        matches!(e, ClientEvent::Disconnected { .. })
    });
    match event {
        Some(ClientEvent::Disconnected {
            reason:
                DisconnectReason::Closed {
                    by: ClosedBy::Peer,
                    code: CloseCode::Kicked,
                    reason,
                },
        }) => {
            assert_eq!(reason, "kicked for testing");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_full_reliable_backlog_is_a_back_pressure_error() {
    let mut limits = Limits::default();
    limits.reliable_backlog = 64 * 1024;
    let mut server = server_with(limits, None);
    let (_client, id) = connect_default(&mut server);
    let big = samples::inventory(2000); // 26 kB
    let mut full = None;
    for i in 0..10_000 {
        match server.send(Target::One(id), Channel::RELIABLE, &big) {
            Ok(()) => {}
            Err(e) => {
                full = Some((i, e));
                break;
            }
        }
    }
    let (sent, err) = full.expect("the backlog must fill");
    assert_eq!(err, SendError::QueueFull);
    assert!(sent >= 2, "{sent} sent before the queue filled");
    // Not registered for the server to send: refused up front.
    assert_eq!(
        server.send(Target::All, Channel::UNRELIABLE, &samples::player_input()),
        Err(SendError::NotRegistered(PlayerInput::ID))
    );
    assert_eq!(
        server.send(Target::All, Channel::RELIABLE, &samples::player_moved()),
        Err(SendError::NotRegistered(PlayerMoved::ID))
    );
}
