//! The server side: the [`ZaoServer`] resource, client entities, rooms,
//! and the systems that poll, flush and despawn.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Instant;

use bevy_ecs::prelude::*;

use crate::proto::{
    ClientId, ConnectionStats, DeltaSent, DeltaSnapshot, DisconnectReason, HandshakeStats,
    Identity, LocalLink, SendError, ServerCore, ServerEvent, Snapshot, Target,
};
use crate::quic::CertHash;

use super::messages::{
    ClientConnected, ClientDisconnected, ClientRefused, NetworkMessage, Room, SendTarget,
    ZaoSendError,
};
use super::protocol::ZaoProtocol;

/// What carries the server's connections.
pub(crate) enum ServerTransport {
    /// Real QUIC over UDP.
    Quic(Box<crate::quic::Server>),
    /// The simulated network ([`ZaoSimNetwork`](super::testing::ZaoSimNetwork)).
    #[cfg(feature = "sim")]
    Sim(Box<crate::sim::SimServer>),
}

impl ServerTransport {
    fn core(&self) -> &ServerCore {
        match self {
            Self::Quic(s) => s,
            #[cfg(feature = "sim")]
            Self::Sim(s) => s,
        }
    }

    fn core_mut(&mut self) -> &mut ServerCore {
        match self {
            Self::Quic(s) => s,
            #[cfg(feature = "sim")]
            Self::Sim(s) => s,
        }
    }
}

/// A connected client, as the server App sees it: one entity per client,
/// spawned when it connects and despawned the update it leaves. Attach
/// your per-player components to it; **despawning it disconnects the
/// client** (close code 4, "kicked").
#[derive(Component, Clone, Debug)]
pub struct ConnectedClient {
    /// Its id.
    pub id: ClientId,
    /// Its address ([`LOCAL_ADDR`](crate::proto::LOCAL_ADDR) for a listen
    /// server's own client).
    pub addr: SocketAddr,
    /// What the auth callback returned for it, if anything.
    pub identity: Option<Identity>,
}

/// A connected client's connection statistics (RTT, loss, bytes and
/// messages per second), refreshed every update in
/// [`ZaoSet::Receive`](super::ZaoSet::Receive).
#[derive(Component, Clone, Debug, Default, PartialEq)]
pub struct ClientStats(pub ConnectionStats);

/// A client the App has been told of.
#[derive(Clone, Debug)]
struct Known {
    entity: Entity,
    addr: SocketAddr,
}

/// Entities of clients gone this update, despawned after `Update`.
#[derive(Resource, Debug, Default)]
pub(crate) struct Leavers(Vec<Entity>);

/// The running server: who is connected, their entities and stats, rooms,
/// kicks, and sending with a result. Exists while
/// [`ZaoServerState::Running`](super::ZaoServerState::Running).
#[derive(Resource)]
pub struct ZaoServer {
    transport: ServerTransport,
    /// In-memory clients of this App (a listen server's own player).
    locals: Vec<LocalLink>,
    /// Reused between updates: the events of one poll.
    inbox: Vec<ServerEvent>,
    /// The clients the app has been told of: connected and not yet gone.
    clients: BTreeMap<ClientId, Known>,
    rooms: BTreeMap<Room, BTreeSet<ClientId>>,
    /// Reused: a room's or a list's members as the transport takes them.
    members: Vec<ClientId>,
}

impl core::fmt::Debug for ZaoServer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ZaoServer")
            .field("addr", &self.local_addr())
            .field("clients", &self.clients.len())
            .field("rooms", &self.rooms)
            .finish_non_exhaustive()
    }
}

impl ZaoServer {
    pub(crate) fn new(transport: ServerTransport) -> Self {
        Self {
            transport,
            locals: Vec::new(),
            inbox: Vec::new(),
            clients: BTreeMap::new(),
            rooms: BTreeMap::new(),
            members: Vec::new(),
        }
    }

    pub(crate) fn core(&self) -> &ServerCore {
        self.transport.core()
    }

