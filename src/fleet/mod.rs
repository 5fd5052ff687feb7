//! A server in a fleet (docs/FLEET.md): the lifecycle a fleet manager
//! such as Agones expects of a game server process, driven from the
//! game's own tick.
//!
//! - **Ready** once the endpoint is bound and the protocol loaded
//!   ([`Fleet::server_started`]).
//! - **Health** reported from [`Fleet::tick`], which the game calls every
//!   tick of its loop (the Bevy plugin calls it every update): a game loop
//!   that hangs stops reporting and the fleet replaces the process. No
//!   timer and no network thread reports health on the game's behalf.
//! - **Allocated:** until the fleet allocates the server to a match, it
//!   admits no player (they are refused as
//!   [`Draining`](crate::proto::RefuseReason::Draining): look elsewhere).
//!   The allocation's labels and annotations reach the game
//!   ([`FleetUpdate::Allocated`]) and the auth callback
//!   ([`FleetHandle::allocation`]), which checks the tokens a matchmaker
//!   minted.
//! - **Players** reported as they join and leave
//!   ([`Fleet::player_joined`]).
//! - **Drain, then Shutdown:** on SIGTERM, the fleet's own request, or
//!   the game's ([`Fleet::drain`]), the server stops admitting, delivers
//!   what is queued on every client's reliable channels, closes each with
//!   "server shutting down" ([`ServerCore::drain`]), and once every client
//!   is gone or the drain's deadline passed, tells the fleet it is done.
//!
//! What the fleet is, is a [`FleetBackend`]: [`Standalone`] for a server
//! with no fleet manager (it allocates itself when ready, and drains on
//! SIGTERM like any other), `agones::Agones` with the `agones`
//! feature, or your own.

#[cfg(feature = "agones")]
pub mod agones;
mod signal;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use crate::proto::ServerCore;

pub use signal::ShutdownSignal;

/// What a fleet allocated this server with: the `GameServerAllocation`'s
/// metadata (Agones copies its labels and annotations onto the
/// `GameServer`), e.g. a match id, the players expected, a key to check
/// their tokens with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FleetAllocation {
    /// The game server's labels once allocated.
    pub labels: BTreeMap<String, String>,
    /// The game server's annotations once allocated.
    pub annotations: BTreeMap<String, String>,
}

/// What a fleet manager tells the server.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FleetEvent {
    /// The server was allocated to a match.
    Allocated(FleetAllocation),
    /// The fleet wants the server gone (it is being scaled down or
    /// deleted): drain and shut down.
    ShutdownRequested,
    /// The fleet manager could not be reached or refused a call.
    Error(String),
}

/// A fleet manager, as the server reports to it. Every call returns at
/// once: a backend that talks to a service queues the call for its own
/// thread.
pub trait FleetBackend: Send + Sync + 'static {
    /// The server is bound and its protocol loaded: it can take players.
    fn ready(&mut self);
    /// The game loop ticked (called at most once per
    /// [`FleetSettings::health_interval`]).
    fn health(&mut self);
    /// A player joined (their identity's key, or `client-N`).
    fn player_connected(&mut self, player: &str);
    /// A player left.
    fn player_disconnected(&mut self, player: &str);
    /// The drain is over: the process may be stopped.
    fn shutdown(&mut self);
    /// Publishes a fact about the server for the matchmaker (Agones: an
    /// annotation on the `GameServer`, which an allocation returns). Does
    /// nothing by default.
    fn annotate(&mut self, key: &str, value: &str) {
        let _ = (key, value);
    }
    /// What the fleet said since the last call.
    fn poll_event(&mut self) -> Option<FleetEvent>;
}

/// No fleet manager: the server allocates itself when it is ready, and
/// drains on SIGTERM like a fleet's server (for any orchestrator that
/// stops a process with SIGTERM and a grace period: Kubernetes without
/// Agones, Nomad, systemd, Docker).
#[derive(Debug, Default)]
pub struct Standalone {
    events: VecDeque<FleetEvent>,
}

impl FleetBackend for Standalone {
    fn ready(&mut self) {
        self.events
            .push_back(FleetEvent::Allocated(FleetAllocation::default()));
    }
    fn health(&mut self) {}
    fn player_connected(&mut self, _player: &str) {}
    fn player_disconnected(&mut self, _player: &str) {}
    fn shutdown(&mut self) {}
    fn poll_event(&mut self) -> Option<FleetEvent> {
        self.events.pop_front()
    }
}

/// How a server behaves in its fleet.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct FleetSettings {
    /// The least time between two health reports from the tick. Default
    /// 1 s: Agones checks every 5 s (`health.periodSeconds`) and marks the
    /// server unhealthy after 3 missed periods (`failureThreshold`).
    pub health_interval: Duration,
    /// How long a drain waits for clients to receive what is queued for
    /// them before it closes them anyway. Default 20 s: under Kubernetes'
    /// `terminationGracePeriodSeconds` (30 s by default), with time left to
    /// close and exit.
    pub drain_timeout: Duration,
    /// The close reason clients see. Default "server shutting down".
    pub drain_reason: String,
    /// Refuse players until the fleet allocates the server. Default `true`
    /// ([`Standalone`] allocates itself once ready).
    pub admit_only_allocated: bool,
    /// Drain on SIGTERM (Unix). Default `true`.
    pub drain_on_sigterm: bool,
}

