//! Errors of starting a server or client.

use core::fmt;

/// Why a server or client could not start.
#[derive(Debug)]
pub enum StartError {
    /// The runtime or socket could not be made.
    Io(std::io::Error),
    /// The TLS configuration was refused.
    Tls(String),
}

impl StartError {
    pub(crate) fn io(e: std::io::Error) -> Self {
        Self::Io(e)
    }

    pub(crate) fn tls(e: rustls::Error) -> Self {
        Self::Tls(e.to_string())
    }
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "i/o: {e}"),
            Self::Tls(e) => write!(f, "tls: {e}"),
        }
    }
}

impl std::error::Error for StartError {}
