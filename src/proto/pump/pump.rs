//! The one pump: it feeds a connection's [`Session`](crate::proto::Session)
//! what its transport received and carries out what the session asks, in
//! the session's order. Every transport (quinn, the simulated network, the
//! in-memory link, WebTransport) runs this same loop through a
//! [`Transport`] adapter, so what the simulated tests prove is what ships.
//!
//! One [`step`](Pump::step) does, in order:
//! 1. the connection's handshake and end;
//! 2. inputs: datagrams, streams the peer opened, stream bytes (only while
//!    the session wants them: its inbound queue and receive budget);
//! 3. the session's timers (and what the application made room for);
//! 4. outputs: datagrams and the close, then stream writes in priority
//!    order (the control stream first) in pieces of the session's queue,
//!    a stream blocked by its send window holding back every lower
//!    priority, then reliable-unordered messages, each on a stream of its
//!    own, under the same gate;
//! 5. a server's authentication of the client, when its hello asks.
//!
//! Every loop is bounded; [`Step::busy`] says a bound was hit and the
//! driver should step again before it waits.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;

use super::transport::{DatagramRefused, Read, Transport};
use crate::proto::cell::SessionCell;
use crate::proto::server::{Authentication, ServerShared};
use crate::proto::{AuthFuture, OutStream, Role, StreamId, StreamWrite, Transmit};

/// Most bytes read from a stream at once.
const READ_CHUNK: usize = 64 * 1024;
/// Most reads of one stream in a step.
const READS_PER_STREAM: usize = 16;
/// Most datagrams taken in a step.
const DATAGRAMS_IN: usize = 256;
/// Most streams accepted in a step.
const ACCEPTS: usize = 64;
/// Most bytes taken from the session's queue of one stream in a step: past
/// them, what waits stays in the session's backlog (its bound), not here.
const STREAM_BYTES: usize = 64 * 1024;
/// Most bytes of reliable-unordered messages taken from the session and
/// not yet accepted by the transport.
const UNORDERED_BYTES: usize = 64 * 1024;
/// Most rounds of reading what arrived before the connection closed (each
/// bounded as a step's inputs are).
const FINAL_READS: usize = 64;

/// What one step did, for the driver.
#[derive(Clone, Copy, Debug)]
#[must_use]
pub(crate) struct Step {
    /// A bound was hit, or a result came back that more work follows from:
    /// step again before waiting.
    pub(crate) busy: bool,
    /// Anything moved: an input handled, an output taken by the transport.
    pub(crate) moved: bool,
    /// When the session's next timer is due.
    pub(crate) wake_at: Option<Instant>,
    /// The connection is gone and the session closed: nothing more will
    /// happen.
    pub(crate) done: bool,
}

/// One of the session's streams, as far as the transport has it.
struct Out<S> {
    stream: OutStream,
    priority: i32,
    /// The transport's stream, once opened.
    send: Option<S>,
    /// A write the transport took only part of.
    piece: Option<Bytes>,
}

/// A reliable-unordered message on its way: a stream of its own.
struct Unordered<S> {
    priority: i32,
    send: Option<S>,
    data: Bytes,
}

/// The pump of one connection, over a transport whose streams' halves are
/// `S` (sending) and `R` (receiving). See the module docs.
pub(crate) struct Pump<S, R> {
    cell: Arc<SessionCell>,
    /// A server's admission, when this is a server's connection.
    server: Option<Arc<ServerShared>>,
    connected: bool,
    /// The transport's connection is gone.
    gone: bool,
    /// The auth callback's answer, while it runs. In a `Mutex` only so the
    /// pump is `Sync` (a listen server's link lives in a Bevy resource);
    /// only `&mut self` touches it, so it is never locked.
    auth: Option<Mutex<AuthFuture>>,
    recv: Vec<(StreamId, R)>,
    /// In the order they are written: the control stream first, then by
    /// priority, highest first.
    out: Vec<Out<S>>,
    /// A server's half of the control stream the client opened.
    control_send: Option<S>,
    unordered: VecDeque<Unordered<S>>,
    /// A datagram the transport had no room for: it goes first next time.
    held: Option<Bytes>,
    /// The inputs must be polled at the next step whatever woke it: a
    /// bound was hit, or a stream's bytes were left for want of room.
    inputs_due: bool,
    /// Streams finished during a graceful close, until the peer has
    /// acknowledged all they carried.
    acking: Vec<S>,
    /// The connection is gone, and why: told to the session once what
    /// arrived before is read.
    lost: Option<crate::proto::DisconnectReason>,
}

