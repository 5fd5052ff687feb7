//! What a transport offers the pump: the handful of operations a QUIC
//! connection has (docs/TRANSPORTS.md). An adapter implements them over
//! quinn, quinn-proto on the simulated network, an in-memory pipe, or a
//! WebTransport session, and decides nothing: what to send next, in which
//! order and pieces, what a close means, is the pump's.
//!
//! Every operation is a poll: an adapter over an async library registers
//! the context's waker where it would block; an adapter on a virtual clock
//! or in memory ignores the context (its driver steps the pump again after
//! every change).

use std::task::{Context, Poll};

use bytes::Bytes;

use crate::proto::{
    CloseCode, ClosedBy, DisconnectReason, PathStats, RefuseReason, StreamId, TransportError,
};

/// A connection's transport, as the pump drives it.
pub(crate) trait Transport {
    /// The sending half of a stream.
    type Send;
    /// The receiving half of a stream.
    type Recv;

    /// The connection's handshake: `Ready(Ok(max))` once it is done, with
    /// the largest datagram the peer takes (`None`: it takes none);
    /// `Ready(Err(why))` if it failed. Polled until it is `Ready`.
    fn poll_connected(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<usize>, DisconnectReason>>;

    /// `Ready` once the connection is gone (after the handshake), and why.
    fn poll_closed(&mut self, cx: &mut Context<'_>) -> Poll<DisconnectReason>;

    /// The next datagram that arrived; `Ready(None)` when no more can.
    fn poll_datagram(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>>;

    /// A stream the peer opened; `Ready(None)` when no more can be.
    fn poll_accept(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Accepted<Self::Recv, Self::Send>>>;

    /// Up to `max` bytes of a stream, in order.
    fn poll_read(&mut self, cx: &mut Context<'_>, recv: &mut Self::Recv, max: usize) -> Poll<Read>;

    /// Opens a stream of this side's (`bidi`: the client's control stream),
    /// `Pending` while the peer's stream limit holds it back.
    fn poll_open(
        &mut self,
        cx: &mut Context<'_>,
        bidi: bool,
    ) -> Poll<Option<Opened<Self::Send, Self::Recv>>>;

    /// Gives a stream its priority (higher is sent first); a hint the
    /// transport may ignore (the pump keeps its own order).
    fn set_priority(&mut self, send: &mut Self::Send, priority: i32);

    /// Writes the front of `data` into the stream, advancing `data` by what
    /// the transport took: `Ready(Ok(()))` once some was taken, `Pending`
    /// while its send window is full, `Ready(Err(()))` if the stream is gone.
    fn poll_write(
        &mut self,
        cx: &mut Context<'_>,
        send: &mut Self::Send,
        data: &mut Bytes,
    ) -> Poll<Result<(), ()>>;

    /// Ends a stream after what was written.
    fn finish(&mut self, send: &mut Self::Send);
    /// `Ready` once the peer has acknowledged everything written to a
    /// finished stream, or the stream or the connection is gone (a
    /// graceful close waits for it).
    fn poll_acked(&mut self, cx: &mut Context<'_>, send: &mut Self::Send) -> Poll<()>;

    /// Sends a datagram now, or says why it cannot and gives it back.
    ///
    /// # Errors
    /// [`DatagramRefused::Full`] while the transport's datagram buffer has
    /// no room (the pump keeps it and tries again), [`DatagramRefused::Gone`]
    /// if it can never go (too large, closed). A transport never drops a
    /// queued datagram to make room: which one loses is the session's call.
    fn try_send_datagram(&mut self, datagram: Bytes) -> Result<(), (DatagramRefused, Bytes)>;

    /// Closes the connection with zao's code and a reason.
    fn close(&mut self, code: u64, reason: &[u8]);

    /// The transport's figures for the session's stats.
    fn path_stats(&self) -> PathStats;

    /// Whether anything may have arrived since the last call: an adapter
    /// that knows which of its wakers fired says `false` when only the
    /// application woke the driver (a send), and the pump then skips
    /// polling its inputs. The default: always poll them.
    fn take_input_wake(&mut self) -> bool {
        true
    }

    /// What carries the connection, for statistics: `"quic"`,
    /// `"webtransport"`, `"sim"`, `"local"`. Asked once the transport is
    /// connected.
    fn name(&self) -> &'static str;
}

/// A stream the peer opened.
pub(crate) struct Accepted<R, S> {
    /// Its id, as QUIC numbers it.
    pub(crate) id: StreamId,
    /// Its receiving half.
    pub(crate) recv: R,
    /// Its sending half, for a bidirectional stream (the control stream).
    pub(crate) send: Option<S>,
}

/// A stream this side opened.
pub(crate) struct Opened<S, R> {
    /// Its sending half.
    pub(crate) send: S,
    /// For a bidirectional stream, its id and receiving half.
    pub(crate) recv: Option<(StreamId, R)>,
}

/// What a read of a stream gave.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Read {
    /// Bytes, in order.
    Data(Bytes),
    /// The peer finished the stream: everything was read.
    Finished,
    /// The peer reset the stream with this code.
    Reset(u64),
    /// Nothing more arrives: the connection is gone.
    Gone,
}

/// Why a datagram was not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DatagramRefused {
    /// No room now.
    Full,
    /// It can never go.
    Gone,
}

/// How a QUIC connection ended, as any QUIC stack says it: what zao makes
/// of it is [`DisconnectReason::from`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LinkClosed {
    /// The peer closed it with an application code and reason.
    ByPeer {
        /// The application close code.
        code: u64,
        /// The reason.
        reason: Bytes,
    },
    /// This side closed it.
    Locally,
    /// Nothing heard for the idle timeout.
    TimedOut,
    /// A QUIC or TLS error, with its code (RFC 9000 §20.1; TLS alerts are
    /// `0x100 + alert`) and description.
    Transport {
        /// The transport error code.
        code: u64,
        /// Which side detected it.
        by: ClosedBy,
        /// The description.
        reason: String,
    },
    /// The peer reset the connection (a stateless reset).
    Reset,
    /// No common QUIC version.
    VersionMismatch,
    /// No connection ids left.
    CidsExhausted,
}

/// QUIC's `CONNECTION_REFUSED` (RFC 9000 §20.1): a server's `refuse`.
const CONNECTION_REFUSED: u64 = 0x2;
/// QUIC's `INVALID_TOKEN`: a Retry token the server refused.
const INVALID_TOKEN: u64 = 0xb;

impl From<LinkClosed> for DisconnectReason {
    fn from(closed: LinkClosed) -> Self {
        match closed {
            LinkClosed::ByPeer { code, reason } => Self::Closed {
                by: ClosedBy::Peer,
                code: CloseCode::from_wire(code),
                reason: String::from_utf8_lossy(&reason).into_owned(),
            },
            LinkClosed::Locally => Self::Closed {
                by: ClosedBy::Local,
                code: CloseCode::Normal,
                reason: "closed".to_owned(),
            },
            LinkClosed::TimedOut => Self::TimedOut,
            // A server turns an attempt away before its handshake with
            // QUIC's own codes: the client reads why.
            LinkClosed::Transport {
                code: CONNECTION_REFUSED,
                by: ClosedBy::Peer,
                ..
            } => Self::Refused(RefuseReason::Busy),
            LinkClosed::Transport {
                code: INVALID_TOKEN,
                by: ClosedBy::Peer,
                ..
            } => Self::Refused(RefuseReason::AddressValidationFailed),
            LinkClosed::Transport { code, by, reason } => {
                Self::Transport(TransportError::Quic { code, by, reason })
            }
            LinkClosed::Reset => Self::Transport(TransportError::Reset),
            LinkClosed::VersionMismatch => Self::Transport(TransportError::VersionMismatch),
            LinkClosed::CidsExhausted => Self::Transport(TransportError::CidsExhausted),
        }
    }
}
