//! Everything a Bevy game uses every day, for one glob import beside
//! Bevy's own preludes: `use zao::bevy::prelude::*;`. No name here is also
//! in `bevy_ecs`, `bevy_app` or `bevy_state`'s preludes (a test glob-imports
//! them together), so a game never aliases one.
//!
//! It holds the derives (`Encode`, `Decode`, `NetMessage`, `Snapshot`,
//! `SnapshotItem`) and their traits, the quantized field types and
//! `Interpolate`, the
//! plugins and their settings, the commands and registration traits, the
//! messages, resources, components, states and run conditions, the types
//! they carry (ids, channels, close reasons, the certificate hash a client
//! pins), and glam's `Vec2`, `Vec3` and `Quat` (the glam Bevy uses), so a
//! headless game needs no glam of its own.

pub use super::{
    AppZaoExt, ClientConnected, ClientDisconnected, ClientRefused, ClientStats, ConnectFailed,
    Connected, ConnectedClient, ConnectionState, Disconnected, FromClient, FromServer, Room,
    SendFailed, SendTarget, ServerStartFailed, ServerStarted, ServerStopped, SnapshotApplied,
    ToClients, ToServer, ZaoClient, ZaoClientPlugin, ZaoClientSender, ZaoClientSettings,
    ZaoClientState, ZaoCommandsExt, ZaoSendError, ZaoServer, ZaoServerPlugin, ZaoServerSender,
    ZaoServerSettings, ZaoServerState, ZaoSet, ZaoSnapshots, client_connected,
    client_just_connected, client_just_disconnected, server_running,
};
pub use crate::proto::{
    CertHash, Channel, ChannelKind, ClientId, CloseCode, ClosedBy, DeltaSent, Direction,
    DisconnectReason, Identity, Interpolate, JitterConfig, Limits, RefuseReason, SendError,
};
pub use crate::quic::StartError;
pub use crate::wire::{QAngle, QF32, QQuat, QVec2, QVec3};
pub use crate::{Decode, Encode, NetMessage, Snapshot, SnapshotItem};
#[cfg(feature = "glam")]
pub use glam::{Quat, Vec2, Vec3};
