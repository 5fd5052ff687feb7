//! The arena's server: a headless Bevy App that starts its zao server from
//! its own system, keeps each player on the entity zao spawned for its
//! connection, moves everyone each tick, broadcasts one snapshot per tick
//! (encoded once for every player), judges pickups, relays chat by room
//! and ends the round.
//!
//! What a player owns (points, coins, gems) is kept by name, the identity
//! its auth returned, not by connection: a player dropped mid-round and
//! reconnecting finds its inventory again.

use std::collections::BTreeMap;

use bevy_app::{App, Plugin, Update};
use bevy_ecs::prelude::*;
use glam::Vec2;
use zao::bevy::{
    ClientConnected, ClientDisconnected, ClientId, ConnectedClient, FromClient, Room, SendFailed,
    SendTarget, ServerStartFailed, ZaoCommandsExt, ZaoServerSender, ZaoServerSettings,
    server_running,
};

use super::protocol::{
    ArenaSnapshot, Avatar, ChatLine, Despawned, Input, InventoryUpdate, ItemKind, MapChunk, Pickup,
    RoundOver, Say, Scope, Spawned, Team, Thing, Welcome,
};
use super::{Rng, fnv1a};

/// Half the arena's side, in metres: positions stay in ±`ARENA`.
pub const ARENA: f32 = 12.0;
/// Walking speed, metres per second.
pub const SPEED: f32 = 4.0;
/// How close a player must be to an item, by the server's reckoning, for
/// its pickup to count: the player's own radius plus what one tick of
/// latency may have moved it.
pub const PICK_RADIUS: f32 = 1.5;
/// Bytes per map chunk.
pub const MAP_CHUNK: usize = 4096;
/// Longest chat line relayed, in bytes.
pub const MAX_SAY: usize = 200;

/// How the round goes.
#[derive(Resource, Clone, Debug)]
pub struct RoundConfig {
    /// Ticks from the server's start to the end of the round.
    pub ticks: u32,
    /// At this tick the server drops the player of this name (despawns its
    /// entity, which disconnects it), to show a reconnect.
    pub drop: Option<(u32, String)>,
    /// Items lying in the arena at any time.
    pub items: usize,
    /// Map chunks every player downloads when it joins.
    pub map_chunks: u16,
    /// Seeds the map and the item positions.
    pub seed: u64,
    /// Ticks the server waits after the round for players to leave before
    /// it stops.
    pub grace: u32,
}

impl Default for RoundConfig {
    fn default() -> Self {
        Self {
            ticks: 450,
            drop: None,
            items: 8,
            map_chunks: 48,
            seed: 1,
            grace: 90,
        }
    }
}

/// A player, on its client's entity.
#[derive(Component, Clone, Debug)]
pub struct Player {
    /// Its avatar id.
    pub avatar: u32,
    /// Its name (identity key).
    pub name: String,
    /// Its team.
    pub team: Team,
    /// Where it is.
    pub pos: Vec2,
    /// Where it walks: length 0 to 1.
    pub dir: Vec2,
}

/// What a player has earned this round, kept by name across connections.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Record {
    /// Its team, chosen at its first connection.
    pub team: Option<Team>,
    /// Points: the value of the items it picked.
    pub points: u32,
    /// What it holds (the last update the server sent it).
    pub inventory: InventoryUpdate,
    /// Connections it made.
    pub connects: u32,
    /// Times the server dropped it.
    pub dropped: u32,
    /// Items it picked.
    pub picks: u32,
    /// Pickups refused (too far, already taken).
    pub refused: u32,
    /// Chat lines it said.
    pub said: u32,
}

/// The server's account of the round.
#[derive(Resource, Clone, Debug, Default)]
pub struct Ledger {
    /// Per player name.
    pub players: BTreeMap<String, Record>,
    /// Ticks played.
    pub tick: u32,
    /// Snapshots sent (one per tick once anyone is connected) and the
    /// datagrams they took.
    pub snapshots: u32,
    /// Datagram chunks the snapshots took, all players together.
    pub chunks: usize,
    /// Chat lines relayed to a team's room.
    pub team_lines: u32,
    /// Sends that failed (game code saw every one).
    pub send_failures: u32,
    /// The round's result, once over.
    pub result: Option<RoundOver>,
    /// The server stopped after the round.
    pub stopped: bool,
    /// Why the server could not start, if it could not.
    pub start_failed: Option<String>,
}

