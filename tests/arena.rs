//! The arena example's game, played on the simulated network: a
//! dedicated server with players on different bad links, and a listen
//! server whose host plays in the server's own App. Every round must pass
//! the checks the example prints (the round ends for everyone, every map
//! download is intact, inventories match the server's, team chat stays in
//! its room, snapshot ticks never go backwards, the points add up, and the
//! player dropped mid-round joins again from its menu and keeps its
//! inventory).

#![cfg(all(
    feature = "bevy",
    feature = "sim",
    feature = "derive",
    feature = "glam"
))]
// Bevy system parameters elide their lifetimes by convention.
#![allow(elided_lifetimes_in_paths)]

#[path = "../examples/arena/game/mod.rs"]
#[allow(unreachable_pub, dead_code)]
mod game;

use std::time::Duration;

use bevy_state::app::StatesPlugin;
use zao::bevy::testing::{ZaoSimLink, ZaoTestNet};
use zao::bevy::{ZaoClientPlugin, ZaoServerPlugin, ZaoServerSettings};
use zao::sim::LinkSpec;

use game::bot::{ArenaBotPlugin, BotRecord, Join};
use game::protocol::{TICK_HZ, protocol};
use game::server::{ArenaServerPlugin, Ledger, RoundConfig};
use game::{Outcome, auth_by_name};

/// Plays one round: a server (with its own player, `host`) and a remote
/// player per `(name, link)`; `drop` is dropped a third of the way in.
fn play(seed: u64, host: bool, players: &[(&str, LinkSpec)], drop: &str) -> Outcome {
    let round = RoundConfig {
        ticks: 10 * TICK_HZ,
        drop: Some((10 * TICK_HZ / 3, drop.to_owned())),
        seed,
        ..RoundConfig::default()
    };
    let server_round = round.clone();
    let mut net = ZaoTestNet::with_server_app(seed, protocol, move |app| {
        let mut settings = ZaoServerSettings::default();
        settings.auth = Some(auth_by_name());
        // The game's own states need bevy_state's plugin, as any Bevy
        // game's do: it adds it (after zao's plugins is fine).
        app.add_plugins((ZaoServerPlugin::default(), StatesPlugin));
        protocol(app);
        app.add_plugins(ArenaServerPlugin {
            settings,
            round: server_round,
        });
        if host {
            app.add_plugins(ArenaBotPlugin {
                name: "host".to_owned(),
                join: Join::Local,
            });
        }
    });
    net.step = Duration::from_secs(1) / TICK_HZ;
    for (name, link) in players {
        let name = (*name).to_owned();
        net.add_client_with(
            ZaoSimLink::both(link.clone()),
            ZaoClientPlugin::default(),
            move |app| {
                app.add_plugins(StatesPlugin);
                protocol(app);
                app.add_plugins(ArenaBotPlugin {
                    name,
                    join: Join::Remote(Box::default()),
                });
            },
        );
    }
    let finished = net.run_until(Duration::from_secs(40), |net| {
        net.server.world().resource::<Ledger>().stopped
            && net
                .clients
                .iter()
                .all(|c| c.world().resource::<BotRecord>().disconnects > 0)
    });
    net.run_for(Duration::from_millis(500));
    let mode = if host { "listen" } else { "dedicated" };
    let outcome = Outcome::of(mode, &net.server, &net.clients, host, &round);
    assert!(finished, "the round did not finish:\n{}", outcome.summary());
    outcome
}

#[test]
fn a_dedicated_round_over_bad_links_passes_every_check() {
    let outcome = play(
        1,
        false,
        &[
            ("ada", LinkSpec::l2()),
            ("bob", LinkSpec::l3()),
            ("cy", LinkSpec::l4()),
            ("dee", LinkSpec::l6()),
        ],
        "bob",
    );
    assert!(outcome.passed(), "{}", outcome.summary());
}

#[test]
fn a_listen_server_round_passes_every_check_and_its_host_plays_like_anyone() {
    let outcome = play(
        2,
        true,
        &[("ada", LinkSpec::l2()), ("bob", LinkSpec::l2())],
        "ada",
    );
    assert!(outcome.passed(), "{}", outcome.summary());
    let host = &outcome.players[0];
    let record = &outcome.ledger.players["host"];
    assert_eq!((host.connects, record.connects), (1, 1));
    assert!(record.picks > 0 && host.snapshots > 0 && host.maps_ok == 1);
}
