//! The Bevy 0.20 plugin: zao messages as Bevy messages over the QUIC
//! transport, headless (bevy_app, bevy_ecs and bevy_time only).
//!
//! Both sides register the same types with [`AppZaoExt`]; the server adds
//! [`ZaoServerPlugin`] and reads [`FromClient`] / writes [`ToClients`], a
//! client adds [`ZaoClientPlugin`] and writes [`ToServer`] / reads
//! [`FromServer`]. Received messages are written in `PreUpdate`
//! ([`ZaoSet::Receive`]); messages to send are read in `PostUpdate`
//! ([`ZaoSet::Send`]), sent, and flushed. The crate docs' "Bevy quick start"
//! shows a whole app.

// System parameters (`Res<T>`, `MessageReader<M>`) carry lifetimes that Bevy
// code elides by convention; spelling `'_, '_` in every system is noise.
#![allow(elided_lifetimes_in_paths)]

mod client;
mod messages;
mod protocol;
mod server;
mod set;
pub mod testing;

pub use client::{ConnectionState, ZaoClient, ZaoClientPlugin};
pub use messages::{
    ClientConnected, ClientDisconnected, ClientRefused, Connected, Disconnected, FromClient,
    FromServer, NetworkMessage, SendTarget, ToClients, ToServer,
};
pub use protocol::{AppZaoExt, ZaoProtocol};
pub use server::{ZaoServer, ZaoServerPlugin};
pub use set::ZaoSet;

/// What the messages and resources carry, re-exported for one `use`.
pub use crate::proto::{Channel, Direction, RefuseReason};
pub use crate::quic::{ClientId, DisconnectReason};
