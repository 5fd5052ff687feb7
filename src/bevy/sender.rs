//! Sending: system parameters that encode a borrowed value straight into
//! the transport with a result, and the systems that send each type's
//! `ToClients<T>` / `ToServer<T>` messages (registered by `protocol.rs`),
//! failures written as [`SendFailed`].

use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemParam;

use crate::proto::{DeltaSent, DeltaSnapshot, SendError, Snapshot};

use super::messages::{
    NetworkMessage, Room, SendFailed, SendTarget, ToClients, ToServer, ZaoSendError,
};
use super::protocol::ZaoProtocol;
use super::{ZaoClient, ZaoServer};
use crate::proto::ClientId;

/// The server's sends, as a system parameter: the message is borrowed,
/// encoded once straight into the transport (no clone into the World, no
/// copy per target), and the result comes back at once.
///
/// ```
/// use bevy_ecs::prelude::*;
/// use zao::bevy::{Room, ZaoServerSender};
/// # #[derive(zao::Encode, zao::Decode, zao::NetMessage)]
/// # #[zao(id = 7)]
/// # struct Chat { text: String }
///
/// fn announce(mut sender: ZaoServerSender) {
///     let chat = Chat { text: "round over".into() };
///     const LOBBY: Room = Room::named("lobby");
///     if let Err(e) = sender.send(&chat, LOBBY) {
///         eprintln!("not sent: {e}");
///     }
/// }
/// ```
#[derive(SystemParam)]
pub struct ZaoServerSender<'w> {
    server: Option<ResMut<'w, ZaoServer>>,
    protocol: Res<'w, ZaoProtocol>,
}

impl ZaoServerSender<'_> {
    /// Sends `message` to `target` on its registered channel.
    ///
    /// # Errors
    /// [`ZaoSendError::NotRunning`] without a running server,
    /// or the transport's
    /// [`SendError`](crate::proto::SendError) (for one target: not
    /// connected, backlog full; for any: too large).
    pub fn send<T: NetworkMessage>(
        &mut self,
        message: &T,
        target: impl Into<SendTarget>,
    ) -> Result<(), ZaoSendError> {
        let server = self.server.as_mut().ok_or(ZaoSendError::NotRunning)?;
        server.send(&self.protocol, message, &target.into())
    }

    /// Sends a snapshot in datagram-sized chunks, each encoded once for
    /// every target; returns the number of chunks.
    ///
    /// # Errors
    /// As [`send`](Self::send).
    pub fn send_snapshot<T: NetworkMessage + Snapshot>(
        &mut self,
        snapshot: &T,
        target: impl Into<SendTarget>,
    ) -> Result<usize, ZaoSendError> {
        let server = self.server.as_mut().ok_or(ZaoSendError::NotRunning)?;
        server.send_snapshot(&self.protocol, snapshot, &target.into())
    }

    /// Sends a delta snapshot of a type registered with
    /// [`add_zao_delta_snapshot`](super::AppZaoExt::add_zao_delta_snapshot):
    /// each target gets it against the newest snapshot it acknowledged,
    /// encoded once per distinct baseline. Returns what was sent (encodes,
    /// keyframes, bytes).
    ///
    /// # Errors
    /// As [`send`](Self::send).
    pub fn send_delta_snapshot<T: NetworkMessage + DeltaSnapshot>(
        &mut self,
        snapshot: &T,
        target: impl Into<SendTarget>,
    ) -> Result<DeltaSent, ZaoSendError> {
        let server = self.server.as_mut().ok_or(ZaoSendError::NotRunning)?;
        server.send_delta_snapshot(&self.protocol, snapshot, &target.into())
    }

    /// Whether a server is running to send with.
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.server.is_some()
    }

    /// Puts `client` in `room` (see [`ZaoServer::join`]); does nothing
    /// without a running server.
    pub fn join(&mut self, room: &Room, client: ClientId) {
        if let Some(server) = self.server.as_mut() {
            server.join(room, client);
        }
    }

    /// Takes `client` out of `room` (see [`ZaoServer::leave`]).
    pub fn leave(&mut self, room: &Room, client: ClientId) {
        if let Some(server) = self.server.as_mut() {
            server.leave(room, client);
        }
    }

    /// Disconnects `client` with a reason it will see (see
    /// [`ZaoServer::kick`]).
    pub fn kick(&self, client: ClientId, reason: &str) {
        if let Some(server) = self.server.as_ref() {
            server.kick(client, reason);
        }
    }

    /// The running server, for the rest of what a system does beside
    /// sending (stats, identities, clients): a system cannot hold both a
    /// `ZaoServerSender` and a `ResMut<ZaoServer>`.
    pub fn server(&mut self) -> Option<&mut ZaoServer> {
        self.server.as_deref_mut()
    }
}

