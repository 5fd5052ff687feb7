//! Limits and configuration of servers and clients.

use core::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::proto::{Protocol, RateLimit};

use super::{Certificate, ConditionerConfig, ServerTrust};

/// Resource limits, sized for a game server out of the box. quinn's own
/// defaults allow about 250 MB of buffering per connection; these keep the
/// worst case near 3 MiB (see [`Limits::worst_case_bytes_per_connection`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// Most clients connected at once; more are refused with `ServerFull`.
    pub max_clients: usize,
    /// Most connections in the handshake at once; more are refused before
    /// any state is kept for them.
    pub max_pending_handshakes: usize,
    /// Most of those from one address (IP and port) at once, so one flooding
    /// socket cannot take every handshake slot from the others.
    pub max_pending_per_address: usize,
    /// Largest message (id + body) on the reliable channel, in bytes: a
    /// longer frame closes the connection before its body is buffered.
    pub max_message_size: usize,
    /// Largest datagram payload accepted; larger ones are dropped and counted.
    pub max_datagram_payload: usize,
    /// Flow-control window of one stream, in bytes.
    pub stream_receive_window: u32,
    /// Flow-control window of the whole connection, in bytes.
    pub connection_receive_window: u32,
    /// Unacknowledged bytes in flight per connection.
    pub send_window: u64,
    /// Incoming datagram bytes buffered before the oldest are dropped.
    pub datagram_receive_buffer: usize,
    /// Outgoing datagram bytes buffered before the oldest are dropped
    /// (so a slow client gets the newest snapshots, not a backlog).
    pub datagram_send_buffer: usize,
    /// Outgoing reliable bytes queued per connection before sends fail
    /// with [`SendError::QueueFull`](super::SendError::QueueFull).
    pub reliable_backlog: usize,
    /// A connection silent for this long is closed.
    pub idle_timeout: Duration,
    /// Keep-alive interval, well under the idle timeout.
    pub keep_alive: Duration,
    /// Time a new connection has to complete the zao handshake.
    pub handshake_timeout: Duration,
    /// A client that sends no message for this long is disconnected (an
    /// idle or trickling connection cannot hold a slot forever). Clients
    /// send a heartbeat after a quarter of it with nothing else sent, so a
    /// quiet player stays. `None` turns both off.
    pub silence_timeout: Option<Duration>,
    /// Per-client receive rate (server side).
    pub receive_rate: RateLimit,
    /// Inbound events buffered for the application before the network side
    /// waits (reliable) or drops (datagrams).
    pub event_queue: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_clients: 256,
            max_pending_handshakes: 128,
            max_pending_per_address: 4,
            max_message_size: 256 * 1024,
            max_datagram_payload: 1452,
            stream_receive_window: 512 * 1024,
            connection_receive_window: 1024 * 1024,
            send_window: 1024 * 1024,
            datagram_receive_buffer: 256 * 1024,
            datagram_send_buffer: 256 * 1024,
            reliable_backlog: 512 * 1024,
            idle_timeout: Duration::from_secs(10),
            keep_alive: Duration::from_secs(2),
            handshake_timeout: Duration::from_secs(5),
            silence_timeout: Some(Duration::from_secs(30)),
            receive_rate: RateLimit::default(),
            event_queue: 64 * 1024,
        }
    }
}

impl Limits {
    /// The quinn transport configuration zao runs with these limits (stream
    /// counts, windows, datagram buffers, timeouts, BBR, fixed MTU, loss
    /// thresholds), for tools that compare against bare quinn or speak to a
    /// zao server at the QUIC level.
    #[must_use]
    pub fn transport_config(&self) -> quinn::TransportConfig {
        super::link::transport_config(self)
    }

    /// The most memory one connection can hold in zao's and quinn's buffers:
    /// receive window, datagram buffers, send window and reliable backlog.
    #[must_use]
    pub fn worst_case_bytes_per_connection(&self) -> usize {
        self.connection_receive_window as usize
            + self.datagram_receive_buffer
            + self.datagram_send_buffer
            + self.send_window as usize
            + self.reliable_backlog
            + self.max_message_size
    }
}

/// Decides whether a client may join, from its token and address. Return
/// `Err` with a reason the client will see.
pub type AuthCallback = Arc<dyn Fn(&AuthRequest<'_>) -> Result<(), String> + Send + Sync>;

/// What an [`AuthCallback`] sees.
#[derive(Debug)]
pub struct AuthRequest<'a> {
    /// The token the client sent, if any.
    pub token: Option<&'a [u8]>,
    /// The client's address.
    pub addr: SocketAddr,
}

/// A server's configuration.
#[derive(Clone)]
pub struct ServerConfig {
    /// Address to bind, e.g. `127.0.0.1:0`.
    pub bind: SocketAddr,
    /// The certificate to present.
    pub certificate: Certificate,
    /// The message types this server exchanges.
    pub protocol: Protocol,
    /// Resource limits.
    pub limits: Limits,
    /// Checks each client's token; `None` admits every client whose
    /// protocol matches.
    pub auth: Option<AuthCallback>,
    /// Runtime threads for quinn and the connection tasks.
    pub worker_threads: usize,
    /// Simulated link conditions on the server's outgoing packets (tests,
    /// demos).
    pub conditioner: Option<ConditionerConfig>,
}

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConfig")
            .field("bind", &self.bind)
            .field("certificate", &self.certificate.sha256())
            .field("protocol", &self.protocol)
            .field("limits", &self.limits)
            .field("auth", &self.auth.is_some())
            .field("worker_threads", &self.worker_threads)
            .field("conditioner", &self.conditioner)
            .finish()
    }
}

impl ServerConfig {
    /// A server on `bind` with `certificate`, `protocol` and default limits.
    #[must_use]
    pub fn new(bind: SocketAddr, certificate: Certificate, protocol: Protocol) -> Self {
        Self {
            bind,
            certificate,
            protocol,
            limits: Limits::default(),
            auth: None,
            worker_threads: 2,
            conditioner: None,
        }
    }
}

/// A client's configuration.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// The server's address.
    pub server: SocketAddr,
    /// The name the server's certificate is for (`"localhost"` for a
    /// development certificate).
    pub server_name: String,
    /// How to trust the server.
    pub trust: ServerTrust,
    /// The message types this client exchanges: must match the server's.
    pub protocol: Protocol,
    /// A token for the server's auth callback.
    pub token: Option<Vec<u8>>,
    /// Resource limits (the client uses the per-connection ones).
    pub limits: Limits,
    /// Simulated link conditions on the client's outgoing packets.
    pub conditioner: Option<ConditionerConfig>,
}

impl ClientConfig {
    /// A client of `server` that pins the server certificate's hash.
    #[must_use]
    pub fn pinned(server: SocketAddr, hash: super::CertHash, protocol: Protocol) -> Self {
        Self {
            server,
            server_name: "localhost".to_owned(),
            trust: ServerTrust::PinnedSha256(vec![hash]),
            protocol,
            token: None,
            limits: Limits::default(),
            conditioner: None,
        }
    }
}
