//! The send path: messages in, stream writes and datagrams out. A message
//! arrives encoded once ([`Outgoing`]) with its id beside it; nothing here
//! parses it again. What each channel does is its kind's
//! ([`ChannelKind`]).

use std::collections::VecDeque;
use std::time::Instant;

use bytes::{Bytes, BytesMut};

use super::state::{
    OutQueue, OutStream, Session, State, StreamWrite, Tap, Transmit, UnorderedWrite,
};
use crate::proto::{
    Channel, ChannelKind, DATAGRAM_BUDGET, HEARTBEAT_FRAME, HEARTBEAT_ID, Outgoing, ParsedDatagram,
    Role, SendError, SnapshotAck, SnapshotHeader, ack_datagram, frame_header, snapshot_datagram,
    snapshot_datagram_len, split_datagram, stream_header,
};

impl Session {
    /// Queues `message` on `channel`, as the channel's kind delivers:
    /// ordered on its stream, unordered on a stream of its own, packed in a
    /// datagram, or sequenced in a datagram of its own. Snapshots go
    /// through [`send_datagrams`](Self::send_datagrams), encoded once for
    /// every client.
    ///
    /// # Errors
    /// [`SendError::NotConnected`] before the handshake is done or after
    /// the close ([`SendError::ClientNotConnected`] on a server's session),
    /// [`SendError::NotRegistered`] if this side may not send the
    /// message on `channel`, [`SendError::TooLarge`], or
    /// [`SendError::QueueFull`] when the reliable backlog is full.
    pub fn send(&mut self, channel: Channel, message: &Outgoing) -> Result<(), SendError> {
        let kind = self.check_send(message.id(), channel)?;
        let frame = message.frame();
        match kind {
            ChannelKind::ReliableOrdered | ChannelKind::ReliableUnordered => {
                let max = self.config.limits.max_message_size;
                if frame.len() > max {
                    return Err(SendError::TooLarge {
                        size: frame.len(),
                        max,
                    });
                }
                // One message larger than the whole backlog still goes out
                // alone, so a big reliable message is never refused forever.
                if self.backlog > 0
                    && self.backlog + frame.len() > self.config.limits.reliable_backlog
                {
                    return Err(SendError::QueueFull);
                }
                if kind == ChannelKind::ReliableOrdered {
                    let stream = self.channel_stream(channel);
                    self.push_stream(stream, frame.clone(), true);
                } else {
                    self.push_unordered(channel, frame);
                }
            }
            ChannelKind::Unreliable => {
                let size = 1 + frame.len();
                if size > DATAGRAM_BUDGET {
                    return Err(SendError::TooLarge {
                        size,
                        max: DATAGRAM_BUDGET,
                    });
                }
                if let Some(full) = self.packer.push_frame(frame, DATAGRAM_BUDGET) {
                    self.push_datagram(full);
                }
            }
            ChannelKind::Sequenced => {
                let seq = self.seqs.entry(message.id()).or_insert(0);
                *seq += 1;
                let header = SnapshotHeader {
                    seq: *seq,
                    chunk: 0,
                    chunks: 1,
                };
                let size = snapshot_datagram_len(header, message.message_len());
                if size > DATAGRAM_BUDGET {
                    return Err(SendError::TooLarge {
                        size,
                        max: DATAGRAM_BUDGET,
                    });
                }
                let body = message.message();
                let datagram = snapshot_datagram(&mut BytesMut::new(), header, body.len(), |w| {
                    w.put_slice(&body);
                });
                self.push_datagram(datagram);
            }
            ChannelKind::Snapshot => return Err(SendError::NotRegistered(message.id())),
        }
        self.tap(|| Tap::Message {
            sent: true,
            channel,
            message: message.message(),
        });
        self.counters.messages_out += 1;
        self.sent_since_beat = true;
        Ok(())
    }