/// The client's sends, as a system parameter: see [`ZaoServerSender`].
#[derive(SystemParam)]
pub struct ZaoClientSender<'w> {
    client: Option<ResMut<'w, ZaoClient>>,
    protocol: Res<'w, ZaoProtocol>,
}

impl ZaoClientSender<'_> {
    /// Sends `message` to the server on its registered channel.
    ///
    /// # Errors
    /// [`ZaoSendError::NotRunning`] while not connected,
    /// or the transport's
    /// [`SendError`](crate::proto::SendError).
    pub fn send<T: NetworkMessage>(&mut self, message: &T) -> Result<(), ZaoSendError> {
        let client = self.client.as_mut().ok_or(ZaoSendError::NotRunning)?;
        client.send(&self.protocol, message)
    }

    /// Whether the client is connected.
    #[must_use]
    pub fn is_connected(&self) -> bool {
        self.client.as_ref().is_some_and(|c| c.is_connected())
    }
}

/// Sends this update's `ToClients<T>`; each failure becomes a
/// [`SendFailed`].
pub(super) fn send_to_clients<T: NetworkMessage>(
    server: Option<ResMut<ZaoServer>>,
    protocol: Res<ZaoProtocol>,
    mut outbox: MessageReader<ToClients<T>>,
    mut failed: MessageWriter<SendFailed>,
) {
    let Some(mut server) = server else {
        fail_all(outbox.read().count(), T::NAME, &mut failed);
        return;
    };
    for ToClients { target, message } in outbox.read() {
        if let Err(error) = server.send(&protocol, message, target) {
            report(T::NAME, error, &mut failed);
        }
    }
}

/// Sends this update's snapshots, chunked.
pub(super) fn send_snapshots<T: NetworkMessage + Snapshot>(
    server: Option<ResMut<ZaoServer>>,
    protocol: Res<ZaoProtocol>,
    mut outbox: MessageReader<ToClients<T>>,
    mut failed: MessageWriter<SendFailed>,
) {
    let Some(mut server) = server else {
        fail_all(outbox.read().count(), T::NAME, &mut failed);
        return;
    };
    for ToClients { target, message } in outbox.read() {
        if let Err(error) = server.send_snapshot(&protocol, message, target) {
            report(T::NAME, error, &mut failed);
        }
    }
}

/// Sends this update's `ToServer<T>`.
pub(super) fn send_to_server<T: NetworkMessage>(
    client: Option<ResMut<ZaoClient>>,
    protocol: Res<ZaoProtocol>,
    mut outbox: MessageReader<ToServer<T>>,
    mut failed: MessageWriter<SendFailed>,
) {
    let Some(mut client) = client else {
        fail_all(outbox.read().count(), T::NAME, &mut failed);
        return;
    };
    for ToServer(message) in outbox.read() {
        if let Err(error) = client.send(&protocol, message) {
            report(T::NAME, error, &mut failed);
        }
    }
}

fn fail_all(count: usize, name: &'static str, failed: &mut MessageWriter<SendFailed>) {
    for _ in 0..count {
        report(name, ZaoSendError::NotRunning, failed);
    }
}

/// A failed send is a message for game code, and a log line: debug when
/// routine (a slow client's full backlog, a peer not connected), warn when
/// it is this side's mistake (too large, not registered).
fn report(name: &'static str, error: ZaoSendError, failed: &mut MessageWriter<SendFailed>) {
    match &error {
        ZaoSendError::NotRunning
        | ZaoSendError::Transport(
            SendError::QueueFull | SendError::NotConnected | SendError::ClientNotConnected(_),
        ) => {
            tracing::debug!("zao: {name} not sent: {error}");
        }
        _ => tracing::warn!("zao: {name} not sent: {error}"),
    }
    failed.write(SendFailed {
        message: name,
        error,
    });
}
