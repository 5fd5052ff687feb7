//! How connections end, and why sends fail: close codes, disconnect
//! reasons and send errors, all typed (docs/WIRE.md §12.7).

use core::fmt;

use super::{CertHash, RefuseReason};

/// A client's id on its server, assigned in the handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientId(pub u64);

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "client {}", self.0)
    }
}

/// Which side closed a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClosedBy {
    /// This side.
    Local,
    /// The other side.
    Peer,
}

/// zao's application close codes, carried in QUIC's CONNECTION_CLOSE
/// frame (docs/WIRE.md §12.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CloseCode {
    /// 0: a deliberate, ordinary close (leaving, shutting down).
    Normal,
    /// 1: the handshake was refused; the reason travelled on the control stream.
    Refused,
    /// 2: the peer broke the wire rules (a bad frame, an unknown or
    /// misdirected message id, a stream it may not open).
    ProtocolViolation,
    /// 3: the handshake did not finish within its deadline.
    HandshakeTimeout,
    /// 4: the server disconnected the client on purpose (a kick).
    Kicked,
    /// 5: the peer could not keep up with a reliable broadcast.
    TooSlow,
    /// 6: the peer sent over its receive rate: a reliable message over the
    /// rate, or unreliable ones over twice the rate for long.
    Flooding,
    /// 7: the peer sent nothing, not even a heartbeat, within the silence
    /// timeout.
    Silent,
    /// 8: the same identity connected again and replaced this connection.
    Replaced,
    /// A code this version does not know.
    Other(u64),
}

impl CloseCode {
    /// The code on the wire.
    #[must_use]
    pub fn to_wire(self) -> u64 {
        match self {
            Self::Normal => 0x0,
            Self::Refused => 0x1,
            Self::ProtocolViolation => 0x2,
            Self::HandshakeTimeout => 0x3,
            Self::Kicked => 0x4,
            Self::TooSlow => 0x5,
            Self::Flooding => 0x6,
            Self::Silent => 0x7,
            Self::Replaced => 0x8,
            Self::Other(code) => code,
        }
    }

    /// The code a wire value stands for.
    #[must_use]
    pub fn from_wire(code: u64) -> Self {
        match code {
            0x0 => Self::Normal,
            0x1 => Self::Refused,
            0x2 => Self::ProtocolViolation,
            0x3 => Self::HandshakeTimeout,
            0x4 => Self::Kicked,
            0x5 => Self::TooSlow,
            0x6 => Self::Flooding,
            0x7 => Self::Silent,
            0x8 => Self::Replaced,
            other => Self::Other(other),
        }
    }
}

impl fmt::Display for CloseCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Self::Normal => "normal",
            Self::Refused => "refused",
            Self::ProtocolViolation => "protocol violation",
            Self::HandshakeTimeout => "handshake timeout",
            Self::Kicked => "kicked",
            Self::TooSlow => "too slow",
            Self::Flooding => "flooding",
            Self::Silent => "silent",
            Self::Replaced => "replaced",
            Self::Other(code) => return write!(f, "code {code}"),
        };
        write!(f, "{name} ({})", self.to_wire())
    }
}

/// A failure below zao: in QUIC, TLS or the socket.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportError {
    /// The peer speaks no QUIC version we do.
    VersionMismatch,
    /// A QUIC or TLS error detected on either side, with QUIC's error code
    /// (RFC 9000 §20.1; TLS alerts are `0x100 + alert`) and its description.
    Quic {
        /// The QUIC transport error code.
        code: u64,
        /// Which side detected it.
        by: ClosedBy,
        /// QUIC's or the peer's description.
        reason: String,
    },
    /// The peer reset the connection (a stateless reset).
    Reset,
    /// No connection ids left to use.
    CidsExhausted,
    /// The server name is not one a certificate can be for.
    InvalidServerName(String),
    /// The server address cannot be connected to (port 0, unspecified).
    InvalidRemoteAddress(std::net::SocketAddr),
    /// The endpoint stopped (its socket or runtime is gone).
    EndpointClosed,
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::VersionMismatch => f.write_str("no common QUIC version"),
            Self::Quic { code, by, reason } => {
                let by = if *by == ClosedBy::Local {
                    "here"
                } else {
                    "by the peer"
                };
                write!(f, "QUIC error {code:#x} detected {by}: {reason}")
            }
            Self::Reset => f.write_str("reset by the peer"),
            Self::CidsExhausted => f.write_str("connection ids exhausted"),
            Self::InvalidServerName(name) => write!(f, "invalid server name {name:?}"),
            Self::InvalidRemoteAddress(addr) => write!(f, "cannot connect to {addr}"),
            Self::EndpointClosed => f.write_str("the endpoint stopped"),
        }
    }
}

