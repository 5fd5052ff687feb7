//! A server's sessions, sans I/O: admission, authentication results,
//! events for the application, and the fan-out of one encode to many
//! connections. A backend (`zao::quic` over quinn, `zao::sim` on the
//! simulated network) accepts QUIC connections and drives each session;
//! the application talks to [`ServerCore`], whichever backend runs it.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use bytes::{Bytes, BytesMut};

use super::admission::{Admission, IncomingVerdict};
use super::cell::SessionCell;
use super::delta::{DeltaSnapshot, Histories};
use super::{
    AuthCallback, AuthError, AuthFuture, AuthRequest, Channel, ChannelKind, ClientId, CloseCode,
    ConnectionStats, DATAGRAM_BUDGET, DisconnectReason, Identity, Outgoing, Protocol, Received,
    RefuseReason, SendError, Session, SessionConfig, SessionEvent, Snapshot, SnapshotAck,
    SnapshotHeader, encode_chunks, snapshot_datagram, snapshot_datagram_len,
};
use crate::NetMessage;

/// Who a message goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Target<'a> {
    /// Every connected client.
    All,
    /// One client.
    One(ClientId),
    /// Every client but one (the one whose action is being echoed).
    AllExcept(ClientId),
    /// These clients.
    List(&'a [ClientId]),
}

/// What happened on the server since the last poll.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ServerEvent {
    /// A client completed the handshake.
    Connected {
        /// Its id.
        client: ClientId,
        /// Its address.
        addr: SocketAddr,
        /// Who the auth callback said it is (`None` without a callback).
        identity: Option<Identity>,
    },
    /// A client's handshake was refused (the client reads the same reason).
    Refused {
        /// Its address.
        addr: SocketAddr,
        /// Why.
        reason: RefuseReason,
    },
    /// A client left or was disconnected; its last event.
    Disconnected {
        /// Its id.
        client: ClientId,
        /// Why.
        reason: DisconnectReason,
    },
    /// A message from a client, its id parsed once on receipt.
    Message {
        /// Who sent it.
        client: ClientId,
        /// The channel it came on.
        channel: Channel,
        /// The message.
        message: Received,
    },
}

/// A connected client, as the server keeps it.
#[derive(Debug)]
struct Client {
    cell: Arc<SessionCell>,
    addr: SocketAddr,
    identity: Option<Identity>,
}

#[derive(Debug)]
struct State {
    admission: Admission,
    /// Admitted clients, until the application has read their
    /// `Disconnected`.
    clients: BTreeMap<ClientId, Client>,
    /// Clients closed because a newer connection of their identity took
    /// their slot.
    replaced: HashSet<ClientId>,
}

/// What a server's backend and its application share.
pub(crate) struct ServerShared {
    config: Arc<SessionConfig>,
    auth: Option<AuthCallback>,
    state: Mutex<State>,
    /// Sessions with events for the application, in the order they got them.
    ready: Mutex<VecDeque<Arc<SessionCell>>>,
}

impl core::fmt::Debug for ServerShared {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ServerShared")
            .field("config", &self.config)
            .field("auth", &self.auth.is_some())
            .finish_non_exhaustive()
    }
}

