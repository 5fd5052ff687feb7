//! What every QUIC endpoint of zao's over quinn-proto needs, whichever I/O
//! drives it: certificates and TLS (rustls with ring), the transport
//! parameters of the limits, and how QUIC's connection errors read. The
//! quinn transport (`zao::quic`) and the simulated network (`zao::sim`)
//! both build on it; neither imports the other.

mod cert;
mod error;
mod params;
mod tls;

pub use cert::{CertHash, Certificate, CertificateError, MAX_BROWSER_VALIDITY, ServerTrust};
pub use error::StartError;

pub(crate) use error::{connect_error, link_closed};
pub(crate) use tls::{
    ALPN, Pinned, client_config, client_config_for, connect_failure, server_config, stream_id,
};
#[cfg(feature = "webtransport")]
pub(crate) use tls::{BROWSER_STREAMS, H3};
#[cfg(feature = "sim")]
pub(crate) use tls::{apply_limits, server_crypto};
