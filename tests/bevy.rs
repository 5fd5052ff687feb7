//! The Bevy plugin: a server App and client Apps in one process over
//! loopback QUIC exchange every reference message, see each other connect,
//! leave and be refused; and headless apps run on `ScheduleRunnerPlugin`
//! with a fixed tick.

#![cfg(feature = "bevy")]
// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
// Bevy system parameters elide their lifetimes by convention.
#![allow(elided_lifetimes_in_paths)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bevy_app::{App, AppExit, FixedUpdate, ScheduleRunnerPlugin, Update};
use bevy_ecs::prelude::*;
use bevy_time::{Fixed, Time, TimePlugin};
use zao::bevy::testing::{ServerClients, collect, collected};
use zao::bevy::{
    AppZaoExt, Channel, ClientConnected, ClientDisconnected, ClientId, ClientRefused, Connected,
    ConnectionState, Direction, DisconnectReason, Disconnected, FromClient, FromServer,
    RefuseReason, SendTarget, ToClients, ToServer, ZaoClient, ZaoClientPlugin, ZaoProtocol,
};
use zao::quic::{Certificate, Server, ServerConfig, ServerEvent, Side, Target};
use zao_messages::{
    GameMessage, Inventory, PlayerInput, PlayerMoved, SpawnEntity, WorldSnapshot, samples,
};

const TIMEOUT: Duration = Duration::from_secs(20);

/// `zao_messages::protocol()`, as Bevy registrations.
fn protocol(app: &mut App) {
    app.add_zao_message::<PlayerMoved>(Channel::UNRELIABLE, Direction::Both)
        .add_zao_message::<PlayerInput>(Channel::UNRELIABLE, Direction::ClientToServer)
        .add_zao_message::<SpawnEntity>(Channel::RELIABLE, Direction::Both)
        .add_zao_snapshot::<WorldSnapshot>()
        .add_zao_message::<Inventory>(Channel::RELIABLE, Direction::Both);
}

/// The same, but `Inventory` travels unreliably: another protocol.
fn other_protocol(app: &mut App) {
    app.add_zao_message::<PlayerMoved>(Channel::UNRELIABLE, Direction::Both)
        .add_zao_message::<PlayerInput>(Channel::UNRELIABLE, Direction::ClientToServer)
        .add_zao_message::<SpawnEntity>(Channel::RELIABLE, Direction::Both)
        .add_zao_snapshot::<WorldSnapshot>()
        .add_zao_message::<Inventory>(Channel::UNRELIABLE, Direction::Both);
}

fn spawn(entity: u32) -> SpawnEntity {
    SpawnEntity {
        entity,
        ..samples::spawn_entity()
    }
}

fn inventory(owner: u32) -> Inventory {
    Inventory {
        owner,
        ..samples::inventory(8)
    }
}

fn write<M: bevy_ecs::message::Message>(app: &mut App, message: M) {
    assert!(
        app.world_mut().write_message(message).is_some(),
        "message type not registered"
    );
}

/// The payloads of the `FromServer<T>` a client App has kept.
fn from_server<T: Clone + Send + Sync + 'static>(app: &App) -> Vec<T> {
    collected::<FromServer<T>>(app)
        .iter()
        .map(|m| m.0.clone())
        .collect()
}

#[test]
fn registrations_build_the_reference_protocol_in_any_order() {
    let mut app = App::new();
    protocol(&mut app);
    let mut reversed = App::new();
    reversed
        .add_zao_message::<Inventory>(Channel::RELIABLE, Direction::Both)
        .add_zao_snapshot::<WorldSnapshot>()
        .add_zao_message::<SpawnEntity>(Channel::RELIABLE, Direction::Both)
        .add_zao_message::<PlayerInput>(Channel::UNRELIABLE, Direction::ClientToServer)
        .add_zao_message::<PlayerMoved>(Channel::UNRELIABLE, Direction::Both);
    let reference = zao_messages::protocol();
    for app in [&app, &reversed] {
        let built = app.world().resource::<ZaoProtocol>().protocol();
        assert_eq!(built.entries(), reference.entries());
        assert_eq!(built.hash(), reference.hash());
    }
    let mut other = App::new();
    other_protocol(&mut other);
    let other = other.world().resource::<ZaoProtocol>().protocol();
    assert_ne!(other.hash(), reference.hash());
}

#[test]
#[should_panic(expected = "add_zao_snapshot")]
fn a_snapshot_channel_needs_add_zao_snapshot() {
    App::new().add_zao_message::<WorldSnapshot>(Channel::SNAPSHOT, Direction::ServerToClient);
}

