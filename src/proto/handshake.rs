//! The handshake on the control stream (docs/WIRE.md §12): the client says
//! [`Hello`], the server answers [`HelloReply`]. Both are zao-encoded
//! values framed with a varint length, like reliable messages but without a
//! message id: the control stream carries nothing else.

use core::fmt;

use crate::{Decode, Encode};

use super::{ChannelDef, Protocol, ProtocolEntry};

/// Message id 0 with an empty body is zao's heartbeat (docs/WIRE.md §12): a
/// client sends it on its reliable stream when it has sent nothing else for
/// a quarter of the silence timeout, so a server can tell a quiet client
/// from a dead or stalling one. Reliable, not a datagram: under heavy loss
/// (L5, 25 %) a datagram heartbeat was lost often enough for the 10-minute
/// soak to see a live client closed for silence. Receivers also take it in
/// an unreliable datagram.
pub const HEARTBEAT_ID: u32 = 0;

/// The heartbeat as a frame on a client's reliable stream (docs/WIRE.md
/// §12.7): length 1, then id [`HEARTBEAT_ID`] with no body. What a client's
/// session writes, and what a load tool's raw clients write to stay
/// connected.
pub const HEARTBEAT_FRAME: [u8; 2] = [0x01, HEARTBEAT_ID as u8];

/// First field of every [`Hello`]: "ZAO1".
pub const PROTOCOL_MAGIC: u32 = 0x5a41_4f31;

/// The client's opening message.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
pub struct Hello {
    /// [`PROTOCOL_MAGIC`]: refuses a peer that is not zao at all.
    pub magic: u32,
    /// The client's zao version (`CARGO_PKG_VERSION`).
    pub version: String,
    /// [`Protocol::hash`] of the client's registrations.
    pub protocol_hash: u64,
    /// The registrations themselves, so a mismatch can be named.
    pub messages: Vec<ProtocolEntry>,
    /// The channels the protocol declares beyond the three defaults.
    pub channels: Vec<ChannelDef>,
    /// An authentication token for the server's callback.
    pub token: Option<Vec<u8>>,
}

impl Hello {
    /// The hello a client of `protocol` sends, with this crate's version.
    #[must_use]
    pub fn new(protocol: &Protocol, token: Option<Vec<u8>>) -> Self {
        Self {
            magic: PROTOCOL_MAGIC,
            version: VERSION.to_owned(),
            protocol_hash: protocol.hash(),
            messages: protocol.entries().to_vec(),
            channels: protocol
                .channels()
                .get(Protocol::DEFAULT_CHANNELS..)
                .unwrap_or_default()
                .to_vec(),
            token,
        }
    }
}

/// The zao version a hello carries and a server compares
/// ([`versions_compatible`]): this crate's `CARGO_PKG_VERSION`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The server's answer.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
pub enum HelloReply {
    /// Accepted: the client's id on this server.
    #[zao(tag = 0)]
    Welcome {
        /// Assigned client id.
        client_id: u64,
    },
    /// Refused, with a reason both sides can read.
    #[zao(tag = 1)]
    Refused(RefuseReason),
}

