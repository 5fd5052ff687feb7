//! A [`Session`] driven by a script decoded from arbitrary bytes, shared by
//! the `session` fuzz target and the stable-Rust corpus replay in
//! `tests/fuzz_session.rs` (both declare `session_script` beside this
//! module).
//!
//! The input is a [`Script`] (`session_script.rs`): a mode byte (server or client, handshake done
//! first or fuzzed, how the driver reads streams, whether the application
//! and the network keep up), a limits byte (tiny inbound queue, tight rate,
//! small backlog…), then [`Op`]s: bytes and frames on chosen streams
//! (control, the peer's uni streams, ones it may not use), datagrams of
//! each kind, floods, virtual time, admission answers, finishes, losses,
//! and the application's reads, sends, flushes and closes. Time is an
//! `Instant` taken once plus offsets. The driver keeps QUIC's side of the
//! contract: stream bytes wait (flow control) while
//! [`Session::wants_stream_bytes`] says no, and timers fire when
//! [`Session::poll_timeout`] says.
//!
//! Checked, besides "no panic" (any broken property panics):
//! - events: `Connected` once, before any message, with the admitted id
//!   and identity (the id of the server's Welcome on a client); `Refused`
//!   only on a server, never with `Connected`; `Closed` is the last event,
//!   on a server only after `Connected`, and a closed session reports it;
//! - every delivered message is admissible (registered, on the channel it
//!   came on, sent by the peer's side); reliable ones are exactly the
//!   frames of one peer stream with header 0, in order, heartbeats left
//!   out; datagram ones were fed, at most once, in order;
//! - the inbound queue: what one full read drains, minus its last message,
//!   is under `limits.inbound_queue`;
//! - the receive rate (server): messages delivered ≤ burst + 2 × rate ×
//!   elapsed (refill, plus the credit of pauses);
//! - nothing silently lost or stuck: once settled (queue drained, driver
//!   woken), an open session has taken every byte the peer sent, delivered
//!   every complete frame of its reliable stream, and written every
//!   reliable message the application sent; one awaiting the peer's
//!   handshake message takes the control stream's bytes;
//! - sending: `send` returns what the limits say (not connected, not
//!   registered, too large, queue full); the reliable backlog stays under
//!   `max(reliable_backlog + 1, largest frame)`; our reliable stream is the
//!   header then exactly the accepted frames (and a client's heartbeats);
//!   every datagram fits `DATAGRAM_BUDGET` and carries sent messages at most
//!   once, in order; one drain of datagrams fits `datagram_send_buffer`;
//!   `flush` sends only while open; a local close reaches QUIC once, and
//!   nothing is transmitted after it;
//! - timers: after `handle_timeout(now)`, `poll_timeout` is after `now`;
//!   after the close there are none, nor writable streams.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use zao::proto::{
    Channel, ChannelKind, ClientId, CloseCode, ClosedBy, DATAGRAM_BUDGET, DisconnectReason, Hello,
    HelloReply, Identity, Limits, OutStream, Outgoing, ParsedDatagram, PathStats, Protocol,
    RefuseReason, Role, SendError, Session, SessionConfig, SessionEvent, SnapshotHeader, StreamId,
    StreamWrite, Transmit, UnorderedWrite, frame_header, parse_unreliable, snapshot_datagram,
    split_datagram,
};
use zao::{Decode, Encode, Reader};

use crate::session_script;
use crate::session_script::{
    APP_EAGER, CHUNKS, CLIENT, DROPS, HANDSHAKE, HANDSHAKE_CLIENT, NET_EAGER, Op, Script, TOKEN,
    delay, framed, id_bytes, id_value, limits, protocol, stream_id,
};

/// Most flood messages one input may send, so an execution stays short.
const FLOOD_BUDGET: usize = 10_000;

/// The index of the first uni stream [`Op::Fresh`] opens: past every
/// stream a selector names.
const FRESH_STREAMS: u64 = 64;

/// The fuzz target's whole check: decode `data` as a [`Script`], run it.
pub(crate) fn check(data: &[u8]) {
    run(&Script::decode(data));
}

/// Runs `script` and checks every property (panics on a broken one).
pub(crate) fn run(script: &Script) {
    let mut d = Driver::new(script.mode, script.limits);
    for op in prelude(script.mode) {
        d.op(&op);
    }
    if script.mode & 3 != HANDSHAKE {
        assert!(d.session.is_open(), "the prelude's handshake failed");
    }
    for op in &script.ops {
        d.op(op);
    }
    d.settle();
}

/// What a mode does before the script: a valid handshake and, for the
/// reliable stream the peer opens, its header.
fn prelude(mode: u8) -> Vec<Op> {
    match mode & 3 {
        HANDSHAKE => Vec::new(),
        CLIENT => vec![
            Op::Connected(3),
            Op::DrainStreams(0),
            Op::Handshake(0),
            Op::Read(0),
            Op::Bytes {
                stream: 1,
                data: vec![0],
            },
        ],
        _ => vec![
            Op::Connected(3),
            Op::Handshake(0),
            Op::Finish(0),
            Op::Admission(0),
            Op::Read(0),
            Op::DrainStreams(0),
            Op::Bytes {
                stream: 1,
                data: vec![0],
            },
        ],
    }
}

/// What the peer sent on one stream, parsed as the receiver should: for a
/// uni stream a varint header, then frames of at most `max` bytes.
#[derive(Default)]
struct PeerStream {
    bytes: Vec<u8>,
    /// Parsed up to here.
    pos: usize,
    header: Option<u64>,
    /// A bad varint or an oversize frame: nothing after it counts.
    broken: bool,
    /// Complete frames that are not heartbeats.
    frames: Vec<Bytes>,
    /// Frames the session delivered, while this stream may be the one.
    delivered: usize,
    /// The peer finished it while the session was open.
    finished: bool,
}

impl PeerStream {
    /// Parses what arrived since the last call; returns how many frames
    /// it completed.
    fn parse(&mut self, uni: bool, max: usize) -> usize {
        let before = self.frames.len();
        self.parse_more(uni, max);
        self.frames.len() - before
    }

