//! The pump's transport over a quinn connection: each operation polls
//! quinn's own futures with the driver's context, so quinn wakes the one
//! driver task of the connection and nothing else runs for it. Futures that
//! wait on quinn's notifications (a datagram, a stream to accept or open,
//! the close) are kept between polls, since dropping one forgets the
//! waiting; stream reads and writes park their waker in quinn's stream
//! tables and are made afresh each time. No decision is made here.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

use bytes::Bytes;
use quinn::{
    Connecting, Connection, ConnectionError, ReadError, RecvStream, SendDatagramError, SendStream,
    VarInt,
};

use crate::endpoint::{Pinned, connect_failure, link_closed, stream_id};
use crate::proto::pump::{Accepted, DatagramRefused, LinkClosed, Opened, Read, Transport};
use crate::proto::{DisconnectReason, PathStats};

type Waiting<T> = Option<Pin<Box<dyn Future<Output = T> + Send>>>;

/// The waker quinn gets: it notes that quinn woke the driver, then wakes
/// the driver's task. A step the application alone woke (to send) then
/// skips polling quinn for input: each poll takes the connection's lock,
/// and at 60 Hz to hundreds of clients those polls were a tenth of the
/// server's CPU (`zao-perf broadcast`, 256 clients).
pub(crate) struct InputWake {
    woke: AtomicBool,
    task: Mutex<Option<Waker>>,
}

impl InputWake {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            // The first step polls everything.
            woke: AtomicBool::new(true),
            task: Mutex::new(None),
        })
    }

    /// The driver task's current waker, which a wake passes on to.
    pub(crate) fn set_task(&self, waker: &Waker) {
        let mut task = self.task.lock().unwrap_or_else(PoisonError::into_inner);
        if !task.as_ref().is_some_and(|t| t.will_wake(waker)) {
            *task = Some(waker.clone());
        }
    }
}

impl Wake for InputWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woke.store(true, Ordering::Release);
        let task = self.task.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(task) = task.as_ref() {
            task.wake_by_ref();
        }
    }
}

/// A quinn connection, from its handshake on.
pub(crate) struct QuinnLink {
    phase: Phase,
    /// A client's pinned certificate, to name a mismatch.
    pinned: Pinned,
    /// Whether quinn woke the driver since the last step.
    input: Arc<InputWake>,
}

enum Phase {
    Connecting(Pin<Box<Connecting>>),
    Live(Box<Live>),
    /// The handshake was abandoned (the session's deadline closed it).
    Abandoned,
}

struct Live {
    conn: Connection,
    datagram: Waiting<Result<Bytes, ConnectionError>>,
    accept_uni: Waiting<Result<RecvStream, ConnectionError>>,
    accept_bi: Waiting<Result<(SendStream, RecvStream), ConnectionError>>,
    open_uni: Waiting<Result<SendStream, ConnectionError>>,
    open_bi: Waiting<Result<(SendStream, RecvStream), ConnectionError>>,
    closed: Pin<Box<dyn Future<Output = ConnectionError> + Send>>,
}

impl Live {
    fn new(conn: Connection) -> Self {
        let watched = conn.clone();
        Self {
            closed: Box::pin(async move { watched.closed().await }),
            conn,
            datagram: None,
            accept_uni: None,
            accept_bi: None,
            open_uni: None,
            open_bi: None,
        }
    }
}

/// Polls a kept future, made by `make` when none is kept; `Ready` takes
/// it (the next poll makes a new one).
fn poll_kept<T>(
    cx: &mut Context<'_>,
    slot: &mut Waiting<T>,
    make: impl FnOnce() -> Pin<Box<dyn Future<Output = T> + Send>>,
) -> Poll<T> {
    let future = slot.get_or_insert_with(make);
    match future.as_mut().poll(cx) {
        Poll::Ready(out) => {
            *slot = None;
            Poll::Ready(out)
        }
        Poll::Pending => Poll::Pending,
    }
}

impl QuinnLink {
    /// A connection whose handshake `connecting` runs; `pinned` for a
    /// client that pins the server's certificate.
    pub(crate) fn new(connecting: Connecting, pinned: Pinned, input: Arc<InputWake>) -> Self {
        Self {
            phase: Phase::Connecting(Box::pin(connecting)),
            pinned,
            input,
        }
    }

    fn live(&mut self) -> Option<&mut Live> {
        match &mut self.phase {
            Phase::Live(live) => Some(live),
            _ => None,
        }
    }
}

impl Transport for QuinnLink {
    type Send = SendStream;
    type Recv = RecvStream;

