//! The plugin's states and run conditions.

use bevy_ecs::prelude::*;
use bevy_state::state::{State, States};

/// Where the App's server stands. Starting and stopping are commands
/// ([`ZaoCommandsExt`](super::ZaoCommandsExt)); a start goes
/// `Stopped → Starting → Running`, or back to `Stopped` with a
/// [`ServerStartFailed`](super::ServerStartFailed).
#[derive(States, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ZaoServerState {
    /// No server.
    #[default]
    Stopped,
    /// A start was asked for; the server binds in the next update.
    Starting,
    /// Serving: the [`ZaoServer`](super::ZaoServer) resource exists.
    Running,
}

/// Where the App's client connection stands. `Disconnected →
/// Connecting → Connected`, and back to `Disconnected` with a
/// [`Disconnected`](super::Disconnected) message (refused, timed out,
/// dropped, left).
#[derive(States, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ZaoClientState {
    /// No connection.
    #[default]
    Disconnected,
    /// The handshake is under way.
    Connecting,
    /// Accepted by the server.
    Connected,
}

/// What happened to the client connection in this update's
/// [`ZaoSet::Receive`](super::ZaoSet::Receive), for the run conditions
/// [`client_just_connected`] and [`client_just_disconnected`].
#[derive(Resource, Clone, Copy, Debug, Default)]
pub struct ClientEdges {
    pub(crate) connected: bool,
    pub(crate) disconnected: bool,
}

/// Run condition: the server is running.
#[must_use]
pub fn server_running(state: Option<Res<State<ZaoServerState>>>) -> bool {
    state.is_some_and(|s| *s.get() == ZaoServerState::Running)
}

/// Run condition: the client is connected.
#[must_use]
pub fn client_connected(state: Option<Res<State<ZaoClientState>>>) -> bool {
    state.is_some_and(|s| *s.get() == ZaoClientState::Connected)
}

/// Run condition: the client connected in this update (true for exactly
/// one update per connection).
#[must_use]
pub fn client_just_connected(edges: Option<Res<ClientEdges>>) -> bool {
    edges.is_some_and(|e| e.connected)
}

/// Run condition: the client's connection ended in this update (true for
/// exactly one update per connection, refusals and failed attempts
/// included).
#[must_use]
pub fn client_just_disconnected(edges: Option<Res<ClientEdges>>) -> bool {
    edges.is_some_and(|e| e.disconnected)
}
