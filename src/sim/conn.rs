//! The simulated network's driver of one connection: the pump of
//! `zao::proto` over quinn-proto's `Connection` ([`SimLink`]), stepped at one
//! instant of virtual time until nothing moves. The transport decides
//! nothing; what the simulation tests is the pump that ships.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use bytes::Bytes;
use quinn_proto::{Connection, ConnectionError, Dir, Event, ReadError, StreamEvent, VarInt};

use crate::endpoint::link_closed;
use crate::proto::pump::{Accepted, DatagramRefused, Opened, Pump, Read, Transport};
use crate::proto::{DisconnectReason, PathStats, Role, ServerShared, SessionCell, StreamId};

/// Most bytes a raw peer reads from a stream at once.
const READ_CHUNK: usize = 64 * 1024;
/// Steps at one instant before the driver stops (the loop is bounded as
/// every driver's is; the simulation's next step goes on).
const STEPS: usize = 64;

/// What a raw peer (an attacker in the tests) has seen.
#[derive(Debug, Default)]
pub(crate) struct RawLog {
    pub(crate) connected: bool,
    pub(crate) lost: Option<ConnectionError>,
    pub(crate) received: BTreeMap<u64, Vec<u8>>,
    pub(crate) finished: BTreeSet<u64>,
    pub(crate) datagrams: u64,
}

/// One simulated connection.
pub(crate) struct SimConn {
    pub(crate) conn: Connection,
    /// zao's session and its pump; `None` for a raw peer, which the test
    /// drives itself.
    pump: Option<Pump<quinn_proto::StreamId, quinn_proto::StreamId>>,
    /// What quinn-proto's events said, for the pump's transport.
    events: Events,
    pub(crate) raw: RawLog,
    readable: BTreeSet<quinn_proto::StreamId>,
    /// Streams a raw peer opened.
    opened: BTreeSet<quinn_proto::StreamId>,
}

/// quinn-proto's events as the transport needs them.
#[derive(Debug, Default)]
struct Events {
    connected: bool,
    lost: Option<ConnectionError>,
    accepted: VecDeque<quinn_proto::StreamId>,
}

fn quic_id(id: StreamId) -> quinn_proto::StreamId {
    quinn_proto::StreamId::from(VarInt::from_u64(id.0).unwrap_or(VarInt::MAX))
}

fn zao_id(id: quinn_proto::StreamId) -> StreamId {
    StreamId(u64::from(id))
}

impl SimConn {
    /// A connection with zao's session in `cell` (a server's with its
    /// admission `server`), or a raw peer's (`cell` is `None`).
    pub(crate) fn new(
        conn: Connection,
        cell: Option<Arc<SessionCell>>,
        server: Option<Arc<ServerShared>>,
    ) -> Self {
        Self {
            conn,
            pump: cell.map(|cell| Pump::new(cell, server)),
            events: Events::default(),
            raw: RawLog::default(),
            readable: BTreeSet::new(),
            opened: BTreeSet::new(),
        }
    }

    /// The session, unless this is a raw peer.
    pub(crate) fn cell(&self) -> Option<&Arc<SessionCell>> {
        self.pump.as_ref().map(Pump::cell)
    }

    /// Whether a server's auth callback is running for this connection.
    pub(crate) fn authenticating(&self) -> bool {
        self.pump.as_ref().is_some_and(Pump::authenticating)
    }

    /// Steps the pump at `now` until nothing moves; a raw peer only logs.
    /// Whether anything moved.
    pub(crate) fn drive(&mut self, now: Instant) -> bool {
        let Some(pump) = self.pump.as_mut() else {
            self.drive_raw();
            return false;
        };
        let mut cx = Context::from_waker(Waker::noop());
        let mut link = SimLink {
            conn: &mut self.conn,
            events: &mut self.events,
            now,
        };
        let mut moved = false;
        for _ in 0..STEPS {
            let step = pump.step(now, &mut cx, &mut link);
            let notified = pump.cell().take_notified(None);
            moved |= step.moved;
            if !(step.busy || step.moved || notified) {
                break;
            }
        }
        moved
    }

