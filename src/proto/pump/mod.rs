//! The one pump that feeds a session and drains it, and the transport
//! interface every adapter implements (docs/TRANSPORTS.md).

#[allow(clippy::module_inception)]
mod pump;
mod transport;

pub(crate) use pump::Pump;
pub(crate) use transport::{Accepted, DatagramRefused, LinkClosed, Opened, Read, Transport};
