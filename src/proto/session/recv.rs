//! The receive path: stream bytes and datagrams in, admitted messages out.
//! Every message is parsed once, checked once against the protocol
//! ([`Protocol::admits`](crate::proto::Protocol::admits)), counted against
//! the receive rate, and queued for the application within
//! `limits.inbound_queue`.

use std::time::Instant;

use bytes::Bytes;

use super::state::{InStream, MAX_HANDSHAKE_FRAME, Session, SessionEvent, State, StreamId, Tap};
use crate::proto::{
    Channel, ChannelKind, CloseCode, DeltaHeader, FrameDecoder, HEARTBEAT_ID, MAX_CHUNKS,
    ParsedDatagram, RateVerdict, Received, Role, SnapshotAck, SnapshotChunk, SnapshotVerdict,
    split_datagram,
};

/// Delta snapshot chunks this many sequence numbers older than the newest
/// are dropped on receipt: a bound on what a server can make a client
/// queue, far beyond any history a receiver keeps.
const DELTA_WINDOW: u64 = 1024;

/// What to do with a message that passed admission.
enum Rate {
    Accept,
    /// Over the rate: an unreliable message is dropped.
    Drop,
    /// Over the rate on a reliable stream, or a lasting flood: the
    /// connection is closed (a reliable message never vanishes).
    Close,
}

impl Session {
    /// Bytes arrived on `stream`, in order.
    pub fn handle_stream_bytes(&mut self, now: Instant, stream: StreamId, bytes: &[u8]) {
        if self.state == State::Closed || bytes.is_empty() {
            return;
        }
        if stream == StreamId::CONTROL {
            self.control_bytes(now, bytes);
        } else if !stream.is_uni() || stream.initiator() == self.role {
            self.violation(&format_args!("data on stream {} it may not use", stream.0));
        } else {
            let limits = &self.config.limits;
            if !self.in_streams.contains_key(&stream) {
                // QUIC's stream limit holds a peer to this already; the
                // session holds every transport to it.
                let open = self
                    .in_streams
                    .keys()
                    .filter(|id| **id != StreamId::CONTROL)
                    .count();
                let allowance = limits.stream_allowance(&self.config.protocol);
                if open >= allowance as usize {
                    return self.violation(&format_args!(
                        "stream {} past the {allowance} streams the protocol allows",
                        stream.0
                    ));
                }
            }
            let max = limits.max_message_size;
            self.in_streams
                .entry(stream)
                .or_insert_with(|| InStream {
                    channel: None,
                    frames: FrameDecoder::new(max),
                    finished: false,
                })
                .frames
                .handle_bytes(bytes);
            self.parse_streams(now);
        }
    }

    /// The peer finished `stream`. A reliable-unordered message's stream
    /// ends after its message; a reliable-ordered channel's stream ends
    /// only when a server drains before it closes (`close_flushed`), after
    /// a whole message. Any other end breaks exactly-once delivery: a
    /// violation, found once the stream's bytes are parsed (they may wait
    /// for room in the inbound queue first).
    pub fn handle_stream_finished(&mut self, now: Instant, stream: StreamId) {
        if self.state != State::Open || stream == StreamId::CONTROL {
            return;
        }
        match self.in_streams.get_mut(&stream) {
            Some(s) => s.finished = true,
            None => {
                return self.violation(&format_args!("stream {} closed by the peer", stream.0));
            }
        }
        self.parse_streams(now);
    }

    /// A finished stream whose bytes are parsed as far as they go: whether
    /// it ended where it may.
    fn check_finished(&self, id: StreamId) -> Result<(), String> {
        let Some(s) = self.in_streams.get(&id).filter(|s| s.finished) else {
            return Ok(());
        };
        let kind = s
            .channel
            .and_then(|c| self.config.protocol.channel(c))
            .map(|c| c.kind);
        if kind == Some(ChannelKind::ReliableOrdered) && self.role == Role::Server {
            return Err(format!("stream {} closed by the peer", id.0));
        }
        if s.frames.buffered() > 0 {
            return Err(format!("stream {} ended inside a message", id.0));
        }
        if s.channel.is_none() {
            return Err(format!("stream {} closed by the peer", id.0));
        }
        Ok(())
    }

