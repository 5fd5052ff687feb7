//! The main job: a headless dedicated server and several headless clients,
//! all Bevy apps in one process, over loopback QUIC with a self-signed
//! certificate pinned by hash. The server simulates a world of players
//! walking, sprinting and standing on rolling ground at a fixed tick and
//! broadcasts it as delta snapshots: each client gets the world against
//! the newest tick it acknowledged, clients that acknowledged the same one
//! share one encode, and each client renders through a jitter buffer,
//! interpolating between ticks. The server greets each client with
//! `SpawnEntity`s and updates their `Inventory` every second; clients send
//! `PlayerMoved` every tick. A progress line while it runs, a table at the
//! end.
//!
//! ```sh
//! cargo run --release --example demo
//! cargo run --release --example demo -- --link L3 --seconds 20
//! cargo run --release --example demo -- --snapshots full   # the whole world every tick, newest wins
//! ```
//!
//! Flags: `--clients N` (8), `--entities N` (256), `--hz N` (60),
//! `--seconds N` (15), `--link none|L1..L8` (none): the link conditioner
//! on every packet both ways (see `ConditionerConfig::preset`),
//! `--snapshots delta|full` (delta).

// Bevy system parameters elide their lifetimes by convention.
#![allow(elided_lifetimes_in_paths)]

use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use bevy_app::{App, FixedUpdate, Update};
use bevy_ecs::prelude::*;
use bevy_time::{Fixed, Time, TimePlugin};
use glam::Vec3;
use zao::bevy::{
    AppZaoExt, Channel, ClientConnected, ClientDisconnected, Direction, FromClient, FromServer,
    JitterConfig, SendTarget, SnapshotApplied, ToClients, ToServer, ZaoClient, ZaoClientPlugin,
    ZaoClientSettings, ZaoServer, ZaoServerPlugin, ZaoServerSender, ZaoServerSettings,
    ZaoSnapshots,
};
use zao::quic::{ClientId, ConditionerConfig};
use zao_messages::{
    EntitySnapshot, Inventory, PlayerInput, PlayerMoved, PlayerState, SpawnEntity, WorldSnapshot,
    samples,
};
use zao_perf::{percentile, process_cpu, rss_kib};

/// The world the server simulates: the workload of the snapshot
/// benchmarks (`zao-bench`), shared by path.
#[path = "../bench/benches/support/world.rs"]
#[allow(dead_code)]
mod world;

/// How the server sends the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Snapshots {
    /// Delta snapshots against each client's acknowledged tick, through a
    /// jitter buffer on the client: what a game should do.
    Delta,
    /// The whole world every tick on the snapshot channel (newest wins,
    /// an overtaken tick is dropped): for comparison.
    Full,
}

/// Command-line settings.
#[derive(Clone, Debug)]
struct Settings {
    clients: usize,
    entities: usize,
    hz: f64,
    seconds: f64,
    link: Option<(String, ConditionerConfig)>,
    snapshots: Snapshots,
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
            "usage: demo [--clients N] [--entities N] [--hz N] [--seconds N] [--link none|L1..L8] [--snapshots delta|full]"
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
    let snapshots = match value("--snapshots").map(String::as_str) {
        None | Some("delta") => Snapshots::Delta,
        Some("full") => Snapshots::Full,
        Some(other) => return Err(format!("--snapshots is delta or full, got {other:?}")),
    };
    Ok(Settings {
        clients: number("--clients", 8.0)? as usize,
        entities: number("--entities", 256.0)? as usize,
        hz: number("--hz", 60.0)?.max(1.0),
        seconds: number("--seconds", 15.0)?.max(1.0),
        link,
        snapshots,
    })
}

/// The reference protocol, registered the same way by server and clients:
/// both snapshot kinds, so `--snapshots` changes only what is sent.
fn protocol(app: &mut App, hz: f64) {
    app.add_zao_message::<PlayerMoved>(Channel::UNRELIABLE, Direction::Both)
        .add_zao_message::<PlayerInput>(Channel::UNRELIABLE, Direction::ClientToServer)
        .add_zao_message::<SpawnEntity>(Channel::RELIABLE, Direction::Both)
        .add_zao_snapshot::<WorldSnapshot>()
        .add_zao_delta_snapshot::<EntitySnapshot>(JitterConfig::from_hz(hz))
        .add_zao_message::<Inventory>(Channel::RELIABLE, Direction::Both);
}