    fn parse_more(&mut self, uni: bool, max: usize) {
        while !self.broken {
            let rest = self.bytes.get(self.pos..).unwrap_or_default();
            let mut r = Reader::new(rest);
            let value = match r.get_varint() {
                Ok(v) => v,
                Err(zao::DecodeError::UnexpectedEnd) if rest.len() < zao::wire::MAX_VARINT_LEN => {
                    return;
                }
                Err(_) => {
                    self.broken = true;
                    return;
                }
            };
            let prefix = rest.len() - r.remaining();
            if uni && self.header.is_none() {
                self.header = Some(value);
                self.pos += prefix;
                continue;
            }
            let Some(len) = usize::try_from(value).ok().filter(|&l| l <= max) else {
                self.broken = true;
                return;
            };
            // A claim near 2^64 (the control stream has no limit here) is
            // simply never complete.
            let Some(frame) = prefix
                .checked_add(len)
                .and_then(|end| rest.get(prefix..end))
            else {
                return;
            };
            if frame != [0] {
                self.frames.push(Bytes::copy_from_slice(frame));
            }
            self.pos += prefix + len;
        }
    }

    /// The channel its header names, if any could.
    fn channel(&self) -> Option<Channel> {
        self.header.and_then(|h| u8::try_from(h).ok()).map(Channel)
    }
}

/// What we wrote on one ordered channel's stream, checked up to `pos`.
#[derive(Default)]
struct OrderedOut {
    /// Frames the application sent and the stream has yet to carry.
    expected: VecDeque<Bytes>,
    bytes: Vec<u8>,
    pos: usize,
}

/// One message id's sequenced deliveries, held to WIRE.md §12.6: under
/// one layout (chunk count) each index only moves forward and stays above
/// the floor; a new layout starts above everything delivered before it.
#[derive(Default)]
struct SeqSeen {
    layout: Option<u32>,
    newest: u64,
    floor: u64,
    slots: BTreeMap<u32, u64>,
}

impl SeqSeen {
    fn delivered(&mut self, id: u32, h: SnapshotHeader) {
        if self.layout != Some(h.chunks) {
            if self.layout.is_some() {
                assert!(
                    h.seq > self.newest,
                    "id {id}: {h:?} changed the layout at or below the newest {}",
                    self.newest
                );
            }
            self.layout = Some(h.chunks);
            self.floor = self.newest;
            self.slots.clear();
        }
        assert!(
            h.seq > self.floor,
            "id {id}: {h:?} at or below the floor {}",
            self.floor
        );
        let slot = self.slots.entry(h.chunk).or_default();
        assert!(
            h.seq > *slot,
            "id {id}: {h:?} after seq {} at its index",
            *slot
        );
        *slot = h.seq;
        self.newest = self.newest.max(h.seq);
    }
}

/// A stream's header: its channel's index as a varint.
fn channel_header(channel: Channel) -> Vec<u8> {
    let (header, n) = frame_header(usize::from(channel.0));
    header[..n].to_vec()
}

/// Bytes the peer sent that the driver has not handed over yet.
#[derive(Default)]
struct Pending {
    data: Vec<u8>,
    /// Handed over up to here.
    taken: usize,
    finish: bool,
}

impl Pending {
    fn waiting(&self) -> usize {
        self.data.len() - self.taken
    }
}

/// Walks a list in order: each item looked up must come later than the
/// last one found (at most once, in order).
#[derive(Default)]
struct Subsequence {
    items: Vec<Bytes>,
    next: usize,
}

impl Subsequence {
    fn find(&mut self, item: &[u8]) -> bool {
        while let Some(candidate) = self.items.get(self.next) {
            self.next += 1;
            if candidate[..] == *item {
                return true;
            }
        }
        false
    }
}

struct Driver {
    session: Session,
    role: Role,
    protocol: Protocol,
    limits: Limits,
    peer: SocketAddr,
    start: Instant,
    now: Instant,
    chunk: usize,
    app_eager: bool,
    net_eager: bool,
    flood_budget: usize,
    snapshot_seq: u64,

    // The peer's side.
    pending: BTreeMap<StreamId, Pending>,
    /// Streams the peer finished: QUIC carries nothing more on them.
    ended: BTreeSet<StreamId>,
    /// Uni streams the peer opened with [`Op::Fresh`].
    fresh: u64,
    control_in: PeerStream,
    uni_in: BTreeMap<StreamId, PeerStream>,
    /// Per ordered channel, the streams its delivered messages may have
    /// come from.
    ordered_from: BTreeMap<Channel, Vec<StreamId>>,
    /// Per unordered channel and message: (complete frames the session
    /// took, deliveries).
    unordered_in: BTreeMap<(Channel, Bytes), (usize, usize)>,
    unreliable_in: Subsequence,
    /// Sequenced messages the session delivered (known from its
    /// `messages_in`), in order.
    sequenced_in: VecDeque<Bytes>,
    /// Per message id, what its deliveries allow next (WIRE.md §12.6).
    sequenced_seen: BTreeMap<u32, SeqSeen>,

    // Events.
    delivered: u64,
    connected: Option<ClientId>,
    refused: bool,
    closed_event: bool,
    auth_requested: bool,
    auth_answered: bool,
    expect_connected: Option<(ClientId, Option<Identity>)>,
    expect_refused: Option<RefuseReason>,

    // Our side.
    messages_out: u64,
    ordered_out: BTreeMap<Channel, OrderedOut>,
    /// Unordered messages sent and not yet written: header and frame.
    unordered_out: VecDeque<Bytes>,
    /// The most one send added to the backlog.
    largest_send: usize,
    control_out: Vec<u8>,
    control_finished: bool,
    unreliable_out: Subsequence,
    datagrams_out: Subsequence,
    /// Per message id, the seq of its last sequenced send.
    seq_out: BTreeMap<u32, u64>,
    closes: usize,
}

