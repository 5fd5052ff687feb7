//! The simulated network as an App's transport: with a [`ZaoSimNetwork`]
//! resource (and a [`ZaoSimLink`] on a client), the lifecycle commands
//! start the server and connect the client on [`zao::sim`](crate::sim)
//! instead of QUIC sockets. [`testing`](super::testing) builds tests on it.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bevy_ecs::prelude::*;

use crate::sim::{LinkSpec, Sim};

/// The simulated network an App's server starts on and its client
/// connects over, shared by every App of a test.
#[derive(Resource, Clone)]
pub struct ZaoSimNetwork(Arc<Mutex<Sim>>);

impl core::fmt::Debug for ZaoSimNetwork {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("ZaoSimNetwork")
            .field(&self.lock().elapsed())
            .finish()
    }
}

impl ZaoSimNetwork {
    /// A new network with `seed`.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self(Arc::new(Mutex::new(Sim::new(seed))))
    }

    /// The network, to run it or change links.
    pub fn lock(&self) -> MutexGuard<'_, Sim> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The link a client App's connections take (each way), on a
/// [`ZaoSimNetwork`]. Perfect when absent.
#[derive(Resource, Clone, Debug, Default)]
pub struct ZaoSimLink {
    /// Client to server.
    pub up: LinkSpec,
    /// Server to client.
    pub down: LinkSpec,
}

impl ZaoSimLink {
    /// The same link both ways.
    #[must_use]
    pub fn both(link: LinkSpec) -> Self {
        Self {
            up: link.clone(),
            down: link,
        }
    }
}
