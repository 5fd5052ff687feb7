//! The shared registration: server and client call the same
//! `add_zao_channel` / `add_zao_message` / `add_zao_snapshot` lines, which
//! build the protocol both sides compare at connect time, the Bevy
//! messages, and the systems that move each type (the receive side's
//! decoders here, the send systems beside the senders in `sender.rs`).

use std::collections::HashMap;

use bevy_app::{App, PostUpdate, PreUpdate};
use bevy_ecs::prelude::*;

use crate::DecodeError;
use crate::proto::{
    Channel, ChannelKind, ClientId, DeltaSnapshot, Direction, JitterConfig, Protocol, Received,
    Snapshot,
};

use super::messages::{FromClient, FromServer, NetworkMessage, ToClients, ToServer};
use super::plugin::init;
use super::sender::{send_snapshots, send_to_clients, send_to_server};
use super::set::{SendStep, ZaoSet};
use super::snapshots::{SnapshotApplied, ZaoSnapshots, receive_delta};

/// Decodes a received message from a client and writes it as a
/// `FromClient<T>`: one per registered type, found by id.
pub(crate) type ServerDecode =
    fn(&mut World, ClientId, Entity, &Received) -> Result<(), DecodeError>;
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

/// The channels and message types this app exchanges, built by
/// [`AppZaoExt`]: the [`Protocol`] the transport compares at connect time
/// and how to decode each id into its Bevy message.
#[derive(Resource, Default)]
pub struct ZaoProtocol {
    protocol: Protocol,
    decoders: HashMap<u32, Decoders>,
    started: bool,
    /// Renders messages for trace-level logs.
    #[cfg(feature = "inspect")]
    inspector: Option<crate::inspect::Inspector>,
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

    /// The channel message `id` is registered on.
    #[must_use]
    pub fn channel_of(&self, id: u32) -> Option<Channel> {
        self.protocol.get(id).map(|e| e.channel)
    }

    /// The protocol a transport starts with. Registering after this is a
    /// programming error (the peer would compare against a stale list).
    pub(crate) fn start(&mut self) -> Protocol {
        if !self.started {
            self.started = true;
            #[cfg(feature = "inspect")]
            {
                self.inspector = Some(crate::inspect::Inspector::from_protocol(&self.protocol));
            }
        }
        self.protocol.clone()
    }

    /// `message` as readable text, for a trace-level log line.
    #[cfg(feature = "inspect")]
    pub(crate) fn readable(&self, message: &[u8]) -> String {
        match &self.inspector {
            Some(inspector) => inspector
                .to_text(message)
                .unwrap_or_else(|e| format!("<{} bytes: {e}>", message.len())),
            None => format!("<{} bytes>", message.len()),
        }
    }

    /// `message` as readable text, for a trace-level log line.
    #[cfg(not(feature = "inspect"))]
    #[allow(clippy::unused_self)]
    pub(crate) fn readable(&self, message: &[u8]) -> String {
        format!("<{} bytes>", message.len())
    }
}

/// A channel named in a registration: one of the defaults
/// ([`Channel::RELIABLE`], [`Channel::UNRELIABLE`]) or the name given to
/// [`AppZaoExt::add_zao_channel`].
pub trait ChannelName {
    /// The channel in `protocol`, if it declares it.
    fn resolve(&self, protocol: &Protocol) -> Option<Channel>;
}

impl ChannelName for Channel {
    fn resolve(&self, protocol: &Protocol) -> Option<Channel> {
        protocol.channel(*self).map(|_| *self)
    }
}

impl ChannelName for &str {
    fn resolve(&self, protocol: &Protocol) -> Option<Channel> {
        protocol.channel_named(self)
    }
}

/// Registers channels and message types on an [`App`]. Server and client
/// call the same lines in the same order; a client whose registrations
/// differ is refused with the first difference named
/// ([`ClientRefused`](super::ClientRefused) on the server,
/// [`Disconnected`](super::Disconnected) with `DisconnectReason::Refused`
/// on the client).
///
/// Register before the transport starts (before the first
/// [`start_zao_server`](super::ZaoCommandsExt::start_zao_server) or
/// [`connect_zao`](super::ZaoCommandsExt::connect_zao) is applied).
///
/// ```
/// use bevy_app::App;
/// use zao::bevy::{AppZaoExt, ChannelKind, Direction, ZaoClientPlugin};
/// # #[derive(zao::Encode, zao::Decode, zao::NetMessage)]
/// # #[zao(id = 7)]
/// # struct Chat { text: String }
/// # #[derive(zao::Encode, zao::Decode, zao::NetMessage)]
/// # #[zao(id = 8)]
/// # struct MapChunk { bytes: Vec<u8> }
///
/// let mut app = App::new();
/// app.add_plugins(ZaoClientPlugin::default())
///     // Chat on a stream of its own, first when the link is congested.
///     .add_zao_channel_with_priority("chat", ChannelKind::ReliableOrdered, 10)
///     .add_zao_channel("map", ChannelKind::ReliableOrdered)
///     .add_zao_message::<Chat>("chat", Direction::Both)
///     .add_zao_message::<MapChunk>("map", Direction::ServerToClient);
/// ```
pub trait AppZaoExt {
    /// Declares a channel named `name` of `kind`, priority 0.
    ///
    /// # Panics
    /// If the name is taken, or the transport has started.
    fn add_zao_channel(&mut self, name: &str, kind: ChannelKind) -> &mut Self;

