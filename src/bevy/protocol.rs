//! The shared registration: server and client call the same
//! `add_zao_message`/`add_zao_snapshot` lines, which build the protocol both
//! sides compare at connect time, the Bevy messages, and the systems that
//! move each type.

use std::collections::HashMap;

use bevy_app::{App, PostUpdate, PreUpdate};
use bevy_ecs::prelude::*;

use crate::DecodeError;
use crate::proto::{Channel, ClientId, Direction, Protocol, Received, SendError, Snapshot};

use super::messages::{
    ClientConnected, ClientDisconnected, ClientRefused, Connected, Disconnected, FromClient,
    FromServer, NetworkMessage, ToClients, ToServer,
};
use super::set::{SendStep, ZaoSet};
use super::{ZaoClient, ZaoServer, client, server};

/// Decodes a received message from a client and writes it as a
/// `FromClient<T>`: one per registered type, found by id.
pub(crate) type ServerDecode = fn(&mut World, ClientId, &Received) -> Result<(), DecodeError>;
/// Decodes a received message from the server and writes it as a `FromServer<T>`.
pub(crate) type ClientDecode = fn(&mut World, &Received) -> Result<(), DecodeError>;

/// The type-erased receive path of one message id. Only the side that
/// receives the type has one: the transport has already refused a message
/// on the wrong side or channel.
#[derive(Clone, Copy, Default)]
struct Decoders {
    server: Option<ServerDecode>,
    client: Option<ClientDecode>,
}

/// The message types this app exchanges, built by [`AppZaoExt`]: the
/// [`Protocol`] the transport compares at connect time and how to decode
/// each id into its Bevy message.
#[derive(Resource, Default)]
pub struct ZaoProtocol {
    protocol: Protocol,
    decoders: HashMap<u32, Decoders>,
    started: bool,
}

impl core::fmt::Debug for ZaoProtocol {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ZaoProtocol")
            .field("protocol", &self.protocol)
            .field("started", &self.started)
            .finish_non_exhaustive()
    }
}

impl ZaoProtocol {
    /// The registrations so far; its [`hash`](Protocol::hash) is what a
    /// peer must match.
    #[must_use]
    pub fn protocol(&self) -> &Protocol {
        &self.protocol
    }

    pub(crate) fn server_decoder(&self, id: u32) -> Option<ServerDecode> {
        self.decoders.get(&id).and_then(|d| d.server)
    }

    pub(crate) fn client_decoder(&self, id: u32) -> Option<ClientDecode> {
        self.decoders.get(&id).and_then(|d| d.client)
    }

    pub(crate) fn channel(&self, id: u32) -> Option<Channel> {
        self.protocol.get(id).map(|e| e.channel)
    }

    /// The protocol a transport starts with; registering after this is a
    /// programming error (the peer would compare against a stale list).
    pub(crate) fn start(&mut self) -> Protocol {
        self.started = true;
        self.protocol.clone()
    }
}

/// Registers zao message types on an [`App`]. Server and client call the
/// same lines, in any order; a client whose registrations differ is refused
/// with the first differing message named ([`ClientRefused`] on the server,
/// [`Disconnected`] with `DisconnectReason::Refused` on the client).
///
/// Register before the app starts (before `App::run`, or `App::finish` when
/// you drive `App::update` yourself): that is when the transport starts
/// with the protocol.
pub trait AppZaoExt {
    /// Registers `T` on `channel` ([`Channel::Reliable`] or
    /// [`Channel::Unreliable`]), sent in `direction`. The receiving side
    /// reads `FromClient<T>` / `FromServer<T>`; the sending side writes
    /// `ToClients<T>` / `ToServer<T>`. Only the messages the direction allows
    /// exist: a system that asks for `MessageWriter<ToServer<T>>` of a
    /// server-to-client `T` fails when the app starts.
    ///
    /// # Panics
    /// If `channel` is [`Channel::Snapshot`] (use
    /// [`add_zao_snapshot`](Self::add_zao_snapshot)), if another type has
    /// `T`'s id, or if the app has already started its transport.
    fn add_zao_message<T: NetworkMessage>(
        &mut self,
        channel: Channel,
        direction: Direction,
    ) -> &mut Self;

    /// Registers snapshot type `T` on [`Channel::Snapshot`], server to
    /// clients (the only direction the transport sends snapshots). The
    /// server writes `ToClients<T>` like any message; each is split into
    /// datagram-sized chunks with [`ServerCore::send_snapshot`](crate::proto::ServerCore::send_snapshot),
    /// every chunk encoded once for all targets. Clients read one
    /// `FromServer<T>` per chunk, each a whole `T` holding some of the items;
    /// an older snapshot arriving after a newer one is dropped.
    ///
    /// # Panics
    /// As [`add_zao_message`](Self::add_zao_message).
    fn add_zao_snapshot<T: NetworkMessage + Snapshot>(&mut self) -> &mut Self;
}

impl AppZaoExt for App {
    fn add_zao_message<T: NetworkMessage>(
        &mut self,
        channel: Channel,
        direction: Direction,
    ) -> &mut Self {
        assert!(
            channel != Channel::Snapshot,
            "zao: {} is on Channel::Snapshot: register it with add_zao_snapshot",
            T::NAME
        );
        register::<T>(self, channel, direction);
        if direction.server_sends() {
            self.add_systems(PostUpdate, send_to_clients::<T>.in_set(SendStep::Messages));
        }
        if direction.client_sends() {
            self.add_systems(PostUpdate, send_to_server::<T>.in_set(SendStep::Messages));
        }
        self
    }