/// The arena's state.
#[derive(Resource)]
struct Arena {
    next_id: u32,
    items: BTreeMap<u32, (ItemKind, Vec2)>,
    avatars: BTreeMap<ClientId, u32>,
    rng: Rng,
    map: Vec<u8>,
    over_at: Option<u32>,
}

/// The server's side of the game: add it to an App with a
/// [`ZaoServerPlugin`](zao::bevy::ZaoServerPlugin) (not started at launch)
/// and the [`protocol`](super::protocol::protocol).
pub struct ArenaServerPlugin {
    /// Where and how the server starts (the game's "Host" button).
    pub settings: ZaoServerSettings,
    /// The round.
    pub round: RoundConfig,
}

impl Plugin for ArenaServerPlugin {
    fn build(&self, app: &mut App) {
        let mut rng = Rng(self.round.seed);
        let map: Vec<u8> = (0..usize::from(self.round.map_chunks) * MAP_CHUNK)
            .map(|_| rng.next() as u8)
            .collect();
        app.insert_resource(self.round.clone())
            .insert_resource(HostSettings(self.settings.clone()))
            .init_resource::<Ledger>()
            .insert_resource(Arena {
                next_id: 1,
                items: BTreeMap::new(),
                avatars: BTreeMap::new(),
                rng,
                map,
                over_at: None,
            })
            .add_systems(
                Update,
                (
                    host_button,
                    start_failed,
                    (
                        joined,
                        left,
                        inputs,
                        pickups,
                        chat,
                        tick,
                        count_send_failures,
                    )
                        .chain()
                        .run_if(server_running),
                )
                    .chain(),
            );
    }
}

/// Where and how the server starts.
#[derive(Resource)]
struct HostSettings(ZaoServerSettings);

/// The "Host" button, pressed once at the first update.
fn host_button(mut commands: Commands, settings: Res<HostSettings>, mut pressed: Local<bool>) {
    if !*pressed {
        *pressed = true;
        commands.start_zao_server(settings.0.clone());
    }
}

fn start_failed(mut failed: MessageReader<ServerStartFailed>, mut ledger: ResMut<Ledger>) {
    for f in failed.read() {
        eprintln!("arena server: cannot start: {}", f.error);
        ledger.start_failed = Some(f.error.to_string());
    }
}

/// A client connected: its entity becomes a player on a team (its room),
/// it gets the world, its inventory and the map, everyone gets its avatar.
fn joined(
    mut connected: MessageReader<ClientConnected>,
    mut commands: Commands,
    mut send: ZaoServerSender,
    mut arena: ResMut<Arena>,
    mut ledger: ResMut<Ledger>,
    round: Res<RoundConfig>,
    players: Query<&Player>,
) {
    for c in connected.read() {
        let name = c
            .identity
            .as_ref()
            .map_or_else(|| format!("guest-{}", c.client.0), |i| i.key.clone());
        let (reds, blues) = ledger
            .players
            .values()
            .fold((0, 0), |(r, b), p| match p.team {
                Some(Team::Red) => (r + 1, b),
                Some(Team::Blue) => (r, b + 1),
                None => (r, b),
            });
        let record = ledger.players.entry(name.clone()).or_default();
        let team = *record
            .team
            .get_or_insert(if reds <= blues { Team::Red } else { Team::Blue });
        record.connects += 1;
        let inventory = record.inventory.clone();
        if let Some(server) = send.server() {
            server.join(&Room::named(team.room()), c.client);
        }

        let avatar = arena.next_id;
        arena.next_id += 1;
        arena.avatars.insert(c.client, avatar);
        let pos = arena.rng.point(ARENA * 0.8);
        commands.entity(c.entity).insert(Player {
            avatar,
            name: name.clone(),
            team,
            pos,
            dir: Vec2::ZERO,
        });

        let to = SendTarget::One(c.client);
        let mut sent = vec![send.send(
            &Welcome {
                you: avatar,
                team,
                map_chunks: round.map_chunks,
                map_hash: fnv1a(&arena.map),
            },
            to.clone(),
        )];
        for p in &players {
            let thing = Thing::Avatar {
                name: p.name.clone(),
                team: p.team,
            };
            sent.push(send.send(
                &Spawned {
                    id: p.avatar,
                    thing,
                    pos: p.pos,
                },
                to.clone(),
            ));
        }
        for (&id, &(kind, pos)) in &arena.items {
            let item = Spawned {
                id,
                thing: Thing::Item(kind),
                pos,
            };
            sent.push(send.send(&item, to.clone()));
        }
        let me = Spawned {
            id: avatar,
            thing: Thing::Avatar {
                name: name.clone(),
                team,
            },
            pos,
        };
        sent.push(send.send(&me, SendTarget::All));
        sent.push(send.send(&inventory, to.clone()));
        let line = ChatLine {
            from: "server".to_owned(),
            team: None,
            scope: Scope::Server,
            text: format!("{name} joined {}", team.room()),
        };
        sent.push(send.send(&line, SendTarget::All));
        // The map on its own channel: the chat and world channels carry on
        // beside it.
        for (index, tiles) in arena.map.chunks(MAP_CHUNK).enumerate() {
            let chunk = MapChunk {
                index: index as u16,
                tiles: tiles.to_vec(),
            };
            sent.push(send.send(&chunk, to.clone()));
        }
        ledger.send_failures += sent.iter().filter(|r| r.is_err()).count() as u32;
    }
}

