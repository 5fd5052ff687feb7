//! Limits of a server and its connections, with their validation.

use core::fmt;
use std::time::Duration;

use super::{ChannelKind, Protocol, RateLimit};

/// The largest datagram zao ever sends, in bytes: what QUIC carries at its
/// minimum path MTU (1200 bytes) whatever the connection ids' lengths
/// (1200 − 1 flags − 20 CID − 4 packet number − 16 tag − 9 frame header).
///
/// Every snapshot chunk and packed unreliable datagram fits it, so one
/// encode suits every client: a broadcast never sizes its datagrams by the
/// smallest peer. A peer that cannot take datagrams this large is refused
/// at the handshake ([`RefuseReason::DatagramsTooSmall`](super::RefuseReason::DatagramsTooSmall)).
pub const DATAGRAM_BUDGET: usize = 1150;

/// What a server does when an identity its auth callback returned is
/// already connected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum DuplicateIdentity {
    /// The new connection replaces the old one, which is closed with
    /// [`CloseCode::Replaced`](super::CloseCode::Replaced): a player who
    /// reconnects after a crash is not locked out by their ghost session.
    #[default]
    ReplaceOld,
    /// The new connection is refused with
    /// [`RefuseReason::AlreadyConnected`](super::RefuseReason::AlreadyConnected).
    RefuseNew,
}

