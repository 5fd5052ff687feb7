//! The session protocol, sans I/O: a connection's whole state machine
//! ([`Session`]: handshake, admission, channels, framing, rate limits,
//! heartbeats, silence, backlog, close codes), a server's admission and
//! fan-out ([`ServerCore`]) and a client's ([`ClientCore`]), and the pieces
//! they are built from (the protocol registry and its hash, the handshake
//! messages, stream framing, datagram packing, snapshot chunking and
//! sequencing, receive-rate limits). Nothing here opens a socket or reads a
//! clock: bytes and `now` come in as arguments, as in quinn-proto.
//! `zao::quic` drives it over quinn, `zao::sim` over a simulated network.

// The backends' side of the sessions; without a backend (a codec-only
// build) only the application's side is used.
#[cfg_attr(not(feature = "quic"), allow(dead_code))]
mod admission;
mod auth;
#[cfg_attr(not(feature = "quic"), allow(dead_code))]
mod cell;
mod cert_hash;
mod channel;
#[cfg_attr(not(feature = "quic"), allow(dead_code))]
mod client;
mod close;
mod datagram;
mod delta;
mod framing;
mod handshake;
mod limits;
#[cfg_attr(not(feature = "quic"), allow(dead_code))]
mod local;
mod message;
mod protocol;
#[cfg_attr(not(feature = "quic"), allow(dead_code))]
pub(crate) mod pump;
mod rate;
mod rng;
pub(crate) use rng::SplitMix64;
#[cfg_attr(not(feature = "quic"), allow(dead_code))]
mod server;
mod session;
mod snapshot;
mod stats;

pub use admission::{HandshakeStats, IncomingVerdict};
pub use auth::{AuthCallback, AuthError, AuthFuture, AuthRequest, Identity};
pub use cert_hash::{CertHash, ParseCertHashError};
pub use channel::{Channel, ChannelDef, ChannelKind, Direction, Role};
pub use client::{ClientCore, ClientEvent};
pub use close::{
    ClientId, CloseCode, ClosedBy, DisconnectReason, SendError, TransportError, WaitError,
};
pub use datagram::{
    DELTA_HEADER_MAX, DatagramError, DatagramKind, DeltaHeader, MAX_ACKS, ParsedDatagram,
    SnapshotAck, SnapshotHeader, UnreliablePacker, ack_datagram, delta_datagram_len,
    parse_unreliable, put_delta_header, snapshot_datagram, snapshot_datagram_len, split_datagram,
    unreliable_datagram,
};
pub use delta::{
    Applied, ApplyError, Assembled, DEFAULT_HISTORY, DEFAULT_SNAPSHOT_MEMORY, DeltaReceiver,
    DeltaSnapshot, Interpolate, JitterBuffer, JitterConfig, JitterStats, MAX_CHUNK_ROWS, Pair,
    ReceiverStats, Sample, SnapshotChunk, SnapshotHistory, SnapshotItem, SnapshotKey,
};
pub use framing::{FrameDecoder, FrameError, frame_header, stream_header};
pub use handshake::{
    HEARTBEAT_FRAME, HEARTBEAT_ID, Hello, HelloReply, PROTOCOL_MAGIC, RefuseReason, VERSION,
    check_hello, versions_compatible,
};
pub use limits::{DATAGRAM_BUDGET, DuplicateIdentity, Limits, LimitsError};
pub use local::{LOCAL_ADDR, LocalLink};
pub use message::{Outgoing, Received};
pub use protocol::{Inadmissible, Protocol, ProtocolEntry};
pub use rate::{RateLimit, RateLimiter, RateVerdict};
pub use server::{DeltaSent, ServerCore, ServerEvent, Target};
pub use session::{
    OutStream, Session, SessionConfig, SessionEvent, StreamId, StreamWrite, Tap, Transmit,
    UnorderedWrite,
};
pub use snapshot::{
    ChunkPlan, MAX_CHUNKS, SNAPSHOT_HEADER_MAX, Snapshot, SnapshotReceiver, SnapshotVerdict,
    encode_chunks, plan_chunks,
};
pub use stats::{ConnectionStats, PathStats};

#[cfg(feature = "quic")]
pub(crate) use cell::SessionCell;
#[cfg(feature = "quic")]
pub(crate) use server::ServerShared;
