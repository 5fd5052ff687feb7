//! Zao's reference game protocol: one message type per tier.
//!
//! These types use only zao's public API; they are the dog-food test of that
//! API, the subjects of the golden wire vectors in `assets/golden/`, of the
//! benchmarks and of the examples.
//!
//! | message | id | tier | wire size (body) |
//! |---|---|---|---|
//! | [`PlayerMoved`] | 1 | 0 blittable | 16 bytes |
//! | [`PlayerInput`] | 2 | 1 fixed | 15 bytes |
//! | [`SpawnEntity`] / [`SpawnEntityRef`] | 3 | 2 bounded | 34 + varint(len) + name bytes: 41 for "Goblin" |
//! | [`WorldSnapshot`] | 4 | 3 collection | 4 + 4 + 16·n: 520 for 32 players, 16 392 for 1024 |
//! | [`Inventory`] | 5 | 3 map | 4 + varint(n) + 13·n: 1 670 for 128 slots |
//! | [`EntitySnapshot`] | 6 | 3 quantized, delta | 4 + varint(n) + 15·n; as deltas, the changes only |
//!
//! A message on the wire is its id as a varint, then the body
//! ([`zao::encode_message`]); [`GameMessage`] decodes any of them by id.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod buttons;
mod entities;
pub mod samples;

use std::collections::HashMap;

use glam::{Quat, Vec2, Vec3};
use zao::proto::{Channel, Direction, Protocol};
use zao::zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};
use zao::{Decode, DecodeError, Encode, EncodeError, NetMessage, Snapshot, SnapshotItem};

pub use buttons::Buttons;
pub use entities::{EntitySnapshot, EntityState, Heading, Position, demo_world};
/// glam, whose `Vec2`, `Vec3` and `Quat` these messages carry (the glam
/// Bevy 0.20 uses), so a user of these types needs no glam of their own.
pub use glam;

/// A player's entity moved. Tier 0: its wire form is its memory image,
/// exactly 16 bytes, one copy each way.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Encode,
    Decode,
    NetMessage,
    FromBytes,
    IntoBytes,
    Immutable,
    KnownLayout,
)]
#[zerocopy(crate = "zao::zerocopy")]
#[zao(blittable, id = 1)]
#[repr(C)]
pub struct PlayerMoved {
    /// The entity that moved.
    pub entity: u32,
    /// Its new position.
    pub position: Vec3,
}

/// How a player stands. Tier 1: one tag byte, checked on decode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Encode, Decode)]
#[repr(u8)]
pub enum Stance {
    /// Upright.
    #[default]
    Standing = 0,
    /// Crouched.
    Crouching = 1,
    /// Lying down.
    Prone = 2,
}

/// One tick of a player's input. Tier 1: fixed size (15 bytes), but not
/// every bit pattern is valid (unknown button bits, stance tags), so decode
/// checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 2)]
pub struct PlayerInput {
    /// The client tick this input belongs to.
    pub tick: u32,
    /// Buttons held.
    pub buttons: Buttons,
    /// Aim direction.
    pub aim: Vec2,
    /// Stance.
    pub stance: Stance,
}

/// The server spawned an entity. Tier 2: fixed fields, then a string.
/// Wire size 34 bytes plus the name and its varint length.
#[derive(Clone, Debug, Default, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 3)]
pub struct SpawnEntity {
    /// The new entity.
    pub entity: u32,
    /// Which prefab to instantiate.
    pub prefab: u16,
    /// Where.
    pub position: Vec3,
    /// Facing.
    pub rotation: Quat,
    /// Display name.
    pub name: String,
}

/// [`SpawnEntity`] decoded without copying: `name` borrows from the input.
/// Same id, same wire form, same fingerprint.
#[derive(Clone, Copy, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 3)]
pub struct SpawnEntityRef<'a> {
    /// The new entity.
    pub entity: u32,
    /// Which prefab to instantiate.
    pub prefab: u16,
    /// Where.
    pub position: Vec3,
    /// Facing.
    pub rotation: Quat,
    /// Display name, borrowed from the input.
    pub name: &'a str,
}

impl SpawnEntityRef<'_> {
    /// An owned copy.
    #[must_use]
    pub fn to_owned(&self) -> SpawnEntity {
        SpawnEntity {
            entity: self.entity,
            prefab: self.prefab,
            position: self.position,
            rotation: self.rotation,
            name: self.name.to_owned(),
        }
    }
}

/// One player's state in a snapshot. Blittable: 16 bytes. As a delta
/// snapshot item its key is the entity and its lanes the position's bits.
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
pub struct PlayerState {
    /// The player's entity.
    #[zao(key)]
    pub entity: u32,
    /// Its position.
    pub position: Vec3,
}