#[test]
fn every_reference_message_crosses_in_both_directions() {
    let mut net = ServerClients::new(2, protocol);
    collect::<ClientConnected>(&mut net.server);
    collect::<FromClient<PlayerMoved>>(&mut net.server);
    collect::<FromClient<PlayerInput>>(&mut net.server);
    collect::<FromClient<SpawnEntity>>(&mut net.server);
    collect::<FromClient<Inventory>>(&mut net.server);
    for app in &mut net.clients {
        collect::<Connected>(app);
        collect::<FromServer<PlayerMoved>>(app);
        collect::<FromServer<SpawnEntity>>(app);
        collect::<FromServer<WorldSnapshot>>(app);
        collect::<FromServer<Inventory>>(app);
    }
    let ids = net.connect_all(TIMEOUT);
    let (a, b) = (ids[0], ids[1]);
    assert_ne!(a, b);
    // Connection events: the server saw both, each client its own id.
    let seen: BTreeSet<ClientId> = collected::<ClientConnected>(&net.server)
        .iter()
        .map(|c| c.client)
        .collect();
    assert_eq!(seen, BTreeSet::from([a, b]));
    assert_eq!(net.server().clients().collect::<BTreeSet<_>>(), seen);
    for (i, id) in [a, b].into_iter().enumerate() {
        assert_eq!(
            collected::<Connected>(&net.clients[i]),
            &[Connected { client: id }]
        );
        assert_eq!(net.client(i).state(), &ConnectionState::Connected(id));
    }

    // Reliable, server to clients: to all, to one, to all but one. A last
    // message to all goes a frame later on the same ordered stream: once a
    // client has it, it has everything the server sent it before.
    write(
        &mut net.server,
        ToClients {
            target: SendTarget::All,
            message: spawn(1),
        },
    );
    write(
        &mut net.server,
        ToClients {
            target: SendTarget::One(a),
            message: spawn(2),
        },
    );
    write(
        &mut net.server,
        ToClients {
            target: SendTarget::AllExcept(a),
            message: inventory(3),
        },
    );
    net.update();
    write(
        &mut net.server,
        ToClients {
            target: SendTarget::All,
            message: inventory(4),
        },
    );
    // Reliable, clients to server.
    write(&mut net.clients[0], ToServer(spawn(10)));
    write(&mut net.clients[0], ToServer(inventory(11)));
    write(&mut net.clients[1], ToServer(spawn(20)));
    let done = net.run_until(TIMEOUT, |net| {
        net.clients.iter().all(|app| {
            from_server::<Inventory>(app)
                .iter()
                .any(|inv| inv.owner == 4)
        }) && collected::<FromClient<SpawnEntity>>(&net.server).len() >= 2
            && !collected::<FromClient<Inventory>>(&net.server).is_empty()
    });
    assert!(done, "reliable messages did not all arrive");
    assert_eq!(
        from_server::<SpawnEntity>(&net.clients[0]),
        vec![spawn(1), spawn(2)]
    );
    assert_eq!(from_server::<SpawnEntity>(&net.clients[1]), vec![spawn(1)]);
    assert_eq!(
        from_server::<Inventory>(&net.clients[0]),
        vec![inventory(4)]
    );
    assert_eq!(
        from_server::<Inventory>(&net.clients[1]),
        vec![inventory(3), inventory(4)]
    );
    let mut spawned: Vec<(ClientId, SpawnEntity)> =
        collected::<FromClient<SpawnEntity>>(&net.server)
            .iter()
            .map(|m| (m.client, m.message.clone()))
            .collect();
    spawned.sort_by_key(|(_, spawn)| spawn.entity);
    assert_eq!(spawned, vec![(a, spawn(10)), (b, spawn(20))]);
    assert_eq!(
        collected::<FromClient<Inventory>>(&net.server),
        &[FromClient {
            client: a,
            message: inventory(11)
        }]
    );

    // Unreliable both ways, and a snapshot of 300 players (4.8 kB, several
    // datagrams) to all: sent every frame, as a game does, until each has
    // arrived. A new tick each frame; a client must see one tick whole.
    let moved = PlayerMoved {
        entity: 77,
        ..samples::player_moved()
    };
    let snapshot = samples::world_snapshot(300);
    let all_players: BTreeSet<u32> = snapshot.players.iter().map(|p| p.entity).collect();
    let mut tick = 0;
    let done = net.run_until(TIMEOUT, |net| {
        tick += 1;
        write(
            &mut net.server,
            ToClients {
                target: SendTarget::All,
                message: moved,
            },
        );
        write(
            &mut net.server,
            ToClients {
                target: SendTarget::All,
                message: WorldSnapshot {
                    tick,
                    ..snapshot.clone()
                },
            },
        );
        write(&mut net.clients[0], ToServer(samples::player_moved()));
        write(&mut net.clients[1], ToServer(samples::player_input()));
        let server = &net.server;
        !collected::<FromClient<PlayerMoved>>(server).is_empty()
            && !collected::<FromClient<PlayerInput>>(server).is_empty()
            && net.clients.iter().all(|app| {
                !from_server::<PlayerMoved>(app).is_empty()
                    && whole_ticks(&from_server::<WorldSnapshot>(app), &all_players) > 0
            })
    });
    assert!(done, "unreliable messages or snapshots did not arrive");
    for m in collected::<FromClient<PlayerMoved>>(&net.server) {
        assert_eq!((m.client, m.message), (a, samples::player_moved()));
    }
    for m in collected::<FromClient<PlayerInput>>(&net.server) {
        assert_eq!((m.client, m.message), (b, samples::player_input()));
    }
    for app in &net.clients {
        assert!(from_server::<PlayerMoved>(app).iter().all(|m| *m == moved));
        let chunks = from_server::<WorldSnapshot>(app);
        let mut per_tick: BTreeMap<u32, usize> = BTreeMap::new();
        for chunk in &chunks {
            *per_tick.entry(chunk.tick).or_default() += 1;
            // Every chunk is a whole WorldSnapshot holding a run of the players.
            let start = chunk
                .players
                .first()
                .map_or(0, |p| (p.entity - 100) as usize);
            assert_eq!(
                chunk.players,
                snapshot.players[start..start + chunk.players.len()]
            );
        }
        assert!(
            per_tick.values().any(|&n| n > 1),
            "snapshots must travel chunked: {per_tick:?}"
        );
    }
    // The server's stats saw the traffic.
    let stats = net.server().stats(a).unwrap();
    assert!(
        stats.messages_in >= 3 && stats.messages_out >= 3,
        "{stats:?}"
    );
}

