//! The session: one connection's whole state machine, either side, with no
//! I/O and no clock. Its driver feeds it QUIC's events (`handle_*`, each
//! with `now`) and carries out what it asks (`poll_*`); the same session
//! runs under quinn (`zao::quic`) and on the simulated network
//! (`zao::sim`).
//!
//! Lifecycle:
//!
//! ```text
//! client: Connecting ─connected─▶ Handshaking ─Welcome─▶ Open ─▶ Closed
//!                                             └Refused─▶ Closed
//! server: Connecting ─connected─▶ Handshaking ─hello ok─▶ Admitting ─accept─▶ Open ─▶ Closed
//!                                             └bad hello─▶ Refusing ◀─refuse─┘
//! ```
//!
//! Every state before `Open` ends at the handshake deadline.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::proto::stats::Counters;
use crate::proto::{
    AuthRequest, Channel, ClientId, CloseCode, ClosedBy, ConnectionStats, DATAGRAM_BUDGET,
    DisconnectReason, FrameDecoder, Hello, HelloReply, Identity, Limits, PathStats, Protocol,
    RateLimiter, Received, RefuseReason, Role, SnapshotAck, SnapshotChunk, SnapshotReceiver,
    UnreliablePacker, check_hello,
};
use crate::{Decode, Encode};

/// The largest hello a server reads, and the largest reply a client reads.
pub(super) const MAX_HANDSHAKE_FRAME: usize = 64 * 1024;
/// How long a refused client has to read its refusal before the server
/// closes the connection (within the handshake deadline).
pub(super) const REFUSAL_GRACE: Duration = Duration::from_secs(1);

/// A client's first wait before a new attempt; it doubles per attempt
/// ([`SessionConfig::retry`]).
const RETRY_BACKOFF: Duration = Duration::from_millis(50);
/// The longest wait between attempts.
const RETRY_BACKOFF_MAX: Duration = Duration::from_secs(1);
/// A retry is planned only with this much of its deadline (the connect
/// deadline, or a refused attempt's) left after the wait.
const RETRY_MIN_ATTEMPT: Duration = Duration::from_millis(250);

/// What every session of an endpoint shares: the protocol, the limits and,
/// on a client, the token it presents.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    /// The message types this side exchanges.
    pub protocol: Protocol,
    /// Resource limits.
    pub limits: Limits,
    /// Client side: the token for the server's auth callback.
    pub token: Option<Vec<u8>>,
    /// Keep a copy of every message sent and received for a capture
    /// ([`Session::poll_tap`]).
    pub tap: bool,
    /// Client side: an attempt that ends before the session opened, for a
    /// reason a new attempt may get past, is followed by a new attempt
    /// after a backoff with jitter ([`Session::poll_retry`],
    /// [`Session::restart`]) instead of a close for good: its handshake
    /// deadline passed or QUIC timed out, or the server was busy or lost
    /// the address check, within the connect deadline
    /// ([`Limits::connect_timeout`](crate::proto::Limits::connect_timeout));
    /// a full server (or address, or auth service,
    /// [`RefuseReason::is_retryable`]) within the deadline of the attempt
    /// first refused. Only for a driver that can open a new connection:
    /// the native QUIC client and the simulated one set it.
    pub retry: bool,
    /// Client side: seeds the jitter of the wait before a new attempt, so
    /// that clients refused together do not come back together. Random
    /// by default; the simulation seeds it, so its runs repeat exactly.
    pub retry_seed: u64,
}

impl SessionConfig {
    /// A configuration with `protocol`, `limits` and no token.
    #[must_use]
    pub fn new(protocol: Protocol, limits: Limits) -> Self {
        Self {
            protocol,
            limits,
            token: None,
            tap: false,
            retry: false,
            retry_seed: {
                use std::hash::BuildHasher;
                std::collections::hash_map::RandomState::new().hash_one(0u8)
            },
        }
    }
}

/// A QUIC stream, numbered as QUIC numbers them (RFC 9000 §2.1): the two
/// low bits say who opened it and whether it is unidirectional.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamId(pub u64);

impl StreamId {
    /// The control stream: the first bidirectional stream, opened by the
    /// client, carrying the hello and its reply.
    pub const CONTROL: Self = Self(0);

    /// The `index`-th unidirectional stream opened by `initiator`.
    #[must_use]
    pub fn uni(initiator: Role, index: u64) -> Self {
        let server = u64::from(initiator == Role::Server);
        Self((index << 2) | 0b10 | server)
    }

    /// Whether the stream is unidirectional.
    #[must_use]
    pub fn is_uni(self) -> bool {
        self.0 & 0b10 != 0
    }

