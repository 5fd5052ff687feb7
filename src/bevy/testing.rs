//! Deterministic tests of Bevy Apps, yours as much as ours: a server App
//! and client Apps stepped together over zao's simulated network
//! ([`zao::sim`](crate::sim): the real QUIC state machine on a virtual
//! clock), each client over a link of its own. No sockets, no sleeps: a
//! seed gives the same run every time.
//!
//! The Apps are ordinary: the plugins, your registrations and systems.
//! What makes them simulated is a [`ZaoSimNetwork`] resource (and a
//! [`ZaoSimLink`] on a client), which the lifecycle commands use instead of
//! QUIC sockets, so `start_zao_server`, `connect_zao` and reconnects in
//! your systems work here unchanged.
//!
//! ```
//! use std::time::Duration;
//! use bevy_app::App;
//! use zao::bevy::testing::{ZaoTestNet, collect, collected};
//! use zao::bevy::{AppZaoExt, ClientConnected, Direction, FromClient, ToServer};
//! use zao::sim::LinkSpec;
//! # use zao::{Decode, Encode, NetMessage};
//! # #[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
//! # #[zao(id = 7)]
//! # struct Chat { text: String }
//!
//! fn protocol(app: &mut App) {
//!     app.add_zao_message::<Chat>(zao::proto::Channel::RELIABLE, Direction::Both);
//! }
//!
//! let mut net = ZaoTestNet::new(7, protocol);
//! net.add_client(LinkSpec::l2());
//! collect::<FromClient<Chat>>(&mut net.server);
//! net.connect_all(Duration::from_secs(10));
//! net.client_app(0).world_mut().write_message(ToServer(Chat { text: "hi".into() }));
//! assert!(net.run_until(Duration::from_secs(5), |net| {
//!     !collected::<FromClient<Chat>>(&net.server).is_empty()
//! }));
//! ```

use std::time::Duration;

use bevy_app::{App, Last};
use bevy_ecs::message::Message;
use bevy_ecs::prelude::*;

use crate::proto::ClientId;
use crate::sim::LinkSpec;

pub use super::sim_network::{ZaoSimLink, ZaoSimNetwork};

use super::lifecycle::{ZaoClientSettings, ZaoServerSettings};
use super::plugin::{ZaoClientPlugin, ZaoServerPlugin};
use super::{ZaoClient, ZaoServer, ZaoServerState};
use bevy_state::state::State;

/// A server App and client Apps on one simulated network, stepped
/// together: each [`update`](Self::update) runs the network for
/// [`step`](Self::step) of virtual time, then updates the server App, then
/// every client App.
#[derive(Debug)]
pub struct ZaoTestNet {
    /// The network.
    pub net: ZaoSimNetwork,
    /// The server App: its server started at launch ([`new`](Self::new),
    /// [`with_server`](Self::with_server)) or by its own systems
    /// ([`with_server_app`](Self::with_server_app)), unless the start
    /// failed (see [`ServerStartFailed`](super::ServerStartFailed)).
    pub server: App,
    /// The client Apps, in the order they were added.
    pub clients: Vec<App>,
    /// Virtual time per update. Default 10 ms.
    pub step: Duration,
    protocol: fn(&mut App),
}

impl ZaoTestNet {
    /// A network seeded with `seed` and a server App that registers its
    /// messages with `protocol` and starts serving at launch.
    #[must_use]
    pub fn new(seed: u64, protocol: fn(&mut App)) -> Self {
        Self::with_server(seed, ZaoServerSettings::default(), protocol)
    }

    /// As [`new`](Self::new), with the server's settings (limits, auth;
    /// the address and certificate are the simulation's).
    #[must_use]
    pub fn with_server(seed: u64, settings: ZaoServerSettings, protocol: fn(&mut App)) -> Self {
        Self::with_server_app(seed, protocol, move |app| {
            app.add_plugins(ZaoServerPlugin::start_at_launch(settings));
            protocol(app);
        })
    }

    /// A network seeded with `seed` whose server App `build` sets up as a
    /// game does: its plugins (a [`ZaoServerPlugin`] without
    /// `start_at_launch` leaves starting to the game's own systems, whose
    /// `start_zao_server` then binds on this network), registrations,
    /// systems and resources. Clients from [`add_client`](Self::add_client)
    /// register with `protocol`.
    #[must_use]
    pub fn with_server_app(
        seed: u64,
        protocol: fn(&mut App),
        build: impl FnOnce(&mut App),
    ) -> Self {
        let net = ZaoSimNetwork::new(seed);
        let mut server = App::new();
        server.insert_resource(net.clone());
        build(&mut server);
        start(&mut server);
        // A start asked for in an update binds in the next, and the state
        // reads Running in the one after: a few updates, so that clients
        // added next find it serving (a game whose "Host" button waits
        // longer starts it later, in `update`).
        for _ in 0..8 {
            let running = server
                .world()
                .get_resource::<State<ZaoServerState>>()
                .is_some_and(|s| *s.get() == ZaoServerState::Running);
            if running {
                break;
            }
            server.update();
        }
        Self {
            net,
            server,
            clients: Vec::new(),
            step: Duration::from_millis(10),
            protocol,
        }
    }

