//! A seeded world of moving players, the workload of the snapshot
//! bandwidth report (`bench/src/bin/snapshot_report.rs`) and of the delta
//! snapshot tests (`tests/snapshots_delta.rs`), which include this file
//! with `#[path]`.
//!
//! Players stand on rolling ground (heights within ±25 m) spread over
//! ±2 km. A third stand idle; most walk at 5 m/s, turning as they go; some
//! sprint at 10 m/s. Each changes gait now and then. A few leave and
//! others join every second (new players take fresh, higher ids).

use glam::Vec3;
use zao_messages::{EntitySnapshot, EntityState};

/// SplitMix64: small and seeded.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed ^ 0x5eed_5eed_5eed_5eed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub(crate) fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in `[lo, hi)`.
    pub(crate) fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.unit()
    }

    /// True with probability `p`.
    pub(crate) fn chance(&mut self, p: f32) -> bool {
        self.unit() < p
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Gait {
    Idle,
    Walk,
    Sprint,
}

impl Gait {
    fn speed(self) -> f32 {
        match self {
            Self::Idle => 0.0,
            Self::Walk => 5.0,
            Self::Sprint => 10.0,
        }
    }

    /// A third idle, 55 % walking, 12 % sprinting.
    fn draw(rng: &mut Rng) -> Self {
        let u = rng.unit();
        if u < 0.33 {
            Self::Idle
        } else if u < 0.88 {
            Self::Walk
        } else {
            Self::Sprint
        }
    }
}

#[derive(Clone, Debug)]
struct Player {
    id: u32,
    x: f32,
    z: f32,
    heading: f32,
    turn: f32,
    gait: Gait,
}

/// The ground's height at `(x, z)`: hills of a few hundred metres.
pub(crate) fn ground(x: f32, z: f32) -> f32 {
    18.0 * (x / 170.0).sin() * (z / 230.0).cos() + 7.0 * ((x + z) / 61.0).sin()
}

/// The players, moved one tick at a time.
pub(crate) struct World {
    rng: Rng,
    players: Vec<Player>,
    next_id: u32,
    /// Seconds a tick.
    dt: f32,
    /// Joins (and as many leaves) per second.
    churn: f32,
    pub(crate) tick: u32,
}

impl World {
    /// `players` players at `hz` ticks a second, seeded; three join and
    /// three leave a second.
    pub(crate) fn new(seed: u64, players: usize, hz: u32) -> Self {
        let mut rng = Rng::new(seed);
        let count = players as u32;
        let players = (1..=count).map(|id| Self::spawn(&mut rng, id)).collect();
        Self {
            rng,
            players,
            next_id: count + 1,
            dt: 1.0 / hz as f32,
            churn: 3.0,
            tick: 0,
        }
    }

    fn spawn(rng: &mut Rng, id: u32) -> Player {
        Player {
            id,
            x: rng.range(-2000.0, 2000.0),
            z: rng.range(-2000.0, 2000.0),
            heading: rng.range(-core::f32::consts::PI, core::f32::consts::PI),
            turn: rng.range(-0.8, 0.8),
            gait: Gait::draw(rng),
        }
    }

    /// Players now.
    pub(crate) fn len(&self) -> usize {
        self.players.len()
    }

    /// One tick: everyone moves, a few change gait or turn, a few leave and
    /// join.
    pub(crate) fn step(&mut self) {
        self.tick += 1;
        let dt = self.dt;
        for p in &mut self.players {
            // About once every 4 s a player changes how it turns, about
            // once every 10 s its gait.
            if self.rng.chance(dt / 4.0) {
                p.turn = self.rng.range(-0.8, 0.8);
            }
            if self.rng.chance(dt / 10.0) {
                p.gait = Gait::draw(&mut self.rng);
            }
            if p.gait == Gait::Idle {
                continue;
            }
            p.heading = (p.heading + p.turn * dt + core::f32::consts::PI)
                .rem_euclid(core::f32::consts::TAU)
                - core::f32::consts::PI;
            let step = p.gait.speed() * dt;
            p.x = (p.x + step * p.heading.cos()).clamp(-2000.0, 2000.0);
            p.z = (p.z + step * p.heading.sin()).clamp(-2000.0, 2000.0);
        }
        let mut leaves = self.churn * dt;
        while leaves > 0.0 {
            if self.rng.chance(leaves.min(1.0)) && !self.players.is_empty() {
                let at = (self.rng.next() % self.players.len() as u64) as usize;
                self.players.remove(at);
                let id = self.next_id;
                self.next_id += 1;
                let p = Self::spawn(&mut self.rng, id);
                self.players.push(p);
            }
            leaves -= 1.0;
        }
    }

    /// Every player as `(entity, position, heading)` in `f32`s: what a
    /// game holds.
    pub(crate) fn floats(&self) -> Vec<(u32, [f32; 3], f32)> {
        self.players
            .iter()
            .map(|p| (p.id, [p.x, ground(p.x, p.z), p.z], p.heading))
            .collect()
    }

    /// The world quantized, as the server sends it.
    pub(crate) fn snapshot(&self) -> EntitySnapshot {
        EntitySnapshot {
            tick: self.tick,
            entities: self
                .floats()
                .into_iter()
                .map(|(id, p, h)| EntityState::new(id, Vec3::from_array(p), h))
                .collect(),
        }
    }
}