impl Default for FleetSettings {
    fn default() -> Self {
        Self {
            health_interval: Duration::from_secs(1),
            drain_timeout: Duration::from_secs(20),
            drain_reason: "server shutting down".to_owned(),
            admit_only_allocated: true,
            drain_on_sigterm: true,
        }
    }
}

/// Where the server stands in its fleet; in a Bevy App, also its state
/// (`zao::bevy::ZaoFleetState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "bevy", derive(bevy_state::state::States))]
pub enum FleetPhase {
    /// Not yet ready: the server is not running.
    #[default]
    Starting,
    /// Ready, waiting for an allocation (no players admitted).
    Ready,
    /// Allocated to a match: players are admitted.
    Allocated,
    /// Draining: no new players, the connected ones get what is queued,
    /// then the close.
    Draining,
    /// The drain is over and the fleet told: the process may exit.
    ShutDown,
}

/// What changed, for the game.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FleetUpdate {
    /// The fleet was told the server is ready.
    Ready,
    /// The server was allocated: players are admitted from now on.
    Allocated(FleetAllocation),
    /// A drain began.
    Draining {
        /// What asked for it.
        cause: DrainCause,
    },
    /// The drain is over and the fleet was told to shut the server down.
    ShutDown,
    /// The fleet manager reported an error.
    Error(String),
}

/// What asked for a drain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DrainCause {
    /// The process got SIGTERM.
    Signal,
    /// The fleet manager asked.
    Fleet,
    /// The game asked ([`Fleet::drain`]).
    Game,
}

/// The allocation as the auth callback sees it: cheap to clone, shared
/// with the [`Fleet`].
#[derive(Clone, Debug, Default)]
pub struct FleetHandle {
    allocation: Arc<RwLock<Option<FleetAllocation>>>,
}

