//! A Bevy server in an Agones fleet, against the Agones SDK's real gRPC
//! API served on 127.0.0.1 ([`LocalSdkServer`]), the game traffic over
//! real QUIC on 127.0.0.1: Ready only after the bind, no player before
//! the allocation, the allocation's labels in the game and its tokens
//! checked by the auth callback, players reported on the `players` list,
//! health only from the game's ticks (a frozen loop stops it while the
//! network threads run on), and a drain that delivers every queued
//! reliable message before the SDK hears Shutdown.

#![cfg(all(feature = "agones", feature = "bevy", feature = "sim"))]
// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy_app::{App, AppExit};
use bevy_state::state::State;
use zao::bevy::testing::{collect, collected};
use zao::bevy::{
    AppZaoExt, Channel, ChannelKind, CloseCode, ClosedBy, Connected, Direction, DisconnectReason,
    Disconnected, FleetAllocated, FleetDraining, FleetReady, FleetShutDown, FromServer,
    RefuseReason, SendTarget, ServerStarted, ToClients, ZaoClientPlugin, ZaoClientSettings,
    ZaoCommandsExt, ZaoFleet, ZaoFleetCommandsExt, ZaoFleetPlugin, ZaoFleetState, ZaoServer,
    ZaoServerPlugin, ZaoServerSettings, ZaoServerState,
};
use zao::fleet::agones::{AgonesSettings, LocalSdkServer, SdkCall};
use zao::fleet::{DrainCause, FleetHandle, FleetSettings};
use zao::proto::{AuthCallback, AuthError, Identity};
use zao::quic::ConditionerConfig;
use zao::{Decode, Encode, NetMessage};

const LIMIT: Duration = Duration::from_secs(20);
const TICK: Duration = Duration::from_millis(5);
const QUEUED: u32 = 300;

/// An ordered game event.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 40)]
struct Chat {
    seq: u32,
    text: String,
}

/// A reward: must arrive, in any order.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 41)]
struct Reward {
    seq: u32,
}

fn protocol(app: &mut App) {
    app.add_zao_channel("rewards", ChannelKind::ReliableUnordered)
        .add_zao_message::<Chat>(Channel::RELIABLE, Direction::ServerToClient)
        .add_zao_message::<Reward>("rewards", Direction::ServerToClient);
}

/// Admits a client whose token the matchmaker listed in the allocation's
/// `zao.dev/tokens` annotation; its identity is the token.
fn tokens_from_allocation(fleet: FleetHandle) -> AuthCallback {
    Arc::new(move |request| {
        let fleet = fleet.clone();
        Box::pin(async move {
            let token =
                String::from_utf8_lossy(request.token.as_deref().unwrap_or_default()).into_owned();
            let allowed = fleet.allocation().is_some_and(|a| {
                a.annotations
                    .get("zao.dev/tokens")
                    .is_some_and(|list| list.split(',').any(|t| t == token))
            });
            if allowed {
                Ok(Identity::new(token))
            } else {
                Err(AuthError::Rejected("not in this match".to_owned()))
            }
        })
    })
}

fn server_app(sdk: &LocalSdkServer, settings: FleetSettings) -> App {
    let mut app = App::new();
    app.add_plugins((
        ZaoServerPlugin::default(),
        ZaoFleetPlugin::agones(AgonesSettings::port(sdk.port()))
            .unwrap()
            .with_settings(settings),
    ));
    protocol(&mut app);
    collect::<ServerStarted>(&mut app);
    collect::<FleetReady>(&mut app);
    collect::<FleetAllocated>(&mut app);
    collect::<FleetDraining>(&mut app);
    collect::<FleetShutDown>(&mut app);
    collect::<AppExit>(&mut app);
    app.finish();
    app.cleanup();
    app
}

fn start(app: &mut App, conditioner: Option<ConditionerConfig>) {
    let handle = app.world().resource::<ZaoFleet>().handle();
    let mut settings = ZaoServerSettings::bind("127.0.0.1:0".parse().unwrap());
    settings.auth = Some(tokens_from_allocation(handle));
    settings.conditioner = conditioner;
    let world = app.world_mut();
    world.commands().start_zao_server(settings);
    world.flush();
}