impl Driver {
    fn new(mode: u8, limit_bits: u8) -> Self {
        let role = match mode & 3 {
            CLIENT => Role::Client,
            HANDSHAKE if mode & HANDSHAKE_CLIENT != 0 => Role::Client,
            _ => Role::Server,
        };
        let protocol = protocol();
        let limits = limits(limit_bits);
        let mut config = SessionConfig::new(protocol.clone(), limits.clone());
        config.token = Some(TOKEN.to_vec());
        let config = Arc::new(config);
        let peer = SocketAddr::from(([192, 0, 2, 7], 4433));
        let start = Instant::now();
        let session = match role {
            Role::Server => Session::server(config, peer, start),
            Role::Client => Session::client(config, peer, start),
        };
        Self {
            session,
            role,
            protocol,
            limits,
            peer,
            start,
            now: start,
            chunk: CHUNKS[usize::from((mode >> 3) & 7)],
            app_eager: mode & APP_EAGER != 0,
            net_eager: mode & NET_EAGER != 0,
            flood_budget: FLOOD_BUDGET,
            snapshot_seq: 0,
            pending: BTreeMap::new(),
            ended: BTreeSet::new(),
            fresh: 0,
            control_in: PeerStream::default(),
            uni_in: BTreeMap::new(),
            ordered_from: BTreeMap::new(),
            unordered_in: BTreeMap::new(),
            unreliable_in: Subsequence::default(),
            sequenced_in: VecDeque::new(),
            sequenced_seen: BTreeMap::new(),
            delivered: 0,
            connected: None,
            refused: false,
            closed_event: false,
            auth_requested: false,
            auth_answered: false,
            expect_connected: None,
            expect_refused: None,
            messages_out: 0,
            ordered_out: BTreeMap::new(),
            unordered_out: VecDeque::new(),
            largest_send: 0,
            control_out: Vec::new(),
            control_finished: false,
            unreliable_out: Subsequence::default(),
            datagrams_out: Subsequence::default(),
            seq_out: BTreeMap::new(),
            closes: 0,
        }
    }

    /// Runs one op, then does what a driver does after any input.
    fn op(&mut self, op: &Op) {
        match op {
            Op::Bytes { stream, data } => self.send_stream(*stream, data),
            Op::Frame { stream, id, body } => {
                let message = [id_bytes(*id), body.clone()].concat();
                self.send_stream(*stream, &framed(&message));
            }
            Op::Finish(stream) => self.finish(stream_id(*stream, self.role)),
            Op::Fresh {
                header,
                id,
                body,
                finish,
            } => {
                let message = [id_bytes(*id), body.clone()].concat();
                let stream = self.fresh_stream();
                let (h, n) = frame_header(usize::from(*header));
                self.send_on(stream, &[&h[..n], &framed(&message)].concat());
                if *finish {
                    self.finish(stream);
                }
            }
            Op::Datagram(data) => self.datagram(Bytes::copy_from_slice(data)),
            Op::Unreliable(messages) => {
                let mut d = vec![0x01];
                for (id, body) in messages {
                    d.extend(framed(&[id_bytes(*id), body.clone()].concat()));
                }
                self.datagram(Bytes::from(d));
            }
            Op::Snapshot {
                seq,
                chunk,
                chunks,
                id,
                body,
            } => {
                let header = SnapshotHeader {
                    seq: u64::from(*seq),
                    chunk: u32::from(*chunk),
                    chunks: u32::from(*chunks),
                };
                let message = [id_bytes(*id), body.clone()].concat();
                self.datagram(snapshot(header, &message));
            }
            Op::Flood {
                kind,
                count,
                id,
                len,
                gap,
            } => self.flood(*kind, *count, *id, *len, *gap),
            Op::Advance(b) => self.advance(delay(*b)),
            Op::Timeout => self.timeout(),
            Op::Connected(b) => {
                let max = match b % 5 {
                    0 => None,
                    1 => Some(60),
                    2 => Some(DATAGRAM_BUDGET - 1),
                    3 => Some(1200),
                    _ => Some(DATAGRAM_BUDGET + usize::from(*b)),
                };
                self.session.handle_connected(self.now, max);
            }
            Op::Admission(b) => self.admission(*b),
            Op::Lost(b) => {
                let reason = match b % 3 {
                    0 => DisconnectReason::TimedOut,
                    1 => DisconnectReason::Closed {
                        by: ClosedBy::Peer,
                        code: CloseCode::Normal,
                        reason: "bye".into(),
                    },
                    _ => DisconnectReason::Closed {
                        by: ClosedBy::Peer,
                        code: CloseCode::HandshakeTimeout,
                        reason: "late".into(),
                    },
                };
                self.session.handle_connection_lost(self.now, reason);
                assert!(
                    self.session.is_closed(),
                    "open after the connection was lost"
                );
            }
            Op::Read(b) => {
                let n = usize::from(b & 0x7f);
                self.read_events((n > 0).then_some(n));
                if b & 0x80 == 0 {
                    self.timeout();
                }
            }
            Op::Send { channel, id, body } => self.app_send(*channel, *id, body),
            Op::SendDatagrams {
                channel,
                id,
                count,
                len,
            } => self.app_send_datagrams(*channel, *id, *count, *len),
            Op::Flush => {
                let flushed = self.session.flush();
                assert!(!flushed || self.session.is_open(), "a flush while not open");
            }
            Op::Close(b) => {
                let was_closed = self.session.is_closed();
                let code = CloseCode::from_wire(u64::from(b % 10));
                self.session.close(code, "fuzz");
                assert!(self.session.is_closed());
                if !was_closed {
                    let expected = DisconnectReason::Closed {
                        by: ClosedBy::Local,
                        code,
                        reason: "fuzz".into(),
                    };
                    assert_eq!(self.session.close_reason(), Some(&expected));
                }
            }
            Op::DrainTransmits => self.drain_transmits(),
            Op::DrainStreams(n) => self.drain_streams((*n > 0).then_some(usize::from(*n))),
            Op::Handshake(b) => {
                let message = match self.role {
                    Role::Server => self.hello(*b),
                    Role::Client => reply(*b),
                };
                self.send_stream(0, &message);
            }
        }
        self.after_op();
    }

    /// The driver's round after any input: hand over stream bytes, run the
    /// auth, fire due timers, and (when they keep up) let the application
    /// read and the network take what is queued.
    fn after_op(&mut self) {
        self.pump();
        self.poll_auth();
        if self.session.poll_timeout().is_some_and(|t| t <= self.now) {
            self.timeout();
        }
        if self.app_eager {
            self.read_events(None);
            self.timeout();
        }
        if self.net_eager {
            self.drain_transmits();
            self.drain_streams(None);
        }
        self.check_always();
    }

    fn check_always(&mut self) {
        if self.session.is_closed() {
            assert_eq!(
                self.session.poll_unordered(),
                None,
                "an unordered write after the close"
            );
        }
        let s = &self.session;
        let bound = (self.limits.reliable_backlog + 1).max(self.largest_send);
        assert!(
            s.backlog() <= bound,
            "reliable backlog {} over {bound}",
            s.backlog()
        );
        assert_eq!(s.stats().messages_out, self.messages_out, "messages_out");
        if s.is_closed() {
            assert_eq!(s.poll_timeout(), None, "a timer after the close");
            assert_eq!(s.writable_streams().count(), 0, "writes after the close");
            assert_eq!(s.backlog(), 0, "a backlog after the close");
            assert!(s.close_reason().is_some(), "closed without a reason");
        }
    }

