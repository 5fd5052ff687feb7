//! Delta snapshots (docs/WIRE.md §12.10): the server keeps a short history
//! of the snapshots it sent and encodes each tick against the newest one a
//! client acknowledged, once per distinct baseline; the client applies
//! chunks to the baselines it holds, acknowledges whole snapshots, and
//! renders through a jitter buffer.

mod codec;
mod history;
mod interp;
mod item;
mod jitter;
mod receiver;
mod table;

pub use codec::MAX_CHUNK_ROWS;
pub(crate) use history::Histories;
pub use history::{DEFAULT_HISTORY, SnapshotHistory};
pub use interp::Interpolate;
pub use item::{DeltaSnapshot, SnapshotItem, SnapshotKey};
pub use jitter::{JitterBuffer, JitterConfig, JitterStats, Pair, Sample};
pub use receiver::{
    Applied, ApplyError, Assembled, DEFAULT_SNAPSHOT_MEMORY, DeltaReceiver, ReceiverStats,
    SnapshotChunk,
};