impl<S, R> core::fmt::Debug for Pump<S, R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Pump")
            .field("connected", &self.connected)
            .field("gone", &self.gone)
            .field("streams", &(self.recv.len(), self.out.len()))
            .finish_non_exhaustive()
    }
}

impl<S, R> Pump<S, R> {
    /// The pump of the connection whose session is in `cell`; `server` for
    /// a server's connection.
    pub(crate) fn new(cell: Arc<SessionCell>, server: Option<Arc<ServerShared>>) -> Self {
        Self {
            cell,
            server,
            connected: false,
            gone: false,
            auth: None,
            recv: Vec::new(),
            out: Vec::new(),
            control_send: None,
            unordered: VecDeque::new(),
            held: None,
            inputs_due: true,
            acking: Vec::new(),
            lost: None,
        }
    }

    /// The session this pump drives.
    pub(crate) fn cell(&self) -> &Arc<SessionCell> {
        &self.cell
    }

    /// Whether a server's auth callback is running for this connection.
    #[cfg_attr(not(feature = "sim"), allow(dead_code))]
    pub(crate) fn authenticating(&self) -> bool {
        self.auth.is_some()
    }

    /// Moves what there is to move at `now`. See the module docs.
    pub(crate) fn step<T: Transport<Send = S, Recv = R>>(
        &mut self,
        now: Instant,
        cx: &mut Context<'_>,
        t: &mut T,
    ) -> Step {
        let mut busy = false;
        let mut moved = false;
        let cell = self.cell.clone();
        {
            let mut session = cell.lock();
            // The transport is polled when it may have something, or when
            // the last step left some: a step the application woke to send
            // skips it (every poll takes the transport's locks).
            let woke = t.take_input_wake() || self.inputs_due;
            if !self.gone && woke {
                self.lost = self.connection(now, cx, t, &mut session);
            }
            if self.connected && (!self.gone || self.lost.is_some()) && woke {
                let (b, m) = self.inputs(now, cx, t, &mut session);
                busy |= b;
                moved |= m;
            }
            if self.lost.is_some() {
                // What arrived before the close is read first (a server
                // that drained before closing had it acknowledged), as far
                // as the inbound queue has room: the rest when the
                // application makes room, which wakes this pump again.
                let mut reads = 0;
                while self.inputs_due && reads < FINAL_READS {
                    let _ = self.inputs(now, cx, t, &mut session);
                    reads += 1;
                }
                if !self.inputs_due
                    && let Some(reason) = self.lost.take()
                {
                    session.handle_connection_lost(now, reason);
                }
            }
            if session.poll_timeout().is_some_and(|at| at <= now) {
                session.handle_path_stats(now, t.path_stats());
            }
            // Every step, not only when a timer is due: the application may
            // have made room in a full inbound queue since the last.
            session.handle_timeout(now);
            if !self.gone {
                let (b, m) = self.outputs(cx, t, &mut session);
                busy |= b;
                moved |= m;
                if session.is_flushing() && self.flushed(cx, t, &session) {
                    session.handle_flushed();
                    moved |= self.transmits(t, &mut session);
                }
            }
        }
        busy |= self.authenticate(now, cx);
        if let Some(server) = &self.server {
            server.after_drive(&cell);
        }
        cell.driven();
        let session = cell.lock();
        Step {
            busy,
            moved,
            wake_at: session.poll_timeout(),
            done: self.gone && session.is_closed(),
        }
    }

    /// The handshake's end, then the connection's: the reason it is
    /// gone, for the session once what arrived before is read.
    fn connection<T: Transport<Send = S, Recv = R>>(
        &mut self,
        now: Instant,
        cx: &mut Context<'_>,
        t: &mut T,
        session: &mut crate::proto::Session,
    ) -> Option<crate::proto::DisconnectReason> {
        if !self.connected {
            match t.poll_connected(cx) {
                Poll::Ready(Ok(max)) => {
                    self.connected = true;
                    session.handle_path_stats(now, t.path_stats());
                    session.handle_connected(now, max);
                    session.set_transport(t.name());
                }
                Poll::Ready(Err(reason)) => {
                    self.gone = true;
                    session.handle_connection_lost(now, reason);
                    return None;
                }
                Poll::Pending => return None,
            }
        }
        if let Poll::Ready(reason) = t.poll_closed(cx) {
            self.gone = true;
            self.inputs_due = true;
            return Some(reason);
        }
        None
    }