// ---- server ----

/// The simulated world.
#[derive(Resource)]
struct World {
    world: world::World,
    mode: Snapshots,
}

/// Per-client bookkeeping on the server.
#[derive(Resource, Default)]
struct Roster {
    left: BTreeMap<ClientId, String>,
    moves: HashMap<ClientId, u64>,
}

/// How long each tick's snapshot took to encode and hand to QUIC, and
/// what the delta sends cost.
#[derive(Resource, Default)]
struct SendTimes {
    ticks: Vec<Duration>,
    /// Delta: encodes per tick (one per distinct acknowledged baseline).
    encodes: Vec<usize>,
    /// Delta: chunks and bytes sent to each client, keyframes, over all
    /// ticks.
    chunks: usize,
    sent_bytes: usize,
    resent_bytes: usize,
    targets: usize,
    keyframes: usize,
}

fn simulate(mut world: ResMut<World>, mut send: ZaoServerSender, mut times: ResMut<SendTimes>) {
    world.world.step();
    let started = Instant::now();
    match world.mode {
        Snapshots::Delta => {
            if let Ok(sent) = send.send_delta_snapshot(&world.world.snapshot(), SendTarget::All)
                && sent.targets > 0
            {
                times.encodes.push(sent.encodes);
                // Datagrams a target gets, averaged over the encodes (they
                // differ in size; the bytes below are exact).
                times.chunks += sent.chunks * sent.targets / sent.encodes.max(1);
                times.sent_bytes += sent.sent_bytes;
                times.resent_bytes += sent.resent_bytes;
                times.targets += sent.targets;
                times.keyframes += sent.keyframes;
            }
        }
        Snapshots::Full => {
            let snapshot = WorldSnapshot {
                tick: world.world.tick,
                players: world
                    .world
                    .floats()
                    .into_iter()
                    .map(|(entity, p, _)| PlayerState {
                        entity,
                        position: Vec3::from_array(p),
                    })
                    .collect(),
            };
            let _ = send.send_snapshot(&snapshot, SendTarget::All);
        }
    }
    times.ticks.push(started.elapsed());
}