/// How many ticks arrived with every one of `all` players.
fn whole_ticks(chunks: &[WorldSnapshot], all: &BTreeSet<u32>) -> usize {
    let mut ticks: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    for chunk in chunks {
        ticks
            .entry(chunk.tick)
            .or_default()
            .extend(chunk.players.iter().map(|p| p.entity));
    }
    ticks.values().filter(|players| *players == all).count()
}

#[test]
fn a_client_with_another_protocol_is_refused_with_the_message_named() {
    let mut net = ServerClients::new(0, protocol);
    collect::<ClientRefused>(&mut net.server);
    collect::<ClientConnected>(&mut net.server);
    let plugin = net.client_plugin();
    let i = net.add_client_with(plugin, other_protocol);
    collect::<Disconnected>(net.client_app(i));
    collect::<Connected>(net.client_app(i));
    let done = net.run_until(TIMEOUT, |net| {
        !collected::<Disconnected>(&net.clients[i]).is_empty()
            && !collected::<ClientRefused>(&net.server).is_empty()
    });
    assert!(done, "no refusal: {:?}", net.client(i).state());
    let detail = match collected::<Disconnected>(&net.clients[i]) {
        [
            Disconnected {
                reason: DisconnectReason::Refused(RefuseReason::ProtocolMismatch { detail }),
            },
        ] => detail.clone(),
        other => panic!("{other:?}"),
    };
    assert!(detail.contains("Inventory"), "{detail}");
    assert!(detail.contains("\"unreliable\""), "{detail}");
    match collected::<ClientRefused>(&net.server) {
        [
            ClientRefused {
                reason: RefuseReason::ProtocolMismatch { detail: seen },
                ..
            },
        ] => assert_eq!(*seen, detail),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        net.client(i).state(),
        ConnectionState::Disconnected(DisconnectReason::Refused(_))
    ));
    assert!(collected::<Connected>(&net.clients[i]).is_empty());
    assert!(collected::<ClientConnected>(&net.server).is_empty());
    assert_eq!(net.server().clients().len(), 0);
}

