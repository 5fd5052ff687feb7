//! The transport: zao messages over QUIC (quinn on tokio, rustls with ring).
//!
//! A [`Server`] and a [`Client`] each run quinn on a tokio runtime of their
//! own threads; their methods never block on the network. Poll events once
//! per tick, send messages, then [`Server::flush`] to send what was packed.

mod cert;
mod client;
mod conditioner;
mod config;
mod error;
mod link;
mod server;
mod stats;

pub use cert::{CertHash, Certificate, CertificateError, ServerTrust};
pub use client::{Client, ClientEvent};
pub use conditioner::{ConditionedSocket, ConditionerConfig};
pub use config::{AuthCallback, AuthRequest, ClientConfig, Limits, ServerConfig};
pub use error::StartError;
pub use link::{ClientId, DisconnectReason, SendError, Side};
pub use server::{Server, ServerEvent, Target};
pub use stats::ConnectionStats;

/// quinn and rustls, re-exported for CA roots, certificate types and tools
/// that work at the QUIC level.
pub use quinn;
pub use rustls;
