//! A raw QUIC peer in the simulation: no zao session, every byte chosen by
//! the test. The attacks of the test matrix are written with it.

use bytes::Bytes;

use super::network::{NodeId, Sim};
use crate::proto::{DisconnectReason, StreamId};

/// A QUIC connection to the simulated server that the test drives by
/// hand. Its methods take the [`Sim`] it lives in; what they queue goes
/// out at the next [`Sim::run_for`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawPeer {
    node: NodeId,
    handle: usize,
}

impl RawPeer {
    pub(crate) fn new(node: NodeId, handle: usize) -> Self {
        Self { node, handle }
    }

    /// Its node, for [`Sim::set_links`] and [`Sim::link_stats`].
    #[must_use]
    pub fn node(&self) -> NodeId {
        self.node
    }

    /// Whether its QUIC handshake finished.
    #[must_use]
    pub fn is_connected(&self, sim: &Sim) -> bool {
        sim.raw_view(self.node, self.handle)
            .is_some_and(|c| c.raw.connected)
    }

    /// Why its connection ended, once it has.
    #[must_use]
    pub fn close_reason(&self, sim: &Sim) -> Option<DisconnectReason> {
        let conn = sim.raw_view(self.node, self.handle)?;
        conn.raw
            .lost
            .as_ref()
            .map(|e| crate::endpoint::link_closed(e).into())
    }

    /// Writes `data` on `stream` (opening this side's streams up to it);
    /// returns the bytes QUIC took.
    pub fn write(&self, sim: &mut Sim, stream: StreamId, data: &[u8]) -> usize {
        sim.raw_conn(self.node, self.handle)
            .map_or(0, |c| c.raw_write(stream, data))
    }

    /// Finishes `stream`.
    pub fn finish(&self, sim: &mut Sim, stream: StreamId) {
        if let Some(c) = sim.raw_conn(self.node, self.handle) {
            c.raw_finish(stream);
        }
    }

    /// Sends a QUIC datagram; `false` if QUIC refused it (too large, or
    /// datagrams unsupported by the server).
    pub fn send_datagram(&self, sim: &mut Sim, datagram: Bytes) -> bool {
        sim.raw_conn(self.node, self.handle)
            .is_some_and(|c| c.raw_datagram(datagram))
    }

    /// Every byte received on `stream` so far.
    #[must_use]
    pub fn received(&self, sim: &Sim, stream: StreamId) -> Vec<u8> {
        sim.raw_view(self.node, self.handle)
            .and_then(|c| c.raw.received.get(&stream.0).cloned())
            .unwrap_or_default()
    }

    /// Bytes received on every stream but the control stream: what the
    /// server sent beyond the handshake.
    #[must_use]
    pub fn data_bytes_received(&self, sim: &Sim) -> usize {
        sim.raw_view(self.node, self.handle).map_or(0, |c| {
            c.raw
                .received
                .iter()
                .filter(|(id, _)| **id != StreamId::CONTROL.0)
                .map(|(_, b)| b.len())
                .sum()
        })
    }

    /// Datagrams received so far.
    #[must_use]
    pub fn datagrams_received(&self, sim: &Sim) -> u64 {
        sim.raw_view(self.node, self.handle)
            .map_or(0, |c| c.raw.datagrams)
    }

    /// The largest datagram the server takes from it, once connected.
    #[must_use]
    pub fn max_datagram(&self, sim: &mut Sim) -> Option<usize> {
        sim.raw_conn(self.node, self.handle)
            .and_then(|c| c.conn.datagrams().max_size())
    }
}
