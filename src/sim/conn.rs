//! The simulated network's driver of one connection: quinn-proto's
//! `Connection` and zao's session, fed into each other synchronously at one
//! instant of virtual time. It does what `zao::quic`'s driver does over
//! quinn, and decides nothing either.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use quinn_proto::{Connection, Dir, Event, ReadError, StreamEvent, VarInt, WriteError};

use crate::proto::{
    AuthFuture, Authentication, OutStream, PathStats, Role, ServerShared, SessionCell, StreamId,
    StreamWrite, Transmit, UnorderedWrite,
};
use crate::quic::disconnect_reason;

/// Largest chunk read from a stream at once.
const READ_CHUNK: usize = 64 * 1024;
/// Most bytes taken from the session per stream before QUIC took them:
/// the session's backlog, not the driver, holds what waits.
const WRITE_BATCH_BYTES: usize = 64 * 1024;

/// What a raw peer (an attacker in the tests) has seen.
#[derive(Debug, Default)]
pub(crate) struct RawLog {
    pub(crate) connected: bool,
    pub(crate) lost: Option<quinn_proto::ConnectionError>,
    pub(crate) received: BTreeMap<u64, Vec<u8>>,
    pub(crate) finished: BTreeSet<u64>,
    pub(crate) datagrams: u64,
}

/// An authentication future a server node is running for a session.
pub(crate) struct PendingAuth {
    pub(crate) cell: Arc<SessionCell>,
    pub(crate) future: AuthFuture,
}

/// One simulated connection.
pub(crate) struct SimConn {
    pub(crate) conn: Connection,
    /// zao's session; `None` for a raw peer, which the test drives itself.
    pub(crate) cell: Option<Arc<SessionCell>>,
    pub(crate) raw: RawLog,
    readable: BTreeSet<quinn_proto::StreamId>,
    /// Writes taken from the session, not yet accepted by QUIC, per
    /// stream, with the QUIC stream once opened.
    pending: BTreeMap<OutStream, Pending>,
    /// Unordered messages taken from the session: each its own stream.
    unordered: VecDeque<(Option<quinn_proto::StreamId>, UnorderedWrite)>,
    /// Streams a raw peer opened.
    opened: BTreeSet<quinn_proto::StreamId>,
}

fn quic_id(id: StreamId) -> quinn_proto::StreamId {
    quinn_proto::StreamId::from(VarInt::from_u64(id.0).unwrap_or(VarInt::MAX))
}

impl SimConn {
    pub(crate) fn new(conn: Connection, cell: Option<Arc<SessionCell>>) -> Self {
        Self {
            conn,
            cell,
            raw: RawLog::default(),
            readable: BTreeSet::new(),
            pending: BTreeMap::new(),
            unordered: VecDeque::new(),
            opened: BTreeSet::new(),
        }
    }

