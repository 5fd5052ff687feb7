//! The server: accepts clients, runs the handshake, fans messages out.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use quinn::crypto::rustls::QuicServerConfig;
use quinn::{AsyncUdpSocket, Endpoint, EndpointConfig, Incoming, VarInt};
use tokio::sync::mpsc;

use crate::proto::{
    Channel, Hello, HelloReply, RefuseReason, Snapshot, SnapshotHeader, check_hello, plan_chunks,
    snapshot_datagram, snapshot_datagram_len, unreliable_datagram,
};
use crate::{Decode, Encode, Message, encode_message, message_len, varint_len};

use super::link::{
    ALPN, ClientId, DisconnectReason, Inbound, Link, ReceivePolicy, SendError, code, read_frame,
    start_link, transport_config, write_frame,
};
use super::{
    AuthCallback, AuthRequest, CertHash, ConditionedSocket, ConnectionStats, ServerConfig,
    StartError,
};

/// The largest hello a server reads.
const MAX_HELLO: usize = 64 * 1024;
/// Worst-case bytes of a snapshot datagram's header (kind, seq, chunk, chunks).
const SNAPSHOT_HEADER_MAX: usize = 1 + 10 + 5 + 5;

/// Who a message goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target<'a> {
    /// Every connected client.
    All,
    /// One client.
    One(ClientId),
    /// Every client but one (the one whose action is being echoed).
    AllExcept(ClientId),
    /// These clients.
    List(&'a [ClientId]),
}

/// What happened on the server since the last poll.
#[derive(Clone, Debug, PartialEq)]
pub enum ServerEvent {
    /// A client completed the handshake.
    Connected {
        /// Its id.
        client: ClientId,
        /// Its address.
        addr: SocketAddr,
    },
    /// A client's handshake was refused (the client reads the same reason).
    Refused {
        /// Its address.
        addr: SocketAddr,
        /// Why.
        reason: RefuseReason,
    },
    /// A client left or was disconnected.
    Disconnected {
        /// Its id.
        client: ClientId,
        /// Why.
        reason: DisconnectReason,
    },
    /// A message (`id + body`, decode it with [`decode_message`](crate::decode_message)
    /// or a dispatch on [`split_message`](crate::split_message)).
    Message {
        /// Who sent it.
        client: ClientId,
        /// The channel it came on.
        channel: Channel,
        /// The message bytes.
        payload: Bytes,
    },
}

struct Shared {
    links: Mutex<HashMap<ClientId, Arc<Link>>>,
    policy: Arc<ReceivePolicy>,
    next_id: AtomicU64,
    pending: AtomicUsize,
    pending_by_addr: Mutex<HashMap<SocketAddr, usize>>,
    /// Clients connected or admitted and finishing their handshake: checked
    /// and taken in one step, so concurrent handshakes cannot pass
    /// `max_clients` together.
    slots: AtomicUsize,
    auth: Option<AuthCallback>,
}

impl Shared {
    /// Takes a client slot if one is free.
    fn take_slot(&self) -> bool {
        let max = self.policy.limits.max_clients;
        self.slots
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }

    fn free_slot(&self) {
        self.slots.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A zao server: QUIC on a tokio runtime of its own threads; the methods
/// here never block on the network. Poll it once per tick.
pub struct Server {
    shared: Arc<Shared>,
    events: mpsc::Receiver<Inbound>,
    endpoint: Endpoint,
    runtime: Option<tokio::runtime::Runtime>,
    local_addr: SocketAddr,
    certificate: CertHash,
    scratch: BytesMut,
    targets: Vec<Arc<Link>>,
    /// A snapshot's encoded chunks, reused between sends.
    chunks: Vec<Bytes>,
    seqs: HashMap<u32, u64>,
}

impl core::fmt::Debug for Server {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Server")
            .field("local_addr", &self.local_addr)
            .field("certificate", &self.certificate)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Binds and starts serving.
    ///
    /// # Errors
    /// [`StartError`] if the runtime, the socket or the TLS setup fails.
    pub fn start(config: ServerConfig) -> Result<Self, StartError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.worker_threads.max(1))
            .thread_name("zao-server")
            .enable_all()
            .build()
            .map_err(StartError::io)?;
        let _guard = runtime.enter();

        let provider = super::cert::provider();
        let mut tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(StartError::tls)?
            .with_no_client_auth()
            .with_single_cert(
                config.certificate.chain.clone(),
                config.certificate.key.clone_key(),
            )
            .map_err(StartError::tls)?;
        tls.alpn_protocols = vec![ALPN.to_vec()];
        let crypto = QuicServerConfig::try_from(tls).map_err(|e| StartError::Tls(e.to_string()))?;
        let mut server_config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        server_config.transport_config(Arc::new(transport_config(&config.limits)));
        // Connections quinn holds before we accept them: bounded, so a
        // connection flood cannot grow memory (S8).
        server_config.max_incoming(config.limits.max_pending_handshakes.max(1));

        let socket = std::net::UdpSocket::bind(config.bind).map_err(StartError::io)?;
        let quinn_runtime: Arc<dyn quinn::Runtime> = Arc::new(quinn::TokioRuntime);
        let mut socket: Arc<dyn AsyncUdpSocket> = quinn_runtime
            .wrap_udp_socket(socket)
            .map_err(StartError::io)?;
        if let Some(conditions) = config.conditioner {
            socket = ConditionedSocket::new(socket, conditions);
        }
        let endpoint = Endpoint::new_with_abstract_socket(
            EndpointConfig::default(),
            Some(server_config),
            socket,
            quinn_runtime,
        )
        .map_err(StartError::io)?;
        let local_addr = endpoint.local_addr().map_err(StartError::io)?;

        let shared = Arc::new(Shared {
            links: Mutex::new(HashMap::new()),
            policy: Arc::new(ReceivePolicy {
                protocol: config.protocol.clone(),
                is_server: true,
                limits: config.limits.clone(),
            }),
            next_id: AtomicU64::new(1),
            pending: AtomicUsize::new(0),
            pending_by_addr: Mutex::new(HashMap::new()),
            slots: AtomicUsize::new(0),
            auth: config.auth.clone(),
        });
        let (tx, events) = mpsc::channel(config.limits.event_queue.max(1));
        tokio::spawn(accept_loop(endpoint.clone(), shared.clone(), tx));
        drop(_guard);
        Ok(Self {
            shared,
            events,
            endpoint,
            runtime: Some(runtime),
            local_addr,
            certificate: config.certificate.sha256(),
            scratch: BytesMut::with_capacity(64 * 1024),
            targets: Vec::new(),
            chunks: Vec::new(),
            seqs: HashMap::new(),
        })
    }

    /// The address the server listens on.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The SHA-256 of the server's certificate, for clients to pin.
    #[must_use]
    pub fn certificate_hash(&self) -> CertHash {
        self.certificate
    }

    /// The next event, or `None` if nothing happened. Never blocks.
    pub fn poll_event(&mut self) -> Option<ServerEvent> {
        self.events.try_recv().ok().map(|inbound| match inbound {
            Inbound::Connected(client, addr) => ServerEvent::Connected { client, addr },
            Inbound::Refused(addr, reason) => ServerEvent::Refused { addr, reason },
            Inbound::Disconnected(client, reason) => ServerEvent::Disconnected { client, reason },
            Inbound::Message(client, channel, payload) => ServerEvent::Message {
                client,
                channel,
                payload,
            },
        })
    }

    /// The connected clients.
    #[must_use]
    pub fn clients(&self) -> Vec<ClientId> {
        let mut ids: Vec<ClientId> = self
            .shared
            .links
            .lock()
            .map(|links| links.keys().copied().collect())
            .unwrap_or_default();
        ids.sort_unstable();
        ids
    }

    /// Statistics of one client's connection.
    #[must_use]
    pub fn stats(&self, client: ClientId) -> Option<ConnectionStats> {
        self.link(client).map(|l| l.stats())
    }

    /// Disconnects a client with a reason it will see.
    pub fn disconnect(&self, client: ClientId, reason: &str) {
        if let Some(link) = self.link(client) {
            link.close(code::KICKED, reason);
        }
    }

    fn link(&self, client: ClientId) -> Option<Arc<Link>> {
        self.shared.links.lock().ok()?.get(&client).cloned()
    }

    fn check_registered(&self, id: u32, channel: Channel) -> Result<(), SendError> {
        match self.shared.policy.protocol.get(id) {
            Some(e) if e.channel == channel && e.direction.server_sends() => Ok(()),
            _ => Err(SendError::NotRegistered(id)),
        }
    }