    /// Peer bytes on a stream: they wait in "QUIC" until the session
    /// wants them.
    fn send_stream(&mut self, stream: u8, data: &[u8]) {
        self.send_on(stream_id(stream, self.role), data);
    }

    fn send_on(&mut self, id: StreamId, data: &[u8]) {
        if self.ended.contains(&id) || self.pending.get(&id).is_some_and(|p| p.finish) {
            return; // QUIC carries nothing after a stream's end
        }
        self.pending
            .entry(id)
            .or_default()
            .data
            .extend_from_slice(data);
        self.pump_stream(id);
    }

    /// The peer finishes `id` after what it sent on it.
    fn finish(&mut self, id: StreamId) {
        if !self.ended.contains(&id) {
            self.pending.entry(id).or_default().finish = true;
            self.pump_stream(id);
        }
    }

    /// A uni stream of the peer's that no selector names.
    fn fresh_stream(&mut self) -> StreamId {
        self.fresh += 1;
        StreamId::uni(self.role.peer(), FRESH_STREAMS + self.fresh)
    }

    /// Hands waiting stream bytes over while the session wants them, in
    /// reads of `chunk` bytes, then the finishes. Returns whether any moved.
    fn pump(&mut self) -> bool {
        let ids: Vec<StreamId> = self.pending.keys().copied().collect();
        let mut moved = false;
        for id in ids {
            moved |= self.pump_stream(id);
        }
        moved
    }

    /// Hands over what the peer sent on `id` while the session wants it
    /// (a driver woken by that stream alone: sending on one of thousands
    /// of streams must not walk them all).
    fn pump_stream(&mut self, id: StreamId) -> bool {
        let mut moved = false;
        while let Some(p) = self.pending.get_mut(&id) {
            if p.waiting() == 0 {
                if p.finish {
                    self.pending.remove(&id);
                    self.ended.insert(id);
                    let open = self.session.is_open();
                    self.session.handle_stream_finished(self.now, id);
                    if open && id.is_uni() && id.initiator() == self.role.peer() {
                        self.uni_in.entry(id).or_default().finished = true;
                    }
                    moved = true;
                }
                break;
            }
            if !self.session.wants_stream_bytes(id) {
                break;
            }
            let n = self.chunk.min(p.waiting());
            let chunk = p.data[p.taken..p.taken + n].to_vec();
            p.taken += n;
            self.record_stream(id, &chunk);
            self.session.handle_stream_bytes(self.now, id, &chunk);
            moved = true;
        }
        moved
    }

    /// Keeps what the session took on a stream it must read.
    fn record_stream(&mut self, id: StreamId, chunk: &[u8]) {
        if self.session.is_closed() {
            return;
        }
        if id == StreamId::CONTROL {
            self.control_in.bytes.extend_from_slice(chunk);
            self.control_in.parse(false, usize::MAX);
        } else if id.is_uni() && id.initiator() == self.role.peer() {
            let protocol = &self.protocol;
            let s = self.uni_in.entry(id).or_default();
            s.bytes.extend_from_slice(chunk);
            let new = s.parse(true, self.limits.max_message_size);
            let unordered = s.channel().filter(|&c| {
                protocol.channel(c).map(|d| d.kind) == Some(ChannelKind::ReliableUnordered)
            });
            if let Some(c) = unordered {
                for frame in &s.frames[s.frames.len() - new..] {
                    self.unordered_in.entry((c, frame.clone())).or_default().0 += 1;
                }
            }
        }
    }

    /// The error of a send on a session that is not open: a server's
    /// client is gone; a client is not connected.
    fn not_connected(&self) -> SendError {
        match (self.role, self.session.client_id()) {
            (Role::Server, Some(client)) => SendError::ClientNotConnected(client),
            _ => SendError::NotConnected,
        }
    }

    /// The kind of `channel` in the protocol.
    fn kind(&self, channel: Channel) -> Option<ChannelKind> {
        self.protocol.channel(channel).map(|c| c.kind)
    }

    fn datagram(&mut self, d: Bytes) {
        let sequenced = match split_datagram(&d) {
            Ok(ParsedDatagram::Unreliable(messages)) => {
                self.unreliable_in
                    .items
                    .extend(messages.into_iter().filter(|m| m[..] != [0]));
                None
            }
            Ok(ParsedDatagram::Snapshot(header, message)) => Some((header, message)),
            // Delta chunks and acks: the script sends none on purpose; as
            // random bytes the session must only survive them.
            _ => None,
        };
        let before = self.session.stats();
        self.session.handle_datagram(self.now, d);
        let Some((header, message)) = sequenced else {
            return;
        };
        // A sequenced datagram carries one message: whether it was
        // delivered shows in `messages_in`.
        let after = self.session.stats();
        if after.messages_in > before.messages_in {
            assert_eq!(after.messages_in, before.messages_in + 1);
            let (id, _) = zao::split_message(&message).expect("a delivered message has an id");
            self.sequenced_seen
                .entry(id)
                .or_default()
                .delivered(id, header);
            self.sequenced_in.push_back(message);
        } else if self.session.is_open() {
            assert!(
                after.datagrams_dropped + after.rate_limited
                    > before.datagrams_dropped + before.rate_limited,
                "a sequenced datagram neither delivered nor counted as dropped"
            );
        }
    }

    fn flood(&mut self, kind: u8, count: u8, id: u8, len: u8, gap: u8) {
        let gap = Duration::from_micros(u64::from(gap) * 500);
        let filler: Vec<u8> = (0..len).collect();
        let message = [id_bytes(id), filler].concat();
        let frame = framed(&message);
        let per_datagram = ((DATAGRAM_BUDGET - 1) / frame.len()).max(1);
        // The budget counts messages, so a packed flood sends fewer datagrams.
        let each = if kind % 7 == 2 { per_datagram } else { 1 };
        let n = ((usize::from(count) + 1) * 8).min(self.flood_budget / each);
        self.flood_budget -= n * each;
        for i in 0..n {
            match kind % 7 {
                0 => self.send_stream(1, &frame),
                1 => self.datagram(Bytes::from([&[0x01][..], &frame].concat())),
                2 => {
                    let mut d = vec![0x01];
                    for _ in 0..per_datagram {
                        d.extend_from_slice(&frame);
                    }
                    self.datagram(Bytes::from(d));
                }
                3 => {
                    self.snapshot_seq += 1;
                    let header = SnapshotHeader {
                        seq: self.snapshot_seq,
                        chunk: (i % 2) as u32,
                        chunks: 2,
                    };
                    self.datagram(snapshot(header, &message));
                }
                4 => self.send_stream(1, &[0x01, 0x00]),
                5 => self.datagram(Bytes::from_static(&[0x01, 0x01, 0x00])),
                _ => {
                    let stream = self.fresh_stream();
                    self.send_on(stream, &[&channel_header(DROPS)[..], &frame].concat());
                    self.finish(stream);
                }
            }
            if !gap.is_zero() {
                self.advance(gap);
            }
        }
    }

