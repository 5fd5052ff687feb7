//! A client's session, sans I/O, as its application sees it. A backend
//! (`zao::quic` over quinn, `zao::sim` on the simulated network) drives
//! it; the application talks to [`ClientCore`].

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;

use super::cell::SessionCell;
use super::{
    Channel, ClientId, CloseCode, ConnectionStats, DisconnectReason, Limits, Outgoing, Received,
    SendError, SessionEvent, SnapshotAck, SnapshotChunk,
};
use crate::NetMessage;

/// What happened on a client since the last poll.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ClientEvent {
    /// The server accepted us.
    Connected {
        /// Our id on the server.
        client: ClientId,
    },
    /// The connection ended, or could not start. The last event.
    Disconnected {
        /// Why.
        reason: DisconnectReason,
    },
    /// A message from the server, its id parsed once on receipt.
    Message {
        /// The channel it came on.
        channel: Channel,
        /// The message.
        message: Received,
    },
}

/// The application's side of a client, whichever backend drives it.
/// `zao::quic::Client` and `zao::sim::SimClient` dereference to it.
#[derive(Debug)]
pub struct ClientCore {
    cell: Arc<SessionCell>,
    scratch: BytesMut,
    /// Delta snapshot chunks taken off the session by `poll_event`, for
    /// `poll_snapshot`, and their bytes.
    chunks: VecDeque<SnapshotChunk>,
    chunk_bytes: usize,
}

impl ClientCore {
    pub(crate) fn new(cell: Arc<SessionCell>) -> Self {
        Self {
            cell,
            scratch: BytesMut::with_capacity(16 * 1024),
            chunks: VecDeque::new(),
            chunk_bytes: 0,
        }
    }

    pub(crate) fn cell(&self) -> &Arc<SessionCell> {
        &self.cell
    }