    fn poll_connected(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<usize>, DisconnectReason>> {
        match &mut self.phase {
            Phase::Connecting(connecting) => match connecting.as_mut().poll(cx) {
                Poll::Ready(Ok(conn)) => {
                    let max = conn.max_datagram_size();
                    self.phase = Phase::Live(Box::new(Live::new(conn)));
                    Poll::Ready(Ok(max))
                }
                Poll::Ready(Err(e)) => {
                    self.phase = Phase::Abandoned;
                    Poll::Ready(Err(connect_failure(&self.pinned, &e)))
                }
                Poll::Pending => Poll::Pending,
            },
            Phase::Live(live) => Poll::Ready(Ok(live.conn.max_datagram_size())),
            Phase::Abandoned => Poll::Ready(Err(LinkClosed::Locally.into())),
        }
    }

    fn poll_closed(&mut self, cx: &mut Context<'_>) -> Poll<DisconnectReason> {
        match &mut self.phase {
            Phase::Live(live) => live
                .closed
                .as_mut()
                .poll(cx)
                .map(|e| link_closed(&e).into()),
            Phase::Abandoned => Poll::Ready(LinkClosed::Locally.into()),
            Phase::Connecting(_) => Poll::Pending,
        }
    }

    fn poll_datagram(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let Some(live) = self.live() else {
            return Poll::Ready(None);
        };
        let conn = &live.conn;
        poll_kept(cx, &mut live.datagram, || {
            let conn = conn.clone();
            Box::pin(async move { conn.read_datagram().await })
        })
        .map(Result::ok)
    }

    fn poll_accept(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Accepted<RecvStream, SendStream>>> {
        let Some(live) = self.live() else {
            return Poll::Ready(None);
        };
        let conn = &live.conn;
        if let Poll::Ready(accepted) = poll_kept(cx, &mut live.accept_uni, || {
            let conn = conn.clone();
            Box::pin(async move { conn.accept_uni().await })
        }) {
            return Poll::Ready(accepted.ok().map(|recv| Accepted {
                id: stream_id(recv.id()),
                recv,
                send: None,
            }));
        }
        poll_kept(cx, &mut live.accept_bi, || {
            let conn = conn.clone();
            Box::pin(async move { conn.accept_bi().await })
        })
        .map(|accepted| {
            accepted.ok().map(|(send, recv)| Accepted {
                id: stream_id(recv.id()),
                recv,
                send: Some(send),
            })
        })
    }

    fn poll_read(&mut self, cx: &mut Context<'_>, recv: &mut RecvStream, max: usize) -> Poll<Read> {
        // Cancel-safe: a read not ready leaves its waker in quinn's table.
        match pin!(recv.read_chunk(max, true)).poll(cx) {
            Poll::Ready(Ok(Some(chunk))) => Poll::Ready(Read::Data(chunk.bytes)),
            Poll::Ready(Ok(None)) => Poll::Ready(Read::Finished),
            Poll::Ready(Err(ReadError::Reset(code))) => Poll::Ready(Read::Reset(code.into_inner())),
            Poll::Ready(Err(_)) => Poll::Ready(Read::Gone),
            Poll::Pending => Poll::Pending,
        }
    }

    fn poll_open(
        &mut self,
        cx: &mut Context<'_>,
        bidi: bool,
    ) -> Poll<Option<Opened<SendStream, RecvStream>>> {
        let Some(live) = self.live() else {
            return Poll::Ready(None);
        };
        let conn = &live.conn;
        if bidi {
            poll_kept(cx, &mut live.open_bi, || {
                let conn = conn.clone();
                Box::pin(async move { conn.open_bi().await })
            })
            .map(|opened| {
                opened.ok().map(|(send, recv)| Opened {
                    send,
                    recv: Some((stream_id(recv.id()), recv)),
                })
            })
        } else {
            poll_kept(cx, &mut live.open_uni, || {
                let conn = conn.clone();
                Box::pin(async move { conn.open_uni().await })
            })
            .map(|opened| opened.ok().map(|send| Opened { send, recv: None }))
        }
    }

    fn set_priority(&mut self, send: &mut SendStream, priority: i32) {
        let _ = send.set_priority(priority);
    }

    fn poll_write(
        &mut self,
        cx: &mut Context<'_>,
        send: &mut SendStream,
        data: &mut Bytes,
    ) -> Poll<Result<(), ()>> {
        // Cancel-safe: it takes what the window has room for, advancing
        // `data`, or leaves its waker in quinn's table.
        match pin!(send.write_chunks(core::slice::from_mut(data))).poll(cx) {
            Poll::Ready(Ok(_)) => Poll::Ready(Ok(())),
            Poll::Ready(Err(_)) => Poll::Ready(Err(())),
            Poll::Pending => Poll::Pending,
        }
    }

    fn finish(&mut self, send: &mut SendStream) {
        let _ = send.finish();
    }

    fn try_send_datagram(&mut self, datagram: Bytes) -> Result<(), (DatagramRefused, Bytes)> {
        let Some(live) = self.live() else {
            return Err((DatagramRefused::Gone, datagram));
        };
        // quinn makes room by dropping its oldest datagram: which one loses
        // is the session's choice, so a full buffer is refused here.
        if live.conn.datagram_send_buffer_space() < datagram.len() {
            return Err((DatagramRefused::Full, datagram));
        }
        match live.conn.send_datagram(datagram) {
            Ok(()) => Ok(()),
            Err(
                SendDatagramError::UnsupportedByPeer
                | SendDatagramError::Disabled
                | SendDatagramError::TooLarge
                | SendDatagramError::ConnectionLost(_),
            ) => Err((DatagramRefused::Gone, Bytes::new())),
        }
    }

    fn close(&mut self, code: u64, reason: &[u8]) {
        match &mut self.phase {
            Phase::Live(live) => live
                .conn
                .close(VarInt::from_u64(code).unwrap_or(VarInt::MAX), reason),
            // Before the handshake ends there is no application close to
            // send: dropping it abandons it.
            Phase::Connecting(_) => self.phase = Phase::Abandoned,
            Phase::Abandoned => {}
        }
    }

    fn path_stats(&self) -> PathStats {
        match &self.phase {
            Phase::Live(live) => {
                let stats = live.conn.stats();
                PathStats {
                    rtt: live.conn.rtt(),
                    sent_packets: stats.path.sent_packets,
                    lost_packets: stats.path.lost_packets,
                    bytes_in: stats.udp_rx.bytes,
                    bytes_out: stats.udp_tx.bytes,
                }
            }
            _ => PathStats::default(),
        }
    }

    fn take_input_wake(&mut self) -> bool {
        self.input.woke.swap(false, Ordering::AcqRel)
    }
}
