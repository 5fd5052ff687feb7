//! What a snapshot must be to travel as deltas: a header and a collection
//! of items, each with a key (its entity) and a fixed run of lanes.

use core::fmt::Debug;
use core::hash::Hash;

use crate::wire::Lane;
use crate::{Decode, DecodeError};

use super::super::Snapshot;

/// The key of a snapshot item: an unsigned integer naming its entity.
pub trait SnapshotKey: Copy + Ord + Hash + Debug + Send + Sync + 'static {
    /// Bits a key takes written in full.
    const BITS: u32;
    /// The key as a `u64`.
    fn to_u64(self) -> u64;
    /// The key of this `u64`, if it fits.
    fn from_u64(value: u64) -> Option<Self>;
}

macro_rules! keys {
    ($($ty:ty),*) => {$(
        impl SnapshotKey for $ty {
            const BITS: u32 = <$ty>::BITS;

            #[inline]
            fn to_u64(self) -> u64 {
                u64::from(self)
            }

            #[inline]
            fn from_u64(value: u64) -> Option<Self> {
                <$ty>::try_from(value).ok()
            }
        }
    )*};
}

keys!(u8, u16, u32, u64);

/// An item of a delta snapshot: a key and a fixed run of [`Lane`]s (its
/// other fields). Derive it with `#[derive(SnapshotItem)]` and `#[zao(key)]`
/// on the key field; every other field implements
/// [`Lanes`](crate::wire::Lanes) (integers, `bool`, floats, glam vectors,
/// the quantized types, arrays of them).
///
/// Two items of one snapshot never share a key.
pub trait SnapshotItem: Sized {
    /// The key's type.
    type Key: SnapshotKey;
    /// Lanes an item takes beside its key.
    const LANES: usize;

    /// The item's key.
    fn key(&self) -> Self::Key;

    /// The lane at `index` (below [`LANES`](Self::LANES)).
    fn lane(index: usize) -> Lane;

    /// Writes the item's lanes into `out` ([`LANES`](Self::LANES) of them).
    fn write_lanes(&self, out: &mut [u32]);

    /// The item of `key` and these lanes, each already checked against its
    /// [`Lane::max`].
    ///
    /// # Errors
    /// [`DecodeError::InvalidValue`] if a field refuses its lanes.
    fn from_lanes(key: Self::Key, lanes: &[u32]) -> Result<Self, DecodeError>;
}

/// A snapshot that travels as deltas against the snapshots a client
/// acknowledged ([`ServerCore::send_delta_snapshot`](crate::proto::ServerCore::send_delta_snapshot)):
/// a header (every field but the items) and a `Vec` of [`SnapshotItem`]s.
/// `#[derive(Snapshot)]` implements it beside [`Snapshot`].
///
/// The header travels as the message with no items
/// ([`Snapshot::encode_part`] of an empty range), in every chunk.
pub trait DeltaSnapshot: Snapshot + for<'de> Decode<'de> + 'static {
    /// The items' type.
    type Item: SnapshotItem;

    /// The items.
    fn snapshot_items(&self) -> &[Self::Item];

    /// The items, to fill in.
    fn snapshot_items_mut(&mut self) -> &mut Vec<Self::Item>;

    /// The server tick of the snapshot (a header field marked
    /// `#[zao(tick)]`), which orders snapshots in time on the client;
    /// `None`: the sequence number stands for it.
    fn tick(&self) -> Option<u64> {
        None
    }
}
