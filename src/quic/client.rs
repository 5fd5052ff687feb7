//! The client: a quinn endpoint on a tokio runtime of its own, driving the
//! one session of its connection. The application side is [`ClientCore`],
//! which `Client` dereferences to.

use core::ops::{Deref, DerefMut};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn::{AsyncUdpSocket, Endpoint, EndpointConfig};

use super::driver::{Capture, drive};
use super::link::Web;
use super::server::stop_endpoint;
use super::{ClientConfig, ConditionedSocket, StartError};
use crate::endpoint::{Pinned, client_config_for, connect_error};
use crate::proto::{ClientCore, ClientId, Session, SessionCell, SessionConfig, WaitError};

/// A zao client over QUIC: connects in the background; poll it once per
/// tick ([`ClientCore::poll_event`]).
pub struct Client {
    core: ClientCore,
    endpoint: Endpoint,
    runtime: Option<tokio::runtime::Runtime>,
    #[cfg_attr(not(feature = "inspect"), allow(dead_code))]
    capture: Capture,
}

impl core::fmt::Debug for Client {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Client")
            .field("core", &self.core)
            .finish_non_exhaustive()
    }
}

impl Deref for Client {
    type Target = ClientCore;

    fn deref(&self) -> &ClientCore {
        &self.core
    }
}

impl DerefMut for Client {
    fn deref_mut(&mut self) -> &mut ClientCore {
        &mut self.core
    }
}