/// What a backend does with a session's authentication.
pub(crate) enum Authentication {
    /// Already decided (no callback): nothing to run.
    Done,
    /// Run this future, off the network threads and within the session's
    /// deadline, then hand its result to [`ServerShared::admit`].
    Run(AuthFuture),
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ServerShared {
    pub(crate) fn new(config: SessionConfig, auth: Option<AuthCallback>) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                admission: Admission::new(&config.limits),
                clients: BTreeMap::new(),
                replaced: HashSet::new(),
            }),
            config: Arc::new(config),
            auth,
            ready: Mutex::new(VecDeque::new()),
        })
    }

    pub(crate) fn config(&self) -> &Arc<SessionConfig> {
        &self.config
    }

    /// Decides on a new QUIC connection attempt (see [`IncomingVerdict`]).
    pub(crate) fn handle_incoming(
        &self,
        addr: SocketAddr,
        validated: bool,
        may_retry: bool,
    ) -> IncomingVerdict {
        let verdict = lock(&self.state)
            .admission
            .handle_incoming(addr, validated, may_retry);
        if verdict != IncomingVerdict::Accept {
            tracing::debug!(%addr, ?verdict, "connection attempt not accepted");
        }
        verdict
    }

    /// The session of an attempt [`handle_incoming`](Self::handle_incoming)
    /// accepted with the same `validated`.
    pub(crate) fn new_session(
        &self,
        peer: SocketAddr,
        validated: bool,
        now: Instant,
    ) -> Arc<SessionCell> {
        let cell = SessionCell::new(Session::server(self.config.clone(), peer, now));
        cell.validated.store(validated, Ordering::Relaxed);
        cell
    }

    /// After the driver fed the session and drained it: pending and slot
    /// accounting, and the ready queue. Every driver calls it after every
    /// drive.
    pub(crate) fn after_drive(&self, cell: &Arc<SessionCell>) {
        let session = cell.lock();
        let (over, closed, peer, client) = (
            session.is_handshake_over(),
            session.is_closed(),
            session.peer(),
            session.client_id(),
        );
        if session.has_events() && !cell.ready.swap(true, Ordering::AcqRel) {
            lock(&self.ready).push_back(cell.clone());
        }
        drop(session);
        if over && !cell.handshake_released.swap(true, Ordering::AcqRel) {
            let validated = cell.validated.load(Ordering::Relaxed);
            lock(&self.state).admission.handshake_ended(peer, validated);
        }
        if closed
            && let Some(client) = client
            && !cell.slot_released.swap(true, Ordering::AcqRel)
        {
            let mut state = lock(&self.state);
            let replaced = state.replaced.remove(&client);
            let identity = state.clients.get(&client).and_then(|c| c.identity.clone());
            state
                .admission
                .release(client, peer, identity.as_ref(), replaced);
        }
    }

    /// Starts the authentication a session asked for.
    pub(crate) fn authenticate(
        &self,
        cell: &Arc<SessionCell>,
        request: AuthRequest,
        now: Instant,
    ) -> Authentication {
        {
            // A draining server refuses before it asks the auth callback
            // (which may call an account service): the client looks for
            // another server. Both locks held, as in `admit`.
            let state = lock(&self.state);
            if state.admission.is_draining() {
                let mut session = cell.lock();
                if session.is_admitting() {
                    session.handle_admission(now, Err(RefuseReason::Draining));
                }
                return Authentication::Done;
            }
        }
        match &self.auth {
            Some(auth) => Authentication::Run(auth(request)),
            None => {
                self.admit(cell, now, Ok(None));
                Authentication::Done
            }
        }
    }

    /// The authentication's result: admission (capacity, id, identity
    /// policy) and the session's answer to its client.
    pub(crate) fn admit(
        &self,
        cell: &Arc<SessionCell>,
        now: Instant,
        auth: Result<Option<Identity>, AuthError>,
    ) {
        let mut state = lock(&self.state);
        let mut session = cell.lock();
        if !session.is_admitting() {
            // Closed while its authentication ran (its deadline, or the
            // peer left): nothing to admit. Admitting it anyway would give
            // its identity to a closed connection, taking it from the live
            // connection that holds it, so that a third login with that
            // identity would not be seen as a duplicate.
            return;
        }
        let decision = match auth {
            Ok(identity) => match state.admission.admit(session.peer(), identity.as_ref()) {
                Ok(admitted) => Ok((admitted, identity)),
                Err(reason) => Err(reason),
            },
            Err(AuthError::Rejected(detail)) => Err(RefuseReason::Unauthorized { detail }),
            Err(AuthError::Unavailable(detail)) => Err(RefuseReason::AuthUnavailable { detail }),
        };
        match decision {
            Ok((admitted, identity)) => {
                // Admitting: the session opens (both locks are held, so
                // nothing closes it in between).
                session.handle_admission(now, Ok((admitted.client, identity.clone())));
                debug_assert!(session.is_open());
                let addr = session.peer();
                drop(session);
                state.clients.insert(
                    admitted.client,
                    Client {
                        cell: cell.clone(),
                        addr,
                        identity,
                    },
                );
                if let Some(old) = admitted.replaces {
                    state.replaced.insert(old);
                    if let Some(old) = state.clients.get(&old) {
                        old.cell
                            .lock()
                            .close(CloseCode::Replaced, "the same identity connected again");
                        old.cell.wake();
                    }
                }
            }
            Err(reason) => session.handle_admission(now, Err(reason)),
        }
    }
}