/// Why the server refused a client.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
pub enum RefuseReason {
    /// The opening bytes were not a zao hello.
    #[zao(tag = 0)]
    NotZao,
    /// Incompatible zao versions.
    #[zao(tag = 1)]
    VersionMismatch {
        /// The server's version.
        server: String,
        /// The client's version.
        client: String,
    },
    /// The message registrations differ.
    #[zao(tag = 2)]
    ProtocolMismatch {
        /// The first difference, seen from the server.
        detail: String,
    },
    /// The server's auth callback said no.
    #[zao(tag = 3)]
    Unauthorized {
        /// What the callback said.
        detail: String,
    },
    /// The server has `max_clients` already.
    #[zao(tag = 4)]
    ServerFull,
    /// The client's QUIC transport takes no datagrams, or datagrams smaller
    /// than [`DATAGRAM_BUDGET`](super::DATAGRAM_BUDGET): it could not
    /// receive snapshots or unreliable messages.
    #[zao(tag = 5)]
    DatagramsTooSmall {
        /// The largest datagram the client takes (0: none).
        max: u64,
        /// What zao needs.
        required: u64,
    },
    /// The identity the auth callback returned is connected already and the
    /// server keeps the first connection
    /// ([`DuplicateIdentity::RefuseNew`](super::DuplicateIdentity::RefuseNew)).
    #[zao(tag = 6)]
    AlreadyConnected,
    /// The auth callback could not decide; try again later.
    #[zao(tag = 7)]
    AuthUnavailable {
        /// What the callback said.
        detail: String,
    },
    /// The client's address has `max` clients connected already
    /// ([`Limits::max_clients_per_ip`](super::Limits::max_clients_per_ip)).
    #[zao(tag = 8)]
    TooManyFromAddress {
        /// The server's cap per address.
        max: u64,
    },
    /// The server admits no new clients (it is about to stop, or leaving
    /// its fleet): look for another.
    #[zao(tag = 9)]
    Draining,
    /// The server turned the attempt away before its handshake: too many
    /// handshakes pending, in all or from this address. Read from QUIC's
    /// `CONNECTION_REFUSED`; try again shortly.
    #[zao(tag = 10)]
    Busy,
    /// The client did not prove its address: its answer to the server's
    /// QUIC Retry was refused (QUIC's `INVALID_TOKEN`).
    #[zao(tag = 11)]
    AddressValidationFailed,
}

impl RefuseReason {
    /// Whether a new attempt soon may succeed: the server was busy, full
    /// or could not authenticate now, or the address check failed. The
    /// native and simulated clients retry these with backoff (busy and
    /// the address check within the connect deadline, the others within
    /// the handshake deadline of the attempt first refused); the others
    /// (a mismatch, a refused identity, a draining server) stay refused.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::ServerFull
                | Self::TooManyFromAddress { .. }
                | Self::Busy
                | Self::AddressValidationFailed
                | Self::AuthUnavailable { .. }
        )
    }
}

impl fmt::Display for RefuseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotZao => f.write_str("not a zao client"),
            Self::VersionMismatch { server, client } => {
                write!(f, "zao version mismatch: server {server}, client {client}")
            }
            Self::ProtocolMismatch { detail } => write!(f, "protocol mismatch: {detail}"),
            Self::Unauthorized { detail } => write!(f, "unauthorized: {detail}"),
            Self::ServerFull => f.write_str("server full"),
            Self::DatagramsTooSmall { max, required } => write!(
                f,
                "the client takes datagrams of {max} bytes, the server needs {required}"
            ),
            Self::AlreadyConnected => f.write_str("this identity is connected already"),
            Self::AuthUnavailable { detail } => {
                write!(f, "authentication unavailable: {detail}")
            }
            Self::TooManyFromAddress { max } => {
                write!(f, "{max} clients are connected from this address already")
            }
            Self::Draining => f.write_str("the server admits no new clients (draining)"),
            Self::Busy => f.write_str("the server is busy (too many handshakes pending)"),
            Self::AddressValidationFailed => {
                f.write_str("address validation failed (the Retry answer was refused)")
            }
        }
    }
}

/// Whether two zao versions can talk: the same major version, and for 0.x
/// the same minor version (semver's compatibility rule).
#[must_use]
pub fn versions_compatible(a: &str, b: &str) -> bool {
    fn key(v: &str) -> Option<(u64, u64)> {
        let mut parts = v.split('.').map(|p| p.parse::<u64>().ok());
        let major = parts.next()??;
        let minor = parts.next()??;
        Some(if major == 0 { (0, minor) } else { (major, 0) })
    }
    key(a).is_some_and(|ka| Some(ka) == key(b))
}