    /// Who opened the stream.
    #[must_use]
    pub fn initiator(self) -> Role {
        if self.0 & 1 == 0 {
            Role::Client
        } else {
            Role::Server
        }
    }

    /// The stream's index among those of its kind and initiator.
    #[must_use]
    pub fn index(self) -> u64 {
        self.0 >> 2
    }
}

/// A stream the session writes, named by what it carries: the driver
/// opens it on first use (a client's control stream is its first
/// bidirectional stream; on a server, the control stream is the one the
/// client opened) and gives it the session's priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OutStream {
    /// The control stream: the hello and its reply.
    Control,
    /// The stream of a reliable-ordered channel, one per direction.
    Channel(Channel),
}

/// A message of a reliable-unordered channel: the driver opens a fresh
/// unidirectional stream for it, writes `data` (the channel header and the
/// frame) and finishes the stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnorderedWrite {
    /// The channel's priority, for the stream.
    pub priority: i32,
    /// The stream's whole contents.
    pub data: Bytes,
}

/// What the session asks its driver to do with a stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamWrite {
    /// Write these bytes, in order after what came before.
    Data(Bytes),
    /// Finish the stream: nothing more will be written.
    Finish,
}

/// What the session asks its driver to do with the connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transmit {
    /// Send a QUIC datagram.
    Datagram(Bytes),
    /// Close the connection with zao's code and a reason.
    Close {
        /// The application close code.
        code: CloseCode,
        /// The reason, for the peer's logs and events.
        reason: Bytes,
    },
}

/// A copy of what went through a session, for a capture, when
/// [`SessionConfig::tap`] is on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tap {
    /// A message (`id + body`; a heartbeat is the byte `00`).
    Message {
        /// Sent by this side (or received).
        sent: bool,
        /// Its channel.
        channel: Channel,
        /// The message as it travelled.
        message: Bytes,
    },
    /// The handshake is done.
    Connected,
    /// The connection ended.
    Closed(String),
}

/// What happened on a session, for the application.
#[derive(Clone, Debug, PartialEq)]
pub enum SessionEvent {
    /// The handshake is done: on a client, the server accepted us; on a
    /// server, this client was admitted.
    Connected {
        /// The client's id on the server.
        client: ClientId,
        /// Server side: who the auth callback said the client is.
        identity: Option<Identity>,
    },
    /// Server side: this client was refused (it reads the same reason).
    Refused(RefuseReason),
    /// A message arrived.
    Message {
        /// The channel it came on.
        channel: Channel,
        /// The message, its id parsed.
        message: Received,
    },
    /// Client side: a chunk of a delta snapshot arrived (a
    /// [`DeltaReceiver`](crate::proto::DeltaReceiver) applies it).
    Snapshot {
        /// The channel it came on.
        channel: Channel,
        /// The chunk.
        chunk: SnapshotChunk,
    },
    /// The connection ended. The last event of a session; on a server, only
    /// for clients that were connected.
    Closed(DisconnectReason),
}

/// Where the session stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    /// The QUIC handshake is under way.
    Connecting,
    /// Client: the hello is sent, the reply awaited. Server: the hello is
    /// awaited.
    Handshaking,
    /// Server: the hello passed; the endpoint decides (auth, capacity).
    Admitting,
    /// Server: refused; the reply is on its way, the close follows.
    Refusing,
    /// Admitted: messages flow.
    Open,
    /// Closed, locally or by the peer.
    Closed,
}

/// What waits to be written on one of the session's streams.
#[derive(Debug)]
pub(super) struct OutQueue {
    pub(super) stream: OutStream,
    pub(super) priority: i32,
    pub(super) queue: VecDeque<StreamWrite>,
    /// Bytes in `queue`.
    pub(super) queued: usize,
}

/// A stream the session reads.
#[derive(Debug)]
pub(super) struct InStream {
    /// The channel it carries, once its header arrived (uni streams).
    pub(super) channel: Option<Channel>,
    pub(super) frames: FrameDecoder,
    /// The peer finished it (a reliable-unordered channel's stream).
    pub(super) finished: bool,
}

/// The sequence numbers of one snapshot type sent to a client, ascending,
/// as far back as the server's history reaches (an ack can name no
/// older baseline the server still has).
#[derive(Clone, Debug, Default)]
pub(super) struct SentWindow {
    sent: VecDeque<u64>,
}

impl SentWindow {
    fn mark(&mut self, seq: u64, keep: usize) {
        if self.sent.back().is_none_or(|last| *last < seq) {
            self.sent.push_back(seq);
        }
        while self.sent.len() > keep.max(1) {
            self.sent.pop_front();
        }
    }

