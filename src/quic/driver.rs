//! One driver task per connection: it feeds quinn's events into the
//! connection's [`Session`](crate::proto::Session) and carries out what the
//! session asks (datagrams, stream writes, the close), as quinn's
//! `ConnectionDriver` does for quinn-proto. No protocol decision is made
//! here: what to read, write, refuse or close is the session's.
//!
//! Around the driver, small tasks do the waiting quinn's API needs: one
//! reads datagrams, one accepts streams, one reads each stream (only while
//! the session wants its bytes), one writes each stream. They talk to the
//! driver through one bounded channel.

use std::collections::HashMap;
use std::future::poll_fn;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::Bytes;
use quinn::{Connection, RecvStream, SendStream, VarInt};
use tokio::sync::{Notify, mpsc};

use super::error::disconnect_reason;
use super::tls::stream_id;
use crate::proto::{
    Authentication, OutStream, PathStats, Role, ServerShared, SessionCell, StreamId, StreamWrite,
    Transmit, UnorderedWrite,
};

/// Largest chunk read from a stream at once.
const READ_CHUNK: usize = 64 * 1024;
/// Most writes handed to a stream's writer at once, and most bytes (past
/// the first write): the session's backlog, not the driver, holds what
/// waits for QUIC's flow control.
const WRITE_BATCH: usize = 128;
const WRITE_BATCH_BYTES: usize = 64 * 1024;
/// Capacity of the driver's inbox.
const INBOX: usize = 256;
/// Unordered messages handed to their writer ahead of QUIC: the rest wait
/// in the session's backlog.
const UNORDERED_QUEUE: usize = 32;

/// Whose connection this is.
pub(crate) enum Owner {
    /// A server's: admission and events go through its shared state; auth
    /// futures run on `auth`, off the network threads.
    Server {
        shared: Arc<ServerShared>,
        auth: tokio::runtime::Handle,
    },
    /// A client's.
    Client,
}

/// What the helper tasks tell the driver.
enum Inbound {
    Bytes(StreamId, Bytes),
    Finished(StreamId),
    Datagram(Bytes),
    /// A stream's writer finished its batch.
    Written(OutStream),
    /// The send half of a bidirectional stream the peer opened.
    BiSend(StreamId, SendStream),
}

/// A stream's writer task, as the driver sees it.
struct Writer {
    batches: mpsc::Sender<Vec<StreamWrite>>,
    /// A batch is not yet in QUIC's send buffer (the send window is full).
    busy: bool,
    /// The stream's priority.
    priority: i32,
}

/// Where a driver records the session's messages, if anywhere.
#[cfg(feature = "inspect")]
pub(crate) type Capture = Option<super::capture::Capture>;
/// Captures need the `inspect` feature.
#[cfg(not(feature = "inspect"))]
pub(crate) type Capture = Option<NoCapture>;

/// No capture can exist without the `inspect` feature (like `Infallible`,
/// but cloned as a capture handle is, so the code reads the same).
#[cfg(not(feature = "inspect"))]
#[derive(Clone, Debug)]
pub(crate) enum NoCapture {}

struct Driver {
    conn: Connection,
    #[cfg_attr(not(feature = "inspect"), allow(dead_code))]
    capture: Capture,
    cell: Arc<SessionCell>,
    owner: Owner,
    inbox: mpsc::Sender<Inbound>,
    /// Readers wait on it while the session wants no bytes.
    resume: Arc<Notify>,
    writers: HashMap<OutStream, Writer>,
    /// The send half of the control stream a client opened, until written.
    control_send: Option<SendStream>,
    /// Messages of reliable-unordered channels, to the task that writes
    /// each on a stream of its own.
    unordered: mpsc::Sender<UnorderedWrite>,
    handshake_timeout: Duration,
}

