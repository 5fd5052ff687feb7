//! The Bevy 0.20 plugin: zao messages as Bevy messages over the QUIC
//! transport, headless (bevy_app, bevy_ecs, bevy_state and bevy_time only).
//!
//! - **Registration**: both sides declare the same channels and register
//!   the same types with [`AppZaoExt`].
//! - **Lifecycle**: [`ZaoServerPlugin`] and [`ZaoClientPlugin`] set things
//!   up; a server starts and stops, a client connects, leaves and
//!   reconnects from any system with [`ZaoCommandsExt`]; failures are
//!   messages ([`ServerStartFailed`], [`ConnectFailed`], [`Disconnected`]).
//! - **States**: [`ZaoServerState`], [`ZaoClientState`], and the run
//!   conditions [`server_running`], [`client_connected`],
//!   [`client_just_connected`], [`client_just_disconnected`].
//! - **Clients as entities**: each connected client is an entity with
//!   [`ConnectedClient`] and [`ClientStats`]; despawning it kicks the
//!   client; [`FromClient`] names it.
//! - **Sending**: `ToClients<T>` / `ToServer<T>` messages (failures come
//!   back as [`SendFailed`]), or [`ZaoServerSender`] / [`ZaoClientSender`] with a
//!   `Result` and no copy; targets include lists and rooms
//!   ([`ZaoServer::join`]).
//! - **Listen server**: [`ZaoCommandsExt::connect_zao_local`] gives the
//!   server App its own in-memory client.
//! - **Tests**: [`testing`] steps Apps over the simulated network.
//! - **One import**: [`prelude`] holds what a game uses every day, and
//!   sits beside Bevy's preludes without a clash.
//!
//! Received messages are written in `PreUpdate` ([`ZaoSet::Receive`]);
//! messages to send are read in `PostUpdate` ([`ZaoSet::Send`]), sent, and
//! flushed. With `RUST_LOG=zao::traffic=trace`, every message sent and
//! received is logged as readable text. The crate docs' "Bevy" section
//! shows a whole app.

// System parameters (`Res<T>`, `MessageReader<M>`) carry lifetimes that Bevy
// code elides by convention; spelling `'_, '_` in every system is noise.
#![allow(elided_lifetimes_in_paths)]

mod client;
#[cfg(feature = "fleet")]
mod fleet;
mod lifecycle;
mod messages;
mod plugin;
pub mod prelude;
mod protocol;
mod sender;
mod server;
mod set;
#[cfg(feature = "sim")]
mod sim_network;
mod snapshots;
mod state;
#[cfg(feature = "sim")]
pub mod testing;

pub use client::{ConnectionState, ZaoClient};
#[cfg(feature = "fleet")]
pub use fleet::{
    CERT_ANNOTATION, FleetAllocated, FleetDraining, FleetError, FleetReady, FleetShutDown,
    ZaoFleet, ZaoFleetCommandsExt, ZaoFleetPlugin, ZaoFleetState, fleet_allocated, fleet_draining,
    fleet_ready,
};
pub use lifecycle::{ZaoClientSettings, ZaoCommandsExt, ZaoServerSettings};
pub use messages::{
    ClientConnected, ClientDisconnected, ClientRefused, ConnectFailed, Connected, Disconnected,
    FromClient, FromServer, NetworkMessage, Room, SendFailed, SendTarget, ServerStartFailed,
    ServerStarted, ServerStopped, ToClients, ToServer, ZaoSendError,
};
pub use plugin::{ZaoClientPlugin, ZaoServerPlugin};
pub use protocol::{AppZaoExt, ChannelName, ZaoProtocol};
pub use sender::{ZaoClientSender, ZaoServerSender};
pub use server::{ClientStats, ConnectedClient, ZaoServer};
pub use set::ZaoSet;
pub use snapshots::{SnapshotApplied, ZaoSnapshots};
pub use state::{
    ClientEdges, ZaoClientState, ZaoServerState, client_connected, client_just_connected,
    client_just_disconnected, server_running,
};

/// What the messages and resources carry, re-exported for one `use`.
pub use crate::proto::{
    CertHash, Channel, ChannelKind, CloseCode, ClosedBy, DeltaSent, Direction, Identity,
    JitterConfig, RefuseReason, SendError,
};
pub use crate::quic::{ClientId, DisconnectReason, Limits, StartError};
