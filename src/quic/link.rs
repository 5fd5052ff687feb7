//! One authenticated connection, either side: its send paths and the tasks
//! that read it, write it and sample its stats.

use core::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use quinn::{ConnectionError, RecvStream, SendStream, VarInt};
use tokio::sync::mpsc;

use crate::proto::{
    Channel, FrameDecoder, ParsedDatagram, Protocol, RateLimiter, RateVerdict, RefuseReason,
    SnapshotReceiver, SnapshotVerdict, UnreliablePacker, frame_header, split_datagram,
};

use super::stats::{ConnectionStats, Counters, Sampler};
use super::{CertHash, Limits};

/// ALPN protocol id of zao over QUIC.
pub(crate) const ALPN: &[u8] = b"zao/1";

/// Application close codes (docs/WIRE.md §12).
pub(crate) mod code {
    pub(crate) const NORMAL: u32 = 0x0;
    pub(crate) const REFUSED: u32 = 0x1;
    pub(crate) const PROTOCOL_VIOLATION: u32 = 0x2;
    pub(crate) const HANDSHAKE_TIMEOUT: u32 = 0x3;
    pub(crate) const KICKED: u32 = 0x4;
    pub(crate) const TOO_SLOW: u32 = 0x5;
    pub(crate) const FLOODING: u32 = 0x6;
    pub(crate) const SILENT: u32 = 0x7;
}

/// Message id 0 with an empty body is zao's heartbeat: a client sends it on
/// its reliable stream when it has sent nothing else for a while, so a
/// server can tell a quiet client from a dead or stalling one
/// (docs/WIRE.md §12). Reliable, not a datagram: under heavy loss (L5, 25 %)
/// a datagram heartbeat was lost often enough for the 10-minute soak to
/// see a live client closed for silence.
pub(crate) const HEARTBEAT: [u8; 1] = [0x00];

/// A client's id on its server, assigned in the handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientId(pub u64);

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "client {}", self.0)
    }
}

/// Which side closed a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// This side.
    Local,
    /// The other side.
    Peer,
}

/// Why a connection ended (or never started).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DisconnectReason {
    /// Closed deliberately, with the closer's reason.
    Closed {
        /// Who closed it.
        by: Side,
        /// zao's close code (0 normal, 1 refused, 2 protocol violation,
        /// 3 handshake timeout, 4 kicked, 5 too slow, 6 flooding, 7 silent
        /// past the silence timeout).
        code: u32,
        /// The reason given.
        reason: String,
    },
    /// The server refused the handshake.
    Refused(RefuseReason),
    /// The server's certificate is not the pinned one.
    CertificateMismatch {
        /// The hashes the client pinned.
        expected: Vec<CertHash>,
        /// The hash the server presented.
        presented: Option<CertHash>,
    },
    /// Nothing heard for the idle timeout.
    TimedOut,
    /// A transport or I/O error.
    Error(String),
}

impl fmt::Display for DisconnectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Closed { by, code, reason } => {
                let by = if *by == Side::Local {
                    "locally"
                } else {
                    "by the peer"
                };
                write!(f, "closed {by} (code {code}): {reason}")
            }
            Self::Refused(r) => write!(f, "refused: {r}"),
            Self::CertificateMismatch {
                expected,
                presented,
            } => {
                write!(f, "server certificate mismatch: pinned ")?;
                for (i, h) in expected.iter().enumerate() {
                    write!(f, "{}{h}", if i > 0 { ", " } else { "" })?;
                }
                match presented {
                    Some(p) => write!(f, ", presented {p}"),
                    None => write!(f, ", presented none"),
                }
            }
            Self::TimedOut => f.write_str("timed out"),
            Self::Error(e) => write!(f, "error: {e}"),
        }
    }
}

impl std::error::Error for DisconnectReason {}

impl DisconnectReason {
    pub(crate) fn from_quinn(err: &ConnectionError) -> Self {
        match err {
            ConnectionError::ApplicationClosed(close) => Self::Closed {
                by: Side::Peer,
                code: u32::try_from(close.error_code.into_inner()).unwrap_or(u32::MAX),
                reason: String::from_utf8_lossy(&close.reason).into_owned(),
            },
            ConnectionError::TimedOut => Self::TimedOut,
            other => Self::Error(other.to_string()),
        }
    }
}

