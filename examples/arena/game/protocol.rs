//! The arena's messages and channels. Server and players call the same
//! [`protocol`] function: a client whose registrations differ is refused
//! with the first difference named.

use bevy_app::App;
use glam::Vec2;
use zao::bevy::{AppZaoExt, ChannelKind, Direction};
use zao::zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};
use zao::{Decode, Encode, NetMessage, Snapshot, SnapshotItem};

/// Ticks per second, on the server and on every player: one App update
/// is one tick.
pub const TICK_HZ: u32 = 30;

/// The two teams; each is a room on the server, for team chat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Encode, Decode)]
pub enum Team {
    /// Red.
    #[zao(tag = 0)]
    Red,
    /// Blue.
    #[zao(tag = 1)]
    Blue,
}

impl Team {
    /// The team's room name on the server.
    pub fn room(self) -> &'static str {
        match self {
            Self::Red => "red",
            Self::Blue => "blue",
        }
    }
}

/// Who a chat line is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Encode, Decode)]
pub enum Scope {
    /// Everyone.
    #[zao(tag = 0)]
    All,
    /// The sender's team (a room).
    #[zao(tag = 1)]
    Team,
    /// The server speaking.
    #[zao(tag = 2)]
    Server,
}

/// What can be picked up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Encode, Decode)]
pub enum ItemKind {
    /// Worth 1.
    #[zao(tag = 0)]
    Coin,
    /// Worth 5.
    #[zao(tag = 1)]
    Gem,
}

impl ItemKind {
    /// Points the item scores.
    pub fn value(self) -> u32 {
        match self {
            Self::Coin => 1,
            Self::Gem => 5,
        }
    }
}

// ---- player → server ----

/// Where the player wants to go this tick: a unit vector, or zero to stand
/// still. Sequenced: only the newest matters, an older one arriving late is
/// dropped by the transport.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 100)]
pub struct Input {
    /// The player's own tick, for logs.
    pub tick: u32,
    /// Direction, length 0 or 1.
    pub dir: Vec2,
}

/// "I am standing on this item": the server checks and decides.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 101)]
pub struct Pickup {
    /// The item's id.
    pub item: u32,
}

/// A chat line from a player.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 102)]
pub struct Say {
    /// All, or the team's room.
    pub scope: Scope,
    /// The line.
    pub text: String,
}

// ---- server → players ----

/// The server's first words to a player: who it is and the map it is
/// about to download.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 110)]
pub struct Welcome {
    /// The player's avatar id.
    pub you: u32,
    /// Its team.
    pub team: Team,
    /// Map chunks to come on the "map" channel.
    pub map_chunks: u16,
    /// FNV-1a of the whole map, to check the download.
    pub map_hash: u64,
}

/// Something appeared in the arena.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 111)]
pub struct Spawned {
    /// Its id (avatars and items share the id space).
    pub id: u32,
    /// What it is.
    pub thing: Thing,
    /// Where.
    pub pos: Vec2,
}

/// What a [`Spawned`] is.
#[derive(Clone, Debug, PartialEq, Encode, Decode)]
pub enum Thing {
    /// A player's avatar.
    #[zao(tag = 0)]
    Avatar {
        /// The player's name.
        name: String,
        /// Its team.
        team: Team,
    },
    /// An item to pick up.
    #[zao(tag = 1)]
    Item(ItemKind),
}

/// Something left the arena: an item picked up, a player gone.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 112)]
pub struct Despawned {
    /// Its id.
    pub id: u32,
}

/// A piece of the level, streamed to each player when it joins.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 113)]
pub struct MapChunk {
    /// Its index, from 0.
    pub index: u16,
    /// Its tiles.
    pub tiles: Vec<u8>,
}

/// A player's whole inventory. It travels on an unordered channel, so it is
/// the whole state with a version rather than a change: a late, older
/// update is recognised and ignored.
#[derive(Clone, Debug, Default, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 114)]
pub struct InventoryUpdate {
    /// Bumped on every change.
    pub version: u32,
    /// Coins held.
    pub coins: u16,
    /// Gems held.
    pub gems: u16,
}

/// A chat line, as the server relays it.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 115)]
pub struct ChatLine {
    /// The sender's name ("server" for the server).
    pub from: String,
    /// The sender's team (none for the server): a team line reaching a
    /// player of the other team would be a leak out of the room.
    pub team: Option<Team>,
    /// Whom it went to.
    pub scope: Scope,
    /// The line.
    pub text: String,
}

/// The round is over: stop playing, say gg, leave.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 116)]
pub struct RoundOver {
    /// The team with more points, if one has.
    pub winner: Option<Team>,
    /// Red's points, then blue's.
    pub points: (u32, u32),
}

/// One avatar in a snapshot. Blittable: 16 bytes, one copy each way.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Encode,
    Decode,
    SnapshotItem,
    FromBytes,
    IntoBytes,
    Immutable,
    KnownLayout,
)]
#[zerocopy(crate = "zao::zerocopy")]
#[zao(blittable)]
#[repr(C)]
pub struct Avatar {
    /// The avatar id: the key deltas are sent by.
    #[zao(key)]
    pub id: u32,
    /// Where it is.
    pub pos: Vec2,
    /// Its player's score.
    pub score: u32,
}

/// Every avatar at a server tick, to everyone, every tick. A snapshot
/// larger than a datagram is split into chunks that each decode on their
/// own as an `ArenaSnapshot`: the tick and a run of avatars (an arena of a
/// few players fits in one).
#[derive(Clone, Debug, Default, PartialEq, Encode, Decode, NetMessage, Snapshot)]
#[zao(id = 117)]
pub struct ArenaSnapshot {
    /// Server tick.
    #[zao(tick)]
    pub tick: u32,
    /// The avatars.
    #[zao(items)]
    pub avatars: Vec<Avatar>,
}

/// The channels and messages, the same on both sides.
///
/// Every reliable-ordered channel is a QUIC stream of its own: the map
/// download (hundreds of kilobytes) never holds chat or spawns behind it,
/// and when the link is congested, the higher priority sends first.
pub fn protocol(app: &mut App) {
    app.add_zao_channel_with_priority("chat", ChannelKind::ReliableOrdered, 10)
        .add_zao_channel_with_priority("world", ChannelKind::ReliableOrdered, 5)
        .add_zao_channel_with_priority("items", ChannelKind::ReliableUnordered, 5)
        .add_zao_channel("map", ChannelKind::ReliableOrdered)
        .add_zao_channel("input", ChannelKind::Sequenced)
        .add_zao_message::<Input>("input", Direction::ClientToServer)
        .add_zao_message::<Pickup>("items", Direction::ClientToServer)
        .add_zao_message::<InventoryUpdate>("items", Direction::ServerToClient)
        .add_zao_message::<Say>("chat", Direction::ClientToServer)
        .add_zao_message::<ChatLine>("chat", Direction::ServerToClient)
        .add_zao_message::<Welcome>("world", Direction::ServerToClient)
        .add_zao_message::<Spawned>("world", Direction::ServerToClient)
        .add_zao_message::<Despawned>("world", Direction::ServerToClient)
        .add_zao_message::<RoundOver>("world", Direction::ServerToClient)
        .add_zao_message::<MapChunk>("map", Direction::ServerToClient)
        .add_zao_snapshot::<ArenaSnapshot>();
}
