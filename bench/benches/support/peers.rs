//! The reference messages as one set of types every codec encodes: mirror
//! structs that derive Zao's traits and every peer's, with positions as
//! `[f32; N]` (the same data and the same bytes as glam's `Vec3`/`Quat`, which
//! the peers cannot derive over) and buttons as their raw bits, and protobuf
//! twins for prost, which cannot derive over arrays. Each converts from the
//! `zao_messages::samples` value, so every codec encodes the same value of the
//! same type; Zao's wire bytes for a mirror equal its bytes for the
//! `zao_messages` type (checked when the case is built). Zao's rows on its
//! own game types are reported beside, for information.

use std::collections::HashMap;

use zao::zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};
use zao::{Decode, Encode};
use zao_messages as zm;

use super::harness::aligned_vec;

/// The one fixed-seed hasher every library's map uses in the
/// `Inventory(128), fixed hasher` case: the same seed everywhere, so every
/// library iterates, and writes, the slots in the same order (std's
/// `RandomState` seeds each map differently).
pub(crate) type FixedState = foldhash::fast::FixedState;

peer_type! {
    /// `zao_messages::PlayerMoved`. `repr(C)` like Zao's, so codecs with a
    /// blittable path (wincode, Zao) can take it.
    #[derive(Copy, Encode, Decode, FromBytes, IntoBytes, Immutable, KnownLayout)]
    #[zerocopy(crate = "zao::zerocopy")]
    #[zao(blittable)]
    #[repr(C)]
    pub(crate) struct PlayerMoved {
        pub(crate) entity: u32,
        pub(crate) position: [f32; 3],
    }
}

peer_type! {
    /// `zao_messages::Stance`.
    #[derive(Copy, Encode, Decode)]
    pub(crate) enum Stance {
        Standing = 0,
        Crouching = 1,
        Prone = 2,
    }
}

peer_type! {
    /// `zao_messages::PlayerInput`; buttons as their raw bits.
    #[derive(Encode, Decode)]
    pub(crate) struct PlayerInput {
        pub(crate) tick: u32,
        pub(crate) buttons: u16,
        pub(crate) aim: [f32; 2],
        pub(crate) stance: Stance,
    }
}

peer_type! {
    /// `zao_messages::SpawnEntity`.
    #[derive(Encode, Decode)]
    pub(crate) struct SpawnEntity {
        pub(crate) entity: u32,
        pub(crate) prefab: u16,
        pub(crate) position: [f32; 3],
        pub(crate) rotation: [f32; 4],
        pub(crate) name: String,
    }
}

peer_type! {
    /// `zao_messages::PlayerState`, `repr(C)` and blittable like Zao's.
    #[derive(Copy, Encode, Decode, FromBytes, IntoBytes, Immutable, KnownLayout)]
    #[zerocopy(crate = "zao::zerocopy")]
    #[zao(blittable)]
    #[repr(C)]
    pub(crate) struct PlayerState {
        pub(crate) entity: u32,
        pub(crate) position: [f32; 3],
    }
}

peer_type! {
    /// `zao_messages::WorldSnapshot`.
    #[derive(Encode, Decode)]
    pub(crate) struct WorldSnapshot {
        pub(crate) tick: u32,
        pub(crate) players: Vec<PlayerState>,
    }
}

peer_type! {
    /// `zao_messages::ItemStack`.
    #[derive(Copy, Encode, Decode)]
    pub(crate) struct ItemStack {
        pub(crate) item: u32,
        pub(crate) count: u16,
        pub(crate) durability: u16,
        pub(crate) flags: u8,
    }
}

peer_type! {
    /// `zao_messages::Inventory`.
    #[derive(Encode, Decode)]
    pub(crate) struct Inventory {
        pub(crate) owner: u32,
        pub(crate) slots: HashMap<u32, ItemStack>,
    }
}

peer_type! {
    /// `zao_messages::Inventory` with the shared fixed-seed hasher.
    #[derive(Encode, Decode)]
    pub(crate) struct InventoryFixed {
        pub(crate) owner: u32,
        pub(crate) slots: HashMap<u32, ItemStack, FixedState>,
    }
}

impl From<&zm::PlayerMoved> for PlayerMoved {
    fn from(m: &zm::PlayerMoved) -> Self {
        Self {
            entity: m.entity,
            position: m.position.to_array(),
        }
    }
}

impl From<zm::Stance> for Stance {
    fn from(s: zm::Stance) -> Self {
        match s {
            zm::Stance::Standing => Self::Standing,
            zm::Stance::Crouching => Self::Crouching,
            zm::Stance::Prone => Self::Prone,
        }
    }
}