    /// Queues datagrams built once for many connections, each carrying one
    /// message `id` of `channel` (a snapshot's chunks, a sequenced message,
    /// a large unreliable message); each must fit [`DATAGRAM_BUDGET`].
    ///
    /// # Errors
    /// As [`send`](Self::send); nothing is queued on an error.
    pub fn send_datagrams(
        &mut self,
        id: u32,
        channel: Channel,
        datagrams: &[Bytes],
    ) -> Result<(), SendError> {
        let kind = self.check_send(id, channel)?;
        if kind.is_reliable() {
            return Err(SendError::NotRegistered(id));
        }
        if let Some(big) = datagrams.iter().find(|d| d.len() > DATAGRAM_BUDGET) {
            return Err(SendError::TooLarge {
                size: big.len(),
                max: DATAGRAM_BUDGET,
            });
        }
        for datagram in datagrams {
            // A delta chunk's body is no encoding of its type: captures
            // record full messages only.
            if let Some(message) = self
                .config
                .tap
                .then(|| datagram_message(datagram))
                .flatten()
            {
                self.tap(|| Tap::Message {
                    sent: true,
                    channel,
                    message,
                });
            }
            self.push_datagram(datagram.clone());
        }
        self.counters.messages_out += datagrams.len() as u64;
        self.sent_since_beat = true;
        Ok(())
    }

    /// Server side, after this tick's chunks of delta snapshot type `id`
    /// went to this client: when the client loses at least `above` of its
    /// packets ([`Limits::delta_redundancy_loss`](crate::proto::Limits::delta_redundancy_loss)),
    /// the previous tick's chunks once more, then keeps this tick's. The
    /// bytes sent again.
    pub(crate) fn send_delta_copy(
        &mut self,
        id: u32,
        channel: Channel,
        chunks: &[Bytes],
        above: Option<f64>,
    ) -> usize {
        /// Packets sent before the loss counts.
        const MIN_PACKETS: u64 = 64;
        // Copies off: nothing to keep either.
        let Some(above) = above else {
            return 0;
        };
        let lossy = self
            .counters
            .loss_over(MIN_PACKETS)
            .is_some_and(|loss| loss >= above);
        let previous = core::mem::take(self.delta_previous.entry(id).or_default());
        let mut resent = 0;
        if lossy && !previous.is_empty() && self.send_datagrams(id, channel, &previous).is_ok() {
            resent = previous.iter().map(Bytes::len).sum();
        }
        let mut kept = previous;
        kept.clear();
        kept.extend_from_slice(chunks);
        self.delta_previous.insert(id, kept);
        resent
    }

    /// Client side: tells the server which snapshots this client holds
    /// (one ack datagram, docs/WIRE.md §12.6), so it can encode deltas
    /// against them. Send once a frame, after applying the frame's chunks.
    ///
    /// # Errors
    /// [`SendError::NotConnected`] before the handshake is done or after
    /// the close; [`SendError::NotRegistered`] on a server;
    /// [`SendError::TooManyAcks`] for more than
    /// [`MAX_ACKS`](crate::proto::MAX_ACKS) acks.
    pub fn send_acks(&mut self, acks: &[SnapshotAck]) -> Result<(), SendError> {
        if self.state != State::Open {
            return Err(self.not_connected());
        }
        if self.role != Role::Client {
            return Err(SendError::NotRegistered(acks.first().map_or(0, |a| a.id)));
        }
        if acks.len() > crate::proto::MAX_ACKS {
            return Err(SendError::TooManyAcks {
                count: acks.len(),
                max: crate::proto::MAX_ACKS,
            });
        }
        if acks.is_empty() {
            return Ok(());
        }
        self.push_datagram(ack_datagram(acks));
        self.sent_since_beat = true;
        Ok(())
    }

    /// Sends the unreliable messages packed so far as one datagram. Call
    /// once per tick, after the tick's sends. Returns whether there was
    /// anything to send.
    pub fn flush(&mut self) -> bool {
        match self.packer.flush() {
            Some(datagram) => {
                self.push_datagram(datagram);
                true
            }
            None => false,
        }
    }