    /// Whether `seq` was sent.
    pub(super) fn has(&self, seq: u64) -> bool {
        self.sent.binary_search(&seq).is_ok()
    }

    /// An ack's `held` bits (bit `k`: `newest − 1 − k`) with every
    /// sequence number never sent cleared.
    pub(super) fn mask(&self, ack: &SnapshotAck) -> u64 {
        let from = ack.newest.saturating_sub(64);
        let start = self.sent.partition_point(|s| *s < from);
        let mut sent = 0u64;
        for s in self.sent.range(start..) {
            if *s >= ack.newest {
                break;
            }
            sent |= 1 << (ack.newest - 1 - s);
        }
        ack.held & sent
    }
}

/// One connection's state machine. See the module docs.
#[derive(Debug)]
pub struct Session {
    pub(super) role: Role,
    pub(super) config: Arc<SessionConfig>,
    pub(super) peer: SocketAddr,
    pub(super) state: State,
    pub(super) client: Option<ClientId>,
    /// The largest datagram the peer takes, from the QUIC handshake.
    pub(super) peer_datagram: Option<usize>,

    // Timers.
    pub(super) deadline: Option<Instant>,
    pub(super) close_at: Option<Instant>,
    pub(super) last_heard: Instant,
    pub(super) heartbeat_at: Option<Instant>,
    /// Whether anything went out since the last heartbeat check.
    pub(super) sent_since_beat: bool,

    // Receiving.
    pub(super) in_streams: BTreeMap<StreamId, InStream>,
    pub(super) snapshots: SnapshotReceiver,
    /// Client side: the newest delta snapshot sequence number per message
    /// id; chunks far older are dropped.
    pub(super) delta_newest: HashMap<u32, u64>,
    /// Server side: what the client last said it holds, per snapshot id
    /// (only snapshots it was sent).
    pub(super) acks: HashMap<u32, SnapshotAck>,
    /// Server side: the delta snapshots sent to this client, per snapshot
    /// id: an ack may only name these.
    pub(super) sent_deltas: HashMap<u32, SentWindow>,
    /// Server side: the last tick's delta chunks sent to this client, per
    /// snapshot id, for a lossy client's copy
    /// ([`Limits::delta_redundancy_loss`](crate::proto::Limits::delta_redundancy_loss)).
    pub(super) delta_previous: HashMap<u32, Vec<Bytes>>,
    pub(super) rate: Option<RateLimiter>,
    pub(super) events: VecDeque<SessionEvent>,
    /// Message bytes in `events`, bounded by `limits.inbound_queue`.
    pub(super) inbound: usize,
    /// The inbound queue was full and has room again: the driver should
    /// parse what it holds back.
    pub(super) resume: bool,
    /// Frames wait because the inbound queue is full (the rate limiter is
    /// paused meanwhile).
    pub(super) held_back: bool,
    pub(super) auth: Option<AuthRequest>,

    // Sending.
    pub(super) out_streams: Vec<OutQueue>,
    /// Messages of reliable-unordered channels, each for a stream of its own.
    pub(super) unordered: VecDeque<UnorderedWrite>,
    /// The next sequence number per message id this session sends on a
    /// sequenced channel.
    pub(super) seqs: HashMap<u32, u64>,
    /// Bytes queued on reliable streams, bounded by `limits.reliable_backlog`.
    pub(super) backlog: usize,
    pub(super) packer: UnreliablePacker,
    pub(super) transmits: VecDeque<Transmit>,
    /// Datagram bytes in `transmits`.
    pub(super) datagrams_queued: usize,

    pub(super) counters: Counters,
    /// Copies for a capture, when the config asks.
    pub(super) taps: VecDeque<Tap>,
    /// Why it closed.
    pub(super) closed: Option<DisconnectReason>,
    /// Client side: it wants a new connection at this instant
    /// ([`SessionConfig::retry`]).
    pub(super) retry_at: Option<Instant>,
    /// Client side: the end of the time to connect, over every attempt
    /// ([`Limits::connect_timeout`](crate::proto::Limits::connect_timeout)).
    pub(super) connect_deadline: Instant,
    /// Client side: refused for a full server (or address, or auth), it
    /// tries again only until the handshake deadline of the attempt first
    /// refused, so a full server is named within one handshake deadline.
    pub(super) refused_until: Option<Instant>,
    /// Client side: the deadline the planned attempt gets at most.
    pub(super) retry_until: Option<Instant>,
    /// Client side: connection attempts made before this one.
    pub(super) attempts: u32,
    /// What carries the connection ([`set_transport`](Self::set_transport)).
    pub(super) transport: &'static str,
    /// A close waiting for the reliable streams to be delivered
    /// ([`close_flushed`](Self::close_flushed)).
    pub(super) flush_close: Option<FlushClose>,
}

