//! The quinn configurations zao runs, for tools at the QUIC level.

use crate::endpoint::{Certificate, StartError, client_config, server_config};
use crate::proto::{Limits, Protocol};

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
        server_config(self, limits, protocol, &[crate::endpoint::ALPN])
    }
}