    /// Resolves a target into `self.targets`.
    fn resolve(&mut self, target: Target<'_>) -> Result<(), SendError> {
        self.targets.clear();
        let Ok(links) = self.shared.links.lock() else {
            return Ok(());
        };
        match target {
            Target::All => self.targets.extend(links.values().cloned()),
            Target::AllExcept(skip) => self.targets.extend(
                links
                    .iter()
                    .filter(|(id, _)| **id != skip)
                    .map(|(_, l)| l.clone()),
            ),
            Target::One(id) => match links.get(&id) {
                Some(l) => self.targets.push(l.clone()),
                None => return Err(SendError::NotConnected(id)),
            },
            Target::List(ids) => {
                self.targets
                    .extend(ids.iter().filter_map(|id| links.get(id).cloned()));
            }
        }
        Ok(())
    }

    /// Encodes `msg` once and sends the same bytes to every target.
    ///
    /// Reliable: a full backlog is [`SendError::QueueFull`] for a single
    /// target; a client that cannot keep up with a broadcast is disconnected
    /// (its reliable stream can no longer be exactly-once). Unreliable and
    /// snapshot sends never fail for a slow client: its oldest datagrams are
    /// dropped instead.
    ///
    /// # Errors
    /// [`SendError`] as above, or if `M` is not registered on `channel`.
    pub fn send<M: Message>(
        &mut self,
        target: Target<'_>,
        channel: Channel,
        msg: &M,
    ) -> Result<(), SendError> {
        self.check_registered(M::ID, channel)?;
        let len = message_len(msg);
        self.scratch.clear();
        self.scratch.resize(len, 0);
        let _ = encode_message(msg, &mut self.scratch);
        let payload = self.scratch.split().freeze();
        self.send_payload(target, channel, payload)
    }

    /// Sends an already-encoded message (`id + body`) to every target,
    /// sharing its bytes. See [`send`](Self::send).
    ///
    /// # Errors
    /// As [`send`](Self::send).
    pub fn send_payload(
        &mut self,
        target: Target<'_>,
        channel: Channel,
        payload: Bytes,
    ) -> Result<(), SendError> {
        let single = matches!(target, Target::One(_));
        self.resolve(target)?;
        match channel {
            Channel::Reliable => {
                for link in &self.targets {
                    match link.send_reliable(payload.clone()) {
                        Ok(()) => {}
                        Err(SendError::QueueFull(id)) if !single => {
                            tracing::debug!(client = id.0, "reliable backlog full: disconnecting");
                            link.close(code::TOO_SLOW, "reliable backlog full");
                        }
                        Err(e @ SendError::TooLarge { .. }) => return Err(e),
                        Err(e) if single => return Err(e),
                        Err(_) => {}
                    }
                }
            }
            Channel::Unreliable => {
                let max = self
                    .targets
                    .iter()
                    .map(|l| l.max_datagram())
                    .min()
                    .unwrap_or(usize::MAX);
                let framed = 1 + varint_len(payload.len() as u64) + payload.len();
                if framed > max {
                    return Err(SendError::TooLarge { size: framed, max });
                }
                if framed * 2 > max {
                    // Too big to pack well: one shared datagram for all.
                    let datagram = unreliable_datagram(&payload);
                    self.targets
                        .iter()
                        .for_each(|l| l.send_messages(core::slice::from_ref(&datagram)));
                } else {
                    self.targets
                        .iter()
                        .for_each(|l| l.pack_unreliable(&payload));
                }
            }
            Channel::Snapshot => {
                let id = crate::split_message(&payload)
                    .map(|(id, _)| id)
                    .unwrap_or(0);
                let header = SnapshotHeader {
                    seq: self.next_seq(id),
                    chunk: 0,
                    chunks: 1,
                };
                let max = self
                    .targets
                    .iter()
                    .map(|l| l.max_datagram())
                    .min()
                    .unwrap_or(usize::MAX);
                let size = snapshot_datagram_len(header, payload.len());
                if size > max {
                    return Err(SendError::TooLarge { size, max });
                }
                let datagram = snapshot_datagram(&mut self.scratch, header, payload.len(), |w| {
                    w.put_slice(&payload);
                });
                self.targets
                    .iter()
                    .for_each(|l| l.send_messages(core::slice::from_ref(&datagram)));
            }
        }
        Ok(())
    }