impl FleetHandle {
    /// The allocation, once the server is allocated.
    #[must_use]
    pub fn allocation(&self) -> Option<FleetAllocation> {
        self.allocation
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set(&self, allocation: FleetAllocation) {
        *self
            .allocation
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(allocation);
    }
}

/// A server's life in its fleet, driven from the game's tick: see the
/// module docs. The plain loop:
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Instant;
/// use zao::fleet::{Fleet, FleetPhase, FleetSettings, Standalone};
/// use zao::quic::{Certificate, Server, ServerConfig};
///
/// let mut fleet = Fleet::new(Standalone::default(), FleetSettings::default());
/// let mut config = ServerConfig::new(
///     "0.0.0.0:4433".parse()?,
///     Certificate::self_signed(&["localhost"])?,
///     zao::proto::Protocol::new(),
/// );
/// // No one is admitted before the allocation.
/// config.draining = true;
/// let mut server = Server::start(config)?;
/// fleet.server_started(&server);
/// while fleet.phase() != FleetPhase::ShutDown {
///     while let Some(event) = server.poll_event() {
///         // ... the game, and fleet.player_joined / player_left
///     }
///     fleet.tick(Some(&server), Instant::now());
///     # break;
/// }
/// # Ok(())
/// # }
/// ```
pub struct Fleet {
    backend: Box<dyn FleetBackend>,
    settings: FleetSettings,
    phase: FleetPhase,
    next_health: Option<Instant>,
    deadline: Option<Instant>,
    handle: FleetHandle,
    signal: Option<ShutdownSignal>,
    updates: VecDeque<FleetUpdate>,
    players: BTreeSet<String>,
}

impl core::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Fleet")
            .field("phase", &self.phase)
            .field("players", &self.players.len())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Fleet {
    /// A server reporting to `backend`. With
    /// [`FleetSettings::drain_on_sigterm`], SIGTERM starts a drain from now
    /// on (the process no longer dies of it).
    pub fn new(backend: impl FleetBackend, settings: FleetSettings) -> Self {
        Self::boxed(Box::new(backend), settings)
    }

    /// [`new`](Self::new) with a boxed backend.
    #[must_use]
    pub fn boxed(backend: Box<dyn FleetBackend>, settings: FleetSettings) -> Self {
        let signal = settings
            .drain_on_sigterm
            .then(ShutdownSignal::sigterm)
            .flatten();
        Self {
            backend,
            settings,
            phase: FleetPhase::Starting,
            next_health: None,
            deadline: None,
            handle: FleetHandle::default(),
            signal,
            updates: VecDeque::new(),
            players: BTreeSet::new(),
        }
    }

    /// The settings.
    #[must_use]
    pub fn settings(&self) -> &FleetSettings {
        &self.settings
    }

    /// Where the server stands.
    #[must_use]
    pub fn phase(&self) -> FleetPhase {
        self.phase
    }

    /// Whether a server must refuse players now: not yet allocated (with
    /// [`FleetSettings::admit_only_allocated`]), draining or shut down.
    #[must_use]
    pub fn closed_to_players(&self) -> bool {
        match self.phase {
            FleetPhase::Allocated => false,
            FleetPhase::Starting | FleetPhase::Ready => self.settings.admit_only_allocated,
            FleetPhase::Draining | FleetPhase::ShutDown => true,
        }
    }

    /// The allocation, for an auth callback.
    #[must_use]
    pub fn handle(&self) -> FleetHandle {
        self.handle.clone()
    }

    /// The players reported connected.
    pub fn players(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.players.iter().map(String::as_str)
    }

    /// The server is bound and its protocol loaded: the fleet is told it
    /// is ready (the first time). Call it after every start of a server:
    /// its admission follows the phase ([`closed_to_players`](Self::closed_to_players)).
    /// Start the server with `draining` set so no player slips in before
    /// this call.
    pub fn server_started(&mut self, server: &ServerCore) {
        server.set_draining(self.closed_to_players());
        if self.phase != FleetPhase::Starting {
            return;
        }
        self.backend.ready();
        self.phase = FleetPhase::Ready;
        self.updates.push_back(FleetUpdate::Ready);
    }

    /// Call once per tick of the game loop, and only from it: it reports
    /// health (at most every [`FleetSettings::health_interval`]), takes
    /// the fleet's events and SIGTERM, and moves a drain on. `server`: the
    /// running server, if any.
    pub fn tick(&mut self, server: Option<&ServerCore>, now: Instant) {
        if self.phase == FleetPhase::ShutDown {
            return;
        }
        if self.next_health.is_none_or(|at| now >= at) {
            self.backend.health();
            self.next_health = Some(now + self.settings.health_interval);
        }
        while let Some(event) = self.backend.poll_event() {
            match event {
                FleetEvent::Allocated(allocation) => self.allocated(server, allocation),
                FleetEvent::ShutdownRequested => self.begin_drain(server, now, DrainCause::Fleet),
                FleetEvent::Error(e) => {
                    tracing::warn!("zao fleet: {e}");
                    self.updates.push_back(FleetUpdate::Error(e));
                }
            }
        }
        if self.signal.as_ref().is_some_and(ShutdownSignal::received) {
            self.begin_drain(server, now, DrainCause::Signal);
        }
        if self.phase == FleetPhase::Draining {
            let over = self.deadline.is_some_and(|d| now >= d + CLOSE_GRACE);
            if server.is_none_or(ServerCore::is_drained) || over {
                self.backend.shutdown();
                self.phase = FleetPhase::ShutDown;
                self.updates.push_back(FleetUpdate::ShutDown);
            }
        }
    }

    /// Starts a drain (the game's own request): see the module docs.
    pub fn drain(&mut self, server: Option<&ServerCore>, now: Instant) {
        self.begin_drain(server, now, DrainCause::Game);
    }

    /// A player joined: reported to the fleet.
    pub fn player_joined(&mut self, player: &str) {
        if self.players.insert(player.to_owned()) {
            self.backend.player_connected(player);
        }
    }

    /// A player left: reported to the fleet.
    pub fn player_left(&mut self, player: &str) {
        if self.players.remove(player) {
            self.backend.player_disconnected(player);
        }
    }

    /// Publishes a fact about the server for the matchmaker (its
    /// certificate's hash, a region): see [`FleetBackend::annotate`].
    pub fn annotate(&mut self, key: &str, value: &str) {
        self.backend.annotate(key, value);
    }

    /// What changed since the last call.
    pub fn poll_update(&mut self) -> Option<FleetUpdate> {
        self.updates.pop_front()
    }

    fn allocated(&mut self, server: Option<&ServerCore>, allocation: FleetAllocation) {
        if self.phase >= FleetPhase::Allocated {
            return;
        }
        self.handle.set(allocation.clone());
        if let Some(server) = server {
            server.set_draining(false);
        }
        self.phase = FleetPhase::Allocated;
        self.updates.push_back(FleetUpdate::Allocated(allocation));
    }

    fn begin_drain(&mut self, server: Option<&ServerCore>, now: Instant, cause: DrainCause) {
        if self.phase >= FleetPhase::Draining {
            return;
        }
        let deadline = now + self.settings.drain_timeout;
        if let Some(server) = server {
            server.drain(&self.settings.drain_reason, deadline);
        }
        self.deadline = Some(deadline);
        self.phase = FleetPhase::Draining;
        self.updates.push_back(FleetUpdate::Draining { cause });
    }
}

/// After a drain's deadline, the time the closes get to reach the clients
/// before the fleet is told to shut down regardless.
const CLOSE_GRACE: Duration = Duration::from_secs(1);
