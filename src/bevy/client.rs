//! The client side: the plugin, the [`ZaoClient`] resource, and the systems
//! that poll and flush it.

use std::net::SocketAddr;

use bevy_app::{App, Plugin};
use bevy_ecs::prelude::*;

use crate::quic::{
    CertHash, Client, ClientConfig, ClientEvent, ClientId, ConditionerConfig, ConnectionStats,
    DisconnectReason, Limits, ServerTrust,
};

use super::messages::{Connected, Disconnected};
use super::protocol::{ZaoProtocol, init};

/// Connects to a zao server when the app starts (in [`Plugin::finish`],
/// after every registration) and inserts the [`ZaoClient`] resource.
/// Register the same messages as the server with
/// [`AppZaoExt`](super::AppZaoExt), write `ToServer<T>`, read
/// `FromServer<T>`; the outcome of connecting arrives as [`Connected`] or
/// [`Disconnected`].
///
/// If you drive the app with `App::update` rather than `App::run`, call
/// `App::finish` and `App::cleanup` first, as `App::run` does.
#[derive(Clone, Debug)]
pub struct ZaoClientPlugin {
    /// The server's address. Default `127.0.0.1:4433`.
    pub server: SocketAddr,
    /// The name the server's certificate is for (`"localhost"`, the
    /// default, for a development certificate).
    pub server_name: String,
    /// How to trust the server: the pinned SHA-256 of its certificate, or CA
    /// roots. The default pins nothing, so it trusts no server: set it, e.g.
    /// with [`pinned`](Self::pinned).
    pub trust: ServerTrust,
    /// A token for the server's auth callback.
    pub token: Option<Vec<u8>>,
    /// Resource limits (the client uses the per-connection ones).
    pub limits: Limits,
    /// Simulated link conditions on outgoing packets (tests, demos).
    pub conditioner: Option<ConditionerConfig>,
}

impl Default for ZaoClientPlugin {
    fn default() -> Self {
        Self {
            server: (std::net::Ipv4Addr::LOCALHOST, 4433).into(),
            server_name: "localhost".to_owned(),
            trust: ServerTrust::PinnedSha256(Vec::new()),
            token: None,
            limits: Limits::default(),
            conditioner: None,
        }
    }
}

impl ZaoClientPlugin {
    /// A client of `server` that pins its certificate's SHA-256 (what
    /// [`ZaoServer::certificate_hash`](super::ZaoServer::certificate_hash)
    /// returns and the server example prints).
    #[must_use]
    pub fn pinned(server: SocketAddr, certificate: CertHash) -> Self {
        Self {
            server,
            trust: ServerTrust::PinnedSha256(vec![certificate]),
            ..Self::default()
        }
    }
}

impl Plugin for ZaoClientPlugin {
    fn build(&self, app: &mut App) {
        init(app);
    }

    /// Starts connecting with every registration made so far.
    ///
    /// # Panics
    /// If the client cannot start (no local socket, a TLS setup rustls
    /// refuses). A server that cannot be reached or refuses is not a panic:
    /// it is a [`Disconnected`] message.
    fn finish(&self, app: &mut App) {
        let protocol = app.world_mut().resource_mut::<ZaoProtocol>().start();
        let mut config = ClientConfig::new(
            self.server,
            self.server_name.clone(),
            self.trust.clone(),
            protocol,
        );
        config.token.clone_from(&self.token);
        config.limits = self.limits.clone();
        config.conditioner = self.conditioner;
        let client = Client::connect(config)
            .unwrap_or_else(|e| panic!("zao: the client could not start: {e}"));
        app.insert_resource(ZaoClient {
            client,
            state: ConnectionState::Connecting,
            inbox: Vec::new(),
        });
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

/// The client's connection: its state and stats, and leaving. Messages go
/// through `ToServer<T>` and `FromServer<T>`, not through this.
#[derive(Resource, Debug)]
pub struct ZaoClient {
    client: Client,
    state: ConnectionState,
    /// Reused between updates: the events of one poll.
    inbox: Vec<ClientEvent>,
}

impl ZaoClient {
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

    /// Connection statistics (RTT, loss, bytes, messages), once connected.
    #[must_use]
    pub fn stats(&self) -> Option<ConnectionStats> {
        self.client.stats()
    }

    /// Leaves the server with a reason it will see in its
    /// `ClientDisconnected`; a [`Disconnected`] follows here.
    pub fn disconnect(&mut self, reason: &str) {
        self.client.disconnect(reason);
    }

    pub(crate) fn transport_mut(&mut self) -> &mut Client {
        &mut self.client
    }
}

/// Polls the client: connection events and every message, decoded by id
/// into its `FromServer<T>`.
pub(crate) fn receive(world: &mut World) {
    let Some(mut zao) = world.get_resource_mut::<ZaoClient>() else {
        return;
    };
    let zao = &mut *zao;
    let mut inbox = core::mem::take(&mut zao.inbox);
    inbox.extend(core::iter::from_fn(|| zao.client.poll_event()));
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
                world.write_message(Connected { client });
            }
            ClientEvent::Disconnected { reason } => {
                world.write_message(Disconnected { reason });
            }
            ClientEvent::Message { message, .. } => {
                let id = message.id();
                let decode = world
                    .get_resource::<ZaoProtocol>()
                    .and_then(|p| p.client_decoder(id));
                match decode.map(|decode| decode(world, &message)) {
                    Some(Ok(())) => {}
                    Some(Err(e)) => tracing::debug!(id, "bad message from the server: {e}"),
                    None => tracing::debug!(id, "no receiver for message"),
                }
            }
        }
    }
    if let Some(mut zao) = world.get_resource_mut::<ZaoClient>() {
        zao.inbox = inbox;
    }
}

/// Sends the unreliable messages packed this update.
pub(crate) fn flush(client: Option<Res<ZaoClient>>) {
    if let Some(client) = client {
        client.client.flush();
    }
}
