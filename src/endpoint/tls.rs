//! The QUIC configurations zao runs: TLS 1.3 with ring, zao's ALPN, the
//! client's trust, and the transport settings of the limits. The simulated
//! network builds its endpoints from the same functions.

use std::sync::Arc;

use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};

use super::cert::{PinnedVerifier, provider};
use super::params::transport_config;
use super::{CertHash, Certificate, ServerTrust, StartError};
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
pub(crate) type Pinned = Option<(Arc<PinnedVerifier>, Vec<CertHash>)>;

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
    mismatch.unwrap_or_else(|| super::link_closed(err).into())
}

/// The session's name for a quinn stream.
pub(crate) fn stream_id(id: quinn::StreamId) -> StreamId {
    StreamId(quinn::VarInt::from(id).into_inner())
}
