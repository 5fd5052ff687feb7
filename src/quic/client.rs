//! The client: connects, pins or verifies the server, runs the handshake.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use quinn::crypto::rustls::QuicClientConfig;
use quinn::{AsyncUdpSocket, Endpoint, EndpointConfig, VarInt};
use tokio::sync::mpsc;

use crate::proto::{Channel, Hello, HelloReply, PROTOCOL_MAGIC};
use crate::{Decode, Encode, Message, encode_message, message_len, varint_len};

use super::cert::PinnedVerifier;
use super::link::{
    ALPN, ClientId, DisconnectReason, Inbound, Link, ReceivePolicy, SendError, code, read_frame,
    start_link, transport_config, write_frame,
};
use super::{ClientConfig, ConditionedSocket, ConnectionStats, ServerTrust, StartError};

/// The largest handshake reply a client reads.
const MAX_REPLY: usize = 64 * 1024;

/// What happened on the client since the last poll.
#[derive(Clone, Debug, PartialEq)]
pub enum ClientEvent {
    /// The server accepted us.
    Connected {
        /// Our id on the server.
        client: ClientId,
    },
    /// The connection ended, or could not start.
    Disconnected {
        /// Why.
        reason: DisconnectReason,
    },
    /// A message from the server (`id + body`).
    Message {
        /// The channel it came on.
        channel: Channel,
        /// The message bytes.
        payload: Bytes,
    },
}

type LinkSlot = Arc<Mutex<Option<Arc<Link>>>>;

/// A zao client: connects in the background; poll it once per tick.
pub struct Client {
    events: mpsc::Receiver<Inbound>,
    early: VecDeque<ClientEvent>,
    link: LinkSlot,
    endpoint: Endpoint,
    runtime: Option<tokio::runtime::Runtime>,
    protocol: crate::proto::Protocol,
    id: Option<ClientId>,
    scratch: BytesMut,
}

impl core::fmt::Debug for Client {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Client")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Starts connecting to `config.server`; the outcome arrives as
    /// [`ClientEvent::Connected`] or [`ClientEvent::Disconnected`].
    ///
    /// # Errors
    /// [`StartError`] if the runtime, the local socket or the TLS setup fails.
    pub fn connect(config: ClientConfig) -> Result<Self, StartError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("zao-client")
            .enable_all()
            .build()
            .map_err(StartError::io)?;
        let _guard = runtime.enter();

        let (client_config, pinned) = quinn_config(&config)?;

        let bind: std::net::SocketAddr = if config.server.is_ipv6() {
            (std::net::Ipv6Addr::LOCALHOST, 0).into()
        } else {
            (std::net::Ipv4Addr::LOCALHOST, 0).into()
        };
        let bind = if config.server.ip().is_loopback() {
            bind
        } else if config.server.is_ipv6() {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        } else {
            (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
        };
        let socket = std::net::UdpSocket::bind(bind).map_err(StartError::io)?;
        let quinn_runtime: Arc<dyn quinn::Runtime> = Arc::new(quinn::TokioRuntime);
        let mut socket: Arc<dyn AsyncUdpSocket> = quinn_runtime
            .wrap_udp_socket(socket)
            .map_err(StartError::io)?;
        if let Some(conditions) = config.conditioner {
            socket = ConditionedSocket::new(socket, conditions);
        }
        let endpoint = Endpoint::new_with_abstract_socket(
            EndpointConfig::default(),
            None,
            socket,
            quinn_runtime,
        )
        .map_err(StartError::io)?;

        let (tx, events) = mpsc::channel(config.limits.event_queue.max(1));
        let link: LinkSlot = Arc::new(Mutex::new(None));
        let policy = Arc::new(ReceivePolicy {
            protocol: config.protocol.clone(),
            is_server: false,
            limits: config.limits.clone(),
        });
        tokio::spawn(run_connect(
            endpoint.clone(),
            client_config,
            config.clone(),
            policy,
            tx,
            link.clone(),
            pinned,
        ));
        drop(_guard);
        Ok(Self {
            events,
            early: VecDeque::new(),
            link,
            endpoint,
            runtime: Some(runtime),
            protocol: config.protocol,
            id: None,
            scratch: BytesMut::with_capacity(16 * 1024),
        })
    }

