//! The floor a zao server is measured against: a bare quinn server with
//! zao's TLS and transport settings
//! ([`Certificate::quinn_server_config`]) on a runtime like zao's server's,
//! that accepts connections and does nothing else. What a tool sends
//! through its connections is all the work it does.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;
use tokio::sync::mpsc;
use zao::proto::Protocol;
use zao::quic::quinn::{self, Connection, Endpoint, EndpointConfig, VarInt};
use zao::quic::{CertHash, Certificate, Limits, StartError};

/// A bare quinn server and the connections it has accepted.
#[derive(Debug)]
pub struct BareServer {
    runtime: Option<Runtime>,
    endpoint: Endpoint,
    addr: SocketAddr,
    certificate: CertHash,
    accepted: mpsc::UnboundedReceiver<Connection>,
    conns: Vec<Connection>,
}

impl BareServer {
    /// Starts on a loopback port with a fresh development certificate,
    /// zao's QUIC settings for `limits` and `protocol`'s channels, and a runtime of `workers` threads
    /// named `thread_name` (so a tool can tell their CPU time apart).
    ///
    /// # Errors
    /// [`StartError`] if the certificate, the TLS setup, the runtime or the
    /// socket fails.
    pub fn start(
        limits: &Limits,
        protocol: &Protocol,
        workers: usize,
        thread_name: &str,
    ) -> Result<Self, StartError> {
        let certificate = Certificate::self_signed(&["localhost"])?;
        let config = certificate.quinn_server_config(limits, protocol)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers.max(1))
            .thread_name(thread_name)
            .enable_all()
            .build()?;
        let socket = std::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
        let endpoint = {
            let _guard = runtime.enter();
            Endpoint::new(
                EndpointConfig::default(),
                Some(config),
                socket,
                Arc::new(quinn::TokioRuntime),
            )?
        };
        let addr = endpoint.local_addr()?;
        let (tx, accepted) = mpsc::unbounded_channel();
        let accepting = endpoint.clone();
        runtime.spawn(async move {
            while let Some(incoming) = accepting.accept().await {
                let tx = tx.clone();
                tokio::spawn(async move {
                    if let Ok(conn) = incoming.await {
                        let _ = tx.send(conn);
                    }
                });
            }
        });
        Ok(Self {
            runtime: Some(runtime),
            endpoint,
            addr,
            certificate: certificate.sha256(),
            accepted,
            conns: Vec::new(),
        })
    }

    /// The address it listens on.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The SHA-256 of its certificate, for clients to pin.
    #[must_use]
    pub fn certificate_hash(&self) -> CertHash {
        self.certificate
    }

    /// Waits until `n` connections are accepted, up to `timeout`; whether
    /// they were.
    pub fn wait_for(&mut self, n: usize, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        while self.conns.len() < n {
            match self.accepted.try_recv() {
                Ok(conn) => self.conns.push(conn),
                Err(_) if Instant::now() < end => std::thread::sleep(Duration::from_millis(5)),
                Err(_) => return false,
            }
        }
        true
    }

    /// The accepted connections.
    #[must_use]
    pub fn connections(&self) -> &[Connection] {
        &self.conns
    }

    /// Closes every connection and stops the runtime.
    pub fn stop(mut self) {
        self.endpoint.close(VarInt::from_u32(0), b"done");
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_millis(200));
        }
    }
}