/// Checks a client's hello against the server's protocol and version; the
/// auth token is the caller's to check.
///
/// # Errors
/// The [`RefuseReason`] to send back.
pub fn check_hello(hello: &Hello, protocol: &Protocol, version: &str) -> Result<(), RefuseReason> {
    if hello.magic != PROTOCOL_MAGIC {
        return Err(RefuseReason::NotZao);
    }
    if !versions_compatible(&hello.version, version) {
        return Err(RefuseReason::VersionMismatch {
            server: version.to_owned(),
            client: hello.version.clone(),
        });
    }
    let mut channels = Protocol::new().channels().to_vec();
    channels.extend(hello.channels.iter().cloned());
    let theirs = Protocol::from_parts(channels, hello.messages.clone());
    if hello.protocol_hash != protocol.hash() || theirs.hash() != hello.protocol_hash {
        let detail = protocol
            .diff(&theirs)
            .unwrap_or_else(|| "protocol hash differs".to_owned());
        return Err(RefuseReason::ProtocolMismatch { detail });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{Channel, Direction};

    #[derive(Encode, Decode, crate::NetMessage)]
    #[zao(id = 1)]
    struct Ping {
        n: u32,
    }

    #[derive(Encode, Decode, crate::NetMessage)]
    #[zao(id = 1)]
    struct PingWide {
        n: u64,
    }

    fn hello(protocol: &Protocol) -> Hello {
        Hello {
            version: "0.1.3".into(),
            ..Hello::new(protocol, Some(b"secret".to_vec()))
        }
    }

    #[test]
    fn matching_hello_is_accepted_and_round_trips() {
        let mut p = Protocol::new();
        p.add::<Ping>(Channel::RELIABLE, Direction::Both);
        let h = hello(&p);
        assert_eq!(check_hello(&h, &p, "0.1.0"), Ok(()));
        assert_eq!(Hello::decode(&h.to_encoded_vec()), Ok(h));
    }

    #[test]
    fn declared_channels_travel_in_the_hello_and_count_in_the_hash() {
        let mut p = Protocol::new();
        let chat = p.add_channel("chat", crate::proto::ChannelKind::ReliableOrdered);
        p.add::<Ping>(chat, Direction::Both);
        let h = hello(&p);
        assert_eq!(h.channels.len(), 1);
        assert_eq!(check_hello(&h, &p, "0.1.0"), Ok(()));
        // The same message on another declared channel of another kind.
        let mut q = Protocol::new();
        let chat = q.add_channel("chat", crate::proto::ChannelKind::ReliableUnordered);
        q.add::<Ping>(chat, Direction::Both);
        assert_ne!(p.hash(), q.hash());
        let err = check_hello(&hello(&q), &p, "0.1.0").unwrap_err();
        assert!(err.to_string().contains("chat"), "{err}");
        // A protocol of the default channels hashes as before channels
        // could be declared: only declared ones count.
        let mut r = Protocol::new();
        r.add::<Ping>(Channel::RELIABLE, Direction::Both);
        assert_eq!(hello(&r).channels, Vec::new());
    }

    #[test]
    fn mismatches_are_refused_with_a_reason() {
        let mut p = Protocol::new();
        p.add::<Ping>(Channel::RELIABLE, Direction::Both);
        let mut q = Protocol::new();
        q.add::<PingWide>(Channel::RELIABLE, Direction::Both);
        let err = check_hello(&hello(&q), &p, "0.1.0").unwrap_err();
        assert!(err.to_string().contains("Ping"), "{err}");
        let err = check_hello(&hello(&p), &p, "0.2.0").unwrap_err();
        assert!(matches!(err, RefuseReason::VersionMismatch { .. }));
        let mut bad = hello(&p);
        bad.magic = 0;
        assert_eq!(check_hello(&bad, &p, "0.1.0"), Err(RefuseReason::NotZao));
        let reply = HelloReply::Refused(err);
        assert_eq!(HelloReply::decode(&reply.to_encoded_vec()), Ok(reply));
        assert!(versions_compatible("1.2.0", "1.9.1"));
        assert!(!versions_compatible("1.2.0", "2.0.0"));
        assert!(!versions_compatible("garbage", "garbage"));
    }
}
