//! The pump's transport over a quinn connection: each operation polls
//! quinn's own futures with the driver's context, so quinn wakes the one
//! driver task of the connection and nothing else runs for it. Futures that
//! wait on quinn's notifications (a datagram, a stream to accept or open,
//! the close) are kept between polls, since dropping one forgets the
//! waiting; stream reads and writes park their waker in quinn's stream
//! tables and are made afresh each time. No decision is made here.
//!
//! With the `webtransport` feature, a server's connection whose TLS
//! handshake chose ALPN `h3` is a browser's: the link answers its HTTP/3
//! CONNECT (web-transport-quinn) and carries the same session over the
//! WebTransport session's streams and datagrams (docs/TRANSPORTS.md).

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
    /// What to do once QUIC is connected over ALPN `h3`.
    #[cfg_attr(not(feature = "webtransport"), allow(dead_code))]
    web: Web,
}

/// A link's WebTransport role.
#[derive(Clone, Debug)]
pub(crate) enum Web {
    /// Raw QUIC only (ALPN `zao/1`).
    Off,
    /// A server: answer a browser's CONNECT on an `h3` connection.
    #[cfg(feature = "webtransport")]
    Accept,
    /// A client over WebTransport: send CONNECT for this URL; the
    /// unidirectional streams zao's protocol allows.
    #[cfg(feature = "webtransport")]
    Connect(url::Url, u32),
}

enum Phase {
    Connecting(Pin<Box<Connecting>>),
    Live(Box<Live>),
    /// HTTP/3's SETTINGS and the CONNECT request, under the session's
    /// handshake deadline like QUIC's own handshake.
    #[cfg(feature = "webtransport")]
    WebHandshake {
        conn: Connection,
        session: Pin<Box<dyn Future<Output = Result<wt::Session, String>> + Send>>,
    },
    #[cfg(feature = "webtransport")]
    Web(Box<WebLive>),
    /// The handshake was abandoned (the session's deadline closed it).
    Abandoned,
}

#[cfg(feature = "webtransport")]
use web_transport_quinn as wt;

/// A live WebTransport session.
#[cfg(feature = "webtransport")]
struct WebLive {
    session: wt::Session,
    /// This side closed it (the crate reports its own close and a peer's
    /// CONNECT stream ending alike).
    we_closed: bool,
    /// The first bidirectional stream, zao's control stream, was given out
    /// (its QUIC id is not 0: the CONNECT stream is).
    control_given: bool,
}

/// A stream the pump writes: a QUIC stream, or a WebTransport one.
pub(crate) enum LinkSend {
    Quic(SendStream),
    #[cfg(feature = "webtransport")]
    Web(wt::SendStream),
    /// A finished stream a graceful close waits on: done once the peer
    /// acknowledged all of it (the future owns the stream).
    Acking(Pin<Box<dyn Future<Output = ()> + Send + Sync>>),
}

/// A stream the pump reads.
pub(crate) enum LinkRecv {
    Quic(RecvStream),
    #[cfg(feature = "webtransport")]
    Web(wt::RecvStream),
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

/// QUIC's figures of a connection.
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
    /// client that pins the server's certificate; `web` for WebTransport.
    pub(crate) fn new(
        connecting: Connecting,
        pinned: Pinned,
        input: Arc<InputWake>,
        web: Web,
    ) -> Self {
        Self {
            phase: Phase::Connecting(Box::pin(connecting)),
            pinned,
            input,
            web,
        }
    }

    /// QUIC is connected: a raw zao connection, or (ALPN `h3`) the start
    /// of WebTransport's own handshake.
    fn connected(&mut self, conn: Connection) -> Phase {
        #[cfg(feature = "webtransport")]
        match (&self.web, super::web::alpn(&conn).as_deref()) {
            (Web::Accept, Some(super::web::ALPN)) => {
                return Phase::WebHandshake {
                    session: Box::pin(super::web::accept(conn.clone())),
                    conn,
                };
            }
            (Web::Connect(url, uni), _) => {
                return Phase::WebHandshake {
                    session: Box::pin(super::web::connect(conn.clone(), url.clone(), *uni)),
                    conn,
                };
            }
            _ => {}
        }
        Phase::Live(Box::new(Live::new(conn)))
    }

    fn live(&mut self) -> Option<&mut Live> {
        match &mut self.phase {
            Phase::Live(live) => Some(live),
            _ => None,
        }
    }
}