/// The application's side of a server, whichever backend drives it:
/// events, sends, clients. `zao::quic::Server` and `zao::sim::SimServer`
/// dereference to it.
///
/// Sends encode a message once and queue the same bytes on every target
/// connection; nothing here blocks or waits for the network.
#[derive(Debug)]
pub struct ServerCore {
    shared: Arc<ServerShared>,
    /// The session whose events `poll_event` is draining.
    current: Option<Arc<SessionCell>>,
    scratch: BytesMut,
    targets: Vec<Arc<SessionCell>>,
    chunks: Vec<Bytes>,
    seqs: HashMap<u32, u64>,
    /// Delta snapshots: each type's history, and the targets by baseline.
    histories: Histories,
    by_baseline: Vec<(u64, usize)>,
    /// Reused: each target's last ack, beside `by_baseline`.
    acks: Vec<Option<SnapshotAck>>,
}

/// What [`ServerCore::send_delta_snapshot`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeltaSent {
    /// The snapshot's sequence number.
    pub seq: u64,
    /// Encodes made: one per distinct baseline among the targets (a
    /// keyframe counts as one baseline).
    pub encodes: usize,
    /// Targets that got a keyframe (no baseline the history still has).
    pub keyframes: usize,
    /// Targets sent to.
    pub targets: usize,
    /// Chunk datagrams encoded (once each, whatever the number of targets
    /// sharing them).
    pub chunks: usize,
    /// Bytes of the datagrams encoded.
    pub encoded_bytes: usize,
    /// Bytes queued over all targets (each target's chunks counted for it,
    /// copies included).
    pub sent_bytes: usize,
    /// Of those, the bytes of the previous tick's chunks sent again to
    /// lossy clients ([`Limits::delta_redundancy_loss`](super::Limits::delta_redundancy_loss)).
    pub resent_bytes: usize,
    /// Targets whose own baseline was past the bound on distinct encodes
    /// ([`Limits::max_delta_encodes`](super::Limits::max_delta_encodes)):
    /// they got an older baseline they also hold, or a keyframe.
    pub rebased: usize,
}

impl ServerCore {
    pub(crate) fn new(shared: Arc<ServerShared>) -> Self {
        Self {
            shared,
            current: None,
            scratch: BytesMut::with_capacity(64 * 1024),
            targets: Vec::new(),
            chunks: Vec::new(),
            seqs: HashMap::new(),
            histories: Histories::default(),
            by_baseline: Vec::new(),
            acks: Vec::new(),
        }
    }

    pub(crate) fn shared(&self) -> &Arc<ServerShared> {
        &self.shared
    }

    /// The protocol this server speaks.
    #[must_use]
    pub fn protocol(&self) -> &Protocol {
        &self.shared.config.protocol
    }

    /// The next event, or `None`. Never blocks. A client's events come in
    /// order: `Connected`, its messages, `Disconnected`.
    pub fn poll_event(&mut self) -> Option<ServerEvent> {
        loop {
            let cell = match self.current.take() {
                Some(cell) => cell,
                None => lock(&self.shared.ready).pop_front()?,
            };
            let mut session = cell.lock();
            let Some(event) = session.poll_event() else {
                cell.ready.store(false, Ordering::Release);
                drop(session);
                // Events may have arrived between the pop and the flag.
                if cell.lock().has_events() && !cell.ready.swap(true, Ordering::AcqRel) {
                    lock(&self.shared.ready).push_back(cell);
                }
                continue;
            };
            let (addr, client) = (session.peer(), session.client_id().unwrap_or(ClientId(0)));
            if session.take_resume() {
                cell.wake();
            }
            drop(session);
            self.current = Some(cell);
            return Some(match event {
                // A server session refuses delta chunks from clients.
                SessionEvent::Snapshot { .. } => continue,
                SessionEvent::Connected { client, identity } => ServerEvent::Connected {
                    client,
                    addr,
                    identity,
                },
                SessionEvent::Refused(reason) => ServerEvent::Refused { addr, reason },
                SessionEvent::Message { channel, message } => ServerEvent::Message {
                    client,
                    channel,
                    message,
                },
                SessionEvent::Closed(reason) => {
                    lock(&self.shared.state).clients.remove(&client);
                    ServerEvent::Disconnected { client, reason }
                }
            });
        }
    }