    /// Blocks until connected or refused, up to `timeout`; events other
    /// than the outcome stay queued for [`poll_event`](Self::poll_event).
    /// For tests, tools and examples; a game polls instead.
    ///
    /// # Errors
    /// The [`DisconnectReason`] if the connection failed or timed out.
    pub fn wait_connected(&mut self, timeout: Duration) -> Result<ClientId, DisconnectReason> {
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            match self.next_inbound() {
                Some(ClientEvent::Connected { client }) => {
                    self.early.push_front(ClientEvent::Connected { client });
                    return Ok(client);
                }
                Some(ClientEvent::Disconnected { reason }) => return Err(reason),
                Some(other) => self.early.push_back(other),
                None => std::thread::sleep(Duration::from_millis(1)),
            }
        }
        Err(DisconnectReason::TimedOut)
    }

    fn next_inbound(&mut self) -> Option<ClientEvent> {
        let event = match self.events.try_recv().ok()? {
            Inbound::Connected(client, _) => {
                self.id = Some(client);
                ClientEvent::Connected { client }
            }
            Inbound::Disconnected(_, reason) => {
                self.id = None;
                ClientEvent::Disconnected { reason }
            }
            Inbound::Message(_, channel, payload) => ClientEvent::Message { channel, payload },
            // Only a server refuses.
            Inbound::Refused(_, reason) => ClientEvent::Disconnected {
                reason: DisconnectReason::Refused(reason),
            },
        };
        Some(event)
    }

    /// The next event, or `None`. Never blocks.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.early.pop_front().or_else(|| self.next_inbound())
    }

    /// Our id, once connected.
    #[must_use]
    pub fn id(&self) -> Option<ClientId> {
        self.id
    }

    fn current(&self) -> Result<Arc<Link>, SendError> {
        self.link
            .lock()
            .ok()
            .and_then(|l| l.clone())
            .ok_or(SendError::NotConnected(self.id.unwrap_or(ClientId(0))))
    }

    /// Encodes and sends a message to the server.
    ///
    /// # Errors
    /// [`SendError`]: not connected, backlog full, too large, or not
    /// registered for a client to send on `channel`.
    pub fn send<M: Message>(&mut self, channel: Channel, msg: &M) -> Result<(), SendError> {
        match self.protocol.get(M::ID) {
            Some(e) if e.channel == channel && e.direction.client_sends() => {}
            _ => return Err(SendError::NotRegistered(M::ID)),
        }
        let len = message_len(msg);
        self.scratch.clear();
        self.scratch.resize(len, 0);
        let _ = encode_message(msg, &mut self.scratch);
        let payload = self.scratch.split().freeze();
        self.send_payload(channel, payload)
    }

    /// Sends an already-encoded message (`id + body`).
    ///
    /// # Errors
    /// As [`send`](Self::send).
    pub fn send_payload(&mut self, channel: Channel, payload: Bytes) -> Result<(), SendError> {
        let link = self.current()?;
        match channel {
            Channel::Reliable => link.send_reliable(payload),
            Channel::Unreliable => {
                let max = link.max_datagram();
                let framed = 1 + varint_len(payload.len() as u64) + payload.len();
                if framed > max {
                    return Err(SendError::TooLarge { size: framed, max });
                }
                link.pack_unreliable(&payload);
                Ok(())
            }
            Channel::Snapshot => {
                let id = crate::split_message(&payload)
                    .map(|(id, _)| id)
                    .unwrap_or(0);
                Err(SendError::NotRegistered(id))
            }
        }
    }

    /// Sends the unreliable messages packed so far.
    pub fn flush(&self) {
        if let Ok(link) = self.current() {
            link.flush();
        }
    }

    /// Connection statistics, once connected.
    #[must_use]
    pub fn stats(&self) -> Option<ConnectionStats> {
        self.current().ok().map(|l| l.stats())
    }

    /// Leaves the server with a reason it will see.
    pub fn disconnect(&mut self, reason: &str) {
        if let Ok(link) = self.current() {
            link.close(code::NORMAL, reason);
        }
    }

    /// Closes the connection and stops the runtime.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        super::link::stop(&self.endpoint, &mut self.runtime, b"client shutting down");
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The quinn client config for `config`: TLS 1.3 with ring, zao's ALPN,
/// the trust it names, and transport limits; with the pinned verifier, to
/// report a mismatch.
fn quinn_config(config: &ClientConfig) -> Result<(quinn::ClientConfig, Pinned), StartError> {
    let provider = super::cert::provider();
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(StartError::tls)?;
    let mut pinned = None;
    let mut tls = match &config.trust {
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
    let crypto = QuicClientConfig::try_from(tls).map_err(|e| StartError::Tls(e.to_string()))?;
    let mut client_config = quinn::ClientConfig::new(Arc::new(crypto));
    client_config.transport_config(Arc::new(transport_config(&config.limits)));
    Ok((client_config, pinned))
}

impl ClientConfig {
    /// The quinn client configuration zao uses for this config (TLS, trust,
    /// ALPN, limits), for tools that speak to a zao server at the QUIC level.
    ///
    /// # Errors
    /// [`StartError::Tls`] if rustls refuses the configuration.
    pub fn quinn_client_config(&self) -> Result<quinn::ClientConfig, StartError> {
        quinn_config(self).map(|(c, _)| c)
    }
}

type Pinned = Option<(Arc<PinnedVerifier>, Vec<super::CertHash>)>;

async fn run_connect(
    endpoint: Endpoint,
    client_config: quinn::ClientConfig,
    config: ClientConfig,
    policy: Arc<ReceivePolicy>,
    events: mpsc::Sender<Inbound>,
    slot: LinkSlot,
    pinned: Pinned,
) {
    let fail = |reason: DisconnectReason| {
        let events = events.clone();
        async move {
            let _ = events
                .send(Inbound::Disconnected(ClientId(0), reason))
                .await;
        }
    };
    let connecting = match endpoint.connect_with(client_config, config.server, &config.server_name)
    {
        Ok(c) => c,
        Err(e) => return fail(DisconnectReason::Error(e.to_string())).await,
    };
    let conn = match tokio::time::timeout(config.limits.handshake_timeout, connecting).await {
        Ok(Ok(conn)) => conn,
        Ok(Err(e)) => {
            let mismatch = pinned.as_ref().and_then(|(v, expected)| {
                let presented = v.mismatch.lock().ok().and_then(|m| *m)?;
                Some(DisconnectReason::CertificateMismatch {
                    expected: expected.clone(),
                    presented: Some(presented),
                })
            });
            return fail(mismatch.unwrap_or_else(|| DisconnectReason::from_quinn(&e))).await;
        }
        Err(_) => return fail(DisconnectReason::TimedOut).await,
    };
    let hello = Hello {
        magic: PROTOCOL_MAGIC,
        version: env!("CARGO_PKG_VERSION").to_owned(),
        protocol_hash: config.protocol.hash(),
        messages: config.protocol.entries().to_vec(),
        token: config.token.clone(),
    };
    let reply = tokio::time::timeout(config.limits.handshake_timeout, async {
        let (mut send, mut recv) = conn
            .open_bi()
            .await
            .map_err(|e| DisconnectReason::from_quinn(&e))?;
        write_frame(&mut send, &hello.to_vec())
            .await
            .map_err(DisconnectReason::Error)?;
        let _ = send.finish();
        let frame = read_frame(&mut recv, MAX_REPLY).await.map_err(|e| {
            conn.close_reason().map_or(DisconnectReason::Error(e), |c| {
                DisconnectReason::from_quinn(&c)
            })
        })?;
        HelloReply::decode(&frame)
            .map_err(|e| DisconnectReason::Error(format!("bad handshake reply: {e}")))
    })
    .await;
    let client = match reply {
        Ok(Ok(HelloReply::Welcome { client_id })) => ClientId(client_id),
        Ok(Ok(HelloReply::Refused(reason))) => {
            conn.close(
                VarInt::from_u32(code::REFUSED),
                reason.to_string().as_bytes(),
            );
            return fail(DisconnectReason::Refused(reason)).await;
        }
        Ok(Err(reason)) => return fail(reason).await,
        Err(_) => {
            conn.close(
                VarInt::from_u32(code::HANDSHAKE_TIMEOUT),
                b"handshake deadline passed",
            );
            return fail(DisconnectReason::TimedOut).await;
        }
    };
    let out = match conn.open_uni().await {
        Ok(out) => out,
        Err(e) => return fail(DisconnectReason::from_quinn(&e)).await,
    };
    let cleared = slot.clone();
    let register = |link: &Arc<Link>| {
        if let Ok(mut slot) = slot.lock() {
            *slot = Some(link.clone());
        }
    };
    let _ = start_link(
        client,
        conn,
        out,
        policy,
        events,
        register,
        Inbound::Connected(client, config.server),
        move |_| {
            if let Ok(mut slot) = cleared.lock() {
                *slot = None;
            }
        },
    )
    .await;
}
