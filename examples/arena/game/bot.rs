//! A player: a Bevy App (or, on a listen server, the server's own App)
//! that joins from its menu, walks to the nearest item and picks it up,
//! chats with its team and with everyone, checks everything the server
//! tells it, and goes back to its menu (and joins again) when its
//! connection drops. Game code only: the same plugin plays over QUIC, on
//! the simulated network and as a listen server's host.

use std::collections::{BTreeMap, BTreeSet};

use bevy_app::{App, Plugin, Update};
use bevy_ecs::prelude::*;
use bevy_state::app::AppExtStates;
use bevy_state::prelude::{NextState, State, in_state};
use bevy_state::state::States;
use glam::Vec2;
use zao::bevy::{
    ConnectFailed, FromServer, ZaoClientSender, ZaoClientSettings, ZaoClientState, ZaoCommandsExt,
    client_connected, client_just_connected, client_just_disconnected,
};

use super::fnv1a;
use super::protocol::{
    ArenaSnapshot, ChatLine, Despawned, Input, InventoryUpdate, ItemKind, MapChunk, Pickup,
    RoundOver, Say, Scope, Spawned, Team, Thing, Welcome,
};

/// Updates the menu waits before pressing "Join" (and again after a
/// failed join or a drop).
pub const MENU_DELAY: u32 = 10;
/// Updates between two chat lines of one player.
pub const CHAT_EVERY: u32 = 40;
/// Updates a player stays after the round's end before it leaves.
pub const LINGER: u32 = 10;

/// Where a player is in its game.
#[derive(States, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Screen {
    /// The menu: it joins from here.
    #[default]
    Menu,
    /// In the arena.
    Playing,
    /// The round is over and it has left.
    Results,
}

/// How a player joins.
#[derive(Clone, Debug)]
pub enum Join {
    /// Over the network, to this server.
    Remote(Box<ZaoClientSettings>),
    /// In memory, to the server of its own App (a listen server's host).
    Local,
}

/// A player: add it to an App that has a zao client plugin and the
/// [`protocol`](super::protocol::protocol) (or a server plugin, for the
/// host of a listen server).
pub struct ArenaBotPlugin {
    /// Its name: its token, which the server's auth turns into its
    /// identity.
    pub name: String,
    /// How it joins.
    pub join: Join,
}

/// What a player saw, for the summary.
#[derive(Resource, Clone, Debug, Default)]
pub struct BotRecord {
    /// Its name.
    pub name: String,
    /// Its team, as the server said.
    pub team: Option<Team>,
    /// Joins that connected.
    pub connects: u32,
    /// Joins that failed.
    pub connect_failures: u32,
    /// Connections that ended.
    pub disconnects: u32,
    /// Connections that ended before the round did.
    pub drops: u32,
    /// Snapshot chunks received.
    pub snapshots: u32,
    /// Snapshots older than one received before (must stay 0).
    pub ticks_backwards: u32,
    /// The newest snapshot tick.
    pub last_tick: Option<u32>,
    /// Map downloads completed with the right hash, and with a wrong one.
    pub maps_ok: u32,
    /// Map downloads with a wrong hash (must stay 0).
    pub maps_bad: u32,
    /// Chat lines heard, all scopes.
    pub chat_heard: u32,
    /// Team lines heard.
    pub team_heard: u32,
    /// Team lines heard from the other team (must stay 0).
    pub team_leaks: u32,
    /// The newest inventory the server sent.
    pub inventory: InventoryUpdate,
    /// Pickups asked for.
    pub pickups: u32,
    /// Chat lines said.
    pub said: u32,
    /// Sends that failed.
    pub send_errors: u32,
    /// How the round ended, as the server said.
    pub round_over: Option<RoundOver>,
}

/// What the player knows of the arena on its current connection.
#[derive(Resource, Default)]
struct View {
    you: Option<u32>,
    pos: Option<Vec2>,
    items: BTreeMap<u32, (ItemKind, Vec2)>,
    map: Vec<Option<Vec<u8>>>,
    map_hash: u64,
    asked: BTreeSet<u32>,
    updates: u32,
    over_for: u32,
}

#[derive(Resource)]
struct Me(String, Join);

impl Plugin for ArenaBotPlugin {
    fn build(&self, app: &mut App) {
        app.init_state::<Screen>()
            .insert_resource(Me(self.name.clone(), self.join.clone()))
            .insert_resource(BotRecord {
                name: self.name.clone(),
                ..BotRecord::default()
            })
            .init_resource::<View>()
            .add_systems(
                Update,
                (
                    menu.run_if(in_state(Screen::Menu)),
                    joined.run_if(client_just_connected),
                    dropped.run_if(client_just_disconnected),
                    (listen, play)
                        .chain()
                        .run_if(client_connected)
                        .run_if(in_state(Screen::Playing)),
                )
                    .chain(),
            );
    }
}

/// The menu: "Join" pressed after a moment, and again if joining failed.
fn menu(
    mut commands: Commands,
    me: Res<Me>,
    client: Res<State<ZaoClientState>>,
    mut failed: MessageReader<ConnectFailed>,
    mut record: ResMut<BotRecord>,
    mut waited: Local<u32>,
) {
    record.connect_failures += failed.read().count() as u32;
    if *client.get() != ZaoClientState::Disconnected || record.round_over.is_some() {
        return;
    }
    *waited += 1;
    if *waited >= MENU_DELAY {
        *waited = 0;
        match &me.1 {
            Join::Remote(settings) => {
                let settings = (**settings).clone().with_token(me.0.as_bytes());
                commands.connect_zao(settings);
            }
            Join::Local => commands.connect_zao_local(Some(me.0.as_bytes().to_vec())),
        }
    }
}