    /// The peer reset `stream` (abandoned it with `code`). Zao never
    /// resets a stream it writes: every one carries reliable messages or
    /// the handshake, so a reset breaks exactly-once delivery, or the
    /// handshake: a violation (once the session is under way).
    pub fn handle_stream_reset(&mut self, _now: Instant, stream: StreamId, code: u64) {
        if self.state == State::Closed {
            return;
        }
        self.violation(&format_args!(
            "stream {} reset by the peer (code {code})",
            stream.0
        ));
    }

    /// Forgets unordered streams that finished and were read to the end
    /// (a finished ordered channel's stream stays: no second stream may
    /// carry its channel).
    fn drop_finished(&mut self) {
        let protocol = &self.config.protocol;
        self.in_streams.retain(|_, s| {
            let unordered = s
                .channel
                .and_then(|c| protocol.channel(c))
                .is_some_and(|c| c.kind == ChannelKind::ReliableUnordered);
            !(unordered && s.finished && s.frames.buffered() == 0)
        });
    }

    /// Whether the driver should read more of `stream` now: `false` while
    /// the application has a full inbound queue, or while partly received
    /// messages on all streams together hold the connection's receive
    /// window and this stream is not the one furthest along (which always
    /// may finish its message, so reading never deadlocks). QUIC's flow control then
    /// holds the sender back instead of memory growing here.
    #[must_use]
    pub fn wants_stream_bytes(&self, stream: StreamId) -> bool {
        if self.state == State::Closed {
            return false;
        }
        let limits = &self.config.limits;
        let buffered = self
            .in_streams
            .get(&stream)
            .map_or(0, |s| s.frames.buffered());
        // The control stream's one frame has its own limit: capped at
        // `max_message_size`, a longer hello (or refusal) that came in more
        // than one read would never be whole.
        let max = if stream == StreamId::CONTROL {
            MAX_HANDSHAKE_FRAME
        } else {
            limits.max_message_size
        };
        if self.inbound >= limits.inbound_queue || buffered > max {
            return false;
        }
        if self.in_streams.len() <= 1 {
            return true;
        }
        let (total, furthest) = self
            .in_streams
            .values()
            .map(|s| s.frames.buffered())
            .fold((0, 0), |(t, m), b| (t + b, m.max(b)));
        total < limits.connection_receive_window as usize || (buffered > 0 && buffered == furthest)
    }

    /// A QUIC datagram arrived.
    pub fn handle_datagram(&mut self, now: Instant, datagram: Bytes) {
        if self.state != State::Open {
            // Only a reordered datagram can beat the handshake's reply.
            self.counters.datagrams_dropped += 1;
            return;
        }
        if datagram.len() > self.config.limits.max_datagram_payload {
            tracing::debug!(peer = %self.peer, len = datagram.len(), "datagram over the limit dropped");
            self.counters.datagrams_dropped += 1;
            return;
        }
        match split_datagram(&datagram) {
            Ok(ParsedDatagram::Unreliable(messages)) => {
                for message in messages {
                    if self.state != State::Open {
                        return;
                    }
                    self.datagram_message(now, message);
                }
            }
            Ok(ParsedDatagram::Snapshot(header, message)) => {
                let Some((channel, message)) = self.admit_datagram(message, true) else {
                    return;
                };
                match self.snapshots.handle_chunk(message.id(), header) {
                    SnapshotVerdict::Deliver => {
                        self.last_heard = now;
                        // A sequenced message counts against the rate like any
                        // other (the server sends snapshots; a client may
                        // send sequenced messages).
                        match self.rate(now) {
                            Rate::Accept => self.deliver_datagram(channel, message),
                            Rate::Drop => self.counters.rate_limited += 1,
                            Rate::Close => self.flooding(),
                        }
                    }
                    verdict => {
                        tracing::trace!(peer = %self.peer, "{verdict:?} snapshot chunk {header:?}");
                        self.counters.datagrams_dropped += 1;
                    }
                }
            }
            Ok(ParsedDatagram::Delta(header, message)) => self.delta_chunk(now, header, message),
            Ok(ParsedDatagram::Acks(acks)) => self.acks_heard(now, &acks),
            Err(e) => self.violation(&format_args!("malformed datagram: {e}")),
        }
    }

