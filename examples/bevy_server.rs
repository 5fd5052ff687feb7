//! A headless Bevy server: `examples/server.rs` as a Bevy app. It serves the
//! reference protocol on a 30 Hz fixed tick (ScheduleRunnerPlugin, Time<Fixed>,
//! no rendering crate), broadcasting snapshots, greeting each newcomer with
//! a spawn and an inventory, echoing each client's moves to the others, and
//! printing what clients send.
//!
//! ```sh
//! cargo run --release --example bevy_server -- --bind 127.0.0.1:4433 --seconds 60
//! # then, in another terminal, the command it prints:
//! cargo run --release --example bevy_client -- 127.0.0.1:4433 <sha256>
//! ```

// Bevy system parameters elide their lifetimes by convention.
#![allow(elided_lifetimes_in_paths)]

use std::collections::BTreeMap;
use std::time::Duration;

use bevy_app::{App, AppExit, FixedUpdate, ScheduleRunnerPlugin, Update};
use bevy_ecs::prelude::*;
use bevy_time::{Fixed, Time, TimePlugin};
use zao::bevy::{
    AppZaoExt, Channel, ClientConnected, ClientDisconnected, ClientRefused, Direction, FromClient,
    SendTarget, ServerStartFailed, ServerStarted, ToClients, ZaoServer, ZaoServerPlugin,
    ZaoServerSettings, server_running,
};
use zao_messages::{Inventory, PlayerInput, PlayerMoved, SpawnEntity, WorldSnapshot, samples};

/// The reference protocol (`zao_messages::protocol()`); the client
/// registers the same lines.
fn protocol(app: &mut App) {
    app.add_zao_message::<PlayerMoved>(Channel::UNRELIABLE, Direction::Both)
        .add_zao_message::<PlayerInput>(Channel::UNRELIABLE, Direction::ClientToServer)
        .add_zao_message::<SpawnEntity>(Channel::RELIABLE, Direction::Both)
        .add_zao_snapshot::<WorldSnapshot>()
        .add_zao_message::<Inventory>(Channel::RELIABLE, Direction::Both);
}

#[derive(Resource)]
struct RunFor(Duration);

#[derive(Resource, Default)]
struct Received {
    counts: BTreeMap<&'static str, u64>,
    ever_connected: bool,
}

fn arg(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1).cloned())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let bind = arg(&args, "--bind").unwrap_or_else(|| "127.0.0.1:4433".to_owned());
    let seconds: u64 = arg(&args, "--seconds").map_or(Ok(60), |s| s.parse())?;

    let mut app = App::new();
    app.add_plugins((
        // The app loop: as fast as 1 ms apart; the game runs on the fixed tick.
        ScheduleRunnerPlugin::run_loop(Duration::from_millis(1)),
        TimePlugin,
        ZaoServerPlugin::start_at_launch(ZaoServerSettings::bind(bind.parse()?)),
    ))
    .insert_resource(Time::<Fixed>::from_hz(30.0))
    .insert_resource(RunFor(Duration::from_secs(seconds)))
    .init_resource::<Received>();
    protocol(&mut app);
    app.add_systems(Update, announce)
        .add_systems(
            Update,
            (
                connections,
                (
                    print_received::<PlayerMoved>,
                    print_received::<PlayerInput>,
                    print_received::<SpawnEntity>,
                    print_received::<Inventory>,
                    echo_moves,
                ),
            )
                .chain(),
        )
        .add_systems(
            FixedUpdate,
            (broadcast, stop_when_done).run_if(server_running),
        );
    match app.run() {
        AppExit::Success => Ok(()),
        AppExit::Error(code) => Err(format!("exit code {code}").into()),
    }
}

/// Prints where the server listens once it does; a failed start (the
/// port in use) ends the app with the reason.
fn announce(
    server: Option<Res<ZaoServer>>,
    mut started: MessageReader<ServerStarted>,
    mut failed: MessageReader<ServerStartFailed>,
    mut exit: MessageWriter<AppExit>,
) {
    for ServerStartFailed { error } in failed.read() {
        eprintln!("the server could not start: {error}");
        exit.write(AppExit::error());
    }
    if started.read().next().is_none() {
        return;
    }
    let Some(server) = server else { return };
    let (Some(addr), Some(hash)) = (server.local_addr(), server.certificate_hash()) else {
        return;
    };
    println!("zao bevy server on {addr}");
    println!("certificate SHA-256 {hash}");
    println!("run: cargo run --release --example bevy_client -- {addr} {hash}");
}

/// Greets each newcomer with its avatar and an inventory, reliably.
fn connections(
    mut connected: MessageReader<ClientConnected>,
    mut refused: MessageReader<ClientRefused>,
    mut disconnected: MessageReader<ClientDisconnected>,
    mut spawns: MessageWriter<ToClients<SpawnEntity>>,
    mut inventories: MessageWriter<ToClients<Inventory>>,
    mut received: ResMut<Received>,
) {
    for ClientConnected { client, addr, .. } in connected.read() {
        received.ever_connected = true;
        println!("+ {client} from {addr}");
        let target = SendTarget::One(*client);
        spawns.write(ToClients {
            target: target.clone(),
            message: samples::spawn_entity(),
        });
        inventories.write(ToClients {
            target,
            message: samples::inventory(16),
        });
    }
    for ClientRefused { addr, reason } in refused.read() {
        println!("x {addr} refused: {reason}");
    }
    for ClientDisconnected { client, reason, .. } in disconnected.read() {
        println!("- {client}: {reason}");
    }
}

fn print_received<T: zao::NetMessage + Send + Sync + 'static>(
    mut messages: MessageReader<FromClient<T>>,
    mut received: ResMut<Received>,
) {
    for FromClient { client, .. } in messages.read() {
        let count = received.counts.entry(T::NAME).or_default();
        if *count == 0 {
            println!("  first {} from {client}", T::NAME);
        }
        *count += 1;
    }
}

/// Each client's moves go to every other client (one encode, shared bytes).
fn echo_moves(
    mut moves: MessageReader<FromClient<PlayerMoved>>,
    mut out: MessageWriter<ToClients<PlayerMoved>>,
) {
    for FromClient {
        client, message, ..
    } in moves.read()
    {
        out.write(ToClients {
            target: SendTarget::AllExcept(*client),
            message: *message,
        });
    }
}

/// Every fixed tick: a 64-player snapshot and a move, to everyone.
fn broadcast(
    mut tick: Local<u32>,
    mut snapshots: MessageWriter<ToClients<WorldSnapshot>>,
    mut moves: MessageWriter<ToClients<PlayerMoved>>,
) {
    *tick += 1;
    snapshots.write(ToClients {
        target: SendTarget::All,
        message: WorldSnapshot {
            tick: *tick,
            ..samples::world_snapshot(64)
        },
    });
    moves.write(ToClients {
        target: SendTarget::All,
        message: PlayerMoved {
            entity: *tick,
            ..samples::player_moved()
        },
    });
}

/// Stops after `--seconds`, or once every client that came has left.
fn stop_when_done(
    time: Res<Time>,
    run_for: Res<RunFor>,
    server: Res<ZaoServer>,
    received: Res<Received>,
    mut exit: MessageWriter<AppExit>,
    mut done: Local<bool>,
) {
    let everyone_left = received.ever_connected && server.clients().len() == 0;
    if !*done && (time.elapsed() >= run_for.0 || everyone_left) {
        *done = true;
        println!("received from clients: {:?}", received.counts);
        exit.write(AppExit::Success);
    }
}