    /// The address the server listens on (the real port when bound to
    /// port 0); `None` on the simulated network.
    #[must_use]
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match &self.transport {
            ServerTransport::Quic(s) => Some(s.local_addr()),
            #[cfg(feature = "sim")]
            ServerTransport::Sim(_) => None,
        }
    }

    /// The SHA-256 of the server's certificate, for clients to pin;
    /// `None` on the simulated network.
    #[must_use]
    pub fn certificate_hash(&self) -> Option<CertHash> {
        match &self.transport {
            ServerTransport::Quic(s) => Some(s.certificate_hash()),
            #[cfg(feature = "sim")]
            ServerTransport::Sim(_) => None,
        }
    }

    /// The connected clients, in id order, as the app has been told of them:
    /// each has had its [`ClientConnected`] and not yet its
    /// [`ClientDisconnected`] (so it agrees with the messages of this
    /// update, not with the network threads' view of this instant).
    pub fn clients(&self) -> impl ExactSizeIterator<Item = ClientId> + '_ {
        self.clients.keys().copied()
    }

    /// A connected client's entity.
    #[must_use]
    pub fn entity(&self, client: ClientId) -> Option<Entity> {
        self.clients.get(&client).map(|k| k.entity)
    }

    /// A connected client's address.
    #[must_use]
    pub fn addr(&self, client: ClientId) -> Option<SocketAddr> {
        self.clients.get(&client).map(|k| k.addr)
    }

    /// Statistics of one client's connection (RTT, loss, bytes, messages).
    #[must_use]
    pub fn stats(&self, client: ClientId) -> Option<ConnectionStats> {
        self.core().stats(client)
    }

    /// What the admission has done: handshakes pending, connected clients,
    /// attempts accepted, retried and refused.
    #[must_use]
    pub fn handshakes(&self) -> HandshakeStats {
        self.core().handshakes()
    }

    /// Disconnects a client with a reason it will see (close code 4); the
    /// server then reads a [`ClientDisconnected`] for it. Despawning its
    /// entity does the same.
    pub fn kick(&self, client: ClientId, reason: &str) {
        self.core().disconnect(client, reason);
    }

    /// Puts `client` in `room` (created on first use). A client leaves
    /// every room when it disconnects.
    pub fn join(&mut self, room: &Room, client: ClientId) {
        match self.rooms.get_mut(room) {
            Some(members) => {
                members.insert(client);
            }
            None => {
                self.rooms.insert(room.clone(), BTreeSet::from([client]));
            }
        }
    }

    /// Takes `client` out of `room`; an empty room is forgotten.
    pub fn leave(&mut self, room: &Room, client: ClientId) {
        if let Some(members) = self.rooms.get_mut(room) {
            members.remove(&client);
            if members.is_empty() {
                self.rooms.remove(room);
            }
        }
    }

    /// A room's members, in id order.
    pub fn room(&self, room: &Room) -> impl Iterator<Item = ClientId> + '_ {
        self.rooms.get(room).into_iter().flatten().copied()
    }

    /// The rooms with members.
    pub fn rooms(&self) -> impl Iterator<Item = &Room> + '_ {
        self.rooms.keys()
    }

    /// Encodes `message` once and queues it for `target` on its registered
    /// channel: see [`ServerCore::send`].
    ///
    /// # Errors
    /// [`SendError::NotRegistered`] if the server may not send `T`,
    /// [`ZaoSendError::Transport`] as [`ServerCore::send`] says.
    pub fn send<T: NetworkMessage>(
        &mut self,
        protocol: &ZaoProtocol,
        message: &T,
        target: &SendTarget,
    ) -> Result<(), ZaoSendError> {
        let channel = protocol
            .channel_of(T::ID)
            .ok_or(ZaoSendError::Transport(SendError::NotRegistered(T::ID)))?;
        self.send_with(protocol, message, target, |core, target| {
            core.send(target, channel, message)
        })
    }

    /// Sends a snapshot in datagram-sized chunks, each encoded once for
    /// every target: see [`ServerCore::send_snapshot`]. Returns the
    /// number of chunks.
    ///
    /// # Errors
    /// As [`send`](Self::send).
    pub fn send_snapshot<T: NetworkMessage + Snapshot>(
        &mut self,
        protocol: &ZaoProtocol,
        snapshot: &T,
        target: &SendTarget,
    ) -> Result<usize, ZaoSendError> {
        protocol
            .channel_of(T::ID)
            .ok_or(ZaoSendError::Transport(SendError::NotRegistered(T::ID)))?;
        self.send_with(protocol, snapshot, target, |core, target| {
            core.send_snapshot(target, snapshot)
        })
    }

    /// Sends a delta snapshot (docs/WIRE.md §12.10): each target gets it
    /// encoded against the newest snapshot of `T` it acknowledged, once per
    /// distinct baseline; see [`ServerCore::send_delta_snapshot`].
    ///
    /// # Errors
    /// As [`send`](Self::send).
    pub fn send_delta_snapshot<T: NetworkMessage + DeltaSnapshot>(
        &mut self,
        protocol: &ZaoProtocol,
        snapshot: &T,
        target: &SendTarget,
    ) -> Result<DeltaSent, ZaoSendError> {
        protocol
            .channel_of(T::ID)
            .ok_or(ZaoSendError::Transport(SendError::NotRegistered(T::ID)))?;
        self.send_with(protocol, snapshot, target, |core, target| {
            core.send_delta_snapshot(target, snapshot)
        })
    }

    /// What every send shares once its caller checked the registration:
    /// the traffic log, `target` resolved against lists and rooms, then
    /// `send` on the core.
    fn send_with<T: NetworkMessage, R>(
        &mut self,
        protocol: &ZaoProtocol,
        message: &T,
        target: &SendTarget,
        send: impl FnOnce(&mut ServerCore, Target<'_>) -> Result<R, SendError>,
    ) -> Result<R, ZaoSendError> {
        trace_send(protocol, T::ID, message, target);
        let target = self.target(target);
        let Self {
            transport, members, ..
        } = self;
        send(transport.core_mut(), resolve(target, members)).map_err(ZaoSendError::from)
    }

    /// Fills `members` for a list or a room; the rest map straight over.
    fn target(&mut self, target: &SendTarget) -> Resolved {
        match target {
            SendTarget::All => Resolved::All,
            SendTarget::One(c) => Resolved::One(*c),
            SendTarget::AllExcept(c) => Resolved::AllExcept(*c),
            SendTarget::List(list) => {
                self.members.clear();
                self.members.extend_from_slice(list);
                Resolved::Members
            }
            SendTarget::Room(room) => {
                self.members.clear();
                if let Some(m) = self.rooms.get(room) {
                    self.members.extend(m.iter().copied());
                }
                Resolved::Members
            }
        }
    }

    /// Adds a client that lives in this App (a listen server's own
    /// player): see [`ServerCore::connect_local`].
    pub(crate) fn connect_local(&mut self, token: Option<Vec<u8>>) -> crate::proto::ClientCore {
        let (client, link) = self.core().connect_local(token);
        self.locals.push(link);
        client
    }

    /// Moves whatever the in-memory clients and the server have for each
    /// other.
    fn drive_locals(&mut self) {
        let now = Instant::now();
        for link in &mut self.locals {
            link.drive(now);
        }
        self.locals.retain(|l| !l.is_closed());
    }

    /// Closes every connection; the transport finishes the closes (the
    /// simulated network's server is stopped by its `Sim`).
    pub(crate) fn shutdown(mut self) {
        self.drive_locals();
        match self.transport {
            // Dropped: the closes finish in the background, the frame goes on.
            ServerTransport::Quic(s) => drop(s),
            #[cfg(feature = "sim")]
            ServerTransport::Sim(s) => s.close_all("server shutting down"),
        }
        let now = Instant::now();
        for link in &mut self.locals {
            link.drive(now);
        }
    }

    /// The clients the App knows of, with their entities, for a stop.
    pub(crate) fn known(&self) -> Vec<(ClientId, Entity)> {
        self.clients.iter().map(|(c, k)| (*c, k.entity)).collect()
    }
}

