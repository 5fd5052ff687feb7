//! Certificates: a self-signed development certificate whose SHA-256 a
//! client pins (as WebTransport's `serverCertificateHashes` does), or
//! verification against CA roots.

use core::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

pub use crate::proto::CertHash;

/// The longest validity a browser accepts for a certificate it pins by
/// hash (WebTransport's `serverCertificateHashes`): 14 days.
pub const MAX_BROWSER_VALIDITY: Duration = Duration::from_secs(14 * 24 * 60 * 60);

/// How far back a new certificate's validity starts, for clocks a little
/// behind ours (inside its validity, not added to it).
const CLOCK_SKEW: Duration = Duration::from_secs(60 * 60);

/// A certificate chain and its private key, for a server.
#[derive(Debug)]
pub struct Certificate {
    /// The chain, leaf first.
    pub chain: Vec<CertificateDer<'static>>,
    /// The leaf's private key.
    pub key: PrivateKeyDer<'static>,
}

impl Clone for Certificate {
    fn clone(&self) -> Self {
        Self {
            chain: self.chain.clone(),
            key: self.key.clone_key(),
        }
    }
}

/// Why a certificate could not be made.
#[derive(Debug)]
#[non_exhaustive]
pub enum CertificateError {
    /// rcgen could not generate the key or sign the certificate.
    Generate(rcgen::Error),
}

impl fmt::Display for CertificateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Generate(e) => write!(f, "certificate: {e}"),
        }
    }
}

impl std::error::Error for CertificateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Generate(e) => Some(e),
        }
    }
}

impl Certificate {
    /// A new self-signed certificate for `names` (e.g. `["localhost"]`),
    /// for development: clients pin its [`sha256`](Self::sha256). It is
    /// one a browser pins through WebTransport's `serverCertificateHashes`:
    /// ECDSA P-256, with its names as extensions, valid for
    /// [`MAX_BROWSER_VALIDITY`] (14 days) from an hour ago (clock skew). A
    /// server that runs longer renews it
    /// ([`ServerConfig::certificate_rotation`](crate::quic::ServerConfig::certificate_rotation)).
    ///
    /// # Errors
    /// [`CertificateError`] if key generation fails.
    pub fn self_signed(names: &[&str]) -> Result<Self, CertificateError> {
        Self::self_signed_for(names, MAX_BROWSER_VALIDITY)
    }

    /// As [`self_signed`](Self::self_signed), valid for `validity` (at most
    /// [`MAX_BROWSER_VALIDITY`]; longer is cut to it), the hour of clock
    /// skew allowed for included.
    ///
    /// # Errors
    /// [`CertificateError`] if key generation fails.
    pub fn self_signed_for(names: &[&str], validity: Duration) -> Result<Self, CertificateError> {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
            .map_err(CertificateError::Generate)?;
        let mut params =
            rcgen::CertificateParams::new(names).map_err(CertificateError::Generate)?;
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let now = rcgen::date_time_ymd(1970, 1, 1) + since_epoch;
        let skew = CLOCK_SKEW.min(validity / 2);
        params.not_before = now - skew;
        params.not_after = params.not_before + validity.min(MAX_BROWSER_VALIDITY);
        let cert = params
            .self_signed(&key)
            .map_err(CertificateError::Generate)?;
        Ok(Self {
            chain: vec![cert.der().clone()],
            key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        })
    }

    /// A self-signed Ed25519 certificate for `names`: its signatures are
    /// deterministic and always 64 bytes, so handshakes take the same
    /// packet sizes every run (the simulated network's determinism).
    ///
    /// # Errors
    /// [`CertificateError`] if key generation fails.
    pub fn self_signed_ed25519(names: &[&str]) -> Result<Self, CertificateError> {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519)
            .map_err(CertificateError::Generate)?;
        let cert = rcgen::CertificateParams::new(names)
            .and_then(|params| params.self_signed(&key))
            .map_err(CertificateError::Generate)?;
        Ok(Self {
            chain: vec![cert.der().clone()],
            key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        })
    }

    /// SHA-256 of the leaf certificate's DER: what a client pins.
    #[must_use]
    pub fn sha256(&self) -> CertHash {
        self.chain
            .first()
            .map_or(CertHash([0; 32]), |leaf| CertHash::of(leaf))
    }
}

impl CertHash {
    /// The hash of a DER certificate.
    #[must_use]
    pub fn of(der: &[u8]) -> Self {
        let digest = ring::digest::digest(&ring::digest::SHA256, der);
        let mut out = [0u8; 32];
        out.copy_from_slice(digest.as_ref());
        Self(out)
    }
}

/// How a client decides to trust the server.
#[derive(Clone, Debug)]
pub enum ServerTrust {
    /// Accept exactly a certificate with one of these SHA-256 hashes (a
    /// development server's self-signed certificate).
    PinnedSha256(Vec<CertHash>),
    /// Verify the chain against these CA roots and the server name.
    CaRoots(Arc<rustls::RootCertStore>),
}

/// The provider every zao TLS config uses: rustls with ring.
// rustls 0.23.48 deprecates its ring provider ("no support for
// post-quantum algorithms") in favour of aws-lc-rs, whose C build we do
// not impose on every game; quinn's own `rustls-ring` feature is the same
// provider. The allow keeps a fresh resolve's warning out of users' builds
// (CI builds against the newest versions to catch the next one).
#[allow(deprecated)]
pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Accepts a server certificate only if its hash is pinned; remembers the
/// hash it saw on a mismatch, so the client can say what went wrong.
#[derive(Debug)]
pub(crate) struct PinnedVerifier {
    pinned: Vec<CertHash>,
    provider: Arc<CryptoProvider>,
    pub(crate) mismatch: Mutex<Option<CertHash>>,
}

impl PinnedVerifier {
    pub(crate) fn new(pinned: Vec<CertHash>) -> Self {
        Self {
            pinned,
            provider: provider(),
            mismatch: Mutex::new(None),
        }
    }
}

impl ServerCertVerifier for PinnedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let seen = CertHash::of(end_entity);
        if self.pinned.contains(&seen) {
            Ok(ServerCertVerified::assertion())
        } else {
            if let Ok(mut slot) = self.mismatch.lock() {
                *slot = Some(seen);
            }
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_differ_per_certificate_and_round_trip_as_text() {
        let cert = Certificate::self_signed(&["localhost"]).unwrap_or_else(|e| panic!("{e}"));
        let hash = cert.sha256();
        assert_eq!(CertHash::parse(&hash.to_string()), Some(hash));
        assert_ne!(
            Certificate::self_signed(&["localhost"])
                .map(|c| c.sha256())
                .ok(),
            Some(hash)
        );
        let ed = Certificate::self_signed_ed25519(&["localhost"]).unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(ed.sha256(), hash);
    }
}