    /// The connected clients, in id order: each had its `Connected` event
    /// and not yet its `Disconnected` read.
    #[must_use]
    pub fn clients(&self) -> Vec<ClientId> {
        lock(&self.shared.state).clients.keys().copied().collect()
    }

    /// A connected client's address.
    #[must_use]
    pub fn addr(&self, client: ClientId) -> Option<SocketAddr> {
        lock(&self.shared.state)
            .clients
            .get(&client)
            .map(|c| c.addr)
    }

    /// Who the auth callback said a connected client is.
    #[must_use]
    pub fn identity(&self, client: ClientId) -> Option<Identity> {
        lock(&self.shared.state)
            .clients
            .get(&client)
            .and_then(|c| c.identity.clone())
    }

    /// What the server's admission has done: handshakes pending, clients
    /// connected, attempts accepted, retried (address validation) and
    /// refused.
    #[must_use]
    pub fn handshakes(&self) -> super::HandshakeStats {
        lock(&self.shared.state).admission.stats()
    }

    /// Stops admitting new clients (`true`): each is refused with
    /// [`RefuseReason::Draining`], which tells it to look for another
    /// server, while the connected ones play on. `false` admits again. For
    /// a server about to shut down or to be taken out of a fleet.
    pub fn set_draining(&self, draining: bool) {
        lock(&self.shared.state).admission.set_draining(draining);
    }

    /// Whether new clients are refused as draining
    /// ([`set_draining`](Self::set_draining)).
    #[must_use]
    pub fn is_draining(&self) -> bool {
        lock(&self.shared.state).admission.is_draining()
    }

    /// Starts a graceful shutdown: no new client is admitted
    /// ([`set_draining`](Self::set_draining)), and every connection is
    /// closed with `reason` ([`CloseCode::Normal`]) once the client has
    /// acknowledged everything queued for it on reliable channels, or at
    /// `deadline` (see [`Session::close_flushed`](crate::proto::Session::close_flushed)).
    /// Sends to a draining client are refused meanwhile; datagrams stop.
    /// What is waited for: each reliable-ordered channel's stream whole,
    /// and the reliable-unordered messages not yet handed to QUIC when the
    /// drain begins (one QUIC already took is retransmitted until the close,
    /// not waited for). [`is_drained`](Self::is_drained) says when every
    /// connection is gone.
    pub fn drain(&self, reason: &str, deadline: Instant) {
        self.set_draining(true);
        for cell in self.cells() {
            cell.lock()
                .close_flushed(CloseCode::Normal, reason, deadline);
            cell.wake();
        }
    }

    /// Whether no connection is left: after [`drain`](Self::drain), every
    /// client got its reliable messages and its close (or the deadline
    /// passed and the closes went out), and the application has read each
    /// one's [`ServerEvent::Disconnected`] from
    /// [`poll_event`](Self::poll_event).
    #[must_use]
    pub fn is_drained(&self) -> bool {
        lock(&self.shared.state).clients.is_empty()
    }

    /// Statistics of one client's connection.
    #[must_use]
    pub fn stats(&self, client: ClientId) -> Option<ConnectionStats> {
        self.cell(client).map(|c| c.lock().stats())
    }

    /// Disconnects a client with a reason it will see
    /// ([`CloseCode::Kicked`]).
    pub fn disconnect(&self, client: ClientId, reason: &str) {
        if let Some(cell) = self.cell(client) {
            cell.lock().close(CloseCode::Kicked, reason);
            cell.wake();
        }
    }

    fn cell(&self, client: ClientId) -> Option<Arc<SessionCell>> {
        lock(&self.shared.state)
            .clients
            .get(&client)
            .map(|c| c.cell.clone())
    }