/// Resource limits, sized for a game server out of the box. quinn's own
/// defaults allow about 250 MB of buffering per connection; these keep the
/// worst case near 3.5 MiB (see [`Limits::worst_case_bytes_per_connection`]).
///
/// Change a field on a default value (`let mut limits = Limits::default();
/// limits.max_clients = 64;`); [`validate`](Self::validate) runs when a
/// server or client starts.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Limits {
    /// Most clients connected at once; more are refused with `ServerFull`.
    pub max_clients: usize,
    /// Most connections in the handshake at once; more are refused before
    /// any state is kept for them.
    pub max_pending_handshakes: usize,
    /// Most of those from one address at once (any port) that have not
    /// proved their address, so one host, or a flood spoofing its address,
    /// cannot take every handshake slot. Past it an attempt is sent a QUIC
    /// Retry: players behind one address (NAT, a campus, a LAN party)
    /// answer it and come in validated, held only to
    /// [`max_clients_per_ip`](Self::max_clients_per_ip).
    pub max_pending_per_ip: usize,
    /// Most clients connected from one address at once, and most validated
    /// handshakes from it: with no auth, one host cannot take every slot.
    /// Past it a client is refused with
    /// [`RefuseReason::TooManyFromAddress`](super::RefuseReason::TooManyFromAddress).
    /// The default, 64, lets 64 players behind one address play together.
    pub max_clients_per_ip: usize,
    /// IPv6 addresses are counted per address by their first this many bits
    /// (a host is given a /64 and may rotate within it); 128 counts each
    /// address on its own.
    pub ipv6_prefix: u8,
    /// Pending handshakes above which a new connection must first prove it
    /// owns its address (a QUIC Retry round trip) before the server keeps
    /// any state for it: spoofed sources then cannot fill the table.
    pub retry_threshold: usize,
    /// Largest message (length prefix, id and body) on a reliable stream, in
    /// bytes: a longer frame closes the connection before its body is
    /// buffered.
    pub max_message_size: usize,
    /// Largest datagram payload accepted; larger ones are dropped and counted.
    pub max_datagram_payload: usize,
    /// Reliable-unordered messages a peer may have in flight toward this
    /// side at once, each on a QUIC stream of its own; more wait for one to
    /// arrive. Only protocols with a reliable-unordered channel use it.
    pub max_unordered_streams: u32,
    /// Flow-control window of one stream, in bytes.
    pub stream_receive_window: u32,
    /// Flow-control window of the whole connection, in bytes.
    pub connection_receive_window: u32,
    /// Unacknowledged bytes in flight per connection.
    pub send_window: u64,
    /// Incoming datagram bytes buffered before the oldest are dropped.
    pub datagram_receive_buffer: usize,
    /// Outgoing datagram bytes buffered before the oldest are dropped
    /// (so a slow client gets the newest snapshots, not a backlog).
    pub datagram_send_buffer: usize,
    /// Outgoing reliable bytes queued per connection before sends fail
    /// with [`SendError::QueueFull`](super::SendError::QueueFull).
    pub reliable_backlog: usize,
    /// Received message bytes a connection holds for the application before
    /// it stops reading its reliable streams (QUIC flow control then holds
    /// the sender back) and drops datagram messages (counted).
    pub inbound_queue: usize,
    /// A connection silent for this long is closed.
    pub idle_timeout: Duration,
    /// Keep-alive interval, well under the idle timeout.
    pub keep_alive: Duration,
    /// Time one connection attempt has to complete the QUIC and zao
    /// handshakes, authentication included: a server closes a connection
    /// still in its handshake after it (S1, S12), and a client abandons the
    /// attempt and tries again on a new connection, within
    /// [`connect_timeout`](Self::connect_timeout). The default, 10 s,
    /// covers QUIC's handshake with its retransmission backoff on most
    /// attempts over a 2 s round trip with a quarter of the packets lost
    /// (link row L5); docs/LINKS.md gives the measured connect times.
    pub handshake_timeout: Duration,
    /// Client side: the time a client has to connect, over every attempt
    /// (a new attempt follows a [`handshake_timeout`](Self::handshake_timeout)
    /// passed, a QUIC timeout in the handshake, or a busy server). Past it
    /// the client reports why its last attempt ended
    /// ([`DisconnectReason::HandshakeTimedOut`](super::DisconnectReason::HandshakeTimedOut)
    /// when that attempt's deadline passed). The default, 60 s (Unreal
    /// Engine's initial connect timeout), lets a client over a link as
    /// bad as row L5 of the link matrix make six attempts: in the
    /// simulation 1022 of 1024 such clients connected (docs/LINKS.md). A
    /// server that does not answer is reported after it. A driver that cannot open a new connection (the in-memory
    /// link) makes one attempt of `handshake_timeout`.
    pub connect_timeout: Duration,
    /// A client that sends no message for this long is disconnected (an
    /// idle or trickling connection cannot hold a slot forever). Clients
    /// send a heartbeat after a quarter of it with nothing else sent, so a
    /// quiet player stays. `None` turns both off.
    pub silence_timeout: Option<Duration>,
    /// Per-client receive rate (server side).
    pub receive_rate: RateLimit,
    /// What happens when an authenticated identity connects twice.
    pub duplicate_identity: DuplicateIdentity,
    /// Server side: the most distinct delta encodes of one snapshot per
    /// tick (one per distinct baseline the clients acknowledged, a
    /// keyframe counting as one). Clients past it get an older baseline
    /// they also hold, or a keyframe, so clients acking different old
    /// baselines cannot multiply the server's work.
    pub max_delta_encodes: usize,
    /// Server side: a client whose packet loss (QUIC's count over the
    /// connection, once 64 packets went) is at least this share gets each
    /// tick's delta snapshot chunks once more with the next tick's,
    /// already encoded: a copy a tick later survives the loss of the
    /// original and still lands before the client's render time (it drops
    /// the one it does not need). A tick of several chunks is lost when
    /// any chunk is; over a link losing 10 % of its packets this keeps
    /// about 98 % of ticks usable instead of about 87 %, for twice the
    /// delta bytes to that client only. The default, 5 %; `None` never
    /// sends twice.
    pub delta_redundancy_loss: Option<f64>,
    /// Client side: the most memory a delta snapshot receiver holds (parts
    /// being reassembled and whole snapshots), charged before a chunk is
    /// decoded, so a hostile server cannot make a client hold more
    /// ([`DeltaReceiver::with_memory_limit`](super::DeltaReceiver::with_memory_limit);
    /// the Bevy plugin applies it to each connection's receivers).
    pub snapshot_memory: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_clients: 256,
            max_pending_handshakes: 128,
            max_pending_per_ip: 8,
            max_clients_per_ip: 64,
            ipv6_prefix: 64,
            retry_threshold: 32,
            max_message_size: 256 * 1024,
            max_datagram_payload: 1452,
            max_unordered_streams: 16,
            stream_receive_window: 512 * 1024,
            connection_receive_window: 1024 * 1024,
            send_window: 1024 * 1024,
            datagram_receive_buffer: 256 * 1024,
            datagram_send_buffer: 256 * 1024,
            reliable_backlog: 512 * 1024,
            inbound_queue: 256 * 1024,
            idle_timeout: Duration::from_secs(10),
            keep_alive: Duration::from_secs(2),
            handshake_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(60),
            silence_timeout: Some(Duration::from_secs(30)),
            receive_rate: RateLimit::default(),
            duplicate_identity: DuplicateIdentity::default(),
            max_delta_encodes: 16,
            delta_redundancy_loss: Some(0.05),
            snapshot_memory: super::DEFAULT_SNAPSHOT_MEMORY,
        }
    }
}