/// A close that waits for what is queued on reliable channels to be
/// acknowledged by the peer, or for its deadline.
#[derive(Clone, Debug)]
pub(super) struct FlushClose {
    code: CloseCode,
    reason: String,
    deadline: Instant,
}

impl Session {
    /// A client session connecting to `server`: it says hello once QUIC is
    /// connected, and gives up this attempt at `now + handshake_timeout`
    /// (and, with [`SessionConfig::retry`], connecting at
    /// `now + connect_timeout`).
    #[must_use]
    pub fn client(config: Arc<SessionConfig>, server: SocketAddr, now: Instant) -> Self {
        Self::new(Role::Client, config, server, now)
    }

    /// A server session for a connection from `peer`, accepted at `now`:
    /// it must say hello and be admitted by `now + handshake_timeout`.
    #[must_use]
    pub fn server(config: Arc<SessionConfig>, peer: SocketAddr, now: Instant) -> Self {
        Self::new(Role::Server, config, peer, now)
    }

    fn new(role: Role, config: Arc<SessionConfig>, peer: SocketAddr, now: Instant) -> Self {
        let limits = &config.limits;
        let deadline = now + limits.handshake_timeout;
        // A client that can open new connections tries within its connect
        // deadline; one that cannot has its one attempt.
        let connect_deadline = if role == Role::Client && config.retry {
            // A timeout too long to add is "keep trying" (a year).
            now.checked_add(limits.connect_timeout)
                .unwrap_or_else(|| now + Duration::from_secs(365 * 24 * 3600))
        } else {
            deadline
        };
        let deadline = deadline.min(connect_deadline);
        let rate = (role == Role::Server).then(|| RateLimiter::new(limits.receive_rate, now));
        Self {
            role,
            peer,
            state: State::Connecting,
            client: None,
            peer_datagram: None,
            deadline: Some(deadline),
            close_at: None,
            last_heard: now,
            heartbeat_at: None,
            sent_since_beat: false,
            in_streams: BTreeMap::new(),
            snapshots: SnapshotReceiver::new(),
            delta_newest: HashMap::new(),
            acks: HashMap::new(),
            sent_deltas: HashMap::new(),
            delta_previous: HashMap::new(),
            rate,
            events: VecDeque::new(),
            inbound: 0,
            resume: false,
            held_back: false,
            auth: None,
            out_streams: Vec::new(),
            unordered: VecDeque::new(),
            seqs: HashMap::new(),
            backlog: 0,
            packer: UnreliablePacker::new(),
            transmits: VecDeque::new(),
            datagrams_queued: 0,
            counters: Counters::default(),
            taps: VecDeque::new(),
            closed: None,
            flush_close: None,
            retry_at: None,
            connect_deadline,
            refused_until: None,
            retry_until: None,
            attempts: 0,
            transport: "",
            config,
        }
    }

    /// Client side: when the session wants its driver to open a new
    /// connection for another attempt ([`SessionConfig::retry`]); then the
    /// driver waits until
    /// that instant and calls [`restart`](Self::restart). `None` while the
    /// session is not waiting to retry.
    #[must_use]
    pub fn poll_retry(&self) -> Option<Instant> {
        self.retry_at
    }

    /// Client side: starts the new attempt [`poll_retry`](Self::poll_retry)
    /// asked for, on a new connection: a fresh handshake under the first
    /// attempt's connect deadline. Does nothing unless a retry was asked
    /// for.
    pub fn restart(&mut self, now: Instant) {
        if self.retry_at.take().is_none() {
            return;
        }
        let mut fresh = Self::new(Role::Client, self.config.clone(), self.peer, now);
        fresh.connect_deadline = self.connect_deadline;
        fresh.refused_until = self.refused_until;
        let until = self.retry_until.take().unwrap_or(self.connect_deadline);
        fresh.deadline = fresh.deadline.map(|d| d.min(until));
        fresh.attempts = self.attempts + 1;
        fresh.taps = core::mem::take(&mut self.taps);
        fresh.events = core::mem::take(&mut self.events);
        *self = fresh;
    }

    /// Connection attempts this session made before the current one
    /// (client side: after a refusal a new attempt may get past, or an
    /// attempt that did not finish its handshake in time).
    #[must_use]
    pub fn retries(&self) -> u32 {
        self.attempts
    }

