//! What a page needs to reach a development server: the certificate
//! hashes to pin, renewed before they expire, and served over plain HTTP
//! (`GET /zao/certificate`) for a page on localhost to fetch.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use quinn::Endpoint;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{CertHash, Certificate, CertificateRotation};
use crate::proto::{Limits, Protocol};

/// The path the hashes are served at.
pub const CERTIFICATE_PATH: &str = "/zao/certificate";

/// The longest request head the HTTP endpoint reads.
const MAX_REQUEST: usize = 8 * 1024;
/// How long it waits for a request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// The hashes a client may pin now: the current certificate's first, then
/// the one it replaced (a page that fetched it a moment ago still
/// connects).
#[derive(Clone, Debug)]
pub(crate) struct Hashes(Arc<Mutex<Vec<CertHash>>>);

impl Hashes {
    pub(crate) fn new(current: CertHash) -> Self {
        Self(Arc::new(Mutex::new(vec![current])))
    }

    pub(crate) fn get(&self) -> Vec<CertHash> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn renewed(&self, new: CertHash) {
        let mut hashes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let previous = hashes.first().copied();
        *hashes = core::iter::once(new).chain(previous).collect();
    }
}

/// What a renewal needs to build the endpoint's next configuration.
pub(crate) struct Renewal {
    pub(crate) rotation: CertificateRotation,
    pub(crate) limits: Limits,
    pub(crate) protocol: Protocol,
    pub(crate) alpns: Vec<&'static [u8]>,
}

/// Renews the endpoint's certificate `renew_before` its expiry, for ever:
/// new connections get the new one, open ones keep theirs.
pub(crate) async fn rotate(endpoint: Endpoint, hashes: Hashes, renewal: Renewal) {
    let every = renewal
        .rotation
        .validity
        .min(super::MAX_BROWSER_VALIDITY)
        .saturating_sub(renewal.rotation.renew_before)
        .max(Duration::from_secs(1));
    let names: Vec<&str> = renewal.rotation.names.iter().map(String::as_str).collect();
    loop {
        tokio::time::sleep(every).await;
        let certificate = match Certificate::self_signed_for(&names, renewal.rotation.validity) {
            Ok(certificate) => certificate,
            Err(e) => {
                tracing::warn!("zao: the certificate could not be renewed: {e}");
                continue;
            }
        };
        let alpns = &renewal.alpns;
        match crate::endpoint::server_config(
            &certificate,
            &renewal.limits,
            &renewal.protocol,
            alpns,
        ) {
            Ok(config) => {
                endpoint.set_server_config(Some(config));
                let hash = certificate.sha256();
                hashes.renewed(hash);
                tracing::info!(%hash, "zao: the server's certificate was renewed");
            }
            Err(e) => tracing::warn!("zao: the certificate could not be renewed: {e}"),
        }
    }
}

/// Serves `GET /zao/certificate` on `listener`: `{"hashes": [hex, ...],
/// "port": udp_port}` with `Access-Control-Allow-Origin: *`; 404 for
/// anything else. One short request per connection, bounded in size and
/// time.
pub(crate) async fn serve(listener: tokio::net::TcpListener, hashes: Hashes, port: u16) {
    while let Ok((stream, _)) = listener.accept().await {
        let hashes = hashes.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(REQUEST_TIMEOUT, answer(stream, &hashes, port)).await;
        });
    }
}

async fn answer(
    mut stream: tokio::net::TcpStream,
    hashes: &Hashes,
    port: u16,
) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 || head.len() + n > MAX_REQUEST {
            return Ok(());
        }
        head.extend_from_slice(buf.get(..n).unwrap_or_default());
    }
    let line = head.split(|b| *b == b'\r').next().unwrap_or_default();
    let mut parts = line.split(|b| *b == b' ');
    let (method, path) = (parts.next(), parts.next());
    let response = match (method, path) {
        (Some(b"GET"), Some(p)) if p == CERTIFICATE_PATH.as_bytes() => {
            let body = body(&hashes.get(), port);
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Access-Control-Allow-Origin: *\r\nCache-Control: no-store\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            )
        }
        _ => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned(),
    };
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

/// The JSON body: the hashes as lowercase hex, and the UDP port.
pub(crate) fn body(hashes: &[CertHash], port: u16) -> String {
    let hashes: Vec<String> = hashes.iter().map(|h| format!("\"{h}\"")).collect();
    format!("{{\"hashes\":[{}],\"port\":{port}}}", hashes.join(","))
}

/// Binds the HTTP endpoint (on the server's runtime).
pub(crate) fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let std = std::net::TcpListener::bind(addr)?;
    std.set_nonblocking(true)?;
    tokio::net::TcpListener::from_std(std)
}