    /// A graceful close: whether the session's reliable bytes are all
    /// written and every stream that carried them is finished and
    /// acknowledged by the peer.
    fn flushed<T: Transport<Send = S, Recv = R>>(
        &mut self,
        cx: &mut Context<'_>,
        t: &mut T,
        session: &crate::proto::Session,
    ) -> bool {
        self.acking
            .retain_mut(|send| t.poll_acked(cx, send).is_pending());
        self.acking.is_empty()
            && self.unordered.is_empty()
            && !session.holds_reliable()
            && self
                .out
                .iter()
                .all(|o| o.piece.is_none() && (o.send.is_none() || o.stream == OutStream::Control))
    }

    /// Datagrams, accepted streams and stream bytes, into the session.
    /// Whether a bound was hit, and whether anything came in.
    fn inputs<T: Transport<Send = S, Recv = R>>(
        &mut self,
        now: Instant,
        cx: &mut Context<'_>,
        t: &mut T,
        session: &mut crate::proto::Session,
    ) -> (bool, bool) {
        let (mut busy, mut moved) = (false, false);
        let mut deferred = false;
        let mut taken = 0;
        while let Poll::Ready(Some(datagram)) = t.poll_datagram(cx) {
            session.handle_datagram(now, datagram);
            moved = true;
            taken += 1;
            if taken == DATAGRAMS_IN {
                busy = true;
                break;
            }
        }
        for accepts in 1..=ACCEPTS {
            let Poll::Ready(Some(accepted)) = t.poll_accept(cx) else {
                break;
            };
            busy |= accepts == ACCEPTS;
            if let Some(send) = accepted.send
                && accepted.id == StreamId::CONTROL
            {
                self.control_send = Some(send);
            }
            self.recv.push((accepted.id, accepted.recv));
            moved = true;
        }
        let mut i = 0;
        while let Some((id, recv)) = self.recv.get_mut(i) {
            let id = *id;
            let mut ended = false;
            let mut reads = 0;
            // A stream not read now for want of room is read again when
            // the application makes room (and wakes the driver).
            deferred |= !session.wants_stream_bytes(id);
            while session.wants_stream_bytes(id) {
                if reads == READS_PER_STREAM {
                    busy = true;
                    break;
                }
                reads += 1;
                match t.poll_read(cx, recv, READ_CHUNK) {
                    Poll::Ready(Read::Data(bytes)) => {
                        session.handle_stream_bytes(now, id, &bytes);
                        moved = true;
                    }
                    Poll::Ready(Read::Finished) => {
                        session.handle_stream_finished(now, id);
                        ended = true;
                    }
                    Poll::Ready(Read::Reset(code)) => {
                        session.handle_stream_reset(now, id, code);
                        ended = true;
                    }
                    Poll::Ready(Read::Gone) => ended = true,
                    Poll::Pending => break,
                }
                if ended {
                    moved = true;
                    break;
                }
            }
            if ended {
                self.recv.swap_remove(i);
            } else {
                i += 1;
            }
        }
        self.inputs_due = busy || deferred;
        (busy, moved)
    }

