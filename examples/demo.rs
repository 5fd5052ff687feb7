//! The main job: a headless dedicated server and several headless clients,
//! all Bevy apps in one process, over loopback QUIC with a self-signed
//! certificate pinned by hash. The server simulates entities at a fixed tick
//! and broadcasts `WorldSnapshot`s (chunked, encoded once for all clients),
//! greets each client with `SpawnEntity`s, updates their `Inventory` every
//! second; clients send `PlayerMoved` every tick. A progress line while it
//! runs, a table at the end.
//!
//! ```sh
//! cargo run --release --example demo
//! cargo run --release --example demo -- --clients 16 --entities 1024 --hz 60 --seconds 20 --link L2
//! ```
//!
//! Flags: `--clients N` (8), `--entities N` (256), `--hz N` (60),
//! `--seconds N` (15), `--link none|L1..L8` (none): the link conditioner
//! on every packet both ways (see `ConditionerConfig::preset`).

// Bevy system parameters elide their lifetimes by convention.
#![allow(elided_lifetimes_in_paths)]

use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use bevy_app::{App, FixedUpdate, PostUpdate, Update};
use bevy_ecs::prelude::*;
use bevy_time::{Fixed, Time, TimePlugin};
use glam::Vec3;
use zao::bevy::{
    AppZaoExt, Channel, ClientConnected, ClientDisconnected, Direction, FromClient, FromServer,
    SendTarget, ToClients, ToServer, ZaoClient, ZaoClientPlugin, ZaoClientSettings, ZaoServer,
    ZaoServerPlugin, ZaoServerSettings, ZaoSet,
};
use zao::quic::{ClientId, ConditionerConfig};
use zao_messages::{
    Inventory, PlayerInput, PlayerMoved, PlayerState, SpawnEntity, WorldSnapshot, samples,
};
use zao_perf::{percentile, process_cpu, rss_kib};

/// Command-line settings.
#[derive(Clone, Debug)]
struct Settings {
    clients: usize,
    entities: usize,
    hz: f64,
    seconds: f64,
    link: Option<(String, ConditionerConfig)>,
}

fn settings() -> Result<Settings, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
    };
    let number = |flag: &str, default: f64| -> Result<f64, String> {
        value(flag).map_or(Ok(default), |v| {
            v.parse()
                .map_err(|_| format!("{flag} needs a number, got {v:?}"))
        })
    };
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return Err(
            "usage: demo [--clients N] [--entities N] [--hz N] [--seconds N] [--link none|L1..L8]"
                .into(),
        );
    }
    let link = match value("--link").map(String::as_str) {
        None | Some("none") => None,
        Some(name) => Some((
            name.to_uppercase(),
            ConditionerConfig::preset(name)
                .ok_or_else(|| format!("unknown link preset {name:?}: L1..L8 or none"))?,
        )),
    };
    Ok(Settings {
        clients: number("--clients", 8.0)? as usize,
        entities: number("--entities", 256.0)? as usize,
        hz: number("--hz", 60.0)?.max(1.0),
        seconds: number("--seconds", 15.0)?.max(1.0),
        link,
    })
}

/// The reference protocol, registered the same way by server and clients.
fn protocol(app: &mut App) {
    app.add_zao_message::<PlayerMoved>(Channel::UNRELIABLE, Direction::Both)
        .add_zao_message::<PlayerInput>(Channel::UNRELIABLE, Direction::ClientToServer)
        .add_zao_message::<SpawnEntity>(Channel::RELIABLE, Direction::Both)
        .add_zao_snapshot::<WorldSnapshot>()
        .add_zao_message::<Inventory>(Channel::RELIABLE, Direction::Both);
}

// ---- server ----

/// The simulated world: entities moving on circles.
#[derive(Resource)]
struct World {
    tick: u32,
    players: Vec<PlayerState>,
}

/// Per-client bookkeeping on the server.
#[derive(Resource, Default)]
struct Roster {
    /// The tick at which each client's App heard it connect.
    joined: BTreeMap<ClientId, u32>,
    left: BTreeMap<ClientId, String>,
    moves: HashMap<ClientId, u64>,
}

/// How long `ZaoSet::Send` took each update that sent a snapshot.
#[derive(Resource, Default)]
struct SendTimes {
    started: Option<Instant>,
    ticks: Vec<Duration>,
    sent_this_update: bool,
}

