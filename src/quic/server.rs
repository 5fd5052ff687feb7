//! The server: a quinn endpoint on a tokio runtime of its own, accepting
//! connections as the admission rules say and driving one session per
//! connection. The application side is [`ServerCore`], which `Server`
//! dereferences to.

use core::ops::{Deref, DerefMut};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn::{AsyncUdpSocket, Endpoint, EndpointConfig, Incoming, VarInt};

use super::driver::{Capture, drive};
use super::link::Web;
use super::{CertHash, ConditionedSocket, ServerConfig, StartError};
use crate::endpoint::{link_closed, server_config};
use crate::proto::{
    AuthCallback, AuthError, CloseCode, IncomingVerdict, ServerCore, ServerShared, SessionConfig,
};

/// A zao server over QUIC: its methods never block on the network. Poll
/// it once per tick ([`ServerCore::poll_event`]), send, then
/// [`ServerCore::flush`].
pub struct Server {
    core: ServerCore,
    #[cfg_attr(not(feature = "inspect"), allow(dead_code))]
    capture: Capture,
    endpoint: Endpoint,
    runtime: Option<tokio::runtime::Runtime>,
    auth_runtime: Option<tokio::runtime::Runtime>,
    local_addr: SocketAddr,
    hashes: super::publish::Hashes,
    certificate_http: Option<SocketAddr>,
}

impl core::fmt::Debug for Server {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Server")
            .field("local_addr", &self.local_addr)
            .field("certificates", &self.hashes.get())
            .finish_non_exhaustive()
    }
}

impl Deref for Server {
    type Target = ServerCore;

    fn deref(&self) -> &ServerCore {
        &self.core
    }
}

impl DerefMut for Server {
    fn deref_mut(&mut self) -> &mut ServerCore {
        &mut self.core
    }
}

impl Server {
    /// Binds and starts serving.
    ///
    /// # Errors
    /// [`StartError`] if the limits are invalid, or the runtime, the socket
    /// (an address in use) or the TLS setup fails.
    pub fn start(config: ServerConfig) -> Result<Self, StartError> {
        config.limits.validate()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.worker_threads.max(1))
            .thread_name("zao-server")
            .enable_all()
            .build()?;
        // Auth callbacks run here, so a slow one never holds up packets.
        let auth_runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("zao-auth")
            .enable_all()
            .build()?;
        let alpns = alpns(&config);
        let server_config = server_config(
            &config.certificate,
            &config.limits,
            &config.protocol,
            &alpns,
        )?;
        #[cfg(feature = "webtransport")]
        let web = if config.webtransport {
            Web::Accept
        } else {
            Web::Off
        };
        #[cfg(not(feature = "webtransport"))]
        let web = Web::Off;
        let _guard = runtime.enter();
        let socket = std::net::UdpSocket::bind(config.bind)?;
        let quinn_runtime: Arc<dyn quinn::Runtime> = Arc::new(quinn::TokioRuntime);
        let mut socket: Arc<dyn AsyncUdpSocket> = quinn_runtime.wrap_udp_socket(socket)?;
        if let Some(conditions) = config.conditioner {
            socket = ConditionedSocket::new(socket, conditions);
        }
        let endpoint = Endpoint::new_with_abstract_socket(
            EndpointConfig::default(),
            Some(server_config),
            socket,
            quinn_runtime,
        )?;
        let local_addr = endpoint.local_addr()?;
        #[cfg(feature = "inspect")]
        let capture = super::capture::open(
            config.capture.as_deref(),
            config.capture_max_bytes,
            crate::proto::Role::Server,
            local_addr.port(),
            &config.protocol,
        )?;
        #[cfg(not(feature = "inspect"))]
        let capture = None;
        let hashes = super::publish::Hashes::new(config.certificate.sha256());
        if let Some(rotation) = config.certificate_rotation.clone() {
            tokio::spawn(super::publish::rotate(
                endpoint.clone(),
                hashes.clone(),
                super::publish::Renewal {
                    rotation,
                    limits: config.limits.clone(),
                    protocol: config.protocol.clone(),
                    alpns,
                },
            ));
        }
        let certificate_http = match config.certificate_http {
            Some(addr) => {
                let listener = super::publish::bind(addr)?;
                let bound = listener.local_addr()?;
                tokio::spawn(super::publish::serve(
                    listener,
                    hashes.clone(),
                    local_addr.port(),
                ));
                Some(bound)
            }
            None => None,
        };
        let mut session = SessionConfig::new(config.protocol, config.limits);
        session.tap = capture.is_some();
        let auth = config
            .auth
            .map(|callback| off_the_network(callback, auth_runtime.handle().clone()));
        let shared = ServerShared::new(session, auth);
        // Before the first connection is accepted.
        ServerCore::new(shared.clone()).set_draining(config.draining);
        tokio::spawn(accept_loop(
            endpoint.clone(),
            shared.clone(),
            capture.clone(),
            web,
        ));
        drop(_guard);
        Ok(Self {
            core: ServerCore::new(shared),
            capture,
            endpoint,
            runtime: Some(runtime),
            auth_runtime: Some(auth_runtime),
            local_addr,
            hashes,
            certificate_http,
        })
    }

    /// The address the server listens on.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The SHA-256 of the server's current certificate, for clients to
    /// pin.
    #[must_use]
    pub fn certificate_hash(&self) -> CertHash {
        self.hashes
            .get()
            .first()
            .copied()
            .unwrap_or(CertHash([0; 32]))
    }

    /// The hashes a client may pin now: the current certificate's, then,
    /// once it was renewed
    /// ([`ServerConfig::certificate_rotation`](super::ServerConfig::certificate_rotation)),
    /// the previous one's (still served to open connections). A browser
    /// takes the list as `serverCertificateHashes`.
    #[must_use]
    pub fn certificate_hashes(&self) -> Vec<CertHash> {
        self.hashes.get()
    }

    /// Where the certificate hashes are served over HTTP
    /// ([`ServerConfig::certificate_http`](super::ServerConfig::certificate_http)),
    /// at `/zao/certificate`.
    #[must_use]
    pub fn certificate_http(&self) -> Option<SocketAddr> {
        self.certificate_http
    }

    /// Closes every connection ("server shutting down") and waits until
    /// the closes are delivered (the endpoint is idle) or
    /// [`CLOSE_LINGER`] passes, then stops the runtime. Dropping the
    /// server does the same in the background and returns at once (a game
    /// loop drops; a tool or a test that must know the clients were told
    /// calls this).
    pub fn shutdown(mut self) {
        if let Some(stopping) = self.stop() {
            let _ = stopping.join();
        }
        // The closes are recorded: the capture is whole when this returns.
        #[cfg(feature = "inspect")]
        if let Some(capture) = &self.capture {
            super::capture::finish(capture, true);
        }
    }

    fn stop(&mut self) -> Option<std::thread::JoinHandle<()>> {
        self.core.close_all("server shutting down");
        let stopping = stop_endpoint(&self.endpoint, &mut self.runtime, b"server shutting down");
        if let Some(auth) = self.auth_runtime.take() {
            auth.shutdown_background();
        }
        stopping
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // In the background: a frame must not wait for the network.
        let _ = self.stop();
    }
}

