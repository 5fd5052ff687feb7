//! A nested general workload: about 1 MB of game state, a world of zones
//! holding entities, in the shapes real game messages have and the
//! reference messages lack: structs of structs, `Option`s, unit enums,
//! tuples, small `Vec`s of integers and bools, byte strings. One set of
//! types derives Zao's traits and every peer's, so every library encodes the
//! very same value. The value is drawn from a seeded generator with spread
//! sizes and `Some`/`None` mixes, not hand-picked numbers.
//!
//! prost has no row here: protobuf has no tuples or unit-enum fields without
//! a schema rewrite that would change the data.

use zao::{Decode, Encode};

use super::harness::aligned_vec;

peer_type! {
    /// What the whole workload is: one world state.
    #[derive(Encode, Decode)]
    pub(crate) struct World {
        pub(crate) tick: u64,
        pub(crate) zones: Vec<Zone>,
    }
}

peer_type! {
    /// A zone of the world and its entities.
    #[derive(Encode, Decode)]
    pub(crate) struct Zone {
        pub(crate) id: u16,
        /// A byte string (a name in some legacy encoding).
        pub(crate) name: Vec<u8>,
        pub(crate) weather: Weather,
        /// `((min_x, min_y), (max_x, max_y))`.
        pub(crate) bounds: ((i32, i32), (i32, i32)),
        pub(crate) spawn: Option<(f32, f32, f32)>,
        pub(crate) entities: Vec<Entity>,
    }
}

peer_type! {
    /// One entity: nested structs, options, enums and small collections.
    #[derive(Encode, Decode)]
    pub(crate) struct Entity {
        pub(crate) id: u32,
        pub(crate) kind: Kind,
        pub(crate) transform: Transform,
        pub(crate) health: Option<Health>,
        pub(crate) owner: Option<u32>,
        /// Who it is after, and how.
        pub(crate) target: Option<(u32, Mood)>,
        pub(crate) stats: Stats,
        pub(crate) items: Vec<u16>,
        pub(crate) cooldowns: Vec<u32>,
        pub(crate) flags: Vec<bool>,
        /// A short byte string.
        pub(crate) label: Vec<u8>,
    }
}

peer_type! {
    #[derive(Copy, Encode, Decode)]
    pub(crate) struct Transform {
        pub(crate) position: (f32, f32, f32),
        pub(crate) velocity: (f32, f32, f32),
        pub(crate) yaw: f32,
    }
}

peer_type! {
    #[derive(Copy, Encode, Decode)]
    pub(crate) struct Health {
        pub(crate) current: u16,
        pub(crate) max: u16,
        pub(crate) shield: Option<u16>,
    }
}

peer_type! {
    #[derive(Copy, Encode, Decode)]
    pub(crate) struct Stats {
        pub(crate) level: u8,
        pub(crate) xp: u32,
        pub(crate) alive: bool,
        pub(crate) team: Team,
    }
}

peer_type! {
    #[derive(Copy, Encode, Decode)]
    pub(crate) enum Kind {
        #[zao(tag = 0)]
        Player,
        #[zao(tag = 1)]
        Npc,
        #[zao(tag = 2)]
        Monster,
        #[zao(tag = 3)]
        Item,
        #[zao(tag = 4)]
        Projectile,
    }
}

peer_type! {
    #[derive(Copy, Encode, Decode)]
    pub(crate) enum Weather {
        #[zao(tag = 0)]
        Clear,
        #[zao(tag = 1)]
        Rain,
        #[zao(tag = 2)]
        Storm,
        #[zao(tag = 3)]
        Fog,
    }
}

peer_type! {
    #[derive(Copy, Encode, Decode)]
    pub(crate) enum Team {
        #[zao(tag = 0)]
        Red,
        #[zao(tag = 1)]
        Blue,
        #[zao(tag = 2)]
        Neutral,
    }
}

peer_type! {
    #[derive(Copy, Encode, Decode)]
    pub(crate) enum Mood {
        #[zao(tag = 0)]
        Calm,
        #[zao(tag = 1)]
        Alert,
        #[zao(tag = 2)]
        Hostile,
    }
}

/// SplitMix64: small, seeded, the same value on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    /// True with probability `percent` %.
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn f32(&mut self, scale: f32) -> f32 {
        // 24 random bits: every value is exact and round-trips.
        ((self.next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * scale
    }

    fn bytes(&mut self, lo: u64, hi: u64) -> Vec<u8> {
        let len = self.range(lo, hi);
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// The workload: `zones` zones of 40 to 160 entities each, from `seed`.
/// 128 zones give about 1 MB in Zao's encoding.
pub(crate) fn world(seed: u64, zones: usize) -> World {
    let mut rng = Rng(seed);
    let mut next_id = 1u32;
    let zones = (0..zones)
        .map(|z| {
            let count = rng.range(40, 160) as usize;
            let entities: Vec<Entity> = (0..count)
                .map(|_| {
                    next_id += 1 + rng.range(0, 3) as u32;
                    entity(&mut rng, next_id)
                })
                .collect();
            let x = rng.range(0, 1 << 16) as i32 - (1 << 15);
            let y = rng.range(0, 1 << 16) as i32 - (1 << 15);
            Zone {
                id: z as u16,
                name: rng.bytes(4, 24),
                weather: [Weather::Clear, Weather::Rain, Weather::Storm, Weather::Fog]
                    [rng.range(0, 3) as usize],
                bounds: (
                    (x, y),
                    (
                        x + rng.range(64, 4096) as i32,
                        y + rng.range(64, 4096) as i32,
                    ),
                ),
                spawn: rng
                    .chance(60)
                    .then(|| (rng.f32(4096.0), rng.f32(64.0), rng.f32(4096.0))),
                entities: aligned_vec(&entities),
            }
        })
        .collect();
    World {
        tick: 1_000_000 + rng.range(0, 1 << 20),
        zones,
    }
}

fn entity(rng: &mut Rng, id: u32) -> Entity {
    let kind = [
        Kind::Player,
        Kind::Npc,
        Kind::Monster,
        Kind::Item,
        Kind::Projectile,
    ][rng.range(0, 4) as usize];
    let max = rng.range(50, 1000) as u16;
    Entity {
        id,
        kind,
        transform: Transform {
            position: (rng.f32(4096.0), rng.f32(64.0), rng.f32(4096.0)),
            velocity: (rng.f32(20.0), rng.f32(5.0), rng.f32(20.0)),
            yaw: rng.f32(std::f32::consts::TAU),
        },
        health: rng.chance(70).then(|| Health {
            current: rng.range(0, u64::from(max)) as u16,
            max,
            shield: rng.chance(30).then(|| rng.range(0, 500) as u16),
        }),
        owner: rng.chance(40).then(|| rng.range(1, 1 << 20) as u32),
        target: rng.chance(35).then(|| {
            let mood = [Mood::Calm, Mood::Alert, Mood::Hostile][rng.range(0, 2) as usize];
            (rng.range(1, 1 << 20) as u32, mood)
        }),
        stats: Stats {
            level: rng.range(1, 99) as u8,
            xp: rng.range(0, 5_000_000) as u32,
            alive: rng.chance(90),
            team: [Team::Red, Team::Blue, Team::Neutral][rng.range(0, 2) as usize],
        },
        items: (0..rng.range(0, 8)).map(|_| rng.next() as u16).collect(),
        cooldowns: (0..rng.range(0, 4))
            .map(|_| rng.range(0, 10_000) as u32)
            .collect(),
        flags: (0..rng.range(0, 6)).map(|_| rng.chance(50)).collect(),
        label: rng.bytes(0, 16),
    }
}
