//! The arena: a small multiplayer game on zao's Bevy plugin, shared by the
//! `arena` example (real QUIC on loopback) and `tests/arena.rs` (the same
//! game on the simulated network, over bad links).

pub mod bot;
pub mod protocol;
pub mod server;

use std::fmt::Write as _;
use std::sync::Arc;

use zao::bevy::Identity;
use zao::proto::AuthCallback;

use bevy_app::App;
use bot::BotRecord;
use server::{Ledger, RoundConfig};

/// The server's auth: a player's token is its name, and its identity.
pub fn auth_by_name() -> AuthCallback {
    Arc::new(|request| {
        Box::pin(async move {
            let name = String::from_utf8_lossy(request.token.as_deref().unwrap_or_default())
                .chars()
                .filter(|c| c.is_alphanumeric())
                .take(16)
                .collect::<String>();
            Ok(Identity::new(if name.is_empty() {
                "guest".into()
            } else {
                name
            }))
        })
    })
}

/// A small seeded generator (xorshift64*): the map and the items are the
/// same on every run with the same seed.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next number.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0.max(1);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A point in ±`half` on both axes.
    pub fn point(&mut self, half: f32) -> glam::Vec2 {
        let mut unit = || (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0;
        glam::Vec2::new(unit() * half, unit() * half)
    }
}

/// FNV-1a, 64 bits: the map's checksum.
#[must_use]
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One round's result: the server's ledger and every player's record.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// "dedicated" or "listen".
    pub mode: &'static str,
    /// The server's account.
    pub ledger: Ledger,
    /// Every player's, the host's (listen server) first.
    pub players: Vec<BotRecord>,
    /// The player the server dropped mid-round.
    pub dropped: Option<String>,
}

impl Outcome {
    /// The round's result as its Apps hold it: the server App's ledger, and
    /// the record of each player (the server App's own first, on a listen
    /// server, where `host`).
    #[must_use]
    pub fn of<'a>(
        mode: &'static str,
        server: &App,
        bots: impl IntoIterator<Item = &'a App>,
        host: bool,
        round: &RoundConfig,
    ) -> Self {
        let record = |app: &App| app.world().resource::<BotRecord>().clone();
        let players = host
            .then(|| record(server))
            .into_iter()
            .chain(bots.into_iter().map(record))
            .collect();
        Self {
            mode,
            ledger: server.world().resource::<Ledger>().clone(),
            players,
            dropped: round.drop.as_ref().map(|(_, name)| name.clone()),
        }
    }

    /// Each check and whether it held.
    #[must_use]
    pub fn checks(&self) -> Vec<(String, bool)> {
        let l = &self.ledger;
        let p = &self.players;
        let mut checks = vec![
            (
                "the server started and stopped after the round".to_owned(),
                l.start_failed.is_none() && l.stopped,
            ),
            (
                "every player heard the round's end".to_owned(),
                l.result.is_some() && p.iter().all(|b| b.round_over == l.result),
            ),
            (
                "every connection downloaded the map intact".to_owned(),
                p.iter()
                    .all(|b| b.maps_bad == 0 && b.maps_ok == b.connects && b.connects > 0),
            ),
            (
                "every player's inventory is the server's".to_owned(),
                p.iter().all(|b| {
                    l.players
                        .get(&b.name)
                        .is_some_and(|r| r.inventory == b.inventory)
                }),
            ),
            (
                "team chat stayed in its room".to_owned(),
                p.iter().all(|b| b.team_leaks == 0) && p.iter().any(|b| b.team_heard > 0),
            ),
            (
                "snapshot ticks never went backwards".to_owned(),
                p.iter().all(|b| b.ticks_backwards == 0 && b.snapshots > 0),
            ),
            (
                "the points add up to the items picked".to_owned(),
                l.result.as_ref().is_some_and(|r| {
                    let picked: u32 = l.players.values().map(|r| r.points).sum();
                    r.points.0 + r.points.1 == picked && picked > 0
                }),
            ),
        ];
        if let Some(name) = &self.dropped {
            let bot = p.iter().find(|b| &b.name == name);
            let record = l.players.get(name);
            checks.push((
                format!("{name}, dropped mid-round, rejoined from its menu and kept its inventory"),
                bot.is_some_and(|b| b.drops == 1 && b.connects == 2)
                    && record.is_some_and(|r| r.dropped == 1 && r.connects == 2),
            ));
        }
        checks
    }

    /// Whether every check held.
    #[must_use]
    pub fn passed(&self) -> bool {
        self.checks().iter().all(|(_, ok)| *ok)
    }

    /// The summary: a table of players and the checks.
    #[must_use]
    pub fn summary(&self) -> String {
        let l = &self.ledger;
        let mut out = String::new();
        let result = l.result.as_ref().map_or("no result".to_owned(), |r| {
            format!(
                "red {} – blue {} ({})",
                r.points.0,
                r.points.1,
                r.winner.map_or("a draw", |t| t.room())
            )
        });
        let _ = writeln!(
            out,
            "== {} server: {} ticks, {} snapshots ({} datagrams), {} team lines relayed, {} sends failed: {result}",
            self.mode, l.tick, l.snapshots, l.chunks, l.team_lines, l.send_failures
        );
        let _ = writeln!(
            out,
            "{:<8} {:<5} {:>8} {:>6} {:>5} {:>4} {:>6} {:>9} {:>4} {:>10} {:>5}",
            "player",
            "team",
            "connects",
            "points",
            "coins",
            "gems",
            "picks",
            "snapshots",
            "maps",
            "chat(team)",
            "leaks"
        );
        for b in &self.players {
            let r = l.players.get(&b.name).cloned().unwrap_or_default();
            let _ = writeln!(
                out,
                "{:<8} {:<5} {:>8} {:>6} {:>5} {:>4} {:>6} {:>9} {:>4} {:>10} {:>5}",
                b.name,
                b.team.map_or("-", |t| t.room()),
                b.connects,
                r.points,
                b.inventory.coins,
                b.inventory.gems,
                format!("{}/{}", r.picks, b.pickups),
                b.snapshots,
                b.maps_ok,
                format!("{}({})", b.chat_heard, b.team_heard),
                b.team_leaks
            );
        }
        for (check, ok) in self.checks() {
            let _ = writeln!(out, "  [{}] {check}", if ok { "PASS" } else { "FAIL" });
        }
        out
    }
}