    /// Sends a snapshot on [`Channel::Snapshot`], split into independently
    /// decodable chunks that fit every target's datagrams. Each chunk is
    /// encoded once and shared by all targets. Returns the number of chunks.
    ///
    /// # Errors
    /// [`SendError::NotRegistered`], or [`SendError::TooLarge`] if one item
    /// does not fit a datagram.
    pub fn send_snapshot<M: Snapshot>(
        &mut self,
        target: Target<'_>,
        msg: &M,
    ) -> Result<usize, SendError> {
        self.check_registered(M::ID, Channel::Snapshot)?;
        self.resolve(target)?;
        if self.targets.is_empty() {
            return Ok(0);
        }
        let max = self
            .targets
            .iter()
            .map(|l| l.max_datagram())
            .min()
            .unwrap_or(0);
        let id_len = varint_len(u64::from(M::ID));
        let budget = max.saturating_sub(SNAPSHOT_HEADER_MAX + id_len);
        let plan = plan_chunks(msg, budget).ok_or(SendError::TooLarge {
            size: msg.part_len(0..msg.items()),
            max: budget,
        })?;
        let seq = self.next_seq(M::ID);
        let chunks = u32::try_from(plan.len()).unwrap_or(u32::MAX);
        for (i, range) in plan.iter().enumerate() {
            let header = SnapshotHeader {
                seq,
                chunk: i as u32,
                chunks,
            };
            let part_len = msg.part_len(range.clone());
            let datagram = snapshot_datagram(&mut self.scratch, header, id_len + part_len, |w| {
                w.put_varint(u64::from(M::ID));
                msg.encode_part(range.clone(), w);
            });
            self.chunks.push(datagram);
        }
        // Every chunk encoded once; then client by client, so each
        // connection's driver wakes once per snapshot and sends it as one
        // batch (chunk by chunk across clients measured 1.2-1.4x the bare
        // quinn floor at 64-256 clients x 1024 players).
        for link in &self.targets {
            link.send_messages(&self.chunks);
        }
        self.chunks.clear();
        Ok(plan.len())
    }

    /// Sends the unreliable messages packed so far. Call once per tick,
    /// after the tick's sends.
    pub fn flush(&self) {
        if let Ok(links) = self.shared.links.lock() {
            links.values().for_each(|l| l.flush());
        }
    }

    fn next_seq(&mut self, id: u32) -> u64 {
        let seq = self.seqs.entry(id).or_insert(0);
        *seq += 1;
        *seq
    }

    /// Closes every connection and stops the runtime.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        super::link::stop(&self.endpoint, &mut self.runtime, b"server shutting down");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn accept_loop(endpoint: Endpoint, shared: Arc<Shared>, events: mpsc::Sender<Inbound>) {
    let limits = &shared.policy.limits;
    let (max_pending, per_addr) = (
        limits.max_pending_handshakes,
        limits.max_pending_per_address,
    );
    while let Some(incoming) = endpoint.accept().await {
        let addr = incoming.remote_address();
        let admitted = shared.pending_by_addr.lock().is_ok_and(|mut by_addr| {
            let mine = by_addr.get(&addr).copied().unwrap_or(0);
            if mine >= per_addr || shared.pending.load(Ordering::Acquire) >= max_pending {
                return false;
            }
            by_addr.insert(addr, mine + 1);
            shared.pending.fetch_add(1, Ordering::AcqRel);
            true
        });
        if !admitted {
            tracing::debug!(%addr, "too many handshakes: refused");
            incoming.refuse();
            continue;
        }
        let shared = shared.clone();
        let events = events.clone();
        tokio::spawn(async move {
            handshake(incoming, &shared, &events).await;
            shared.pending.fetch_sub(1, Ordering::AcqRel);
            if let Ok(mut by_addr) = shared.pending_by_addr.lock()
                && let Some(n) = by_addr.get_mut(&addr)
            {
                *n -= 1;
                if *n == 0 {
                    by_addr.remove(&addr);
                }
            }
        });
    }
}

