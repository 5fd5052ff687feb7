//! A second general workload: an event log of about 1 MB, in the shapes the
//! nested world lacks: enums whose variants carry data, `String`s (UTF-8
//! checked on decode), `Vec<String>`, `Option<String>`, `u64`s and small
//! `Vec`s of tuples. Drawn from a seeded generator, as the world is.

use zao::{Decode, Encode};

peer_type! {
    /// An event log: what a server records or replays.
    #[derive(Encode, Decode)]
    pub(crate) struct Log {
        pub(crate) start: u64,
        pub(crate) events: Vec<Event>,
    }
}

/// One event: a tagged union of payloads. Its derives are spelled out, not
/// through `peer_type!`: bincode's derive loses the bindings of a tuple
/// variant that passes through a macro.
#[derive(
    Clone,
    Debug,
    PartialEq,
    serde::Serialize,
    serde::Deserialize,
    bitcode::Encode,
    bitcode::Decode,
    bincode::Encode,
    bincode::Decode,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
    speedy::Readable,
    speedy::Writable,
    wincode::SchemaWrite,
    wincode::SchemaRead,
    Encode,
    Decode,
)]
pub(crate) enum Event {
    #[zao(tag = 0)]
    Chat(Chat),
    #[zao(tag = 1)]
    Damage(Damage),
    #[zao(tag = 2)]
    Spawn(Spawn),
    #[zao(tag = 3)]
    Despawn(u32),
    #[zao(tag = 4)]
    Trade(Trade),
    #[zao(tag = 5)]
    Tick(u64),
}

peer_type! {
    #[derive(Encode, Decode)]
    pub(crate) struct Chat {
        pub(crate) from: u32,
        pub(crate) channel: u8,
        pub(crate) text: String,
    }
}

peer_type! {
    #[derive(Encode, Decode)]
    pub(crate) struct Damage {
        pub(crate) source: u32,
        pub(crate) target: u32,
        pub(crate) amount: f32,
        pub(crate) crit: bool,
    }
}

peer_type! {
    #[derive(Encode, Decode)]
    pub(crate) struct Spawn {
        pub(crate) id: u32,
        pub(crate) prefab: String,
        pub(crate) position: (f32, f32, f32),
        pub(crate) tags: Vec<String>,
    }
}

peer_type! {
    #[derive(Encode, Decode)]
    pub(crate) struct Trade {
        pub(crate) from: u32,
        pub(crate) to: u32,
        pub(crate) items: Vec<(u16, u32)>,
        pub(crate) note: Option<String>,
    }
}

/// SplitMix64, as the nested world's.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    fn f32(&mut self, scale: f32) -> f32 {
        ((self.next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * scale
    }

    /// Text of `lo..=hi` characters, mostly ASCII with some two- and
    /// three-byte characters.
    fn text(&mut self, lo: u64, hi: u64) -> String {
        const WIDE: [char; 6] = ['é', 'ß', 'ж', 'λ', '中', '→'];
        let len = self.range(lo, hi);
        (0..len)
            .map(|_| match self.next() % 20 {
                0 => WIDE[self.range(0, 5) as usize],
                1..=3 => ' ',
                n => char::from(b'a' + (n as u8 * 7).wrapping_add(self.next() as u8) % 26),
            })
            .collect()
    }
}

/// `count` events from `seed`; 16 000 give about 1 MB in Zao's encoding.
pub(crate) fn log(seed: u64, count: usize) -> Log {
    let mut rng = Rng(seed);
    let events = (0..count)
        .map(|_| match rng.range(0, 9) {
            0..=2 => Event::Chat(Chat {
                from: rng.range(1, 1 << 20) as u32,
                channel: rng.range(0, 7) as u8,
                text: rng.text(4, 120),
            }),
            3..=5 => Event::Damage(Damage {
                source: rng.range(1, 1 << 20) as u32,
                target: rng.range(1, 1 << 20) as u32,
                amount: rng.f32(500.0),
                crit: rng.range(0, 9) == 0,
            }),
            6 => Event::Spawn(Spawn {
                id: rng.range(1, 1 << 20) as u32,
                prefab: rng.text(4, 24),
                position: (rng.f32(4096.0), rng.f32(64.0), rng.f32(4096.0)),
                tags: (0..rng.range(0, 4)).map(|_| rng.text(3, 12)).collect(),
            }),
            7 => Event::Despawn(rng.range(1, 1 << 20) as u32),
            8 => Event::Trade(Trade {
                from: rng.range(1, 1 << 20) as u32,
                to: rng.range(1, 1 << 20) as u32,
                items: (0..rng.range(1, 6))
                    .map(|_| (rng.next() as u16, rng.range(1, 99) as u32))
                    .collect(),
                note: (rng.range(0, 2) == 0).then(|| rng.text(8, 40)),
            }),
            _ => Event::Tick(rng.next() >> 20),
        })
        .collect();
    Log {
        start: 1_700_000_000_000 + rng.range(0, 1 << 30),
        events,
    }
}