    /// Datagrams and the close, then stream writes, then unordered
    /// messages. Whether a bound was hit, and whether anything went out.
    fn outputs<T: Transport<Send = S, Recv = R>>(
        &mut self,
        cx: &mut Context<'_>,
        t: &mut T,
        session: &mut crate::proto::Session,
    ) -> (bool, bool) {
        let mut moved = self.transmits(t, session);
        self.sync_streams(session);
        let role = session.role();
        let mut busy = false;
        // While a stream waits for room in its send window, lower
        // priorities get nothing new, so the room acks free goes to the
        // higher priority.
        let mut gate: Option<i32> = None;
        for out in &mut self.out {
            let control = out.stream == OutStream::Control;
            if !control && gate.is_some_and(|g| out.priority < g) {
                continue;
            }
            if out.send.is_none() {
                if out.piece.is_none() && !session.has_stream_writes(out.stream) {
                    continue;
                }
                let reading = self.recv.len();
                match open(cx, t, out, role, &mut self.control_send, &mut self.recv) {
                    // A receiving half opened here is read in the next step,
                    // which also registers the waker for its bytes: step
                    // again, or the peer's answer would wait for a timer.
                    Opening::Open => {
                        let opened = self.recv.len() > reading;
                        busy |= opened;
                        self.inputs_due |= opened;
                    }
                    Opening::Wait => {
                        if !control {
                            gate.get_or_insert(out.priority);
                        }
                        continue;
                    }
                }
            }
            let Some(send) = out.send.as_mut() else {
                continue;
            };
            let mut taken = 0;
            let mut finished = false;
            loop {
                if out.piece.is_none() {
                    if taken >= STREAM_BYTES {
                        busy = true;
                        break;
                    }
                    match session.poll_stream(out.stream) {
                        Some(StreamWrite::Data(data)) => {
                            taken += data.len();
                            out.piece = Some(data);
                        }
                        Some(StreamWrite::Finish) => {
                            t.finish(send);
                            moved = true;
                            finished = true;
                            continue;
                        }
                        None => break,
                    }
                }
                let Some(piece) = out.piece.as_mut() else {
                    break;
                };
                match t.poll_write(cx, send, piece) {
                    Poll::Ready(Ok(())) => {
                        moved = true;
                        if piece.is_empty() {
                            out.piece = None;
                        }
                    }
                    // The stream is gone (the connection is closing): what
                    // was queued for it will never arrive.
                    Poll::Ready(Err(())) => out.piece = None,
                    Poll::Pending => break,
                }
            }
            if !control && out.piece.is_some() {
                gate.get_or_insert(out.priority);
            }
            // A channel's stream finished by a graceful close is waited on
            // until the peer acknowledged it.
            if finished
                && !control
                && session.is_flushing()
                && let Some(send) = out.send.take()
            {
                self.acking.push(send);
            }
        }
        let (b, m) = self.unordered(cx, t, session, gate);
        (busy | b, moved | m)
    }

    /// The session's datagrams and its close, as far as the transport takes
    /// them. Whether anything went.
    fn transmits<T: Transport<Send = S, Recv = R>>(
        &mut self,
        t: &mut T,
        session: &mut crate::proto::Session,
    ) -> bool {
        let mut moved = false;
        if let Some(datagram) = self.held.take() {
            match t.try_send_datagram(datagram) {
                Ok(()) => moved = true,
                Err((DatagramRefused::Full, datagram)) => self.held = Some(datagram),
                Err((DatagramRefused::Gone, _)) => session.count_unsent_datagram(),
            }
        }
        while let Some(transmit) = session.poll_transmit() {
            match transmit {
                // Past a full buffer, datagrams wait in the session, which
                // drops the oldest; only a close still goes.
                Transmit::Datagram(datagram) if self.held.is_some() => {
                    if !session.is_closed() {
                        session.unpoll_datagram(datagram);
                        break;
                    }
                }
                Transmit::Datagram(datagram) => match t.try_send_datagram(datagram) {
                    Ok(()) => moved = true,
                    Err((DatagramRefused::Full, datagram)) => self.held = Some(datagram),
                    Err((DatagramRefused::Gone, _)) => session.count_unsent_datagram(),
                },
                Transmit::Close { code, reason } => {
                    t.close(code.to_wire(), &reason);
                    self.held = None;
                    moved = true;
                }
            }
        }
        moved
    }

    /// Adds the session's streams this pump has not seen, in write order.
    fn sync_streams(&mut self, session: &crate::proto::Session) {
        for stream in session.writable_streams() {
            if self.out.iter().any(|o| o.stream == stream) {
                continue;
            }
            let priority = session.stream_priority(stream);
            let key = |o: &Out<S>| {
                (
                    o.stream != OutStream::Control,
                    core::cmp::Reverse(o.priority),
                    o.stream,
                )
            };
            let new = Out {
                stream,
                priority,
                send: None,
                piece: None,
            };
            let at = self.out.partition_point(|o| key(o) < key(&new));
            self.out.insert(at, new);
        }
    }