/// Why a send failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendError {
    /// The connection's reliable backlog is full: back-pressure, try later.
    QueueFull(ClientId),
    /// No such client, or it has disconnected.
    NotConnected(ClientId),
    /// Larger than the channel allows (`max_message_size` for reliable, one
    /// datagram for unreliable, or too many chunks for a snapshot).
    TooLarge {
        /// The message's size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// The message type is not registered for this channel and side.
    NotRegistered(u32),
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::QueueFull(c) => write!(f, "{c}: reliable backlog full"),
            Self::NotConnected(c) => write!(f, "{c} is not connected"),
            Self::TooLarge { size, max } => {
                write!(f, "message of {size} bytes over the {max}-byte limit")
            }
            Self::NotRegistered(id) => {
                write!(f, "message id {id} is not registered for this channel")
            }
        }
    }
}

impl std::error::Error for SendError {}

/// What the connection tasks report to the application side.
#[derive(Debug)]
pub(crate) enum Inbound {
    Connected(ClientId, std::net::SocketAddr),
    Refused(std::net::SocketAddr, RefuseReason),
    Disconnected(ClientId, DisconnectReason),
    Message(ClientId, Channel, Bytes),
}

/// An authenticated connection.
pub(crate) struct Link {
    pub(crate) id: ClientId,
    pub(crate) quic: quinn::Connection,
    reliable: mpsc::Sender<Bytes>,
    backlog: AtomicUsize,
    max_backlog: usize,
    max_message: usize,
    packer: Mutex<UnreliablePacker>,
    pub(crate) counters: Counters,
    stats: Mutex<ConnectionStats>,
    started: Instant,
    /// Why this side closed the connection, for the disconnect event.
    closing: Mutex<Option<(u32, String)>>,
    /// Milliseconds after `started` of the last message heard / sent.
    last_heard: AtomicU64,
    last_sent: AtomicU64,
}

impl fmt::Debug for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Link")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Link {
    fn millis(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn heard(&self) {
        self.last_heard.store(self.millis(), Ordering::Relaxed);
    }

    fn sent(&self) {
        self.last_sent.store(self.millis(), Ordering::Relaxed);
    }

    /// Queues a message (`id + body`) on the reliable stream.
    pub(crate) fn send_reliable(&self, message: Bytes) -> Result<(), SendError> {
        if message.len() > self.max_message {
            return Err(SendError::TooLarge {
                size: message.len(),
                max: self.max_message,
            });
        }
        let queued = self.backlog.fetch_add(message.len(), Ordering::AcqRel);
        if queued > 0 && queued + message.len() > self.max_backlog {
            self.backlog.fetch_sub(message.len(), Ordering::AcqRel);
            return Err(SendError::QueueFull(self.id));
        }
        let len = message.len();
        match self.reliable.try_send(message) {
            Ok(()) => {
                Counters::bump(&self.counters.messages_out);
                self.sent();
                Ok(())
            }
            Err(e) => {
                self.backlog.fetch_sub(len, Ordering::AcqRel);
                Err(match e {
                    mpsc::error::TrySendError::Full(_) => SendError::QueueFull(self.id),
                    mpsc::error::TrySendError::Closed(_) => SendError::NotConnected(self.id),
                })
            }
        }
    }

    /// Sends one datagram now, whatever it packs (its messages are counted
    /// where they were packed); quinn drops its oldest queued datagrams when
    /// its send buffer is full, so the newest always goes out.
    fn send_datagram(&self, datagram: Bytes) {
        self.send_datagrams(core::slice::from_ref(&datagram), 0);
    }

    /// Sends datagrams that each carry one message (a snapshot's chunks, a
    /// shared unreliable message) in one go: the bookkeeping once, then each.
    pub(crate) fn send_messages(&self, datagrams: &[Bytes]) {
        self.send_datagrams(datagrams, datagrams.len() as u64);
    }

    fn send_datagrams(&self, datagrams: &[Bytes], messages: u64) {
        self.sent();
        self.counters
            .messages_out
            .fetch_add(messages, Ordering::Relaxed);
        for datagram in datagrams {
            if self.quic.send_datagram(datagram.clone()).is_err() {
                Counters::bump(&self.counters.datagrams_dropped);
            }
        }
    }

    /// Packs a small unreliable message (`id + body`); full datagrams go out.
    pub(crate) fn pack_unreliable(&self, message: &[u8]) {
        let max = self.max_datagram();
        let full = match self.packer.lock() {
            Ok(mut packer) => packer.push(message, max),
            Err(_) => None,
        };
        Counters::bump(&self.counters.messages_out);
        if let Some(datagram) = full {
            self.send_datagram(datagram);
        }
    }

    /// Sends what is packed.
    pub(crate) fn flush(&self) {
        let packed = self.packer.lock().ok().and_then(|mut p| p.flush());
        if let Some(datagram) = packed {
            self.send_datagram(datagram);
        }
    }

    /// The largest datagram the path takes now.
    pub(crate) fn max_datagram(&self) -> usize {
        self.quic.max_datagram_size().unwrap_or(0)
    }

    /// The latest stats sample, with the live RTT.
    pub(crate) fn stats(&self) -> ConnectionStats {
        let mut stats = self.stats.lock().map(|s| *s).unwrap_or_default();
        // Totals are live; rates are from the last one-second sample.
        let load = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
        stats.rtt = self.quic.rtt();
        stats.messages_in = load(&self.counters.messages_in);
        stats.messages_out = load(&self.counters.messages_out);
        stats.datagrams_dropped = load(&self.counters.datagrams_dropped);
        stats.rate_limited = load(&self.counters.rate_limited);
        stats
    }

    pub(crate) fn close(&self, code: u32, reason: &str) {
        if let Ok(mut closing) = self.closing.lock() {
            closing.get_or_insert_with(|| (code, reason.to_owned()));
        }
        self.quic.close(VarInt::from_u32(code), reason.as_bytes());
    }
}