    /// A raw peer: only log what arrives.
    fn drive_raw(&mut self) {
        while let Some(event) = self.conn.poll() {
            match event {
                Event::Connected => self.raw.connected = true,
                Event::ConnectionLost { reason } => self.raw.lost = Some(reason),
                Event::Stream(StreamEvent::Opened { dir }) => {
                    while let Some(id) = self.conn.streams().accept(dir) {
                        self.readable.insert(id);
                    }
                }
                Event::Stream(StreamEvent::Readable { id }) => {
                    self.readable.insert(id);
                }
                Event::DatagramReceived => {
                    while self.conn.datagrams().recv().is_some() {
                        self.raw.datagrams += 1;
                    }
                }
                _ => {}
            }
        }
        let ids: Vec<quinn_proto::StreamId> = self.readable.iter().copied().collect();
        for qid in ids {
            let mut stream = self.conn.recv_stream(qid);
            let Ok(mut chunks) = stream.read(true) else {
                self.readable.remove(&qid);
                continue;
            };
            loop {
                match chunks.next(READ_CHUNK) {
                    Ok(Some(chunk)) => self
                        .raw
                        .received
                        .entry(u64::from(qid))
                        .or_default()
                        .extend_from_slice(&chunk.bytes),
                    Ok(None) | Err(ReadError::Reset(_)) => {
                        self.raw.finished.insert(u64::from(qid));
                        self.readable.remove(&qid);
                        break;
                    }
                    Err(ReadError::Blocked) => break,
                }
            }
            let _ = chunks.finalize();
        }
    }

    /// A raw peer writes `data` on `stream`, opening our streams up to it.
    pub(crate) fn raw_write(&mut self, stream: StreamId, data: &[u8]) -> usize {
        let qid = quic_id(stream);
        let client = self.conn.side() == quinn_proto::Side::Client;
        let local = client == (stream.initiator() == Role::Client);
        if local && !open_until(&mut self.conn, &mut self.opened, qid) {
            return 0;
        }
        if stream.0 & 0b10 == 0 {
            self.readable.insert(qid);
        }
        self.conn.send_stream(qid).write(data).unwrap_or(0)
    }

    /// A raw peer finishes `stream`.
    pub(crate) fn raw_finish(&mut self, stream: StreamId) {
        let _ = self.conn.send_stream(quic_id(stream)).finish();
    }

    /// A raw peer sends a datagram.
    pub(crate) fn raw_datagram(&mut self, datagram: Bytes) -> bool {
        self.conn.datagrams().send(datagram, true).is_ok()
    }
}

/// quinn-proto's connection as the pump's transport, at one instant.
struct SimLink<'a> {
    conn: &'a mut Connection,
    events: &'a mut Events,
    now: Instant,
}

impl SimLink<'_> {
    /// Takes quinn-proto's events.
    fn events(&mut self) {
        while let Some(event) = self.conn.poll() {
            match event {
                Event::Connected => self.events.connected = true,
                Event::ConnectionLost { reason } => self.events.lost = Some(reason),
                Event::Stream(StreamEvent::Opened { dir }) => {
                    while let Some(id) = self.conn.streams().accept(dir) {
                        self.events.accepted.push_back(id);
                    }
                }
                _ => {}
            }
        }
    }
}

