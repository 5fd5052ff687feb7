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

/// HTTP/3's ALPN, which a WebTransport client offers.
#[cfg(feature = "webtransport")]
pub(crate) const H3: &[u8] = b"h3";

/// Streams a browser keeps open beside zao's over WebTransport: the
/// CONNECT request (bidirectional), and HTTP/3's control stream and
/// QPACK's two (unidirectional), each way.
#[cfg(feature = "webtransport")]
pub(crate) const BROWSER_STREAMS: (u32, u32) = (1, 3);

/// quinn's server configuration for `certificate`, `limits` and `protocol`;
/// with `alpns` the ALPNs it takes (zao's, and HTTP/3's for WebTransport).
pub(crate) fn server_config(
    certificate: &Certificate,
    limits: &Limits,
    protocol: &Protocol,
    alpns: &[&[u8]],
) -> Result<quinn::ServerConfig, StartError> {
    let mut config = quinn::ServerConfig::with_crypto(server_crypto(certificate, alpns)?);
    apply_limits(&mut config, limits, protocol);
    // A browser checks the stream limits of the handshake itself: fewer
    // than HTTP/3's three unidirectional streams and Chromium aborts
    // (QUIC_ZERO_RTT_RESUMPTION_LIMIT_REDUCED, "new unidirectional limit 1
    // decreases the current limit: 3"), so raising them after the handshake
    // is too late. A raw zao peer may open the extra streams, and its
    // session refuses them: it holds the peer to the protocol's allowance.
    #[cfg(feature = "webtransport")]
    if alpns.contains(&H3) {
        let (bidi, uni) = BROWSER_STREAMS;
        let mut transport = transport_config(limits, protocol);
        transport.max_concurrent_bidi_streams(quinn::VarInt::from_u32(1 + bidi));
        transport.max_concurrent_uni_streams(quinn::VarInt::from_u32(
            limits.stream_allowance(protocol).saturating_add(uni),
        ));
        config.transport_config(Arc::new(transport));
    }
    Ok(config)
}

/// TLS for a server presenting `certificate`, taking `alpns` in this order
/// of preference (rustls picks the first the client also offers).
pub(crate) fn server_crypto(
    certificate: &Certificate,
    alpns: &[&[u8]],
) -> Result<Arc<QuicServerConfig>, StartError> {
    let mut tls = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(certificate.chain.clone(), certificate.key.clone_key())?;
    tls.alpn_protocols = alpns.iter().map(|a| a.to_vec()).collect();
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
    // No address-validation tokens for later connections: admission
    // counts an attempt as proven only when it answered this server's
    // Retry. (quinn's default, set here because a dependency enabling
    // quinn's `bloom` feature changes the default to sending two.)
    let mut tokens = quinn::ValidationTokenConfig::default();
    tokens.sent(0).log(Arc::new(quinn::NoneTokenLog));
    config.validation_token_config(tokens);
}

/// The pinned verifier a client uses, kept to report a mismatch.
pub(crate) type Pinned = Option<(Arc<PinnedVerifier>, Vec<CertHash>)>;

/// quinn's client configuration for `trust` and `limits`.
pub(crate) fn client_config(
    trust: &ServerTrust,
    limits: &Limits,
    protocol: &Protocol,
) -> Result<(quinn::ClientConfig, Pinned), StartError> {
    client_config_for(trust, limits, protocol, ALPN)
}

/// As [`client_config`], offering `alpn` (HTTP/3's for a WebTransport
/// client).
pub(crate) fn client_config_for(
    trust: &ServerTrust,
    limits: &Limits,
    protocol: &Protocol,
    alpn: &[u8],
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
    tls.alpn_protocols = vec![alpn.to_vec()];
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