    /// Client side: the instant it stops trying to connect, over every
    /// attempt ([`Limits::connect_timeout`](crate::proto::Limits::connect_timeout)
    /// from the first, or the one attempt's
    /// [`handshake_timeout`](crate::proto::Limits::handshake_timeout) where
    /// the driver cannot open new connections).
    #[must_use]
    pub fn connect_deadline(&self) -> Instant {
        self.connect_deadline
    }

    /// Client side, the attempt ended by `reason` at `now` before the
    /// session opened: plans a new attempt when the config allows one, the
    /// reason is one a new attempt may get past and its deadline leaves it
    /// time. Its handshake deadline passed, QUIC timed out, the server was
    /// busy or lost the address check: until the connect deadline. The
    /// server full (or the address, or its auth service): until the
    /// handshake deadline of the attempt first refused. The wait is 50 ms
    /// doubling per attempt up to 1 s, times a jitter of 0.5 to 1.5, so
    /// clients refused together do not come back together. Whether one was
    /// planned.
    fn plan_retry(&mut self, now: Instant, reason: &DisconnectReason) -> bool {
        if self.role != Role::Client
            || !self.config.retry
            || !matches!(self.state, State::Connecting | State::Handshaking)
        {
            return false;
        }
        let deadline = match reason {
            // A server too busy for another handshake, or an address check
            // lost: momentary, within the connect deadline.
            DisconnectReason::Refused(
                RefuseReason::Busy | RefuseReason::AddressValidationFailed,
            )
            | DisconnectReason::HandshakeTimedOut
            | DisconnectReason::TimedOut => self.connect_deadline,
            // A full server (or address, or auth service): within the
            // deadline of the attempt first refused, then named.
            DisconnectReason::Refused(refused) if refused.is_retryable() => *self
                .refused_until
                .get_or_insert(self.deadline.unwrap_or(self.connect_deadline)),
            _ => return false,
        };
        let base = RETRY_BACKOFF
            .saturating_mul(1 << self.attempts.min(5))
            .min(RETRY_BACKOFF_MAX);
        let noise =
            crate::proto::SplitMix64::nth_of(self.config.retry_seed, u64::from(self.attempts));
        let jitter = 0.5 + (noise % 1024) as f64 / 1024.0;
        let at = now + base.mul_f64(jitter);
        // The new attempt needs time for its own handshake.
        if at + RETRY_MIN_ATTEMPT > deadline {
            return false;
        }
        tracing::debug!(peer = %self.peer, attempt = self.attempts + 1, "attempt ended ({reason}): trying again");
        self.retry_at = Some(at);
        self.retry_until = Some(deadline);
        true
    }

    /// The limits this session keeps.
    #[must_use]
    pub fn limits(&self) -> &Limits {
        &self.config.limits
    }

    /// Why the session closed, once it has.
    #[must_use]
    pub fn close_reason(&self) -> Option<&DisconnectReason> {
        self.closed.as_ref()
    }

    /// Which end this session is.
    #[must_use]
    pub fn role(&self) -> Role {
        self.role
    }

    /// The peer's address.
    #[must_use]
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// The client's id, once the handshake is done.
    #[must_use]
    pub fn client_id(&self) -> Option<ClientId> {
        self.client
    }

    /// Whether the handshake is done and the connection not closed.
    #[must_use]
    pub fn is_open(&self) -> bool {
        self.state == State::Open
    }

    /// Server side: whether the session awaits the endpoint's decision
    /// ([`handle_admission`](Self::handle_admission)).
    #[must_use]
    pub fn is_admitting(&self) -> bool {
        self.state == State::Admitting
    }

    /// Whether the session is past its handshake: open, refused or closed.
    #[must_use]
    pub fn is_handshake_over(&self) -> bool {
        matches!(self.state, State::Open | State::Refusing | State::Closed)
    }

    /// Whether the session is closed.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    /// The connection's statistics.
    #[must_use]
    pub fn stats(&self) -> ConnectionStats {
        ConnectionStats {
            transport: self.transport,
            ..self.counters.stats()
        }
    }

    /// Names what carries the connection (its driver says, once connected):
    /// [`ConnectionStats::transport`].
    pub fn set_transport(&mut self, name: &'static str) {
        self.transport = name;
    }

