//! Configuration of servers and clients, and the QUIC settings zao runs.

use core::fmt;
use std::net::SocketAddr;

use crate::proto::{AuthCallback, Limits, Protocol};

use super::{CertHash, Certificate, ConditionerConfig, ServerTrust};

/// A server's configuration. Build it with [`ServerConfig::new`] and set
/// the fields you need.
#[derive(Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Address to bind, e.g. `127.0.0.1:0`.
    pub bind: SocketAddr,
    /// The certificate to present.
    pub certificate: Certificate,
    /// The message types this server exchanges.
    pub protocol: Protocol,
    /// Resource limits.
    pub limits: Limits,
    /// Decides who each client is (asynchronously, within the handshake
    /// deadline); `None` admits every client whose protocol matches.
    pub auth: Option<AuthCallback>,
    /// Runtime threads for quinn and the connection drivers.
    pub worker_threads: usize,
    /// Simulated link conditions on the server's outgoing packets (tests,
    /// demos).
    pub conditioner: Option<ConditionerConfig>,
    /// Capture every connection's messages to this file (docs/CAPTURE.md);
    /// `None`: the path in `ZAO_CAPTURE`, if set.
    #[cfg(feature = "inspect")]
    pub capture: Option<std::path::PathBuf>,
    /// The most bytes the capture file may hold; there it stops, with a
    /// logged reason ([`DEFAULT_CAPTURE_MAX_BYTES`](super::DEFAULT_CAPTURE_MAX_BYTES), 1 GiB).
    #[cfg(feature = "inspect")]
    pub capture_max_bytes: u64,
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
            #[cfg(feature = "inspect")]
            capture: None,
            #[cfg(feature = "inspect")]
            capture_max_bytes: super::DEFAULT_CAPTURE_MAX_BYTES,
        }
    }
}

/// A client's configuration. Build it with [`ClientConfig::pinned`] or
/// [`ClientConfig::new`] and set the fields you need.
#[derive(Clone, Debug)]
#[non_exhaustive]
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
    /// Capture the connection's messages to this file (docs/CAPTURE.md);
    /// `None`: the path in `ZAO_CAPTURE_CLIENT`, if set.
    #[cfg(feature = "inspect")]
    pub capture: Option<std::path::PathBuf>,
    /// The most bytes the capture file may hold; there it stops, with a
    /// logged reason ([`DEFAULT_CAPTURE_MAX_BYTES`](super::DEFAULT_CAPTURE_MAX_BYTES), 1 GiB).
    #[cfg(feature = "inspect")]
    pub capture_max_bytes: u64,
}

impl ClientConfig {
    /// A client of `server` named `server_name`, trusting it by `trust`.
    #[must_use]
    pub fn new(
        server: SocketAddr,
        server_name: impl Into<String>,
        trust: ServerTrust,
        protocol: Protocol,
    ) -> Self {
        Self {
            server,
            server_name: server_name.into(),
            trust,
            protocol,
            token: None,
            limits: Limits::default(),
            conditioner: None,
            #[cfg(feature = "inspect")]
            capture: None,
            #[cfg(feature = "inspect")]
            capture_max_bytes: super::DEFAULT_CAPTURE_MAX_BYTES,
        }
    }

    /// A client of `server` that pins the server certificate's hash.
    #[must_use]
    pub fn pinned(server: SocketAddr, hash: CertHash, protocol: Protocol) -> Self {
        Self::new(
            server,
            "localhost",
            ServerTrust::PinnedSha256(vec![hash]),
            protocol,
        )
    }
}