impl Transport for SimLink<'_> {
    fn name(&self) -> &'static str {
        "sim"
    }

    type Send = quinn_proto::StreamId;
    type Recv = quinn_proto::StreamId;

    fn poll_connected(
        &mut self,
        _cx: &mut Context<'_>,
    ) -> Poll<Result<Option<usize>, DisconnectReason>> {
        self.events();
        if self.events.connected {
            Poll::Ready(Ok(self.conn.datagrams().max_size()))
        } else if let Some(lost) = &self.events.lost {
            Poll::Ready(Err(link_closed(lost).into()))
        } else {
            Poll::Pending
        }
    }

    fn poll_closed(&mut self, _cx: &mut Context<'_>) -> Poll<DisconnectReason> {
        self.events();
        match &self.events.lost {
            Some(lost) => Poll::Ready(link_closed(lost).into()),
            None => Poll::Pending,
        }
    }

    fn poll_datagram(&mut self, _cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        match self.conn.datagrams().recv() {
            Some(datagram) => Poll::Ready(Some(datagram)),
            None => Poll::Pending,
        }
    }

    fn poll_accept(
        &mut self,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Accepted<quinn_proto::StreamId, quinn_proto::StreamId>>> {
        self.events();
        match self.events.accepted.pop_front() {
            Some(id) => Poll::Ready(Some(Accepted {
                id: zao_id(id),
                recv: id,
                send: (id.dir() == Dir::Bi).then_some(id),
            })),
            None => Poll::Pending,
        }
    }

    fn poll_read(
        &mut self,
        _cx: &mut Context<'_>,
        recv: &mut quinn_proto::StreamId,
        max: usize,
    ) -> Poll<Read> {
        let mut stream = self.conn.recv_stream(*recv);
        let Ok(mut chunks) = stream.read(true) else {
            return Poll::Ready(Read::Gone);
        };
        let read = match chunks.next(max) {
            Ok(Some(chunk)) => Poll::Ready(Read::Data(chunk.bytes)),
            Ok(None) => Poll::Ready(Read::Finished),
            Err(ReadError::Reset(code)) => Poll::Ready(Read::Reset(code.into_inner())),
            Err(ReadError::Blocked) => Poll::Pending,
        };
        let _ = chunks.finalize();
        read
    }

    fn poll_open(
        &mut self,
        _cx: &mut Context<'_>,
        bidi: bool,
    ) -> Poll<Option<Opened<quinn_proto::StreamId, quinn_proto::StreamId>>> {
        let dir = if bidi { Dir::Bi } else { Dir::Uni };
        match self.conn.streams().open(dir) {
            Some(id) => Poll::Ready(Some(Opened {
                send: id,
                recv: bidi.then_some((zao_id(id), id)),
            })),
            None => Poll::Pending,
        }
    }

    fn set_priority(&mut self, send: &mut quinn_proto::StreamId, priority: i32) {
        let _ = self.conn.send_stream(*send).set_priority(priority);
    }

    fn poll_write(
        &mut self,
        _cx: &mut Context<'_>,
        send: &mut quinn_proto::StreamId,
        data: &mut Bytes,
    ) -> Poll<Result<(), ()>> {
        match self
            .conn
            .send_stream(*send)
            .write_chunks(core::slice::from_mut(data))
        {
            Ok(written) if written.bytes > 0 => Poll::Ready(Ok(())),
            Ok(_) | Err(quinn_proto::WriteError::Blocked) => Poll::Pending,
            Err(_) => Poll::Ready(Err(())),
        }
    }

    fn finish(&mut self, send: &mut quinn_proto::StreamId) {
        let _ = self.conn.send_stream(*send).finish();
    }

    fn poll_acked(&mut self, _cx: &mut Context<'_>, send: &mut quinn_proto::StreamId) -> Poll<()> {
        // quinn-proto forgets a finished stream once all of it is
        // acknowledged; a stream the peer stopped is done too.
        match self.conn.send_stream(*send).stopped() {
            Ok(None) => Poll::Pending,
            Ok(Some(_)) | Err(_) => Poll::Ready(()),
        }
    }

    fn try_send_datagram(&mut self, datagram: Bytes) -> Result<(), (DatagramRefused, Bytes)> {
        match self.conn.datagrams().send(datagram, false) {
            Ok(()) => Ok(()),
            Err(quinn_proto::SendDatagramError::Blocked(datagram)) => {
                Err((DatagramRefused::Full, datagram))
            }
            Err(_) => Err((DatagramRefused::Gone, Bytes::new())),
        }
    }

    fn close(&mut self, code: u64, reason: &[u8]) {
        self.conn.close(
            self.now,
            VarInt::from_u64(code).unwrap_or(VarInt::MAX),
            Bytes::copy_from_slice(reason),
        );
    }

    fn path_stats(&self) -> PathStats {
        let stats = self.conn.stats();
        PathStats {
            rtt: self.conn.rtt(),
            sent_packets: stats.path.sent_packets,
            lost_packets: stats.path.lost_packets,
            bytes_in: stats.udp_rx.bytes,
            bytes_out: stats.udp_tx.bytes,
        }
    }
}

/// Opens this side's streams of `target`'s kind in order until `target`
/// is open; `false` if the peer's stream limit holds it back for now.
fn open_until(
    conn: &mut Connection,
    opened: &mut BTreeSet<quinn_proto::StreamId>,
    target: quinn_proto::StreamId,
) -> bool {
    if opened.contains(&target) {
        return true;
    }
    while let Some(id) = conn.streams().open(target.dir()) {
        opened.insert(id);
        if id >= target {
            return id == target;
        }
    }
    false
}
