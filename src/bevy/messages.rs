//! The Bevy messages the plugin reads and writes: zao messages wrapped with
//! who sent them or whom they go to, and connection events.

use std::net::SocketAddr;

use bevy_ecs::message::Message;

use crate::Decode;
use crate::proto::RefuseReason;
use crate::quic::{ClientId, DisconnectReason, Target};

/// A zao message the plugin can carry: it decodes from any bytes into an
/// owned value (no borrowed `&str` fields) and can live in a Bevy `World`.
/// Implemented for every such type; derive zao's `Encode`, `Decode` and
/// `Message` and it applies.
pub trait NetworkMessage: crate::Message + for<'de> Decode<'de> + Send + Sync + 'static {}

impl<T> NetworkMessage for T where T: crate::Message + for<'de> Decode<'de> + Send + Sync + 'static {}

/// A message a client sent, as the server reads it:
/// `MessageReader<FromClient<T>>`.
#[derive(Message, Clone, Debug, PartialEq)]
pub struct FromClient<T> {
    /// Who sent it.
    pub client: ClientId,
    /// The message.
    pub message: T,
}

/// Whom a server's message goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SendTarget {
    /// Every connected client.
    All,
    /// One client.
    One(ClientId),
    /// Every client but one (the one whose action is being echoed).
    AllExcept(ClientId),
}

impl SendTarget {
    /// The transport's target.
    #[must_use]
    pub fn target(self) -> Target<'static> {
        match self {
            Self::All => Target::All,
            Self::One(client) => Target::One(client),
            Self::AllExcept(client) => Target::AllExcept(client),
        }
    }
}

/// A message for the server to send, written with
/// `MessageWriter<ToClients<T>>`. Sent in [`ZaoSet::Send`](super::ZaoSet::Send)
/// of the same update; a broadcast is encoded once and its bytes shared by
/// every client.
#[derive(Message, Clone, Debug, PartialEq)]
pub struct ToClients<T> {
    /// Whom it goes to.
    pub target: SendTarget,
    /// The message.
    pub message: T,
}

/// A message for a client to send to the server, written with
/// `MessageWriter<ToServer<T>>`. Written while not connected, it is dropped.
#[derive(Message, Clone, Debug, PartialEq)]
pub struct ToServer<T>(pub T);

/// A message the server sent, as a client reads it:
/// `MessageReader<FromServer<T>>`. A snapshot larger than a datagram
/// arrives as several of these, each a whole `T` holding some of its items.
#[derive(Message, Clone, Debug, PartialEq)]
pub struct FromServer<T>(pub T);

/// Server: a client completed the handshake.
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub struct ClientConnected {
    /// Its id.
    pub client: ClientId,
    /// Its address.
    pub addr: SocketAddr,
}

/// Server: a client left, timed out, was kicked or dropped.
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub struct ClientDisconnected {
    /// Its id.
    pub client: ClientId,
    /// Why; a client that left says so in `DisconnectReason::Closed`.
    pub reason: DisconnectReason,
}

/// Server: a client's handshake was refused (another protocol or version,
/// a failed auth check, a full server). The client reads the same reason.
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub struct ClientRefused {
    /// Its address.
    pub addr: SocketAddr,
    /// Why.
    pub reason: RefuseReason,
}

/// Client: the server accepted us.
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub struct Connected {
    /// Our id on the server.
    pub client: ClientId,
}

/// Client: the connection ended or could not start. A refusal is
/// `DisconnectReason::Refused`, naming the first differing message when the
/// protocols differ.
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub struct Disconnected {
    /// Why.
    pub reason: DisconnectReason,
}
