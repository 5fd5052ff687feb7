//! A headless Bevy client: `examples/client.rs` as a Bevy app. It connects
//! to `examples/bevy_server.rs` (or `examples/server.rs`) given its address
//! and certificate hash, sends every message a client may send (inputs and
//! moves on a 30 Hz fixed tick), prints what the server sends, then leaves.
//!
//! ```sh
//! cargo run --release --example bevy_client -- 127.0.0.1:4433 <sha256> --seconds 3
//! ```

// Bevy system parameters elide their lifetimes by convention.
#![allow(elided_lifetimes_in_paths)]

use std::collections::BTreeMap;
use std::time::Duration;

use bevy_app::{App, AppExit, FixedUpdate, ScheduleRunnerPlugin, Update};
use bevy_ecs::prelude::*;
use bevy_time::{Fixed, Time, TimePlugin};
use zao::bevy::{
    AppZaoExt, Channel, Connected, Direction, Disconnected, FromServer, ToServer, ZaoClient,
    ZaoClientPlugin, ZaoClientSettings, client_connected,
};
use zao::quic::CertHash;
use zao_messages::{Inventory, PlayerInput, PlayerMoved, SpawnEntity, WorldSnapshot, samples};

/// The reference protocol (`zao_messages::protocol()`); the server
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
struct Received(BTreeMap<&'static str, u64>);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(addr), Some(hash)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: bevy_client <server address> <certificate sha256> [--seconds N]");
        std::process::exit(2);
    };
    let seconds: u64 = args
        .iter()
        .position(|a| a == "--seconds")
        .and_then(|i| args.get(i + 1))
        .map_or(Ok(3), |s| s.parse())?;
    let hash: CertHash = hash.parse()?;

    let mut app = App::new();
    app.add_plugins((
        ScheduleRunnerPlugin::run_loop(Duration::from_millis(1)),
        TimePlugin,
        ZaoClientPlugin::connect_at_launch(ZaoClientSettings::pinned(addr.parse()?, hash)),
    ))
    .insert_resource(Time::<Fixed>::from_hz(30.0))
    .insert_resource(RunFor(Duration::from_secs(seconds)))
    .init_resource::<Received>();
    protocol(&mut app);
    app.add_systems(Update, (connection, print_received).chain())
        .add_systems(
            FixedUpdate,
            (send_inputs, leave_when_done).run_if(client_connected),
        );
    match app.run() {
        AppExit::Success => Ok(()),
        AppExit::Error(code) => Err(format!("exit code {code}").into()),
    }
}

/// Once accepted: a spawn and an inventory, reliably. A disconnect ends
/// the app.
fn connection(
    mut connected: MessageReader<Connected>,
    mut disconnected: MessageReader<Disconnected>,
    mut spawns: MessageWriter<ToServer<SpawnEntity>>,
    mut inventories: MessageWriter<ToServer<Inventory>>,
    mut exit: MessageWriter<AppExit>,
) {
    for Connected { client } in connected.read() {
        println!("connected as {client}");
        spawns.write(ToServer(samples::spawn_entity()));
        inventories.write(ToServer(samples::inventory(8)));
    }
    if let Some(Disconnected { reason }) = disconnected.read().next() {
        println!("disconnected: {reason}");
        exit.write(AppExit::Success);
    }
}

/// Every fixed tick, once connected: an input and a move.
fn send_inputs(
    client: Res<ZaoClient>,
    mut tick: Local<u32>,
    mut inputs: MessageWriter<ToServer<PlayerInput>>,
    mut moves: MessageWriter<ToServer<PlayerMoved>>,
) {
    let Some(id) = client.id() else {
        return;
    };
    *tick += 1;
    inputs.write(ToServer(PlayerInput {
        tick: *tick,
        ..samples::player_input()
    }));
    moves.write(ToServer(PlayerMoved {
        entity: id.0 as u32,
        ..samples::player_moved()
    }));
}

/// Prints the first of each kind the server sends.
fn print_received(
    mut received: ResMut<Received>,
    mut moves: MessageReader<FromServer<PlayerMoved>>,
    mut spawns: MessageReader<FromServer<SpawnEntity>>,
    mut snapshots: MessageReader<FromServer<WorldSnapshot>>,
    mut inventories: MessageReader<FromServer<Inventory>>,
) {
    let mut note = |name: &'static str, detail: &dyn Fn() -> String| {
        let count = received.0.entry(name).or_default();
        if *count == 0 {
            println!("first {name}: {}", detail());
        }
        *count += 1;
    };
    for FromServer(m) in moves.read() {
        note("PlayerMoved", &|| format!("entity {}", m.entity));
    }
    for FromServer(m) in spawns.read() {
        note("SpawnEntity", &|| format!("{} at {}", m.name, m.position));
    }
    for FromServer(m) in snapshots.read() {
        note("WorldSnapshot", &|| {
            format!("tick {}, {} players", m.tick, m.players.len())
        });
    }
    for FromServer(m) in inventories.read() {
        note("Inventory", &|| format!("{} slots", m.slots.len()));
    }
}

/// Leaves after `--seconds`, with a reason the server prints; the
/// `Disconnected` that follows ends the app.
fn leave_when_done(
    time: Res<Time>,
    run_for: Res<RunFor>,
    received: Res<Received>,
    mut client: ResMut<ZaoClient>,
    mut left: Local<bool>,
) {
    if *left || time.elapsed() < run_for.0 {
        return;
    }
    *left = true;
    if let Some(stats) = client.stats() {
        println!(
            "rtt {:?}, loss {:.2} %, {} messages in",
            stats.rtt,
            stats.loss * 100.0,
            stats.messages_in
        );
    }
    println!("received from the server: {:?}", received.0);
    client.disconnect("done");
}