    /// Moves virtual time on by `by`, firing each timer as it falls due.
    fn advance(&mut self, by: Duration) {
        let target = self.now + by;
        let mut fired = 0;
        while let Some(at) = self.session.poll_timeout() {
            if at > target {
                break;
            }
            self.now = self.now.max(at);
            self.timeout();
            fired += 1;
            assert!(fired < 100_000, "timers keep falling due");
        }
        self.now = target;
    }

    /// A driver's wake-up: QUIC's figures (their sample is one of the
    /// session's timers), then the timers.
    fn timeout(&mut self) {
        let path = PathStats {
            rtt: Duration::from_millis(30),
            ..PathStats::default()
        };
        self.session.handle_path_stats(self.now, path);
        self.session.handle_timeout(self.now);
        if let Some(at) = self.session.poll_timeout() {
            assert!(
                at > self.now,
                "poll_timeout {:?} is not after the handle_timeout it follows",
                at.saturating_duration_since(self.start)
            );
        }
    }

    fn poll_auth(&mut self) {
        let Some(request) = self.session.poll_auth() else {
            return;
        };
        assert_eq!(self.role, Role::Server, "a client asked for auth");
        assert!(!self.auth_requested, "auth asked twice");
        assert_eq!(request.addr, self.peer);
        let hello = self
            .control_in
            .frames
            .first()
            .and_then(|f| Hello::decode(f).ok());
        let hello = hello.expect("auth without a hello");
        assert_eq!(request.token, hello.token, "the token is the hello's");
        self.auth_requested = true;
    }

    fn admission(&mut self, b: u8) {
        let decision = match b % 6 {
            0 => Ok((ClientId(u64::from(b)), Some(Identity::new("fuzz")))),
            1 | 2 => Ok((ClientId(u64::from(b)), None)),
            3 => Err(RefuseReason::ServerFull),
            4 => Err(RefuseReason::Unauthorized {
                detail: "no".into(),
            }),
            _ => Err(RefuseReason::AlreadyConnected),
        };
        let admitting = self.role == Role::Server
            && self.auth_requested
            && !self.auth_answered
            && !self.session.is_closed();
        if admitting {
            self.auth_answered = true;
            match &decision {
                Ok(ok) => self.expect_connected = Some(ok.clone()),
                Err(reason) => self.expect_refused = Some(reason.clone()),
            }
        }
        let accepted = decision.is_ok();
        self.session.handle_admission(self.now, decision);
        if admitting {
            assert_eq!(self.session.is_open(), accepted, "the admission's answer");
        }
    }

    /// The hello variants a server may receive.
    fn hello(&self, b: u8) -> Vec<u8> {
        let good = Hello::new(&self.protocol, Some(TOKEN.to_vec()));
        match b % 10 {
            0 => framed(&good.to_encoded_vec()),
            1 => framed(
                &Hello {
                    token: None,
                    ..good
                }
                .to_encoded_vec(),
            ),
            2 => framed(&Hello { magic: 0, ..good }.to_encoded_vec()),
            3 => framed(
                &Hello {
                    version: "0.0.1-fuzz".into(),
                    ..good
                }
                .to_encoded_vec(),
            ),
            4 => framed(&Hello::new(&zao_messages::protocol(), None).to_encoded_vec()),
            5 => {
                let whole = framed(&good.to_encoded_vec());
                whole[..whole.len() / 2].to_vec()
            }
            6 => framed(b"not a hello"),
            7 => {
                let (header, n) = frame_header(1 << 20);
                header[..n].to_vec()
            }
            8 => [framed(&good.to_encoded_vec()), vec![0]].concat(),
            // The same registrations, without the channels they name.
            _ => framed(
                &Hello {
                    channels: Vec::new(),
                    ..good
                }
                .to_encoded_vec(),
            ),
        }
    }

    fn app_send(&mut self, channel: u8, id: u8, body: &[u8]) {
        let message = [id_bytes(id), body.to_vec()].concat();
        let Ok(out) = Outgoing::from_message(&message) else {
            return;
        };
        let channel = session_script::channel(channel);
        let kind = self.kind(channel);
        let backlog = self.session.backlog();
        let frame = out.frame().len();
        let max = self.limits.max_message_size;
        let mut datagram = None;
        let expected = if !self.session.is_open() {
            Err(self.not_connected())
        } else if self.protocol.admits(out.id(), channel, self.role).is_err() {
            Err(SendError::NotRegistered(out.id()))
        } else {
            match kind {
                Some(k) if k.is_reliable() && frame > max => {
                    Err(SendError::TooLarge { size: frame, max })
                }
                Some(k)
                    if k.is_reliable()
                        && backlog > 0
                        && backlog + frame > self.limits.reliable_backlog =>
                {
                    Err(SendError::QueueFull)
                }
                Some(ChannelKind::Unreliable) if 1 + frame > DATAGRAM_BUDGET => {
                    Err(SendError::TooLarge {
                        size: 1 + frame,
                        max: DATAGRAM_BUDGET,
                    })
                }
                Some(ChannelKind::Sequenced) => {
                    // The seq is taken before the size is checked.
                    let seq = self.seq_out.entry(out.id()).or_insert(0);
                    *seq += 1;
                    let header = SnapshotHeader {
                        seq: *seq,
                        chunk: 0,
                        chunks: 1,
                    };
                    let d = snapshot(header, &out.message());
                    if d.len() > DATAGRAM_BUDGET {
                        Err(SendError::TooLarge {
                            size: d.len(),
                            max: DATAGRAM_BUDGET,
                        })
                    } else {
                        datagram = Some(d);
                        Ok(())
                    }
                }
                Some(ChannelKind::Snapshot) => Err(SendError::NotRegistered(out.id())),
                _ => Ok(()),
            }
        };
        assert_eq!(self.session.send(channel, &out), expected, "send {out:?}");
        if expected.is_err() {
            return;
        }
        self.messages_out += 1;
        match kind {
            Some(ChannelKind::ReliableOrdered) => {
                self.backlog_grew(backlog, frame);
                self.ordered_out
                    .entry(channel)
                    .or_default()
                    .expected
                    .push_back(out.frame().clone());
            }
            Some(ChannelKind::ReliableUnordered) => {
                let data: Bytes = [&channel_header(channel)[..], out.frame()].concat().into();
                self.backlog_grew(backlog, data.len());
                self.unordered_out.push_back(data);
            }
            Some(ChannelKind::Unreliable) => self.unreliable_out.items.push(out.message()),
            _ => self
                .datagrams_out
                .items
                .extend(datagram.into_iter().collect::<Vec<_>>()),
        }
    }

