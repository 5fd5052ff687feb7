//! The session protocol, sans I/O: channels, the protocol registry and its
//! hash, the handshake messages, stream framing, datagram packing, snapshot
//! chunking and sequencing, and receive-rate limits. Nothing here opens a
//! socket or reads a clock: bytes and `now` come in as arguments, as in
//! quinn-proto. `zao::quic` drives it over quinn.

mod channel;
mod datagram;
mod framing;
mod handshake;
mod protocol;
mod rate;
mod snapshot;

pub use channel::{Channel, Direction};
pub use datagram::{
    DatagramError, DatagramKind, ParsedDatagram, SnapshotHeader, UnreliablePacker,
    parse_unreliable, snapshot_datagram, snapshot_datagram_len, split_datagram,
    unreliable_datagram,
};
pub use framing::{FrameDecoder, FrameError, frame_header};
pub use handshake::{
    Hello, HelloReply, PROTOCOL_MAGIC, RefuseReason, check_hello, versions_compatible,
};
pub use protocol::{Protocol, ProtocolEntry};
pub use rate::{RateLimit, RateLimiter, RateVerdict};
pub use snapshot::{
    ChunkPlan, MAX_CHUNKS, Snapshot, SnapshotReceiver, SnapshotVerdict, plan_chunks,
};