/// How a side checks what it receives.
pub(crate) struct ReceivePolicy {
    pub(crate) protocol: Protocol,
    /// The server receives what clients send, a client what the server sends.
    pub(crate) is_server: bool,
    pub(crate) limits: Limits,
}

/// What a received message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Admitted {
    /// A registered message, with its id: deliver it.
    Message(u32),
    /// A heartbeat: it only shows the peer is alive.
    Heartbeat,
}

impl ReceivePolicy {
    /// Whether a message (`id + body`) may arrive on `channel`.
    fn admits(&self, message: &[u8], channel: Channel) -> Result<Admitted, String> {
        let (id, body) =
            crate::split_message(message).map_err(|e| format!("bad message id: {e}"))?;
        if id == 0 && body.is_empty() && channel != Channel::Snapshot {
            return Ok(Admitted::Heartbeat);
        }
        let entry = self
            .protocol
            .get(id)
            .ok_or_else(|| format!("unknown message id {id}"))?;
        let allowed = if self.is_server {
            entry.direction.client_sends()
        } else {
            entry.direction.server_sends()
        };
        if entry.channel != channel || !allowed {
            return Err(format!(
                "{} (id {id}) may not arrive on {channel:?} from this peer",
                entry.name
            ));
        }
        Ok(Admitted::Message(id))
    }
}