    /// A reliable send of `len` bytes was queued on `before`.
    fn backlog_grew(&mut self, before: usize, len: usize) {
        assert_eq!(self.session.backlog(), before + len, "backlog after send");
        self.largest_send = self.largest_send.max(len);
    }

    fn app_send_datagrams(&mut self, channel: u8, id: u8, count: u8, len: u16) {
        let channel = session_script::channel(channel.wrapping_add(2));
        let count = count % 8 + 1;
        let len = usize::from(len % 1400);
        let message: Vec<u8> = id_bytes(id)
            .into_iter()
            .chain((0..len).map(|i| i as u8))
            .collect();
        let datagrams: Vec<Bytes> = (0..count)
            .map(|chunk| {
                self.snapshot_seq += 1;
                let header = SnapshotHeader {
                    seq: self.snapshot_seq,
                    chunk: u32::from(chunk),
                    chunks: u32::from(count),
                };
                snapshot(header, &message)
            })
            .collect();
        let id = id_value(id);
        let expected = if !self.session.is_open() {
            Err(self.not_connected())
        } else if self.protocol.admits(id, channel, self.role).is_err()
            || self.kind(channel).is_none_or(ChannelKind::is_reliable)
        {
            Err(SendError::NotRegistered(id))
        } else if let Some(big) = datagrams.iter().find(|d| d.len() > DATAGRAM_BUDGET) {
            Err(SendError::TooLarge {
                size: big.len(),
                max: DATAGRAM_BUDGET,
            })
        } else {
            Ok(())
        };
        let got = self.session.send_datagrams(id, channel, &datagrams);
        assert_eq!(got, expected, "send_datagrams on {channel:?}");
        if got.is_ok() {
            self.messages_out += u64::from(count);
            self.datagrams_out.items.extend(datagrams);
        }
    }

    /// The application reads up to `max` events (all if `None`).
    fn read_events(&mut self, max: Option<usize>) {
        let mut read = 0;
        let (mut bytes, mut last) = (0, 0);
        while max.is_none_or(|m| read < m) {
            let Some(event) = self.session.poll_event() else {
                break;
            };
            read += 1;
            assert!(!self.closed_event, "{event:?} after Closed");
            match event {
                SessionEvent::Connected { client, identity } => {
                    self.connected_event(client, identity);
                }
                SessionEvent::Refused(reason) => {
                    assert_eq!(self.role, Role::Server, "a client reported Refused");
                    assert!(self.connected.is_none() && !self.refused, "Refused after");
                    if let Some(expected) = &self.expect_refused {
                        assert_eq!(&reason, expected, "the refusal is the admission's");
                    }
                    self.refused = true;
                }
                SessionEvent::Message { channel, message } => {
                    let len = message.message().len();
                    self.message_event(channel, message.id(), message.message());
                    bytes += len;
                    last = len;
                }
                SessionEvent::Snapshot { channel, chunk } => {
                    // A delta chunk: only a client receives one, on a
                    // channel the protocol lets the server send it on.
                    assert_eq!(self.role, Role::Client, "a server got a delta chunk");
                    assert!(self.connected.is_some(), "a delta chunk before Connected");
                    let id = chunk.message.id();
                    if let Err(e) = self.protocol.admits(id, channel, self.role.peer()) {
                        panic!("delivered an inadmissible delta chunk on {channel:?}: {e}");
                    }
                    self.delivered += 1;
                    let len = chunk.message.message().len();
                    bytes += len;
                    last = len;
                }
                SessionEvent::Closed(reason) => {
                    assert!(self.session.is_closed(), "Closed while open");
                    assert_eq!(self.session.close_reason(), Some(&reason));
                    if self.role == Role::Server {
                        assert!(
                            self.connected.is_some(),
                            "Closed for a client never told of"
                        );
                    }
                    self.closed_event = true;
                }
            }
        }
        if max.is_none() {
            // Everything queued came out: the last message was admitted
            // while the queue held less than the limit.
            assert!(
                bytes == 0 || bytes - last < self.limits.inbound_queue,
                "inbound queue held {bytes} bytes, the last message {last}, limit {}",
                self.limits.inbound_queue
            );
            assert_eq!(self.session.stats().messages_in, self.delivered);
        }
    }

    fn connected_event(&mut self, client: ClientId, identity: Option<Identity>) {
        assert!(
            self.connected.is_none() && !self.refused,
            "Connected twice or after Refused"
        );
        match self.role {
            Role::Server => assert_eq!(
                Some((client, identity)),
                self.expect_connected,
                "Connected is the admission's"
            ),
            Role::Client => {
                let welcome = self
                    .control_in
                    .frames
                    .first()
                    .and_then(|f| HelloReply::decode(f).ok());
                assert_eq!(
                    welcome,
                    Some(HelloReply::Welcome {
                        client_id: client.0
                    }),
                    "Connected is the Welcome's"
                );
                assert_eq!(identity, None);
            }
        }
        self.connected = Some(client);
    }

