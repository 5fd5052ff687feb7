//! A server App and client Apps in one process, over loopback QUIC, for
//! tests: yours as much as ours.
//!
//! ```no_run
//! use std::time::Duration;
//! use bevy_app::App;
//! use zao::bevy::testing::{ServerClients, collect, collected};
//! use zao::bevy::{AppZaoExt, ClientConnected};
//! # use zao::{Decode, Encode, Message};
//! # #[derive(Clone, Debug, PartialEq, Encode, Decode, Message)]
//! # #[zao(id = 7)]
//! # struct Chat { text: String }
//!
//! fn protocol(app: &mut App) {
//!     app.add_zao_message::<Chat>(zao::proto::Channel::RELIABLE, zao::proto::Direction::Both);
//! }
//!
//! let mut net = ServerClients::new(2, protocol);
//! collect::<ClientConnected>(&mut net.server);
//! let ids = net.connect_all(Duration::from_secs(10));
//! assert_eq!(collected::<ClientConnected>(&net.server).len(), ids.len());
//! ```

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use bevy_app::{App, Last};
use bevy_ecs::message::Message;
use bevy_ecs::prelude::*;

use crate::quic::ClientId;

use super::{ZaoClient, ZaoClientPlugin, ZaoServer, ZaoServerPlugin};

/// A server App and any number of client Apps pinned to it, stepped
/// together with `App::update`. Each App is `App::new()` with the plugin and
/// the protocol function; add your own systems to the public Apps.
#[derive(Debug)]
pub struct ServerClients {
    /// The server App, already started (its [`ZaoServer`] exists).
    pub server: App,
    /// The client Apps, in the order they were added.
    pub clients: Vec<App>,
    protocol: fn(&mut App),
}

impl ServerClients {
    /// A server on `127.0.0.1`, port 0, with a new self-signed certificate,
    /// and `clients` client Apps pinned to it; every App registers its
    /// messages with `protocol`. The clients start connecting; see
    /// [`connect_all`](Self::connect_all).
    ///
    /// # Panics
    /// If the server or a client cannot start.
    #[must_use]
    pub fn new(clients: usize, protocol: fn(&mut App)) -> Self {
        let plugin = ZaoServerPlugin {
            bind: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            ..ZaoServerPlugin::default()
        };
        Self::with_server(plugin, clients, protocol)
    }

    /// As [`new`](Self::new), with your server plugin (limits, auth, a
    /// link conditioner).
    ///
    /// # Panics
    /// If the server or a client cannot start.
    #[must_use]
    pub fn with_server(plugin: ZaoServerPlugin, clients: usize, protocol: fn(&mut App)) -> Self {
        let mut server = App::new();
        server.add_plugins(plugin);
        protocol(&mut server);
        start(&mut server);
        let mut net = Self {
            server,
            clients: Vec::new(),
            protocol,
        };
        for _ in 0..clients {
            net.add_client();
        }
        net
    }

    /// A client plugin pinned to this server, to build a client App of
    /// your own (or to pass, changed, to [`add_client_with`](Self::add_client_with)).
    #[must_use]
    pub fn client_plugin(&self) -> ZaoClientPlugin {
        let server = self.server();
        ZaoClientPlugin::pinned(server.local_addr(), server.certificate_hash())
    }

    /// Adds a client App with the shared protocol; returns its index.
    ///
    /// # Panics
    /// If the client cannot start.
    pub fn add_client(&mut self) -> usize {
        self.add_client_with(self.client_plugin(), self.protocol)
    }

    /// Adds a client App with its own plugin and protocol (another
    /// protocol, to test a refusal; a token); returns its index.
    ///
    /// # Panics
    /// If the client cannot start.
    pub fn add_client_with(&mut self, plugin: ZaoClientPlugin, protocol: fn(&mut App)) -> usize {
        let mut app = App::new();
        app.add_plugins(plugin);
        protocol(&mut app);
        start(&mut app);
        self.clients.push(app);
        self.clients.len() - 1
    }

    /// The server resource.
    ///
    /// # Panics
    /// If a test removed it.
    #[must_use]
    pub fn server(&self) -> &ZaoServer {
        self.server
            .world()
            .get_resource::<ZaoServer>()
            .unwrap_or_else(|| panic!("the server App has no ZaoServer"))
    }

    /// Client `i`'s resource.
    ///
    /// # Panics
    /// If there is no client `i`.
    #[must_use]
    pub fn client(&self, i: usize) -> &ZaoClient {
        self.clients
            .get(i)
            .and_then(|app| app.world().get_resource::<ZaoClient>())
            .unwrap_or_else(|| panic!("no client {i}"))
    }

    /// Client `i`'s App.
    ///
    /// # Panics
    /// If there is no client `i`.
    pub fn client_app(&mut self, i: usize) -> &mut App {
        self.clients
            .get_mut(i)
            .unwrap_or_else(|| panic!("no client {i}"))
    }

    /// One `update` of the server, then of every client.
    pub fn update(&mut self) {
        self.server.update();
        self.clients.iter_mut().for_each(App::update);
    }

    /// Updates every App, a millisecond apart (the network runs on its own
    /// threads), until `done` says so or `timeout` passes. Returns whether
    /// `done` did.
    pub fn run_until(
        &mut self,
        timeout: Duration,
        mut done: impl FnMut(&mut Self) -> bool,
    ) -> bool {
        let end = Instant::now() + timeout;
        loop {
            self.update();
            if done(self) {
                return true;
            }
            if Instant::now() >= end {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Updates until every client App has read its [`Connected`](super::Connected)
    /// and the server App its [`ClientConnected`](super::ClientConnected);
    /// returns the ids, in client order.
    ///
    /// # Panics
    /// If that takes longer than `timeout`, with each client's state.
    pub fn connect_all(&mut self, timeout: Duration) -> Vec<ClientId> {
        let connected = self.run_until(timeout, |net| {
            (0..net.clients.len()).all(|i| {
                net.client(i)
                    .id()
                    .is_some_and(|id| net.server().addr(id).is_some())
            })
        });
        let states: Vec<_> = (0..self.clients.len())
            .map(|i| self.client(i).state().clone())
            .collect();
        assert!(
            connected,
            "clients not connected in {timeout:?}: {states:?}"
        );
        (0..self.clients.len())
            .filter_map(|i| self.client(i).id())
            .collect()
    }
}

/// Starts an App's plugins as `App::run` would, without running it.
fn start(app: &mut App) {
    app.finish();
    app.cleanup();
}

/// Every `M` an App has seen, kept by [`collect`]: Bevy drops a message
/// after two updates, a test wants all of them.
#[derive(Resource, Debug)]
pub struct Collected<M: Message>(pub Vec<M>);

/// Keeps every `M` the App sees from now on in [`Collected<M>`] (a system
/// in `Last`, after everything that writes messages).
///
/// # Panics
/// When the App next updates, if `M` is not a registered message.
pub fn collect<M: Message + Clone>(app: &mut App) -> &mut App {
    app.insert_resource(Collected::<M>(Vec::new()))
        .add_systems(Last, keep::<M>)
}

fn keep<M: Message + Clone>(mut messages: MessageReader<M>, mut kept: ResMut<Collected<M>>) {
    kept.0.extend(messages.read().cloned());
}

/// The `M`s [`collect`] has kept so far (none if it was not called).
#[must_use]
pub fn collected<M: Message>(app: &App) -> &[M] {
    app.world()
        .get_resource::<Collected<M>>()
        .map_or(&[], |c| c.0.as_slice())
}
