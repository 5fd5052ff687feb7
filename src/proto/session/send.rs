//! The send path: messages in, stream writes and datagrams out. A message
//! arrives encoded once ([`Outgoing`]) with its id beside it; nothing here
//! parses it again.

use std::collections::VecDeque;
use std::time::Instant;

use bytes::Bytes;

use super::state::{OutStream, Session, State, StreamId, StreamWrite, Transmit};
use crate::proto::{
    Channel, ClientId, DATAGRAM_BUDGET, HEARTBEAT_FRAME, Outgoing, SendError, frame_header,
    stream_header,
};

impl Session {
    /// Queues `message` on `channel` ([`Channel::Reliable`] or
    /// [`Channel::Unreliable`]; snapshots go through
    /// [`send_datagrams`](Self::send_datagrams)).
    ///
    /// # Errors
    /// [`SendError::NotConnected`] before the handshake is done or after
    /// the close, [`SendError::NotRegistered`] if this side may not send the
    /// message on `channel`, [`SendError::TooLarge`], or
    /// [`SendError::QueueFull`] when the reliable backlog is full.
    pub fn send(&mut self, channel: Channel, message: &Outgoing) -> Result<(), SendError> {
        self.check_send(message.id(), channel)?;
        let frame = message.frame();
        match channel {
            Channel::Reliable => {
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
                    return Err(SendError::QueueFull(self.id_or_zero()));
                }
                let stream = self.reliable_stream(channel);
                self.push_stream(stream, frame.clone(), true);
            }
            Channel::Unreliable => {
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
            Channel::Snapshot => return Err(SendError::NotRegistered(message.id())),
        }
        self.counters.messages_out += 1;
        self.sent_since_beat = true;
        Ok(())
    }

    /// Queues datagrams built once for many connections, each carrying one
    /// message `id` of `channel` (a snapshot's chunks, a large unreliable
    /// message); each must fit [`DATAGRAM_BUDGET`].
    ///
    /// # Errors
    /// As [`send`](Self::send); nothing is queued on an error.
    pub fn send_datagrams(
        &mut self,
        id: u32,
        channel: Channel,
        datagrams: &[Bytes],
    ) -> Result<(), SendError> {
        self.check_send(id, channel)?;
        if let Some(big) = datagrams.iter().find(|d| d.len() > DATAGRAM_BUDGET) {
            return Err(SendError::TooLarge {
                size: big.len(),
                max: DATAGRAM_BUDGET,
            });
        }
        for datagram in datagrams {
            self.push_datagram(datagram.clone());
        }
        self.counters.messages_out += datagrams.len() as u64;
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

    /// The streams with something to write, in the order to write them.
    pub fn writable_streams(&self) -> impl Iterator<Item = StreamId> + '_ {
        self.out_streams
            .iter()
            .filter(|s| !s.queue.is_empty())
            .map(|s| s.id)
    }

    /// The next write on `stream`, taken off the session's backlog.
    #[must_use]
    pub fn poll_stream(&mut self, stream: StreamId) -> Option<StreamWrite> {
        let out = self.out_streams.iter_mut().find(|s| s.id == stream)?;
        let write = out.queue.pop_front()?;
        if let StreamWrite::Data(data) = &write {
            out.queued -= data.len();
            if stream != StreamId::CONTROL {
                self.backlog = self.backlog.saturating_sub(data.len());
            }
        }
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
            let stream = self.reliable_stream(Channel::Reliable);
            self.push_stream(stream, Bytes::from_static(&HEARTBEAT_FRAME), true);
        }
        self.sent_since_beat = false;
        self.heartbeat_at = Some(now + every);
    }

    fn check_send(&self, id: u32, channel: Channel) -> Result<(), SendError> {
        if self.state != State::Open {
            return Err(SendError::NotConnected(self.id_or_zero()));
        }
        self.config
            .protocol
            .admits(id, channel, self.role)
            .map(|_| ())
            .map_err(|_| SendError::NotRegistered(id))
    }

    fn id_or_zero(&self) -> ClientId {
        self.client.unwrap_or(ClientId(0))
    }

    /// The stream of a reliable channel, opened (its header queued) on
    /// first use.
    fn reliable_stream(&mut self, channel: Channel) -> usize {
        if let Some(i) = self
            .out_streams
            .iter()
            .position(|s| s.id != StreamId::CONTROL && s.id.is_uni())
        {
            return i;
        }
        let id = StreamId::uni(self.role, self.opened_uni);
        self.opened_uni += 1;
        let (bytes, n) = stream_header(channel);
        self.out_streams.push(OutStream {
            id,
            queue: VecDeque::new(),
            queued: 0,
        });
        let i = self.out_streams.len() - 1;
        self.push_stream(
            i,
            Bytes::copy_from_slice(bytes.get(..n).unwrap_or_default()),
            false,
        );
        i
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

    /// Queues one length-framed message on `stream` (the control stream's
    /// hello or reply).
    pub(super) fn write_frame(&mut self, stream: StreamId, payload: &[u8]) {
        let (header, n) = frame_header(payload.len());
        let mut frame = Vec::with_capacity(n + payload.len());
        frame.extend_from_slice(header.get(..n).unwrap_or_default());
        frame.extend_from_slice(payload);
        let index = self.control_stream(stream);
        self.push_stream(index, Bytes::from(frame), false);
    }

    /// Queues the end of `stream`.
    pub(super) fn finish_stream(&mut self, stream: StreamId) {
        let index = self.control_stream(stream);
        if let Some(out) = self.out_streams.get_mut(index) {
            out.queue.push_back(StreamWrite::Finish);
        }
    }

    fn control_stream(&mut self, stream: StreamId) -> usize {
        if let Some(i) = self.out_streams.iter().position(|s| s.id == stream) {
            return i;
        }
        self.out_streams.push(OutStream {
            id: stream,
            queue: VecDeque::new(),
            queued: 0,
        });
        self.out_streams.len() - 1
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