    /// Resolves a target into `self.targets`.
    fn resolve(&mut self, target: Target<'_>) -> Result<(), SendError> {
        self.targets.clear();
        let state = lock(&self.shared.state);
        let clients = &state.clients;
        match target {
            Target::All => self
                .targets
                .extend(clients.values().map(|c| c.cell.clone())),
            Target::AllExcept(skip) => self.targets.extend(
                clients
                    .iter()
                    .filter(|(id, _)| **id != skip)
                    .map(|(_, c)| c.cell.clone()),
            ),
            Target::One(id) => match clients.get(&id) {
                Some(c) => self.targets.push(c.cell.clone()),
                None => return Err(SendError::ClientNotConnected(id)),
            },
            Target::List(ids) => self.targets.extend(
                ids.iter()
                    .filter_map(|id| clients.get(id).map(|c| c.cell.clone())),
            ),
        }
        Ok(())
    }

    /// Encodes `msg` once and sends the same bytes to every target, as
    /// `channel`'s kind delivers.
    ///
    /// Reliable (ordered or unordered): a full backlog is
    /// [`SendError::QueueFull`] for a single target; a client that cannot
    /// keep up with a broadcast is disconnected ([`CloseCode::TooSlow`]: its
    /// reliable channel could no longer be exactly-once). Datagram channels
    /// never fail for a slow client: its oldest datagrams are dropped
    /// instead. On a sequenced or snapshot channel the message goes out as
    /// one sequenced datagram, built once for every target (latest wins);
    /// [`send_snapshot`](Self::send_snapshot) splits a large snapshot.
    ///
    /// # Errors
    /// [`SendError`] as above, [`SendError::NotRegistered`] if the server
    /// may not send `M` on `channel`, [`SendError::TooLarge`].
    pub fn send<M: NetMessage>(
        &mut self,
        target: Target<'_>,
        channel: Channel,
        msg: &M,
    ) -> Result<(), SendError> {
        self.check_registered(M::ID, channel)?;
        let message = Outgoing::encode(msg, &mut self.scratch)?;
        self.send_outgoing(target, channel, &message)
    }