fn greet(
    mut joined: MessageReader<ClientConnected>,
    mut left: MessageReader<ClientDisconnected>,
    world: Res<World>,
    mut roster: ResMut<Roster>,
    mut spawns: MessageWriter<ToClients<SpawnEntity>>,
) {
    for ClientConnected { client, .. } in joined.read() {
        // The newcomer's avatar, to everyone; a few of the world's
        // entities, to it.
        let avatar = SpawnEntity {
            entity: 1_000_000 + client.0 as u32,
            name: format!("player-{}", client.0),
            ..samples::spawn_entity()
        };
        spawns.write(ToClients {
            target: SendTarget::All,
            message: avatar,
        });
        for (entity, _, _) in world.world.floats().into_iter().take(8) {
            let spawn = SpawnEntity {
                entity,
                name: format!("npc-{entity}"),
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
    let tick = world.world.tick;
    if !tick.is_multiple_of((hz.0 as u32).max(1)) {
        return;
    }
    for client in server.clients() {
        let mut inventory = samples::inventory(24);
        inventory.owner = client.0 as u32;
        if let Some(slot) = inventory.slots.get_mut(&0) {
            slot.count = (tick % 100) as u16;
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
    protocol(&mut app, settings.hz);
    app.insert_resource(Time::<Fixed>::from_hz(settings.hz))
        .insert_resource(Hz(settings.hz))
        .insert_resource(World {
            world: world::World::new(1, settings.entities, settings.hz as u32),
            mode: settings.snapshots,
        })
        .init_resource::<Roster>()
        .init_resource::<SendTimes>()
        .add_systems(FixedUpdate, (simulate, inventories))
        .add_systems(Update, (greet, count_moves));
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
    /// Full snapshots: players received per tick.
    ticks: HashMap<u32, usize>,
    /// Delta snapshots: the first and newest tick applied.
    first_tick: Option<u64>,
    latest_tick: u64,
    /// Entities drawn (interpolated) in the last update.
    drawn: usize,
    spawns: u64,
    inventories: u64,
    /// When it connected, and after how many attempts.
    connected: Option<(Instant, u32)>,
}

fn move_around(
    client: Option<Res<ZaoClient>>,
    received: Res<Received>,
    time: Res<Time<Fixed>>,
    mut out: MessageWriter<ToServer<PlayerMoved>>,
) {
    if let Some(id) = client.and_then(|c| c.id()) {
        let t = received.latest_tick as f32 * time.timestep().as_secs_f32();
        out.write(ToServer(PlayerMoved {
            entity: 1_000_000 + id.0 as u32,
            position: Vec3::new(t.cos(), 0.0, t.sin()),
        }));
    }
}

fn receive(
    client: Option<Res<ZaoClient>>,
    mut full: MessageReader<FromServer<WorldSnapshot>>,
    mut deltas: MessageReader<SnapshotApplied<EntitySnapshot>>,
    mut spawns: MessageReader<FromServer<SpawnEntity>>,
    mut inventories: MessageReader<FromServer<Inventory>>,
    mut received: ResMut<Received>,
) {
    if received.connected.is_none()
        && let Some(c) = client.filter(|c| c.is_connected())
    {
        received.connected = Some((Instant::now(), c.retries() + 1));
    }
    for FromServer(s) in full.read() {
        *received.ticks.entry(s.tick).or_default() += s.players.len();
        received.latest_tick = received.latest_tick.max(u64::from(s.tick));
    }
    for chunk in deltas.read() {
        received.first_tick = Some(
            received
                .first_tick
                .map_or(chunk.tick, |t| t.min(chunk.tick)),
        );
        received.latest_tick = received.latest_tick.max(chunk.tick);
    }
    received.spawns += spawns.read().count() as u64;
    received.inventories += inventories.read().count() as u64;
}

/// What a game's renderer does every frame: every entity's state at the
/// render time, interpolated between the ticks on either side.
fn draw(snapshots: Res<ZaoSnapshots<EntitySnapshot>>, mut received: ResMut<Received>) {
    received.drawn = snapshots.interpolated().len();
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
    protocol(&mut app, settings.hz);
    app.insert_resource(Time::<Fixed>::from_hz(settings.hz))
        .init_resource::<Received>()
        .add_systems(FixedUpdate, move_around)
        .add_systems(Update, (receive, draw));
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
    let mode = match settings.snapshots {
        Snapshots::Delta => "delta snapshots",
        Snapshots::Full => "full snapshots",
    };
    println!(
        "zao demo: 1 server, {} clients, {} entities, {} Hz, {} s, link {link}, {mode}",
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
    let launched = Instant::now();
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
            progress(&server, &clients, &settings, start);
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    let wall = start.elapsed();
    let end = Instant::now();
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
    println!();
    let summary = match settings.snapshots {
        Snapshots::Delta => delta_table(&server, &clients, (launched, end)),
        Snapshots::Full => full_table(&server, &clients, &settings, (launched, end)),
    };
    server_summary(&server, wall, cpu);
    println!("{summary}");
}

/// The progress line, once a second.
fn progress(server: &App, clients: &[App], settings: &Settings, start: Instant) {
    let connected = clients
        .iter()
        .filter(|c| {
            c.world()
                .get_resource::<ZaoClient>()
                .is_some_and(ZaoClient::is_connected)
        })
        .count();
    let tick = server.world().resource::<World>().world.tick;
    let mut times = server.world().resource::<SendTimes>().ticks.clone();
    times.sort();
    let received = match settings.snapshots {
        Snapshots::Delta => {
            let usable: u64 = clients
                .iter()
                .map(|c| {
                    c.world()
                        .resource::<ZaoSnapshots<EntitySnapshot>>()
                        .jitter_stats()
                        .ticks_on_time
                })
                .sum();
            format!("ticks usable {usable}")
        }
        Snapshots::Full => {
            let delivered: usize = clients
                .iter()
                .map(|c| c.world().resource::<Received>().ticks.len())
                .sum();
            format!("snapshots delivered {delivered}")
        }
    };
    print!(
        "\r  {:>5.1} s  clients {connected}/{}  tick {tick}  {received}  send p50 {:?}   ",
        start.elapsed().as_secs_f64(),
        settings.clients,
        percentile(&times, 0.5)
    );
    let _ = std::io::stdout().flush();
}

/// The clients by id; those that never connected last.
fn by_id(clients: &[App]) -> Vec<&App> {
    let mut order: Vec<&App> = clients.iter().collect();
    order.sort_by_key(|app| {
        app.world()
            .get_resource::<ZaoClient>()
            .and_then(ZaoClient::id)
            .map_or(u64::MAX, |id| id.0)
    });
    order
}

/// A client's connection figures: time to connect and attempts, bytes in
/// per second from connecting to the end of the run, RTT, and the packets
/// the server lost towards it.
struct Link {
    id: ClientId,
    connect: String,
    kib_per_sec: f64,
    rtt_ms: f64,
    loss: f64,
}

fn link(app: &App, server: &ZaoServer, launched: Instant, end: Instant) -> Result<Link, String> {
    let Some(z) = app.world().get_resource::<ZaoClient>() else {
        return Err("never started connecting".into());
    };
    let r = app.world().resource::<Received>();
    let (Some(id), Some((at, attempts))) = (z.id(), r.connected) else {
        return Err(format!(
            "not connected: {:?} after {} attempts (connect deadline {:.0} s)",
            z.state(),
            z.retries() + 1,
            z.connect_deadline()
                .saturating_duration_since(launched)
                .as_secs_f64()
        ));
    };
    let stats = z.stats().unwrap_or_default();
    Ok(Link {
        id,
        connect: format!("{:.2} s/{attempts}", (at - launched).as_secs_f64()),
        // (A client that connected as the run ended has no rate yet.)
        kib_per_sec: stats.bytes_in as f64
            / end.saturating_duration_since(at).as_secs_f64().max(1.0)
            / 1024.0,
        rtt_ms: stats.rtt.as_secs_f64() * 1000.0,
        // Packets lost, server to client (QUIC's count, as the server sees it).
        loss: server.stats(id).map_or(0.0, |s| s.loss * 100.0),
    })
}

/// The per-client table, its first three columns from the mode: `heads`
/// names them, and `columns` gives for each connected client its ticks
/// (good, expected) and the two others, formatted. The legend follows:
/// the mode's lines, then the shared ones. Returns the ticks summed.
fn table(
    server: &App,
    clients: &[App],
    (launched, end): (Instant, Instant),
    heads: [&str; 3],
    mut columns: impl FnMut(&App) -> ((u64, u64), String, String),
    legend: &[&str],
) -> (u64, u64) {
    let world = server.world();
    let roster = world.resource::<Roster>();
    let zao_server = world.resource::<ZaoServer>();
    println!(
        "{:<7} {:>21} {:>8} {:>10} {:>9} {:>9} {:>7} {:>10} {:>7} {:>7} {:>6}",
        "client",
        heads[0],
        heads[1],
        heads[2],
        "in KiB/s",
        "rtt ms",
        "loss %",
        "connect",
        "spawns",
        "invent.",
        "moves"
    );
    let (mut good, mut expected) = (0, 0);
    for app in by_id(clients) {
        let link = match link(app, zao_server, launched, end) {
            Ok(link) => link,
            Err(why) => {
                println!("{:<7} {why}", "?");
                continue;
            }
        };
        let ((n, of), second, third) = columns(app);
        good += n;
        expected += of;
        let r = app.world().resource::<Received>();
        println!(
            "{:<7} {:>7}/{:<6} {:>5.1}% {:>8} {:>10} {:>9.1} {:>9.1} {:>7.2} {:>10} {:>7} {:>7} {:>6}",
            link.id.0,
            n,
            of,
            100.0 * n as f64 / of.max(1) as f64,
            second,
            third,
            link.kib_per_sec,
            link.rtt_ms,
            link.loss,
            link.connect,
            r.spawns,
            r.inventories,
            roster.moves.get(&link.id).copied().unwrap_or(0),
        );
    }
    println!();
    for line in legend {
        println!("  {line}");
    }
    println!("  in KiB/s         UDP bytes received per second since connecting");
    println!("  rtt, loss        QUIC's round-trip time, and the packets the server declared lost");
    println!(
        "                   towards the client (QUIC counts a packet overtaken by three others as lost)"
    );
    println!("  connect          seconds from launch to connected / attempts");
    (good, expected)
}

/// The per-client table of the delta snapshots; returns the summary line.
fn delta_table(server: &App, clients: &[App], times: (Instant, Instant)) -> String {
    let final_tick = u64::from(server.world().resource::<World>().world.tick);
    let (usable, expected) = table(
        server,
        clients,
        times,
        ["usable ticks", "drawn", "delay ms"],
        |app| {
            let r = app.world().resource::<Received>();
            let snapshots = app.world().resource::<ZaoSnapshots<EntitySnapshot>>();
            // Every tick from the first this client received to the last
            // the server sent (the drain let the last ones land).
            let wanted = r
                .first_tick
                .map_or(0, |first| final_tick.saturating_sub(first) + 1);
            (
                (snapshots.jitter_stats().ticks_on_time, wanted),
                r.drawn.to_string(),
                format!("{:.0}", snapshots.buffer().delay().as_secs_f64() * 1000.0),
            )
        },
        &[
            "usable ticks     ticks whose every chunk arrived before the jitter buffer's render",
            "                 time needed them, of those from the client's first to the server's last",
            "drawn            entities interpolated at the render time in the last frame",
            "delay ms         the jitter buffer's render delay behind the fastest arrivals",
        ],
    );
    format!(
        "usable ticks: {usable} of {expected} ({:.1} %)",
        100.0 * usable as f64 / expected.max(1) as f64
    )
}

/// The per-client table of the full snapshots; returns the summary line.
fn full_table(
    server: &App,
    clients: &[App],
    settings: &Settings,
    times: (Instant, Instant),
) -> String {
    let final_tick = u64::from(server.world().resource::<World>().world.tick);
    let entities = settings.entities;
    let (whole, expected) = table(
        server,
        clients,
        times,
        ["whole snapshots", "partial", "entities %"],
        |app| {
            let r = app.world().resource::<Received>();
            // Every tick from the first this client received to the last
            // the server sent (the drain let the last ones land).
            let expected = r
                .ticks
                .keys()
                .min()
                .map_or(0, |&first| final_tick.saturating_sub(u64::from(first)) + 1);
            let whole = r.ticks.values().filter(|&&n| n >= entities).count();
            // Entity updates delivered: chunks that arrived, whole or not.
            let delivered = r.ticks.values().sum::<usize>() as f64;
            (
                (whole as u64, expected),
                (r.ticks.len() - whole).to_string(),
                format!(
                    "{:.1}",
                    100.0 * delivered / (expected as usize * entities).max(1) as f64
                ),
            )
        },
        &[
            "whole snapshots  ticks whose every chunk arrived (newest wins: a tick overtaken",
            "                 by a newer one is dropped), of those from the client's first",
            "partial          ticks with some of their chunks; entities %: entity updates delivered",
        ],
    );
    format!(
        "snapshots delivered whole: {whole} of {expected} ({:.1} %)",
        100.0 * whole as f64 / expected.max(1) as f64
    )
}

/// The server's figures.
fn server_summary(server: &App, wall: Duration, cpu: Option<Duration>) {
    let world = server.world();
    let final_tick = world.resource::<World>().world.tick;
    let roster = world.resource::<Roster>();
    let zao_server = world.resource::<ZaoServer>();
    let sends = world.resource::<SendTimes>();
    let mut times = sends.ticks.clone();
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
        "server snapshot encode + send per tick: p50 {:?}, p99 {:?}, max {:?} over {} ticks",
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        times.last().copied().unwrap_or_default(),
        times.len()
    );
    if !sends.encodes.is_empty() {
        println!(
            "delta snapshots: {:.2} encodes a tick (one per distinct acknowledged baseline), {:.0} bytes a client a tick ({:.0} of them copies for lossy clients) in {:.2} datagrams (not counting copies), {} keyframes",
            sends.encodes.iter().sum::<usize>() as f64 / sends.encodes.len() as f64,
            sends.sent_bytes as f64 / sends.targets.max(1) as f64,
            sends.resent_bytes as f64 / sends.targets.max(1) as f64,
            sends.chunks as f64 / sends.targets.max(1) as f64,
            sends.keyframes,
        );
    }
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
}