impl Client {
    /// Starts connecting to `config.server`; the outcome arrives as
    /// `ClientEvent::Connected` or `ClientEvent::Disconnected`, within the
    /// connect timeout (`Limits::connect_timeout`: an attempt that does
    /// not finish its handshake in time is followed by another).
    ///
    /// # Errors
    /// [`StartError`] if the limits are invalid, or the runtime, the local
    /// socket or the TLS setup fails.
    pub fn connect(config: ClientConfig) -> Result<Self, StartError> {
        config.limits.validate()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("zao-client")
            .enable_all()
            .build()?;
        #[cfg(feature = "webtransport")]
        let (alpn, web) = match &config.webtransport {
            Some(path) => {
                let url = format!(
                    "https://{}:{}{path}",
                    config.server_name,
                    config.server.port()
                );
                let url = url::Url::parse(&url).map_err(|e| {
                    StartError::Io(std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
                })?;
                let allowance = config.limits.stream_allowance(&config.protocol);
                (crate::endpoint::H3, Web::Connect(url, allowance))
            }
            None => (crate::endpoint::ALPN, Web::Off),
        };
        #[cfg(not(feature = "webtransport"))]
        let (alpn, web) = (crate::endpoint::ALPN, Web::Off);
        let (quinn_config, pinned) =
            client_config_for(&config.trust, &config.limits, &config.protocol, alpn)?;
        let _guard = runtime.enter();
        let server = config.server;
        let bind: SocketAddr = match (server.is_ipv6(), server.ip().is_loopback()) {
            (false, true) => (Ipv4Addr::LOCALHOST, 0).into(),
            (true, true) => (Ipv6Addr::LOCALHOST, 0).into(),
            (false, false) => (Ipv4Addr::UNSPECIFIED, 0).into(),
            (true, false) => (Ipv6Addr::UNSPECIFIED, 0).into(),
        };
        let socket = std::net::UdpSocket::bind(bind)?;
        let quinn_runtime: Arc<dyn quinn::Runtime> = Arc::new(quinn::TokioRuntime);
        let mut socket: Arc<dyn AsyncUdpSocket> = quinn_runtime.wrap_udp_socket(socket)?;
        if let Some(conditions) = config.conditioner {
            socket = ConditionedSocket::new(socket, conditions);
        }
        let endpoint = Endpoint::new_with_abstract_socket(
            EndpointConfig::default(),
            None,
            socket,
            quinn_runtime,
        )?;
        #[cfg(feature = "inspect")]
        let capture = super::capture::open(
            config.capture.as_deref(),
            config.capture_max_bytes,
            crate::proto::Role::Client,
            endpoint.local_addr()?.port(),
            &config.protocol,
        )?;
        #[cfg(not(feature = "inspect"))]
        let capture = None;
        let mut session_config = SessionConfig::new(config.protocol.clone(), config.limits.clone());
        session_config.token.clone_from(&config.token);
        session_config.tap = capture.is_some();
        session_config.retry = true;
        let cell = SessionCell::new(Session::client(
            Arc::new(session_config),
            server,
            Instant::now(),
        ));
        tokio::spawn(run(
            endpoint.clone(),
            quinn_config,
            config,
            cell.clone(),
            pinned,
            capture.clone(),
            web,
        ));
        drop(_guard);
        Ok(Self {
            core: ClientCore::new(cell),
            endpoint,
            runtime: Some(runtime),
            capture,
        })
    }

    /// Blocks until connected or refused, up to `timeout`, without taking
    /// any event. For tests, tools and examples; a game polls instead. It
    /// sleeps until the connection's driver changes the session, never
    /// polls.
    ///
    /// # Errors
    /// [`WaitError::Closed`] with the reason if the connection failed (the
    /// connect deadline of the limits is one), or [`WaitError::TimedOut`]
    /// once `timeout` passed with the handshake still under way.
    pub fn wait_connected(&self, timeout: Duration) -> Result<ClientId, WaitError> {
        self.core
            .cell()
            .wait_until(timeout, |session| {
                if let Some(reason) = session.close_reason() {
                    return Some(Err(WaitError::Closed(reason.clone())));
                }
                session
                    .is_open()
                    .then_some(session.client_id())
                    .flatten()
                    .map(Ok)
            })
            .unwrap_or(Err(WaitError::TimedOut(timeout)))
    }

    /// Closes the connection ("client shutting down") and waits until the
    /// close is delivered or [`CLOSE_LINGER`](super::CLOSE_LINGER) passes,
    /// then stops the runtime. Dropping the client does the same in the
    /// background and returns at once.
    pub fn shutdown(mut self) {
        if let Some(stopping) = self.stop() {
            let _ = stopping.join();
        }
        // The close is recorded: the capture is whole when this returns.
        #[cfg(feature = "inspect")]
        if let Some(capture) = &self.capture {
            super::capture::finish(capture, true);
        }
    }

    fn stop(&mut self) -> Option<std::thread::JoinHandle<()>> {
        stop_endpoint(&self.endpoint, &mut self.runtime, b"client shutting down")
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // In the background: a frame must not wait for the network.
        let _ = self.stop();
    }
}

/// Connects, then drives the connection; the session's handshake deadline
/// covers QUIC's handshake (the pump abandons it at the deadline). A
/// session whose attempt ended for a reason a new attempt may get past (a
/// deadline, QUIC's timeout, a busy or full server) asks for one
/// ([`Session::poll_retry`](crate::proto::Session::poll_retry)): it gets a
/// new connection at the instant it names.
async fn run(
    endpoint: Endpoint,
    quinn_config: quinn::ClientConfig,
    config: ClientConfig,
    cell: Arc<SessionCell>,
    pinned: Pinned,
    capture: Capture,
    web: Web,
) {
    loop {
        match endpoint.connect_with(quinn_config.clone(), config.server, &config.server_name) {
            Ok(connecting) => {
                drive(
                    connecting,
                    pinned.clone(),
                    cell.clone(),
                    None,
                    capture.clone(),
                    web.clone(),
                )
                .await;
            }
            Err(e) => {
                cell.lock()
                    .handle_connection_lost(Instant::now(), connect_error(&e));
                cell.driven();
            }
        }
        let Some(at) = cell.lock().poll_retry() else {
            return;
        };
        tokio::time::sleep_until(at.into()).await;
        cell.lock().restart(Instant::now());
        cell.driven();
    }
}
