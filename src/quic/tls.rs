//! The QUIC configurations zao runs: TLS 1.3 with ring, zao's ALPN, the
//! client's trust, and the transport settings of the limits. The simulated
//! network builds its endpoints from the same functions.

use std::sync::Arc;

use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};

use super::cert::{PinnedVerifier, provider};
use super::config::transport_config;
use super::{Certificate, ServerTrust, StartError};
use crate::proto::{Limits, Protocol, StreamId};

/// ALPN protocol id of zao over QUIC.
pub(crate) const ALPN: &[u8] = b"zao/1";

/// quinn's server configuration for `certificate`, `limits` and `protocol`.
pub(crate) fn server_config(
    certificate: &Certificate,
    limits: &Limits,
    protocol: &Protocol,
) -> Result<quinn::ServerConfig, StartError> {
    let mut config = quinn::ServerConfig::with_crypto(server_crypto(certificate)?);
    apply_limits(&mut config, limits, protocol);
    Ok(config)
}

/// TLS for a server presenting `certificate`.
pub(crate) fn server_crypto(
    certificate: &Certificate,
) -> Result<Arc<QuicServerConfig>, StartError> {
    let mut tls = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(certificate.chain.clone(), certificate.key.clone_key())?;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    QuicServerConfig::try_from(tls)
        .map(Arc::new)
        .map_err(|_| StartError::NoQuicCipherSuite)
}

/// The transport settings and connection-attempt bound of `limits`.
pub(crate) fn apply_limits(config: &mut quinn::ServerConfig, limits: &Limits, protocol: &Protocol) {
    config.transport_config(Arc::new(transport_config(limits, protocol)));
    // Connection attempts quinn holds before zao decides on them: zao
    // decides at once, so a small multiple of the pending limit suffices
    // and a flood cannot grow memory (S8).
    config.max_incoming(limits.max_pending_handshakes.saturating_mul(2).max(1));
}

/// The pinned verifier a client uses, kept to report a mismatch.
pub(crate) type Pinned = Option<(Arc<PinnedVerifier>, Vec<super::CertHash>)>;

/// quinn's client configuration for `trust` and `limits`.
pub(crate) fn client_config(
    trust: &ServerTrust,
    limits: &Limits,
    protocol: &Protocol,
) -> Result<(quinn::ClientConfig, Pinned), StartError> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?;
    let mut pinned = None;
    let mut tls = match trust {
        ServerTrust::PinnedSha256(hashes) => {
            let verifier = Arc::new(PinnedVerifier::new(hashes.clone()));
            pinned = Some((verifier.clone(), hashes.clone()));
            builder
                .dangerous()
                .with_custom_certificate_verifier(verifier)
                .with_no_client_auth()
        }
        ServerTrust::CaRoots(roots) => builder
            .with_root_certificates(roots.clone())
            .with_no_client_auth(),
    };
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let crypto = QuicClientConfig::try_from(tls).map_err(|_| StartError::NoQuicCipherSuite)?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    config.transport_config(Arc::new(transport_config(limits, protocol)));
    Ok((config, pinned))
}

/// What a failed QUIC handshake means: a pinned certificate that did not
/// match, or QUIC's own reason.
pub(crate) fn connect_failure(
    pinned: &Pinned,
    err: &quinn::ConnectionError,
) -> crate::proto::DisconnectReason {
    let mismatch = pinned.as_ref().and_then(|(verifier, expected)| {
        let presented = verifier.mismatch.lock().ok().and_then(|m| *m)?;
        Some(crate::proto::DisconnectReason::CertificateMismatch {
            expected: expected.clone(),
            presented: Some(presented),
        })
    });
    mismatch.unwrap_or_else(|| super::error::disconnect_reason(err))
}

/// The session's name for a quinn stream.
pub(crate) fn stream_id(id: quinn::StreamId) -> StreamId {
    StreamId(quinn::VarInt::from(id).into_inner())
}

impl super::ClientConfig {
    /// The quinn client configuration zao uses for this config (TLS, trust,
    /// ALPN, limits), for tools that speak to a zao server at the QUIC level.
    ///
    /// # Errors
    /// [`StartError::Tls`] if rustls refuses the configuration.
    pub fn quinn_client_config(&self) -> Result<quinn::ClientConfig, StartError> {
        client_config(&self.trust, &self.limits, &self.protocol).map(|(c, _)| c)
    }
}

impl Certificate {
    /// The quinn server configuration zao uses for this certificate,
    /// `limits` and `protocol`'s channels, for tools that compare against
    /// bare quinn.
    ///
    /// # Errors
    /// [`StartError::Tls`] if rustls refuses the certificate.
    pub fn quinn_server_config(
        &self,
        limits: &Limits,
        protocol: &Protocol,
    ) -> Result<quinn::ServerConfig, StartError> {
        server_config(self, limits, protocol)
    }
}
