//! Delta snapshots in Bevy (docs/WIRE.md §12.10). The server sends a
//! snapshot type registered with
//! [`add_zao_delta_snapshot`](super::AppZaoExt::add_zao_delta_snapshot)
//! through [`ZaoServerSender::send_delta_snapshot`](super::ZaoServerSender::send_delta_snapshot):
//! each client gets it encoded against the newest snapshot it acknowledged,
//! and clients that acknowledged the same one share one encode. Each client
//! App keeps a [`ZaoSnapshots<T>`] resource: the chunks applied to the
//! baselines it holds, acknowledged every update, reassembled, and ordered
//! by tick in a jitter buffer whose render delay follows the measured
//! arrival jitter, so game code reads interpolated entity states. For raw
//! access, every applied chunk is also a [`SnapshotApplied<T>`] message.

use std::time::Instant;

use bevy_ecs::prelude::*;

use crate::proto::{
    ApplyError, Assembled, DeltaReceiver, DeltaSnapshot, Interpolate, JitterBuffer, JitterConfig,
    JitterStats, ReceiverStats, Sample,
};
use crate::quic::ClientId;

use super::ZaoClient;

/// A client's delta snapshots of type `T`: what it received, applied and
/// holds, and its jitter buffer.
#[derive(Resource)]
pub struct ZaoSnapshots<T: DeltaSnapshot> {
    receiver: DeltaReceiver<T>,
    buffer: JitterBuffer<T::Item>,
    config: JitterConfig,
    /// The time of this update (the simulated network's on
    /// [`testing`](super::testing)).
    now: Option<Instant>,
    /// The newest snapshot acknowledged to the server.
    acked: u64,
    /// The connection the receiver's baselines belong to.
    connection: Option<ClientId>,
    dropped: u64,
}

impl<T: DeltaSnapshot> core::fmt::Debug for ZaoSnapshots<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ZaoSnapshots")
            .field("receiver", &self.receiver.stats())
            .field("buffer", &self.buffer)
            .field("acked", &self.acked)
            .finish_non_exhaustive()
    }
}

impl<T: DeltaSnapshot> ZaoSnapshots<T> {
    pub(crate) fn new(config: JitterConfig) -> Self {
        Self {
            receiver: DeltaReceiver::new(),
            buffer: JitterBuffer::new(config.clone()),
            config,
            now: None,
            acked: 0,
            connection: None,
            dropped: 0,
        }
    }

    /// The state to draw now: the ticks on either side of the render time
    /// and how far between them it is ([`Sample::pairs`] gives each
    /// entity's two states). Empty until the first snapshot arrives.
    #[must_use]
    pub fn sample(&self) -> Sample<'_, T::Item> {
        let now = self.now.unwrap_or_else(Instant::now);
        self.buffer.sample(now)
    }

    /// Every entity's state at the render time, interpolated, by key.
    #[must_use]
    pub fn interpolated(&self) -> Vec<T::Item>
    where
        T::Item: Interpolate,
    {
        self.sample().interpolated()
    }

    /// The newest snapshot received whole (or as far as it arrived), as
    /// the server sent it; `None` before the first. (A snapshot whose
    /// items do not make a `T`, past a limit of `T`'s, is `None` too:
    /// [`receiver`](Self::receiver)`().latest()` tells why.)
    #[must_use]
    pub fn latest(&self) -> Option<Assembled<T>> {
        self.receiver.latest().ok().flatten()
    }

    /// The receiver: baselines held, acknowledgements, per-snapshot access.
    #[must_use]
    pub fn receiver(&self) -> &DeltaReceiver<T> {
        &self.receiver
    }

    /// What the receiver applied and dropped.
    #[must_use]
    pub fn stats(&self) -> ReceiverStats {
        self.receiver.stats()
    }

    /// Chunks that arrived in time to be drawn, and late ones.
    #[must_use]
    pub fn jitter_stats(&self) -> JitterStats {
        self.buffer.stats()
    }

    /// The jitter buffer: render delay and latency behind the server.
    #[must_use]
    pub fn buffer(&self) -> &JitterBuffer<T::Item> {
        &self.buffer
    }

    /// Chunks dropped (a baseline not held, duplicates, stale, malformed).
    #[must_use]
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// A new connection: its baselines start empty, within its limits'
    /// snapshot memory.
    fn reset(&mut self, connection: Option<ClientId>, memory: usize) {
        self.receiver = DeltaReceiver::new().with_memory_limit(memory);
        self.buffer = JitterBuffer::new(self.config.clone());
        self.acked = 0;
        self.connection = connection;
    }
}

/// One chunk of a delta snapshot a client applied: raw access beside
/// [`ZaoSnapshots<T>`].
#[derive(Message, Clone, Debug)]
pub struct SnapshotApplied<T: DeltaSnapshot>
where
    T::Item: Clone + Send + Sync,
{
    /// The snapshot's sequence number.
    pub seq: u64,
    /// Its server tick.
    pub tick: u64,
    /// The baseline it was encoded against (0: a keyframe).
    pub baseline: u64,
    /// This chunk's index, of `chunks`.
    pub chunk: u32,
    /// The snapshot's chunk count.
    pub chunks: u32,
    /// Whether the snapshot is whole with this chunk.
    pub complete: bool,
    /// The chunk's items, by key, exactly as the server had them.
    pub items: Vec<T::Item>,
}

/// Takes the chunks of `T` the client received this update, applies them,
/// feeds the jitter buffer, and acknowledges what it holds.
pub(crate) fn receive_delta<T>(
    mut client: Option<ResMut<ZaoClient>>,
    mut snapshots: ResMut<ZaoSnapshots<T>>,
    mut applied: MessageWriter<SnapshotApplied<T>>,
    #[cfg(feature = "sim")] sim: Option<Res<super::sim_network::ZaoSimNetwork>>,
) where
    T: DeltaSnapshot,
    T::Item: Clone + Send + Sync,
{
    #[cfg(feature = "sim")]
    let now = sim.map_or_else(Instant::now, |net| net.lock().now());
    #[cfg(not(feature = "sim"))]
    let now = Instant::now();
    let s = &mut *snapshots;
    s.now = Some(now);
    let Some(client) = client.as_mut() else {
        return;
    };
    let connection = client.id();
    if connection != s.connection {
        s.reset(connection, client.limits().snapshot_memory);
    }
    if let Some(stats) = client.stats() {
        s.buffer.set_rtt(stats.rtt);
    }
    for chunk in client.take_snapshot_chunks(T::ID) {
        let mut items = Vec::new();
        match s.receiver.handle_chunk_into(&chunk, Some(&mut items)) {
            Ok(a) => {
                s.buffer.insert(now, a.tick, a.chunks, items.clone());
                applied.write(SnapshotApplied {
                    seq: a.seq,
                    tick: a.tick,
                    baseline: a.baseline,
                    chunk: a.chunk,
                    chunks: a.chunks,
                    complete: a.complete,
                    items,
                });
            }
            Err(e) => {
                if matches!(e, ApplyError::Malformed(_) | ApplyError::WrongType(_)) {
                    tracing::debug!("delta snapshot chunk dropped: {e}");
                }
                s.dropped += 1;
            }
        }
    }
    let ack = s.receiver.ack();
    if ack.newest != s.acked && client.send_acks(&[ack]) {
        s.acked = ack.newest;
    }
}