    fn add_zao_snapshot<T: NetworkMessage + Snapshot>(&mut self) -> &mut Self {
        register::<T>(self, Channel::Snapshot, Direction::ServerToClient);
        self.add_systems(PostUpdate, send_snapshots::<T>.in_set(SendStep::Messages))
    }
}

/// Sets up what every zao app has, once: the protocol resource, the
/// connection events, the receive systems and the flushes. Both sides' are
/// added (each does nothing without its transport), so plugins and
/// registrations may come in any order and one app may be a server and a
/// client at once.
pub(crate) fn init(app: &mut App) {
    if app.world().contains_resource::<ZaoProtocol>() {
        return;
    }
    app.init_resource::<ZaoProtocol>()
        .add_message::<ClientConnected>()
        .add_message::<ClientDisconnected>()
        .add_message::<ClientRefused>()
        .add_message::<Connected>()
        .add_message::<Disconnected>()
        .configure_sets(
            PostUpdate,
            (SendStep::Messages, SendStep::Flush)
                .chain()
                .in_set(ZaoSet::Send),
        )
        .add_systems(
            PreUpdate,
            (server::receive, client::receive).in_set(ZaoSet::Receive),
        )
        .add_systems(
            PostUpdate,
            (server::flush, client::flush).in_set(SendStep::Flush),
        );
}

fn register<T: NetworkMessage>(app: &mut App, channel: Channel, direction: Direction) {
    init(app);
    let mut zao = app.world_mut().resource_mut::<ZaoProtocol>();
    assert!(
        !zao.started,
        "zao: {} was registered after the transport started: register messages before App::run/App::finish",
        T::NAME
    );
    zao.protocol.add::<T>(channel, direction);
    let decoders = Decoders {
        server: direction
            .client_sends()
            .then_some(decode_from_client::<T> as ServerDecode),
        client: direction
            .server_sends()
            .then_some(decode_from_server::<T> as ClientDecode),
    };
    zao.decoders.insert(T::ID, decoders);
    if direction.client_sends() {
        app.add_message::<ToServer<T>>()
            .add_message::<FromClient<T>>();
    }
    if direction.server_sends() {
        app.add_message::<ToClients<T>>()
            .add_message::<FromServer<T>>();
    }
}

fn decode_from_client<T: NetworkMessage>(
    world: &mut World,
    client: ClientId,
    received: &Received,
) -> Result<(), DecodeError> {
    let message = received.decode::<T>()?;
    world.write_message(FromClient { client, message });
    Ok(())
}

fn decode_from_server<T: NetworkMessage>(
    world: &mut World,
    received: &Received,
) -> Result<(), DecodeError> {
    let message = received.decode::<T>()?;
    world.write_message(FromServer(message));
    Ok(())
}

/// Sends this update's `ToClients<T>`. `Server::send` encodes each message
/// once and shares its bytes between the targets.
fn send_to_clients<T: NetworkMessage>(
    server: Option<ResMut<ZaoServer>>,
    protocol: Res<ZaoProtocol>,
    mut outbox: MessageReader<ToClients<T>>,
) {
    let (Some(mut server), Some(channel)) = (server, protocol.channel(T::ID)) else {
        outbox.clear();
        return;
    };
    for ToClients { target, message } in outbox.read() {
        if let Err(e) = server
            .transport_mut()
            .send(target.target(), channel, message)
        {
            log_send_error(T::NAME, &e);
        }
    }
}

/// Sends this update's snapshots, chunked.
fn send_snapshots<T: NetworkMessage + Snapshot>(
    server: Option<ResMut<ZaoServer>>,
    mut outbox: MessageReader<ToClients<T>>,
) {
    let Some(mut server) = server else {
        outbox.clear();
        return;
    };
    for ToClients { target, message } in outbox.read() {
        if let Err(e) = server
            .transport_mut()
            .send_snapshot(target.target(), message)
        {
            log_send_error(T::NAME, &e);
        }
    }
}

/// Sends this update's `ToServer<T>`.
fn send_to_server<T: NetworkMessage>(
    client: Option<ResMut<ZaoClient>>,
    protocol: Res<ZaoProtocol>,
    mut outbox: MessageReader<ToServer<T>>,
) {
    let (Some(mut client), Some(channel)) = (client, protocol.channel(T::ID)) else {
        outbox.clear();
        return;
    };
    for ToServer(message) in outbox.read() {
        if let Err(e) = client.transport_mut().send(channel, message) {
            log_send_error(T::NAME, &e);
        }
    }
}

/// A failed send is either routine (a slow client's full backlog, a peer
/// not connected yet or any more: debug) or this side's mistake (too large,
/// not registered: warn).
fn log_send_error(name: &str, e: &SendError) {
    match e {
        SendError::QueueFull(_) | SendError::NotConnected(_) => {
            tracing::debug!("zao: {name} not sent: {e}");
        }
        _ => tracing::warn!("zao: {name} not sent: {e}"),
    }
}
