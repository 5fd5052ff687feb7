//! The plugins: they register the plugin's messages, states and systems;
//! starting and connecting are commands ([`ZaoCommandsExt`](super::ZaoCommandsExt)),
//! or a launch option for examples.

use bevy_app::{App, Plugin, PostUpdate, PreUpdate, Startup};
use bevy_ecs::prelude::*;
use bevy_state::app::{AppExtStates, StatesPlugin};
use bevy_state::state::State;

use super::lifecycle::{ZaoClientSettings, ZaoCommandsExt, ZaoServerSettings, start_pending};
use super::messages::{
    ClientConnected, ClientDisconnected, ClientRefused, ConnectFailed, Connected, Disconnected,
    SendFailed, ServerStartFailed, ServerStarted, ServerStopped,
};
use super::protocol::ZaoProtocol;
use super::server::{Leavers, despawn_leavers, kick_on_despawn};
use super::set::{SendStep, ZaoSet};
use super::state::{ClientEdges, ZaoClientState, ZaoServerState};
use super::{client, server};

/// The server side of the plugin: [`ZaoServerState`], client entities,
/// `FromClient<T>` / `ToClients<T>` for every type registered with
/// [`AppZaoExt`](super::AppZaoExt). Nothing starts until a system calls
/// [`start_zao_server`](ZaoCommandsExt::start_zao_server), or at launch
/// with [`start_at_launch`](Self::start_at_launch).
#[derive(Clone, Debug, Default)]
pub struct ZaoServerPlugin {
    /// Start a server with these settings when the App starts.
    pub launch: Option<ZaoServerSettings>,
}

impl ZaoServerPlugin {
    /// The plugin, starting a server with `settings` at launch (examples,
    /// dedicated servers with nothing to choose at runtime).
    #[must_use]
    pub fn start_at_launch(settings: ZaoServerSettings) -> Self {
        Self {
            launch: Some(settings),
        }
    }
}

impl Plugin for ZaoServerPlugin {
    fn build(&self, app: &mut App) {
        init(app);
        if let Some(settings) = self.launch.clone() {
            app.add_systems(Startup, move |mut commands: Commands| {
                commands.start_zao_server(settings.clone());
            });
        }
    }

    fn finish(&self, app: &mut App) {
        init_states(app);
    }
}

/// The client side of the plugin: [`ZaoClientState`], the run conditions,
/// `ToServer<T>` / `FromServer<T>`. Nothing connects until a system calls
/// [`connect_zao`](ZaoCommandsExt::connect_zao), or at launch with
/// [`connect_at_launch`](Self::connect_at_launch).
#[derive(Clone, Debug, Default)]
pub struct ZaoClientPlugin {
    /// Connect with these settings when the App starts.
    pub launch: Option<ZaoClientSettings>,
}

impl ZaoClientPlugin {
    /// The plugin, connecting with `settings` at launch.
    #[must_use]
    pub fn connect_at_launch(settings: ZaoClientSettings) -> Self {
        Self {
            launch: Some(settings),
        }
    }
}

impl Plugin for ZaoClientPlugin {
    fn build(&self, app: &mut App) {
        init(app);
        if let Some(settings) = self.launch.clone() {
            app.add_systems(Startup, move |mut commands: Commands| {
                commands.connect_zao(settings.clone());
            });
        }
    }

    fn finish(&self, app: &mut App) {
        init_states(app);
    }
}

/// The plugin's states, once every plugin is added: bevy_state's
/// `StatesPlugin` is added only if the game did not add it (adding it
/// unasked in `build` made a game's own later `StatesPlugin` panic as
/// "already added").
pub(crate) fn init_states(app: &mut App) {
    if app.world().contains_resource::<State<ZaoServerState>>() {
        return;
    }
    if !app.is_plugin_added::<StatesPlugin>() {
        app.add_plugins(StatesPlugin);
    }
    app.init_state::<ZaoServerState>()
        .init_state::<ZaoClientState>();
}

/// Sets up what every zao app has, once: the protocol, the states, the
/// messages, the receive and send systems of both sides (each does nothing
/// without its transport), so plugins and registrations may come in any
/// order and one App may be a server and a client at once (a listen
/// server).
pub(crate) fn init(app: &mut App) {
    if app.world().contains_resource::<ZaoProtocol>() {
        return;
    }
    // States need bevy_state's `StatesPlugin`, which a game may add before
    // or after these plugins (alone or in a plugin group): they are set up
    // in `finish`, once every plugin is in.
    if app.is_plugin_added::<StatesPlugin>() {
        init_states(app);
    }
    app.init_resource::<ZaoProtocol>()
        .init_resource::<ClientEdges>()
        .init_resource::<Leavers>()
        .add_message::<ClientConnected>()
        .add_message::<ClientDisconnected>()
        .add_message::<ClientRefused>()
        .add_message::<ServerStarted>()
        .add_message::<ServerStartFailed>()
        .add_message::<ServerStopped>()
        .add_message::<Connected>()
        .add_message::<Disconnected>()
        .add_message::<ConnectFailed>()
        .add_message::<SendFailed>()
        .configure_sets(
            PostUpdate,
            (SendStep::Messages, SendStep::Flush)
                .chain()
                .in_set(ZaoSet::Send),
        )
        .add_systems(
            PreUpdate,
            (start_pending, server::receive, client::receive)
                .chain()
                .in_set(ZaoSet::Receive),
        )
        .add_systems(
            PostUpdate,
            (client::flush, server::flush)
                .chain()
                .in_set(SendStep::Flush),
        )
        .add_systems(PostUpdate, despawn_leavers.after(ZaoSet::Send))
        .add_observer(kick_on_despawn);
}