    /// Client side: a chunk of a delta snapshot, for the application's
    /// `DeltaReceiver` (which drops duplicates; the session only drops
    /// what is far too old).
    fn delta_chunk(&mut self, now: Instant, header: DeltaHeader, message: Bytes) {
        if self.role != Role::Client {
            return self.violation(&"a delta snapshot from a client");
        }
        let Some((channel, message)) = self.admit_datagram(message, true) else {
            return;
        };
        let kind = self.config.protocol.channel(channel).map(|c| c.kind);
        if kind != Some(ChannelKind::Snapshot) {
            return self.violation(&format_args!(
                "delta snapshot of message id {} on a {kind:?} channel",
                message.id()
            ));
        }
        let newest = self.delta_newest.entry(message.id()).or_insert(0);
        if header.chunks > MAX_CHUNKS || header.seq.saturating_add(DELTA_WINDOW) <= *newest {
            tracing::trace!(peer = %self.peer, "stale delta chunk {header:?}");
            self.counters.datagrams_dropped += 1;
            return;
        }
        *newest = (*newest).max(header.seq);
        self.last_heard = now;
        if self.inbound >= self.config.limits.inbound_queue {
            tracing::debug!(peer = %self.peer, "inbound queue full: delta chunk dropped");
            self.counters.datagrams_dropped += 1;
            return;
        }
        self.inbound += message.message().len();
        self.counters.messages_in += 1;
        self.events.push_back(SessionEvent::Snapshot {
            channel,
            chunk: SnapshotChunk { header, message },
        });
    }

    /// Server side: what a client holds. Each ack must name a snapshot
    /// type this server sends; the newest ack per type is kept, and only
    /// what this client was sent counts: an ack of a sequence number it
    /// never got (another client's, one from the future) is ignored, and
    /// its `held` bits keep only snapshots it was sent. An ack datagram
    /// counts against the receive rate like any other (a flood of them is
    /// dropped, then disconnected).
    fn acks_heard(&mut self, now: Instant, acks: &[SnapshotAck]) {
        if self.role != Role::Server {
            return self.violation(&"snapshot acks from the server");
        }
        match self.rate(now) {
            Rate::Accept => {}
            Rate::Drop => {
                self.counters.rate_limited += 1;
                return;
            }
            Rate::Close => return self.flooding(),
        }
        for ack in acks {
            let sendable = match self.config.protocol.kind_of(ack.id) {
                Some((channel, ChannelKind::Snapshot)) => self
                    .config
                    .protocol
                    .admits(ack.id, channel, Role::Server)
                    .is_ok(),
                _ => false,
            };
            if !sendable {
                return self.violation(&format_args!(
                    "an ack for message id {}, which is no snapshot this server sends",
                    ack.id
                ));
            }
            let Some(sent) = self.sent_deltas.get(&ack.id).filter(|s| s.has(ack.newest)) else {
                tracing::trace!(peer = %self.peer, "ack of a snapshot not sent to this client: {ack:?}");
                continue;
            };
            let ack = SnapshotAck {
                held: sent.mask(ack),
                ..*ack
            };
            let held = self.acks.entry(ack.id).or_default();
            if ack.newest >= held.newest {
                *held = ack;
            }
        }
        self.last_heard = now;
    }

    fn datagram_message(&mut self, now: Instant, message: Bytes) {
        if is_heartbeat(&message) {
            self.heartbeat_heard(now);
            return;
        }
        let Some((channel, message)) = self.admit_datagram(message, false) else {
            return;
        };
        self.last_heard = now;
        match self.rate(now) {
            Rate::Accept => self.deliver_datagram(channel, message),
            Rate::Drop => self.counters.rate_limited += 1,
            Rate::Close => self.flooding(),
        }
    }

    fn deliver_datagram(&mut self, channel: Channel, message: Received) {
        if self.inbound >= self.config.limits.inbound_queue {
            tracing::debug!(peer = %self.peer, "inbound queue full: datagram message dropped");
            self.counters.datagrams_dropped += 1;
            return;
        }
        self.deliver(channel, message);
    }

    fn deliver(&mut self, channel: Channel, message: Received) {
        self.tap(|| Tap::Message {
            sent: false,
            channel,
            message: message.message().clone(),
        });
        self.inbound += message.message().len();
        self.counters.messages_in += 1;
        self.events
            .push_back(SessionEvent::Message { channel, message });
    }