fn client_app(server: &App, token: &str) -> App {
    let zao = server.world().resource::<ZaoServer>();
    let mut settings =
        ZaoClientSettings::pinned(zao.local_addr().unwrap(), zao.certificate_hash().unwrap());
    settings.token = Some(token.as_bytes().to_vec());
    let mut app = App::new();
    app.add_plugins(ZaoClientPlugin::connect_at_launch(settings));
    protocol(&mut app);
    collect::<Connected>(&mut app);
    collect::<Disconnected>(&mut app);
    collect::<FromServer<Chat>>(&mut app);
    collect::<FromServer<Reward>>(&mut app);
    app.finish();
    app.cleanup();
    app
}

/// Updates every App each tick until `done` or `limit`; whether `done`.
fn run_until(
    apps: &mut [&mut App],
    limit: Duration,
    mut done: impl FnMut(&[&mut App]) -> bool,
) -> bool {
    let end = Instant::now() + limit;
    loop {
        for app in apps.iter_mut() {
            app.update();
        }
        if done(apps) {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(TICK);
    }
}

fn fleet_state(app: &App) -> ZaoFleetState {
    *app.world().resource::<State<ZaoFleetState>>().get()
}

fn index_of(calls: &[SdkCall], call: &SdkCall) -> usize {
    calls
        .iter()
        .position(|c| c == call)
        .unwrap_or_else(|| panic!("no {call:?} in {calls:?}"))
}

#[test]
fn the_lifecycle_runs_in_order_against_the_agones_sdk() {
    let sdk = LocalSdkServer::start().unwrap();
    let mut server = server_app(&sdk, FleetSettings::default());

    // Ready only once the endpoint is bound: nothing before the start.
    assert!(!run_until(
        &mut [&mut server],
        Duration::from_millis(300),
        |_| false
    ));
    assert!(
        !sdk.calls().contains(&SdkCall::Ready),
        "Ready before the server was bound: {:?}",
        sdk.calls()
    );
    assert_eq!(fleet_state(&server), ZaoFleetState::Starting);

    // Packets to clients held 20 ms each way, 2 % lost: the drain below
    // has messages in flight.
    start(
        &mut server,
        Some(ConditionerConfig {
            latency: Duration::from_millis(20),
            loss: 0.02,
            ..ConditionerConfig::default()
        }),
    );
    let ready = run_until(&mut [&mut server], LIMIT, |_| sdk.state() == "Ready");
    assert!(ready, "the SDK heard Ready: {:?}", sdk.calls());
    assert_eq!(
        *server.world().resource::<State<ZaoServerState>>().get(),
        ZaoServerState::Running
    );
    server.update();
    assert_eq!(collected::<FleetReady>(&server).len(), 1);
    // The certificate's hash for the matchmaker, before Ready.
    let hash = server
        .world()
        .resource::<ZaoServer>()
        .certificate_hash()
        .unwrap()
        .to_string();
    let calls = sdk.calls();
    let annotated = index_of(
        &calls,
        &SdkCall::SetAnnotation("zao-cert-sha256".into(), hash),
    );
    assert!(annotated < index_of(&calls, &SdkCall::Ready));
    assert_eq!(fleet_state(&server), ZaoFleetState::Ready);

    // Not allocated: a player is refused, as draining (look elsewhere).
    let mut early = client_app(&server, "tokA");
    let refused = run_until(&mut [&mut server, &mut early], LIMIT, |apps| {
        !collected::<Disconnected>(apps[1]).is_empty()
    });
    assert!(refused);
    assert!(
        matches!(
            collected::<Disconnected>(&early)[0].reason,
            DisconnectReason::Refused(RefuseReason::Draining)
        ),
        "{:?}",
        collected::<Disconnected>(&early)
    );
    assert!(sdk.list("players").is_empty());

    // The allocator allocates: the labels reach the game, the tokens the
    // auth callback.
    sdk.allocate([("match", "m-42")], [("zao.dev/tokens", "tokA,tokB")]);
    // The state follows in the next update, as Bevy's states do.
    let allocated = run_until(&mut [&mut server], LIMIT, |apps| {
        !collected::<FleetAllocated>(apps[0]).is_empty()
            && fleet_state(apps[0]) == ZaoFleetState::Allocated
    });
    assert!(allocated, "the game heard of the allocation");
    let allocation = &collected::<FleetAllocated>(&server)[0].0;
    assert_eq!(
        allocation.labels.get("match").map(String::as_str),
        Some("m-42")
    );
    assert_eq!(fleet_state(&server), ZaoFleetState::Allocated);

    let mut player = client_app(&server, "tokA");
    let mut stranger = client_app(&server, "tokZ");
    let joined = run_until(
        &mut [&mut server, &mut player, &mut stranger],
        LIMIT,
        |apps| {
            !collected::<Connected>(apps[1]).is_empty()
                && !collected::<Disconnected>(apps[2]).is_empty()
        },
    );
    assert!(
        joined,
        "the listed player joined and the stranger was refused"
    );
    assert!(
        matches!(
            &collected::<Disconnected>(&stranger)[0].reason,
            DisconnectReason::Refused(RefuseReason::Unauthorized { detail }) if detail.contains("not in this match")
        ),
        "{:?}",
        collected::<Disconnected>(&stranger)
    );
    let listed = run_until(&mut [&mut server, &mut player], LIMIT, |_| {
        sdk.list("players") == ["tokA"]
    });
    assert!(
        listed,
        "the player is on the players list: {:?}",
        sdk.list("players")
    );

    // Queue reliable messages, ordered and unordered, then drain while
    // they travel.
    for seq in 0..QUEUED {
        let world = server.world_mut();
        world.write_message(ToClients {
            target: SendTarget::All,
            message: Chat {
                seq,
                text: "x".repeat(200),
            },
        });
        world.write_message(ToClients {
            target: SendTarget::All,
            message: Reward { seq },
        });
    }
    server.update();
    let world = server.world_mut();
    world.commands().drain_zao_server();
    world.flush();

    // Every message reaches the player even though the server shuts down
    // (a plain close loses them: this test fails with one). What the
    // server waits for is the player's QUIC acknowledgements, which come
    // before the player's App reads the messages: so the test checks
    // delivery and the SDK's order, not which App saw what first.
    let over = run_until(&mut [&mut server, &mut player], LIMIT, |apps| {
        !collected::<AppExit>(apps[0]).is_empty() && !collected::<Disconnected>(apps[1]).is_empty()
    });
    assert!(over, "the drain ended and the App exits");
    assert!(matches!(
        collected::<FleetDraining>(&server),
        [FleetDraining(DrainCause::Game)]
    ));
    assert_eq!(collected::<FleetShutDown>(&server).len(), 1);

    let chats: Vec<u32> = collected::<FromServer<Chat>>(&player)
        .iter()
        .map(|m| m.0.seq)
        .collect();
    assert_eq!(
        chats,
        (0..QUEUED).collect::<Vec<_>>(),
        "every ordered message, in order"
    );
    let mut rewards: Vec<u32> = collected::<FromServer<Reward>>(&player)
        .iter()
        .map(|m| m.0.seq)
        .collect();
    rewards.sort_unstable();
    assert_eq!(
        rewards,
        (0..QUEUED).collect::<Vec<_>>(),
        "every unordered message, once"
    );
    match &collected::<Disconnected>(&player)[0].reason {
        DisconnectReason::Closed {
            by: ClosedBy::Peer,
            code: CloseCode::Normal,
            reason,
        } => assert_eq!(reason, "server shutting down"),
        other => panic!("{other:?}"),
    }

    // Shutdown last, after the player left the list, and after the player
    // had everything.
    let shut = sdk.wait_for(LIMIT, |calls| calls.contains(&SdkCall::Shutdown));
    assert!(shut, "the SDK heard Shutdown: {:?}", sdk.calls());
    let calls = sdk.calls();
    let ready = index_of(&calls, &SdkCall::Ready);
    let add = index_of(
        &calls,
        &SdkCall::AddListValue("players".into(), "tokA".into()),
    );
    let remove = index_of(
        &calls,
        &SdkCall::RemoveListValue("players".into(), "tokA".into()),
    );
    let shutdown = index_of(&calls, &SdkCall::Shutdown);
    assert!(
        ready < add && add < remove && remove < shutdown,
        "{calls:?}"
    );
    assert!(
        calls[shutdown + 1..].iter().all(|c| *c == SdkCall::Health),
        "nothing but health after Shutdown: {calls:?}"
    );
    assert!(sdk.list("players").is_empty());
    assert_eq!(sdk.state(), "Shutdown");
    server.update();
    assert_eq!(fleet_state(&server), ZaoFleetState::ShutDown);
}

#[test]
fn a_frozen_game_loop_stops_the_health_reports_while_the_network_runs_on() {
    let sdk = LocalSdkServer::start().unwrap();
    let mut settings = FleetSettings::default();
    settings.health_interval = Duration::from_millis(50);
    let mut server = server_app(&sdk, settings);
    start(&mut server, None);
    assert!(run_until(&mut [&mut server], LIMIT, |_| sdk.state() == "Ready"));
    sdk.allocate([], [("zao.dev/tokens", "p1")]);
    assert!(run_until(&mut [&mut server], LIMIT, |apps| fleet_state(
        apps[0]
    )
        == ZaoFleetState::Allocated));
    let mut player = client_app(&server, "p1");
    let pings = sdk.health_pings();
    let joined = run_until(&mut [&mut server, &mut player], LIMIT, |apps| {
        !collected::<Connected>(apps[1]).is_empty()
    });
    assert!(joined);
    run_until(
        &mut [&mut server, &mut player],
        Duration::from_secs(1),
        |_| false,
    );
    let ticking = sdk.health_pings() - pings;
    assert!(
        ticking >= 5,
        "health while the loop ticks: {ticking} in 1 s at 50 ms"
    );

    // The game loop hangs; the server's network threads do not. Reports
    // the loop queued before it hung reach the SDK server first.
    std::thread::sleep(Duration::from_millis(300));
    let frozen_at = sdk.health_pings();
    std::thread::sleep(Duration::from_millis(1500));
    let frozen = sdk.health_pings() - frozen_at;
    assert!(
        frozen <= 1,
        "{frozen} health reports while the game loop was frozen for 1.5 s"
    );

    let resumed_at = sdk.health_pings();
    run_until(
        &mut [&mut server, &mut player],
        Duration::from_secs(1),
        |_| false,
    );
    let resumed = sdk.health_pings() - resumed_at;
    assert!(
        resumed >= 3,
        "health again once the loop ticks: {resumed} in 1 s"
    );
    // The network threads kept the connection alive through the freeze.
    assert!(
        collected::<Disconnected>(&player).is_empty(),
        "{:?}",
        collected::<Disconnected>(&player)
    );
    assert_eq!(server.world().resource::<ZaoServer>().clients().len(), 1);
}

#[test]
fn a_server_restarted_while_allocated_admits_players_at_once() {
    let sdk = LocalSdkServer::start().unwrap();
    let mut server = server_app(&sdk, FleetSettings::default());
    start(&mut server, None);
    assert!(run_until(&mut [&mut server], LIMIT, |_| sdk.state() == "Ready"));
    sdk.allocate([], [("zao.dev/tokens", "p1")]);
    assert!(run_until(&mut [&mut server], LIMIT, |apps| {
        fleet_state(apps[0]) == ZaoFleetState::Allocated
    }));

    // The game restarts its server mid-match (a new port, the same fleet).
    let world = server.world_mut();
    world.commands().stop_zao_server();
    world.flush();
    server.update();
    start(&mut server, None);
    assert!(run_until(&mut [&mut server], LIMIT, |apps| {
        apps[0].world().contains_resource::<ZaoServer>()
    }));
    let mut player = client_app(&server, "p1");
    let joined = run_until(&mut [&mut server, &mut player], LIMIT, |apps| {
        !collected::<Connected>(apps[1]).is_empty()
            || !collected::<Disconnected>(apps[1]).is_empty()
    });
    assert!(joined);
    assert_eq!(
        collected::<Connected>(&player).len(),
        1,
        "admitted, not refused: {:?}",
        collected::<Disconnected>(&player)
    );
}

#[test]
fn the_local_sdk_server_stops_while_the_sdk_holds_its_streams_open() {
    use zao::fleet::FleetBackend as _;
    use zao::fleet::agones::Agones;
    let sdk = LocalSdkServer::start().unwrap();
    let mut agones = Agones::connect(AgonesSettings::port(sdk.port())).unwrap();
    assert!(sdk.wait_for(LIMIT, |calls| calls.contains(&SdkCall::Watch)));
    agones.ready();
    assert!(sdk.wait_for(LIMIT, |calls| calls.contains(&SdkCall::Ready)));
    // The Health and WatchGameServer streams are open: stopping must not
    // wait for them.
    let (done, stopped) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(sdk);
        let _ = done.send(());
    });
    assert!(
        stopped.recv_timeout(Duration::from_secs(5)).is_ok(),
        "the local SDK server did not stop"
    );
    drop(agones);
}

#[test]
fn the_fleet_plugin_may_come_before_the_server_plugin() {
    let sdk = LocalSdkServer::start().unwrap();
    let mut app = App::new();
    app.add_plugins((
        ZaoFleetPlugin::agones(AgonesSettings::port(sdk.port())).unwrap(),
        ZaoServerPlugin::default(),
    ));
    app.finish();
    app.cleanup();
    app.update();
    assert_eq!(fleet_state(&app), ZaoFleetState::Starting);
}
