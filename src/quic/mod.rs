//! The transport: zao sessions over QUIC (quinn on tokio, rustls with ring).
//!
//! A [`Server`] and a [`Client`] each run quinn on a tokio runtime of their
//! own threads and drive one [`Session`](crate::proto::Session) per
//! connection; every protocol decision is the session's. Their methods never
//! block on the network: poll events once per tick, send messages, then
//! flush what was packed. `Server` and `Client` dereference to
//! [`ServerCore`] and
//! [`ClientCore`], the same API the simulated
//! network (`zao::sim`) gives.

#[cfg(feature = "inspect")]
mod capture;
mod client;
mod conditioner;
mod config;
mod driver;
mod link;
mod publish;
mod server;
mod tls_impls;
#[cfg(feature = "webtransport")]
mod web;

#[cfg(feature = "inspect")]
pub use capture::{CAPTURE_CLIENT_ENV, CAPTURE_ENV, DEFAULT_CAPTURE_MAX_BYTES};
pub use client::Client;
pub use conditioner::{ConditionedSocket, ConditionerConfig};
pub use config::{CertificateRotation, ClientConfig, ServerConfig};
pub use publish::CERTIFICATE_PATH;
pub use server::{CLOSE_LINGER, Server};

/// Certificates and the start errors, shared with the simulated network.
pub use crate::endpoint::{
    CertHash, Certificate, CertificateError, MAX_BROWSER_VALIDITY, ServerTrust, StartError,
};

/// What the transport's events and errors carry, re-exported for one `use`.
pub use crate::proto::{
    AuthCallback, AuthError, AuthRequest, ClientCore, ClientEvent, ClientId, CloseCode, ClosedBy,
    ConnectionStats, DisconnectReason, Identity, Limits, SendError, ServerCore, ServerEvent,
    Target, TransportError, WaitError,
};

/// quinn and rustls, re-exported for CA roots, certificate types and tools
/// that work at the QUIC level.
pub use quinn;
pub use rustls;