fn simulate(
    mut world: ResMut<World>,
    mut out: MessageWriter<ToClients<WorldSnapshot>>,
    mut times: ResMut<SendTimes>,
) {
    world.tick += 1;
    let t = world.tick as f32 / 60.0;
    for (i, p) in world.players.iter_mut().enumerate() {
        let phase = i as f32 * 0.1;
        let r = 5.0 + (i % 16) as f32;
        p.position = Vec3::new(r * (t + phase).cos(), 0.5, r * (t + phase).sin());
    }
    let snapshot = WorldSnapshot {
        tick: world.tick,
        players: world.players.clone(),
    };
    out.write(ToClients {
        target: SendTarget::All,
        message: snapshot,
    });
    times.sent_this_update = true;
}

fn greet(
    mut joined: MessageReader<ClientConnected>,
    mut left: MessageReader<ClientDisconnected>,
    world: Res<World>,
    mut roster: ResMut<Roster>,
    mut spawns: MessageWriter<ToClients<SpawnEntity>>,
) {
    for ClientConnected { client, .. } in joined.read() {
        roster.joined.insert(*client, world.tick);
        // The newcomer's avatar, to everyone; the world's entities, to it.
        let avatar = SpawnEntity {
            entity: 1_000_000 + client.0 as u32,
            name: format!("player-{}", client.0),
            ..samples::spawn_entity()
        };
        spawns.write(ToClients {
            target: SendTarget::All,
            message: avatar,
        });
        for p in world.players.iter().take(8) {
            let spawn = SpawnEntity {
                entity: p.entity,
                name: format!("npc-{}", p.entity),
                ..samples::spawn_entity()
            };
            spawns.write(ToClients {
                target: SendTarget::One(*client),
                message: spawn,
            });
        }
    }
    for ClientDisconnected { client, reason, .. } in left.read() {
        roster.left.insert(*client, reason.to_string());
    }
}

fn inventories(
    world: Res<World>,
    server: Res<ZaoServer>,
    hz: Res<Hz>,
    mut out: MessageWriter<ToClients<Inventory>>,
) {
    if !world.tick.is_multiple_of((hz.0 as u32).max(1)) {
        return;
    }
    for client in server.clients() {
        let mut inventory = samples::inventory(24);
        inventory.owner = client.0 as u32;
        if let Some(slot) = inventory.slots.get_mut(&0) {
            slot.count = (world.tick % 100) as u16;
        }
        out.write(ToClients {
            target: SendTarget::One(client),
            message: inventory,
        });
    }
}

fn count_moves(mut moves: MessageReader<FromClient<PlayerMoved>>, mut roster: ResMut<Roster>) {
    for FromClient { client, .. } in moves.read() {
        *roster.moves.entry(*client).or_default() += 1;
    }
}

fn send_started(mut times: ResMut<SendTimes>) {
    times.started = Some(Instant::now());
}

fn send_finished(mut times: ResMut<SendTimes>) {
    if let (Some(start), true) = (times.started.take(), times.sent_this_update) {
        times.ticks.push(start.elapsed());
        times.sent_this_update = false;
    }
}

#[derive(Resource)]
struct Hz(f64);

fn server_app(settings: &Settings) -> App {
    let mut app = App::new();
    let mut server = ZaoServerSettings::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)));
    server.conditioner = settings.link.as_ref().map(|(_, c)| c.with_seed(1));
    // Every client of the demo connects from 127.0.0.1.
    server.limits.max_clients = server.limits.max_clients.max(settings.clients);
    server.limits.max_clients_per_ip = server.limits.max_clients;
    app.add_plugins((TimePlugin, ZaoServerPlugin::start_at_launch(server)));
    protocol(&mut app);
    app.insert_resource(Time::<Fixed>::from_hz(settings.hz))
        .insert_resource(Hz(settings.hz))
        .insert_resource(World {
            tick: 0,
            players: (0..settings.entities)
                .map(|i| PlayerState {
                    entity: i as u32,
                    position: Vec3::ZERO,
                })
                .collect(),
        })
        .init_resource::<Roster>()
        .init_resource::<SendTimes>()
        .add_systems(FixedUpdate, (simulate, inventories))
        .add_systems(Update, (greet, count_moves))
        .add_systems(
            PostUpdate,
            (
                send_started.before(ZaoSet::Send),
                send_finished.after(ZaoSet::Send),
            ),
        );
    app.finish();
    app.cleanup();
    // Startup asks for the server; the next update binds it.
    while !app.world().contains_resource::<ZaoServer>() {
        app.update();
        if let Some(failed) = app
            .world_mut()
            .resource_mut::<Messages<zao::bevy::ServerStartFailed>>()
            .drain()
            .next()
        {
            eprintln!("the server could not start: {}", failed.error);
            std::process::exit(1);
        }
    }
    app
}