/// A target with the member list borrowed from the server.
#[derive(Clone, Copy)]
enum Resolved {
    All,
    One(ClientId),
    AllExcept(ClientId),
    Members,
}

fn resolve(target: Resolved, members: &[ClientId]) -> Target<'_> {
    match target {
        Resolved::All => Target::All,
        Resolved::One(c) => Target::One(c),
        Resolved::AllExcept(c) => Target::AllExcept(c),
        Resolved::Members => Target::List(members),
    }
}

/// Logs an outgoing message as readable text at trace level (target
/// `zao::traffic`), only when that level is on.
fn trace_send<T: NetworkMessage>(
    protocol: &ZaoProtocol,
    id: u32,
    message: &T,
    target: &SendTarget,
) {
    if tracing::enabled!(target: "zao::traffic", tracing::Level::TRACE) {
        let mut bytes = bytes::BytesMut::new();
        crate::encode_message_to(message, &mut bytes);
        debug_assert_eq!(id, T::ID);
        tracing::trace!(
            target: "zao::traffic",
            "server → {target:?}: {}",
            protocol.readable(&bytes)
        );
    }
}

/// Polls the server: connection events (client entities spawned and
/// marked leaving), stats, and every message, decoded by id into its
/// `FromClient<T>`.
pub(crate) fn receive(world: &mut World) {
    let Some(mut zao) = world.get_resource_mut::<ZaoServer>() else {
        return;
    };
    let zao = &mut *zao;
    zao.drive_locals();
    let mut inbox = core::mem::take(&mut zao.inbox);
    let core = zao.transport.core_mut();
    inbox.extend(core::iter::from_fn(|| core.poll_event()));
    for event in inbox.drain(..) {
        match event {
            ServerEvent::Connected {
                client,
                addr,
                identity,
            } => {
                let entity = world
                    .spawn((
                        ConnectedClient {
                            id: client,
                            addr,
                            identity: identity.clone(),
                        },
                        ClientStats::default(),
                    ))
                    .id();
                if let Some(mut zao) = world.get_resource_mut::<ZaoServer>() {
                    zao.clients.insert(client, Known { entity, addr });
                }
                world.write_message(ClientConnected {
                    client,
                    entity,
                    addr,
                    identity,
                });
            }
            ServerEvent::Refused { addr, reason } => {
                world.write_message(ClientRefused { addr, reason });
            }
            ServerEvent::Disconnected { client, reason } => {
                disconnected(world, client, reason);
            }
            ServerEvent::Message {
                client, message, ..
            } => {
                let Some(entity) = world
                    .get_resource::<ZaoServer>()
                    .and_then(|z| z.entity(client))
                else {
                    continue;
                };
                let id = message.id();
                let Some(protocol) = world.get_resource::<ZaoProtocol>() else {
                    continue;
                };
                if tracing::enabled!(target: "zao::traffic", tracing::Level::TRACE) {
                    tracing::trace!(
                        target: "zao::traffic",
                        "{client} → server: {}",
                        protocol.readable(message.message())
                    );
                }
                match protocol.server_decoder(id) {
                    Some(decode) => {
                        if let Err(e) = decode(world, client, entity, &message) {
                            // A peer's bad bytes: debug, so a client cannot
                            // flood the logs.
                            tracing::debug!(client = client.0, id, "bad message: {e}");
                        }
                    }
                    None => tracing::debug!(client = client.0, id, "no receiver for message"),
                }
            }
        }
    }
    let Some(mut zao) = world.get_resource_mut::<ZaoServer>() else {
        return;
    };
    zao.inbox = inbox;
    let stats: Vec<(Entity, ConnectionStats)> = zao
        .clients
        .iter()
        .filter_map(|(c, k)| Some((k.entity, zao.core().stats(*c)?)))
        .collect();
    for (entity, s) in stats {
        if let Some(mut c) = world.get_mut::<ClientStats>(entity) {
            c.0 = s;
        }
    }
}