/// A client left (or was dropped): everyone else loses its avatar.
fn left(
    mut disconnected: MessageReader<ClientDisconnected>,
    mut send: ZaoServerSender,
    mut arena: ResMut<Arena>,
    mut ledger: ResMut<Ledger>,
) {
    for d in disconnected.read() {
        if let Some(id) = arena.avatars.remove(&d.client)
            && send.send(&Despawned { id }, SendTarget::All).is_err()
        {
            ledger.send_failures += 1;
        }
    }
}

fn inputs(mut inputs: MessageReader<FromClient<Input>>, mut players: Query<&mut Player>) {
    for input in inputs.read() {
        if let Ok(mut player) = players.get_mut(input.entity) {
            // A hostile client may send any vector: at most unit length.
            let dir = input.message.dir;
            player.dir = if dir.is_finite() {
                dir.clamp_length_max(1.0)
            } else {
                Vec2::ZERO
            };
        }
    }
}

/// The server judges each pickup: the round must still run, the item must
/// still lie there and the player must stand by it. (A pickup that arrives
/// after the round's end, late on a bad link, is refused: the result is
/// already out.)
fn pickups(
    mut pickups: MessageReader<FromClient<Pickup>>,
    players: Query<&Player>,
    mut send: ZaoServerSender,
    mut arena: ResMut<Arena>,
    mut ledger: ResMut<Ledger>,
) {
    for p in pickups.read() {
        let Ok(player) = players.get(p.entity) else {
            continue;
        };
        let record = ledger.players.entry(player.name.clone()).or_default();
        if arena.over_at.is_some() {
            record.refused += 1;
            continue;
        }
        let Some(&(kind, pos)) = arena.items.get(&p.message.item) else {
            record.refused += 1;
            continue;
        };
        if player.pos.distance(pos) > PICK_RADIUS {
            record.refused += 1;
            continue;
        }
        arena.items.remove(&p.message.item);
        record.picks += 1;
        record.points += kind.value();
        let inventory = &mut record.inventory;
        inventory.version += 1;
        match kind {
            ItemKind::Coin => inventory.coins += 1,
            ItemKind::Gem => inventory.gems += 1,
        }
        let inventory = inventory.clone();
        let mut failures = 0;
        failures += u32::from(send.send(&inventory, p.client).is_err());
        let gone = Despawned { id: p.message.item };
        failures += u32::from(send.send(&gone, SendTarget::All).is_err());
        ledger.send_failures += failures;
    }
}