    /// The streams with something to write, highest priority first.
    pub fn writable_streams(&self) -> impl Iterator<Item = OutStream> + '_ {
        self.out_streams
            .iter()
            .filter(|s| !s.queue.is_empty())
            .map(|s| s.stream)
    }

    /// Whether `stream` has writes queued.
    #[must_use]
    pub fn has_stream_writes(&self, stream: OutStream) -> bool {
        self.out_streams
            .iter()
            .any(|s| s.stream == stream && !s.queue.is_empty())
    }

    /// The priority the driver gives `stream` (QUIC stream priority).
    #[must_use]
    pub fn stream_priority(&self, stream: OutStream) -> i32 {
        self.out_streams
            .iter()
            .find(|s| s.stream == stream)
            .map_or(0, |s| s.priority)
    }

    /// The next write on `stream`, taken off the session's backlog.
    #[must_use]
    pub fn poll_stream(&mut self, stream: OutStream) -> Option<StreamWrite> {
        let out = self.out_streams.iter_mut().find(|s| s.stream == stream)?;
        let write = out.queue.pop_front()?;
        if let StreamWrite::Data(data) = &write {
            out.queued -= data.len();
            if stream != OutStream::Control {
                self.backlog = self.backlog.saturating_sub(data.len());
            }
        }
        Some(write)
    }

    /// The next message of a reliable-unordered channel: the driver writes
    /// it on a unidirectional stream of its own and finishes the stream.
    #[must_use]
    pub fn poll_unordered(&mut self) -> Option<UnorderedWrite> {
        let write = self.unordered.pop_front()?;
        self.backlog = self.backlog.saturating_sub(write.data.len());
        Some(write)
    }

    /// The next datagram to send or the close to carry out.
    #[must_use]
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        let transmit = self.transmits.pop_front()?;
        if let Transmit::Datagram(d) = &transmit {
            self.datagrams_queued -= d.len();
        }
        Some(transmit)
    }

    /// Puts back a datagram [`poll_transmit`](Self::poll_transmit) gave that
    /// the transport had no room for: it goes first next time, and counts
    /// against the send buffer again (whose oldest datagrams are dropped
    /// first when it overflows).
    pub(crate) fn unpoll_datagram(&mut self, datagram: Bytes) {
        self.datagrams_queued += datagram.len();
        self.transmits.push_front(Transmit::Datagram(datagram));
    }

    /// A datagram the transport could never send (too large for the path,
    /// the connection gone): counted as dropped.
    pub(crate) fn count_unsent_datagram(&mut self) {
        self.counters.datagrams_dropped += 1;
    }

    /// Bytes queued on reliable streams and not yet taken by the driver.
    #[must_use]
    pub fn backlog(&self) -> usize {
        self.backlog
    }

    /// Client side: sends a heartbeat if nothing went out since the last
    /// check, and schedules the next check.
    pub(super) fn heartbeat(&mut self, now: Instant) {
        let Some(every) = self.config.limits.heartbeat_interval() else {
            self.heartbeat_at = None;
            return;
        };
        // A full backlog already shows the peer we are alive.
        if !self.sent_since_beat && self.backlog < self.config.limits.reliable_backlog {
            let stream = self.channel_stream(Channel::RELIABLE);
            self.push_stream(stream, Bytes::from_static(&HEARTBEAT_FRAME), true);
            self.tap(|| Tap::Message {
                sent: true,
                channel: Channel::RELIABLE,
                message: Bytes::from_static(&[HEARTBEAT_ID as u8]),
            });
        }
        self.sent_since_beat = false;
        self.heartbeat_at = Some(now + every);
    }

    /// The one admission rule on the way out, and the channel's kind.
    fn check_send(&self, id: u32, channel: Channel) -> Result<ChannelKind, SendError> {
        // A session closing gracefully takes nothing new: its streams are
        // finished.
        if self.state != State::Open || self.flush_close.is_some() {
            return Err(self.not_connected());
        }
        let protocol = &self.config.protocol;
        protocol
            .admits(id, channel, self.role)
            .map_err(|_| SendError::NotRegistered(id))?;
        protocol
            .channel(channel)
            .map(|c| c.kind)
            .ok_or(SendError::NotRegistered(id))
    }

    /// Why a send on a session that is not open fails: on a server, the
    /// client it was for is gone; on a client, this side is not connected.
    fn not_connected(&self) -> SendError {
        match (self.role, self.client) {
            (Role::Server, Some(client)) => SendError::ClientNotConnected(client),
            _ => SendError::NotConnected,
        }
    }

    /// The stream of a reliable-ordered channel, its header (the channel's
    /// index) queued on first use.
    fn channel_stream(&mut self, channel: Channel) -> usize {
        let stream = OutStream::Channel(channel);
        if let Some(i) = self.out_streams.iter().position(|s| s.stream == stream) {
            return i;
        }
        let priority = self
            .config
            .protocol
            .channel(channel)
            .map_or(0, |c| c.priority);
        let i = self.new_queue(stream, priority);
        self.push_stream(i, channel_header(channel), false);
        i
    }

    fn new_queue(&mut self, stream: OutStream, priority: i32) -> usize {
        self.out_streams.push(OutQueue {
            stream,
            priority,
            queue: VecDeque::new(),
            queued: 0,
        });
        // Highest priority first; the control stream before all.
        self.out_streams.sort_by_key(|q| {
            (
                q.stream != OutStream::Control,
                core::cmp::Reverse(q.priority),
                q.stream,
            )
        });
        self.out_streams
            .iter()
            .position(|q| q.stream == stream)
            .unwrap_or(0)
    }

    fn push_stream(&mut self, index: usize, data: Bytes, counts: bool) {
        if let Some(out) = self.out_streams.get_mut(index) {
            out.queued += data.len();
            if counts {
                self.backlog += data.len();
            }
            out.queue.push_back(StreamWrite::Data(data));
        }
    }

    /// A message of a reliable-unordered channel, behind the channel's
    /// header, for a stream of its own.
    fn push_unordered(&mut self, channel: Channel, frame: &Bytes) {
        let header = channel_header(channel);
        let mut data = BytesMut::with_capacity(header.len() + frame.len());
        data.extend_from_slice(&header);
        data.extend_from_slice(frame);
        let priority = self
            .config
            .protocol
            .channel(channel)
            .map_or(0, |c| c.priority);
        self.backlog += data.len();
        self.unordered.push_back(UnorderedWrite {
            priority,
            data: data.freeze(),
        });
    }

    /// Queues one length-framed message on the control stream (the hello
    /// or its reply).
    pub(super) fn write_frame(&mut self, payload: &[u8]) {
        let (header, n) = frame_header(payload.len());
        let mut frame = Vec::with_capacity(n + payload.len());
        frame.extend_from_slice(header.get(..n).unwrap_or_default());
        frame.extend_from_slice(payload);
        let index = self.control_queue();
        self.push_stream(index, Bytes::from(frame), false);
    }

    /// Queues the end of the control stream.
    pub(super) fn finish_control(&mut self) {
        let index = self.control_queue();
        if let Some(out) = self.out_streams.get_mut(index) {
            out.queue.push_back(StreamWrite::Finish);
        }
    }

    fn control_queue(&mut self) -> usize {
        match self
            .out_streams
            .iter()
            .position(|s| s.stream == OutStream::Control)
        {
            Some(i) => i,
            None => self.new_queue(OutStream::Control, i32::MAX),
        }
    }

    /// Queues a datagram; past the send buffer the oldest queued ones are
    /// dropped, so a stalled connection gets the newest.
    fn push_datagram(&mut self, datagram: Bytes) {
        let cap = self.config.limits.datagram_send_buffer;
        while self.datagrams_queued + datagram.len() > cap {
            let Some(i) = self
                .transmits
                .iter()
                .position(|t| matches!(t, Transmit::Datagram(_)))
            else {
                break;
            };
            if let Some(Transmit::Datagram(old)) = self.transmits.remove(i) {
                self.datagrams_queued -= old.len();
                self.counters.datagrams_dropped += 1;
            }
        }
        self.datagrams_queued += datagram.len();
        self.transmits.push_back(Transmit::Datagram(datagram));
    }
}

/// A reliable stream's header: the channel's index as a varint.
fn channel_header(channel: Channel) -> Bytes {
    let (bytes, n) = stream_header(channel);
    Bytes::copy_from_slice(bytes.get(..n).unwrap_or_default())
}

/// The message a datagram that carries one message holds (a capture's
/// record of it): a snapshot chunk's message, or the one packed message;
/// `None` for a delta chunk, whose body only its receiver can decode.
fn datagram_message(datagram: &Bytes) -> Option<Bytes> {
    match split_datagram(datagram) {
        Ok(ParsedDatagram::Snapshot(_, message)) => Some(message),
        Ok(ParsedDatagram::Unreliable(mut messages)) if messages.len() == 1 => messages.pop(),
        Ok(ParsedDatagram::Delta(..)) => None,
        _ => Some(datagram.clone()),
    }
}
