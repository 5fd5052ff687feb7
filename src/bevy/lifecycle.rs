//! Starting, stopping, connecting and leaving at runtime, from any system,
//! as commands; every failure is a Bevy message with a typed reason.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};

use bevy_ecs::prelude::*;
use bevy_state::state::{NextState, State};

use crate::proto::{CloseCode, ClosedBy, DisconnectReason};
use crate::quic::{
    AuthCallback, CertHash, Certificate, ClientConfig, ConditionerConfig, Limits, ServerConfig,
    ServerTrust, StartError,
};

use super::client::{ClientTransport, ZaoClient, set_state};
use super::messages::{ConnectFailed, ServerStartFailed, ServerStarted, ServerStopped};
use super::protocol::ZaoProtocol;
use super::server::{ServerTransport, ZaoServer, leave};
use super::state::{ZaoClientState, ZaoServerState};

/// How to start a server: chosen when it starts, not when the App is
/// built.
#[derive(Clone)]
#[non_exhaustive]
pub struct ZaoServerSettings {
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
    /// Start refusing new clients as draining, until
    /// [`ServerCore::set_draining`](crate::proto::ServerCore::set_draining)`(false)`:
    /// a fleet's server admits no one before it is allocated
    /// (docs/FLEET.md; the fleet plugin sets it). Default `false`.
    pub draining: bool,
}

impl Default for ZaoServerSettings {
    fn default() -> Self {
        Self {
            bind: (Ipv4Addr::LOCALHOST, 4433).into(),
            certificate: None,
            limits: Limits::default(),
            auth: None,
            worker_threads: 2,
            conditioner: None,
            draining: false,
        }
    }
}

impl ZaoServerSettings {
    /// A server bound to `bind`, with the other defaults.
    #[must_use]
    pub fn bind(bind: SocketAddr) -> Self {
        Self {
            bind,
            ..Self::default()
        }
    }
}

impl core::fmt::Debug for ZaoServerSettings {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ZaoServerSettings")
            .field("bind", &self.bind)
            .field(
                "certificate",
                &self.certificate.as_ref().map(Certificate::sha256),
            )
            .field("limits", &self.limits)
            .field("auth", &self.auth.is_some())
            .field("worker_threads", &self.worker_threads)
            .field("conditioner", &self.conditioner)
            .field("draining", &self.draining)
            .finish()
    }
}

/// How to reach a server.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ZaoClientSettings {
    /// The server's address. Default `127.0.0.1:4433`.
    pub server: SocketAddr,
    /// The name the server's certificate is for (`"localhost"`, the
    /// default, for a development certificate).
    pub server_name: String,
    /// How to trust the server: the pinned SHA-256 of its certificate, or
    /// CA roots. The default pins nothing, so it trusts no server: set it,
    /// e.g. with [`pinned`](Self::pinned).
    pub trust: ServerTrust,
    /// A token for the server's auth callback.
    pub token: Option<Vec<u8>>,
    /// Resource limits (the client uses the per-connection ones).
    pub limits: Limits,
    /// Simulated link conditions on outgoing packets (tests, demos).
    pub conditioner: Option<ConditionerConfig>,
}

impl Default for ZaoClientSettings {
    fn default() -> Self {
        Self {
            server: (Ipv4Addr::LOCALHOST, 4433).into(),
            server_name: "localhost".to_owned(),
            trust: ServerTrust::PinnedSha256(Vec::new()),
            token: None,
            limits: Limits::default(),
            conditioner: None,
        }
    }
}

impl ZaoClientSettings {
    /// A client of `server` that pins its certificate's SHA-256 (what
    /// [`ZaoServer::certificate_hash`] returns and the server examples
    /// print).
    #[must_use]
    pub fn pinned(server: SocketAddr, certificate: CertHash) -> Self {
        Self {
            server,
            trust: ServerTrust::PinnedSha256(vec![certificate]),
            ..Self::default()
        }
    }

    /// The same, with a token for the server's auth callback.
    #[must_use]
    pub fn with_token(mut self, token: impl Into<Vec<u8>>) -> Self {
        self.token = Some(token.into());
        self
    }
}