    /// The next event, or `None`. Never blocks. Delta snapshot chunks do
    /// not come here: they wait for [`poll_snapshot`](Self::poll_snapshot).
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        let cell = self.cell.clone();
        let mut session = cell.lock();
        let event = loop {
            let event = session.poll_event()?;
            if session.take_resume() {
                self.cell.wake();
            }
            match event {
                SessionEvent::Snapshot { chunk, .. } => {
                    let limit = session.limits().inbound_queue;
                    self.keep_chunk(chunk, limit);
                }
                event => break event,
            }
        };
        drop(session);
        Some(match event {
            SessionEvent::Connected { client, .. } => ClientEvent::Connected { client },
            SessionEvent::Message { channel, message } => ClientEvent::Message { channel, message },
            SessionEvent::Closed(reason) => ClientEvent::Disconnected { reason },
            // Only a server refuses; a refused client reads `Closed`.
            SessionEvent::Refused(reason) => ClientEvent::Disconnected {
                reason: DisconnectReason::Refused(reason),
            },
            // Kept aside above.
            SessionEvent::Snapshot { .. } => return None,
        })
    }

    /// Queues a chunk for `poll_snapshot`, dropping the oldest past
    /// `limit` bytes (an application that never takes them).
    fn keep_chunk(&mut self, chunk: SnapshotChunk, limit: usize) {
        self.chunk_bytes += chunk.message.message().len();
        self.chunks.push_back(chunk);
        while self.chunk_bytes > limit {
            let Some(old) = self.chunks.pop_front() else {
                break;
            };
            self.chunk_bytes -= old.message.message().len();
        }
    }

    /// The next chunk of a delta snapshot
    /// ([`ServerCore::send_delta_snapshot`](super::ServerCore::send_delta_snapshot)),
    /// or `None`: hand it to the [`DeltaReceiver`](super::DeltaReceiver)
    /// of its type (`chunk.message.id()`). Call after draining
    /// [`poll_event`](Self::poll_event), then send the receivers' acks
    /// ([`send_acks`](Self::send_acks)).
    pub fn poll_snapshot(&mut self) -> Option<SnapshotChunk> {
        if self.chunks.is_empty() {
            // Chunks still in the session, if the application polls
            // snapshots before (or without) events: take those that lead.
            let cell = self.cell.clone();
            let mut session = cell.lock();
            while let Some(event) = session.poll_event() {
                match event {
                    SessionEvent::Snapshot { chunk, .. } => {
                        let limit = session.limits().inbound_queue;
                        self.keep_chunk(chunk, limit);
                    }
                    other => {
                        session.unpoll_event(other);
                        break;
                    }
                }
            }
            if session.take_resume() {
                self.cell.wake();
            }
        }
        let chunk = self.chunks.pop_front()?;
        self.chunk_bytes -= chunk.message.message().len();
        Some(chunk)
    }

    /// The limits this client keeps.
    #[must_use]
    pub fn limits(&self) -> Limits {
        self.cell.lock().limits().clone()
    }

    /// Our id, once connected.
    #[must_use]
    pub fn id(&self) -> Option<ClientId> {
        self.cell.lock().client_id()
    }

    /// The instant the client stops trying to connect: every attempt must
    /// finish by it ([`Limits::connect_timeout`] from the first attempt;
    /// the one attempt's [`Limits::handshake_timeout`] on a driver that
    /// cannot open new connections).
    #[must_use]
    pub fn connect_deadline(&self) -> Instant {
        self.cell.lock().connect_deadline()
    }

    /// Connection attempts made before the current one: after an attempt
    /// that did not finish its handshake in time, or a refusal a new
    /// attempt may get past.
    #[must_use]
    pub fn retries(&self) -> u32 {
        self.cell.lock().retries()
    }

    /// Whether the server accepted us and the connection is open.
    #[must_use]
    pub fn is_connected(&self) -> bool {
        self.cell.lock().is_open()
    }

    /// Encodes and sends a message to the server.
    ///
    /// # Errors
    /// [`SendError`]: not connected, backlog full, too large, or not
    /// registered for a client to send on `channel`.
    pub fn send<M: NetMessage>(&mut self, channel: Channel, msg: &M) -> Result<(), SendError> {
        let message = Outgoing::encode(msg, &mut self.scratch)?;
        self.send_outgoing(channel, &message)
    }

    /// Sends a message encoded once with [`Outgoing::encode`].
    ///
    /// # Errors
    /// As [`send`](Self::send).
    pub fn send_outgoing(&mut self, channel: Channel, message: &Outgoing) -> Result<(), SendError> {
        let result = self.cell.lock().send(channel, message);
        if result.is_ok() {
            self.cell.wake();
        }
        result
    }

    /// Tells the server which delta snapshots this client holds
    /// ([`DeltaReceiver::ack`](super::DeltaReceiver::ack), one per snapshot
    /// type), in one small datagram: the server then encodes the next
    /// snapshots against them. Call once a frame after handling the
    /// frame's events; an ack lost on the way only means a larger delta
    /// until the next one arrives.
    ///
    /// # Errors
    /// [`SendError::NotConnected`], or [`SendError::TooManyAcks`] for
    /// more than [`MAX_ACKS`](super::MAX_ACKS) acks.
    pub fn send_acks(&mut self, acks: &[SnapshotAck]) -> Result<(), SendError> {
        let result = self.cell.lock().send_acks(acks);
        if result.is_ok() && !acks.is_empty() {
            self.cell.wake();
        }
        result
    }

    /// Sends the unreliable messages packed so far. Call once per tick,
    /// after the tick's sends.
    pub fn flush(&self) {
        if self.cell.lock().flush() {
            self.cell.wake();
        }
    }

    /// Connection statistics.
    #[must_use]
    pub fn stats(&self) -> Option<ConnectionStats> {
        let session = self.cell.lock();
        session.is_open().then(|| session.stats())
    }

    /// Leaves the server with a reason it will see; a `Disconnected`
    /// follows here.
    pub fn disconnect(&mut self, reason: &str) {
        self.cell.lock().close(CloseCode::Normal, reason);
        self.cell.wake();
    }
}
