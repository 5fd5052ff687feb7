//! The Bevy messages the plugin reads and writes: zao messages wrapped with
//! who sent them or whom they go to, connection and lifecycle events, and
//! send failures.

use core::fmt;
use std::net::SocketAddr;

use bevy_ecs::entity::Entity;
use bevy_ecs::message::Message;

use crate::Decode;
use crate::proto::{CertHash, Identity, RefuseReason, SendError};
use crate::quic::{ClientId, DisconnectReason, StartError};

/// A zao message the plugin can carry: it decodes from any bytes into an
/// owned value (no borrowed `&str` fields) and can live in a Bevy `World`.
/// Implemented for every such type; derive zao's `Encode`, `Decode` and
/// `Message` and it applies.
pub trait NetworkMessage: crate::NetMessage + for<'de> Decode<'de> + Send + Sync + 'static {}

impl<T> NetworkMessage for T where
    T: crate::NetMessage + for<'de> Decode<'de> + Send + Sync + 'static
{
}

/// A message a client sent, as the server reads it:
/// `MessageReader<FromClient<T>>`.
#[derive(Message, Clone, Debug, PartialEq)]
pub struct FromClient<T> {
    /// Who sent it.
    pub client: ClientId,
    /// The client's entity (with its [`ConnectedClient`](super::ConnectedClient)).
    pub entity: Entity,
    /// The message.
    pub message: T,
}

/// Whom a server's message goes to. Whatever the target, the message is
/// encoded once and its bytes shared by every recipient.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SendTarget {
    /// Every connected client.
    All,
    /// One client.
    One(ClientId),
    /// Every client but one (the one whose action is being echoed).
    AllExcept(ClientId),
    /// These clients (ones not connected are skipped).
    List(Vec<ClientId>),
    /// The members of a room ([`ZaoServer::join`](super::ZaoServer::join)).
    Room(Room),
}

/// A room's name as a handle: cloning it (once per send) never allocates.
/// Make one from a constant with [`Room::named`] (no allocation at all) or
/// from a name built at run time with [`Room::new`] (one allocation, then
/// shared).
///
/// ```
/// use zao::bevy::Room;
///
/// const LOBBY: Room = Room::named("lobby");
/// let arena = Room::new(format!("arena-{}", 7));
/// assert_eq!(LOBBY.name(), "lobby");
/// assert_eq!(arena, Room::new("arena-7"));
/// ```
#[derive(Clone)]
pub struct Room(RoomName);

#[derive(Clone)]
enum RoomName {
    Static(&'static str),
    Shared(std::sync::Arc<str>),
}

impl Room {
    /// A room named by a constant string.
    #[must_use]
    pub const fn named(name: &'static str) -> Self {
        Self(RoomName::Static(name))
    }

    /// A room named at run time (the name is allocated once; clones share it).
    #[must_use]
    pub fn new(name: impl Into<std::sync::Arc<str>>) -> Self {
        Self(RoomName::Shared(name.into()))
    }

    /// The room's name.
    #[must_use]
    pub fn name(&self) -> &str {
        match &self.0 {
            RoomName::Static(name) => name,
            RoomName::Shared(name) => name,
        }
    }
}

impl PartialEq for Room {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Room {}

impl core::hash::Hash for Room {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        self.name().hash(state);
    }
}

impl PartialOrd for Room {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Room {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.name().cmp(other.name())
    }
}

impl fmt::Debug for Room {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Room({:?})", self.name())
    }
}

impl fmt::Display for Room {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<&'static str> for Room {
    fn from(name: &'static str) -> Self {
        Self::named(name)
    }
}

impl From<String> for Room {
    fn from(name: String) -> Self {
        Self::new(name)
    }
}

impl From<Room> for SendTarget {
    fn from(room: Room) -> Self {
        Self::Room(room)
    }
}

impl From<&Room> for SendTarget {
    fn from(room: &Room) -> Self {
        Self::Room(room.clone())
    }
}

impl From<ClientId> for SendTarget {
    fn from(client: ClientId) -> Self {
        Self::One(client)
    }
}

