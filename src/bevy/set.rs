//! The plugin's system sets.

use bevy_ecs::schedule::SystemSet;

/// Where the plugin's systems run. Order your systems against these: read
/// `FromClient`/`FromServer` after [`Receive`](Self::Receive) (anywhere in
/// `Update` is), write `ToClients`/`ToServer` before [`Send`](Self::Send)
/// (anywhere in `Update` or `FixedUpdate` is).
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ZaoSet {
    /// In `PreUpdate`: polls the transport, writes connection events and
    /// every received message as a Bevy message.
    Receive,
    /// In `PostUpdate`: sends the `ToClients`/`ToServer` messages written
    /// this update, then flushes the packed unreliable datagrams.
    Send,
}

/// The two steps of [`ZaoSet::Send`]: every type's sends, then one flush.
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum SendStep {
    Messages,
    Flush,
}
