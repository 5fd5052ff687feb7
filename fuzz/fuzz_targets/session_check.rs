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

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use zao::proto::{
    Channel, ChannelKind, ClientId, CloseCode, DATAGRAM_BUDGET, DisconnectReason, Hello,
    HelloReply, Identity, Limits, OutStream, Outgoing, ParsedDatagram, PathStats, Protocol,
    RefuseReason, Role, SendError, Session, SessionConfig, SessionEvent, Side, SnapshotHeader,
    StreamId, StreamWrite, Transmit, frame_header, parse_unreliable, snapshot_datagram,
    split_datagram,
};
use zao::{Decode, Encode, Reader};

use crate::session_script::{
    APP_EAGER, CHUNKS, CLIENT, HANDSHAKE, HANDSHAKE_CLIENT, NET_EAGER, Op, Script, TOKEN, delay,
    framed, id_bytes, id_value, limits, protocol, stream_id,
};

/// Most flood messages one input may send, so an execution stays short.
const FLOOD_BUDGET: usize = 10_000;

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
}

impl PeerStream {
    /// Parses what arrived since the last call.
    fn parse(&mut self, uni: bool, max: usize) {
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
    control_in: PeerStream,
    uni_in: BTreeMap<StreamId, PeerStream>,
    /// The streams the delivered reliable messages may have come from.
    reliable_from: Option<Vec<StreamId>>,
    unreliable_in: Subsequence,
    snapshots_in: Subsequence,

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
    reliable_out: VecDeque<Bytes>,
    largest_frame: usize,
    uni_out: Vec<u8>,
    uni_out_pos: usize,
    control_out: Vec<u8>,
    control_finished: bool,
    unreliable_out: Subsequence,
    datagrams_out: Subsequence,
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
            control_in: PeerStream::default(),
            uni_in: BTreeMap::new(),
            reliable_from: None,
            unreliable_in: Subsequence::default(),
            snapshots_in: Subsequence::default(),
            delivered: 0,
            connected: None,
            refused: false,
            closed_event: false,
            auth_requested: false,
            auth_answered: false,
            expect_connected: None,
            expect_refused: None,
            messages_out: 0,
            reliable_out: VecDeque::new(),
            largest_frame: 0,
            uni_out: Vec::new(),
            uni_out_pos: 0,
            control_out: Vec::new(),
            control_finished: false,
            unreliable_out: Subsequence::default(),
            datagrams_out: Subsequence::default(),
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
            Op::Finish(stream) => {
                let id = stream_id(*stream, self.role);
                self.pending.entry(id).or_default().finish = true;
                self.pump();
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
                        by: Side::Peer,
                        code: CloseCode::Normal,
                        reason: "bye".into(),
                    },
                    _ => DisconnectReason::Closed {
                        by: Side::Peer,
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
            Op::SendDatagrams { id, count, len } => self.app_send_datagrams(*id, *count, *len),
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
                        by: Side::Local,
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

    fn check_always(&self) {
        let s = &self.session;
        let bound = (self.limits.reliable_backlog + 1).max(self.largest_frame);
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
        let id = stream_id(stream, self.role);
        self.pending
            .entry(id)
            .or_default()
            .data
            .extend_from_slice(data);
        self.pump();
    }

    /// Hands waiting stream bytes over while the session wants them, in
    /// reads of `chunk` bytes, then the finishes. Returns whether any moved.
    fn pump(&mut self) -> bool {
        let mut moved = false;
        let ids: Vec<StreamId> = self.pending.keys().copied().collect();
        for id in ids {
            while let Some(p) = self.pending.get_mut(&id) {
                if p.waiting() == 0 {
                    if p.finish {
                        self.pending.remove(&id);
                        self.session.handle_stream_finished(self.now, id);
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
            let s = self.uni_in.entry(id).or_default();
            s.bytes.extend_from_slice(chunk);
            s.parse(true, self.limits.max_message_size);
        }
    }

    fn datagram(&mut self, d: Bytes) {
        match split_datagram(&d) {
            Ok(ParsedDatagram::Unreliable(messages)) => self
                .unreliable_in
                .items
                .extend(messages.into_iter().filter(|m| m[..] != [0])),
            Ok(ParsedDatagram::Snapshot(_, message)) => self.snapshots_in.items.push(message),
            Err(_) => {}
        }
        self.session.handle_datagram(self.now, d);
    }

    fn flood(&mut self, kind: u8, count: u8, id: u8, len: u8, gap: u8) {
        let gap = Duration::from_micros(u64::from(gap) * 500);
        let filler: Vec<u8> = (0..len).collect();
        let message = [id_bytes(id), filler].concat();
        let frame = framed(&message);
        let per_datagram = ((DATAGRAM_BUDGET - 1) / frame.len()).max(1);
        // The budget counts messages, so a packed flood sends fewer datagrams.
        let each = if kind % 6 == 2 { per_datagram } else { 1 };
        let n = ((usize::from(count) + 1) * 8).min(self.flood_budget / each);
        self.flood_budget -= n * each;
        for i in 0..n {
            match kind % 6 {
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
                _ => self.datagram(Bytes::from_static(&[0x01, 0x01, 0x00])),
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
        match b % 9 {
            0 => framed(&good.to_vec()),
            1 => framed(
                &Hello {
                    token: None,
                    ..good
                }
                .to_vec(),
            ),
            2 => framed(&Hello { magic: 0, ..good }.to_vec()),
            3 => framed(
                &Hello {
                    version: "0.0.1-fuzz".into(),
                    ..good
                }
                .to_vec(),
            ),
            4 => framed(&Hello::new(&zao_messages::protocol(), None).to_vec()),
            5 => {
                let whole = framed(&good.to_vec());
                whole[..whole.len() / 2].to_vec()
            }
            6 => framed(b"not a hello"),
            7 => {
                let (header, n) = frame_header(1 << 20);
                header[..n].to_vec()
            }
            _ => [framed(&good.to_vec()), vec![0]].concat(),
        }
    }

    fn app_send(&mut self, channel: u8, id: u8, body: &[u8]) {
        let message = [id_bytes(id), body.to_vec()].concat();
        let Ok(out) = Outgoing::from_message(&message) else {
            return;
        };
        let channel = Channel(channel % 3);
        let kind = self.protocol.channel(channel).map(|c| c.kind);
        let backlog = self.session.backlog();
        let client = self.session.client_id().unwrap_or(ClientId(0));
        let frame = out.frame().len();
        let expected = if !self.session.is_open() {
            Err(SendError::NotConnected(client))
        } else if self.protocol.admits(out.id(), channel, self.role).is_err() {
            Err(SendError::NotRegistered(out.id()))
        } else {
            match kind {
                Some(ChannelKind::ReliableOrdered) if frame > self.limits.max_message_size => {
                    Err(SendError::TooLarge {
                        size: frame,
                        max: self.limits.max_message_size,
                    })
                }
                Some(ChannelKind::ReliableOrdered)
                    if backlog > 0 && backlog + frame > self.limits.reliable_backlog =>
                {
                    Err(SendError::QueueFull(client))
                }
                Some(ChannelKind::Unreliable) if 1 + frame > DATAGRAM_BUDGET => {
                    Err(SendError::TooLarge {
                        size: 1 + frame,
                        max: DATAGRAM_BUDGET,
                    })
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
        if channel == Channel::RELIABLE {
            assert_eq!(
                self.session.backlog(),
                backlog + frame,
                "backlog after send"
            );
            self.largest_frame = self.largest_frame.max(frame);
            self.reliable_out.push_back(out.frame().clone());
        } else {
            self.unreliable_out.items.push(out.message());
        }
    }

    fn app_send_datagrams(&mut self, id: u8, count: u8, len: u16) {
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
        let client = self.session.client_id().unwrap_or(ClientId(0));
        let expected = if !self.session.is_open() {
            Err(SendError::NotConnected(client))
        } else if self
            .protocol
            .admits(id, Channel::SNAPSHOT, self.role)
            .is_err()
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
        let got = self
            .session
            .send_datagrams(id, Channel::SNAPSHOT, &datagrams);
        assert_eq!(got, expected, "send_datagrams");
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
        match self.protocol.channel(channel).map(|c| c.kind) {
            Some(ChannelKind::ReliableOrdered) => self.reliable_delivered(channel, message),
            Some(ChannelKind::Unreliable) => assert!(
                self.unreliable_in.find(message),
                "an unreliable message not sent, or twice, or out of order"
            ),
            Some(ChannelKind::Sequenced | ChannelKind::Snapshot) => assert!(
                self.snapshots_in.find(message),
                "a snapshot chunk not sent, or twice, or out of order"
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

    /// A reliable message must be the next frame of the peer's stream of
    /// its channel: of every stream with the channel's header that it can
    /// be, keep those.
    fn reliable_delivered(&mut self, channel: Channel, message: &Bytes) {
        assert_eq!(
            channel,
            Channel::RELIABLE,
            "the protocol's one ordered channel"
        );
        let candidates = self.reliable_from.take().unwrap_or_else(|| {
            self.uni_in
                .iter()
                .filter(|(_, s)| s.header == Some(u64::from(channel.0)))
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
            "a reliable message that is not the next frame of the peer's stream: {message:?}"
        );
        self.reliable_from = Some(kept);
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
        for id in ids {
            while max.is_none_or(|m| taken < m) {
                let Some(write) = self.session.poll_stream(id) else {
                    break;
                };
                taken += 1;
                self.stream_out(id, write);
            }
        }
        if max.is_none() {
            assert_eq!(self.session.backlog(), 0, "a backlog with nothing to write");
        }
    }

    fn stream_out(&mut self, id: OutStream, write: StreamWrite) {
        if id == OutStream::Control {
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
        assert_eq!(
            id,
            OutStream::Channel(Channel::RELIABLE),
            "a write on a stream of no use"
        );
        let StreamWrite::Data(data) = write else {
            panic!("the reliable stream finished");
        };
        self.uni_out.extend_from_slice(&data);
        if self.uni_out_pos == 0 {
            assert_eq!(
                self.uni_out.first(),
                Some(&0),
                "the reliable stream's header"
            );
            self.uni_out_pos = 1;
        }
        // Whole frames: a client's heartbeats, else the accepted sends in order.
        loop {
            let rest = &self.uni_out[self.uni_out_pos..];
            let mut r = Reader::new(rest);
            let Ok(len) = r.get_varint() else {
                break;
            };
            let Ok(payload) = r.take(len as usize) else {
                break;
            };
            let end = rest.len() - r.remaining();
            if payload == [0] {
                assert_eq!(self.role, Role::Client, "a server sent a heartbeat");
            } else {
                let expected = self
                    .reliable_out
                    .pop_front()
                    .expect("a frame the application did not send");
                assert_eq!(&rest[..end], &expected[..], "our reliable stream");
            }
            self.uni_out_pos += end;
        }
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
            by: Side::Local, ..
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
        assert!(
            self.reliable_out.is_empty(),
            "accepted reliable messages never written"
        );
        let headed: Vec<(&StreamId, &PeerStream)> = self
            .uni_in
            .iter()
            .filter(|(_, s)| s.header.is_some())
            .collect();
        assert!(headed.len() <= 1, "two reliable streams and still open");
        for (id, stream) in headed {
            assert_eq!(
                stream.header,
                Some(0),
                "a stream of no channel and still open"
            );
            assert!(!stream.broken, "a broken stream and still open");
            let delivered = match &self.reliable_from {
                Some(ids) if ids.contains(id) => stream.delivered,
                _ => 0,
            };
            assert_eq!(
                delivered,
                stream.frames.len(),
                "reliable frames the open session never delivered"
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
            let welcome = HelloReply::Welcome { client_id: 5 }.to_vec();
            return [framed(&welcome), vec![0x01, 0x00]].concat();
        }
    };
    framed(&reply.to_vec())
}

fn snapshot(header: SnapshotHeader, message: &[u8]) -> Bytes {
    snapshot_datagram(&mut BytesMut::new(), header, message.len(), |w| {
        w.put_slice(message);
    })
}