/// Drives `conn` with the session in `cell` until the connection is gone.
pub(crate) async fn drive(
    conn: Connection,
    cell: Arc<SessionCell>,
    owner: Owner,
    capture: Capture,
) {
    let (tx, mut inbox) = mpsc::channel(INBOX);
    let resume = Arc::new(Notify::new());
    let handshake_timeout = cell.lock().limits().handshake_timeout;
    tokio::spawn(read_datagrams(conn.clone(), tx.clone()));
    tokio::spawn(accept_streams(
        conn.clone(),
        tx.clone(),
        cell.clone(),
        resume.clone(),
    ));
    let (unordered, unordered_rx) = mpsc::channel(UNORDERED_QUEUE);
    tokio::spawn(write_unordered(conn.clone(), unordered_rx));
    let mut driver = Driver {
        unordered,
        conn,
        capture,
        cell,
        owner,
        inbox: tx,
        resume,
        writers: HashMap::new(),
        control_send: None,
        handshake_timeout,
    };
    {
        let max = driver.conn.max_datagram_size();
        let path = path_stats(&driver.conn);
        let mut session = driver.cell.lock();
        let now = Instant::now();
        session.handle_path_stats(now, path);
        session.handle_connected(now, max);
    }
    loop {
        driver.pump();
        let timeout = driver.cell.lock().poll_timeout();
        let sleep = async {
            match timeout {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => core::future::pending().await,
            }
        };
        tokio::select! {
            () = woken(&driver.cell) => driver.cell.lock().handle_timeout(Instant::now()),
            Some(inbound) = inbox.recv() => driver.handle(inbound),
            () = sleep => driver.timeout(),
            err = driver.conn.closed() => {
                driver.cell.lock().handle_connection_lost(Instant::now(), disconnect_reason(&err));
                driver.pump();
                break;
            }
        }
        driver.resume.notify_waiters();
    }
    driver.resume.notify_waiters();
}

