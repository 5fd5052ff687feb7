//! A game that glob-imports Bevy's preludes and Zao's compiles without
//! aliasing a name: every item of `zao::bevy::prelude` is named here beside
//! `bevy_ecs`, `bevy_app` and `bevy_state`'s preludes (a name in two glob
//! imports is an error only where it is used, so each is used), and the
//! everyday work of a game needs nothing from `zao::proto` or glam.

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
// A name two preludes share is what this test exists to catch; rustc
// reports some such uses (a derive's name) only as a lint.
#![deny(ambiguous_glob_imports)]
// Bevy systems elide their parameters' lifetimes by convention.
#![allow(elided_lifetimes_in_paths)]
// Bevy systems take what they use as parameters, however many.
#![allow(clippy::too_many_arguments)]

use bevy_app::prelude::*;
use bevy_ecs::prelude::*;
use bevy_state::prelude::*;
use zao::bevy::prelude::*;

/// A Bevy message of the game's own: Bevy's `Message` derive, beside Zao's
/// `NetMessage`.
#[derive(Message, Clone, Debug)]
struct RoundOver;

/// A component of the game's own.
#[derive(Component)]
struct Health(u32);

/// A network message, with glam's types from the prelude.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 40)]
struct Shot {
    from: Vec3,
    aim: Vec2,
    turn: Quat,
}

/// A delta snapshot of quantized entities.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage, Snapshot)]
#[zao(id = 41)]
struct Arena {
    #[zao(tick)]
    tick: u32,
    #[zao(items)]
    entities: Vec<Body>,
}

#[derive(Clone, Copy, Debug, PartialEq, Encode, Decode, SnapshotItem)]
struct Body {
    #[zao(key)]
    id: u32,
    at: QVec3<-1024, 1024, 100>,
    heading: QAngle<10>,
    spin: QQuat<9>,
    speed: QF32<0, 64, 10>,
    flat: QVec2<-1024, 1024, 10>,
}

impl Interpolate for Body {
    fn interpolate(&self, to: &Self, t: f32) -> Self {
        Self {
            id: to.id,
            at: self.at.interpolate(&to.at, t),
            heading: self.heading.interpolate(&to.heading, t),
            spin: self.spin.interpolate(&to.spin, t),
            speed: self.speed.interpolate(&to.speed, t),
            flat: self.flat.interpolate(&to.flat, t),
        }
    }
}

const LOBBY: Room = Room::named("lobby");

fn protocol(app: &mut App) {
    app.add_zao_channel("chat", ChannelKind::ReliableOrdered)
        .add_zao_message::<Shot>(Channel::UNRELIABLE, Direction::Both)
        .add_zao_delta_snapshot::<Arena>(JitterConfig::from_hz(60.0));
}

fn server_systems(
    mut shots: MessageReader<FromClient<Shot>>,
    mut sender: ZaoServerSender,
    mut joined: MessageReader<ClientConnected>,
    mut left: MessageReader<ClientDisconnected>,
    mut refused: MessageReader<ClientRefused>,
    mut started: MessageReader<ServerStarted>,
    mut stopped: MessageReader<ServerStopped>,
    mut start_failed: MessageReader<ServerStartFailed>,
    mut failed: MessageReader<SendFailed>,
    clients: Query<(&ConnectedClient, &ClientStats, Option<&Health>)>,
    mut round: MessageWriter<RoundOver>,
) {
    for started in started.read() {
        let pin: Option<CertHash> = started.certificate_hash;
        let _ = pin;
    }
    for joined in joined.read() {
        sender.join(&LOBBY, joined.client);
    }
    for shot in shots.read() {
        let _: ClientId = shot.client;
        let result: Result<(), ZaoSendError> =
            sender.send(&shot.message, SendTarget::AllExcept(shot.client));
        if let Err(ZaoSendError::Transport(SendError::QueueFull)) = result {
            sender.kick(shot.client, "too slow");
        }
    }
    let sent: Result<DeltaSent, ZaoSendError> = sender.send_delta_snapshot(
        &Arena {
            tick: 1,
            entities: Vec::new(),
        },
        LOBBY,
    );
    let _ = sent;
    for gone in left.read() {
        if let DisconnectReason::Closed {
            by: ClosedBy::Peer,
            code: CloseCode::Normal,
            ..
        } = gone.reason
        {
            round.write(RoundOver);
        }
    }
    for refused in refused.read() {
        let _: &RefuseReason = &refused.reason;
    }
    for failed in start_failed.read() {
        let _: &StartError = &failed.error;
    }
    stopped.clear();
    failed.clear();
    let hurt = clients
        .iter()
        .filter(|(_, _, h)| h.is_some_and(|h| h.0 < 3))
        .count();
    let _ = hurt;
}

fn server_resource(server: Option<Res<ZaoServer>>, client: Option<Res<ZaoClient>>) {
    let _ = server.map(|s| s.clients().count());
    let _ = client.map(|c| matches!(c.state(), ConnectionState::Connected(_)));
}

fn client_systems(
    mut commands: Commands,
    mut sender: ZaoClientSender,
    mut connected: MessageReader<Connected>,
    mut gone: MessageReader<Disconnected>,
    mut failed: MessageReader<ConnectFailed>,
    mut heard: MessageReader<FromServer<Shot>>,
    mut applied: MessageReader<SnapshotApplied<Arena>>,
    mut out: MessageWriter<ToServer<Shot>>,
    mut to_all: MessageWriter<ToClients<Shot>>,
    snapshots: Res<ZaoSnapshots<Arena>>,
) {
    let shot = Shot {
        from: Vec3::ZERO,
        aim: Vec2::X,
        turn: Quat::IDENTITY,
    };
    let _ = sender.send(&shot);
    out.write(ToServer(shot.clone()));
    to_all.write(ToClients {
        target: SendTarget::All,
        message: shot,
    });
    let _: Vec<Body> = snapshots.interpolated();
    let _ = snapshots.latest();
    let _ = (connected.read().count(), heard.read().count());
    let _ = applied.read().count();
    for _ in failed.read() {}
    if gone.read().next().is_some() {
        let settings =
            ZaoClientSettings::pinned("127.0.0.1:4433".parse().unwrap(), CertHash([0; 32]));
        let _: &Limits = &settings.limits;
        commands.connect_zao(settings);
    }
    let _: Option<Identity> = None;
}

#[test]
fn a_game_with_bevy_and_zao_preludes_builds_and_runs() {
    let mut app = App::new();
    app.add_plugins((
        ZaoServerPlugin::default(),
        ZaoClientPlugin::default(),
        bevy_state::app::StatesPlugin,
    ))
    .add_message::<RoundOver>()
    .add_systems(Update, (server_systems, client_systems, server_resource))
    .add_systems(
        Update,
        (|| {})
            .run_if(server_running)
            .run_if(client_connected)
            .run_if(client_just_connected)
            .run_if(client_just_disconnected),
    )
    .add_systems(OnEnter(ZaoServerState::Running), || {})
    .add_systems(OnEnter(ZaoClientState::Connected), || {})
    .configure_sets(PostUpdate, ZaoSet::Send);
    protocol(&mut app);
    app.finish();
    app.cleanup();
    app.update();
    app.world_mut().spawn(Health(3));
    app.update();
    assert_eq!(
        *app.world().resource::<State<ZaoServerState>>().get(),
        ZaoServerState::Stopped
    );
    let settings = ZaoServerSettings::default();
    assert_eq!(settings.bind.port(), 4433);
}