    /// The QUIC handshake finished; `max_datagram` is the largest datagram
    /// the peer takes (`None`: it takes none). A client says hello now.
    pub fn handle_connected(&mut self, now: Instant, max_datagram: Option<usize>) {
        if self.state != State::Connecting {
            return;
        }
        self.peer_datagram = max_datagram;
        self.state = State::Handshaking;
        self.last_heard = now;
        if self.role == Role::Client {
            if max_datagram.is_none_or(|max| max < DATAGRAM_BUDGET) {
                self.close_with(
                    CloseCode::ProtocolViolation,
                    "datagrams too small",
                    DisconnectReason::DatagramsUnsupported { max: max_datagram },
                );
                return;
            }
            let hello = Hello::new(&self.config.protocol, self.config.token.clone());
            self.write_frame(&hello.to_encoded_vec());
            self.finish_control();
        }
        self.parse_control(now);
    }

    /// The QUIC connection is gone (closed by the peer, timed out, or
    /// after our own close); `reason` is what QUIC says.
    pub fn handle_connection_lost(&mut self, now: Instant, reason: DisconnectReason) {
        if self.state == State::Closed {
            return;
        }
        let reason = match (self.state, reason) {
            // A close before the handshake ended, on a client, is the
            // handshake failing.
            (
                State::Connecting | State::Handshaking,
                DisconnectReason::Closed {
                    by: ClosedBy::Peer,
                    code: CloseCode::HandshakeTimeout,
                    ..
                },
            ) => DisconnectReason::HandshakeTimedOut,
            (_, reason) => reason,
        };
        self.plan_retry(now, &reason);
        self.finish_closed(reason);
    }

    /// The QUIC figures of the connection, refreshed by the driver when
    /// [`poll_timeout`](Self::poll_timeout) fires (at least once a second,
    /// for the rates in [`stats`](Self::stats)) and whenever it likes.
    pub fn handle_path_stats(&mut self, now: Instant, path: PathStats) {
        self.counters.set_path(now, path);
    }