/// Creates a link, lets `register` record it, announces it with
/// `announce`, and only then starts its tasks on the current runtime: so
/// the application sees the connection before any of its messages, and the
/// link is listed by the time the announcement is read. `None` if the
/// application side is gone.
// The link's parts and three hooks; a struct for two call sites would only
// rename them.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn start_link(
    id: ClientId,
    quic: quinn::Connection,
    out: SendStream,
    policy: Arc<ReceivePolicy>,
    events: mpsc::Sender<Inbound>,
    register: impl FnOnce(&Arc<Link>),
    announce: Inbound,
    on_closed: impl FnOnce(ClientId) + Send + 'static,
) -> Option<Arc<Link>> {
    let limits = &policy.limits;
    let (tx, rx) = mpsc::channel(4096);
    let link = Arc::new(Link {
        id,
        quic,
        reliable: tx,
        backlog: AtomicUsize::new(0),
        max_backlog: limits.reliable_backlog,
        max_message: limits.max_message_size,
        packer: Mutex::new(UnreliablePacker::new()),
        counters: Counters::default(),
        stats: Mutex::new(ConnectionStats::default()),
        started: Instant::now(),
        closing: Mutex::new(None),
        last_heard: AtomicU64::new(0),
        last_sent: AtomicU64::new(0),
    });
    register(&link);
    if events.send(announce).await.is_err() {
        link.close(code::NORMAL, "shutting down");
        return None;
    }
    let rate = policy.is_server.then(|| {
        Arc::new(Mutex::new(RateLimiter::new(
            limits.receive_rate,
            Instant::now(),
        )))
    });
    tokio::spawn(write_reliable(link.clone(), out, rx));
    tokio::spawn(read_reliable(
        link.clone(),
        policy.clone(),
        events.clone(),
        rate.clone(),
    ));
    tokio::spawn(read_datagrams(
        link.clone(),
        policy.clone(),
        events.clone(),
        rate,
    ));
    tokio::spawn(sample_stats(link.clone()));
    if let Some(silence) = limits.silence_timeout {
        if policy.is_server {
            tokio::spawn(watch_silence(link.clone(), silence));
        } else {
            // Every quarter of the timeout: even with one heartbeat lost, the
            // next lands well inside it.
            tokio::spawn(heartbeat(link.clone(), silence / 4));
        }
    }
    let watched = link.clone();
    tokio::spawn(async move {
        let err = watched.quic.closed().await;
        let reason = match err {
            ConnectionError::LocallyClosed => {
                let (code, reason) = watched
                    .closing
                    .lock()
                    .ok()
                    .and_then(|c| c.clone())
                    .unwrap_or((code::NORMAL, "closed".to_owned()));
                DisconnectReason::Closed {
                    by: Side::Local,
                    code,
                    reason,
                }
            }
            other => DisconnectReason::from_quinn(&other),
        };
        on_closed(watched.id);
        let _ = events.send(Inbound::Disconnected(watched.id, reason)).await;
    });
    Some(link)
}

/// Writes queued reliable messages, length-framed, without copying them.
async fn write_reliable(link: Arc<Link>, mut out: SendStream, mut rx: mpsc::Receiver<Bytes>) {
    let mut chunks: Vec<Bytes> = Vec::with_capacity(128);
    while let Some(first) = rx.recv().await {
        let mut bytes = 0;
        let mut push = |chunks: &mut Vec<Bytes>, m: Bytes| {
            let (header, n) = frame_header(m.len());
            bytes += m.len();
            chunks.push(Bytes::copy_from_slice(header.get(..n).unwrap_or_default()));
            chunks.push(m);
        };
        push(&mut chunks, first);
        while chunks.len() < 128 {
            match rx.try_recv() {
                Ok(m) => push(&mut chunks, m),
                Err(_) => break,
            }
        }
        let result = out.write_all_chunks(&mut chunks).await;
        link.backlog.fetch_sub(bytes, Ordering::AcqRel);
        chunks.clear();
        if result.is_err() {
            return;
        }
    }
    let _ = out.finish();
}

fn rate_check(link: &Link, rate: Option<&Mutex<RateLimiter>>) -> bool {
    let verdict = rate
        .and_then(|r| r.lock().ok().map(|mut r| r.handle_message(Instant::now())))
        .unwrap_or(RateVerdict::Accept);
    match verdict {
        RateVerdict::Accept => true,
        RateVerdict::Drop => {
            Counters::bump(&link.counters.rate_limited);
            false
        }
        RateVerdict::Disconnect => {
            tracing::debug!(client = link.id.0, "sustained flood: disconnecting");
            link.close(code::FLOODING, "sustained flood over the receive rate");
            false
        }
    }
}

