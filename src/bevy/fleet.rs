//! The server's life in a fleet, as Bevy messages, a state and run
//! conditions (docs/FLEET.md; the lifecycle itself is [`crate::fleet`]).
//!
//! ```no_run
//! use bevy_app::prelude::*;
//! use bevy_ecs::prelude::*;
//! use zao::bevy::{FleetAllocated, ZaoFleetPlugin, ZaoServerPlugin, ZaoServerSettings, fleet_allocated};
//!
//! fn on_allocated(mut allocated: MessageReader<FleetAllocated>) {
//!     for a in allocated.read() {
//!         println!("match {:?}", a.0.labels.get("match"));
//!     }
//! }
//!
//! fn play() { /* the match, once players may join */ }
//!
//! App::new()
//!     .add_plugins((
//!         ZaoServerPlugin::start_at_launch(ZaoServerSettings::bind("0.0.0.0:7777".parse().unwrap())),
//!         // Without a fleet manager: `ZaoFleetPlugin::standalone()`.
//!         ZaoFleetPlugin::standalone(),
//!     ))
//!     .add_systems(Update, (on_allocated, play.run_if(fleet_allocated)))
//!     .run();
//! ```

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use bevy_app::{App, AppExit, Last, Plugin};
use bevy_ecs::prelude::*;
use bevy_state::app::AppExtStates;
use bevy_state::prelude::{NextState, State};

use super::lifecycle::ZaoCommandsExt;
use super::messages::{ClientConnected, ClientDisconnected};
use super::server::ZaoServer;
use crate::fleet::{
    DrainCause, Fleet, FleetAllocation, FleetBackend, FleetHandle, FleetPhase, FleetSettings,
    FleetUpdate, Standalone,
};
use crate::proto::ClientId;

/// Where the server stands in its fleet, as a Bevy state: the
/// [`FleetPhase`] itself.
pub type ZaoFleetState = FleetPhase;

/// The fleet was told the server is ready.
#[derive(Message, Clone, Debug)]
pub struct FleetReady;

/// The server was allocated to a match; players are admitted from now on.
#[derive(Message, Clone, Debug)]
pub struct FleetAllocated(pub FleetAllocation);

/// A drain began: no new players; each connected one gets what is queued
/// on its reliable channels, then the close "server shutting down".
#[derive(Message, Clone, Debug)]
pub struct FleetDraining(pub DrainCause);

/// The drain is over and the fleet was told: the server stops (and, with
/// [`ZaoFleetPlugin::exit_when_shut_down`], the App exits at the end of
/// the next update, once game systems read this).
#[derive(Message, Clone, Debug)]
pub struct FleetShutDown;

/// The fleet manager reported an error.
#[derive(Message, Clone, Debug)]
pub struct FleetError(pub String);

/// The server's [`Fleet`]: its phase, its players, the handle for an auth
/// callback.
#[derive(Resource, Debug)]
pub struct ZaoFleet {
    fleet: Fleet,
    /// The key each connected client was reported under.
    keys: HashMap<ClientId, String>,
}

impl ZaoFleet {
    /// The lifecycle.
    #[must_use]
    pub fn fleet(&self) -> &Fleet {
        &self.fleet
    }

    /// Whether a server started now must refuse players: not allocated
    /// (with [`FleetSettings::admit_only_allocated`]), or draining.
    #[must_use]
    pub fn closed_to_players(&self) -> bool {
        self.fleet.closed_to_players()
    }

    /// The allocation, for an auth callback (clone it into the callback
    /// before the server starts).
    #[must_use]
    pub fn handle(&self) -> FleetHandle {
        self.fleet.handle()
    }
}

/// The fleet plugin: add it beside [`ZaoServerPlugin`](super::ZaoServerPlugin).
/// See the module docs.
pub struct ZaoFleetPlugin {
    /// Health, drain and admission settings.
    pub settings: FleetSettings,
    /// Exit the App once the fleet is told to shut the server down
    /// (default `true`: a fleet's process ends there).
    pub exit_when_shut_down: bool,
    backend: Mutex<Option<Box<dyn FleetBackend>>>,
}

impl core::fmt::Debug for ZaoFleetPlugin {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ZaoFleetPlugin")
            .field("settings", &self.settings)
            .field("exit_when_shut_down", &self.exit_when_shut_down)
            .finish_non_exhaustive()
    }
}

impl ZaoFleetPlugin {
    /// A fleet manager of your own.
    pub fn new(backend: impl FleetBackend) -> Self {
        Self {
            settings: FleetSettings::default(),
            exit_when_shut_down: true,
            backend: Mutex::new(Some(Box::new(backend))),
        }
    }

    /// No fleet manager ([`Standalone`]): allocated once ready, drained on
    /// SIGTERM or [`ZaoFleetCommandsExt::drain_zao_server`].
    #[must_use]
    pub fn standalone() -> Self {
        Self::new(Standalone::default())
    }

    /// Agones, through the SDK server beside the game server in its pod
    /// ([`Agones`](crate::fleet::agones::Agones)).
    ///
    /// # Errors
    /// If the SDK's thread cannot be started.
    #[cfg(feature = "agones")]
    pub fn agones(settings: crate::fleet::agones::AgonesSettings) -> std::io::Result<Self> {
        Ok(Self::new(crate::fleet::agones::Agones::connect(settings)?))
    }

    /// With these settings.
    #[must_use]
    pub fn with_settings(mut self, settings: FleetSettings) -> Self {
        self.settings = settings;
        self
    }
}