/// A client is gone: forgotten, out of its rooms, its entity marked for
/// the end-of-update despawn, and a [`ClientDisconnected`].
pub(crate) fn disconnected(world: &mut World, client: ClientId, reason: DisconnectReason) {
    let Some(mut zao) = world.get_resource_mut::<ZaoServer>() else {
        return;
    };
    let Some(known) = zao.clients.remove(&client) else {
        return;
    };
    for members in zao.rooms.values_mut() {
        members.remove(&client);
    }
    zao.rooms.retain(|_, m| !m.is_empty());
    leave(world, client, known.entity, reason);
}

/// Marks a gone client's entity for the end-of-update despawn and tells
/// game code.
pub(crate) fn leave(world: &mut World, client: ClientId, entity: Entity, reason: DisconnectReason) {
    world.get_resource_or_init::<Leavers>().0.push(entity);
    world.write_message(ClientDisconnected {
        client,
        entity,
        reason,
    });
}

/// Despawns the entities of clients that left this update (after game
/// code has read their components in `Update`).
pub(crate) fn despawn_leavers(world: &mut World) {
    let Some(mut leavers) = world.get_resource_mut::<Leavers>() else {
        return;
    };
    let leaving = core::mem::take(&mut leavers.0);
    for entity in leaving {
        if let Ok(e) = world.get_entity_mut(entity) {
            e.despawn();
        }
    }
}

/// Game code despawned a client's entity (or removed its
/// [`ConnectedClient`]): disconnect the client, unless it is already gone.
pub(crate) fn kick_on_despawn(
    event: On<bevy_ecs::lifecycle::Remove<ConnectedClient>>,
    clients: Query<&ConnectedClient>,
    server: Option<Res<ZaoServer>>,
) {
    let (Ok(client), Some(server)) = (clients.get(event.entity), server) else {
        return;
    };
    if server.entity(client.id) == Some(event.entity) {
        server.kick(client.id, "kicked");
    }
}

/// Sends the unreliable messages packed this update, and carries them to
/// in-memory clients.
pub(crate) fn flush(server: Option<ResMut<ZaoServer>>) {
    if let Some(mut server) = server {
        server.core().flush();
        server.drive_locals();
    }
}