/// Runs one client's handshake within the deadline; on success the client
/// joins the server's links.
async fn handshake(incoming: Incoming, shared: &Arc<Shared>, events: &mpsc::Sender<Inbound>) {
    let addr = incoming.remote_address();
    let limits = &shared.policy.limits;
    let deadline = tokio::time::Instant::now() + limits.handshake_timeout;
    let Ok(connecting) = incoming.accept() else {
        return;
    };
    let conn = match tokio::time::timeout_at(deadline, connecting).await {
        Ok(Ok(conn)) => conn,
        Ok(Err(e)) => {
            tracing::debug!(%addr, "QUIC handshake failed: {e}");
            return;
        }
        Err(_) => return, // dropping `connecting` abandons it
    };
    let hello = tokio::time::timeout_at(deadline, async {
        let (send, mut recv) = conn.accept_bi().await.map_err(|e| e.to_string())?;
        let frame = read_frame(&mut recv, MAX_HELLO).await?;
        Ok::<_, String>((send, frame))
    })
    .await;
    let (mut send, frame) = match hello {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            tracing::debug!(%addr, "bad hello: {e}");
            conn.close(VarInt::from_u32(code::PROTOCOL_VIOLATION), e.as_bytes());
            return;
        }
        Err(_) => {
            tracing::debug!(%addr, "handshake deadline passed");
            conn.close(
                VarInt::from_u32(code::HANDSHAKE_TIMEOUT),
                b"handshake deadline passed",
            );
            return;
        }
    };
    let verdict = admit(&frame, shared, addr);
    match verdict {
        Err(reason) => {
            tracing::debug!(%addr, "refused: {reason}");
            let _ = events.try_send(Inbound::Refused(addr, reason.clone()));
            // Let the refusal arrive before the close discards it, within
            // the handshake's deadline.
            let _ = tokio::time::timeout_at(deadline, async {
                let _ = write_frame(&mut send, &HelloReply::Refused(reason.clone()).to_vec()).await;
                let _ = send.finish();
                let _ = tokio::time::timeout(Duration::from_secs(1), conn.closed()).await;
            })
            .await;
            conn.close(
                VarInt::from_u32(code::REFUSED),
                reason.to_string().as_bytes(),
            );
        }
        Ok(()) => {
            // The slot is ours from here; give it back on every way out
            // until the link owns it.
            let client = ClientId(shared.next_id.fetch_add(1, Ordering::AcqRel));
            let welcome = HelloReply::Welcome {
                client_id: client.0,
            }
            .to_vec();
            let opened = tokio::time::timeout_at(deadline, async {
                write_frame(&mut send, &welcome).await?;
                let _ = send.finish();
                conn.open_uni().await.map_err(|e| e.to_string())
            })
            .await;
            let out = match opened {
                Ok(Ok(out)) => out,
                Ok(Err(e)) => {
                    tracing::debug!(%addr, "handshake failed after welcome: {e}");
                    shared.free_slot();
                    return;
                }
                Err(_) => {
                    conn.close(
                        VarInt::from_u32(code::HANDSHAKE_TIMEOUT),
                        b"handshake deadline passed",
                    );
                    shared.free_slot();
                    return;
                }
            };
            let on_closed = {
                let shared = shared.clone();
                move |id| {
                    if let Ok(mut links) = shared.links.lock() {
                        links.remove(&id);
                    }
                    shared.free_slot();
                }
            };
            let register = |link: &Arc<Link>| {
                if let Ok(mut links) = shared.links.lock() {
                    links.insert(client, link.clone());
                }
            };
            let started = start_link(
                client,
                conn,
                out,
                shared.policy.clone(),
                events.clone(),
                register,
                Inbound::Connected(client, addr),
                on_closed,
            )
            .await;
            if started.is_none() {
                if let Ok(mut links) = shared.links.lock() {
                    links.remove(&client);
                }
                shared.free_slot();
            }
        }
    }
}

/// Decides on a hello: protocol, version, auth, capacity.
fn admit(frame: &[u8], shared: &Shared, addr: SocketAddr) -> Result<(), RefuseReason> {
    let hello = Hello::decode(frame).map_err(|_| RefuseReason::NotZao)?;
    check_hello(&hello, &shared.policy.protocol, env!("CARGO_PKG_VERSION"))?;
    if let Some(auth) = &shared.auth {
        auth(&AuthRequest {
            token: hello.token.as_deref(),
            addr,
        })
        .map_err(|detail| RefuseReason::Unauthorized { detail })?;
    }
    if !shared.take_slot() {
        return Err(RefuseReason::ServerFull);
    }
    Ok(())
}
