//! The Bevy plugin, on the simulated network (`zao::bevy::testing`: a
//! server App and client Apps stepped on a virtual clock over the real QUIC
//! state machine): registration, every reference message both ways, the
//! lifecycle at runtime (start, stop, connect, reconnect after a drop),
//! states and run conditions, clients as entities (stats, identity,
//! despawn kicks), declared channels (a large message on one never delays
//! another on a lossy link), send results and failures, rooms and lists,
//! and a listen server whose own client is like any other. Two tests use
//! real sockets on loopback: a busy port is a message, not a panic, and a
//! headless App runs on `ScheduleRunnerPlugin` with a fixed tick.

#![cfg(all(feature = "bevy", feature = "sim"))]
// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
// Bevy system parameters elide their lifetimes by convention.
#![allow(elided_lifetimes_in_paths)]

#[cfg(feature = "fleet")]
#[path = "fleet/mod.rs"]
mod fleet;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bevy_app::{App, AppExit, FixedUpdate, ScheduleRunnerPlugin, Update};
use bevy_ecs::prelude::*;
use bevy_ecs::system::RunSystemOnce;
use bevy_state::state::State;
use bevy_time::{Fixed, Time, TimePlugin};
use zao::bevy::testing::{ZaoSimLink, ZaoTestNet, collect, collected};
use zao::bevy::{
    AppZaoExt, Channel, ChannelKind, ClientConnected, ClientDisconnected, ClientId, ClientRefused,
    ClientStats, ConnectFailed, Connected, ConnectedClient, ConnectionState, Direction,
    DisconnectReason, Disconnected, FromClient, FromServer, RefuseReason, Room, SendFailed,
    SendTarget, ServerStartFailed, ServerStarted, ServerStopped, StartError, ToClients, ToServer,
    ZaoClient, ZaoClientPlugin, ZaoClientSender, ZaoClientSettings, ZaoClientState, ZaoCommandsExt,
    ZaoProtocol, ZaoSendError, ZaoServer, ZaoServerPlugin, ZaoServerSender, ZaoServerSettings,
    ZaoServerState, client_connected, client_just_connected, client_just_disconnected,
    server_running,
};
use zao::proto::{
    AuthCallback, CloseCode, ClosedBy, Identity, LOCAL_ADDR, Limits, SendError, ServerEvent, Target,
};
use zao::quic::{Certificate, Server, ServerConfig};
use zao::sim::LinkSpec;
use zao::{Decode, Encode, NetMessage};
use zao_messages::{
    GameMessage, Inventory, PlayerInput, PlayerMoved, SpawnEntity, WorldSnapshot, samples,
};

/// Virtual time limits: generous, as they cost nothing.
const LIMIT: Duration = Duration::from_secs(30);

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

/// Runs `f` on an App's commands and applies them.
fn command(app: &mut App, f: impl FnOnce(&mut Commands)) {
    let world = app.world_mut();
    f(&mut world.commands());
    world.flush();
}

fn server_state(app: &App) -> ZaoServerState {
    *app.world().resource::<State<ZaoServerState>>().get()
}

fn client_state(app: &App) -> ZaoClientState {
    *app.world().resource::<State<ZaoClientState>>().get()
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
    // Declared channels are part of the protocol and its hash.
    let mut chat = App::new();
    chat.add_zao_channel("chat", ChannelKind::ReliableOrdered);
    protocol(&mut chat);
    let chat = chat.world().resource::<ZaoProtocol>().protocol();
    assert_eq!(chat.channel_named("chat"), Some(Channel(3)));
    assert_ne!(chat.hash(), reference.hash());
}

#[test]
#[should_panic(expected = "add_zao_snapshot")]
fn a_snapshot_channel_needs_add_zao_snapshot() {
    App::new().add_zao_message::<WorldSnapshot>(Channel::SNAPSHOT, Direction::ServerToClient);
}

#[test]
#[should_panic(expected = "not declared")]
fn a_message_on_an_undeclared_channel_is_a_startup_error() {
    App::new().add_zao_message::<SpawnEntity>("chat", Direction::Both);
}

