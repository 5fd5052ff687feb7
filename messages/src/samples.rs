//! Fixed, documented sample values of every reference message: the values
//! behind the golden vectors in `assets/golden/`, the benchmarks and the
//! examples. Deterministic: the same call gives the same value everywhere.

use std::collections::HashMap;

use glam::{Quat, Vec2, Vec3};

use crate::{
    Buttons, Inventory, ItemStack, PlayerInput, PlayerMoved, PlayerState, SpawnEntity, Stance,
    WorldSnapshot,
};

/// Entity 7 moved to (1.5, -2.0, 3.25).
#[must_use]
pub fn player_moved() -> PlayerMoved {
    PlayerMoved {
        entity: 7,
        position: Vec3::new(1.5, -2.0, 3.25),
    }
}

/// Tick 1000, fire + jump, aim (0.5, -1.0), crouching.
#[must_use]
pub fn player_input() -> PlayerInput {
    PlayerInput {
        tick: 1000,
        buttons: Buttons::FIRE | Buttons::JUMP,
        aim: Vec2::new(0.5, -1.0),
        stance: Stance::Crouching,
    }
}

/// Entity 42, prefab 3, at (10, 0, -4), unrotated, named "Goblin".
#[must_use]
pub fn spawn_entity() -> SpawnEntity {
    SpawnEntity {
        entity: 42,
        prefab: 3,
        position: Vec3::new(10.0, 0.0, -4.0),
        rotation: Quat::IDENTITY,
        name: "Goblin".to_owned(),
    }
}

/// Tick 500 with `players` players: player `i` is entity `100 + i` at
/// `(i, 0.5, -i)`.
#[must_use]
pub fn world_snapshot(players: usize) -> WorldSnapshot {
    WorldSnapshot {
        tick: 500,
        players: (0..players)
            .map(|i| PlayerState {
                entity: 100 + i as u32,
                position: Vec3::new(i as f32, 0.5, -(i as f32)),
            })
            .collect(),
    }
}

/// Owner 9 with `slots` slots: slot `i` holds item `1000 + i`, count
/// `i + 1`, durability `100 - i % 100`, flags `i % 4`.
#[must_use]
pub fn inventory(slots: usize) -> Inventory {
    Inventory {
        owner: 9,
        slots: (0..slots as u32)
            .map(|i| {
                (
                    i,
                    ItemStack {
                        item: 1000 + i,
                        count: (i + 1) as u16,
                        durability: 100 - (i % 100) as u16,
                        flags: (i % 4) as u8,
                    },
                )
            })
            .collect::<HashMap<_, _>>(),
    }
}