/// A [`Limits`] value that cannot work, and which field says so.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitsError {
    /// A field that must be above zero is zero.
    Zero(&'static str),
    /// The keep-alive interval is not shorter than the idle timeout, so an
    /// idle connection would time out between keep-alives.
    KeepAliveNotBelowIdle,
    /// A stream's window cannot hold one message of the largest size, so
    /// such a message could never arrive.
    WindowBelowMessage,
    /// The retry threshold is above the pending-handshake limit, so retries
    /// would never engage.
    RetryAbovePending,
    /// `ipv6_prefix` is longer than an IPv6 address (128 bits).
    Ipv6PrefixTooLong,
    /// `delta_redundancy_loss` is not a share between 0 and 1.
    RedundancyLossOutOfRange,
}

impl fmt::Display for LimitsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Zero(field) => write!(f, "limits: `{field}` must be above zero"),
            Self::KeepAliveNotBelowIdle => {
                f.write_str("limits: `keep_alive` must be shorter than `idle_timeout`")
            }
            Self::WindowBelowMessage => f.write_str(
                "limits: `stream_receive_window` must hold one message of `max_message_size`",
            ),
            Self::RetryAbovePending => {
                f.write_str("limits: `retry_threshold` must not exceed `max_pending_handshakes`")
            }
            Self::Ipv6PrefixTooLong => f.write_str("limits: `ipv6_prefix` must be at most 128"),
            Self::RedundancyLossOutOfRange => {
                f.write_str("limits: `delta_redundancy_loss` must be between 0 and 1")
            }
        }
    }
}

impl std::error::Error for LimitsError {}

impl Limits {
    /// Checks that the limits can work together: every interval and size
    /// that is divided or waited on is above zero, the keep-alive is shorter
    /// than the idle timeout, a stream window holds the largest message.
    ///
    /// # Errors
    /// The first [`LimitsError`] found.
    pub fn validate(&self) -> Result<(), LimitsError> {
        let sizes = [
            ("max_clients", self.max_clients),
            ("max_pending_handshakes", self.max_pending_handshakes),
            ("max_pending_per_ip", self.max_pending_per_ip),
            ("max_clients_per_ip", self.max_clients_per_ip),
            ("max_delta_encodes", self.max_delta_encodes),
            ("snapshot_memory", self.snapshot_memory),
            ("max_message_size", self.max_message_size),
            ("max_datagram_payload", self.max_datagram_payload),
            ("max_unordered_streams", self.max_unordered_streams as usize),
            ("datagram_receive_buffer", self.datagram_receive_buffer),
            ("datagram_send_buffer", self.datagram_send_buffer),
            ("reliable_backlog", self.reliable_backlog),
            ("inbound_queue", self.inbound_queue),
            (
                "send_window",
                usize::try_from(self.send_window).unwrap_or(1),
            ),
            (
                "receive_rate.messages_per_second",
                self.receive_rate.messages_per_second as usize,
            ),
            ("receive_rate.burst", self.receive_rate.burst as usize),
        ];
        if let Some((field, _)) = sizes.iter().find(|(_, v)| *v == 0) {
            return Err(LimitsError::Zero(field));
        }
        let times = [
            ("idle_timeout", self.idle_timeout),
            ("keep_alive", self.keep_alive),
            ("handshake_timeout", self.handshake_timeout),
            ("connect_timeout", self.connect_timeout),
            (
                "silence_timeout",
                self.silence_timeout.unwrap_or(Duration::MAX),
            ),
        ];
        if let Some((field, _)) = times.iter().find(|(_, v)| v.is_zero()) {
            return Err(LimitsError::Zero(field));
        }
        if self.keep_alive >= self.idle_timeout {
            return Err(LimitsError::KeepAliveNotBelowIdle);
        }
        if (self.stream_receive_window as usize) < self.max_message_size
            || self.connection_receive_window < self.stream_receive_window
        {
            return Err(LimitsError::WindowBelowMessage);
        }
        if self.retry_threshold > self.max_pending_handshakes {
            return Err(LimitsError::RetryAbovePending);
        }
        if self.ipv6_prefix > 128 {
            return Err(LimitsError::Ipv6PrefixTooLong);
        }
        if self
            .delta_redundancy_loss
            .is_some_and(|l| !(0.0..=1.0).contains(&l))
        {
            return Err(LimitsError::RedundancyLossOutOfRange);
        }
        Ok(())
    }

