//! A quantized world snapshot for delta broadcasting: every entity's
//! position at 1 mm within ±4 km and its heading in 12 bits, keyed by
//! entity.

use glam::Vec3;
use zao::proto::Interpolate;
use zao::wire::{QAngle, QVec3};
use zao::{Decode, Encode, NetMessage, Snapshot, SnapshotItem};

/// A position within ±4096 m of the origin at 1 mm: 23 bits a component.
pub type Position = QVec3<-4096, 4096, 1000>;

/// A heading in 12 bits: 4096 steps a turn, 0.088°.
pub type Heading = QAngle<12>;

/// One entity's state: 15 bytes as a field (4 of entity, 9 of position, 2
/// of heading, each padded to whole bytes), and in a delta snapshot its
/// changes only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Encode, Decode, SnapshotItem)]
pub struct EntityState {
    /// The entity.
    #[zao(key)]
    pub entity: u32,
    /// Where it is.
    pub position: Position,
    /// Where it faces.
    pub heading: Heading,
}

impl EntityState {
    /// The state of `entity` at `position` (metres) facing `heading`
    /// (radians), quantized.
    #[must_use]
    pub fn new(entity: u32, position: Vec3, heading: f32) -> Self {
        Self {
            entity,
            position: Position::new(position),
            heading: Heading::from_radians(heading),
        }
    }
}

/// Drawn part of the way between two states: position and heading
/// interpolated, the entity kept.
impl Interpolate for EntityState {
    fn interpolate(&self, to: &Self, t: f32) -> Self {
        Self {
            entity: to.entity,
            position: self.position.interpolate(&to.position, t),
            heading: self.heading.interpolate(&to.heading, t),
        }
    }
}

/// Every entity at a tick, quantized: the message
/// `ServerCore::send_delta_snapshot` sends as deltas against what each
/// client acknowledged. Not in [`protocol`](crate::protocol) (whose hash
/// the conformance vectors fix): register it with
/// `protocol.add::<EntitySnapshot>(Channel::SNAPSHOT, Direction::ServerToClient)`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Encode, Decode, NetMessage, Snapshot)]
#[zao(id = 6)]
pub struct EntitySnapshot {
    /// Server tick.
    #[zao(tick)]
    pub tick: u32,
    /// The entities.
    #[zao(items)]
    pub entities: Vec<EntityState>,
}

/// The demos' world at `tick`: `count` entities, each a pure function of
/// its index and the tick in whole quarter metres and 64ths of a turn, so
/// that a client in any language can compute what it should have received
/// and compare exactly (the browser test does, in TypeScript).
///
/// Entity `i` (key `i + 1`) sits at x = ((37 i + t) mod 400) / 4 − 50,
/// y = i mod 16, z = ((11 i + 2 t) mod 400) / 4 − 50, facing
/// ((i + t) mod 64) / 64 of a turn.
#[must_use]
pub fn demo_world(tick: u32, count: usize) -> EntitySnapshot {
    let t = u64::from(tick);
    EntitySnapshot {
        tick,
        entities: (0..count as u64)
            .map(|i| {
                let x = ((37 * i + t) % 400) as f32 / 4.0 - 50.0;
                let y = (i % 16) as f32;
                let z = ((11 * i + 2 * t) % 400) as f32 / 4.0 - 50.0;
                let turn = ((i + t) % 64) as f32 / 64.0;
                EntityState::new(
                    u32::try_from(i + 1).unwrap_or(u32::MAX),
                    Vec3::new(x, y, z),
                    turn * core::f32::consts::TAU,
                )
            })
            .collect(),
    }
}
