//! Channels and directions.

use crate::{Decode, Encode};

/// How a message travels. Each has a guarantee the transport keeps under
/// loss, reordering and duplication.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Encode, Decode)]
#[repr(u8)]
pub enum Channel {
    /// Ordered, exactly once: one long-lived QUIC stream per direction,
    /// varint length-framed.
    Reliable = 0,
    /// At most once, any order: QUIC datagrams, small messages packed
    /// together.
    Unreliable = 1,
    /// Unreliable and sequenced: a newer snapshot always wins, an older one
    /// arriving late is dropped, a lost datagram never stalls later ones. A
    /// snapshot larger than a datagram travels as independently decodable
    /// chunks.
    Snapshot = 2,
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
