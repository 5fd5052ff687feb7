//! A fleet of clients for load tests: raw quinn connections that count the
//! datagrams they read and, towards a zao server, complete zao's handshake
//! and send zao's heartbeats from zao's public pieces ([`Hello::new`],
//! [`frame_header`], [`HelloReply`], [`stream_header`], [`HEARTBEAT_FRAME`],
//! [`Limits::heartbeat_interval`]). A zao client's session would also
//! decode and sequence every chunk; these only count, so a fleet of
//! hundreds costs the machine it shares with the server little more than
//! QUIC itself.

use core::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use tokio::runtime::Runtime;
use zao::proto::{
    Channel, FrameDecoder, HEARTBEAT_FRAME, Hello, HelloReply, Protocol, RefuseReason,
    frame_header, stream_header,
};
use zao::quic::quinn::{self, Connection, Endpoint, VarInt};
use zao::quic::{CertHash, ClientConfig, ClientId, Limits, Server, StartError};
use zao::{Decode, Encode};

use crate::BareServer;

/// The largest handshake reply read (as a zao client reads it).
const MAX_REPLY: usize = 64 * 1024;
/// How long one QUIC handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(20);
/// Attempts per client: a server may refuse a handshake while the previous
/// wave's slots are being released.
const ATTEMPTS: usize = 100;

/// How a fleet's clients connect.
#[derive(Clone, Debug)]
pub struct FleetConfig {
    server: SocketAddr,
    quinn: quinn::ClientConfig,
    /// The framed hello, for a zao server; `None` for bare QUIC.
    hello: Option<Bytes>,
    heartbeat: Option<Duration>,
    shared_socket: bool,
    wave: usize,
}

impl FleetConfig {
    /// Clients of the zao `server`, speaking `protocol`: each pins the
    /// server's certificate with the QUIC settings a zao client of
    /// `limits` runs ([`zao::quic::ClientConfig::quinn_client_config`]),
    /// says zao's hello, then keeps a heartbeat going as a zao client that
    /// sends nothing else does (every [`Limits::heartbeat_interval`], on
    /// its reliable stream). Clients connect
    /// [`Limits::max_pending_per_ip`] at a time, each on a socket of its
    /// own.
    ///
    /// # Errors
    /// [`StartError::Tls`] if rustls refuses the configuration.
    pub fn zao(server: &Server, protocol: &Protocol, limits: &Limits) -> Result<Self, StartError> {
        let hello = Hello::new(protocol, None).to_encoded_vec();
        let (header, n) = frame_header(hello.len());
        let mut framed = header.get(..n).unwrap_or_default().to_vec();
        framed.extend_from_slice(&hello);
        Ok(Self {
            server: server.local_addr(),
            quinn: pinned(server.local_addr(), server.certificate_hash(), limits)?,
            hello: Some(Bytes::from(framed)),
            heartbeat: limits.heartbeat_interval(),
            shared_socket: false,
            wave: limits.max_pending_per_ip.max(1),
        })
    }

    /// Bare QUIC clients of `server`, with zao's QUIC settings for
    /// `limits`: they connect, `wave` at a time, and read datagrams,
    /// nothing more.
    ///
    /// # Errors
    /// [`StartError::Tls`] if rustls refuses the configuration.
    pub fn bare(server: &BareServer, limits: &Limits, wave: usize) -> Result<Self, StartError> {
        Ok(Self {
            server: server.local_addr(),
            quinn: pinned(server.local_addr(), server.certificate_hash(), limits)?,
            hello: None,
            heartbeat: None,
            shared_socket: false,
            wave: wave.max(1),
        })
    }

    /// All clients on one socket (one endpoint), so a client's memory is
    /// its connection alone.
    #[must_use]
    pub fn shared_socket(mut self, shared: bool) -> Self {
        self.shared_socket = shared;
        self
    }
}

/// Why a fleet client could not connect.
#[derive(Debug)]
#[non_exhaustive]
pub enum FleetError {
    /// A local socket could not be opened.
    Io(io::Error),
    /// quinn would not start the connection.
    Connect(quinn::ConnectError),
    /// The QUIC connection failed, every attempt.
    Connection(quinn::ConnectionError),
    /// No QUIC handshake within the time allowed.
    TimedOut,
    /// The control stream broke before the server's answer arrived.
    Stream,
    /// The server's answer was not a framed `HelloReply`.
    BadReply,
    /// The server refused the client.
    Refused(RefuseReason),
}

impl fmt::Display for FleetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "client socket: {e}"),
            Self::Connect(e) => write!(f, "cannot connect: {e}"),
            Self::Connection(e) => write!(f, "connection failed: {e}"),
            Self::TimedOut => f.write_str("QUIC handshake timed out"),
            Self::Stream => f.write_str("the control stream broke"),
            Self::BadReply => f.write_str("the server's reply is not a HelloReply"),
            Self::Refused(reason) => write!(f, "refused: {reason}"),
        }
    }
}

impl std::error::Error for FleetError {}

/// Connected clients, driven by the runtime they were connected on.
#[derive(Debug)]
pub struct Fleet {
    endpoints: Vec<Endpoint>,
    conns: Vec<Connection>,
    ids: Vec<ClientId>,
    received: Arc<AtomicU64>,
}