// ---- clients ----

/// What one client received.
#[derive(Resource, Default)]
struct Received {
    /// Players received per snapshot tick.
    ticks: HashMap<u32, usize>,
    spawns: u64,
    inventories: u64,
    latest_tick: u32,
}

fn move_around(
    client: Option<Res<ZaoClient>>,
    received: Res<Received>,
    mut out: MessageWriter<ToServer<PlayerMoved>>,
) {
    if let Some(id) = client.and_then(|c| c.id()) {
        let t = received.latest_tick as f32 / 60.0;
        out.write(ToServer(PlayerMoved {
            entity: 1_000_000 + id.0 as u32,
            position: Vec3::new(t.cos(), 0.0, t.sin()),
        }));
    }
}

fn receive(
    mut snapshots: MessageReader<FromServer<WorldSnapshot>>,
    mut spawns: MessageReader<FromServer<SpawnEntity>>,
    mut inventories: MessageReader<FromServer<Inventory>>,
    mut received: ResMut<Received>,
) {
    for FromServer(s) in snapshots.read() {
        *received.ticks.entry(s.tick).or_default() += s.players.len();
        received.latest_tick = received.latest_tick.max(s.tick);
    }
    received.spawns += spawns.read().count() as u64;
    received.inventories += inventories.read().count() as u64;
}

fn client_app(
    settings: &Settings,
    server: SocketAddr,
    hash: zao::quic::CertHash,
    seed: u64,
) -> App {
    let mut app = App::new();
    let mut connect = ZaoClientSettings::pinned(server, hash);
    connect.conditioner = settings.link.as_ref().map(|(_, c)| c.with_seed(seed));
    app.add_plugins((TimePlugin, ZaoClientPlugin::connect_at_launch(connect)));
    protocol(&mut app);
    app.insert_resource(Time::<Fixed>::from_hz(settings.hz))
        .init_resource::<Received>()
        .add_systems(FixedUpdate, move_around)
        .add_systems(Update, receive);
    app.finish();
    app.cleanup();
    app
}