    /// A client App on the network over `link` (both ways), with the
    /// server's protocol, connecting at launch; returns its index.
    pub fn add_client(&mut self, link: LinkSpec) -> usize {
        self.add_client_with(
            ZaoSimLink::both(link),
            ZaoClientPlugin::connect_at_launch(ZaoClientSettings::default()),
            self.protocol,
        )
    }

    /// A client App with its own link, plugin (a token, limits, no launch
    /// connection) and `setup`: the registrations (another protocol, to
    /// test a refusal) and whatever else the App needs before its plugins
    /// finish (a game's plugins, systems and per-client resources, such as
    /// a bot's name); returns its index.
    pub fn add_client_with(
        &mut self,
        link: ZaoSimLink,
        plugin: ZaoClientPlugin,
        setup: impl FnOnce(&mut App),
    ) -> usize {
        let mut app = App::new();
        app.insert_resource(self.net.clone())
            .insert_resource(link)
            .add_plugins(plugin);
        setup(&mut app);
        start(&mut app);
        self.clients.push(app);
        self.clients.len() - 1
    }

    /// Virtual time since the network started.
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        self.net.lock().elapsed()
    }

    /// Runs the network for one step, then updates the server App and
    /// every client App.
    pub fn update(&mut self) {
        let step = self.step;
        self.net.lock().run_for(step);
        self.server.update();
        self.clients.iter_mut().for_each(App::update);
    }

    /// Updates for `duration` of virtual time.
    pub fn run_for(&mut self, duration: Duration) {
        let end = self.elapsed() + duration;
        while self.elapsed() < end {
            self.update();
        }
    }

    /// Updates until `done` says so or `limit` of virtual time passes;
    /// whether `done` did.
    pub fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&mut Self) -> bool) -> bool {
        let end = self.elapsed() + limit;
        loop {
            self.update();
            if done(self) {
                return true;
            }
            if self.elapsed() >= end {
                return false;
            }
        }
    }

    /// Updates until every client App is connected and the server App has
    /// its entity; returns the ids, in client order.
    ///
    /// # Panics
    /// If that takes longer than `limit` of virtual time, with each
    /// client's state.
    pub fn connect_all(&mut self, limit: Duration) -> Vec<ClientId> {
        let connected = self.run_until(limit, |net| {
            (0..net.clients.len()).all(|i| {
                net.try_client(i)
                    .and_then(ZaoClient::id)
                    .is_some_and(|id| net.try_server().is_some_and(|s| s.entity(id).is_some()))
            })
        });
        let states: Vec<_> = (0..self.clients.len())
            .map(|i| self.try_client(i).map(|c| c.state().clone()))
            .collect();
        assert!(connected, "clients not connected in {limit:?}: {states:?}");
        (0..self.clients.len())
            .filter_map(|i| self.try_client(i).and_then(ZaoClient::id))
            .collect()
    }

    /// The server resource, if the server runs.
    #[must_use]
    pub fn try_server(&self) -> Option<&ZaoServer> {
        self.server.world().get_resource::<ZaoServer>()
    }

    /// The server resource.
    ///
    /// # Panics
    /// If the server is not running.
    #[must_use]
    pub fn server(&self) -> &ZaoServer {
        self.try_server()
            .unwrap_or_else(|| panic!("the server App has no running server"))
    }

    /// Client `i`'s resource, if it has connected at least once.
    #[must_use]
    pub fn try_client(&self, i: usize) -> Option<&ZaoClient> {
        self.clients.get(i)?.world().get_resource::<ZaoClient>()
    }

    /// Client `i`'s resource.
    ///
    /// # Panics
    /// If there is no client `i` or it never connected.
    #[must_use]
    pub fn client(&self, i: usize) -> &ZaoClient {
        self.try_client(i)
            .unwrap_or_else(|| panic!("client {i} has no connection"))
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

    /// Changes client `i`'s current connection's links (a blackhole to
    /// force a drop, a worse link mid-game). A later connection of the
    /// App takes its [`ZaoSimLink`].
    ///
    /// # Panics
    /// If client `i` has no connection on the network.
    pub fn set_link(&mut self, i: usize, up: LinkSpec, down: LinkSpec) {
        let node = self
            .client(i)
            .sim_node()
            .unwrap_or_else(|| panic!("client {i} is not on the simulated network"));
        self.net.lock().set_links(node, up, down);
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

/// The `M`s [`collect`] has kept so far.
///
/// # Panics
/// If [`collect`] was not called for `M` on this App: an empty list would
/// make an assertion that nothing arrived pass without looking.
#[must_use]
pub fn collected<M: Message>(app: &App) -> &[M] {
    match app.world().get_resource::<Collected<M>>() {
        Some(kept) => kept.0.as_slice(),
        None => panic!(
            "collected::<{}>: call collect::<{0}>(&mut app) first; nothing is kept without it",
            core::any::type_name::<M>()
        ),
    }
}
