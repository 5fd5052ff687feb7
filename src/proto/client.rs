//! A client's session, sans I/O, as its application sees it. A backend
//! (`zao::quic` over quinn, `zao::sim` on the simulated network) drives
//! it; the application talks to [`ClientCore`].

use std::sync::Arc;

use bytes::BytesMut;

use super::cell::SessionCell;
use super::{
    Channel, ClientId, CloseCode, ConnectionStats, DisconnectReason, Outgoing, Received, SendError,
    SessionEvent,
};
use crate::Message;

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
}

impl ClientCore {
    pub(crate) fn new(cell: Arc<SessionCell>) -> Self {
        Self {
            cell,
            scratch: BytesMut::with_capacity(16 * 1024),
        }
    }

    pub(crate) fn cell(&self) -> &Arc<SessionCell> {
        &self.cell
    }

    /// The next event, or `None`. Never blocks.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        let mut session = self.cell.lock();
        let event = session.poll_event()?;
        if session.take_resume() {
            self.cell.wake();
        }
        Some(match event {
            SessionEvent::Connected { client, .. } => ClientEvent::Connected { client },
            SessionEvent::Message { channel, message } => ClientEvent::Message { channel, message },
            SessionEvent::Closed(reason) => ClientEvent::Disconnected { reason },
            // Only a server refuses; a refused client reads `Closed`.
            SessionEvent::Refused(reason) => ClientEvent::Disconnected {
                reason: DisconnectReason::Refused(reason),
            },
        })
    }

    /// Our id, once connected.
    #[must_use]
    pub fn id(&self) -> Option<ClientId> {
        self.cell.lock().client_id()
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
    pub fn send<M: Message>(&mut self, channel: Channel, msg: &M) -> Result<(), SendError> {
        let message = Outgoing::encode(msg, &mut self.scratch);
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
