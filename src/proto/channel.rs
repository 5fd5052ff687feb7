//! Channels, directions and roles.
//!
//! A protocol declares its channels ([`Protocol::add_channel`](super::Protocol::add_channel)):
//! each has a name, a [`ChannelKind`] that says how it delivers, and a
//! priority. Every protocol starts with three: [`Channel::RELIABLE`],
//! [`Channel::UNRELIABLE`] and [`Channel::SNAPSHOT`]. A message type is
//! registered on one channel; the [`Channel`] it names is the channel's
//! index in the protocol.

use core::fmt;

use crate::{Decode, Encode};

/// A channel of a protocol: its index in the protocol's channel table
/// (docs/WIRE.md §12.3).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Encode, Decode)]
pub struct Channel(pub u8);

impl Channel {
    /// The default ordered reliable channel, "reliable" (index 0).
    pub const RELIABLE: Self = Self(0);
    /// The default unreliable channel, "unreliable" (index 1).
    pub const UNRELIABLE: Self = Self(1);
    /// The default snapshot channel, "snapshot" (index 2).
    pub const SNAPSHOT: Self = Self(2);
}

impl fmt::Debug for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::RELIABLE => f.write_str("Channel::RELIABLE"),
            Self::UNRELIABLE => f.write_str("Channel::UNRELIABLE"),
            Self::SNAPSHOT => f.write_str("Channel::SNAPSHOT"),
            Self(n) => write!(f, "Channel({n})"),
        }
    }
}

/// How a channel delivers. Each has a guarantee the transport keeps under
/// loss, reordering and duplication.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Encode, Decode)]
#[repr(u8)]
pub enum ChannelKind {
    /// Exactly once, in order: one long-lived QUIC stream per direction,
    /// so a lost packet on it delays only its own channel.
    ReliableOrdered = 0,
    /// Exactly once, in any order: every message on a QUIC stream of its
    /// own, so a lost packet delays only its own message.
    ReliableUnordered = 1,
    /// At most once, any order: QUIC datagrams, small messages packed
    /// together.
    Unreliable = 2,
    /// At most once, latest wins: a datagram per message with a sequence
    /// number per message type; one older than a message already delivered
    /// is dropped. Either direction.
    Sequenced = 3,
    /// Snapshots from the server: sequenced, and split into independently
    /// decodable chunks when larger than a datagram.
    Snapshot = 4,
}

impl ChannelKind {
    /// Whether the kind travels on QUIC streams (exactly once).
    #[must_use]
    pub fn is_reliable(self) -> bool {
        matches!(self, Self::ReliableOrdered | Self::ReliableUnordered)
    }

    /// Whether the kind carries sequence numbers (latest wins).
    #[must_use]
    pub fn is_sequenced(self) -> bool {
        matches!(self, Self::Sequenced | Self::Snapshot)
    }
}

/// A channel as its protocol declares it.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
pub struct ChannelDef {
    /// Its name, for messages and tools.
    pub name: String,
    /// How it delivers.
    pub kind: ChannelKind,
    /// Its priority when the link is congested: a reliable channel's
    /// stream with a higher priority sends first (QUIC stream priorities).
    /// Datagram channels (unreliable, sequenced, snapshot) go out ahead of
    /// every stream.
    pub priority: i32,
}

/// Who sends a message type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Encode, Decode)]
#[repr(u8)]
pub enum Direction {
    /// Clients send it, the server receives it.
    ClientToServer = 0,
    /// The server sends it, clients receive it.
    ServerToClient = 1,
    /// Both sides send it.
    Both = 2,
}

impl Direction {
    /// Whether `role` may send a message of this direction.
    #[must_use]
    pub fn sent_by(self, role: Role) -> bool {
        match role {
            Role::Client => self.client_sends(),
            Role::Server => self.server_sends(),
        }
    }

    /// Whether a client may send this.
    #[must_use]
    pub fn client_sends(self) -> bool {
        matches!(self, Self::ClientToServer | Self::Both)
    }

    /// Whether the server may send this.
    #[must_use]
    pub fn server_sends(self) -> bool {
        matches!(self, Self::ServerToClient | Self::Both)
    }
}

/// Which end of a connection a session is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// The end that accepted the connection.
    Server,
    /// The end that opened it.
    Client,
}

impl Role {
    /// The other end.
    #[must_use]
    pub fn peer(self) -> Self {
        match self {
            Self::Server => Self::Client,
            Self::Client => Self::Server,
        }
    }
}
