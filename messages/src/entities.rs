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