/// Resolves once the application woke the session's driver.
async fn woken(cell: &SessionCell) {
    poll_fn(|cx| {
        if cell.take_notified(Some(cx.waker())) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
}

impl Driver {
    fn handle(&mut self, inbound: Inbound) {
        let now = Instant::now();
        match inbound {
            Inbound::Bytes(id, bytes) => self.cell.lock().handle_stream_bytes(now, id, &bytes),
            Inbound::Finished(id) => self.cell.lock().handle_stream_finished(now, id),
            Inbound::Datagram(d) => self.cell.lock().handle_datagram(now, d),
            Inbound::Written(id) => {
                if let Some(w) = self.writers.get_mut(&id) {
                    w.busy = false;
                }
            }
            Inbound::BiSend(id, send) => {
                if id == StreamId::CONTROL {
                    self.control_send = Some(send);
                }
            }
        }
    }

    fn timeout(&mut self) {
        let path = path_stats(&self.conn);
        let mut session = self.cell.lock();
        let now = Instant::now();
        session.handle_path_stats(now, path);
        session.handle_timeout(now);
    }

    /// Carries out what the session asks, until it asks nothing more.
    fn pump(&mut self) {
        loop {
            let mut session = self.cell.lock();
            while let Some(transmit) = session.poll_transmit() {
                match transmit {
                    Transmit::Datagram(d) => {
                        if let Err(e) = self.conn.send_datagram(d) {
                            tracing::debug!("datagram not sent: {e}");
                        }
                    }
                    Transmit::Close { code, reason } => self.conn.close(
                        VarInt::from_u64(code.to_wire()).unwrap_or(VarInt::MAX),
                        &reason,
                    ),
                }
            }
            let mut batches = Vec::new();
            let role = session.role();
            let writable: Vec<OutStream> = session.writable_streams().collect();
            // Highest priority first; while a stream's batch waits for room
            // in the send window, lower priorities get nothing new, so the
            // room acks free goes to the higher priority.
            let mut gate = self
                .writers
                .iter()
                .filter(|(s, w)| w.busy && **s != OutStream::Control)
                .map(|(_, w)| w.priority)
                .max();
            for stream in writable {
                let priority = session.stream_priority(stream);
                if stream != OutStream::Control && gate.is_some_and(|g| priority < g) {
                    continue;
                }
                if self.writers.get(&stream).is_some_and(|w| w.busy) {
                    continue;
                }
                // A server answers on the control stream once its send
                // half has come from the acceptor.
                let waiting = stream == OutStream::Control
                    && role == Role::Server
                    && !self.writers.contains_key(&stream)
                    && self.control_send.is_none();
                if waiting {
                    continue;
                }
                let mut batch = Vec::new();
                let mut bytes = 0;
                while batch.len() < WRITE_BATCH && bytes < WRITE_BATCH_BYTES {
                    match session.poll_stream(stream) {
                        Some(write) => {
                            if let StreamWrite::Data(d) = &write {
                                bytes += d.len();
                            }
                            batch.push(write);
                        }
                        None => break,
                    }
                }
                if stream != OutStream::Control {
                    gate = Some(gate.map_or(priority, |g| g.max(priority)));
                }
                batches.push((stream, priority, batch));
            }
            // Unordered messages: as many as the writer task has room for;
            // the rest wait in the session's backlog.
            while let Ok(permit) = self.unordered.try_reserve() {
                match session.poll_unordered() {
                    Some(write) => permit.send(write),
                    None => break,
                }
            }
            let auth = session.poll_auth();
            drop(session);
            for (stream, priority, batch) in batches {
                self.write(stream, priority, batch);
            }
            let Some(request) = auth else { break };
            let Owner::Server { shared, auth } = &self.owner else {
                break;
            };
            if let Authentication::Run(future) =
                shared.authenticate(&self.cell, request, Instant::now())
            {
                let (shared, cell) = (shared.clone(), self.cell.clone());
                let limit = self.handshake_timeout;
                auth.spawn(async move {
                    // The session's own deadline closes it if this is late.
                    if let Ok(result) = tokio::time::timeout(limit, future).await {
                        shared.admit(&cell, Instant::now(), result.map(Some));
                    }
                    cell.wake();
                });
            }
        }
        if let Owner::Server { shared, .. } = &self.owner {
            shared.after_drive(&self.cell);
        }
        #[cfg(feature = "inspect")]
        if let Some(capture) = &self.capture {
            super::capture::record(capture, &mut self.cell.lock(), Instant::now());
        }
        self.cell.driven();
    }

    /// Hands a batch to `stream`'s writer, starting the writer (and opening
    /// the stream) on first use.
    fn write(&mut self, stream: OutStream, priority: i32, batch: Vec<StreamWrite>) {
        if !self.writers.contains_key(&stream) {
            let (tx, rx) = mpsc::channel(1);
            let open = match (stream, self.control_send.take()) {
                (OutStream::Control, Some(send)) => Open::Have(send),
                (OutStream::Control, None) => Open::Bi,
                (OutStream::Channel(_), _) => Open::Uni(priority),
            };
            tokio::spawn(write_stream(
                self.conn.clone(),
                stream,
                open,
                rx,
                self.inbox.clone(),
                self.cell.clone(),
                self.resume.clone(),
            ));
            self.writers.insert(
                stream,
                Writer {
                    batches: tx,
                    busy: false,
                    priority,
                },
            );
        }
        if let Some(writer) = self.writers.get_mut(&stream)
            && writer.batches.try_send(batch).is_ok()
        {
            writer.busy = true;
        }
    }
}

/// QUIC's figures for the session's stats.
fn path_stats(conn: &Connection) -> PathStats {
    let stats = conn.stats();
    PathStats {
        rtt: conn.rtt(),
        sent_packets: stats.path.sent_packets,
        lost_packets: stats.path.lost_packets,
        bytes_in: stats.udp_rx.bytes,
        bytes_out: stats.udp_tx.bytes,
    }
}

/// How a writer gets its stream.
enum Open {
    /// The send half of the control stream the client opened.
    Have(SendStream),
    /// Open a unidirectional stream with this priority.
    Uni(i32),
    /// Open the control stream (a client's first bidirectional stream); its
    /// receive half gets a reader.
    Bi,
}

async fn write_stream(
    conn: Connection,
    stream: OutStream,
    open: Open,
    mut batches: mpsc::Receiver<Vec<StreamWrite>>,
    inbox: mpsc::Sender<Inbound>,
    cell: Arc<SessionCell>,
    resume: Arc<Notify>,
) {
    let mut send = match open {
        Open::Have(send) => send,
        Open::Uni(priority) => match conn.open_uni().await {
            Ok(send) => {
                let _ = send.set_priority(priority);
                send
            }
            Err(_) => return,
        },
        Open::Bi => match conn.open_bi().await {
            Ok((send, recv)) => {
                tokio::spawn(read_stream(recv, inbox.clone(), cell, resume));
                send
            }
            Err(_) => return,
        },
    };
    let mut chunks = Vec::with_capacity(WRITE_BATCH);
    while let Some(batch) = batches.recv().await {
        let mut finish = false;
        for write in batch {
            match write {
                StreamWrite::Data(data) => chunks.push(data),
                StreamWrite::Finish => finish = true,
            }
        }
        if send.write_all_chunks(&mut chunks).await.is_err() {
            return;
        }
        chunks.clear();
        if finish {
            let _ = send.finish();
        }
        if inbox.send(Inbound::Written(stream)).await.is_err() {
            return;
        }
    }
}

/// Writes each message of a reliable-unordered channel on a stream of its
/// own, one after another (QUIC opens streams in order).
async fn write_unordered(conn: Connection, mut writes: mpsc::Receiver<UnorderedWrite>) {
    while let Some(write) = writes.recv().await {
        let Ok(mut send) = conn.open_uni().await else {
            return;
        };
        let _ = send.set_priority(write.priority);
        if send.write_chunk(write.data).await.is_err() {
            continue;
        }
        let _ = send.finish();
    }
}

async fn read_datagrams(conn: Connection, inbox: mpsc::Sender<Inbound>) {
    while let Ok(datagram) = conn.read_datagram().await {
        if inbox.send(Inbound::Datagram(datagram)).await.is_err() {
            return;
        }
    }
}

async fn accept_streams(
    conn: Connection,
    inbox: mpsc::Sender<Inbound>,
    cell: Arc<SessionCell>,
    resume: Arc<Notify>,
) {
    loop {
        tokio::select! {
            uni = conn.accept_uni() => match uni {
                Ok(recv) => {
                    tokio::spawn(read_stream(recv, inbox.clone(), cell.clone(), resume.clone()));
                }
                Err(_) => return,
            },
            bi = conn.accept_bi() => match bi {
                Ok((send, recv)) => {
                    // The send half reaches the driver before any byte the
                    // reader passes on, so the answer has its stream.
                    let id = stream_id(recv.id());
                    if inbox.send(Inbound::BiSend(id, send)).await.is_err() {
                        return;
                    }
                    tokio::spawn(read_stream(recv, inbox.clone(), cell.clone(), resume.clone()));
                }
                Err(_) => return,
            },
        }
    }
}

/// Reads one stream while the session wants its bytes.
async fn read_stream(
    mut recv: RecvStream,
    inbox: mpsc::Sender<Inbound>,
    cell: Arc<SessionCell>,
    resume: Arc<Notify>,
) {
    let id = stream_id(recv.id());
    loop {
        loop {
            // Created before the check, so a resume between them is kept.
            let resumed = resume.notified();
            {
                let session = cell.lock();
                if session.is_closed() {
                    return;
                }
                if session.wants_stream_bytes(id) {
                    break;
                }
            }
            resumed.await;
        }
        let inbound = match recv.read_chunk(READ_CHUNK, true).await {
            Ok(Some(chunk)) => Inbound::Bytes(id, chunk.bytes),
            Ok(None) | Err(_) => Inbound::Finished(id),
        };
        let done = matches!(inbound, Inbound::Finished(_));
        if inbox.send(inbound).await.is_err() || done {
            return;
        }
    }
}