impl Plugin for ZaoFleetPlugin {
    fn build(&self, app: &mut App) {
        let backend = self
            .backend
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(backend) = backend else {
            tracing::warn!("zao: ZaoFleetPlugin added twice: the second is ignored");
            return;
        };
        super::plugin::init(app);
        app.insert_resource(ZaoFleet {
            fleet: Fleet::boxed(backend, self.settings.clone()),
            keys: HashMap::new(),
        })
        .insert_resource(ExitWhenShutDown {
            exit: self.exit_when_shut_down,
            due: false,
        })
        .add_message::<FleetReady>()
        .add_message::<FleetAllocated>()
        .add_message::<FleetDraining>()
        .add_message::<FleetShutDown>()
        .add_message::<FleetError>()
        // Last: after the game's systems ran, so a frozen `Update` stops
        // the health reports.
        .add_systems(Last, tick);
    }

    fn finish(&self, app: &mut App) {
        // The states need bevy_state's plugin, whichever plugin comes first.
        super::plugin::init_states(app);
        if !app.world().contains_resource::<State<ZaoFleetState>>() {
            app.init_state::<ZaoFleetState>();
        }
    }
}

/// Whether to exit once shut down, and whether that is due (the update
/// after [`FleetShutDown`], so game systems read it first).
#[derive(Resource, Clone, Copy)]
struct ExitWhenShutDown {
    exit: bool,
    due: bool,
}

/// Whether the server is ready or allocated (not starting, not draining).
#[must_use]
pub fn fleet_ready(state: Option<Res<State<ZaoFleetState>>>) -> bool {
    state.is_some_and(|s| matches!(s.get(), ZaoFleetState::Ready | ZaoFleetState::Allocated))
}

/// Whether the server is allocated to a match (and not draining).
#[must_use]
pub fn fleet_allocated(state: Option<Res<State<ZaoFleetState>>>) -> bool {
    state.is_some_and(|s| *s.get() == ZaoFleetState::Allocated)
}

/// Whether the server is draining.
#[must_use]
pub fn fleet_draining(state: Option<Res<State<ZaoFleetState>>>) -> bool {
    state.is_some_and(|s| *s.get() == ZaoFleetState::Draining)
}

/// The drain as a command, from any system.
pub trait ZaoFleetCommandsExt {
    /// Starts a drain (as SIGTERM does): no new players, each connected
    /// one gets what is queued on its reliable channels, then the close
    /// "server shutting down"; once all are gone (or
    /// [`FleetSettings::drain_timeout`] passed) the fleet is told to shut
    /// the server down.
    fn drain_zao_server(&mut self);
}

impl ZaoFleetCommandsExt for Commands<'_, '_> {
    fn drain_zao_server(&mut self) {
        self.queue(|world: &mut World| {
            let now = Instant::now();
            world.resource_scope(|world, mut fleet: Mut<ZaoFleet>| {
                let server = world.get_resource::<ZaoServer>();
                fleet.fleet.drain(server.map(ZaoServer::core), now);
            });
        });
    }
}

/// The annotation the server's certificate hash is published under (Agones
/// stores it as `agones.dev/sdk-zao-cert-sha256`).
pub const CERT_ANNOTATION: &str = "zao-cert-sha256";

/// The writers of the fleet's messages.
type FleetWriters<'w> = (
    MessageWriter<'w, FleetReady>,
    MessageWriter<'w, FleetAllocated>,
    MessageWriter<'w, FleetDraining>,
    MessageWriter<'w, FleetShutDown>,
    MessageWriter<'w, FleetError>,
);

/// Once per update, in `Last`: ready once the server runs, players
/// reported, the health report and the fleet's news (the
/// [`Fleet::tick`]), and the end of a drain.
#[allow(clippy::too_many_arguments)]
fn tick(
    mut fleet: ResMut<ZaoFleet>,
    server: Option<Res<ZaoServer>>,
    mut joined: MessageReader<ClientConnected>,
    mut left: MessageReader<ClientDisconnected>,
    mut state: Option<ResMut<NextState<ZaoFleetState>>>,
    mut commands: Commands,
    mut exit: ResMut<ExitWhenShutDown>,
    mut messages: FleetWriters,
) {
    if exit.due {
        exit.due = false;
        commands.write_message(AppExit::Success);
    }
    let ZaoFleet { fleet, keys } = &mut *fleet;
    let core = server.as_deref().map(ZaoServer::core);
    if let Some(zao) = server.as_deref()
        && fleet.phase() == FleetPhase::Starting
    {
        // What a player pins, for the matchmaker to hand out beside the
        // address (a certificate without a CA).
        if let Some(hash) = zao.certificate_hash() {
            fleet.annotate(CERT_ANNOTATION, &hash.to_string());
        }
        fleet.server_started(zao.core());
    }
    for c in joined.read() {
        let key = c
            .identity
            .as_ref()
            .map_or_else(|| format!("client-{}", c.client.0), |i| i.key.clone());
        fleet.player_joined(&key);
        keys.insert(c.client, key);
    }
    for c in left.read() {
        if let Some(key) = keys.remove(&c.client) {
            fleet.player_left(&key);
        }
    }
    fleet.tick(core, Instant::now());
    let (ready, allocated, draining, shut_down, error) = &mut messages;
    while let Some(update) = fleet.poll_update() {
        match update {
            FleetUpdate::Ready => {
                ready.write(FleetReady);
            }
            FleetUpdate::Allocated(a) => {
                allocated.write(FleetAllocated(a));
            }
            FleetUpdate::Draining { cause } => {
                draining.write(FleetDraining(cause));
            }
            FleetUpdate::ShutDown => {
                shut_down.write(FleetShutDown);
                commands.stop_zao_server();
                exit.due = exit.exit;
            }
            FleetUpdate::Error(e) => {
                error.write(FleetError(e));
            }
        }
        if let Some(state) = state.as_mut() {
            state.set(fleet.phase());
        }
    }
}
