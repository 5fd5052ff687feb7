//! The client side: the [`ZaoClient`] resource and the systems that poll
//! and flush it.

use bevy_ecs::prelude::*;
use bevy_state::state::NextState;

use crate::proto::{
    ClientCore, ClientEvent, ClientId, ConnectionStats, DisconnectReason, SendError, SnapshotAck,
    SnapshotChunk,
};

use super::messages::{Connected, Disconnected, NetworkMessage, ZaoSendError};
use super::protocol::ZaoProtocol;
use super::state::{ClientEdges, ZaoClientState};

/// What carries the client's connection.
pub(crate) enum ClientTransport {
    /// Real QUIC over UDP.
    Quic(crate::quic::Client),
    /// The simulated network ([`ZaoSimNetwork`](super::testing::ZaoSimNetwork)).
    #[cfg(feature = "sim")]
    Sim(crate::sim::SimClient),
    /// In memory, to the server of this same App (a listen server).
    Local(ClientCore),
}

impl ClientTransport {
    fn core(&self) -> &ClientCore {
        match self {
            Self::Quic(c) => c,
            #[cfg(feature = "sim")]
            Self::Sim(c) => c,
            Self::Local(c) => c,
        }
    }

    fn core_mut(&mut self) -> &mut ClientCore {
        match self {
            Self::Quic(c) => c,
            #[cfg(feature = "sim")]
            Self::Sim(c) => c,
            Self::Local(c) => c,
        }
    }
}

/// Where a client's connection stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConnectionState {
    /// The handshake is under way.
    Connecting,
    /// Accepted, with our id on the server.
    Connected(ClientId),
    /// Ended or never started, and why.
    Disconnected(DisconnectReason),
}

/// The client's connection: its state and stats, sending with a result,
/// and leaving. Exists from a [`connect_zao`](super::ZaoCommandsExt::connect_zao)
/// until the next one or a [`disconnect_zao`](super::ZaoCommandsExt::disconnect_zao);
/// after the connection ends it stays, in `ConnectionState::Disconnected`,
/// with the reason.
#[derive(Resource)]
pub struct ZaoClient {
    transport: ClientTransport,
    state: ConnectionState,
    /// Reused between updates: the events of one poll.
    inbox: Vec<ClientEvent>,
    /// Delta snapshot chunks of this update, for each type's
    /// `ZaoSnapshots` to take.
    snapshot_chunks: Vec<SnapshotChunk>,
}

impl core::fmt::Debug for ZaoClient {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ZaoClient")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl ZaoClient {
    pub(crate) fn new(transport: ClientTransport) -> Self {
        Self {
            transport,
            state: ConnectionState::Connecting,
            inbox: Vec::new(),
            snapshot_chunks: Vec::new(),
        }
    }

    /// Whether the connection is in memory, to this App's own server.
    #[must_use]
    pub fn is_local(&self) -> bool {
        matches!(self.transport, ClientTransport::Local(_))
    }

    /// Where the connection stands, as of this update's
    /// [`ZaoSet::Receive`](super::ZaoSet::Receive).
    #[must_use]
    pub fn state(&self) -> &ConnectionState {
        &self.state
    }

    /// Our id on the server, once connected.
    #[must_use]
    pub fn id(&self) -> Option<ClientId> {
        match self.state {
            ConnectionState::Connected(id) => Some(id),
            _ => None,
        }
    }

    /// Whether the server has accepted us and we have not left.
    #[must_use]
    pub fn is_connected(&self) -> bool {
        matches!(self.state, ConnectionState::Connected(_))
    }

    /// The limits the connection keeps.
    #[must_use]
    pub fn limits(&self) -> crate::proto::Limits {
        self.transport.core().limits()
    }

    /// Connection statistics (RTT, loss, bytes, messages), once connected.
    #[must_use]
    pub fn stats(&self) -> Option<ConnectionStats> {
        self.transport.core().stats()
    }

    /// The instant this client stops trying to connect, over every
    /// attempt ([`Limits::connect_timeout`](crate::proto::Limits::connect_timeout)
    /// from the first; the one attempt's handshake deadline on the
    /// in-memory link of a listen server).
    #[must_use]
    pub fn connect_deadline(&self) -> std::time::Instant {
        self.transport.core().connect_deadline()
    }

    /// Connection attempts made before the current one: a new attempt
    /// follows one that did not finish its handshake in time, or a
    /// refusal a new attempt may get past (a busy or full server).
    #[must_use]
    pub fn retries(&self) -> u32 {
        self.transport.core().retries()
    }

    /// This update's delta snapshot chunks of message `id`.
    pub(crate) fn take_snapshot_chunks(&mut self, id: u32) -> Vec<SnapshotChunk> {
        let (mine, rest) = core::mem::take(&mut self.snapshot_chunks)
            .into_iter()
            .partition(|c| c.message.id() == id);
        self.snapshot_chunks = rest;
        mine
    }

    /// Tells the server which delta snapshots this client holds; whether
    /// the acks went out.
    pub(crate) fn send_acks(&mut self, acks: &[SnapshotAck]) -> bool {
        self.transport.core_mut().send_acks(acks).is_ok()
    }