impl From<&zm::PlayerInput> for PlayerInput {
    fn from(m: &zm::PlayerInput) -> Self {
        Self {
            tick: m.tick,
            buttons: m.buttons.bits(),
            aim: m.aim.to_array(),
            stance: m.stance.into(),
        }
    }
}

impl From<&zm::SpawnEntity> for SpawnEntity {
    fn from(m: &zm::SpawnEntity) -> Self {
        Self {
            entity: m.entity,
            prefab: m.prefab,
            position: m.position.to_array(),
            rotation: m.rotation.to_array(),
            name: m.name.clone(),
        }
    }
}

impl From<&zm::PlayerState> for PlayerState {
    fn from(m: &zm::PlayerState) -> Self {
        Self {
            entity: m.entity,
            position: m.position.to_array(),
        }
    }
}

impl From<&zm::WorldSnapshot> for WorldSnapshot {
    fn from(m: &zm::WorldSnapshot) -> Self {
        Self {
            tick: m.tick,
            players: aligned_vec(&m.players.iter().map(PlayerState::from).collect::<Vec<_>>()),
        }
    }
}

impl From<&zm::ItemStack> for ItemStack {
    fn from(m: &zm::ItemStack) -> Self {
        Self {
            item: m.item,
            count: m.count,
            durability: m.durability,
            flags: m.flags,
        }
    }
}

impl From<&zm::Inventory> for Inventory {
    fn from(m: &zm::Inventory) -> Self {
        Self {
            owner: m.owner,
            slots: m.slots.iter().map(|(&k, v)| (k, v.into())).collect(),
        }
    }
}

impl From<&super::cases::ZaoInventoryFixed> for InventoryFixed {
    fn from(m: &super::cases::ZaoInventoryFixed) -> Self {
        Self {
            owner: m.owner,
            slots: m.slots.iter().map(|(&k, v)| (k, v.into())).collect(),
        }
    }
}

/// Protobuf twins for prost, as a game's `.proto` would write them: vectors
/// and quaternions as nested messages (decoded inline, no allocation), the
/// stance as an enum, the inventory as a `map<uint32, ItemStack>`.
pub(crate) mod pb {
    use std::collections::HashMap;

    use zao_messages as zm;

    /// `message Vec2 { float x = 1; float y = 2; }`
    #[derive(Clone, Copy, PartialEq, prost::Message)]
    pub(crate) struct Vec2 {
        #[prost(float, tag = "1")]
        pub(crate) x: f32,
        #[prost(float, tag = "2")]
        pub(crate) y: f32,
    }

    /// `message Vec3 { float x = 1; float y = 2; float z = 3; }`
    #[derive(Clone, Copy, PartialEq, prost::Message)]
    pub(crate) struct Vec3 {
        #[prost(float, tag = "1")]
        pub(crate) x: f32,
        #[prost(float, tag = "2")]
        pub(crate) y: f32,
        #[prost(float, tag = "3")]
        pub(crate) z: f32,
    }

    /// `message Quat { float x = 1; float y = 2; float z = 3; float w = 4; }`
    #[derive(Clone, Copy, PartialEq, prost::Message)]
    pub(crate) struct Quat {
        #[prost(float, tag = "1")]
        pub(crate) x: f32,
        #[prost(float, tag = "2")]
        pub(crate) y: f32,
        #[prost(float, tag = "3")]
        pub(crate) z: f32,
        #[prost(float, tag = "4")]
        pub(crate) w: f32,
    }

    /// `enum Stance { STANDING = 0; CROUCHING = 1; PRONE = 2; }`
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub(crate) enum Stance {
        Standing = 0,
        Crouching = 1,
        Prone = 2,
    }

    /// `message PlayerMoved { uint32 entity = 1; Vec3 position = 2; }`
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct PlayerMoved {
        #[prost(uint32, tag = "1")]
        pub(crate) entity: u32,
        #[prost(message, optional, tag = "2")]
        pub(crate) position: Option<Vec3>,
    }

    /// `message PlayerInput { uint32 tick = 1; uint32 buttons = 2; Vec2 aim = 3; Stance stance = 4; }`
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct PlayerInput {
        #[prost(uint32, tag = "1")]
        pub(crate) tick: u32,
        #[prost(uint32, tag = "2")]
        pub(crate) buttons: u32,
        #[prost(message, optional, tag = "3")]
        pub(crate) aim: Option<Vec2>,
        #[prost(enumeration = "Stance", tag = "4")]
        pub(crate) stance: i32,
    }