    /// Feeds everything QUIC has for the session and carries out what the
    /// session asks, until neither has more.
    pub(crate) fn drive(
        &mut self,
        now: Instant,
        server: Option<&Arc<ServerShared>>,
        auths: &mut Vec<PendingAuth>,
    ) {
        let Some(cell) = self.cell.clone() else {
            self.drive_raw();
            return;
        };
        loop {
            while let Some(event) = self.conn.poll() {
                self.event(now, &cell, event);
            }
            self.read(now, &cell);
            let auth = {
                let due = cell.lock().poll_timeout().is_some_and(|t| t <= now);
                let path = due.then(|| self.path_stats());
                let mut session = cell.lock();
                if let Some(path) = path {
                    session.handle_path_stats(now, path);
                }
                // On every drive, as zao::quic's driver does on every wake:
                // the application may have made room in a full inbound
                // queue, and what was held back is parsed here.
                session.handle_timeout(now);
                while let Some(transmit) = session.poll_transmit() {
                    match transmit {
                        Transmit::Datagram(d) => {
                            if let Err(e) = self.conn.datagrams().send(d, true) {
                                tracing::debug!("datagram not sent: {e}");
                            }
                        }
                        Transmit::Close { code, reason } => self.conn.close(
                            now,
                            VarInt::from_u64(code.to_wire()).unwrap_or(VarInt::MAX),
                            reason,
                        ),
                    }
                }
                let writable: Vec<OutStream> = session.writable_streams().collect();
                for stream in writable {
                    let priority = session.stream_priority(stream);
                    let pending = self.pending.entry(stream).or_insert_with(|| Pending {
                        id: None,
                        priority,
                        writes: VecDeque::new(),
                    });
                    let mut held: usize = pending.writes.iter().map(write_len).sum();
                    while held < WRITE_BATCH_BYTES {
                        match session.poll_stream(stream) {
                            Some(write) => {
                                held += write_len(&write);
                                pending.writes.push_back(write);
                            }
                            None => break,
                        }
                    }
                }
                let mut held: usize = self.unordered.iter().map(|(_, w)| w.data.len()).sum();
                while held < WRITE_BATCH_BYTES {
                    match session.poll_unordered() {
                        Some(write) => {
                            held += write.data.len();
                            self.unordered.push_back((None, write));
                        }
                        None => break,
                    }
                }
                session.poll_auth()
            };
            let wrote = self.write(&cell);
            let mut again = wrote;
            if let (Some(request), Some(shared)) = (auth, server) {
                match shared.authenticate(&cell, request, now) {
                    Authentication::Run(future) => auths.push(PendingAuth {
                        cell: cell.clone(),
                        future,
                    }),
                    Authentication::Done => again = true,
                }
            }
            if let Some(shared) = server {
                shared.after_drive(&cell);
            }
            let due = cell.lock().poll_timeout().is_some_and(|t| t <= now);
            if !again && !due && !cell.take_notified(None) {
                break;
            }
        }
    }