    /// Declares a channel with a priority: when the link is congested, a
    /// channel of higher priority sends first.
    ///
    /// # Panics
    /// As [`add_zao_channel`](Self::add_zao_channel).
    fn add_zao_channel_with_priority(
        &mut self,
        name: &str,
        kind: ChannelKind,
        priority: i32,
    ) -> &mut Self;

    /// Registers `T` on `channel` (a [`Channel`] or a declared channel's
    /// name), sent in `direction`. The receiving side reads
    /// `FromClient<T>` / `FromServer<T>`; the sending side writes
    /// `ToClients<T>` / `ToServer<T>` or sends with
    /// [`ZaoServerSender`](super::ZaoServerSender) / [`ZaoClientSender`](super::ZaoClientSender).
    /// Only the messages the direction allows exist: a system that asks for
    /// `MessageWriter<ToServer<T>>` of a server-to-client `T` fails when
    /// the app starts.
    ///
    /// # Panics
    /// If the channel is not declared or is a snapshot channel (use
    /// [`add_zao_snapshot`](Self::add_zao_snapshot)), if another type has
    /// `T`'s id, or if the transport has started.
    fn add_zao_message<T: NetworkMessage>(
        &mut self,
        channel: impl ChannelName,
        direction: Direction,
    ) -> &mut Self;

    /// Registers snapshot type `T` on [`Channel::SNAPSHOT`], server to
    /// clients (the only direction the transport sends snapshots). The
    /// server writes `ToClients<T>` or calls
    /// [`ZaoServerSender::send_snapshot`](super::ZaoServerSender::send_snapshot); each
    /// is split into datagram-sized chunks, every chunk encoded once for
    /// all targets. Clients read one `FromServer<T>` per chunk, each a
    /// whole `T` holding some of the items; an older snapshot arriving
    /// after a newer one is dropped.
    ///
    /// # Panics
    /// As [`add_zao_message`](Self::add_zao_message).
    fn add_zao_snapshot<T: NetworkMessage + Snapshot>(&mut self) -> &mut Self;

    /// Registers delta snapshot type `T` on [`Channel::SNAPSHOT`], server
    /// to clients (docs/WIRE.md §12.10). The server sends it with
    /// [`ZaoServerSender::send_delta_snapshot`](super::ZaoServerSender::send_delta_snapshot):
    /// each client gets it encoded against the newest snapshot it
    /// acknowledged, clients sharing a baseline share one encode. Each
    /// client App gets a [`ZaoSnapshots<T>`](super::ZaoSnapshots) resource
    /// (applied chunks, acknowledgements, and a jitter buffer set up with
    /// `jitter`, for interpolated states) and a
    /// [`SnapshotApplied<T>`](super::SnapshotApplied) message per applied
    /// chunk. `T` also travels whole, as with
    /// [`add_zao_snapshot`](Self::add_zao_snapshot).
    ///
    /// # Panics
    /// As [`add_zao_message`](Self::add_zao_message).
    fn add_zao_delta_snapshot<T>(&mut self, jitter: JitterConfig) -> &mut Self
    where
        T: NetworkMessage + DeltaSnapshot,
        T::Item: Clone + Send + Sync;
}

impl AppZaoExt for App {
    fn add_zao_channel(&mut self, name: &str, kind: ChannelKind) -> &mut Self {
        self.add_zao_channel_with_priority(name, kind, 0)
    }

    fn add_zao_channel_with_priority(
        &mut self,
        name: &str,
        kind: ChannelKind,
        priority: i32,
    ) -> &mut Self {
        init(self);
        let mut zao = self.world_mut().resource_mut::<ZaoProtocol>();
        assert!(
            !zao.started,
            "zao: channel {name:?} was declared after the transport started"
        );
        zao.protocol.add_channel_with_priority(name, kind, priority);
        self
    }

    fn add_zao_message<T: NetworkMessage>(
        &mut self,
        channel: impl ChannelName,
        direction: Direction,
    ) -> &mut Self {
        init(self);
        let zao = self.world().resource::<ZaoProtocol>();
        let channel = channel
            .resolve(&zao.protocol)
            .unwrap_or_else(|| panic!("zao: {} names a channel not declared", T::NAME));
        assert!(
            zao.protocol.channel(channel).map(|c| c.kind) != Some(ChannelKind::Snapshot),
            "zao: {} is on a snapshot channel: register it with add_zao_snapshot",
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
        init(self);
        register::<T>(self, Channel::SNAPSHOT, Direction::ServerToClient);
        self.add_systems(PostUpdate, send_snapshots::<T>.in_set(SendStep::Messages))
    }

    fn add_zao_delta_snapshot<T>(&mut self, jitter: JitterConfig) -> &mut Self
    where
        T: NetworkMessage + DeltaSnapshot,
        T::Item: Clone + Send + Sync,
    {
        self.add_zao_snapshot::<T>()
            .insert_resource(ZaoSnapshots::<T>::new(jitter))
            .add_message::<SnapshotApplied<T>>()
            .add_systems(
                PreUpdate,
                receive_delta::<T>
                    .after(super::client::receive)
                    .in_set(ZaoSet::Receive),
            )
    }
}

fn register<T: NetworkMessage>(app: &mut App, channel: Channel, direction: Direction) {
    let mut zao = app.world_mut().resource_mut::<ZaoProtocol>();
    assert!(
        !zao.started,
        "zao: {} was registered after the transport started: register messages before starting",
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
    entity: Entity,
    received: &Received,
) -> Result<(), DecodeError> {
    let message = received.decode::<T>()?;
    world.write_message(FromClient {
        client,
        entity,
        message,
    });
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
