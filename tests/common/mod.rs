//! Seeded randomness and value generators shared by the test binaries.
//! Seeded only: a failure names its seed and reproduces.

#![allow(dead_code, unreachable_pub)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

#[cfg(feature = "sim")]
pub mod game;
#[cfg(feature = "quic")]
pub mod net;

use std::collections::HashMap;

use glam::{Quat, Vec2, Vec3};
use zao_messages::{
    Buttons, Inventory, ItemStack, PlayerInput, PlayerMoved, PlayerState, SpawnEntity, Stance,
    WorldSnapshot,
};

/// SplitMix64: small, fast, and good enough to drive tests.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    pub fn u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn u32(&mut self) -> u32 {
        self.u64() as u32
    }

    pub fn u16(&mut self) -> u16 {
        self.u64() as u16
    }

    pub fn u8(&mut self) -> u8 {
        self.u64() as u8
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.u64() % n as u64) as usize
    }

    pub fn bool(&mut self) -> bool {
        self.u64() & 1 == 1
    }

    /// Any bit pattern: NaNs with payloads, infinities, subnormals, -0.0.
    pub fn f32_bits(&mut self) -> f32 {
        match self.below(8) {
            0 => f32::from_bits(0x7fc0_0000 | (self.u32() & 0x003f_ffff)), // NaN + payload
            1 => [f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0][self.below(4)],
            2 => f32::from_bits(self.u32() & 0x007f_ffff), // subnormal
            _ => f32::from_bits(self.u32()),
        }
    }

    /// A finite float, so `PartialEq` is meaningful.
    pub fn f32_finite(&mut self) -> f32 {
        (self.u32() as i32 as f32) / 65_536.0
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.u8()).collect()
    }

    /// A string of `len` chars mixing ASCII and multi-byte UTF-8.
    pub fn string(&mut self, len: usize) -> String {
        (0..len)
            .map(|_| match self.below(4) {
                0 => char::from_u32(0x80 + self.u32() % 0x700).unwrap_or('?'),
                1 => char::from_u32(0x1_f300 + self.u32() % 0x200).unwrap_or('?'),
                _ => char::from(b'a' + self.u8() % 26),
            })
            .collect()
    }

    pub fn vec3(&mut self, finite: bool) -> Vec3 {
        if finite {
            Vec3::new(self.f32_finite(), self.f32_finite(), self.f32_finite())
        } else {
            Vec3::new(self.f32_bits(), self.f32_bits(), self.f32_bits())
        }
    }

    pub fn player_moved(&mut self, finite: bool) -> PlayerMoved {
        PlayerMoved {
            entity: self.u32(),
            position: self.vec3(finite),
        }
    }

    pub fn player_input(&mut self, finite: bool) -> PlayerInput {
        let aim = if finite {
            Vec2::new(self.f32_finite(), self.f32_finite())
        } else {
            Vec2::new(self.f32_bits(), self.f32_bits())
        };
        PlayerInput {
            tick: self.u32(),
            buttons: Buttons::from_bits(self.u16() & Buttons::ALL.bits()).unwrap(),
            aim,
            stance: [Stance::Standing, Stance::Crouching, Stance::Prone][self.below(3)],
        }
    }

    pub fn spawn_entity(&mut self, finite: bool) -> SpawnEntity {
        let len = [0, 1, 6, 40, 127, 128, 300][self.below(7)];
        SpawnEntity {
            entity: self.u32(),
            prefab: self.u16(),
            position: self.vec3(finite),
            rotation: if finite {
                Quat::from_xyzw(
                    self.f32_finite(),
                    self.f32_finite(),
                    self.f32_finite(),
                    self.f32_finite(),
                )
            } else {
                Quat::from_xyzw(
                    self.f32_bits(),
                    self.f32_bits(),
                    self.f32_bits(),
                    self.f32_bits(),
                )
            },
            name: self.string(len),
        }
    }

    pub fn world_snapshot(&mut self, finite: bool) -> WorldSnapshot {
        let players = [0, 1, 2, 32, 127, 128, 1024][self.below(7)];
        WorldSnapshot {
            tick: self.u32(),
            players: (0..players)
                .map(|_| PlayerState {
                    entity: self.u32(),
                    position: self.vec3(finite),
                })
                .collect(),
        }
    }

    pub fn inventory(&mut self) -> Inventory {
        let slots = [0, 1, 2, 16, 128, 200][self.below(6)];
        Inventory {
            owner: self.u32(),
            slots: (0..slots)
                .map(|_| {
                    (
                        self.u32(),
                        ItemStack {
                            item: self.u32(),
                            count: self.u16(),
                            durability: self.u16(),
                            flags: self.u8(),
                        },
                    )
                })
                .collect::<HashMap<_, _>>(),
        }
    }
}

/// The canonical varint encoding of `value`.
pub fn varint(value: u64) -> Vec<u8> {
    let mut buf = [0u8; 10];
    let mut w = zao::Writer::new(&mut buf);
    w.put_varint(value);
    let n = w.position();
    buf[..n].to_vec()
}

/// The golden files: (name, framed bytes).
pub fn golden_files() -> Vec<(&'static str, Vec<u8>)> {
    [
        "player_moved",
        "player_input",
        "spawn_entity",
        "world_snapshot",
        "inventory",
    ]
    .into_iter()
    .map(|name| {
        let path = format!("{}/assets/golden/{name}.bin", env!("CARGO_MANIFEST_DIR"));
        (name, std::fs::read(&path).unwrap())
    })
    .collect()
}