    /// Fires the timers due at `now`; spurious calls do nothing. A driver
    /// also calls it when the application woke it, so work the application
    /// made possible (room in a full inbound queue) gets done.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.state == State::Closed {
            return;
        }
        if self.deadline.is_some_and(|d| now >= d) {
            self.deadline = None;
            let why = DisconnectReason::HandshakeTimedOut;
            self.plan_retry(now, &why);
            self.close_with(
                CloseCode::HandshakeTimeout,
                "handshake deadline passed",
                why,
            );
            return;
        }
        if self.close_at.is_some_and(|at| now >= at) {
            self.close_at = None;
            self.close(CloseCode::Refused, "refused");
            return;
        }
        if self.flush_close.as_ref().is_some_and(|f| now >= f.deadline) {
            // What is still unacknowledged will not be waited for.
            self.handle_flushed();
            return;
        }
        if self.state != State::Open {
            return;
        }
        if let Some(silence) = self.config.limits.silence_timeout
            && self.role == Role::Server
            && now >= self.last_heard + silence
        {
            tracing::debug!(peer = %self.peer, "silent for {silence:?}: disconnecting");
            self.close(CloseCode::Silent, "no message within the silence timeout");
            return;
        }
        if let Some(at) = self.heartbeat_at
            && now >= at
        {
            self.heartbeat(now);
        }
        self.parse_streams(now);
    }

    /// The earliest instant [`handle_timeout`](Self::handle_timeout) has
    /// something to do.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.state == State::Closed {
            return None;
        }
        let silence = match (self.role, self.state, self.config.limits.silence_timeout) {
            (Role::Server, State::Open, Some(silence)) => Some(self.last_heard + silence),
            _ => None,
        };
        [
            self.deadline,
            self.close_at,
            self.flush_close.as_ref().map(|f| f.deadline),
            silence,
            self.heartbeat_at,
            self.counters.next_sample(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The next event for the application.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<SessionEvent> {
        let event = self.events.pop_front()?;
        let len = match &event {
            SessionEvent::Message { message, .. } => message.message().len(),
            SessionEvent::Snapshot { chunk, .. } => chunk.message.message().len(),
            _ => 0,
        };
        if len > 0 {
            let limit = self.config.limits.inbound_queue;
            let was_full = self.inbound >= limit;
            self.inbound = self.inbound.saturating_sub(len);
            self.resume |= was_full && self.inbound < limit;
        }
        Some(event)
    }

    /// Puts back an event [`poll_event`](Self::poll_event) gave, at the
    /// front, as if it had not been taken.
    pub(crate) fn unpoll_event(&mut self, event: SessionEvent) {
        let len = match &event {
            SessionEvent::Message { message, .. } => message.message().len(),
            SessionEvent::Snapshot { chunk, .. } => chunk.message.message().len(),
            _ => 0,
        };
        self.inbound += len;
        self.events.push_front(event);
    }

    /// Whether the inbound queue has room again after being full: the
    /// application then wakes the driver, whose next
    /// [`handle_timeout`](Self::handle_timeout) parses what was held back.
    pub(crate) fn take_resume(&mut self) -> bool {
        core::mem::take(&mut self.resume)
    }

    /// The next copy for a capture (only with [`SessionConfig::tap`]).
    #[must_use]
    pub fn poll_tap(&mut self) -> Option<Tap> {
        self.taps.pop_front()
    }

    /// Keeps a copy for a capture.
    pub(super) fn tap(&mut self, tap: impl FnOnce() -> Tap) {
        if self.config.tap {
            self.taps.push_back(tap());
        }
    }

    /// Server side: a delta snapshot of type `id` with sequence number
    /// `seq` was sent to this client, so its ack may name it (an ack of a
    /// snapshot it was never sent, another client's or one from the
    /// future, is ignored: a delta is only ever encoded against a snapshot
    /// its client was sent).
    /// `history` is how many snapshots the server keeps as baselines:
    /// an ack further back names none it has.
    pub fn handle_delta_sent(&mut self, id: u32, seq: u64, history: usize) {
        self.sent_deltas.entry(id).or_default().mark(seq, history);
    }

    /// Server side: what the client last acknowledged holding of snapshot
    /// type `id` (docs/WIRE.md §12.6, kind `04`).
    #[must_use]
    pub fn snapshot_ack(&self, id: u32) -> Option<SnapshotAck> {
        self.acks.get(&id).copied()
    }

    /// Whether events wait for the application.
    #[must_use]
    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// Server side: the authentication a passed hello awaits. The driver
    /// runs the endpoint's auth callback and answers with
    /// [`handle_admission`](Self::handle_admission).
    #[must_use]
    pub fn poll_auth(&mut self) -> Option<AuthRequest> {
        self.auth.take()
    }

    /// Server side: the endpoint's decision on this client (after auth,
    /// capacity and the identity policy). Ignored unless the session awaits
    /// it (a late answer after the deadline changes nothing).
    pub fn handle_admission(
        &mut self,
        now: Instant,
        decision: Result<(ClientId, Option<Identity>), RefuseReason>,
    ) {
        if self.role != Role::Server || self.state != State::Admitting {
            return;
        }
        match decision {
            Ok((client, identity)) => {
                let reply = HelloReply::Welcome {
                    client_id: client.0,
                };
                self.write_frame(&reply.to_encoded_vec());
                self.finish_control();
                self.open(now, client, identity);
            }
            Err(reason) => self.refuse(now, reason),
        }
    }

    /// Closes the connection with `code` and `reason`; the driver closes
    /// QUIC when it drains [`Transmit::Close`].
    pub fn close(&mut self, code: CloseCode, reason: &str) {
        self.close_with(
            code,
            reason,
            DisconnectReason::Closed {
                by: ClosedBy::Local,
                code,
                reason: reason.to_owned(),
            },
        );
    }

    /// Closes the connection with `code` and `reason` once everything
    /// queued on its reliable channels has been acknowledged by the peer,
    /// or at `deadline`, whichever comes first: a graceful close, for a
    /// server draining before it shuts down. Sends are refused from now on
    /// (as after a close); what was queued before goes out, each channel's
    /// stream is finished, and the driver reports when the peer has
    /// acknowledged all of it. A session not open yet closes at once.
    pub fn close_flushed(&mut self, code: CloseCode, reason: &str, deadline: Instant) {
        if self.state != State::Open {
            self.close(code, reason);
            return;
        }
        if self.flush_close.is_some() {
            return;
        }
        for out in &mut self.out_streams {
            if out.stream != OutStream::Control {
                out.queue.push_back(StreamWrite::Finish);
            }
        }
        self.heartbeat_at = None;
        self.flush_close = Some(FlushClose {
            code,
            reason: reason.to_owned(),
            deadline,
        });
    }

    /// Whether a graceful close ([`close_flushed`](Self::close_flushed))
    /// is waiting for the peer's acknowledgements.
    #[must_use]
    pub fn is_flushing(&self) -> bool {
        self.flush_close.is_some() && self.state != State::Closed
    }

    /// Whether the session still holds reliable bytes the driver has not
    /// taken: queued stream writes (the finishes included) or
    /// reliable-unordered messages.
    #[must_use]
    pub fn holds_reliable(&self) -> bool {
        !self.unordered.is_empty() || self.out_streams.iter().any(|s| !s.queue.is_empty())
    }

    /// The driver says everything of a graceful close was acknowledged
    /// (or its deadline passed): the close goes out now.
    pub fn handle_flushed(&mut self) {
        if let Some(f) = self.flush_close.take() {
            self.close(f.code, &f.reason);
        }
    }

    pub(super) fn close_with(&mut self, code: CloseCode, reason: &str, why: DisconnectReason) {
        if self.state == State::Closed {
            // Between attempts: the application's close ends the retries.
            if self.retry_at.take().is_some() {
                self.closed = Some(why.clone());
                self.events.push_back(SessionEvent::Closed(why));
            }
            return;
        }
        self.transmits.push_back(Transmit::Close {
            code,
            reason: Bytes::copy_from_slice(reason.as_bytes()),
        });
        self.finish_closed(why);
    }

    fn finish_closed(&mut self, reason: DisconnectReason) {
        // A server reports the end only of clients the application was
        // told of; a client always learns why it is not connected, unless
        // it tries again (within its deadline).
        let retrying = self.retry_at.is_some();
        let told = (self.state == State::Open || self.role == Role::Client) && !retrying;
        self.state = State::Closed;
        self.deadline = None;
        self.close_at = None;
        self.heartbeat_at = None;
        self.auth = None;
        // What is still queued will never go out: the streams, and the
        // unreliable messages packed and not yet flushed (a flush after the
        // close would otherwise queue a datagram behind `Transmit::Close`).
        self.out_streams.clear();
        self.unordered.clear();
        self.backlog = 0;
        self.packer = UnreliablePacker::new();
        self.tap(|| Tap::Closed(reason.to_string()));
        if retrying {
            return;
        }
        self.closed = Some(reason.clone());
        if told {
            self.events.push_back(SessionEvent::Closed(reason));
        }
    }

    /// Admits the connection: messages flow from here.
    pub(super) fn open(&mut self, now: Instant, client: ClientId, identity: Option<Identity>) {
        self.state = State::Open;
        self.client = Some(client);
        self.deadline = None;
        self.last_heard = now;
        self.counters.start(now);
        if self.role == Role::Client
            && let Some(every) = self.config.limits.heartbeat_interval()
        {
            self.heartbeat_at = Some(now + every);
        }
        self.tap(|| Tap::Connected);
        self.events
            .push_back(SessionEvent::Connected { client, identity });
    }

    /// Server side: refuses the client with `reason`, which it reads on the
    /// control stream before the close that follows.
    pub(super) fn refuse(&mut self, now: Instant, reason: RefuseReason) {
        tracing::debug!(peer = %self.peer, "refused: {reason}");
        let reply = HelloReply::Refused(reason.clone());
        self.write_frame(&reply.to_encoded_vec());
        self.finish_control();
        self.state = State::Refusing;
        self.close_at = Some(
            self.deadline
                .map_or(now + REFUSAL_GRACE, |d| d.min(now + REFUSAL_GRACE)),
        );
        self.events.push_back(SessionEvent::Refused(reason));
    }

    /// Server side: checks a hello (protocol, version, datagram size); a
    /// good one waits for admission.
    pub(super) fn handle_hello(&mut self, now: Instant, frame: &[u8]) {
        let hello = match Hello::decode(frame) {
            Ok(hello) => hello,
            Err(_) => return self.refuse(now, RefuseReason::NotZao),
        };
        if let Err(reason) = check_hello(&hello, &self.config.protocol, super::super::VERSION) {
            return self.refuse(now, reason);
        }
        let max = self.peer_datagram.unwrap_or(0);
        if max < DATAGRAM_BUDGET {
            return self.refuse(
                now,
                RefuseReason::DatagramsTooSmall {
                    max: max as u64,
                    required: DATAGRAM_BUDGET as u64,
                },
            );
        }
        self.state = State::Admitting;
        self.auth = Some(AuthRequest {
            token: hello.token,
            addr: self.peer,
        });
    }

    /// Client side: the server's answer to our hello.
    pub(super) fn handle_reply(&mut self, now: Instant, frame: &[u8]) {
        match HelloReply::decode(frame) {
            Ok(HelloReply::Welcome { client_id }) => self.open(now, ClientId(client_id), None),
            Ok(HelloReply::Refused(reason)) => {
                let text = reason.to_string();
                let why = DisconnectReason::Refused(reason);
                self.plan_retry(now, &why);
                self.close_with(CloseCode::Refused, &text, why);
            }
            Err(e) => self.violation(&format_args!("bad handshake reply: {e}")),
        }
    }

    /// Closes the connection for breaking the wire rules.
    pub(super) fn violation(&mut self, what: &dyn core::fmt::Display) {
        tracing::debug!(peer = %self.peer, "protocol violation: {what}");
        self.close(CloseCode::ProtocolViolation, &what.to_string());
    }
}