    /// Leaves the server with a reason it will see in its
    /// `ClientDisconnected`; a [`Disconnected`] follows here.
    pub fn disconnect(&mut self, reason: &str) {
        self.transport.core_mut().disconnect(reason);
    }

    /// Encodes `message` into the transport on its registered channel.
    ///
    /// # Errors
    /// [`SendError::NotRegistered`] if this side may not send `T`,
    /// [`ZaoSendError::NotRunning`] before the server accepted us or after
    /// the connection ended, [`ZaoSendError::Transport`] for the rest.
    pub fn send<T: NetworkMessage>(
        &mut self,
        protocol: &ZaoProtocol,
        message: &T,
    ) -> Result<(), ZaoSendError> {
        let channel = protocol
            .channel_of(T::ID)
            .ok_or(ZaoSendError::Transport(SendError::NotRegistered(T::ID)))?;
        if !self.is_connected() {
            return Err(ZaoSendError::NotRunning);
        }
        if tracing::enabled!(target: "zao::traffic", tracing::Level::TRACE) {
            let mut bytes = bytes::BytesMut::new();
            crate::encode_message_to(message, &mut bytes);
            tracing::trace!(target: "zao::traffic", "client → server: {}", protocol.readable(&bytes));
        }
        self.transport
            .core_mut()
            .send(channel, message)
            .map_err(ZaoSendError::from)
    }

    /// The simulated network's node of the connection, if it is on one.
    #[cfg(feature = "sim")]
    pub(crate) fn sim_node(&self) -> Option<crate::sim::NodeId> {
        match &self.transport {
            ClientTransport::Sim(c) => Some(c.node()),
            _ => None,
        }
    }

    pub(crate) fn shutdown(self) {
        match self.transport {
            // Dropped: the close finishes in the background.
            ClientTransport::Quic(c) => drop(c),
            #[cfg(feature = "sim")]
            ClientTransport::Sim(mut c) => c.disconnect("client shut down"),
            ClientTransport::Local(mut c) => c.disconnect("client shut down"),
        }
    }
}

/// Polls the client: connection events (with the state and run-condition
/// edges) and every message, decoded by id into its `FromServer<T>`.
pub(crate) fn receive(world: &mut World) {
    if let Some(mut edges) = world.get_resource_mut::<ClientEdges>() {
        *edges = ClientEdges::default();
    }
    let Some(mut zao) = world.get_resource_mut::<ZaoClient>() else {
        return;
    };
    let zao = &mut *zao;
    let mut inbox = core::mem::take(&mut zao.inbox);
    let core = zao.transport.core_mut();
    inbox.extend(core::iter::from_fn(|| core.poll_event()));
    // This update's delta chunks, in the buffer of the last ones (chunks
    // of types nobody registered do not pile up).
    zao.snapshot_chunks.clear();
    zao.snapshot_chunks
        .extend(core::iter::from_fn(|| core.poll_snapshot()));
    for event in &inbox {
        match event {
            ClientEvent::Connected { client } => zao.state = ConnectionState::Connected(*client),
            ClientEvent::Disconnected { reason } => {
                zao.state = ConnectionState::Disconnected(reason.clone());
            }
            _ => {}
        }
    }
    for event in inbox.drain(..) {
        match event {
            ClientEvent::Connected { client } => {
                set_state(world, ZaoClientState::Connected);
                if let Some(mut edges) = world.get_resource_mut::<ClientEdges>() {
                    edges.connected = true;
                }
                world.write_message(Connected { client });
            }
            ClientEvent::Disconnected { reason } => {
                set_state(world, ZaoClientState::Disconnected);
                if let Some(mut edges) = world.get_resource_mut::<ClientEdges>() {
                    edges.disconnected = true;
                }
                world.write_message(Disconnected { reason });
            }
            ClientEvent::Message { message, .. } => {
                let id = message.id();
                let Some(protocol) = world.get_resource::<ZaoProtocol>() else {
                    continue;
                };
                if tracing::enabled!(target: "zao::traffic", tracing::Level::TRACE) {
                    tracing::trace!(
                        target: "zao::traffic",
                        "server → client: {}",
                        protocol.readable(message.message())
                    );
                }
                match protocol.client_decoder(id) {
                    Some(decode) => {
                        if let Err(e) = decode(world, &message) {
                            tracing::debug!(id, "bad message from the server: {e}");
                        }
                    }
                    None => tracing::debug!(id, "no receiver for message"),
                }
            }
        }
    }
    if let Some(mut zao) = world.get_resource_mut::<ZaoClient>() {
        zao.inbox = inbox;
    }
}

pub(crate) fn set_state(world: &mut World, state: ZaoClientState) {
    if let Some(mut next) = world.get_resource_mut::<NextState<ZaoClientState>>() {
        next.set(state);
    }
}

/// Sends the unreliable messages packed this update.
pub(crate) fn flush(client: Option<Res<ZaoClient>>) {
    if let Some(client) = client {
        client.transport.core().flush();
    }
}