fn main() {
    let settings = match settings() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let link = settings
        .link
        .as_ref()
        .map_or("none".to_owned(), |(n, _)| n.clone());
    println!(
        "zao demo: 1 server, {} clients, {} entities, {} Hz, {} s, link {link}",
        settings.clients, settings.entities, settings.hz, settings.seconds
    );
    let mut server = server_app(&settings);
    let (addr, hash) = {
        let z = server.world().resource::<ZaoServer>();
        // A QUIC server always has both.
        (
            z.local_addr()
                .unwrap_or(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))),
            z.certificate_hash().unwrap_or(zao::quic::CertHash([0; 32])),
        )
    };
    println!("server on {addr}, certificate SHA-256 {hash} (pinned by every client)");
    let mut clients: Vec<App> = (0..settings.clients)
        .map(|i| client_app(&settings, addr, hash, 100 + i as u64))
        .collect();

    let cpu_start = process_cpu();
    let start = Instant::now();
    let run_for = Duration::from_secs_f64(settings.seconds);
    let mut next_progress = start + Duration::from_secs(1);
    while start.elapsed() < run_for {
        server.update();
        clients.iter_mut().for_each(App::update);
        if Instant::now() >= next_progress {
            next_progress += Duration::from_secs(1);
            let connected = clients
                .iter()
                .filter(|c| {
                    c.world()
                        .get_resource::<ZaoClient>()
                        .is_some_and(ZaoClient::is_connected)
                })
                .count();
            let tick = server.world().resource::<World>().tick;
            let mut times = server.world().resource::<SendTimes>().ticks.clone();
            times.sort();
            let delivered: usize = clients
                .iter()
                .map(|c| c.world().resource::<Received>().ticks.len())
                .sum();
            print!(
                "\r  {:>5.1} s  clients {connected}/{}  tick {tick}  snapshots delivered {delivered}  send p50 {:?}   ",
                start.elapsed().as_secs_f64(),
                settings.clients,
                percentile(&times, 0.5)
            );
            let _ = std::io::stdout().flush();
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    let wall = start.elapsed();
    let cpu = cpu_start
        .zip(process_cpu())
        .map(|(a, b)| b.saturating_sub(a));
    // The server stops ticking; the clients read what is still in flight.
    let drain = Instant::now() + Duration::from_millis(500);
    while Instant::now() < drain {
        clients.iter_mut().for_each(App::update);
        std::thread::sleep(Duration::from_millis(1));
    }
    println!();

    // Per client.
    let world = server.world();
    let final_tick = world.resource::<World>().tick;
    let roster = world.resource::<Roster>();
    let zao_server = world.resource::<ZaoServer>();
    println!();
    println!(
        "{:<8} {:>22} {:>9} {:>10} {:>10} {:>9} {:>7} {:>9} {:>7} {:>7} {:>6}",
        "client",
        "snapshots (whole/exp)",
        "partial",
        "entities %",
        "in KiB/s",
        "rtt ms",
        "loss %",
        "srv drop",
        "spawns",
        "invent.",
        "moves"
    );
    let mut total_whole = 0usize;
    let mut total_expected = 0usize;
    let mut order: Vec<&App> = clients.iter().collect();
    order.sort_by_key(|app| {
        app.world()
            .get_resource::<ZaoClient>()
            .and_then(ZaoClient::id)
            .map_or(u64::MAX, |id| id.0)
    });
    for app in order {
        let Some(z) = app.world().get_resource::<ZaoClient>() else {
            println!("{:<8} never started connecting", "?");
            continue;
        };
        let r = app.world().resource::<Received>();
        let Some(id) = z.id() else {
            println!("{:<8} not connected: {:?}", "?", z.state());
            continue;
        };
        // Every tick from the first this client received to the last the
        // server sent (the drain above let the last ones land): the server
        // may admit a client a tick before its App hears of it, so the
        // join tick is not the first the client can get.
        let expected =
            r.ticks
                .keys()
                .min()
                .map_or(0, |&first| final_tick.saturating_sub(first) + 1) as usize;
        let whole = r
            .ticks
            .values()
            .filter(|&&n| n >= settings.entities)
            .count();
        let partial = r.ticks.len() - whole;
        total_whole += whole;
        total_expected += expected;
        let stats = z.stats().unwrap_or_default();
        println!(
            "{:<8} {:>13}/{:<5} {:>3.0}% {:>8} {:>10.1} {:>10.1} {:>9.2} {:>7.2} {:>9} {:>7} {:>7} {:>6}",
            id.0,
            whole,
            expected,
            100.0 * whole as f64 / expected.max(1) as f64,
            partial,
            // Entity updates delivered: chunks that arrived, whole or not.
            100.0 * r.ticks.values().sum::<usize>() as f64
                / (expected * settings.entities).max(1) as f64,
            stats.bytes_in_per_sec / 1024.0,
            stats.rtt.as_secs_f64() * 1000.0,
            // Packets lost, server to client (QUIC's count, as the server sees it).
            zao_server.stats(id).map_or(0.0, |s| s.loss * 100.0),
            zao_server.stats(id).map_or(0, |s| s.datagrams_dropped),
            r.spawns,
            r.inventories,
            roster.moves.get(&id).copied().unwrap_or(0),
        );
    }

    // Server.
    let mut times = world.resource::<SendTimes>().ticks.clone();
    times.sort();
    let out_rate: f64 = zao_server
        .clients()
        .filter_map(|c| zao_server.stats(c))
        .map(|s| s.bytes_out_per_sec)
        .sum();
    println!();
    println!(
        "server: {final_tick} ticks in {:.1} s ({:.1} Hz)",
        wall.as_secs_f64(),
        f64::from(final_tick) / wall.as_secs_f64()
    );
    println!(
        "server encode + send per tick (ZaoSet::Send): p50 {:?}, p99 {:?}, max {:?} over {} ticks",
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        times.last().copied().unwrap_or_default(),
        times.len()
    );
    println!(
        "server out: {:.1} KiB/s to {} clients",
        out_rate / 1024.0,
        zao_server.clients().len()
    );
    match cpu {
        Some(cpu) => println!(
            "process CPU: {:.1} s over {:.1} s wall = {:.0} % of one core (server and all clients together)",
            cpu.as_secs_f64(),
            wall.as_secs_f64(),
            100.0 * cpu.as_secs_f64() / wall.as_secs_f64()
        ),
        None => println!("process CPU: n/a on this platform"),
    }
    if let Some(rss) = rss_kib() {
        println!("process memory (RSS): {:.1} MiB", rss as f64 / 1024.0);
    }
    for (client, reason) in &roster.left {
        println!("client {} left: {reason}", client.0);
    }
    println!(
        "snapshots delivered whole: {total_whole} of {total_expected} expected ({:.1} %)",
        100.0 * total_whole as f64 / total_expected.max(1) as f64
    );
}