    /// Parses the id and applies the admission rule; a message that breaks
    /// it closes the connection.
    fn admit(&mut self, channel: Channel, message: Bytes) -> Option<Received> {
        let message = self.parse(message)?;
        self.admit_parsed(channel, message)
    }

    /// Parses a message's id, once: a bad one closes the connection.
    fn parse(&mut self, message: Bytes) -> Option<Received> {
        match Received::parse(message) {
            Ok(m) => Some(m),
            Err(e) => {
                self.violation(&format_args!("bad message id: {e}"));
                None
            }
        }
    }

    /// The admission rule for a parsed message on `channel`.
    fn admit_parsed(&mut self, channel: Channel, message: Received) -> Option<Received> {
        match self
            .config
            .protocol
            .admits(message.id(), channel, self.role.peer())
        {
            Ok(_) => Some(message),
            Err(e) => {
                self.violation(&e);
                None
            }
        }
    }

    /// Parses a datagram's message and applies the admission rule on the
    /// channel its type is registered on, which must be of the datagram's
    /// kind (`sequenced`: a sequenced or snapshot channel; else an
    /// unreliable one). A message that breaks the rule closes the
    /// connection.
    fn admit_datagram(&mut self, message: Bytes, sequenced: bool) -> Option<(Channel, Received)> {
        let message = self.parse(message)?;
        let id = message.id();
        let Some((channel, kind)) = self.config.protocol.kind_of(id) else {
            self.violation(&format_args!("unknown message id {id}"));
            return None;
        };
        let fits = if sequenced {
            kind.is_sequenced()
        } else {
            kind == ChannelKind::Unreliable
        };
        if !fits {
            self.violation(&format_args!(
                "message id {id} is registered on {channel:?} ({kind:?}), not in this datagram"
            ));
            return None;
        }
        self.admit_parsed(channel, message).map(|m| (channel, m))
    }

    /// Counts one message against the receive rate (servers only).
    fn rate(&mut self, now: Instant) -> Rate {
        match self.rate.as_mut().map(|r| r.handle_message(now)) {
            None | Some(RateVerdict::Accept) => Rate::Accept,
            Some(RateVerdict::Drop) => Rate::Drop,
            Some(RateVerdict::Disconnect) => Rate::Close,
        }
    }

    fn flooding(&mut self) {
        tracing::debug!(peer = %self.peer, "flooding over the receive rate: disconnecting");
        self.close(CloseCode::Flooding, "over the receive rate");
    }

    fn heartbeat_tap(&mut self, channel: Channel) {
        self.tap(|| Tap::Message {
            sent: false,
            channel,
            message: Bytes::from_static(&[HEARTBEAT_ID as u8]),
        });
    }

    fn heartbeat_heard(&mut self, now: Instant) {
        self.heartbeat_tap(Channel::UNRELIABLE);
        match self.rate(now) {
            Rate::Close => self.flooding(),
            // A heartbeat over the rate is not a sign of life.
            Rate::Drop => self.counters.rate_limited += 1,
            Rate::Accept => self.last_heard = now,
        }
    }

    /// Bytes on the control stream: the hello (server) or its reply
    /// (client), one frame, nothing after it. They may arrive before QUIC
    /// reports the handshake done (a reordered 1-RTT packet overtaking the
    /// client's last handshake packet): then they wait for it.
    fn control_bytes(&mut self, now: Instant, bytes: &[u8]) {
        if !matches!(self.state, State::Connecting | State::Handshaking) {
            return self.violation(&"data on the control stream after the handshake");
        }
        self.in_streams
            .entry(StreamId::CONTROL)
            .or_insert_with(|| InStream {
                channel: None,
                frames: FrameDecoder::new(MAX_HANDSHAKE_FRAME),
                finished: false,
            })
            .frames
            .handle_bytes(bytes);
        self.parse_control(now);
    }