#[test]
fn every_reference_message_crosses_in_both_directions() {
    let mut net = ZaoTestNet::new(1, protocol);
    net.add_client(LinkSpec::l1());
    net.add_client(LinkSpec::l1());
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
    let ids = net.connect_all(LIMIT);
    let (a, b) = (ids[0], ids[1]);
    assert_ne!(a, b);
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
    // message to all goes an update later on the same ordered stream: once
    // a client has it, it has everything the server sent it before.
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
    write(&mut net.clients[0], ToServer(spawn(10)));
    write(&mut net.clients[0], ToServer(inventory(11)));
    write(&mut net.clients[1], ToServer(spawn(20)));
    let done = net.run_until(LIMIT, |net| {
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
    let inv = collected::<FromClient<Inventory>>(&net.server);
    assert_eq!(inv.len(), 1);
    assert_eq!((inv[0].client, &inv[0].message), (a, &inventory(11)));
    assert_eq!(Some(inv[0].entity), net.server().entity(a));

    // Unreliable both ways, and a snapshot of 300 players (4.8 kB, several
    // datagrams) to all, every update as a game does, until each arrived.
    let moved = PlayerMoved {
        entity: 77,
        ..samples::player_moved()
    };
    let snapshot = samples::world_snapshot(300);
    let all_players: BTreeSet<u32> = snapshot.players.iter().map(|p| p.entity).collect();
    let mut tick = 0;
    let done = net.run_until(LIMIT, |net| {
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
fn a_client_with_another_protocol_is_refused_with_the_difference_named() {
    let mut net = ZaoTestNet::new(2, protocol);
    collect::<ClientRefused>(&mut net.server);
    collect::<ClientConnected>(&mut net.server);
    let i = net.add_client_with(
        ZaoSimLink::both(LinkSpec::l1()),
        ZaoClientPlugin::connect_at_launch(ZaoClientSettings::default()),
        other_protocol,
    );
    collect::<Disconnected>(net.client_app(i));
    collect::<Connected>(net.client_app(i));
    let done = net.run_until(LIMIT, |net| {
        !collected::<Disconnected>(&net.clients[i]).is_empty()
            && !collected::<ClientRefused>(&net.server).is_empty()
    });
    assert!(done, "no refusal");
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
    assert_eq!(client_state(&net.clients[i]), ZaoClientState::Disconnected);
    assert!(collected::<Connected>(&net.clients[i]).is_empty());
    assert!(collected::<ClientConnected>(&net.server).is_empty());
    assert_eq!(net.server().clients().len(), 0);
}

#[test]
fn leaving_and_kicks_are_messages_with_their_reasons() {
    let mut net = ZaoTestNet::new(3, protocol);
    net.add_client(LinkSpec::l1());
    net.add_client(LinkSpec::l1());
    collect::<ClientDisconnected>(&mut net.server);
    for app in &mut net.clients {
        collect::<Disconnected>(app);
    }
    let ids = net.connect_all(LIMIT);
    let (a, b) = (ids[0], ids[1]);

    command(net.client_app(0), |c| c.disconnect_zao());
    let done = net.run_until(LIMIT, |net| {
        !collected::<ClientDisconnected>(&net.server).is_empty()
    });
    assert!(done, "the server never saw the client leave");
    match collected::<ClientDisconnected>(&net.server) {
        [
            ClientDisconnected {
                client,
                reason:
                    DisconnectReason::Closed {
                        by: ClosedBy::Peer,
                        reason,
                        ..
                    },
                ..
            },
        ] => {
            assert_eq!(*client, a);
            assert_eq!(reason, "left");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(net.server().clients().collect::<Vec<_>>(), vec![b]);

    net.server().kick(b, "kicked for testing");
    let done = net.run_until(LIMIT, |net| {
        !collected::<Disconnected>(&net.clients[1]).is_empty()
            && collected::<ClientDisconnected>(&net.server).len() == 2
    });
    assert!(done, "the kick did not arrive");
    match collected::<Disconnected>(&net.clients[1]) {
        [
            Disconnected {
                reason:
                    DisconnectReason::Closed {
                        by: ClosedBy::Peer,
                        code: CloseCode::Kicked,
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

/// A component game code attaches to a player's entity.
#[derive(Component, Debug, PartialEq)]
struct Score(u32);

fn auth_by_token() -> AuthCallback {
    Arc::new(|request| {
        Box::pin(async move {
            let key =
                String::from_utf8_lossy(request.token.as_deref().unwrap_or_default()).into_owned();
            Ok(Identity::new(key))
        })
    })
}

#[test]
fn clients_are_entities_with_stats_and_identity_and_despawning_one_kicks_it() {
    let mut settings = ZaoServerSettings::default();
    settings.auth = Some(auth_by_token());
    let mut net = ZaoTestNet::with_server(4, settings, protocol);
    for name in ["ada", "bob"] {
        net.add_client_with(
            ZaoSimLink::both(LinkSpec::l2()),
            ZaoClientPlugin::connect_at_launch(ZaoClientSettings::default().with_token(name)),
            protocol,
        );
    }
    collect::<ClientConnected>(&mut net.server);
    collect::<ClientDisconnected>(&mut net.server);
    collect::<FromClient<SpawnEntity>>(&mut net.server);
    collect::<Disconnected>(net.client_app(0));
    // Game code gives every new player a score, on its entity.
    net.server.add_systems(
        Update,
        |mut commands: Commands, mut joined: MessageReader<ClientConnected>| {
            for c in joined.read() {
                commands.entity(c.entity).insert(Score(0));
            }
        },
    );
    let ids = net.connect_all(LIMIT);
    net.run_for(Duration::from_secs(2));
    let world = net.server.world_mut();
    let mut players: Vec<(ClientId, String, Score)> = world
        .query::<(&ConnectedClient, &Score)>()
        .iter(world)
        .map(|(c, s)| (c.id, c.identity.as_ref().unwrap().key.clone(), Score(s.0)))
        .collect();
    players.sort_by_key(|p| p.0);
    assert_eq!(
        players,
        vec![
            (ids[0], "ada".to_owned(), Score(0)),
            (ids[1], "bob".to_owned(), Score(0))
        ]
    );
    let joined = collected::<ClientConnected>(&net.server);
    assert_eq!(joined[0].identity.as_ref().unwrap().key, "ada");
    // Stats are refreshed on the entity: L2 is 100 ms each way.
    let ada = net.server().entity(ids[0]).unwrap();
    let stats = net.server.world().get::<ClientStats>(ada).unwrap().0;
    assert!(
        stats.rtt >= Duration::from_millis(180) && stats.rtt <= Duration::from_millis(400),
        "{stats:?}"
    );
    // A message names its sender's entity.
    write(&mut net.clients[1], ToServer(spawn(5)));
    assert!(net.run_until(LIMIT, |net| {
        !collected::<FromClient<SpawnEntity>>(&net.server).is_empty()
    }));
    let bob = net.server().entity(ids[1]).unwrap();
    assert_eq!(
        collected::<FromClient<SpawnEntity>>(&net.server)[0].entity,
        bob
    );

    // Despawning ada's entity kicks her.
    net.server.world_mut().entity_mut(ada).despawn();
    assert!(net.run_until(LIMIT, |net| {
        !collected::<Disconnected>(&net.clients[0]).is_empty()
            && !collected::<ClientDisconnected>(&net.server).is_empty()
    }));
    match collected::<Disconnected>(&net.clients[0]) {
        [
            Disconnected {
                reason:
                    DisconnectReason::Closed {
                        by: ClosedBy::Peer,
                        code: CloseCode::Kicked,
                        ..
                    },
            },
        ] => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(
        collected::<ClientDisconnected>(&net.server)[0].client,
        ids[0]
    );
    assert_eq!(net.server().clients().collect::<Vec<_>>(), vec![ids[1]]);

    // Bob leaves: his entity (and its score) lives through the update that
    // reports it, then goes.
    command(net.client_app(1), |c| c.disconnect_zao());
    assert!(net.run_until(LIMIT, |net| {
        collected::<ClientDisconnected>(&net.server).len() == 2
    }));
    net.update();
    assert!(net.server.world().get_entity(bob).is_err(), "not despawned");
}

/// A game's "Host" button, pressed at the App's second update: the server
/// starts from the game's own system, not at launch.
fn host_button(mut commands: Commands, mut updates: Local<u32>) {
    *updates += 1;
    if *updates == 2 {
        let mut settings = ZaoServerSettings::default();
        settings.auth = Some(auth_by_token());
        commands.start_zao_server(settings);
    }
}

/// A bot's name, a resource of its App set up by the test.
#[derive(Resource)]
struct BotName(&'static str);

/// A game's "Join" button: connects once, with the bot's name as token.
fn join_button(mut commands: Commands, name: Res<BotName>, mut pressed: Local<bool>) {
    if !*pressed {
        *pressed = true;
        commands.connect_zao(ZaoClientSettings::default().with_token(name.0));
    }
}

#[test]
fn a_test_net_runs_a_game_that_hosts_and_joins_from_its_own_systems() {
    // The server App is built as the game builds it: no launch start.
    let mut net = ZaoTestNet::with_server_app(12, protocol, |app| {
        app.add_plugins(ZaoServerPlugin::default())
            .add_systems(Update, host_button);
        protocol(app);
        collect::<ServerStarted>(app);
    });
    assert_eq!(server_state(&net.server), ZaoServerState::Running);
    assert_eq!(collected::<ServerStarted>(&net.server).len(), 1);
    // Each client App gets its own setup: a name the closure captures.
    for name in ["ada", "bob"] {
        net.add_client_with(
            ZaoSimLink::both(LinkSpec::l1()),
            ZaoClientPlugin::default(),
            move |app| {
                protocol(app);
                app.insert_resource(BotName(name))
                    .add_systems(Update, join_button);
            },
        );
    }
    let ids = net.connect_all(LIMIT);
    let world = net.server.world_mut();
    let mut names: Vec<(ClientId, String)> = world
        .query::<&ConnectedClient>()
        .iter(world)
        .map(|c| (c.id, c.identity.as_ref().unwrap().key.clone()))
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec![(ids[0], "ada".to_owned()), (ids[1], "bob".to_owned())]
    );
}

/// What the lifecycle systems of a client App saw, update by update.
#[derive(Resource, Default, Debug)]
struct Edges {
    just_connected: u32,
    just_disconnected: u32,
    connected_updates: u32,
    reconnects: u32,
}

#[test]
fn a_client_reconnects_from_a_system_after_a_drop() {
    let mut net = ZaoTestNet::new(5, protocol);
    collect::<ClientConnected>(&mut net.server);
    collect::<ClientDisconnected>(&mut net.server);
    let i = net.add_client(LinkSpec::l1());
    let app = net.client_app(i);
    collect::<Disconnected>(app);
    collect::<Connected>(app);
    app.init_resource::<Edges>().add_systems(
        Update,
        (
            (|mut e: ResMut<Edges>| e.just_connected += 1).run_if(client_just_connected),
            (|mut e: ResMut<Edges>| e.connected_updates += 1).run_if(client_connected),
            // Game code: after a drop, connect again.
            (|mut e: ResMut<Edges>, mut commands: Commands| {
                e.just_disconnected += 1;
                e.reconnects += 1;
                commands.connect_zao(ZaoClientSettings::default());
            })
            .run_if(client_just_disconnected),
        ),
    );
    let first = net.connect_all(LIMIT)[0];
    assert_eq!(net.clients[i].world().resource::<Edges>().just_connected, 1);

    // The link goes dark: the connection times out (idle timeout, 10 s).
    net.set_link(i, LinkSpec::blackhole(), LinkSpec::blackhole());
    assert!(net.run_until(LIMIT, |net| {
        !collected::<Disconnected>(&net.clients[i]).is_empty()
    }));
    assert!(matches!(
        collected::<Disconnected>(&net.clients[i]),
        [Disconnected {
            reason: DisconnectReason::TimedOut
        }]
    ));
    // The system reconnected over the App's link (L1 again); a new id.
    assert!(net.run_until(LIMIT, |net| {
        collected::<Connected>(&net.clients[i]).len() == 2
    }));
    let second = collected::<Connected>(&net.clients[i])[1].client;
    assert_ne!(first, second);
    let edges = net.clients[i].world().resource::<Edges>();
    assert_eq!(
        (
            edges.just_connected,
            edges.just_disconnected,
            edges.reconnects
        ),
        (2, 1, 1)
    );
    assert_eq!(client_state(&net.clients[i]), ZaoClientState::Connected);
    assert!(net.run_until(LIMIT, |net| {
        !collected::<ClientDisconnected>(&net.server).is_empty()
    }));
    assert_eq!(
        collected::<ClientDisconnected>(&net.server)[0].client,
        first
    );
    assert_eq!(net.server().clients().collect::<Vec<_>>(), vec![second]);
    // And messages flow on the new connection.
    collect::<FromClient<SpawnEntity>>(&mut net.server);
    write(&mut net.clients[i], ToServer(spawn(9)));
    assert!(net.run_until(LIMIT, |net| {
        collected::<FromClient<SpawnEntity>>(&net.server)
            .iter()
            .any(|m| m.client == second)
    }));
}

/// Counts the updates a system with a run condition ran in.
#[derive(Resource, Default)]
struct Ran(u32);

#[test]
fn states_follow_the_lifecycle_started_and_stopped_from_systems() {
    // A server App that starts nothing at launch, and a client App that
    // connects nothing at launch: both are told to by commands.
    let mut net = ZaoTestNet::with_server(6, ZaoServerSettings::default(), protocol);
    assert_eq!(server_state(&net.server), ZaoServerState::Running);
    command(&mut net.server, |c| c.stop_zao_server());
    collect::<ServerStarted>(&mut net.server);
    collect::<ServerStopped>(&mut net.server);
    collect::<ClientDisconnected>(&mut net.server);
    net.server.init_resource::<Ran>().add_systems(
        Update,
        (|mut r: ResMut<Ran>| r.0 += 1).run_if(server_running),
    );
    net.update();
    assert_eq!(server_state(&net.server), ZaoServerState::Stopped);
    assert_eq!(collected::<ServerStopped>(&net.server).len(), 1);
    assert!(net.try_server().is_none());
    // (The launch start's message, still in Bevy's buffer when collecting
    // began, may be among them.)
    let started = collected::<ServerStarted>(&net.server).len();

    // Start from a "system": Stopped → Starting (one update) → Running.
    command(&mut net.server, |c| {
        c.start_zao_server(ZaoServerSettings::default())
    });
    let mut seen = vec![server_state(&net.server)];
    for _ in 0..3 {
        net.update();
        seen.push(server_state(&net.server));
    }
    seen.dedup();
    assert_eq!(
        seen,
        vec![
            ZaoServerState::Stopped,
            ZaoServerState::Starting,
            ZaoServerState::Running
        ]
    );
    assert_eq!(collected::<ServerStarted>(&net.server).len(), started + 1);
    // A second start while running is ignored, not a second server.
    command(&mut net.server, |c| {
        c.start_zao_server(ZaoServerSettings::default())
    });
    net.run_for(Duration::from_millis(50));
    assert_eq!(server_state(&net.server), ZaoServerState::Running);
    assert_eq!(collected::<ServerStarted>(&net.server).len(), started + 1);

    // A fresh network, a server started by a command, a client connecting
    // from a "menu" command.
    let mut net = ZaoTestNet::new(7, protocol);
    let i = net.add_client_with(
        ZaoSimLink::both(LinkSpec::l2()),
        ZaoClientPlugin::default(),
        protocol,
    );
    collect::<ClientDisconnected>(&mut net.server);
    collect::<ServerStopped>(&mut net.server);
    net.server.init_resource::<Ran>().add_systems(
        Update,
        (|mut r: ResMut<Ran>| r.0 += 1).run_if(server_running),
    );
    let app = net.client_app(i);
    collect::<Disconnected>(app);
    app.init_resource::<Ran>().add_systems(
        Update,
        (|mut r: ResMut<Ran>| r.0 += 1).run_if(client_connected),
    );
    net.run_for(Duration::from_millis(200));
    assert_eq!(client_state(&net.clients[i]), ZaoClientState::Disconnected);
    assert_eq!(net.clients[i].world().resource::<Ran>().0, 0);
    command(net.client_app(i), |c| {
        c.connect_zao(ZaoClientSettings::default())
    });
    let mut states = vec![client_state(&net.clients[i])];
    assert!(net.run_until(LIMIT, |net| {
        states.push(client_state(&net.clients[i]));
        client_state(&net.clients[i]) == ZaoClientState::Connected
    }));
    states.dedup();
    assert_eq!(
        states,
        vec![
            ZaoClientState::Disconnected,
            ZaoClientState::Connecting,
            ZaoClientState::Connected
        ]
    );
    net.run_for(Duration::from_millis(100));
    assert!(net.clients[i].world().resource::<Ran>().0 >= 5);

    // The server stops: the client is told, the state follows, and the
    // run condition stops running.
    let ran = net.server.world().resource::<Ran>().0;
    assert!(ran > 10);
    command(&mut net.server, |c| c.stop_zao_server());
    assert!(net.run_until(LIMIT, |net| {
        !collected::<Disconnected>(&net.clients[i]).is_empty()
    }));
    assert_eq!(server_state(&net.server), ZaoServerState::Stopped);
    assert_eq!(client_state(&net.clients[i]), ZaoClientState::Disconnected);
    assert_eq!(collected::<ClientDisconnected>(&net.server).len(), 1);
    assert_eq!(collected::<ServerStopped>(&net.server).len(), 1);
    let after = net.server.world().resource::<Ran>().0;
    net.run_for(Duration::from_millis(100));
    assert_eq!(net.server.world().resource::<Ran>().0, after);
}

/// A chat line stamped with the virtual time it was sent (µs).
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 40)]
struct Chat {
    seq: u32,
    sent_us: u64,
}

/// A map chunk: 200 kB.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 41)]
struct MapChunk {
    seq: u32,
    words: Vec<u64>,
}

fn channels_protocol(app: &mut App) {
    app.add_zao_channel("chat", ChannelKind::ReliableOrdered)
        .add_zao_channel("map", ChannelKind::ReliableOrdered)
        .add_zao_message::<Chat>("chat", Direction::Both)
        .add_zao_message::<MapChunk>("map", Direction::ServerToClient);
}

#[test]
fn a_large_message_on_one_channel_does_not_delay_another_on_a_lossy_link() {
    let mut settings = ZaoServerSettings::default();
    let mut limits = Limits::default();
    limits.reliable_backlog = 4 << 20;
    settings.limits = limits;
    let mut net = ZaoTestNet::with_server(8, settings, channels_protocol);
    let i = net.add_client(LinkSpec::l2());
    collect::<FromServer<Chat>>(net.client_app(i));
    collect::<FromServer<MapChunk>>(net.client_app(i));
    let id = net.connect_all(LIMIT)[0];
    let start = net.elapsed();
    // 800 kB of map on one channel, then a chat line every update on
    // another while it travels.
    for seq in 0..4 {
        write(
            &mut net.server,
            ToClients {
                target: SendTarget::One(id),
                message: MapChunk {
                    seq,
                    words: vec![u64::from(seq); 25_000],
                },
            },
        );
    }
    let mut latencies = Vec::new();
    let mut seen = 0;
    let mut sent = 0u32;
    let mut map_done = None;
    while map_done.is_none() || latencies.len() < sent as usize {
        if map_done.is_none() {
            let sent_us = u64::try_from(net.elapsed().as_micros()).unwrap();
            write(
                &mut net.server,
                ToClients {
                    target: SendTarget::One(id),
                    message: Chat { seq: sent, sent_us },
                },
            );
            sent += 1;
        }
        net.update();
        let now_us = u64::try_from(net.elapsed().as_micros()).unwrap();
        let chats = from_server::<Chat>(&net.clients[i]);
        for chat in &chats[seen..] {
            assert_eq!(chat.seq as usize, latencies.len(), "chat in order");
            latencies.push(Duration::from_micros(now_us - chat.sent_us));
        }
        seen = chats.len();
        if map_done.is_none() && from_server::<MapChunk>(&net.clients[i]).len() == 4 {
            map_done = Some(net.elapsed() - start);
        }
        assert!(net.elapsed() - start < LIMIT, "stuck");
    }
    let map_done = map_done.unwrap();
    latencies.sort();
    let p50 = latencies[latencies.len() / 2];
    let max = *latencies.last().unwrap();
    println!(
        "800 kB of map in {map_done:?}; {} chat lines meanwhile: p50 {p50:?}, max {max:?}",
        latencies.len()
    );
    assert!(map_done > Duration::from_millis(800), "{map_done:?}");
    // One way is 100 ms ± 15 ms, plus an update: the chat's own time.
    assert!(
        p50 <= Duration::from_millis(230),
        "chat p50 {p50:?} waits for the map"
    );
    assert!(max < map_done, "a chat line waited as long as the map");
}

/// What a server App's system got back from its sends.
#[derive(Resource, Default, Debug)]
struct Results(Vec<Result<(), ZaoSendError>>);

#[test]
fn send_results_and_failures_reach_game_code() {
    let mut net = ZaoTestNet::new(9, protocol);
    let i = net.add_client(LinkSpec::l1());
    collect::<SendFailed>(&mut net.server);
    collect::<SendFailed>(net.client_app(i));
    collect::<FromServer<SpawnEntity>>(net.client_app(i));
    let id = net.connect_all(LIMIT)[0];

    // ZaoServerSender: a result at once, no copy of the message.
    net.server.init_resource::<Results>();
    let ghost = ClientId(999);
    let run = move |world: &mut World| {
        world
            .run_system_once(
                move |mut sender: ZaoServerSender, mut results: ResMut<Results>| {
                    results.0.push(sender.send(&spawn(1), id));
                    results.0.push(sender.send(&spawn(2), ghost));
                    // PlayerInput goes client to server only.
                    results
                        .0
                        .push(sender.send(&samples::player_input(), SendTarget::All));
                    let big = Inventory {
                        owner: 1,
                        ..samples::inventory(40_000)
                    };
                    results.0.push(sender.send(&big, id));
                },
            )
            .unwrap();
    };
    run(net.server.world_mut());
    let results = &net.server.world().resource::<Results>().0;
    assert_eq!(results[0], Ok(()));
    assert_eq!(
        results[1],
        Err(ZaoSendError::Transport(SendError::ClientNotConnected(
            ghost
        )))
    );
    assert_eq!(
        results[2],
        Err(ZaoSendError::Transport(SendError::NotRegistered(
            PlayerInput::ID
        )))
    );
    assert!(
        matches!(
            results[3],
            Err(ZaoSendError::Transport(SendError::TooLarge { .. }))
        ),
        "{:?}",
        results[3]
    );
    assert!(net.run_until(LIMIT, |net| {
        !from_server::<SpawnEntity>(&net.clients[i]).is_empty()
    }));
    assert_eq!(from_server::<SpawnEntity>(&net.clients[i]), vec![spawn(1)]);

    // The message path reports failures as messages.
    write(
        &mut net.server,
        ToClients {
            target: SendTarget::One(ghost),
            message: spawn(3),
        },
    );
    net.update();
    assert_eq!(
        collected::<SendFailed>(&net.server),
        &[SendFailed {
            message: SpawnEntity::NAME,
            error: ZaoSendError::Transport(SendError::ClientNotConnected(ghost)),
        }]
    );
    // A client that is not connected cannot send, and is told so.
    command(net.client_app(i), |c| c.disconnect_zao());
    net.run_for(Duration::from_millis(200));
    write(&mut net.clients[i], ToServer(spawn(4)));
    net.update();
    assert_eq!(
        collected::<SendFailed>(&net.clients[i]),
        &[SendFailed {
            message: SpawnEntity::NAME,
            error: ZaoSendError::NotRunning,
        }]
    );
    let sent = net.clients[i]
        .world_mut()
        .run_system_once(|mut sender: ZaoClientSender| sender.send(&spawn(5)))
        .unwrap();
    assert_eq!(sent, Err(ZaoSendError::NotRunning));
}

#[test]
fn rooms_and_lists_reach_their_members_only() {
    const RED: Room = Room::named("red");
    const BLUE: Room = Room::named("blue");
    let mut net = ZaoTestNet::new(10, protocol);
    for _ in 0..3 {
        let i = net.add_client(LinkSpec::l1());
        collect::<FromServer<SpawnEntity>>(net.client_app(i));
    }
    let ids = net.connect_all(LIMIT);
    let (a, b, c) = (ids[0], ids[1], ids[2]);
    {
        let mut server = net.server.world_mut().resource_mut::<ZaoServer>();
        server.join(&RED, a);
        server.join(&RED, b);
        server.join(&BLUE, c);
        server.join(&BLUE, a);
        server.leave(&BLUE, a);
    }
    assert_eq!(net.server().room(&RED).collect::<Vec<_>>(), vec![a, b]);
    assert_eq!(net.server().room(&BLUE).collect::<Vec<_>>(), vec![c]);
    write(
        &mut net.server,
        ToClients {
            target: SendTarget::Room(RED),
            message: spawn(1),
        },
    );
    write(
        &mut net.server,
        ToClients {
            target: SendTarget::List(vec![a, c]),
            message: spawn(2),
        },
    );
    write(
        &mut net.server,
        ToClients {
            target: BLUE.into(),
            message: spawn(3),
        },
    );
    write(
        &mut net.server,
        ToClients {
            target: SendTarget::Room("nobody".into()),
            message: spawn(4),
        },
    );
    net.run_for(Duration::from_millis(500));
    let got = |i: usize| -> Vec<u32> {
        from_server::<SpawnEntity>(&net.clients[i])
            .iter()
            .map(|s| s.entity)
            .collect()
    };
    assert_eq!(got(0), vec![1, 2]);
    assert_eq!(got(1), vec![1]);
    assert_eq!(got(2), vec![2, 3]);
    // A client that leaves leaves its rooms.
    command(net.client_app(1), |c| c.disconnect_zao());
    net.run_for(Duration::from_millis(500));
    assert_eq!(net.server().room(&RED).collect::<Vec<_>>(), vec![a]);
}

/// The game's server logic, the same whoever the client is: every chat
/// line is echoed to everyone, with the sender's id.
fn echo(mut heard: MessageReader<FromClient<Chat>>, mut sender: ZaoServerSender) {
    for m in heard.read() {
        let echo = Chat {
            seq: m.message.seq,
            sent_us: m.client.0,
        };
        sender.send(&echo, SendTarget::All).unwrap();
    }
}

/// Everyone is in: players may talk.
#[derive(Resource)]
struct Go;

/// The game's client logic: say hello once connected and the game is on.
fn hello(mut sender: ZaoClientSender, mut said: Local<bool>) {
    if !*said && sender.is_connected() {
        *said = sender.send(&Chat { seq: 7, sent_us: 0 }).is_ok();
    }
}

fn chat_protocol(app: &mut App) {
    app.add_zao_message::<Chat>(Channel::RELIABLE, Direction::Both);
}

#[test]
fn a_listen_servers_own_client_is_a_client_like_any_other() {
    let mut net = ZaoTestNet::new(11, chat_protocol);
    // The host: the server App (whose plugin set up both sides) also runs
    // the same client logic as a remote player.
    net.server
        .add_systems(Update, (echo, hello.run_if(resource_exists::<Go>)));
    collect::<ClientConnected>(&mut net.server);
    collect::<FromClient<Chat>>(&mut net.server);
    collect::<FromServer<Chat>>(&mut net.server);
    command(&mut net.server, |c| c.connect_zao_local(None));
    let i = net.add_client(LinkSpec::l2());
    net.client_app(i)
        .add_systems(Update, hello.run_if(resource_exists::<Go>));
    collect::<FromServer<Chat>>(net.client_app(i));
    assert!(net.run_until(LIMIT, |net| {
        net.try_server().is_some_and(|s| s.clients().len() == 2)
            && net.try_client(i).is_some_and(ZaoClient::is_connected)
    }));
    net.server.insert_resource(Go);
    net.client_app(i).insert_resource(Go);
    let done = net.run_until(LIMIT, |net| {
        from_server::<Chat>(&net.server).len() == 2
            && from_server::<Chat>(&net.clients[i]).len() == 2
    });
    assert!(
        done,
        "host {:?} heard {:?}, remote {:?} heard {:?}, server heard {:?}",
        net.server.world().get_resource::<ZaoClient>(),
        from_server::<Chat>(&net.server),
        net.try_client(i),
        from_server::<Chat>(&net.clients[i]),
        collected::<FromClient<Chat>>(&net.server),
    );
    let host = net.server.world().resource::<ZaoClient>().id().unwrap();
    let remote = net.client(i).id().unwrap();
    assert_ne!(host, remote);
    assert!(net.server.world().resource::<ZaoClient>().is_local());
    // The server saw two clients connect, each with an entity; the host
    // from the local address.
    let joined = collected::<ClientConnected>(&net.server);
    assert_eq!(joined.len(), 2);
    let local = joined.iter().find(|c| c.client == host).unwrap();
    assert_eq!(local.addr, LOCAL_ADDR);
    assert!(
        net.server
            .world()
            .get::<ConnectedClient>(local.entity)
            .is_some()
    );
    // Both said hello through the same code; both heard both echoes.
    let heard: BTreeSet<ClientId> = collected::<FromClient<Chat>>(&net.server)
        .iter()
        .map(|m| m.client)
        .collect();
    assert_eq!(heard, BTreeSet::from([host, remote]));
    for app in [&net.server, &net.clients[i]] {
        let echoes: BTreeSet<u64> = from_server::<Chat>(app).iter().map(|c| c.sent_us).collect();
        assert_eq!(echoes, BTreeSet::from([host.0, remote.0]));
    }
    assert_eq!(client_state(&net.server), ZaoClientState::Connected);
    // Kicking the host's client works as for anyone.
    collect::<Disconnected>(&mut net.server);
    net.server().kick(host, "host left");
    assert!(net.run_until(LIMIT, |net| {
        !collected::<Disconnected>(&net.server).is_empty()
    }));
    assert_eq!(net.server().clients().collect::<Vec<_>>(), vec![remote]);
}

#[test]
fn connecting_locally_without_a_server_is_a_failure_message() {
    let mut app = App::new();
    app.add_plugins(ZaoClientPlugin::default());
    chat_protocol(&mut app);
    app.finish();
    app.cleanup();
    command(&mut app, |c| c.connect_zao_local(None));
    app.update();
    assert_eq!(collected_len::<ConnectFailed>(&app), 1);
    assert_eq!(client_state(&app), ZaoClientState::Disconnected);
}

/// A game's own plugin group holding bevy_state's `StatesPlugin`, as
/// `DefaultPlugins` and `MinimalPlugins`-style groups do.
struct GameGroup;

impl bevy_app::PluginGroup for GameGroup {
    fn build(self) -> bevy_app::PluginGroupBuilder {
        bevy_app::PluginGroupBuilder::start::<Self>()
            .add(bevy_state::app::StatesPlugin)
            .add(TimePlugin)
    }
}

#[test]
fn the_states_plugin_may_come_before_or_after_the_zao_plugins() {
    let zao = |app: &mut App| {
        app.add_plugins((ZaoServerPlugin::default(), ZaoClientPlugin::default()));
    };
    let alone = |app: &mut App| {
        app.add_plugins(bevy_state::app::StatesPlugin);
    };
    let group = |app: &mut App| {
        app.add_plugins(GameGroup);
    };
    type Step = fn(&mut App);
    let orders: [(&str, [Step; 2]); 4] = [
        ("StatesPlugin, then zao", [alone, zao]),
        ("zao, then StatesPlugin", [zao, alone]),
        ("a group with StatesPlugin, then zao", [group, zao]),
        ("zao, then a group with StatesPlugin", [zao, group]),
    ];
    for (name, steps) in orders {
        let mut app = App::new();
        for step in steps {
            step(&mut app);
        }
        let ran = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let counter = ran.clone();
        app.add_plugins(ScheduleRunnerPlugin::run_once())
            .add_systems(
                Update,
                (move || {
                    counter.fetch_add(1, Ordering::Relaxed);
                })
                .run_if(bevy_state::condition::in_state(ZaoServerState::Stopped))
                .run_if(bevy_state::condition::in_state(
                    ZaoClientState::Disconnected,
                )),
            );
        chat_protocol(&mut app);
        // `run` builds, finishes and updates once: no panic, and the
        // states exist and gate systems.
        assert_eq!(app.run(), AppExit::Success, "{name}");
        assert_eq!(ran.load(Ordering::Relaxed), 1, "{name}");
    }
}

/// How many `M` an App kept (for messages that are not `Clone`).
fn collected_len<M: bevy_ecs::message::Message>(app: &App) -> usize {
    app.world()
        .get_resource::<bevy_ecs::message::Messages<M>>()
        .map_or(0, |m| m.len())
}

// Real sockets on loopback from here.

#[test]
fn a_busy_port_is_a_start_failure_message_not_a_panic() {
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let mut app = App::new();
    app.add_plugins(ZaoServerPlugin::start_at_launch(ZaoServerSettings::bind(
        addr,
    )));
    protocol(&mut app);
    app.finish();
    app.cleanup();
    for _ in 0..3 {
        app.update();
    }
    let failures = app
        .world_mut()
        .resource_mut::<bevy_ecs::message::Messages<ServerStartFailed>>()
        .drain()
        .collect::<Vec<_>>();
    match failures.as_slice() {
        [
            ServerStartFailed {
                error: StartError::Io(e),
            },
        ] => assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse),
        other => panic!("{other:?}"),
    }
    assert_eq!(server_state(&app), ZaoServerState::Stopped);
    assert!(!app.world().contains_resource::<ZaoServer>());
    // Free the port and start again from a "system": it serves.
    drop(taken);
    command(&mut app, |c| {
        c.start_zao_server(ZaoServerSettings::bind(addr))
    });
    for _ in 0..3 {
        app.update();
    }
    assert_eq!(server_state(&app), ZaoServerState::Running);
    assert_eq!(app.world().resource::<ZaoServer>().local_addr(), Some(addr));
}

/// What the headless client below counted.
#[derive(Resource, Default)]
struct Seen {
    moved: usize,
    fixed_ticks: u32,
}

/// A headless client App on `ScheduleRunnerPlugin` with a 60 Hz
/// `Time<Fixed>`, over real QUIC on loopback: it sends a `PlayerInput` from
/// `FixedUpdate` each tick and exits once the server's broadcasts arrive.
/// The server is a bare transport on another thread.
#[test]
fn a_headless_app_runs_on_schedule_runner_with_a_fixed_tick() {
    let mut server = Server::start(ServerConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        Certificate::self_signed(&["localhost"]).unwrap(),
        zao_messages::protocol(),
    ))
    .unwrap();
    let settings = ZaoClientSettings::pinned(server.local_addr(), server.certificate_hash());
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
        ZaoClientPlugin::connect_at_launch(settings),
    ))
    .insert_resource(Time::<Fixed>::from_hz(60.0))
    .init_resource::<Seen>();
    protocol(&mut app);
    // `run` hands the App to the runner: what the checks need is kept here
    // when the App exits (fixed ticks run, the App's elapsed time).
    let at_exit = Arc::new(std::sync::Mutex::new((0u32, 0.0f64)));
    let kept = at_exit.clone();
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
        move |mut seen: ResMut<Seen>,
              mut moved: MessageReader<FromServer<PlayerMoved>>,
              mut gone: MessageReader<Disconnected>,
              client: Option<Res<ZaoClient>>,
              time: Res<Time>,
              mut exit: MessageWriter<AppExit>| {
            seen.moved += moved.read().count();
            if let Some(Disconnected { reason }) = gone.read().next() {
                panic!("disconnected: {reason}");
            }
            let connected = client.is_some_and(|c| c.is_connected());
            if seen.moved >= 10 && seen.fixed_ticks >= 10 && connected {
                *kept.lock().unwrap() = (seen.fixed_ticks, time.elapsed_secs_f64());
                exit.write(AppExit::Success);
            } else if time.elapsed() > LIMIT {
                exit.write(AppExit::error());
            }
        },
    );
    let outcome = app.run();
    stop.store(true, Ordering::Release);
    let ticks = server_thread.join().unwrap();
    assert_eq!(outcome, AppExit::Success);
    // The fixed schedule ran at 60 Hz of the App's time, not once per
    // frame (the runner loops every 2 ms): within two ticks and 5 %.
    let (ran, elapsed) = *at_exit.lock().unwrap();
    let expected = elapsed * 60.0;
    assert!(
        (f64::from(ran) - expected).abs() <= 2.0 + expected * 0.05,
        "{ran} fixed ticks in {elapsed:.3} s at 60 Hz"
    );
    // Fixed-tick inputs arrived, each numbered by the fixed tick that sent
    // it, once (unreliable over loopback: most, in any order).
    assert!(
        ticks.iter().all(|&t| (1..=ran).contains(&t)),
        "ticks outside 1..={ran}: {ticks:?}"
    );
    assert!(
        ticks.iter().collect::<BTreeSet<_>>().len() == ticks.len(),
        "each fixed tick sends its own input: {ticks:?}"
    );
    assert!(
        ticks.len() * 2 >= ran as usize,
        "{} of {ran}: {ticks:?}",
        ticks.len()
    );
}

/// Records the events of target `zao::traffic`, as text.
#[derive(Clone, Default)]
struct Traffic(Arc<std::sync::Mutex<Vec<String>>>);

impl tracing::Subscriber for Traffic {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        metadata.target() == "zao::traffic"
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Text(String);
        impl tracing::field::Visit for Text {
            fn record_debug(&mut self, _: &tracing::field::Field, value: &dyn core::fmt::Debug) {
                self.0 += &format!("{value:?}");
            }
        }
        let mut text = Text(String::new());
        event.record(&mut text);
        self.0.lock().unwrap().push(text.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn traffic_is_logged_as_readable_text_at_trace_level() {
    let traffic = Traffic::default();
    let lines = traffic.0.clone();
    // tracing caches a callsite's interest the first time any thread hits
    // it. While only one dispatcher is registered, it asks that thread's
    // default, so another test's thread, which has none, could cache
    // `never` for a callsite of this test (tracing-core 0.1's `JustOne`
    // rebuilder) and its events would be lost: the test failed on 1 run in
    // a clean CI. A second registered dispatcher makes tracing ask every
    // registered one, this test's included.
    let _second = tracing::Dispatch::new(Traffic::default());
    tracing::subscriber::with_default(traffic, || {
        let mut net = ZaoTestNet::new(12, protocol);
        let i = net.add_client(LinkSpec::l1());
        collect::<FromServer<Inventory>>(net.client_app(i));
        let id = net.connect_all(LIMIT)[0];
        write(&mut net.clients[i], ToServer(spawn(5)));
        write(
            &mut net.server,
            ToClients {
                target: SendTarget::One(id),
                message: inventory(6),
            },
        );
        assert!(net.run_until(LIMIT, |net| {
            !from_server::<Inventory>(&net.clients[i]).is_empty()
        }));
        net.run_for(Duration::from_millis(300));
    });
    let lines = lines.lock().unwrap();
    let has = |needle: &str| lines.iter().any(|l| l.contains(needle));
    // Both ends of both messages, as the inspector's text.
    assert!(
        has("client → server: SpawnEntity { entity: 5,"),
        "{lines:#?}"
    );
    assert!(
        has("client 1 → server: SpawnEntity { entity: 5,"),
        "{lines:#?}"
    );
    assert!(
        has("server → One(ClientId(1)): Inventory { owner: 6,"),
        "{lines:#?}"
    );
    assert!(has("server → client: Inventory { owner: 6,"), "{lines:#?}");
}

/// `collected` on a type nobody collects is an error, not an empty list
/// that makes "nothing arrived" pass without looking.
#[test]
#[should_panic(expected = "call collect")]
fn collected_without_collect_is_an_error() {
    let net = ZaoTestNet::new(3, protocol);
    let _ = collected::<FromServer<PlayerMoved>>(&net.server);
}
