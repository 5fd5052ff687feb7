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
    /// Take browser clients too: WebTransport (HTTP/3, ALPN `h3`) on the
    /// same UDP port as native clients (ALPN `zao/1`). On by default. A
    /// browser accepts a certificate without a CA only if it is ECDSA and
    /// valid for at most 14 days ([`Certificate::self_signed`] is), pinned
    /// by its hash; see docs/WEB.md.
    #[cfg(feature = "webtransport")]
    pub webtransport: bool,
    /// Replace the certificate with a fresh self-signed one before it
    /// expires (browsers take a pinned certificate for 14 days at most);
    /// [`Server::certificate_hashes`](super::Server::certificate_hashes)
    /// gives the current hash and the one before it. `None` keeps the
    /// certificate given (a CA's, which needs no pinning).
    pub certificate_rotation: Option<CertificateRotation>,
    /// Serve the certificate hashes over plain HTTP on this TCP address
    /// (`GET /zao/certificate`, JSON, any origin), so a page on localhost
    /// can fetch what to pin. `None`: not served (a game's own web server
    /// can serve [`Server::certificate_hashes`](super::Server::certificate_hashes)).
    pub certificate_http: Option<SocketAddr>,
    /// Start refusing new clients as draining, until
    /// [`ServerCore::set_draining`](crate::proto::ServerCore::set_draining)`(false)`:
    /// a fleet's server admits no one before it is allocated
    /// (docs/FLEET.md). Default `false`.
    pub draining: bool,
}

/// How a server renews its self-signed certificate
/// ([`ServerConfig::certificate_rotation`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CertificateRotation {
    /// The names each new certificate is for.
    pub names: Vec<String>,
    /// Each certificate's validity (at most 14 days, what browsers take).
    pub validity: core::time::Duration,
    /// How long before a certificate expires its successor replaces it.
    pub renew_before: core::time::Duration,
}

impl Default for CertificateRotation {
    /// `localhost`, `127.0.0.1` and `::1`, 14 days, renewed two days ahead.
    fn default() -> Self {
        Self {
            names: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            validity: super::MAX_BROWSER_VALIDITY,
            renew_before: core::time::Duration::from_secs(2 * 24 * 60 * 60),
        }
    }
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
            .field("certificate_rotation", &self.certificate_rotation)
            .field("certificate_http", &self.certificate_http)
            .field("draining", &self.draining)
            .finish_non_exhaustive()
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
            #[cfg(feature = "webtransport")]
            webtransport: true,
            certificate_rotation: None,
            certificate_http: None,
            draining: false,
        }
    }

    /// A development server on `bind`: a self-signed certificate for
    /// `localhost`, `127.0.0.1` and `::1` that browsers pin
    /// ([`Certificate::self_signed`]), renewed before it expires
    /// ([`CertificateRotation::default`]).
    ///
    /// # Errors
    /// [`CertificateError`](super::CertificateError) if the key cannot be made.
    pub fn development(
        bind: SocketAddr,
        protocol: Protocol,
    ) -> Result<Self, super::CertificateError> {
        let rotation = CertificateRotation::default();
        let names: Vec<&str> = rotation.names.iter().map(String::as_str).collect();
        let certificate = Certificate::self_signed_for(&names, rotation.validity)?;
        let mut config = Self::new(bind, certificate, protocol);
        config.certificate_rotation = Some(rotation);
        Ok(config)
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
    /// Connect over WebTransport (HTTP/3) as a browser does, to this path
    /// (`"/"`), instead of raw QUIC: for tests of a server's browser side
    /// from Rust, and clients behind networks that pass only HTTP/3.
    #[cfg(feature = "webtransport")]
    pub webtransport: Option<String>,
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
            #[cfg(feature = "webtransport")]
            webtransport: None,
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