/// Reads the peer's reliable stream: frames, checks, delivers in order.
async fn read_reliable(
    link: Arc<Link>,
    policy: Arc<ReceivePolicy>,
    events: mpsc::Sender<Inbound>,
    rate: Option<Arc<Mutex<RateLimiter>>>,
) {
    let Ok(mut recv): Result<RecvStream, _> = link.quic.accept_uni().await else {
        return;
    };
    let mut frames = FrameDecoder::new(policy.limits.max_message_size);
    loop {
        let chunk = match recv.read_chunk(64 * 1024, true).await {
            Ok(Some(chunk)) => chunk.bytes,
            Ok(None) | Err(_) => return,
        };
        frames.handle_bytes(&chunk);
        loop {
            let message = match frames.poll_frame() {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(client = link.id.0, "reliable stream: {e}");
                    link.close(code::PROTOCOL_VIOLATION, &e.to_string());
                    return;
                }
            };
            match policy.admits(&message, Channel::Reliable) {
                Ok(Admitted::Message(_)) => {}
                Ok(Admitted::Heartbeat) => {
                    if rate_check(&link, rate.as_deref()) {
                        link.heard();
                    }
                    continue;
                }
                Err(e) => {
                    tracing::debug!(client = link.id.0, "reliable stream: {e}");
                    link.close(code::PROTOCOL_VIOLATION, &e);
                    return;
                }
            }
            link.heard();
            if !rate_check(&link, rate.as_deref()) {
                continue;
            }
            Counters::bump(&link.counters.messages_in);
            if events
                .send(Inbound::Message(link.id, Channel::Reliable, message))
                .await
                .is_err()
            {
                return;
            }
        }
    }
}

/// Reads datagrams: unpacks, sequences snapshots, drops what is bad.
async fn read_datagrams(
    link: Arc<Link>,
    policy: Arc<ReceivePolicy>,
    events: mpsc::Sender<Inbound>,
    rate: Option<Arc<Mutex<RateLimiter>>>,
) {
    let mut snapshots = SnapshotReceiver::new();
    let drop_one = |why: &dyn fmt::Display| {
        tracing::debug!(client = link.id.0, "datagram dropped: {why}");
        Counters::bump(&link.counters.datagrams_dropped);
    };
    // The id of a message to deliver; heartbeats and refusals are handled
    // (and counted) here.
    let admit = |message: &[u8], channel: Channel| match policy.admits(message, channel) {
        Ok(Admitted::Message(id)) => Some(id),
        Ok(Admitted::Heartbeat) => {
            // Counted against the rate like any message, so a flood of
            // heartbeats is a flood.
            if rate_check(&link, rate.as_deref()) {
                link.heard();
            }
            None
        }
        Err(e) => {
            drop_one(&e);
            None
        }
    };
    let deliver = |channel: Channel, message: Bytes| {
        link.heard();
        if !rate_check(&link, rate.as_deref()) {
            return;
        }
        Counters::bump(&link.counters.messages_in);
        if events
            .try_send(Inbound::Message(link.id, channel, message))
            .is_err()
        {
            drop_one(&"the application's event queue is full");
        }
    };
    while let Ok(datagram) = link.quic.read_datagram().await {
        if datagram.len() > policy.limits.max_datagram_payload {
            drop_one(&format_args!("{} bytes over the limit", datagram.len()));
            continue;
        }
        match split_datagram(&datagram) {
            Ok(ParsedDatagram::Unreliable(messages)) => {
                for message in messages {
                    if admit(&message, Channel::Unreliable).is_some() {
                        deliver(Channel::Unreliable, message);
                    }
                }
            }
            Ok(ParsedDatagram::Snapshot(header, message)) => {
                let Some(id) = admit(&message, Channel::Snapshot) else {
                    continue;
                };
                match snapshots.handle_chunk(id, header) {
                    SnapshotVerdict::Deliver => deliver(Channel::Snapshot, message),
                    verdict => drop_one(&format_args!("{verdict:?} snapshot chunk {header:?}")),
                }
            }
            Err(e) => drop_one(&e),
        }
    }
}

/// Server side: closes a connection that has sent no message (not even a
/// heartbeat) for `silence`: an idle, trickling or stalled client ends
/// within `silence` plus a quarter of it.
async fn watch_silence(link: Arc<Link>, silence: Duration) {
    let mut tick = tokio::time::interval(silence / 4);
    let limit = u64::try_from(silence.as_millis()).unwrap_or(u64::MAX);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = link.quic.closed() => return,
        }
        if link
            .millis()
            .saturating_sub(link.last_heard.load(Ordering::Relaxed))
            > limit
        {
            tracing::debug!(client = link.id.0, "silent for {silence:?}: disconnecting");
            link.close(code::SILENT, "no message within the silence timeout");
            return;
        }
    }
}