    /// Handles the handshake message once it is whole and QUIC's
    /// handshake is done.
    pub(super) fn parse_control(&mut self, now: Instant) {
        if self.state != State::Handshaking {
            return;
        }
        let Some(control) = self.in_streams.get_mut(&StreamId::CONTROL) else {
            return;
        };
        let frame = match control.frames.poll_frame() {
            Ok(Some(frame)) => frame,
            Ok(None) => return,
            Err(e) => return self.violation(&format_args!("handshake: {e}")),
        };
        let trailing = control.frames.buffered() > 0;
        self.in_streams.remove(&StreamId::CONTROL);
        if trailing {
            return self.violation(&"bytes after the handshake message");
        }
        match self.role {
            Role::Server => self.handle_hello(now, &frame),
            Role::Client => self.handle_reply(now, &frame),
        }
    }

    /// Parses complete frames of the reliable streams while connected and
    /// the inbound queue has room; the rest stays buffered.
    pub(super) fn parse_streams(&mut self, now: Instant) {
        if self.state != State::Open {
            return;
        }
        let limit = self.config.limits.inbound_queue;
        if self.held_back && self.inbound < limit {
            self.held_back = false;
            if let Some(rate) = self.rate.as_mut() {
                rate.handle_resume(now);
            }
        }
        let ids: Vec<StreamId> = self.in_streams.keys().copied().collect();
        let mut finished = false;
        for id in ids {
            while self.state == State::Open && self.inbound < self.config.limits.inbound_queue {
                match self.next_frame(id) {
                    Ok(Some((channel, frame))) => self.reliable_frame(now, channel, frame),
                    // Everything the stream holds is parsed: if the peer
                    // finished it, it must have ended where it may.
                    Ok(None) => {
                        if let Err(e) = self.check_finished(id) {
                            self.violation(&e);
                            return;
                        }
                        finished |= self.in_streams.get(&id).is_some_and(|s| s.finished);
                        break;
                    }
                    Err(e) => {
                        self.violation(&e);
                        return;
                    }
                }
            }
        }
        if finished {
            self.drop_finished();
        }
        if self.state == State::Open && self.inbound >= limit && !self.held_back {
            // Messages wait for the application: not the client's doing.
            self.held_back = true;
            if let Some(rate) = self.rate.as_mut() {
                rate.handle_pause(now);
            }
        }
    }

    /// The next frame of `id`, with its channel, reading the stream's
    /// channel header first.
    fn next_frame(&mut self, id: StreamId) -> Result<Option<(Channel, Bytes)>, String> {
        let taken: Vec<Channel> = self.in_streams.values().filter_map(|s| s.channel).collect();
        let Some(stream) = self.in_streams.get_mut(&id) else {
            return Ok(None);
        };
        let channel = match stream.channel {
            Some(channel) => channel,
            None => {
                let Some(header) = stream.frames.poll_header().map_err(|e| e.to_string())? else {
                    return Ok(None);
                };
                let (channel, kind) = u8::try_from(header)
                    .ok()
                    .map(Channel)
                    .and_then(|c| Some((c, self.config.protocol.channel(c)?.kind)))
                    .filter(|(_, kind)| kind.is_reliable())
                    .ok_or_else(|| format!("stream header names no reliable channel: {header}"))?;
                if kind == ChannelKind::ReliableOrdered && taken.contains(&channel) {
                    return Err(format!("a second stream for {channel:?}"));
                }
                stream.channel = Some(channel);
                channel
            }
        };
        match stream.frames.poll_frame() {
            Ok(Some(frame)) => Ok(Some((channel, frame))),
            Ok(None) => Ok(None),
            Err(e) => Err(format!("reliable stream: {e}")),
        }
    }

    fn reliable_frame(&mut self, now: Instant, channel: Channel, frame: Bytes) {
        let heartbeat = is_heartbeat(&frame);
        if heartbeat {
            return self.heartbeat_heard_reliable(now);
        }
        let Some(message) = self.admit(channel, frame) else {
            return;
        };
        self.last_heard = now;
        match self.rate(now) {
            Rate::Accept => self.deliver(channel, message),
            Rate::Drop | Rate::Close => self.flooding(),
        }
    }

    fn heartbeat_heard_reliable(&mut self, now: Instant) {
        self.heartbeat_tap(Channel::RELIABLE);
        match self.rate(now) {
            Rate::Accept => self.last_heard = now,
            Rate::Drop | Rate::Close => self.flooding(),
        }
    }
}

/// Id 0 with an empty body.
fn is_heartbeat(message: &[u8]) -> bool {
    message == [HEARTBEAT_ID as u8]
}