    /// Reliable-unordered messages, in order, each on a stream of its own,
    /// under the priority gate. Whether a bound was hit, and whether
    /// anything went.
    fn unordered<T: Transport<Send = S, Recv = R>>(
        &mut self,
        cx: &mut Context<'_>,
        t: &mut T,
        session: &mut crate::proto::Session,
        gate: Option<i32>,
    ) -> (bool, bool) {
        let mut held: usize = self.unordered.iter().map(|u| u.data.len()).sum();
        while held < UNORDERED_BYTES {
            let Some(write) = session.poll_unordered() else {
                break;
            };
            held += write.data.len();
            self.unordered.push_back(Unordered {
                priority: write.priority,
                send: None,
                data: write.data,
            });
        }
        let busy = held >= UNORDERED_BYTES;
        let mut moved = false;
        while let Some(message) = self.unordered.front_mut() {
            if gate.is_some_and(|g| message.priority < g) {
                break;
            }
            if message.send.is_none() {
                match t.poll_open(cx, false) {
                    Poll::Ready(Some(mut opened)) => {
                        t.set_priority(&mut opened.send, message.priority);
                        message.send = Some(opened.send);
                    }
                    Poll::Ready(None) => {
                        self.unordered.pop_front();
                        continue;
                    }
                    Poll::Pending => break,
                }
            }
            let Some(send) = message.send.as_mut() else {
                break;
            };
            match t.poll_write(cx, send, &mut message.data) {
                Poll::Ready(Ok(())) => {
                    moved = true;
                    if message.data.is_empty() {
                        t.finish(send);
                        if let Some(done) = self.unordered.pop_front()
                            && session.is_flushing()
                            && let Some(send) = done.send
                        {
                            self.acking.push(send);
                        }
                    }
                }
                Poll::Ready(Err(())) => {
                    self.unordered.pop_front();
                }
                Poll::Pending => break,
            }
        }
        (busy, moved)
    }

    /// A server's authentication: the callback started when the hello
    /// passed, its answer handed to the admission. A connection that
    /// closed meanwhile gets no answer (its identity must not displace a
    /// live connection's). Whether an answer came.
    fn authenticate(&mut self, now: Instant, cx: &mut Context<'_>) -> bool {
        let Some(server) = &self.server else {
            return false;
        };
        if self.auth.is_none() {
            let request = self.cell.lock().poll_auth();
            if let Some(request) = request {
                match server.authenticate(&self.cell, request, now) {
                    Authentication::Run(future) => self.auth = Some(Mutex::new(future)),
                    Authentication::Done => return true,
                }
            }
        }
        let Some(future) = self.auth.as_mut() else {
            return false;
        };
        if self.cell.lock().is_handshake_over() {
            self.auth = None;
            return false;
        }
        let future = future.get_mut().unwrap_or_else(PoisonError::into_inner);
        match future.as_mut().poll(cx) {
            Poll::Ready(result) => {
                self.auth = None;
                server.admit(&self.cell, now, result.map(Some));
                true
            }
            Poll::Pending => false,
        }
    }
}

/// Whether a stream could be given its transport stream.
enum Opening {
    Open,
    Wait,
}

/// Gives `out` its transport stream: a server's control stream is the one
/// the client opened; a client opens its control stream (bidirectional),
/// and every channel's stream is a unidirectional one of this side's.
fn open<T: Transport>(
    cx: &mut Context<'_>,
    t: &mut T,
    out: &mut Out<T::Send>,
    role: Role,
    control_send: &mut Option<T::Send>,
    recv: &mut Vec<(StreamId, T::Recv)>,
) -> Opening {
    let control = out.stream == OutStream::Control;
    if control && role == Role::Server {
        return match control_send.take() {
            Some(send) => {
                out.send = Some(send);
                Opening::Open
            }
            None => Opening::Wait,
        };
    }
    match t.poll_open(cx, control) {
        Poll::Ready(Some(mut opened)) => {
            if !control {
                t.set_priority(&mut opened.send, out.priority);
            }
            if let Some(half) = opened.recv {
                recv.push(half);
            }
            out.send = Some(opened.send);
            Opening::Open
        }
        Poll::Ready(None) | Poll::Pending => Opening::Wait,
    }
}
