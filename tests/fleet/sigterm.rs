//! The same drain without a fleet manager: a Bevy server with
//! `ZaoFleetPlugin::standalone()` takes SIGTERM (what Kubernetes, Nomad,
//! systemd and Docker stop a process with) as the start of a drain: the
//! process lives on, the connected player gets every queued reliable
//! message and then the close "server shutting down", and the App exits.
//! The signal goes to the whole test process; no other test here minds it.

#![cfg(unix)]

use std::time::{Duration, Instant};

use bevy_app::{App, AppExit};
use zao::bevy::testing::{collect, collected};
use zao::bevy::{
    AppZaoExt, Channel, CloseCode, ClosedBy, Connected, Direction, DisconnectReason, Disconnected,
    FleetAllocated, FleetDraining, FleetShutDown, FromServer, SendTarget, ToClients,
    ZaoClientPlugin, ZaoClientSettings, ZaoFleetPlugin, ZaoServer, ZaoServerPlugin,
    ZaoServerSettings,
};
use zao::fleet::DrainCause;
use zao::{Decode, Encode, NetMessage};

const LIMIT: Duration = Duration::from_secs(20);
const QUEUED: u32 = 500;

/// An ordered game event.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 40)]
struct Chat {
    seq: u32,
    text: String,
}

fn protocol(app: &mut App) {
    app.add_zao_message::<Chat>(Channel::RELIABLE, Direction::ServerToClient);
}

fn run_until(apps: &mut [&mut App], mut done: impl FnMut(&[&mut App]) -> bool) -> bool {
    let end = Instant::now() + LIMIT;
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
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn sigterm_drains_a_standalone_server_then_the_app_exits() {
    let mut server = App::new();
    server.add_plugins((
        ZaoServerPlugin::start_at_launch(ZaoServerSettings::bind("127.0.0.1:0".parse().unwrap())),
        ZaoFleetPlugin::standalone(),
    ));
    protocol(&mut server);
    collect::<FleetAllocated>(&mut server);
    collect::<FleetDraining>(&mut server);
    collect::<FleetShutDown>(&mut server);
    collect::<AppExit>(&mut server);
    server.finish();
    server.cleanup();
    // A standalone server allocates itself once it is ready.
    assert!(run_until(&mut [&mut server], |apps| {
        !collected::<FleetAllocated>(apps[0]).is_empty()
    }));

    let zao = server.world().resource::<ZaoServer>();
    let settings =
        ZaoClientSettings::pinned(zao.local_addr().unwrap(), zao.certificate_hash().unwrap());
    let mut player = App::new();
    player.add_plugins(ZaoClientPlugin::connect_at_launch(settings));
    protocol(&mut player);
    collect::<Connected>(&mut player);
    collect::<Disconnected>(&mut player);
    collect::<FromServer<Chat>>(&mut player);
    player.finish();
    player.cleanup();
    assert!(run_until(&mut [&mut server, &mut player], |apps| {
        !collected::<Connected>(apps[1]).is_empty()
    }));

    for seq in 0..QUEUED {
        server.world_mut().write_message(ToClients {
            target: SendTarget::All,
            message: Chat {
                seq,
                text: "y".repeat(400),
            },
        });
    }
    server.update();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &std::process::id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());

    let over = run_until(&mut [&mut server, &mut player], |apps| {
        !collected::<AppExit>(apps[0]).is_empty() && !collected::<Disconnected>(apps[1]).is_empty()
    });
    assert!(over, "the drain ended and the App exits");
    assert!(matches!(
        collected::<FleetDraining>(&server),
        [FleetDraining(DrainCause::Signal)]
    ));
    assert_eq!(collected::<FleetShutDown>(&server).len(), 1);
    let chats: Vec<u32> = collected::<FromServer<Chat>>(&player)
        .iter()
        .map(|m| m.0.seq)
        .collect();
    assert_eq!(chats, (0..QUEUED).collect::<Vec<_>>());
    match &collected::<Disconnected>(&player)[0].reason {
        DisconnectReason::Closed {
            by: ClosedBy::Peer,
            code: CloseCode::Normal,
            reason,
        } => assert_eq!(reason, "server shutting down"),
        other => panic!("{other:?}"),
    }
}