    /// `message SpawnEntity { uint32 entity = 1; uint32 prefab = 2; Vec3 position = 3; Quat rotation = 4; string name = 5; }`
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct SpawnEntity {
        #[prost(uint32, tag = "1")]
        pub(crate) entity: u32,
        #[prost(uint32, tag = "2")]
        pub(crate) prefab: u32,
        #[prost(message, optional, tag = "3")]
        pub(crate) position: Option<Vec3>,
        #[prost(message, optional, tag = "4")]
        pub(crate) rotation: Option<Quat>,
        #[prost(string, tag = "5")]
        pub(crate) name: String,
    }

    /// `message PlayerState { uint32 entity = 1; Vec3 position = 2; }`
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct PlayerState {
        #[prost(uint32, tag = "1")]
        pub(crate) entity: u32,
        #[prost(message, optional, tag = "2")]
        pub(crate) position: Option<Vec3>,
    }

    /// `message WorldSnapshot { uint32 tick = 1; repeated PlayerState players = 2; }`
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct WorldSnapshot {
        #[prost(uint32, tag = "1")]
        pub(crate) tick: u32,
        #[prost(message, repeated, tag = "2")]
        pub(crate) players: Vec<PlayerState>,
    }

    /// `message ItemStack { uint32 item = 1; uint32 count = 2; uint32 durability = 3; uint32 flags = 4; }`
    #[derive(Clone, Copy, PartialEq, prost::Message)]
    pub(crate) struct ItemStack {
        #[prost(uint32, tag = "1")]
        pub(crate) item: u32,
        #[prost(uint32, tag = "2")]
        pub(crate) count: u32,
        #[prost(uint32, tag = "3")]
        pub(crate) durability: u32,
        #[prost(uint32, tag = "4")]
        pub(crate) flags: u32,
    }

    /// `message Inventory { uint32 owner = 1; map<uint32, ItemStack> slots = 2; }`
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Inventory {
        #[prost(uint32, tag = "1")]
        pub(crate) owner: u32,
        #[prost(map = "uint32, message", tag = "2")]
        pub(crate) slots: HashMap<u32, ItemStack>,
    }

    fn vec3(v: glam::Vec3) -> Option<Vec3> {
        Some(Vec3 {
            x: v.x,
            y: v.y,
            z: v.z,
        })
    }

    impl From<&zm::PlayerMoved> for PlayerMoved {
        fn from(m: &zm::PlayerMoved) -> Self {
            Self {
                entity: m.entity,
                position: vec3(m.position),
            }
        }
    }

    impl From<&zm::PlayerInput> for PlayerInput {
        fn from(m: &zm::PlayerInput) -> Self {
            let stance = match m.stance {
                zm::Stance::Standing => Stance::Standing,
                zm::Stance::Crouching => Stance::Crouching,
                zm::Stance::Prone => Stance::Prone,
            };
            Self {
                tick: m.tick,
                buttons: u32::from(m.buttons.bits()),
                aim: Some(Vec2 {
                    x: m.aim.x,
                    y: m.aim.y,
                }),
                stance: stance as i32,
            }
        }
    }

    impl From<&zm::SpawnEntity> for SpawnEntity {
        fn from(m: &zm::SpawnEntity) -> Self {
            Self {
                entity: m.entity,
                prefab: u32::from(m.prefab),
                position: vec3(m.position),
                rotation: Some(Quat {
                    x: m.rotation.x,
                    y: m.rotation.y,
                    z: m.rotation.z,
                    w: m.rotation.w,
                }),
                name: m.name.clone(),
            }
        }
    }

    impl From<&zm::WorldSnapshot> for WorldSnapshot {
        fn from(m: &zm::WorldSnapshot) -> Self {
            Self {
                tick: m.tick,
                players: m
                    .players
                    .iter()
                    .map(|p| PlayerState {
                        entity: p.entity,
                        position: vec3(p.position),
                    })
                    .collect(),
            }
        }
    }

    impl From<&zm::Inventory> for Inventory {
        fn from(m: &zm::Inventory) -> Self {
            Self {
                owner: m.owner,
                slots: m
                    .slots
                    .iter()
                    .map(|(&k, v)| {
                        let stack = ItemStack {
                            item: v.item,
                            count: u32::from(v.count),
                            durability: u32::from(v.durability),
                            flags: u32::from(v.flags),
                        };
                        (k, stack)
                    })
                    .collect(),
            }
        }
    }
}
