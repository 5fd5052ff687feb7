//! Errors of starting a server or client, and how QUIC's connection errors
//! read as zao's disconnect reasons.

use core::fmt;

use quinn::ConnectionError;

use super::CertificateError;
use crate::proto::pump::LinkClosed;
use crate::proto::{ClosedBy, DisconnectReason, LimitsError, TransportError};

/// Why a server or client could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum StartError {
    /// The limits cannot work together.
    Limits(LimitsError),
    /// The runtime or the socket could not be made (an address in use, say).
    Io(std::io::Error),
    /// rustls refused the TLS configuration.
    Tls(rustls::Error),
    /// The TLS configuration has no cipher suite QUIC can use.
    NoQuicCipherSuite,
    /// The certificate could not be made or read.
    Certificate(CertificateError),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Limits(e) => write!(f, "{e}"),
            Self::Io(e) => write!(f, "i/o: {e}"),
            Self::Tls(e) => write!(f, "tls: {e}"),
            Self::NoQuicCipherSuite => f.write_str("tls: no cipher suite usable by QUIC"),
            Self::Certificate(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Limits(e) => Some(e),
            Self::Io(e) => Some(e),
            Self::Tls(e) => Some(e),
            Self::Certificate(e) => Some(e),
            Self::NoQuicCipherSuite => None,
        }
    }
}

impl From<LimitsError> for StartError {
    fn from(e: LimitsError) -> Self {
        Self::Limits(e)
    }
}

impl From<std::io::Error> for StartError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

impl From<rustls::Error> for StartError {
    fn from(e: rustls::Error) -> Self {
        Self::Tls(e)
    }
}

impl From<CertificateError> for StartError {
    fn from(e: CertificateError) -> Self {
        Self::Certificate(e)
    }
}

/// How a connection ended, in the words any QUIC stack has
/// ([`LinkClosed`]); what that means to zao is proto's
/// (`DisconnectReason::from`). quinn and quinn-proto share the type.
pub(crate) fn link_closed(err: &ConnectionError) -> LinkClosed {
    match err {
        ConnectionError::ApplicationClosed(close) => LinkClosed::ByPeer {
            code: close.error_code.into_inner(),
            reason: close.reason.clone(),
        },
        ConnectionError::LocallyClosed => LinkClosed::Locally,
        ConnectionError::TimedOut => LinkClosed::TimedOut,
        ConnectionError::TransportError(e) => LinkClosed::Transport {
            code: u64::from(e.code),
            by: ClosedBy::Local,
            reason: e.reason.clone(),
        },
        ConnectionError::ConnectionClosed(close) => LinkClosed::Transport {
            code: u64::from(close.error_code),
            by: ClosedBy::Peer,
            reason: String::from_utf8_lossy(&close.reason).into_owned(),
        },
        ConnectionError::Reset => LinkClosed::Reset,
        ConnectionError::VersionMismatch => LinkClosed::VersionMismatch,
        ConnectionError::CidsExhausted => LinkClosed::CidsExhausted,
    }
}

/// What a refused connection attempt means to zao.
pub(crate) fn connect_error(err: &quinn::ConnectError) -> DisconnectReason {
    DisconnectReason::Transport(match err {
        quinn::ConnectError::InvalidServerName(name) => {
            TransportError::InvalidServerName(name.clone())
        }
        quinn::ConnectError::InvalidRemoteAddress(addr) => {
            TransportError::InvalidRemoteAddress(*addr)
        }
        quinn::ConnectError::CidsExhausted => TransportError::CidsExhausted,
        quinn::ConnectError::UnsupportedVersion => TransportError::VersionMismatch,
        // EndpointStopping, NoDefaultClientConfig (zao always passes one).
        _ => TransportError::EndpointClosed,
    })
}