/// The plugin's lifecycle as commands, usable from any system:
///
/// ```
/// use bevy_ecs::prelude::*;
/// use zao::bevy::{ZaoClientSettings, ZaoCommandsExt};
/// # use zao::proto::CertHash;
///
/// #[derive(Resource)]
/// struct Menu { server: std::net::SocketAddr, pin: CertHash }
///
/// /// The "Join" button of a menu.
/// fn join(mut commands: Commands, menu: Res<Menu>) {
///     commands.connect_zao(ZaoClientSettings::pinned(menu.server, menu.pin));
/// }
/// ```
pub trait ZaoCommandsExt {
    /// Starts the App's server: the state goes to
    /// [`ZaoServerState::Starting`] and, in the next update, to `Running`
    /// with a [`ServerStarted`], or back to `Stopped` with a
    /// [`ServerStartFailed`] (the address in use, a bad certificate,
    /// invalid limits). Ignored while a server is starting or running.
    fn start_zao_server(&mut self, settings: ZaoServerSettings);

    /// Stops the App's server: every client is closed (each gets its
    /// [`ClientDisconnected`](super::ClientDisconnected)), then a
    /// [`ServerStopped`], and the state goes to `Stopped`.
    fn stop_zao_server(&mut self);

    /// Connects to a server, closing the App's current connection if any:
    /// the state goes to [`ZaoClientState::Connecting`], then `Connected`
    /// with a [`Connected`](super::Connected), or `Disconnected` with a
    /// [`Disconnected`](super::Disconnected) (refused, timed out). A
    /// connection that cannot even begin is a [`ConnectFailed`]. Call it
    /// again after a drop to reconnect.
    fn connect_zao(&mut self, settings: ZaoClientSettings);

    /// Connects this App's client to this App's own running server, in
    /// memory (a listen server's host player): no socket, no TLS, its own
    /// client id, and to game code on both sides a client like any other.
    /// `token` goes to the auth callback. Without a running server, a
    /// [`ConnectFailed`].
    fn connect_zao_local(&mut self, token: Option<Vec<u8>>);

    /// Leaves the server; a [`Disconnected`](super::Disconnected) follows.
    fn disconnect_zao(&mut self);
}

impl ZaoCommandsExt for Commands<'_, '_> {
    fn start_zao_server(&mut self, settings: ZaoServerSettings) {
        self.queue(move |world: &mut World| request_start(world, settings));
    }

    fn stop_zao_server(&mut self) {
        self.queue(stop_server);
    }

    fn connect_zao(&mut self, settings: ZaoClientSettings) {
        self.queue(move |world: &mut World| connect(world, Connect::Remote(Box::new(settings))));
    }

    fn connect_zao_local(&mut self, token: Option<Vec<u8>>) {
        self.queue(move |world: &mut World| connect(world, Connect::Local(token)));
    }

    fn disconnect_zao(&mut self) {
        self.queue(|world: &mut World| {
            if let Some(mut client) = world.get_resource_mut::<ZaoClient>() {
                client.disconnect("left");
            }
        });
    }
}

/// A start asked for, done in the next update's `PreUpdate`.
#[derive(Resource)]
pub(crate) struct PendingStart(ZaoServerSettings);

fn server_state(world: &World) -> ZaoServerState {
    world
        .get_resource::<State<ZaoServerState>>()
        .map_or(ZaoServerState::Stopped, |s| *s.get())
}

fn set_server_state(world: &mut World, state: ZaoServerState) {
    if let Some(mut next) = world.get_resource_mut::<NextState<ZaoServerState>>() {
        next.set(state);
    }
}

pub(crate) fn request_start(world: &mut World, settings: ZaoServerSettings) {
    if world.contains_resource::<ZaoServer>()
        || world.contains_resource::<PendingStart>()
        || server_state(world) != ZaoServerState::Stopped
    {
        tracing::warn!("zao: start_zao_server while a server is starting or running: ignored");
        return;
    }
    world.insert_resource(PendingStart(settings));
    set_server_state(world, ZaoServerState::Starting);
}

/// Starts the server asked for, once the state is `Starting`.
pub(crate) fn start_pending(world: &mut World) {
    if server_state(world) != ZaoServerState::Starting {
        return;
    }
    let Some(PendingStart(mut settings)) = world.remove_resource::<PendingStart>() else {
        return;
    };
    // A fleet's server not (or no longer) allocated admits no one, from
    // before the first connection is accepted; a server restarted while
    // allocated admits at once.
    #[cfg(feature = "fleet")]
    {
        settings.draining |= world
            .get_resource::<super::fleet::ZaoFleet>()
            .is_some_and(super::fleet::ZaoFleet::closed_to_players);
    }
    let protocol = world.get_resource_or_init::<ZaoProtocol>().start();
    match start_transport(world, settings, protocol) {
        Ok(transport) => {
            let server = ZaoServer::new(transport);
            let addr = server.local_addr();
            let certificate_hash = server.certificate_hash();
            tracing::debug!(?addr, certificate = ?certificate_hash, "zao server started");
            world.insert_resource(server);
            set_server_state(world, ZaoServerState::Running);
            world.write_message(ServerStarted {
                addr,
                certificate_hash,
            });
        }
        Err(error) => {
            tracing::warn!("zao: the server could not start: {error}");
            set_server_state(world, ZaoServerState::Stopped);
            world.write_message(ServerStartFailed { error });
        }
    }
}

