//! The server side: the plugin, the [`ZaoServer`] resource, and the systems
//! that poll and flush it.

use core::fmt;
use std::collections::BTreeMap;
use std::net::SocketAddr;

use bevy_app::{App, Plugin};
use bevy_ecs::prelude::*;

use crate::quic::{
    AuthCallback, CertHash, Certificate, ClientId, ConditionerConfig, ConnectionStats, Limits,
    Server, ServerConfig, ServerEvent,
};

use super::messages::{ClientConnected, ClientDisconnected, ClientRefused};
use super::protocol::{ZaoProtocol, init};

/// Serves the app's zao protocol: starts a [`Server`] when the app starts
/// (in [`Plugin::finish`], after every registration) and inserts it as the
/// [`ZaoServer`] resource. Register messages with
/// [`AppZaoExt`](super::AppZaoExt), read `FromClient<T>`, write
/// `ToClients<T>`.
///
/// If you drive the app with `App::update` rather than `App::run`, call
/// `App::finish` and `App::cleanup` first, as `App::run` does.
#[derive(Clone)]
pub struct ZaoServerPlugin {
    /// Address to bind. Default `127.0.0.1:4433`; use `0.0.0.0:4433` (or
    /// `[::]:4433`) to serve other machines, port 0 for any free port.
    pub bind: SocketAddr,
    /// The certificate to present. `None` (the default): a new self-signed
    /// development certificate for `localhost`, whose hash clients pin
    /// ([`ZaoServer::certificate_hash`]).
    pub certificate: Option<Certificate>,
    /// Resource limits.
    pub limits: Limits,
    /// Checks each client's token; `None` admits every client whose
    /// protocol matches.
    pub auth: Option<AuthCallback>,
    /// Runtime threads for quinn and the connection tasks.
    pub worker_threads: usize,
    /// Simulated link conditions on outgoing packets (tests, demos).
    pub conditioner: Option<ConditionerConfig>,
}

impl Default for ZaoServerPlugin {
    fn default() -> Self {
        Self {
            bind: (std::net::Ipv4Addr::LOCALHOST, 4433).into(),
            certificate: None,
            limits: Limits::default(),
            auth: None,
            worker_threads: 2,
            conditioner: None,
        }
    }
}

impl fmt::Debug for ZaoServerPlugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZaoServerPlugin")
            .field("bind", &self.bind)
            .field(
                "certificate",
                &self.certificate.as_ref().map(|c| c.sha256()),
            )
            .field("limits", &self.limits)
            .field("auth", &self.auth.is_some())
            .field("worker_threads", &self.worker_threads)
            .field("conditioner", &self.conditioner)
            .finish()
    }
}

impl Plugin for ZaoServerPlugin {
    fn build(&self, app: &mut App) {
        init(app);
    }

    /// Starts the server with every registration made so far.
    ///
    /// # Panics
    /// If the certificate cannot be made or the server cannot start (the
    /// address is in use, say): a server that cannot serve is a startup
    /// error. Start a [`Server`] yourself to handle that differently.
    fn finish(&self, app: &mut App) {
        let protocol = app.world_mut().resource_mut::<ZaoProtocol>().start();
        let certificate = match &self.certificate {
            Some(certificate) => certificate.clone(),
            None => Certificate::self_signed(&["localhost"])
                .unwrap_or_else(|e| panic!("zao: no development certificate: {e}")),
        };
        let mut config = ServerConfig::new(self.bind, certificate, protocol);
        config.limits = self.limits.clone();
        config.auth.clone_from(&self.auth);
        config.worker_threads = self.worker_threads;
        config.conditioner = self.conditioner;
        let server = Server::start(config)
            .unwrap_or_else(|e| panic!("zao: the server could not start on {}: {e}", self.bind));
        tracing::debug!(
            addr = %server.local_addr(),
            certificate = %server.certificate_hash(),
            "zao server started"
        );
        app.insert_resource(ZaoServer {
            server,
            inbox: Vec::new(),
            clients: BTreeMap::new(),
        });
    }
}

