//! A deterministic simulated network for tests, yours as much as zao's:
//! the server and clients run the real QUIC state machine (quinn-proto, the
//! QUIC that quinn runs: congestion control, loss detection and
//! retransmission are the real ones) and zao's real sessions, exchanging
//! datagrams through seeded links (latency, jitter, loss, duplication,
//! reordering, blackholes, an MTU clamp) on a virtual clock. Nothing waits
//! on real time: minutes of play run in well under a second, and a seed
//! gives the same run every time.
//!
//! [`Sim::start_server`] and [`Sim::connect`] give the same
//! [`ServerCore`](crate::proto::ServerCore) and
//! [`ClientCore`](crate::proto::ClientCore) as `zao::quic`; advance time
//! with [`Sim::run_for`]. [`RawPeer`] is a QUIC peer without zao, for
//! writing attacks.

mod conn;
mod link;
mod network;
mod raw;

pub use link::{LinkSpec, LinkStats};
pub use network::{
    NodeId, RawPeerConfig, SERVER_ADDR, Sim, SimClient, SimClientConfig, SimServer, SimServerConfig,
};
pub use raw::RawPeer;

/// quinn-proto, re-exported for raw peers' transport settings.
pub use quinn_proto;