/// Why a connection ended (or never started).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DisconnectReason {
    /// Closed deliberately, with the closer's code and reason.
    Closed {
        /// Who closed it.
        by: ClosedBy,
        /// zao's close code.
        code: CloseCode,
        /// The reason given.
        reason: String,
    },
    /// The server refused the handshake.
    Refused(RefuseReason),
    /// The server's certificate is not the pinned one.
    CertificateMismatch {
        /// The hashes the client pinned.
        expected: Vec<CertHash>,
        /// The hash the server presented.
        presented: Option<CertHash>,
    },
    /// The handshake did not finish within its deadline.
    HandshakeTimedOut,
    /// Nothing heard for the idle timeout.
    TimedOut,
    /// The peer cannot carry zao's datagrams: it disabled QUIC datagrams
    /// or allows fewer bytes than [`DATAGRAM_BUDGET`](super::DATAGRAM_BUDGET).
    DatagramsUnsupported {
        /// The largest datagram the peer takes, if any.
        max: Option<usize>,
    },
    /// A failure in QUIC, TLS or the socket.
    Transport(TransportError),
}

impl fmt::Display for DisconnectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Closed { by, code, reason } => {
                let by = if *by == ClosedBy::Local {
                    "locally"
                } else {
                    "by the peer"
                };
                write!(f, "closed {by} ({code}): {reason}")
            }
            Self::Refused(r) => write!(f, "refused: {r}"),
            Self::CertificateMismatch {
                expected,
                presented,
            } => {
                write!(f, "server certificate mismatch: pinned ")?;
                for (i, h) in expected.iter().enumerate() {
                    write!(f, "{}{h}", if i > 0 { ", " } else { "" })?;
                }
                match presented {
                    Some(p) => write!(f, ", presented {p}"),
                    None => write!(f, ", presented none"),
                }
            }
            Self::HandshakeTimedOut => f.write_str("the handshake timed out"),
            Self::TimedOut => f.write_str("timed out"),
            Self::DatagramsUnsupported { max } => match max {
                Some(max) => write!(
                    f,
                    "the peer takes datagrams of {max} bytes, zao needs {}",
                    super::DATAGRAM_BUDGET
                ),
                None => f.write_str("the peer does not take QUIC datagrams"),
            },
            Self::Transport(e) => write!(f, "transport: {e}"),
        }
    }
}

impl std::error::Error for DisconnectReason {}

/// Why [`Client::wait_connected`](crate::quic::Client::wait_connected)
/// returned without a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WaitError {
    /// The caller's timeout passed while the handshake was still under
    /// way (the connection goes on: wait again or drop the client).
    TimedOut(core::time::Duration),
    /// The connection ended (refused, the handshake deadline, a wrong
    /// certificate...).
    Closed(DisconnectReason),
}

impl fmt::Display for WaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TimedOut(after) => write!(f, "still connecting after {after:?}"),
            Self::Closed(reason) => reason.fmt(f),
        }
    }
}

impl std::error::Error for WaitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Closed(reason) => Some(reason),
            Self::TimedOut(_) => None,
        }
    }
}

/// Why a send failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendError {
    /// This side's connection is not open: its handshake is not done yet,
    /// or it has closed. Wait for the connection (or reconnect).
    NotConnected,
    /// A server's target client is not connected: no such client, or it
    /// has left.
    ClientNotConnected(ClientId),
    /// The connection's reliable backlog is full: back-pressure, try later.
    QueueFull,
    /// Larger than the channel allows (`max_message_size` for reliable, one
    /// datagram for unreliable, or too many chunks for a snapshot).
    TooLarge {
        /// The message's size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// The message type (this id) is not registered for this channel and
    /// side: register it with the same protocol on both sides.
    NotRegistered(u32),
    /// More snapshot acks in one call than one ack datagram carries.
    TooManyAcks {
        /// The acks given.
        count: usize,
        /// The most one datagram carries ([`MAX_ACKS`](super::MAX_ACKS)).
        max: usize,
    },
    /// Two items of a delta snapshot have this key.
    DuplicateKey(u64),
    /// A hand-written `Encode` of this message type wrote a different
    /// number of bytes than its `encoded_len` promised: a bug in that impl.
    BadEncodedLen {
        /// The message id.
        id: u32,
        /// What `encoded_len` said.
        promised: usize,
        /// What `encode` wrote (or needed).
        written: usize,
    },
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotConnected => f.write_str("not connected"),
            Self::ClientNotConnected(c) => write!(f, "{c} is not connected"),
            Self::QueueFull => f.write_str("reliable backlog full"),
            Self::TooLarge { size, max } => {
                write!(f, "message of {size} bytes over the {max}-byte limit")
            }
            Self::NotRegistered(id) => {
                write!(
                    f,
                    "message id {id} is not registered for this channel and side"
                )
            }
            Self::TooManyAcks { count, max } => {
                write!(f, "{count} snapshot acks, one datagram carries {max}")
            }
            Self::DuplicateKey(key) => write!(f, "two snapshot items have the key {key}"),
            Self::BadEncodedLen {
                id,
                promised,
                written,
            } => write!(
                f,
                "message id {id}: encode wrote {written} bytes, encoded_len promised {promised}"
            ),
        }
    }
}

impl std::error::Error for SendError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_codes_round_trip_their_wire_values() {
        for wire in 0..=20u64 {
            assert_eq!(CloseCode::from_wire(wire).to_wire(), wire);
        }
        assert_eq!(CloseCode::from_wire(4), CloseCode::Kicked);
        assert_eq!(CloseCode::from_wire(99), CloseCode::Other(99));
    }
}