fn start_transport(
    world: &mut World,
    settings: ZaoServerSettings,
    protocol: crate::proto::Protocol,
) -> Result<ServerTransport, StartError> {
    #[cfg(feature = "sim")]
    if let Some(net) = world.get_resource::<super::sim_network::ZaoSimNetwork>() {
        let mut config = crate::sim::SimServerConfig::new(protocol);
        config.limits = settings.limits;
        config.auth = settings.auth;
        config.draining = settings.draining;
        return net
            .lock()
            .start_server(config)
            .map(|s| ServerTransport::Sim(Box::new(s)));
    }
    let _ = world;
    let certificate = match settings.certificate {
        Some(certificate) => certificate,
        None => Certificate::self_signed(&["localhost"])?,
    };
    let mut config = ServerConfig::new(settings.bind, certificate, protocol);
    config.limits = settings.limits;
    config.auth = settings.auth;
    config.worker_threads = settings.worker_threads;
    config.conditioner = settings.conditioner;
    config.draining = settings.draining;
    crate::quic::Server::start(config).map(|s| ServerTransport::Quic(Box::new(s)))
}

fn stop_server(world: &mut World) {
    world.remove_resource::<PendingStart>();
    let Some(server) = world.remove_resource::<ZaoServer>() else {
        if server_state(world) == ZaoServerState::Starting {
            set_server_state(world, ZaoServerState::Stopped);
        }
        return;
    };
    let known = server.known();
    server.shutdown();
    #[cfg(feature = "sim")]
    if let Some(net) = world.get_resource::<super::sim_network::ZaoSimNetwork>() {
        net.lock().stop_server();
    }
    for (client, entity) in known {
        leave(
            world,
            client,
            entity,
            DisconnectReason::Closed {
                by: ClosedBy::Local,
                code: CloseCode::Normal,
                reason: "server stopped".to_owned(),
            },
        );
    }
    set_server_state(world, ZaoServerState::Stopped);
    world.write_message(ServerStopped);
}

enum Connect {
    Remote(Box<ZaoClientSettings>),
    Local(Option<Vec<u8>>),
}

fn connect(world: &mut World, how: Connect) {
    if let Some(old) = world.remove_resource::<ZaoClient>() {
        old.shutdown();
    }
    let protocol = world.get_resource_or_init::<ZaoProtocol>().start();
    let transport = match how {
        Connect::Local(token) => match world.get_resource_mut::<ZaoServer>() {
            Some(mut server) => Ok(ClientTransport::Local(server.connect_local(token))),
            None => Err(StartError::Io(io::Error::new(
                io::ErrorKind::NotConnected,
                "no server is running in this App",
            ))),
        },
        Connect::Remote(settings) => connect_transport(world, *settings, protocol),
    };
    match transport {
        Ok(transport) => {
            world.insert_resource(ZaoClient::new(transport));
            set_state(world, ZaoClientState::Connecting);
        }
        Err(error) => {
            tracing::warn!("zao: could not connect: {error}");
            set_state(world, ZaoClientState::Disconnected);
            world.write_message(ConnectFailed { error });
        }
    }
}

fn connect_transport(
    world: &mut World,
    settings: ZaoClientSettings,
    protocol: crate::proto::Protocol,
) -> Result<ClientTransport, StartError> {
    #[cfg(feature = "sim")]
    if let Some(net) = world.get_resource::<super::sim_network::ZaoSimNetwork>() {
        let link = world
            .get_resource::<super::sim_network::ZaoSimLink>()
            .cloned()
            .unwrap_or_default();
        let mut config = crate::sim::SimClientConfig::new(protocol);
        config.limits = settings.limits;
        config.token = settings.token;
        config.up = link.up;
        config.down = link.down;
        return net.lock().connect(config).map(ClientTransport::Sim);
    }
    let _ = world;
    let mut config = ClientConfig::new(
        settings.server,
        settings.server_name,
        settings.trust,
        protocol,
    );
    config.token = settings.token;
    config.limits = settings.limits;
    config.conditioner = settings.conditioner;
    crate::quic::Client::connect(config).map(ClientTransport::Quic)
}