/// Relays chat: to everyone, or to the sender's team's room.
fn chat(
    mut says: MessageReader<FromClient<Say>>,
    players: Query<&Player>,
    mut send: ZaoServerSender,
    mut ledger: ResMut<Ledger>,
) {
    for say in says.read() {
        let Ok(player) = players.get(say.entity) else {
            continue;
        };
        let mut text = say.message.text.clone();
        if text.len() > MAX_SAY {
            let mut end = MAX_SAY;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
        }
        let (scope, target) = match say.message.scope {
            Scope::Team => (
                Scope::Team,
                SendTarget::Room(Room::named(player.team.room())),
            ),
            Scope::All | Scope::Server => (Scope::All, SendTarget::All),
        };
        ledger.team_lines += u32::from(scope == Scope::Team);
        ledger.players.entry(player.name.clone()).or_default().said += 1;
        let line = ChatLine {
            from: player.name.clone(),
            team: Some(player.team),
            scope,
            text,
        };
        if send.send(&line, target).is_err() {
            ledger.send_failures += 1;
        }
    }
}

/// One tick: items replenished, players moved, the snapshot broadcast; the
/// scheduled drop; the round's end; the stop once everyone left.
fn tick(
    mut commands: Commands,
    mut players: Query<(Entity, &mut Player)>,
    clients: Query<&ConnectedClient>,
    mut send: ZaoServerSender,
    mut arena: ResMut<Arena>,
    mut ledger: ResMut<Ledger>,
    round: Res<RoundConfig>,
) {
    ledger.tick += 1;
    let tick = ledger.tick;
    if let Some(over) = arena.over_at {
        if clients.is_empty() || tick >= over + round.grace {
            commands.stop_zao_server();
            ledger.stopped = true;
        }
        return;
    }
    while arena.items.len() < round.items {
        let id = arena.next_id;
        arena.next_id += 1;
        let kind = if arena.rng.next().is_multiple_of(5) {
            ItemKind::Gem
        } else {
            ItemKind::Coin
        };
        let pos = arena.rng.point(ARENA * 0.9);
        arena.items.insert(id, (kind, pos));
        let item = Spawned {
            id,
            thing: Thing::Item(kind),
            pos,
        };
        ledger.send_failures += u32::from(send.send(&item, SendTarget::All).is_err());
    }
    let step = SPEED / super::protocol::TICK_HZ as f32;
    let mut avatars = Vec::new();
    for (_, mut p) in &mut players {
        let next = p.pos + p.dir * step;
        p.pos = next.clamp(Vec2::splat(-ARENA), Vec2::splat(ARENA));
        let points = ledger.players.get(&p.name).map_or(0, |r| r.points);
        avatars.push(Avatar {
            id: p.avatar,
            pos: p.pos,
            score: points,
        });
    }
    if !avatars.is_empty() {
        avatars.sort_by_key(|a| a.id);
        match send.send_snapshot(&ArenaSnapshot { tick, avatars }, SendTarget::All) {
            Ok(chunks) => {
                ledger.snapshots += 1;
                ledger.chunks += chunks;
            }
            Err(_) => ledger.send_failures += 1,
        }
    }
    if let Some((at, name)) = &round.drop
        && tick == *at
        && let Some((entity, _)) = players.iter().find(|(_, p)| &p.name == name)
    {
        // Despawning a client's entity disconnects it.
        commands.entity(entity).despawn();
        ledger.players.entry(name.clone()).or_default().dropped += 1;
    }
    if tick >= round.ticks {
        let red: u32 = team_points(&ledger, Team::Red);
        let blue: u32 = team_points(&ledger, Team::Blue);
        let winner = match red.cmp(&blue) {
            std::cmp::Ordering::Greater => Some(Team::Red),
            std::cmp::Ordering::Less => Some(Team::Blue),
            std::cmp::Ordering::Equal => None,
        };
        let over = RoundOver {
            winner,
            points: (red, blue),
        };
        ledger.send_failures += u32::from(send.send(&over, SendTarget::All).is_err());
        ledger.result = Some(over);
        arena.over_at = Some(tick);
    }
}

fn team_points(ledger: &Ledger, team: Team) -> u32 {
    ledger
        .players
        .values()
        .filter(|r| r.team == Some(team))
        .map(|r| r.points)
        .sum()
}

/// Sends through `ToClients` that failed arrive as `SendFailed`; this game
/// sends through `ZaoServerSender` and counts its results, but reads these too.
fn count_send_failures(mut failed: MessageReader<SendFailed>, mut ledger: ResMut<Ledger>) {
    ledger.send_failures += failed.read().count() as u32;
}