/// Every player's state at a tick. Tier 3: the player run is one copy each
/// way, behind a 4-byte count. 4 + 4 + 16·n bytes: 520 for 32 players, 16 392 for 1024.
///
/// A snapshot: `send_snapshot` splits it into parts of the tick and a run
/// of the players, each decoding on its own as a `WorldSnapshot`, so losing
/// one datagram loses only its players; `send_delta_snapshot` sends it as
/// deltas keyed by entity.
#[derive(Clone, Debug, Default, PartialEq, Encode, Decode, NetMessage, Snapshot)]
#[zao(id = 4)]
pub struct WorldSnapshot {
    /// Server tick.
    #[zao(tick)]
    pub tick: u32,
    /// The players.
    #[zao(items)]
    pub players: Vec<PlayerState>,
}

/// A stack of items in one inventory slot. Tier 1: 9 bytes (not blittable:
/// `repr(C)` would pad it to 12).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Encode, Decode)]
pub struct ItemStack {
    /// Item type.
    pub item: u32,
    /// How many.
    pub count: u16,
    /// Wear left.
    pub durability: u16,
    /// Game-defined flags.
    pub flags: u8,
}

/// A player's inventory. Tier 3 map: 4 + varint(n) + 13·n bytes.
///
/// Slots go out in the map's iteration order; a decoder takes any order and
/// refuses a repeated slot.
#[derive(Clone, Debug, Default, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 5)]
pub struct Inventory {
    /// Owning entity.
    pub owner: u32,
    /// Slot index to stack.
    pub slots: HashMap<u32, ItemStack>,
}

/// The reference protocol: every message with its channel and direction, the
/// same on server and client.
///
/// | message | channel | sent by |
/// |---|---|---|
/// | `PlayerMoved` | unreliable | both |
/// | `PlayerInput` | unreliable | clients |
/// | `SpawnEntity` | reliable | both |
/// | `WorldSnapshot` | snapshot | the server |
/// | `Inventory` | reliable | both |
#[must_use]
pub fn protocol() -> Protocol {
    let mut p = Protocol::new();
    p.add::<PlayerMoved>(Channel::UNRELIABLE, Direction::Both)
        .add::<PlayerInput>(Channel::UNRELIABLE, Direction::ClientToServer)
        .add::<SpawnEntity>(Channel::RELIABLE, Direction::Both)
        .add::<WorldSnapshot>(Channel::SNAPSHOT, Direction::ServerToClient)
        .add::<Inventory>(Channel::RELIABLE, Direction::Both);
    p
}

/// The reference protocol plus [`EntitySnapshot`] on the snapshot channel,
/// sent as delta snapshots by the server: the demos' world (`web_demo`,
/// its page, and the browser tests). `clients/ts/web/protocol.json` is its
/// JSON (tests/web.rs checks they agree).
#[must_use]
pub fn web_protocol() -> Protocol {
    let mut p = protocol();
    p.add::<EntitySnapshot>(Channel::SNAPSHOT, Direction::ServerToClient);
    p
}

/// Any reference message, decoded by its id.
#[derive(Clone, Debug, PartialEq)]
pub enum GameMessage {
    /// [`PlayerMoved`].
    PlayerMoved(PlayerMoved),
    /// [`PlayerInput`].
    PlayerInput(PlayerInput),
    /// [`SpawnEntity`].
    SpawnEntity(SpawnEntity),
    /// [`WorldSnapshot`].
    WorldSnapshot(WorldSnapshot),
    /// [`Inventory`].
    Inventory(Inventory),
}

impl GameMessage {
    /// Decodes one framed message (`id + body`).
    ///
    /// # Errors
    /// [`DecodeError::UnknownMessage`] for an id not in this protocol, or any
    /// error of the body.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let (id, body) = zao::split_message(bytes)?;
        Ok(match id {
            PlayerMoved::ID => Self::PlayerMoved(PlayerMoved::decode(body)?),
            PlayerInput::ID => Self::PlayerInput(PlayerInput::decode(body)?),
            SpawnEntity::ID => Self::SpawnEntity(SpawnEntity::decode(body)?),
            WorldSnapshot::ID => Self::WorldSnapshot(WorldSnapshot::decode(body)?),
            Inventory::ID => Self::Inventory(Inventory::decode(body)?),
            unknown => return Err(DecodeError::UnknownMessage(unknown)),
        })
    }

    /// Writes the message framed (`id + body`) into `buf`.
    ///
    /// # Errors
    /// [`EncodeError`] if `buf` is too small.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, EncodeError> {
        match self {
            Self::PlayerMoved(m) => zao::encode_message(m, buf),
            Self::PlayerInput(m) => zao::encode_message(m, buf),
            Self::SpawnEntity(m) => zao::encode_message(m, buf),
            Self::WorldSnapshot(m) => zao::encode_message(m, buf),
            Self::Inventory(m) => zao::encode_message(m, buf),
        }
    }

    /// Bytes [`encode`](Self::encode) writes.
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        match self {
            Self::PlayerMoved(m) => zao::message_len(m),
            Self::PlayerInput(m) => zao::message_len(m),
            Self::SpawnEntity(m) => zao::message_len(m),
            Self::WorldSnapshot(m) => zao::message_len(m),
            Self::Inventory(m) => zao::message_len(m),
        }
    }
}