impl Fleet {
    /// Connects `n` clients on `rt` as `config` says and starts each one's
    /// reader (and heartbeat) there. On a current-thread runtime those run
    /// only while something blocks on it: clients that stall.
    ///
    /// # Errors
    /// The first client that could not connect.
    pub fn connect(rt: &Runtime, n: usize, config: &FleetConfig) -> Result<Self, FleetError> {
        let received = Arc::new(AtomicU64::new(0));
        let shared = if config.shared_socket {
            let _guard = rt.enter();
            Some(client_endpoint(&config.quinn)?)
        } else {
            None
        };
        let mut fleet = Self {
            endpoints: shared.iter().cloned().collect(),
            conns: Vec::with_capacity(n),
            ids: Vec::with_capacity(n),
            received: received.clone(),
        };
        let mut left = n;
        while left > 0 {
            let wave = left.min(config.wave);
            left -= wave;
            let tasks: Vec<_> = (0..wave)
                .map(|_| {
                    let (config, shared) = (config.clone(), shared.clone());
                    rt.spawn(async move {
                        let endpoint = match shared {
                            Some(endpoint) => endpoint,
                            None => client_endpoint(&config.quinn)?,
                        };
                        let (conn, id) = connect(&endpoint, &config).await?;
                        Ok::<_, FleetError>((endpoint, conn, id))
                    })
                })
                .collect();
            for task in tasks {
                // A connecting task only ends in a panic if the tool is broken.
                let (endpoint, conn, id) = rt
                    .block_on(task)
                    .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))?;
                rt.spawn(count_datagrams(conn.clone(), received.clone()));
                if let Some(every) = config.heartbeat {
                    rt.spawn(heartbeat(conn.clone(), every));
                }
                if shared.is_none() {
                    fleet.endpoints.push(endpoint);
                }
                fleet.ids.extend(id);
                fleet.conns.push(conn);
            }
        }
        Ok(fleet)
    }

    /// Datagrams the fleet has read so far, all clients together.
    #[must_use]
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// The ids a zao server gave the clients (empty for bare QUIC).
    #[must_use]
    pub fn ids(&self) -> &[ClientId] {
        &self.ids
    }

    /// How many clients there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    /// Whether the fleet has no client.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    /// Closes every connection (code 0) and drops the sockets.
    pub fn close(self) {
        for conn in &self.conns {
            conn.close(VarInt::from_u32(0), b"done");
        }
    }
}

/// The QUIC configuration of a zao client of `limits` that pins `hash`.
fn pinned(
    server: SocketAddr,
    hash: CertHash,
    limits: &Limits,
) -> Result<quinn::ClientConfig, StartError> {
    let mut config = ClientConfig::pinned(server, hash, Protocol::new());
    config.limits = limits.clone();
    config.quinn_client_config()
}

/// A client endpoint on a loopback socket of its own (in a runtime's
/// context).
fn client_endpoint(config: &quinn::ClientConfig) -> Result<Endpoint, FleetError> {
    let mut endpoint = Endpoint::client((Ipv4Addr::LOCALHOST, 0).into()).map_err(FleetError::Io)?;
    endpoint.set_default_client_config(config.clone());
    Ok(endpoint)
}

/// One connection, and zao's handshake on it when the config has a hello.
async fn connect(
    endpoint: &Endpoint,
    config: &FleetConfig,
) -> Result<(Connection, Option<ClientId>), FleetError> {
    let mut attempt = 0;
    let conn = loop {
        let connecting = endpoint
            .connect(config.server, "localhost")
            .map_err(FleetError::Connect)?;
        match tokio::time::timeout(HANDSHAKE_TIMEOUT, connecting).await {
            Ok(Ok(conn)) => break conn,
            Ok(Err(_)) if attempt + 1 < ATTEMPTS => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Ok(Err(e)) => return Err(FleetError::Connection(e)),
            Err(_) => return Err(FleetError::TimedOut),
        }
    };
    let Some(hello) = &config.hello else {
        return Ok((conn, None));
    };
    let id = handshake(&conn, hello).await?;
    Ok((conn, Some(id)))
}

/// zao's handshake (docs/WIRE.md §12.2): the framed hello up the control
/// stream, the framed reply down it.
async fn handshake(conn: &Connection, hello: &[u8]) -> Result<ClientId, FleetError> {
    let (mut send, mut recv) = conn.open_bi().await.map_err(FleetError::Connection)?;
    send.write_all(hello)
        .await
        .map_err(|_| FleetError::Stream)?;
    send.finish().map_err(|_| FleetError::Stream)?;
    let reply = recv
        .read_to_end(MAX_REPLY)
        .await
        .map_err(|_| FleetError::Stream)?;
    let mut frames = FrameDecoder::new(MAX_REPLY);
    frames.handle_bytes(&reply);
    let frame = frames
        .poll_frame()
        .ok()
        .flatten()
        .ok_or(FleetError::BadReply)?;
    match HelloReply::decode(&frame) {
        Ok(HelloReply::Welcome { client_id }) => Ok(ClientId(client_id)),
        Ok(HelloReply::Refused(reason)) => Err(FleetError::Refused(reason)),
        Err(_) => Err(FleetError::BadReply),
    }
}

async fn count_datagrams(conn: Connection, received: Arc<AtomicU64>) {
    while conn.read_datagram().await.is_ok() {
        received.fetch_add(1, Ordering::Relaxed);
    }
}

/// A zao client's heartbeat (docs/WIRE.md §12.7): every `every`, the
/// heartbeat frame on the client's reliable stream, which opens with its
/// channel header on the first beat, as a zao session opens it on first use.
async fn heartbeat(conn: Connection, every: Duration) {
    let mut stream = None;
    loop {
        tokio::time::sleep(every).await;
        let send = match &mut stream {
            Some(send) => send,
            None => {
                let Ok(mut send) = conn.open_uni().await else {
                    return;
                };
                let (header, n) = stream_header(Channel::RELIABLE);
                if send
                    .write_all(header.get(..n).unwrap_or_default())
                    .await
                    .is_err()
                {
                    return;
                }
                stream.insert(send)
            }
        };
        if send.write_all(&HEARTBEAT_FRAME).await.is_err() {
            return;
        }
    }
}