fn joined(
    mut next: ResMut<NextState<Screen>>,
    mut record: ResMut<BotRecord>,
    mut view: ResMut<View>,
) {
    record.connects += 1;
    *view = View::default();
    next.set(Screen::Playing);
}

fn dropped(mut next: ResMut<NextState<Screen>>, mut record: ResMut<BotRecord>) {
    record.disconnects += 1;
    if record.round_over.is_some() {
        next.set(Screen::Results);
    } else {
        record.drops += 1;
        next.set(Screen::Menu);
    }
}

/// Everything the server said this update, checked as it is read.
#[allow(clippy::too_many_arguments)]
fn listen(
    mut welcome: MessageReader<FromServer<Welcome>>,
    mut spawned: MessageReader<FromServer<Spawned>>,
    mut despawned: MessageReader<FromServer<Despawned>>,
    mut map: MessageReader<FromServer<MapChunk>>,
    mut inventory: MessageReader<FromServer<InventoryUpdate>>,
    mut chat: MessageReader<FromServer<ChatLine>>,
    mut over: MessageReader<FromServer<RoundOver>>,
    mut snapshots: MessageReader<FromServer<ArenaSnapshot>>,
    mut view: ResMut<View>,
    mut record: ResMut<BotRecord>,
) {
    for FromServer(w) in welcome.read() {
        view.you = Some(w.you);
        view.map = vec![None; usize::from(w.map_chunks)];
        view.map_hash = w.map_hash;
        record.team = Some(w.team);
    }
    for FromServer(s) in spawned.read() {
        if let Thing::Item(kind) = s.thing {
            view.items.insert(s.id, (kind, s.pos));
        }
    }
    for FromServer(d) in despawned.read() {
        view.items.remove(&d.id);
    }
    for FromServer(chunk) in map.read() {
        if let Some(slot) = view.map.get_mut(usize::from(chunk.index)) {
            *slot = Some(chunk.tiles.clone());
        }
        if !view.map.is_empty() && view.map.iter().all(Option::is_some) {
            let whole: Vec<u8> = view.map.iter().flatten().flatten().copied().collect();
            if fnv1a(&whole) == view.map_hash {
                record.maps_ok += 1;
            } else {
                record.maps_bad += 1;
            }
            view.map.clear();
        }
    }
    // Inventory updates travel unordered: the newest version wins.
    for FromServer(inv) in inventory.read() {
        if inv.version >= record.inventory.version {
            record.inventory = inv.clone();
        }
    }
    for FromServer(line) in chat.read() {
        record.chat_heard += 1;
        if line.scope == Scope::Team {
            record.team_heard += 1;
            record.team_leaks += u32::from(line.team != record.team);
        }
    }
    for FromServer(o) in over.read() {
        record.round_over = Some(o.clone());
    }
    for FromServer(s) in snapshots.read() {
        record.snapshots += 1;
        if record.last_tick.is_some_and(|t| s.tick < t) {
            record.ticks_backwards += 1;
        }
        record.last_tick = Some(record.last_tick.map_or(s.tick, |t| t.max(s.tick)));
        if let Some(me) = view
            .you
            .and_then(|you| s.avatars.iter().find(|a| a.id == you))
        {
            view.pos = Some(me.pos);
        }
    }
}

/// The player's move: to the nearest item, a pickup when standing on it,
/// a chat line now and then; after the round, "gg" and leave.
fn play(
    mut commands: Commands,
    mut send: ZaoClientSender,
    mut view: ResMut<View>,
    mut record: ResMut<BotRecord>,
) {
    view.updates += 1;
    // A refused pickup (the server saw the player elsewhere) may be tried
    // again later.
    if view.updates.is_multiple_of(60) {
        view.asked.clear();
    }
    let mut errors = 0;
    if record.round_over.is_some() {
        if view.over_for == 0 {
            let gg = Say {
                scope: Scope::All,
                text: "gg".to_owned(),
            };
            errors += u32::from(send.send(&gg).is_err());
        }
        view.over_for += 1;
        if view.over_for == LINGER {
            commands.disconnect_zao();
        }
        record.send_errors += errors;
        return;
    }
    let Some(pos) = view.pos else {
        return;
    };
    let nearest = view
        .items
        .iter()
        .filter(|(id, _)| !view.asked.contains(id))
        .min_by(|a, b| pos.distance(a.1.1).total_cmp(&pos.distance(b.1.1)))
        .map(|(&id, &(_, at))| (id, at));
    let dir = nearest.map_or(Vec2::ZERO, |(_, at)| (at - pos).normalize_or_zero());
    let input = Input {
        tick: view.updates,
        dir,
    };
    errors += u32::from(send.send(&input).is_err());
    if let Some((item, at)) = nearest
        && pos.distance(at) < 1.0
    {
        view.asked.insert(item);
        record.pickups += 1;
        errors += u32::from(send.send(&Pickup { item }).is_err());
    }
    // Players chat at different moments: the offset comes from the name.
    let offset = record.name.bytes().map(u32::from).sum::<u32>() % CHAT_EVERY;
    if view.updates % CHAT_EVERY == offset {
        let scope = if record.said.is_multiple_of(2) {
            Scope::Team
        } else {
            Scope::All
        };
        let say = Say {
            scope,
            text: format!("{} here, line {}", record.name, record.said),
        };
        record.said += 1;
        errors += u32::from(send.send(&say).is_err());
    }
    record.send_errors += errors;
}
