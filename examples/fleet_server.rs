//! A game server for a fleet (docs/FLEET.md, deploy/): the demo's world,
//! 256 players broadcast as delta snapshots at 30 Hz, in a headless Bevy
//! App with `ZaoFleetPlugin`. It tells the fleet it is ready once bound,
//! reports health from its tick, admits players once allocated, reports
//! them, and on SIGTERM drains (every client gets what is queued, then
//! "server shutting down") and exits.
//!
//! ```sh
//! # No fleet manager: allocated at once, drained on SIGTERM (Ctrl-\ or kill).
//! cargo run --release --example fleet_server -- --bind 127.0.0.1:7777
//! # In an Agones pod (deploy/Dockerfile builds this):
//! cargo run --release --features agones --example fleet_server -- --agones
//! ```
//!
//! It prints one line per lifecycle step, and its certificate's SHA-256,
//! which it also sets as the `GameServer`'s annotation
//! `agones.dev/sdk-zao-cert-sha256` for the matchmaker to hand to players.

// Bevy system parameters elide their lifetimes by convention.
#![allow(elided_lifetimes_in_paths)]

use std::time::Duration;

use bevy_app::{App, AppExit, FixedUpdate, ScheduleRunnerPlugin, Update};
use bevy_ecs::prelude::*;
use bevy_time::{Fixed, Time, TimePlugin};
use zao::bevy::{
    AppZaoExt, Channel, ClientConnected, ClientDisconnected, Direction, FleetAllocated,
    FleetDraining, FleetError, FleetReady, FleetShutDown, JitterConfig, SendTarget,
    ServerStartFailed, ServerStarted, ZaoFleetPlugin, ZaoServerPlugin, ZaoServerSender,
    ZaoServerSettings, fleet_allocated,
};
use zao_messages::{EntitySnapshot, PlayerInput, PlayerMoved};

/// The demo's world: the workload of the snapshot benchmarks, shared by
/// path.
#[path = "../bench/benches/support/world.rs"]
#[allow(dead_code)]
mod world;

const HZ: u32 = 30;

#[derive(Resource)]
struct World(world::World);

fn protocol(app: &mut App) {
    app.add_zao_message::<PlayerMoved>(Channel::UNRELIABLE, Direction::Both)
        .add_zao_message::<PlayerInput>(Channel::UNRELIABLE, Direction::ClientToServer)
        .add_zao_delta_snapshot::<EntitySnapshot>(JitterConfig::from_hz(f64::from(HZ)));
}

fn arg(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1).cloned())
}

fn fleet_plugin(agones: bool) -> Result<ZaoFleetPlugin, Box<dyn std::error::Error>> {
    if !agones {
        return Ok(ZaoFleetPlugin::standalone());
    }
    #[cfg(feature = "agones")]
    return Ok(ZaoFleetPlugin::agones(
        zao::fleet::agones::AgonesSettings::default(),
    )?);
    #[cfg(not(feature = "agones"))]
    Err("--agones needs a build with `--features agones`".into())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let bind = arg(&args, "--bind").unwrap_or_else(|| "0.0.0.0:7777".to_owned());
    let agones = args.iter().any(|a| a == "--agones");

    let mut app = App::new();
    app.add_plugins((
        ScheduleRunnerPlugin::run_loop(Duration::from_millis(1)),
        TimePlugin,
        ZaoServerPlugin::start_at_launch(ZaoServerSettings::bind(bind.parse()?)),
        fleet_plugin(agones)?,
    ))
    .insert_resource(Time::<Fixed>::from_hz(f64::from(HZ)))
    .insert_resource(World(world::World::new(1, 256, HZ)));
    protocol(&mut app);
    app.add_systems(Update, report)
        .add_systems(FixedUpdate, simulate.run_if(fleet_allocated));
    match app.run() {
        AppExit::Success => Ok(()),
        AppExit::Error(code) => Err(format!("exit code {code}").into()),
    }
}

/// The world moves and is broadcast only while the server is allocated to
/// a match (and not draining).
fn simulate(mut world: ResMut<World>, mut send: ZaoServerSender) {
    world.0.step();
    let _ = send.send_delta_snapshot(&world.0.snapshot(), SendTarget::All);
}

/// One line per lifecycle step.
#[allow(clippy::too_many_arguments)]
fn report(
    mut started: MessageReader<ServerStarted>,
    mut failed: MessageReader<ServerStartFailed>,
    mut ready: MessageReader<FleetReady>,
    mut allocated: MessageReader<FleetAllocated>,
    mut joined: MessageReader<ClientConnected>,
    mut left: MessageReader<ClientDisconnected>,
    mut draining: MessageReader<FleetDraining>,
    mut done: (MessageReader<FleetShutDown>, MessageReader<FleetError>),
) {
    for s in started.read() {
        let hash = s
            .certificate_hash
            .map(|h| h.to_string())
            .unwrap_or_default();
        println!("bound {:?}, certificate sha256 {hash}", s.addr);
    }
    for f in failed.read() {
        println!("could not start: {}", f.error);
    }
    for _ in ready.read() {
        println!("ready: waiting for an allocation");
    }
    for a in allocated.read() {
        println!("allocated: labels {:?}", a.0.labels);
    }
    for c in joined.read() {
        println!("{} joined from {}", c.client, c.addr);
    }
    for c in left.read() {
        println!("{} left: {}", c.client, c.reason);
    }
    for d in draining.read() {
        println!(
            "draining ({:?}): no new players, the connected ones get what is queued",
            d.0
        );
    }
    for _ in done.0.read() {
        println!("drained: shut down");
    }
    for e in done.1.read() {
        println!("fleet error: {}", e.0);
    }
}