#[test]
fn leaving_and_kicks_are_messages_with_their_reasons() {
    let mut net = ServerClients::new(2, protocol);
    collect::<ClientDisconnected>(&mut net.server);
    for app in &mut net.clients {
        collect::<Disconnected>(app);
    }
    let ids = net.connect_all(TIMEOUT);
    let (a, b) = (ids[0], ids[1]);

    net.client_app(0)
        .world_mut()
        .resource_mut::<ZaoClient>()
        .disconnect("gone fishing");
    let done = net.run_until(TIMEOUT, |net| {
        !collected::<ClientDisconnected>(&net.server).is_empty()
    });
    assert!(done, "the server never saw the client leave");
    match collected::<ClientDisconnected>(&net.server) {
        [
            ClientDisconnected {
                client,
                reason:
                    DisconnectReason::Closed {
                        by: Side::Peer,
                        reason,
                        ..
                    },
            },
        ] => {
            assert_eq!(*client, a);
            assert_eq!(reason, "gone fishing");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(net.server().clients().collect::<Vec<_>>(), vec![b]);

    net.server().kick(b, "kicked for testing");
    let done = net.run_until(TIMEOUT, |net| {
        !collected::<Disconnected>(&net.clients[1]).is_empty()
            && collected::<ClientDisconnected>(&net.server).len() == 2
    });
    assert!(done, "the kick did not arrive");
    match collected::<Disconnected>(&net.clients[1]) {
        [
            Disconnected {
                reason:
                    DisconnectReason::Closed {
                        by: Side::Peer,
                        code: zao::proto::CloseCode::Kicked,
                        reason,
                    },
            },
        ] => assert_eq!(reason, "kicked for testing"),
        other => panic!("{other:?}"),
    }
    assert_eq!(collected::<ClientDisconnected>(&net.server)[1].client, b);
    assert!(!net.client(1).is_connected());
    assert_eq!(net.server().clients().len(), 0);
}

/// What the headless client below counted.
#[derive(Resource, Default)]
struct Seen {
    moved: usize,
    fixed_ticks: u32,
}

/// A headless client App on `ScheduleRunnerPlugin` (which starts the
/// plugins itself) with a 60 Hz `Time<Fixed>`: it sends a `PlayerInput`
/// from `FixedUpdate` each tick and exits once the server's broadcasts
/// arrive. The server is a bare transport on another thread.
#[test]
fn a_headless_app_runs_on_schedule_runner_with_a_fixed_tick() {
    let mut server = Server::start(ServerConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        Certificate::self_signed(&["localhost"]).unwrap(),
        zao_messages::protocol(),
    ))
    .unwrap();
    let plugin = ZaoClientPlugin::pinned(server.local_addr(), server.certificate_hash());
    let stop = Arc::new(AtomicBool::new(false));
    let server_thread = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut ticks = Vec::new();
            let mut n = 0u32;
            while !stop.load(Ordering::Acquire) && n < 20_000 {
                while let Some(event) = server.poll_event() {
                    if let ServerEvent::Message { message, .. } = event
                        && let Ok(GameMessage::PlayerInput(input)) =
                            GameMessage::decode(message.message())
                    {
                        ticks.push(input.tick);
                    }
                }
                let _ = server.send(Target::All, Channel::UNRELIABLE, &samples::player_moved());
                server.flush();
                n += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            ticks
        })
    };

    let mut app = App::new();
    app.add_plugins((
        ScheduleRunnerPlugin::run_loop(Duration::from_millis(2)),
        TimePlugin,
        plugin,
    ))
    .insert_resource(Time::<Fixed>::from_hz(60.0))
    .init_resource::<Seen>();
    protocol(&mut app);
    app.add_systems(
        FixedUpdate,
        |mut seen: ResMut<Seen>, mut out: MessageWriter<ToServer<PlayerInput>>| {
            seen.fixed_ticks += 1;
            out.write(ToServer(PlayerInput {
                tick: seen.fixed_ticks,
                ..samples::player_input()
            }));
        },
    )
    .add_systems(
        Update,
        |mut seen: ResMut<Seen>,
         mut moved: MessageReader<FromServer<PlayerMoved>>,
         mut gone: MessageReader<Disconnected>,
         client: Res<ZaoClient>,
         time: Res<Time>,
         mut exit: MessageWriter<AppExit>| {
            seen.moved += moved.read().count();
            if let Some(Disconnected { reason }) = gone.read().next() {
                panic!("disconnected: {reason}");
            }
            if seen.moved >= 10 && seen.fixed_ticks >= 10 && client.is_connected() {
                exit.write(AppExit::Success);
            } else if time.elapsed() > TIMEOUT {
                exit.write(AppExit::error());
            }
        },
    );
    let outcome = app.run();
    stop.store(true, Ordering::Release);
    let ticks = server_thread.join().unwrap();
    assert_eq!(outcome, AppExit::Success);
    // Fixed-tick inputs arrived, numbered by the fixed schedule (unreliable:
    // most, not necessarily all, and in any order).
    assert!(ticks.len() >= 5, "{ticks:?}");
    assert!(ticks.iter().all(|&t| t >= 1), "{ticks:?}");
    assert!(
        ticks.iter().collect::<BTreeSet<_>>().len() == ticks.len(),
        "each fixed tick sends its own input: {ticks:?}"
    );
}