/// The running server: who is connected, their stats, kicks. Messages go
/// through `ToClients<T>` and `FromClient<T>`, not through this.
#[derive(Resource, Debug)]
pub struct ZaoServer {
    server: Server,
    /// Reused between updates: the events of one poll.
    inbox: Vec<ServerEvent>,
    /// The clients the app has been told of: connected and not yet gone.
    clients: BTreeMap<ClientId, SocketAddr>,
}

impl ZaoServer {
    /// The address the server listens on (the real port when bound to 0).
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// The SHA-256 of the server's certificate, for clients to pin.
    #[must_use]
    pub fn certificate_hash(&self) -> CertHash {
        self.server.certificate_hash()
    }

    /// The connected clients, in id order, as the app has been told of them:
    /// each has had its [`ClientConnected`] and not yet its
    /// [`ClientDisconnected`] (so it agrees with the messages of this
    /// update, not with the network threads' view of this instant).
    pub fn clients(&self) -> impl ExactSizeIterator<Item = ClientId> + '_ {
        self.clients.keys().copied()
    }

    /// A connected client's address.
    #[must_use]
    pub fn addr(&self, client: ClientId) -> Option<SocketAddr> {
        self.clients.get(&client).copied()
    }

    /// Statistics of one client's connection (RTT, loss, bytes, messages).
    #[must_use]
    pub fn stats(&self, client: ClientId) -> Option<ConnectionStats> {
        self.server.stats(client)
    }

    /// Disconnects a client with a reason it will see (close code 4); the
    /// server then reads a [`ClientDisconnected`] for it.
    pub fn kick(&self, client: ClientId, reason: &str) {
        self.server.disconnect(client, reason);
    }

    pub(crate) fn transport_mut(&mut self) -> &mut Server {
        &mut self.server
    }
}

/// Polls the server: connection events and every message, decoded by id
/// into its `FromClient<T>`.
pub(crate) fn receive(world: &mut World) {
    let Some(mut zao) = world.get_resource_mut::<ZaoServer>() else {
        return;
    };
    let zao = &mut *zao;
    let mut inbox = core::mem::take(&mut zao.inbox);
    inbox.extend(core::iter::from_fn(|| zao.server.poll_event()));
    for event in &inbox {
        match event {
            ServerEvent::Connected { client, addr, .. } => {
                zao.clients.insert(*client, *addr);
            }
            ServerEvent::Disconnected { client, .. } => {
                zao.clients.remove(client);
            }
            _ => {}
        }
    }
    for event in inbox.drain(..) {
        match event {
            ServerEvent::Connected { client, addr, .. } => {
                world.write_message(ClientConnected { client, addr });
            }
            ServerEvent::Refused { addr, reason } => {
                world.write_message(ClientRefused { addr, reason });
            }
            ServerEvent::Disconnected { client, reason } => {
                world.write_message(ClientDisconnected { client, reason });
            }
            ServerEvent::Message {
                client, message, ..
            } => {
                let id = message.id();
                let decode = world
                    .get_resource::<ZaoProtocol>()
                    .and_then(|p| p.server_decoder(id));
                match decode.map(|decode| decode(world, client, &message)) {
                    Some(Ok(())) => {}
                    // A peer's bad bytes: debug, so a client cannot flood the logs.
                    Some(Err(e)) => tracing::debug!(client = client.0, id, "bad message: {e}"),
                    None => tracing::debug!(client = client.0, id, "no receiver for message"),
                }
            }
        }
    }
    if let Some(mut zao) = world.get_resource_mut::<ZaoServer>() {
        zao.inbox = inbox;
    }
}

/// Sends the unreliable messages packed this update.
pub(crate) fn flush(server: Option<Res<ZaoServer>>) {
    if let Some(server) = server {
        server.server.flush();
    }
}
