//! The arena: a small complete multiplayer game on zao's Bevy plugin. A
//! headless server and bot players, each a Bevy App, in one process over
//! QUIC on loopback.
//!
//! ```sh
//! cargo run --release --example arena
//! cargo run --release --example arena -- --bots 6 --seconds 20 --mode listen
//! ```
//!
//! Two rounds by default (`--mode both`):
//! - **dedicated**: the server App starts its server from its own system
//!   (the "Host" button); each bot starts in its menu state and joins from
//!   there. Players walk to items and pick them up (the server judges;
//!   inventories travel on a reliable-unordered channel), chat with their
//!   team (a room on the server) and with everyone, download a 192 KiB map
//!   on a channel of its own while chat and spawns go on beside it, and
//!   receive one snapshot per tick, encoded once for all of them. A third
//!   of the way in, the server drops one player by despawning its entity;
//!   the player goes back to its menu, joins again and finds its inventory.
//! - **listen**: the same, with the server App's own player (the host)
//!   connected in memory: no socket, no TLS, and the game code cannot tell
//!   it from the others.
//!
//! Each round ends with a summary and its checks; the process exits with 1
//! if any check failed.
//!
//! Flags: `--bots N` (4 remote players), `--seconds N` (15, the round's
//! length), `--mode both|dedicated|listen`.

// Bevy system parameters elide their lifetimes by convention.
#![allow(elided_lifetimes_in_paths)]

// The game's items are public for tests/arena.rs, which plays it too.
#[allow(unreachable_pub)]
mod game;

use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bevy_app::App;
use bevy_state::app::StatesPlugin;
use zao::bevy::{
    ZaoClientPlugin, ZaoClientSettings, ZaoServer, ZaoServerPlugin, ZaoServerSettings,
};

use game::bot::{ArenaBotPlugin, BotRecord, Join};
use game::protocol::{TICK_HZ, protocol};
use game::server::{ArenaServerPlugin, Ledger, RoundConfig};
use game::{Outcome, auth_by_name};

/// Names of the bots, in order.
const NAMES: [&str; 12] = [
    "ada", "bob", "cy", "dee", "eve", "fay", "gus", "hal", "ivy", "joe", "kim", "lou",
];

struct Settings {
    bots: usize,
    seconds: u32,
    modes: Vec<&'static str>,
}

fn settings() -> Result<Settings, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
    };
    let number = |flag: &str, default: u32| -> Result<u32, String> {
        value(flag).map_or(Ok(default), |v| {
            v.parse()
                .map_err(|_| format!("{flag} needs a whole number, got {v:?}"))
        })
    };
    let bots = number("--bots", 4)? as usize;
    if !(1..=NAMES.len()).contains(&bots) {
        return Err(format!("--bots must be 1 to {}", NAMES.len()));
    }
    let seconds = number("--seconds", 15)?.max(3);
    let modes = match value("--mode").map(String::as_str) {
        None | Some("both") => vec!["dedicated", "listen"],
        Some("dedicated") => vec!["dedicated"],
        Some("listen") => vec!["listen"],
        Some(other) => {
            return Err(format!(
                "--mode is both, dedicated or listen, not {other:?}"
            ));
        }
    };
    Ok(Settings {
        bots,
        seconds,
        modes,
    })
}

/// One round over loopback QUIC.
fn round(mode: &'static str, settings: &Settings) -> Outcome {
    let host = mode == "listen";
    let round = RoundConfig {
        ticks: settings.seconds * TICK_HZ,
        drop: Some((settings.seconds * TICK_HZ / 3, NAMES[0].to_owned())),
        ..RoundConfig::default()
    };
    let mut server_settings = ZaoServerSettings::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)));
    server_settings.auth = Some(auth_by_name());
    let mut server = App::new();
    // The game's own states (the bot's screens) need bevy_state's plugin.
    server.add_plugins((StatesPlugin, ZaoServerPlugin::default()));
    protocol(&mut server);
    server.add_plugins(ArenaServerPlugin {
        settings: server_settings,
        round: round.clone(),
    });
    if host {
        server.add_plugins(ArenaBotPlugin {
            name: "host".to_owned(),
            join: Join::Local,
        });
    }
    server.finish();
    server.cleanup();

    let tick = Duration::from_secs(1) / TICK_HZ;
    let started = Instant::now();
    // The "Host" button is pressed at the first update; the server binds
    // at the next.
    let (addr, hash) = loop {
        server.update();
        if let Some(s) = server.world().get_resource::<ZaoServer>()
            && let (Some(addr), Some(hash)) = (s.local_addr(), s.certificate_hash())
        {
            break (addr, hash);
        }
        if server.world().resource::<Ledger>().start_failed.is_some()
            || started.elapsed() > Duration::from_secs(10)
        {
            return Outcome::of(mode, &server, [], host, &round);
        }
        std::thread::sleep(tick);
    };
    println!("{mode} server on {addr}; {} bots joining", settings.bots);

    let mut bots: Vec<App> = NAMES
        .iter()
        .take(settings.bots)
        .map(|name| {
            let mut app = App::new();
            app.add_plugins((StatesPlugin, ZaoClientPlugin::default()));
            protocol(&mut app);
            app.add_plugins(ArenaBotPlugin {
                name: (*name).to_owned(),
                join: Join::Remote(Box::new(ZaoClientSettings::pinned(addr, hash))),
            });
            app.finish();
            app.cleanup();
            app
        })
        .collect();

    // One update of every App per tick, until the server has stopped and
    // every player left (or far too long has passed).
    let deadline = started + Duration::from_secs(u64::from(settings.seconds) * 2 + 30);
    let mut next = Instant::now();
    let mut last_second = 0;
    loop {
        server.update();
        bots.iter_mut().for_each(App::update);
        let ledger = server.world().resource::<Ledger>();
        let second = ledger.tick / TICK_HZ;
        if second != last_second && second.is_multiple_of(5) {
            last_second = second;
            println!("  {second:>3} s: {} players", connected_players(&server));
        }
        let done = ledger.stopped
            && bots
                .iter()
                .all(|b| b.world().resource::<BotRecord>().disconnects > 0);
        if done || Instant::now() > deadline {
            break;
        }
        next += tick;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    // Let the last goodbyes cross.
    for _ in 0..10 {
        server.update();
        bots.iter_mut().for_each(App::update);
        std::thread::sleep(tick);
    }
    Outcome::of(mode, &server, &bots, host, &round)
}

fn connected_players(server: &App) -> usize {
    server
        .world()
        .get_resource::<ZaoServer>()
        .map_or(0, |s| s.clients().len())
}

fn main() -> ExitCode {
    let settings = match settings() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let mut passed = true;
    for mode in &settings.modes {
        let started = Instant::now();
        let outcome = round(mode, &settings);
        println!("{}", outcome.summary());
        println!("({mode} round: {:.1} s)\n", started.elapsed().as_secs_f64());
        passed &= outcome.passed();
    }
    if passed {
        println!("PASS: every check held");
        ExitCode::SUCCESS
    } else {
        println!("FAIL: see the checks above");
        ExitCode::FAILURE
    }
}