/// A message for the server to send, written with
/// `MessageWriter<ToClients<T>>`. Sent in [`ZaoSet::Send`](super::ZaoSet::Send)
/// of the same update; a failure is a [`SendFailed`] message. To send
/// without a copy and see the result at once, use
/// [`ZaoServerSender`](super::ZaoServerSender).
#[derive(Message, Clone, Debug, PartialEq)]
pub struct ToClients<T> {
    /// Whom it goes to.
    pub target: SendTarget,
    /// The message.
    pub message: T,
}

/// A message for a client to send to the server, written with
/// `MessageWriter<ToServer<T>>`. Written while not connected, it fails
/// with a [`SendFailed`] message.
#[derive(Message, Clone, Debug, PartialEq)]
pub struct ToServer<T>(pub T);

/// A message the server sent, as a client reads it:
/// `MessageReader<FromServer<T>>`. A snapshot larger than a datagram
/// arrives as several of these, each a whole `T` holding some of its items.
#[derive(Message, Clone, Debug, PartialEq)]
pub struct FromServer<T>(pub T);

/// Server: a client completed the handshake. Its entity exists from now
/// until the update after its [`ClientDisconnected`].
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub struct ClientConnected {
    /// Its id.
    pub client: ClientId,
    /// Its entity, with a [`ConnectedClient`](super::ConnectedClient).
    pub entity: Entity,
    /// Its address.
    pub addr: SocketAddr,
    /// What the auth callback returned for it, if anything.
    pub identity: Option<Identity>,
}

/// Server: a client left, timed out, was kicked or dropped. Its entity is
/// despawned at the end of this update (after `Update`), so systems can
/// still read its components now.
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub struct ClientDisconnected {
    /// Its id.
    pub client: ClientId,
    /// Its entity.
    pub entity: Entity,
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

/// Server: the server could not start (the address in use, a bad
/// certificate, invalid limits); the state goes back to
/// [`ZaoServerState::Stopped`](super::ZaoServerState::Stopped).
#[derive(Message, Debug)]
pub struct ServerStartFailed {
    /// Why.
    pub error: StartError,
}

/// Server: the server is serving, at this address, with this certificate.
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub struct ServerStarted {
    /// The address it listens on (the real port when bound to port 0);
    /// `None` on a backend without sockets (the simulated network, a
    /// local-only server).
    pub addr: Option<SocketAddr>,
    /// The SHA-256 of its certificate, which clients pin
    /// ([`ZaoClientSettings::pinned`](super::ZaoClientSettings::pinned));
    /// `None` on the simulated network.
    pub certificate_hash: Option<CertHash>,
}

/// Server: the server stopped ([`ZaoCommandsExt::stop_zao_server`](super::ZaoCommandsExt::stop_zao_server));
/// every client had its [`ClientDisconnected`] first.
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub struct ServerStopped;

/// Client: the server accepted us.
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub struct Connected {
    /// Our id on the server.
    pub client: ClientId,
}

/// Client: the connection ended or could not be made. A refusal is
/// `DisconnectReason::Refused`, naming the first difference when the
/// protocols differ; an unreachable server is `TimedOut` or
/// `HandshakeTimedOut`.
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub struct Disconnected {
    /// Why.
    pub reason: DisconnectReason,
}

/// Client: connecting could not even begin (no local socket, a TLS setup
/// rustls refuses, invalid limits).
#[derive(Message, Debug)]
pub struct ConnectFailed {
    /// Why.
    pub error: StartError,
}

/// Either side: a message written as `ToClients<T>` / `ToServer<T>` was not
/// sent.
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub struct SendFailed {
    /// The message type's name.
    pub message: &'static str,
    /// Why.
    pub error: ZaoSendError,
}

/// Why a message was not sent.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ZaoSendError {
    /// No server is running (server side) or no connection is open
    /// (client side).
    NotRunning,
    /// The transport refused it: not registered for this side (register
    /// it with `add_zao_message`), a full backlog, too large, a client not
    /// connected.
    Transport(SendError),
}

impl fmt::Display for ZaoSendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotRunning => f.write_str("not running or not connected"),
            Self::Transport(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ZaoSendError {}

impl From<SendError> for ZaoSendError {
    fn from(e: SendError) -> Self {
        Self::Transport(e)
    }
}