    /// Sends a message encoded once with [`Outgoing::encode`] (or framed from
    /// bytes with [`Outgoing::from_message`]) to every target. See
    /// [`send`](Self::send).
    ///
    /// # Errors
    /// As [`send`](Self::send).
    pub fn send_outgoing(
        &mut self,
        target: Target<'_>,
        channel: Channel,
        message: &Outgoing,
    ) -> Result<(), SendError> {
        let kind = self.check_registered(message.id(), channel)?;
        let single = matches!(target, Target::One(_));
        self.resolve(target)?;
        match kind {
            ChannelKind::ReliableOrdered | ChannelKind::ReliableUnordered => {
                for cell in &self.targets {
                    let result = cell.lock().send(channel, message);
                    match result {
                        Ok(()) => cell.wake(),
                        Err(SendError::QueueFull) if !single => {
                            tracing::debug!("reliable backlog full: disconnecting");
                            cell.lock()
                                .close(CloseCode::TooSlow, "reliable backlog full");
                            cell.wake();
                        }
                        Err(e @ SendError::TooLarge { .. }) => return Err(e),
                        Err(e) if single => return Err(e),
                        Err(_) => {}
                    }
                }
            }
            ChannelKind::Unreliable => {
                let size = 1 + message.frame().len();
                if size > DATAGRAM_BUDGET {
                    return Err(SendError::TooLarge {
                        size,
                        max: DATAGRAM_BUDGET,
                    });
                }
                if size * 2 > DATAGRAM_BUDGET {
                    // Too big to pack well: one datagram shared by all.
                    let mut datagram = BytesMut::with_capacity(size);
                    datagram.extend_from_slice(&[super::DatagramKind::Unreliable as u8]);
                    datagram.extend_from_slice(message.frame());
                    let datagram = [datagram.freeze()];
                    self.each_target(single, |s| {
                        s.send_datagrams(message.id(), channel, &datagram)
                    })?;
                } else {
                    self.each_target(single, |s| s.send(channel, message))?;
                }
            }
            ChannelKind::Sequenced | ChannelKind::Snapshot => {
                // One sequence number per message type for every client:
                // the datagram is built once and shared.
                let header = SnapshotHeader {
                    seq: next_seq(&mut self.seqs, message.id()),
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
                let datagram = [snapshot_datagram(
                    &mut self.scratch,
                    header,
                    body.len(),
                    |w| w.put_slice(&body),
                )];
                self.each_target(single, |s| {
                    s.send_datagrams(message.id(), channel, &datagram)
                })?;
            }
        }
        Ok(())
    }

    /// Applies `send` to every resolved target; only a single target's
    /// error is the caller's.
    fn each_target(
        &self,
        single: bool,
        mut send: impl FnMut(&mut Session) -> Result<(), SendError>,
    ) -> Result<(), SendError> {
        for cell in &self.targets {
            let result = send(&mut cell.lock());
            cell.wake();
            match result {
                Err(e) if single => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }

    /// Sends a snapshot on its snapshot channel, split into independently
    /// decodable chunks that each fit one datagram
    /// ([`encode_chunks`]). Each chunk is encoded once and shared by every
    /// target. Returns the number of chunks.
    ///
    /// # Errors
    /// [`SendError::NotRegistered`], or [`SendError::TooLarge`] if one item
    /// does not fit a datagram.
    pub fn send_snapshot<M: Snapshot>(
        &mut self,
        target: Target<'_>,
        msg: &M,
    ) -> Result<usize, SendError> {
        let channel = match self.protocol().kind_of(M::ID) {
            Some((channel, ChannelKind::Snapshot)) => channel,
            _ => return Err(SendError::NotRegistered(M::ID)),
        };
        self.check_registered(M::ID, channel)?;
        let single = matches!(target, Target::One(_));
        self.resolve(target)?;
        if self.targets.is_empty() {
            return Ok(0);
        }
        let seq = next_seq(&mut self.seqs, M::ID);
        self.chunks.clear();
        let count = encode_chunks(msg, seq, &mut self.scratch, &mut self.chunks).ok_or(
            SendError::TooLarge {
                size: msg.part_len(0..msg.items()),
                max: DATAGRAM_BUDGET,
            },
        )?;
        // Every chunk encoded once; then client by client, so each
        // connection's driver wakes once per snapshot and sends it as one
        // batch (chunk by chunk across clients measured 1.2-1.4x the bare
        // quinn floor at 64-256 clients x 1024 players).
        let chunks = core::mem::take(&mut self.chunks);
        let result = self.each_target(single, |s| s.send_datagrams(M::ID, channel, &chunks));
        self.chunks = chunks;
        self.chunks.clear();
        result.map(|()| count)
    }

    /// Sends a snapshot as deltas (docs/WIRE.md §12.10): each target gets
    /// it encoded against the newest snapshot of this type it acknowledged
    /// holding ([`ClientCore::send_acks`](super::ClientCore::send_acks))
    /// that the server's history still has, or as a keyframe. Targets that
    /// acknowledged the same baseline share one encode, so the cost per
    /// tick grows with the distinct baselines, not the clients. Each chunk
    /// covers a range of item keys and decodes on its own. The snapshot
    /// joins the history (the last [`DEFAULT_HISTORY`](super::DEFAULT_HISTORY)
    /// sends, or [`set_snapshot_history`](Self::set_snapshot_history)).
    ///
    /// # Errors
    /// [`SendError::NotRegistered`] if `S` is not on a snapshot channel the
    /// server sends; [`SendError::DuplicateKey`] if two items share a key;
    /// [`SendError::TooLarge`] if one item does not fit a datagram;
    /// [`SendError::ClientNotConnected`] for a single target that is not.
    pub fn send_delta_snapshot<S: DeltaSnapshot>(
        &mut self,
        target: Target<'_>,
        snapshot: &S,
    ) -> Result<DeltaSent, SendError> {
        let channel = match self.protocol().kind_of(S::ID) {
            Some((channel, ChannelKind::Snapshot)) => channel,
            _ => return Err(SendError::NotRegistered(S::ID)),
        };
        self.check_registered(S::ID, channel)?;
        let single = matches!(target, Target::One(_));
        self.resolve(target)?;
        let seq = next_seq(&mut self.seqs, S::ID);
        let history = self
            .histories
            .get::<S>()
            .ok_or(SendError::NotRegistered(S::ID))?;
        history.stage(seq, snapshot)?;
        let capacity = history.capacity();
        self.by_baseline.clear();
        self.acks.clear();
        for (i, cell) in self.targets.iter().enumerate() {
            let ack = cell.lock().snapshot_ack(S::ID);
            self.acks.push(ack);
            self.by_baseline.push((history.baseline(ack), i));
        }
        let max = self.shared.config.limits.max_delta_encodes;
        let redundancy = self.shared.config.limits.delta_redundancy_loss;
        let rebased = bound_baselines(&mut self.by_baseline, &self.acks, max);
        self.by_baseline.sort_unstable();
        let mut sent = DeltaSent {
            seq,
            targets: self.targets.len(),
            rebased,
            ..DeltaSent::default()
        };
        let mut start = 0;
        let mut chunks = core::mem::take(&mut self.chunks);
        let mut result = Ok(());
        while let Some(&(baseline, _)) = self.by_baseline.get(start) {
            let end = self
                .by_baseline
                .get(start..)
                .unwrap_or_default()
                .iter()
                .position(|(b, _)| *b != baseline)
                .map_or(self.by_baseline.len(), |n| start + n);
            chunks.clear();
            if let Err(e) = history.encode(baseline, &mut self.scratch, &mut chunks) {
                result = Err(e);
                break;
            }
            let group = self.by_baseline.get(start..end).unwrap_or_default();
            let bytes: usize = chunks.iter().map(Bytes::len).sum();
            sent.encodes += 1;
            sent.chunks += chunks.len();
            sent.encoded_bytes += bytes;
            sent.sent_bytes += bytes * group.len();
            if baseline == 0 {
                sent.keyframes += group.len();
            }
            for &(_, i) in group {
                let Some(cell) = self.targets.get(i) else {
                    continue;
                };
                let r = {
                    let mut session = cell.lock();
                    let r = session.send_datagrams(S::ID, channel, &chunks);
                    if r.is_ok() {
                        session.handle_delta_sent(S::ID, seq, capacity);
                        let resent = session.send_delta_copy(S::ID, channel, &chunks, redundancy);
                        sent.resent_bytes += resent;
                        sent.sent_bytes += resent;
                    }
                    r
                };
                cell.wake();
                if single && r.is_err() {
                    result = r;
                }
            }
            start = end;
        }
        chunks.clear();
        self.chunks = chunks;
        history.commit();
        result.map(|()| sent)
    }

    /// Sets how many snapshots per type the server keeps for delta
    /// baselines (default [`DEFAULT_HISTORY`](super::DEFAULT_HISTORY)),
    /// for the types it has not sent yet. Clients must keep at least as
    /// many ([`DeltaReceiver::with_history`](super::DeltaReceiver::with_history)).
    pub fn set_snapshot_history(&mut self, snapshots: usize) {
        self.histories.capacity = Some(snapshots.max(1));
    }

    /// Every connected client's session, taken out of the state lock.
    fn cells(&self) -> Vec<Arc<SessionCell>> {
        lock(&self.shared.state)
            .clients
            .values()
            .map(|c| c.cell.clone())
            .collect()
    }

    /// Sends the unreliable messages packed so far. Call once per tick,
    /// after the tick's sends.
    pub fn flush(&self) {
        for cell in self.cells() {
            if cell.lock().flush() {
                cell.wake();
            }
        }
    }

    /// The one admission rule on the way out, and the channel's kind.
    fn check_registered(&self, id: u32, channel: Channel) -> Result<ChannelKind, SendError> {
        let protocol = &self.shared.config.protocol;
        protocol
            .admits(id, channel, super::Role::Server)
            .map_err(|_| SendError::NotRegistered(id))?;
        protocol
            .channel(channel)
            .map(|c| c.kind)
            .ok_or(SendError::NotRegistered(id))
    }

    /// Closes every connection (the backend carries the closes out).
    pub(crate) fn close_all(&self, reason: &str) {
        for cell in self.cells() {
            cell.lock().close(CloseCode::Normal, reason);
            cell.wake();
        }
    }
}

/// Holds a tick to at most `max` distinct encodes (at least one): when the
/// targets' baselines (`by_baseline`: baseline, target index) are more,
/// the most shared ones are kept (the newest first among equals), one
/// encode stays for keyframes, and every other target gets the newest kept
/// baseline its ack says it holds, or a keyframe. Otherwise N clients
/// acking N different old baselines would force N encodes per tick (most
/// of a 60 Hz tick at 128 of them). Returns the targets moved.
fn bound_baselines(
    by_baseline: &mut [(u64, usize)],
    acks: &[Option<SnapshotAck>],
    max: usize,
) -> usize {
    let mut counts: Vec<(u64, usize)> = Vec::new();
    for &(baseline, _) in by_baseline.iter() {
        match counts.iter_mut().find(|(b, _)| *b == baseline) {
            Some((_, n)) => *n += 1,
            None => counts.push((baseline, 1)),
        }
    }
    let max = max.max(1);
    if counts.len() <= max {
        return 0;
    }
    // The keyframe is one of the encodes, whoever needs it.
    counts.retain(|(b, _)| *b != 0);
    counts.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
    counts.truncate(max - 1);
    let mut kept: Vec<u64> = counts.into_iter().map(|(b, _)| b).collect();
    kept.sort_unstable_by(|a, b| b.cmp(a));
    let mut moved = 0;
    for (baseline, i) in by_baseline.iter_mut() {
        if *baseline == 0 || kept.contains(baseline) {
            continue;
        }
        let ack = acks.get(*i).copied().flatten();
        *baseline = kept
            .iter()
            .copied()
            .find(|b| ack.is_some_and(|a| a.holds(*b)))
            .unwrap_or(0);
        moved += 1;
    }
    moved
}

fn next_seq(seqs: &mut HashMap<u32, u64>, id: u32) -> u64 {
    let seq = seqs.entry(id).or_insert(0);
    *seq += 1;
    *seq
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Encode;
    use crate::proto::{Hello, Limits, Protocol, StreamId, frame_header};

    /// A server session from `port` whose hello passed: it awaits admission.
    fn admitting(shared: &ServerShared, port: u16, now: Instant) -> Arc<SessionCell> {
        let peer = SocketAddr::from(([192, 0, 2, 1], port));
        let cell = shared.new_session(peer, false, now);
        let hello = Hello::new(&shared.config.protocol, None).to_encoded_vec();
        let (header, n) = frame_header(hello.len());
        {
            let mut session = cell.lock();
            session.handle_connected(now, Some(1200));
            session.handle_stream_bytes(
                now,
                StreamId::CONTROL,
                &[&header[..n], &hello[..]].concat(),
            );
            assert!(session.is_admitting());
        }
        cell
    }

    /// The hole: a connection that closed while its auth ran was admitted
    /// when the answer came, and its release took the identity from the
    /// live connection holding it; a third login with that identity was
    /// then not a duplicate.
    #[test]
    fn an_answer_for_a_closed_session_leaves_the_identity_to_the_live_one() {
        let shared =
            ServerShared::new(SessionConfig::new(Protocol::new(), Limits::default()), None);
        let now = Instant::now();
        let alice = || Ok(Some(Identity::new("alice")));
        let live = admitting(&shared, 1, now);
        shared.admit(&live, now, alice());
        assert!(live.lock().is_open());

        let gone = admitting(&shared, 2, now);
        gone.lock()
            .close(CloseCode::Normal, "left while its auth ran");
        shared.admit(&gone, now, alice());
        assert!(
            live.lock().is_open(),
            "a closed connection replaced the live one"
        );

        let third = admitting(&shared, 3, now);
        shared.admit(&third, now, alice());
        assert!(third.lock().is_open());
        assert!(
            matches!(
                live.lock().close_reason(),
                Some(DisconnectReason::Closed {
                    code: CloseCode::Replaced,
                    ..
                })
            ),
            "the third alice did not replace the live one: {:?}",
            live.lock().close_reason()
        );
        assert_eq!(lock(&shared.state).admission.stats().connected, 1);
    }
}