/// Client side: sends a heartbeat when nothing else went out for `every`.
async fn heartbeat(link: Arc<Link>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    let every_ms = u64::try_from(every.as_millis()).unwrap_or(u64::MAX);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = link.quic.closed() => return,
        }
        if link
            .millis()
            .saturating_sub(link.last_sent.load(Ordering::Relaxed))
            >= every_ms
        {
            // A full backlog already shows the peer we are alive.
            let _ = link.send_reliable(Bytes::from_static(&HEARTBEAT));
        }
    }
}

/// Refreshes the stats sample once a second.
async fn sample_stats(link: Arc<Link>) {
    let mut sampler = Sampler::new(Instant::now());
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = link.quic.closed() => return,
        }
        let q = link.quic.stats();
        let sample = sampler.sample(Instant::now(), &q, link.quic.rtt(), &link.counters);
        if let Ok(mut stats) = link.stats.lock() {
            *stats = sample;
        }
    }
}

/// Builds quinn's transport config from our limits.
pub(crate) fn transport_config(limits: &Limits) -> quinn::TransportConfig {
    let mut t = quinn::TransportConfig::default();
    // One control stream (bidirectional) and one reliable stream each way:
    // a peer cannot open more, so it cannot hold more stream state.
    t.max_concurrent_bidi_streams(VarInt::from_u32(1));
    t.max_concurrent_uni_streams(VarInt::from_u32(1));
    t.stream_receive_window(VarInt::from_u32(limits.stream_receive_window));
    t.receive_window(VarInt::from_u32(limits.connection_receive_window));
    t.send_window(limits.send_window);
    t.datagram_receive_buffer_size(Some(limits.datagram_receive_buffer));
    t.datagram_send_buffer_size(limits.datagram_send_buffer);
    t.max_idle_timeout(quinn::IdleTimeout::try_from(limits.idle_timeout).ok());
    t.keep_alive_interval(Some(limits.keep_alive));
    // BBR, not loss-based CUBIC: game links lose packets at random, and a
    // congestion window that halves per loss would queue snapshots behind
    // each other (measured under L3: p50 latency 520 ms on a 200 ms link).
    t.congestion_controller_factory(Arc::new(quinn::congestion::BbrConfig::default()));
    // A fixed 1200-byte path MTU (QUIC's minimum, safe across the internet):
    // snapshots are chunked to the datagram size of the moment, and path MTU
    // discovery's black-hole detection, which random loss and reordering
    // trip, would shrink the MTU under chunks already planned.
    t.mtu_discovery_config(None);
    // Game links reorder (jitter of about a tick); QUIC's defaults (3
    // packets, 9/8 RTT) then declare packets lost that are only late, and
    // the congestion controller backs off from loss that never happened.
    // Measured under L2 at 60 Hz: 24 % of packets "lost" with the defaults,
    // 2 % (the link's real loss) with these.
    t.packet_threshold(16);
    t.time_threshold(1.5);
    t
}

/// Reads one length-framed message from a stream (the handshake).
pub(crate) async fn read_frame(recv: &mut RecvStream, max: usize) -> Result<Bytes, String> {
    let mut frames = FrameDecoder::new(max);
    loop {
        if let Some(frame) = frames.poll_frame().map_err(|e| e.to_string())? {
            return Ok(frame);
        }
        match recv.read_chunk(max.max(64), true).await {
            Ok(Some(chunk)) => frames.handle_bytes(&chunk.bytes),
            Ok(None) => return Err("stream ended before a whole message".to_owned()),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Writes one length-framed message to a stream.
pub(crate) async fn write_frame(send: &mut SendStream, message: &[u8]) -> Result<(), String> {
    let (header, n) = frame_header(message.len());
    send.write_all(header.get(..n).unwrap_or_default())
        .await
        .map_err(|e| e.to_string())?;
    send.write_all(message).await.map_err(|e| e.to_string())
}

/// Closes an endpoint's connections with `reason` and stops its runtime,
/// giving tasks a moment to send the close.
pub(crate) fn stop(
    endpoint: &quinn::Endpoint,
    runtime: &mut Option<tokio::runtime::Runtime>,
    reason: &[u8],
) {
    endpoint.close(VarInt::from_u32(code::NORMAL), reason);
    if let Some(runtime) = runtime.take() {
        runtime.shutdown_timeout(Duration::from_millis(200));
    }
}