    fn message_event(&mut self, channel: Channel, id: u32, message: &Bytes) {
        assert!(self.connected.is_some(), "a message before Connected");
        assert_eq!(zao::split_message(message).map(|(id, _)| id), Ok(id));
        if let Err(e) = self.protocol.admits(id, channel, self.role.peer()) {
            panic!("delivered an inadmissible message on {channel:?}: {e}");
        }
        match self.kind(channel) {
            Some(ChannelKind::ReliableOrdered) => self.ordered_delivered(channel, message),
            Some(ChannelKind::ReliableUnordered) => {
                let (sent, delivered) = self
                    .unordered_in
                    .entry((channel, message.clone()))
                    .or_default();
                *delivered += 1;
                assert!(
                    delivered <= sent,
                    "{message:?} on {channel:?} delivered {delivered} times, sent {sent}"
                );
            }
            Some(ChannelKind::Unreliable) => assert!(
                self.unreliable_in.find(message),
                "an unreliable message not sent, or twice, or out of order"
            ),
            Some(ChannelKind::Sequenced | ChannelKind::Snapshot) => assert_eq!(
                self.sequenced_in.pop_front().as_ref(),
                Some(message),
                "a sequenced message the session did not take, or out of order"
            ),
            kind => panic!("a message delivered on {channel:?} of kind {kind:?}"),
        }
        self.delivered += 1;
        if self.role == Role::Server {
            let rate = self.limits.receive_rate;
            let secs = self.now.duration_since(self.start).as_secs_f64();
            let bound = f64::from(rate.burst) + 2.0 * f64::from(rate.messages_per_second) * secs;
            assert!(
                self.delivered as f64 <= bound + 1.0,
                "{} messages delivered in {secs} s, over the receive rate ({bound})",
                self.delivered
            );
        }
    }

    /// An ordered message must be the next frame of the peer's stream of
    /// its channel: of every stream with the channel's header that it can
    /// be, keep those.
    fn ordered_delivered(&mut self, channel: Channel, message: &Bytes) {
        let candidates = self.ordered_from.remove(&channel).unwrap_or_else(|| {
            self.uni_in
                .iter()
                .filter(|(_, s)| s.channel() == Some(channel))
                .map(|(&id, _)| id)
                .collect()
        });
        let mut kept = Vec::new();
        for id in candidates {
            if let Some(s) = self.uni_in.get_mut(&id)
                && s.frames.get(s.delivered) == Some(message)
            {
                s.delivered += 1;
                kept.push(id);
            }
        }
        assert!(
            !kept.is_empty(),
            "a message that is not the next frame of the peer's stream of {channel:?}: {message:?}"
        );
        self.ordered_from.insert(channel, kept);
    }

    fn drain_transmits(&mut self) {
        let mut bytes = 0;
        while let Some(transmit) = self.session.poll_transmit() {
            assert_eq!(self.closes, 0, "{transmit:?} after the close");
            match transmit {
                Transmit::Datagram(d) => {
                    assert!(d.len() <= DATAGRAM_BUDGET, "a {}-byte datagram", d.len());
                    bytes += d.len();
                    self.datagram_out(&d);
                }
                Transmit::Close { .. } => {
                    assert!(self.session.is_closed(), "a close while open");
                    self.closes += 1;
                }
            }
        }
        let cap = self.limits.datagram_send_buffer.max(DATAGRAM_BUDGET);
        assert!(bytes <= cap, "{bytes} datagram bytes queued, cap {cap}");
    }

    fn datagram_out(&mut self, d: &Bytes) {
        match d.first() {
            Some(0x01) => {
                let messages = parse_unreliable(d.slice(1..)).expect("a packed datagram parses");
                for m in messages {
                    assert!(
                        self.unreliable_out.find(&m),
                        "sent an unreliable message not given, or twice, or out of order"
                    );
                }
            }
            Some(0x02) => assert!(
                self.datagrams_out.find(d),
                "sent a datagram not given, or twice, or out of order"
            ),
            _ => panic!("a datagram of no kind: {d:?}"),
        }
    }

    fn drain_streams(&mut self, max: Option<usize>) {
        let mut taken = 0;
        let ids: Vec<OutStream> = self.session.writable_streams().collect();
        self.check_priorities(&ids);
        for id in ids {
            while max.is_none_or(|m| taken < m) {
                let Some(write) = self.session.poll_stream(id) else {
                    break;
                };
                taken += 1;
                self.stream_out(id, write);
            }
        }
        while max.is_none_or(|m| taken < m) {
            let Some(write) = self.session.poll_unordered() else {
                break;
            };
            taken += 1;
            self.unordered_write(&write);
        }
        if max.is_none() {
            assert_eq!(self.session.backlog(), 0, "a backlog with nothing to write");
        }
    }

    /// The control stream first, then the channels' streams from the
    /// highest priority, each with its channel's.
    fn check_priorities(&self, streams: &[OutStream]) {
        let order: Vec<(bool, Reverse<i32>)> = streams
            .iter()
            .map(|&s| {
                let priority = self.session.stream_priority(s);
                if let OutStream::Channel(c) = s {
                    let declared = self.protocol.channel(c).map(|d| d.priority);
                    assert_eq!(Some(priority), declared, "{s:?}'s priority");
                }
                (s != OutStream::Control, Reverse(priority))
            })
            .collect();
        assert!(
            order.is_sorted(),
            "writable streams out of order: {streams:?}"
        );
    }

    fn stream_out(&mut self, id: OutStream, write: StreamWrite) {
        let channel = match id {
            OutStream::Control => {
                assert!(
                    !self.control_finished,
                    "a write after the control stream's end"
                );
                match write {
                    StreamWrite::Data(data) => self.control_out.extend_from_slice(&data),
                    StreamWrite::Finish => self.control_finished = true,
                }
                return;
            }
            OutStream::Channel(c) => c,
        };
        assert_eq!(
            self.kind(channel),
            Some(ChannelKind::ReliableOrdered),
            "a stream for {channel:?}"
        );
        let StreamWrite::Data(data) = write else {
            panic!("{channel:?}'s stream finished");
        };
        let role = self.role;
        let out = self.ordered_out.entry(channel).or_default();
        out.bytes.extend_from_slice(&data);
        if out.pos == 0 {
            let header = channel_header(channel);
            assert!(
                out.bytes.starts_with(&header),
                "{channel:?}'s stream header: {:?}",
                out.bytes
            );
            out.pos = header.len();
        }
        // Whole frames: a client's heartbeats on the reliable channel, else
        // the accepted sends in order.
        loop {
            let rest = &out.bytes[out.pos..];
            let mut r = Reader::new(rest);
            let Ok(len) = r.get_varint() else {
                break;
            };
            let Ok(payload) = r.take(len as usize) else {
                break;
            };
            let end = rest.len() - r.remaining();
            if payload == [0] {
                assert_eq!(role, Role::Client, "a server sent a heartbeat");
                assert_eq!(channel, Channel::RELIABLE, "a heartbeat on {channel:?}");
            } else {
                let expected = out
                    .expected
                    .pop_front()
                    .expect("a frame the application did not send");
                assert_eq!(&rest[..end], &expected[..], "our stream of {channel:?}");
            }
            out.pos += end;
        }
    }