    fn event(&mut self, now: Instant, cell: &SessionCell, event: Event) {
        match event {
            Event::Connected => {
                let max = self.conn.datagrams().max_size();
                let path = self.path_stats();
                let mut session = cell.lock();
                session.handle_path_stats(now, path);
                session.handle_connected(now, max);
            }
            Event::ConnectionLost { reason } => cell
                .lock()
                .handle_connection_lost(now, disconnect_reason(&reason)),
            Event::Stream(StreamEvent::Opened { dir }) => {
                while let Some(id) = self.conn.streams().accept(dir) {
                    self.readable.insert(id);
                }
            }
            Event::Stream(StreamEvent::Readable { id }) => {
                self.readable.insert(id);
            }
            Event::DatagramReceived => {
                while let Some(d) = self.conn.datagrams().recv() {
                    cell.lock().handle_datagram(now, d);
                }
            }
            Event::HandshakeDataReady
            | Event::DatagramsUnblocked
            | Event::Stream(
                StreamEvent::Writable { .. }
                | StreamEvent::Finished { .. }
                | StreamEvent::Stopped { .. }
                | StreamEvent::Available { .. },
            ) => {}
        }
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

    /// Reads every readable stream while the session wants its bytes.
    fn read(&mut self, now: Instant, cell: &SessionCell) {
        let ids: Vec<quinn_proto::StreamId> = self.readable.iter().copied().collect();
        for qid in ids {
            let id = StreamId(u64::from(qid));
            if !cell.lock().wants_stream_bytes(id) {
                continue;
            }
            let mut stream = self.conn.recv_stream(qid);
            let Ok(mut chunks) = stream.read(true) else {
                self.readable.remove(&qid);
                continue;
            };
            let mut finished = false;
            loop {
                match chunks.next(READ_CHUNK) {
                    Ok(Some(chunk)) => {
                        let mut session = cell.lock();
                        session.handle_stream_bytes(now, id, &chunk.bytes);
                        if !session.wants_stream_bytes(id) {
                            break;
                        }
                    }
                    Ok(None) | Err(ReadError::Reset(_)) => {
                        finished = true;
                        break;
                    }
                    Err(ReadError::Blocked) => {
                        self.readable.remove(&qid);
                        break;
                    }
                }
            }
            let _ = chunks.finalize();
            if finished {
                self.readable.remove(&qid);
                cell.lock().handle_stream_finished(now, id);
            }
        }
    }

    /// Writes what the session handed over, as far as QUIC takes it;
    /// whether anything was written.
    fn write(&mut self, cell: &SessionCell) -> bool {
        let role = cell.lock().role();
        let mut wrote = false;
        // Highest priority first (the control stream before all); once a
        // stream is blocked by the send window, lower priorities wait, so
        // the window's room goes to the higher priority as acks free it.
        let mut order: Vec<(OutStream, i32)> =
            self.pending.iter().map(|(&s, p)| (s, p.priority)).collect();
        order.sort_by_key(|&(s, p)| (s != OutStream::Control, core::cmp::Reverse(p)));
        let mut gate: Option<i32> = None;
        for (stream, priority) in order {
            if stream != OutStream::Control && gate.is_some_and(|g| priority < g) {
                continue;
            }
            let Some(pending) = self.pending.get_mut(&stream) else {
                continue;
            };
            let id = match (pending.id, stream) {
                (Some(id), _) => id,
                // A server answers on the stream the client opened.
                (None, OutStream::Control) if role == Role::Server => quic_id(StreamId::CONTROL),
                (None, OutStream::Control) => match self.conn.streams().open(Dir::Bi) {
                    Some(id) => {
                        self.readable.insert(id);
                        id
                    }
                    None => continue,
                },
                (None, OutStream::Channel(_)) => match self.conn.streams().open(Dir::Uni) {
                    Some(id) => {
                        let _ = self.conn.send_stream(id).set_priority(pending.priority);
                        id
                    }
                    None => continue,
                },
            };
            pending.id = Some(id);
            loop {
                wrote |= write_queue(&mut self.conn, id, &mut pending.writes);
                if !pending.writes.is_empty() {
                    break;
                }
                // All of it went: more from the session before a lower
                // priority may have the window.
                let mut session = cell.lock();
                let mut held = 0;
                while held < WRITE_BATCH_BYTES {
                    match session.poll_stream(stream) {
                        Some(write) => {
                            held += write_len(&write);
                            pending.writes.push_back(write);
                        }
                        None => break,
                    }
                }
                if held == 0 && pending.writes.is_empty() {
                    break;
                }
            }
            if stream != OutStream::Control && !pending.writes.is_empty() && gate.is_none() {
                gate = Some(priority);
            }
        }
        self.pending
            .retain(|_, p| !p.writes.is_empty() || p.id.is_some());
        while let Some((id, write)) = self.unordered.front_mut() {
            if gate.is_some_and(|g| write.priority < g) {
                break;
            }
            let qid = match *id {
                Some(qid) => qid,
                None => match self.conn.streams().open(Dir::Uni) {
                    Some(qid) => {
                        let _ = self.conn.send_stream(qid).set_priority(write.priority);
                        *id = Some(qid);
                        qid
                    }
                    None => break,
                },
            };
            match self.conn.send_stream(qid).write(&write.data) {
                Ok(n) if n == write.data.len() => {
                    let _ = self.conn.send_stream(qid).finish();
                    self.unordered.pop_front();
                    wrote = true;
                }
                Ok(n) => {
                    wrote |= n > 0;
                    write.data = write.data.slice(n..);
                    break;
                }
                Err(WriteError::Blocked) => break,
                Err(_) => {
                    self.unordered.pop_front();
                }
            }
        }
        wrote
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

/// Writes the front of `writes` on `id` as far as QUIC takes it; whether
/// anything was written.
fn write_queue(
    conn: &mut Connection,
    id: quinn_proto::StreamId,
    writes: &mut VecDeque<StreamWrite>,
) -> bool {
    let mut wrote = false;
    while let Some(write) = writes.front_mut() {
        match write {
            StreamWrite::Data(data) => match conn.send_stream(id).write(data) {
                Ok(n) if n == data.len() => {
                    wrote = true;
                    writes.pop_front();
                }
                Ok(n) => {
                    wrote |= n > 0;
                    *data = data.slice(n..);
                    break;
                }
                Err(WriteError::Blocked) => break,
                Err(_) => {
                    writes.clear();
                    break;
                }
            },
            StreamWrite::Finish => {
                let _ = conn.send_stream(id).finish();
                wrote = true;
                writes.pop_front();
            }
        }
    }
    wrote
}

/// What waits for one of the session's streams.
struct Pending {
    /// The QUIC stream, once opened.
    id: Option<quinn_proto::StreamId>,
    priority: i32,
    writes: VecDeque<StreamWrite>,
}

fn write_len(write: &StreamWrite) -> usize {
    match write {
        StreamWrite::Data(d) => d.len(),
        StreamWrite::Finish => 0,
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