    /// How often a client that has sent nothing else sends a heartbeat
    /// (docs/WIRE.md §12.7): a quarter of the silence timeout, so three
    /// can be lost before the server gives up. `None` when the silence
    /// timeout is off.
    #[must_use]
    pub fn heartbeat_interval(&self) -> Option<Duration> {
        self.silence_timeout.map(|silence| silence / 4)
    }

    /// The unidirectional streams a peer may have open toward this side at
    /// once with `protocol`'s channels: one per reliable-ordered channel,
    /// and [`max_unordered_streams`](Self::max_unordered_streams) when the
    /// protocol has a reliable-unordered channel (at least one in all). A
    /// QUIC transport gives it to the peer as its stream limit; the session
    /// also holds every transport to it.
    #[must_use]
    pub fn stream_allowance(&self, protocol: &Protocol) -> u32 {
        let kinds = || protocol.channels().iter().map(|c| c.kind);
        let ordered = kinds()
            .filter(|k| *k == ChannelKind::ReliableOrdered)
            .count();
        let unordered = if kinds().any(|k| k == ChannelKind::ReliableUnordered) {
            self.max_unordered_streams
        } else {
            0
        };
        u32::try_from(ordered)
            .unwrap_or(u32::MAX)
            .saturating_add(unordered)
            .max(1)
    }

    /// The most memory one connection can hold in zao's and QUIC's buffers:
    /// receive window, datagram buffers (the send buffer twice: QUIC's, and
    /// the session's queue, which fills when QUIC's is full and drops its
    /// oldest), send window, reliable backlog, the inbound queue and partly
    /// received messages (across all streams, a receive window and one
    /// message of the largest size). Measured against real connections in
    /// `tests/memory.rs`.
    #[must_use]
    pub fn worst_case_bytes_per_connection(&self) -> usize {
        2 * self.connection_receive_window as usize
            + self.datagram_receive_buffer
            + 2 * self.datagram_send_buffer
            + usize::try_from(self.send_window).unwrap_or(usize::MAX)
            + self.reliable_backlog
            + self.inbound_queue
            + self.max_message_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bad_values_name_their_field() {
        let d = Limits::default;
        assert_eq!(d().validate(), Ok(()));
        let l = Limits {
            silence_timeout: Some(Duration::ZERO),
            ..d()
        };
        assert_eq!(l.validate(), Err(LimitsError::Zero("silence_timeout")));
        let l = Limits {
            keep_alive: d().idle_timeout,
            ..d()
        };
        assert_eq!(l.validate(), Err(LimitsError::KeepAliveNotBelowIdle));
        let l = Limits {
            max_message_size: d().stream_receive_window as usize + 1,
            ..d()
        };
        assert_eq!(l.validate(), Err(LimitsError::WindowBelowMessage));
        let l = Limits {
            receive_rate: RateLimit {
                burst: 0,
                ..RateLimit::default()
            },
            ..d()
        };
        assert_eq!(l.validate(), Err(LimitsError::Zero("receive_rate.burst")));
        let l = Limits {
            retry_threshold: d().max_pending_handshakes + 1,
            ..d()
        };
        assert_eq!(l.validate(), Err(LimitsError::RetryAbovePending));
        let l = Limits {
            ipv6_prefix: 129,
            ..d()
        };
        assert_eq!(l.validate(), Err(LimitsError::Ipv6PrefixTooLong));
        let l = Limits {
            delta_redundancy_loss: Some(f64::NAN),
            ..d()
        };
        assert_eq!(l.validate(), Err(LimitsError::RedundancyLossOutOfRange));
        let l = Limits {
            max_clients_per_ip: 0,
            ..d()
        };
        assert_eq!(l.validate(), Err(LimitsError::Zero("max_clients_per_ip")));
    }
}