impl Transport for QuinnLink {
    type Send = LinkSend;
    type Recv = LinkRecv;

    fn poll_connected(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<usize>, DisconnectReason>> {
        if let Phase::Connecting(connecting) = &mut self.phase {
            match connecting.as_mut().poll(cx) {
                Poll::Ready(Ok(conn)) => self.phase = self.connected(conn),
                Poll::Ready(Err(e)) => {
                    self.phase = Phase::Abandoned;
                    return Poll::Ready(Err(connect_failure(&self.pinned, &e)));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
        #[cfg(feature = "webtransport")]
        if let Phase::WebHandshake { conn, session } = &mut self.phase {
            match session.as_mut().poll(cx) {
                Poll::Ready(Ok(session)) => {
                    self.phase = Phase::Web(Box::new(WebLive {
                        session,
                        we_closed: false,
                        control_given: false,
                    }));
                }
                Poll::Ready(Err(why)) => {
                    let reason = super::web::handshake_failed(conn, &why);
                    self.phase = Phase::Abandoned;
                    return Poll::Ready(Err(reason));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
        match &mut self.phase {
            Phase::Live(live) => Poll::Ready(Ok(live.conn.max_datagram_size())),
            #[cfg(feature = "webtransport")]
            Phase::Web(web) => {
                // The session's own: QUIC's less the datagram's session id.
                let max = web.session.max_datagram_size();
                Poll::Ready(Ok((max > 0).then_some(max)))
            }
            Phase::Abandoned => Poll::Ready(Err(LinkClosed::Locally.into())),
            Phase::Connecting(_) => Poll::Pending,
            #[cfg(feature = "webtransport")]
            Phase::WebHandshake { .. } => Poll::Pending,
        }
    }

    fn poll_closed(&mut self, cx: &mut Context<'_>) -> Poll<DisconnectReason> {
        match &mut self.phase {
            Phase::Live(live) => live
                .closed
                .as_mut()
                .poll(cx)
                .map(|e| link_closed(&e).into()),
            #[cfg(feature = "webtransport")]
            Phase::Web(web) => super::web::poll_closed(&mut web.session, web.we_closed, cx),
            Phase::Abandoned => Poll::Ready(LinkClosed::Locally.into()),
            Phase::Connecting(_) => Poll::Pending,
            #[cfg(feature = "webtransport")]
            Phase::WebHandshake { .. } => Poll::Pending,
        }
    }

    fn poll_datagram(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        #[cfg(feature = "webtransport")]
        if let Phase::Web(web) = &mut self.phase {
            return super::web::poll_datagram(&mut web.session, cx);
        }
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

    fn poll_accept(&mut self, cx: &mut Context<'_>) -> Poll<Option<Accepted<LinkRecv, LinkSend>>> {
        #[cfg(feature = "webtransport")]
        if let Phase::Web(web) = &mut self.phase {
            return super::web::poll_accept(&mut web.session, &mut web.control_given, cx);
        }
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
                recv: LinkRecv::Quic(recv),
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
                recv: LinkRecv::Quic(recv),
                send: Some(LinkSend::Quic(send)),
            })
        })
    }

    // Without `webtransport` the match has one arm.
    #[allow(clippy::infallible_destructuring_match)]
    fn poll_read(&mut self, cx: &mut Context<'_>, recv: &mut LinkRecv, max: usize) -> Poll<Read> {
        let recv = match recv {
            LinkRecv::Quic(recv) => recv,
            #[cfg(feature = "webtransport")]
            LinkRecv::Web(recv) => return super::web::poll_read(recv, max, cx),
        };
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
    ) -> Poll<Option<Opened<LinkSend, LinkRecv>>> {
        #[cfg(feature = "webtransport")]
        if let Phase::Web(web) = &mut self.phase {
            return super::web::poll_open(&mut web.session, &mut web.control_given, bidi, cx);
        }
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
                    send: LinkSend::Quic(send),
                    recv: Some((stream_id(recv.id()), LinkRecv::Quic(recv))),
                })
            })
        } else {
            poll_kept(cx, &mut live.open_uni, || {
                let conn = conn.clone();
                Box::pin(async move { conn.open_uni().await })
            })
            .map(|opened| {
                opened.ok().map(|send| Opened {
                    send: LinkSend::Quic(send),
                    recv: None,
                })
            })
        }
    }

    fn set_priority(&mut self, send: &mut LinkSend, priority: i32) {
        let _ = match send {
            LinkSend::Quic(send) => send.set_priority(priority).is_ok(),
            #[cfg(feature = "webtransport")]
            LinkSend::Web(send) => send.set_priority(priority).is_ok(),
            LinkSend::Acking(_) => false,
        };
    }

    fn poll_write(
        &mut self,
        cx: &mut Context<'_>,
        send: &mut LinkSend,
        data: &mut Bytes,
    ) -> Poll<Result<(), ()>> {
        // Cancel-safe: it takes what the window has room for, advancing
        // `data`, or leaves its waker in quinn's table (web-transport-quinn
        // wraps the same quinn future).
        match send {
            LinkSend::Quic(send) => pin!(send.write_chunks(core::slice::from_mut(data)))
                .poll(cx)
                .map(|r| r.map(drop).map_err(drop)),
            #[cfg(feature = "webtransport")]
            LinkSend::Web(send) => pin!(send.write_chunks(core::slice::from_mut(data)))
                .poll(cx)
                .map(|r| r.map(drop).map_err(drop)),
            LinkSend::Acking(_) => Poll::Ready(Err(())),
        }
    }

    fn finish(&mut self, send: &mut LinkSend) {
        let _ = match send {
            LinkSend::Quic(send) => send.finish().is_ok(),
            #[cfg(feature = "webtransport")]
            LinkSend::Web(send) => send.finish().is_ok(),
            LinkSend::Acking(_) => false,
        };
    }

    fn poll_acked(&mut self, cx: &mut Context<'_>, send: &mut LinkSend) -> Poll<()> {
        // `stopped` resolves once a finished stream is acknowledged (or
        // the peer stopped it, or the connection is gone). Its future must
        // live between polls (its waker goes with it), so it takes the
        // stream it waits on.
        if !matches!(send, LinkSend::Acking(_)) {
            let waiting: Pin<Box<dyn Future<Output = ()> + Send + Sync>> =
                match core::mem::replace(send, LinkSend::Acking(Box::pin(async {}))) {
                    LinkSend::Quic(stream) => {
                        let stopped = stream.stopped();
                        Box::pin(async move {
                            let _ = stopped.await;
                            drop(stream);
                        })
                    }
                    #[cfg(feature = "webtransport")]
                    LinkSend::Web(stream) => Box::pin(async move {
                        let _ = stream.stopped().await;
                    }),
                    LinkSend::Acking(done) => done,
                };
            *send = LinkSend::Acking(waiting);
        }
        match send {
            LinkSend::Acking(waiting) => waiting.as_mut().poll(cx),
            _ => Poll::Ready(()),
        }
    }

    fn try_send_datagram(&mut self, datagram: Bytes) -> Result<(), (DatagramRefused, Bytes)> {
        #[cfg(feature = "webtransport")]
        if let Phase::Web(web) = &mut self.phase {
            return super::web::try_send_datagram(&web.session, datagram);
        }
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
            #[cfg(feature = "webtransport")]
            Phase::Web(web) => {
                web.we_closed = true;
                web.session
                    .close(u32::try_from(code).unwrap_or(u32::MAX), reason);
            }
            #[cfg(feature = "webtransport")]
            Phase::WebHandshake { conn, .. } => {
                conn.close(
                    VarInt::from_u64(wt::proto::error_to_http3(
                        u32::try_from(code).unwrap_or(u32::MAX),
                    ))
                    .unwrap_or(VarInt::MAX),
                    reason,
                );
                self.phase = Phase::Abandoned;
            }
            // Before the handshake ends there is no application close to
            // send: dropping it abandons it.
            Phase::Connecting(_) => self.phase = Phase::Abandoned,
            Phase::Abandoned => {}
        }
    }

    fn path_stats(&self) -> PathStats {
        match &self.phase {
            Phase::Live(live) => path_stats(&live.conn),
            #[cfg(feature = "webtransport")]
            Phase::Web(web) => path_stats(&web.session),
            _ => PathStats::default(),
        }
    }

    fn take_input_wake(&mut self) -> bool {
        self.input.woke.swap(false, Ordering::AcqRel)
    }

    fn name(&self) -> &'static str {
        match &self.phase {
            #[cfg(feature = "webtransport")]
            Phase::Web(_) | Phase::WebHandshake { .. } => "webtransport",
            _ => "quic",
        }
    }
}