/// The ALPNs a server takes: zao's, and HTTP/3's when it takes browsers.
fn alpns(config: &ServerConfig) -> Vec<&'static [u8]> {
    #[cfg(feature = "webtransport")]
    if config.webtransport {
        return vec![crate::endpoint::ALPN, crate::endpoint::H3];
    }
    let _ = config;
    vec![crate::endpoint::ALPN]
}

/// The auth callback, each answer computed on the auth runtime: a slow or
/// blocking callback never holds up a connection's packets. The pump waits
/// for the answer like any other future.
fn off_the_network(callback: AuthCallback, runtime: tokio::runtime::Handle) -> AuthCallback {
    Arc::new(move |request| {
        let task = runtime.spawn(callback(request));
        Box::pin(async move {
            task.await.unwrap_or_else(|_| {
                Err(AuthError::Unavailable(
                    "the auth callback panicked".to_owned(),
                ))
            })
        })
    })
}

async fn accept_loop(endpoint: Endpoint, shared: Arc<ServerShared>, capture: Capture, web: Web) {
    while let Some(incoming) = endpoint.accept().await {
        let addr = incoming.remote_address();
        match shared.handle_incoming(
            addr,
            incoming.remote_address_validated(),
            incoming.may_retry(),
        ) {
            IncomingVerdict::Accept => {
                tokio::spawn(connection(
                    incoming,
                    shared.clone(),
                    capture.clone(),
                    web.clone(),
                ));
            }
            IncomingVerdict::Retry => {
                if let Err(e) = incoming.retry() {
                    e.into_incoming().refuse();
                }
            }
            IncomingVerdict::Refuse => incoming.refuse(),
        }
    }
}

/// One accepted connection: its session exists from here, so the
/// session's handshake deadline covers QUIC's handshake too (the pump
/// abandons the handshake when the session closes at it).
async fn connection(incoming: Incoming, shared: Arc<ServerShared>, capture: Capture, web: Web) {
    let now = Instant::now();
    let validated = incoming.remote_address_validated();
    let cell = shared.new_session(incoming.remote_address(), validated, now);
    match incoming.accept() {
        Ok(connecting) => drive(connecting, None, cell, Some(shared), capture, web).await,
        Err(e) => {
            cell.lock()
                .handle_connection_lost(now, link_closed(&e).into());
            shared.after_drive(&cell);
        }
    }
}

/// The longest a stopping endpoint waits for its connections' closes to be
/// delivered (QUIC's closing period: about three probe timeouts, some
/// 100 ms over loopback) before its runtime stops.
pub const CLOSE_LINGER: Duration = Duration::from_secs(2);

/// Closes an endpoint's connections with `reason`, then, on a thread of its
/// own, lets the runtime run until the closes are sent and acknowledged or
/// dropped (`Endpoint::wait_idle`, at most [`CLOSE_LINGER`]) and shuts it
/// down. Returns that thread, for a caller that waits; nothing here blocks.
pub(super) fn stop_endpoint(
    endpoint: &Endpoint,
    runtime: &mut Option<tokio::runtime::Runtime>,
    reason: &[u8],
) -> Option<std::thread::JoinHandle<()>> {
    endpoint.close(
        VarInt::from_u64(CloseCode::Normal.to_wire()).unwrap_or(VarInt::MAX),
        reason,
    );
    let runtime = runtime.take()?;
    let endpoint = endpoint.clone();
    let linger = move || {
        runtime.block_on(async {
            let _ = tokio::time::timeout(CLOSE_LINGER, endpoint.wait_idle()).await;
        });
        drop(endpoint);
        runtime.shutdown_background();
    };
    match std::thread::Builder::new()
        .name("zao-stop".to_owned())
        .spawn(linger)
    {
        Ok(thread) => Some(thread),
        // No thread to spare: the closes were queued; stop without waiting.
        Err(e) => {
            tracing::debug!("zao: no thread to finish the closes: {e}");
            None
        }
    }
}