    /// A reliable-unordered message for a stream of its own: the next one
    /// sent, whole, with its channel's priority.
    fn unordered_write(&mut self, write: &UnorderedWrite) {
        let expected = self
            .unordered_out
            .pop_front()
            .expect("an unordered message the application did not send");
        assert_eq!(write.data, expected, "an unordered message");
        let channel = Channel(expected[0]);
        let declared = self.protocol.channel(channel).map(|c| c.priority);
        assert_eq!(Some(write.priority), declared, "{channel:?}'s priority");
    }

    /// Ends the script as a patient application and network would: read
    /// everything, wake the driver, take every write, until nothing moves;
    /// then nothing may be left behind.
    fn settle(&mut self) {
        for round in 0.. {
            assert!(round < 100_000, "the session never settles");
            let delivered = self.delivered;
            let moved = self.pump();
            self.poll_auth();
            self.read_events(None);
            self.timeout();
            self.drain_transmits();
            self.drain_streams(None);
            self.check_always();
            if !moved && delivered == self.delivered && !self.session.has_events() {
                break;
            }
        }
        let s = &self.session;
        if s.is_closed() && (self.role == Role::Client || self.connected.is_some()) {
            assert!(self.closed_event, "closed without telling the application");
        }
        if let Some(DisconnectReason::Closed {
            by: ClosedBy::Local,
            ..
        }) = s.close_reason()
        {
            assert_eq!(self.closes, 1, "closed locally without telling QUIC");
        }
        if let Some(reply) = self.our_handshake() {
            self.check_handshake_out(&reply);
        }
        let admitting = self.auth_requested && !self.auth_answered;
        if !s.is_closed() && !s.is_handshake_over() && !admitting {
            // Waiting for the peer's handshake message: it must be able
            // to arrive.
            let held = self.pending.get(&StreamId::CONTROL);
            assert!(
                held.is_none_or(|p| p.waiting() == 0),
                "the handshake stalled: the session takes no more of the control stream"
            );
        }
        if !s.is_open() {
            return;
        }
        for (id, p) in &self.pending {
            assert!(
                p.waiting() == 0,
                "stream {} stalled: {} bytes the open session never takes",
                id.0,
                p.waiting()
            );
        }
        for (channel, out) in &self.ordered_out {
            assert!(
                out.expected.is_empty(),
                "messages accepted on {channel:?} never written"
            );
        }
        assert!(
            self.unordered_out.is_empty(),
            "unordered messages accepted and never written"
        );
        self.settle_peer_streams();
    }

    /// What an open session must have made of the peer's streams.
    fn settle_peer_streams(&self) {
        let mut ordered = BTreeSet::new();
        for (id, stream) in &self.uni_in {
            if stream.header.is_none() {
                assert!(
                    !stream.finished,
                    "stream {} finished before its header and still open",
                    id.0
                );
                continue;
            }
            assert!(!stream.broken, "a broken stream and still open");
            let channel = stream.channel();
            match channel.and_then(|c| self.kind(c)) {
                Some(ChannelKind::ReliableOrdered) => {
                    let channel = channel.expect("a kind comes from a channel");
                    assert!(
                        ordered.insert(channel),
                        "two streams of {channel:?} and still open"
                    );
                    assert!(
                        !stream.finished,
                        "{channel:?}'s stream finished and still open"
                    );
                    let delivered = match self.ordered_from.get(&channel) {
                        Some(ids) if ids.contains(id) => stream.delivered,
                        _ => 0,
                    };
                    assert_eq!(
                        delivered,
                        stream.frames.len(),
                        "frames of {channel:?} the open session never delivered"
                    );
                }
                Some(ChannelKind::ReliableUnordered) => assert!(
                    !stream.finished || stream.pos == stream.bytes.len(),
                    "stream {} ended within a message and still open",
                    id.0
                ),
                kind => panic!(
                    "a stream with header {:?} ({kind:?}) and still open",
                    stream.header
                ),
            }
        }
        for ((channel, message), (sent, delivered)) in &self.unordered_in {
            assert_eq!(
                delivered, sent,
                "{message:?} on {channel:?}: sent {sent} times, delivered {delivered}"
            );
        }
    }

    /// The frame our side wrote on the control stream, once finished.
    fn our_handshake(&self) -> Option<Vec<u8>> {
        if !self.control_finished {
            return None;
        }
        let mut r = Reader::new(&self.control_out);
        let len = r.get_varint().expect("a framed handshake message") as usize;
        let frame = r.take(len).expect("a whole handshake message").to_vec();
        assert!(r.is_empty(), "bytes after our handshake message");
        Some(frame)
    }

    fn check_handshake_out(&self, frame: &[u8]) {
        match self.role {
            Role::Client => {
                let hello = Hello::decode(frame).expect("our hello decodes");
                assert_eq!(hello, Hello::new(&self.protocol, Some(TOKEN.to_vec())));
            }
            Role::Server => {
                let reply = HelloReply::decode(frame).expect("our reply decodes");
                match reply {
                    HelloReply::Welcome { client_id } => {
                        assert!(!self.refused, "Welcome and Refused");
                        if let Some(client) = self.connected {
                            assert_eq!(client.0, client_id);
                        }
                    }
                    HelloReply::Refused(reason) => {
                        assert!(self.connected.is_none(), "Refused and Connected");
                        if let Some(expected) = &self.expect_refused {
                            assert_eq!(&reason, expected);
                        }
                    }
                }
            }
        }
    }
}

fn reply(b: u8) -> Vec<u8> {
    let reply = match b % 6 {
        0 | 1 => HelloReply::Welcome {
            client_id: u64::from(b),
        },
        2 => HelloReply::Refused(RefuseReason::ServerFull),
        3 => HelloReply::Refused(RefuseReason::ProtocolMismatch {
            detail: "x".repeat(100),
        }),
        4 => return framed(b"\x07garbage"),
        _ => {
            let welcome = HelloReply::Welcome { client_id: 5 }.to_encoded_vec();
            return [framed(&welcome), vec![0x01, 0x00]].concat();
        }
    };
    framed(&reply.to_encoded_vec())
}

fn snapshot(header: SnapshotHeader, message: &[u8]) -> Bytes {
    snapshot_datagram(&mut BytesMut::new(), header, message.len(), |w| {
        w.put_slice(message);
    })
}
