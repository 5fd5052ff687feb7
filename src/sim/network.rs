//! The simulated network: nodes running quinn-proto endpoints and zao
//! sessions, datagrams travelling through seeded links, and a virtual
//! clock that jumps from one event to the next.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use quinn_proto::{
    ConnectionHandle, DatagramEvent, EcnCodepoint, Endpoint, EndpointConfig, EndpointEvent,
    TransportConfig,
};

use super::conn::SimConn;
use super::link::{HOLD_MAX, Held, Link, LinkSpec, LinkStats};
use crate::endpoint::{
    CertHash, Certificate, ServerTrust, StartError, apply_limits, client_config, link_closed,
    server_crypto,
};
use crate::proto::{
    AuthCallback, ClientCore, IncomingVerdict, Limits, Protocol, ServerCore, ServerShared, Session,
    SessionCell, SessionConfig,
};

/// The simulated server's address.
pub const SERVER_ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), 4433);

/// A datagram on the wire.
#[derive(Debug)]
pub(crate) struct Packet {
    from: SocketAddr,
    to: SocketAddr,
    ecn: Option<EcnCodepoint>,
    data: BytesMut,
}

/// A datagram in flight, ordered by arrival, then by sending order.
#[derive(Debug)]
struct InFlight {
    at: Duration,
    seq: u64,
    packet: Packet,
}

impl PartialEq for InFlight {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for InFlight {}

impl PartialOrd for InFlight {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for InFlight {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// A node's connection, with what the scheduler knows of it.
struct Slot {
    conn: SimConn,
    /// Drive it at the next step (a datagram arrived, it was opened).
    dirty: bool,
    /// When QUIC or the session next wants it.
    wake_at: Option<Instant>,
}

enum Role {
    Server {
        shared: Arc<ServerShared>,
    },
    /// A zao client: what it opens a new connection with when its session
    /// asks for another attempt.
    Client {
        config: quinn_proto::ClientConfig,
        cell: Arc<SessionCell>,
    },
    Raw,
}

struct Node {
    addr: SocketAddr,
    endpoint: Endpoint,
    slots: BTreeMap<usize, Slot>,
    role: Role,
    /// From this node to the server (clients and raw peers).
    up: Link,
    /// From the server to this node.
    down: Link,
    /// A client's next attempt, when its session waits to open one.
    retry_at: Option<Instant>,
}

/// A server in a [`Sim`]: the same [`ServerCore`] a `zao::quic::Server`
/// gives, driven by the simulation.
#[derive(Debug)]
pub struct SimServer {
    core: ServerCore,
}

impl Deref for SimServer {
    type Target = ServerCore;

    fn deref(&self) -> &ServerCore {
        &self.core
    }
}

impl DerefMut for SimServer {
    fn deref_mut(&mut self) -> &mut ServerCore {
        &mut self.core
    }
}

/// Which node of a [`Sim`] something is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(usize);

/// A client in a [`Sim`]: the same [`ClientCore`] a `zao::quic::Client`
/// gives, driven by the simulation.
#[derive(Debug)]
pub struct SimClient {
    core: ClientCore,
    node: NodeId,
    addr: SocketAddr,
}

impl SimClient {
    /// Its node, for [`Sim::set_links`] and [`Sim::link_stats`].
    #[must_use]
    pub fn node(&self) -> NodeId {
        self.node
    }

    /// Its address.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Deref for SimClient {
    type Target = ClientCore;

    fn deref(&self) -> &ClientCore {
        &self.core
    }
}

impl DerefMut for SimClient {
    fn deref_mut(&mut self) -> &mut ClientCore {
        &mut self.core
    }
}

/// A simulated server's configuration.
#[derive(Clone)]
#[non_exhaustive]
pub struct SimServerConfig {
    /// The message types it exchanges.
    pub protocol: Protocol,
    /// Its limits.
    pub limits: Limits,
    /// Its auth callback. Its futures are polled as the simulation runs:
    /// they must not wait on real time or real I/O.
    pub auth: Option<AuthCallback>,
    /// Start refusing new clients as draining, until
    /// [`ServerCore::set_draining`](crate::proto::ServerCore::set_draining)`(false)`:
    /// a fleet's server admits no one before it is allocated
    /// (docs/FLEET.md). Default `false`.
    pub draining: bool,
}

impl SimServerConfig {
    /// A server of `protocol` with default limits and no auth.
    #[must_use]
    pub fn new(protocol: Protocol) -> Self {
        Self {
            protocol,
            limits: Limits::default(),
            auth: None,
            draining: false,
        }
    }
}

/// A simulated client's configuration.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SimClientConfig {
    /// The message types it exchanges.
    pub protocol: Protocol,
    /// Its limits.
    pub limits: Limits,
    /// A token for the server's auth callback.
    pub token: Option<Vec<u8>>,
    /// Its link towards the server.
    pub up: LinkSpec,
    /// The server's link towards it.
    pub down: LinkSpec,
    /// Its address; `None`: a fresh one (a new IP for every client).
    pub addr: Option<SocketAddr>,
}

impl SimClientConfig {
    /// A client of `protocol` over perfect links.
    #[must_use]
    pub fn new(protocol: Protocol) -> Self {
        Self {
            protocol,
            limits: Limits::default(),
            token: None,
            up: LinkSpec::perfect(),
            down: LinkSpec::perfect(),
            addr: None,
        }
    }

    /// The same `link` both ways.
    #[must_use]
    pub fn with_link(mut self, link: LinkSpec) -> Self {
        self.up = link.clone();
        self.down = link;
        self
    }
}

/// A QUIC peer with no zao session, which a test drives by hand (see
/// [`RawPeer`](super::RawPeer)): an attacker, or a client of another kind.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RawPeerConfig {
    /// Its QUIC transport settings (zao's own by default).
    pub transport: Arc<TransportConfig>,
    /// Its link towards the server.
    pub up: LinkSpec,
    /// The server's link towards it.
    pub down: LinkSpec,
    /// Its address; `None`: a fresh one.
    pub addr: Option<SocketAddr>,
}

impl RawPeerConfig {
    /// A peer with zao's transport settings over perfect links.
    #[must_use]
    pub fn new() -> Self {
        Self {
            transport: Arc::new(Limits::default().transport_config(&Protocol::new())),
            up: LinkSpec::perfect(),
            down: LinkSpec::perfect(),
            addr: None,
        }
    }
}

impl Default for RawPeerConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// A deterministic network of one zao server and any number of clients on
/// a virtual clock: the real QUIC state machine (quinn-proto: congestion
/// control, loss detection, retransmission) and zao's real sessions, with
/// datagrams through seeded [`LinkSpec`]s. Minutes of play run in well
/// under a second; one seed gives one run.
///
/// ```
/// use std::time::Duration;
/// use zao::proto::{Channel, Direction, Protocol};
/// use zao::sim::{LinkSpec, Sim, SimClientConfig, SimServerConfig};
/// # #[derive(zao::Encode, zao::Decode, zao::NetMessage)]
/// # #[zao(id = 7)]
/// # struct Chat { text: String }
///
/// let mut protocol = Protocol::new();
/// protocol.add::<Chat>(Channel::RELIABLE, Direction::Both);
/// let mut sim = Sim::new(1);
/// let mut server = sim.start_server(SimServerConfig::new(protocol.clone()))?;
/// let mut client = sim.connect(SimClientConfig::new(protocol).with_link(LinkSpec::l2()))?;
/// sim.run_for(Duration::from_secs(2));
/// assert!(client.is_connected());
/// client.send(Channel::RELIABLE, &Chat { text: "hi".into() })?;
/// sim.run_for(Duration::from_secs(1));
/// assert!(server.poll_event().is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Sim {
    base: Instant,
    offset: Duration,
    seed: u64,
    nodes: Vec<Node>,
    by_addr: HashMap<SocketAddr, usize>,
    server: Option<usize>,
    in_flight: BinaryHeap<Reverse<InFlight>>,
    seq: u64,
    buf: Vec<u8>,
    certificate: Certificate,
    /// Datagrams to an address no node has.
    unroutable: u64,
    /// Real time spent in the server node's work (see `server_busy`).
    server_busy: Duration,
}

impl core::fmt::Debug for Sim {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Sim")
            .field("seed", &self.seed)
            .field("elapsed", &self.offset)
            .field("nodes", &self.nodes.len())
            .finish_non_exhaustive()
    }
}

/// Steps at one instant before the simulation calls it stuck.
const MAX_STEPS_PER_INSTANT: u32 = 100_000;

impl Sim {
    /// An empty network whose random choices all follow from `seed`.
    ///
    /// # Panics
    /// If the simulation's certificate cannot be made (key generation
    /// failed).
    #[must_use]
    pub fn new(seed: u64) -> Self {
        let certificate = Certificate::self_signed_ed25519(&["localhost"])
            .unwrap_or_else(|e| panic!("zao sim: no certificate: {e}"));
        Self {
            base: Instant::now(),
            offset: Duration::ZERO,
            seed,
            nodes: Vec::new(),
            by_addr: HashMap::new(),
            server: None,
            in_flight: BinaryHeap::new(),
            seq: 0,
            buf: Vec::with_capacity(1500),
            certificate,
            unroutable: 0,
            server_busy: Duration::ZERO,
        }
    }

    /// The virtual instant now.
    #[must_use]
    pub fn now(&self) -> Instant {
        self.base + self.offset
    }

    /// Virtual time since the simulation started.
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        self.offset
    }

    /// The server certificate's hash (clients pin it).
    #[must_use]
    pub fn certificate_hash(&self) -> CertHash {
        self.certificate.sha256()
    }

    fn endpoint_config(&self, node: usize) -> EndpointConfig {
        let key = self.node_seed(node, 0x5eed);
        let mut config = EndpointConfig::new(Arc::new(ring::hmac::Key::new(
            ring::hmac::HMAC_SHA256,
            &key,
        )));
        config.rng_seed(Some(key));
        config
    }

    fn node_seed(&self, node: usize, salt: u64) -> [u8; 32] {
        let mut rng = super::link::Rng::new(self.seed ^ (node as u64).rotate_left(32) ^ salt);
        let mut out = [0u8; 32];
        for chunk in out.chunks_mut(8) {
            chunk.copy_from_slice(&rng.next_u64().to_le_bytes());
        }
        out
    }

    fn add_node(
        &mut self,
        addr: SocketAddr,
        endpoint: Endpoint,
        role: Role,
        up: LinkSpec,
        down: LinkSpec,
    ) -> usize {
        let index = self.nodes.len();
        let up = Link::new(up, self.seed ^ 0x0075_7000 ^ index as u64);
        let down = Link::new(down, self.seed ^ 0x00d0_0000 ^ index as u64);
        self.nodes.push(Node {
            addr,
            endpoint,
            slots: BTreeMap::new(),
            role,
            up,
            down,
            retry_at: None,
        });
        self.by_addr.insert(addr, index);
        index
    }

    /// A fresh client address: a new IP per node.
    fn fresh_addr(&self) -> SocketAddr {
        let n = self.nodes.len() as u32 + 1;
        let ip = Ipv4Addr::new(10, 1, (n >> 8) as u8, n as u8);
        SocketAddr::new(IpAddr::V4(ip), 50_000)
    }

    /// Starts the network's server (one per simulation).
    ///
    /// # Errors
    /// [`StartError`] if the limits are invalid or a server already runs.
    pub fn start_server(&mut self, config: SimServerConfig) -> Result<SimServer, StartError> {
        config.limits.validate()?;
        if self.server.is_some() {
            return Err(StartError::Io(std::io::Error::from(
                std::io::ErrorKind::AddrInUse,
            )));
        }
        let token_key =
            ring::hkdf::Salt::new(ring::hkdf::HKDF_SHA256, &[]).extract(&self.node_seed(0, 0x70c3));
        let mut server_config = quinn_proto::ServerConfig::new(
            server_crypto(&self.certificate, &[crate::endpoint::ALPN])?,
            Arc::new(token_key),
        );
        apply_limits(&mut server_config, &config.limits, &config.protocol);
        let endpoint = Endpoint::new(
            Arc::new(self.endpoint_config(self.nodes.len())),
            Some(Arc::new(server_config)),
            true,
            None,
        );
        let shared = ServerShared::new(
            SessionConfig::new(config.protocol, config.limits),
            config.auth,
        );
        ServerCore::new(shared.clone()).set_draining(config.draining);
        let role = Role::Server {
            shared: shared.clone(),
        };
        let index = self.add_node(
            SERVER_ADDR,
            endpoint,
            role,
            LinkSpec::perfect(),
            LinkSpec::perfect(),
        );
        self.server = Some(index);
        Ok(SimServer {
            core: ServerCore::new(shared),
        })
    }

    /// Connects a new client to the server.
    ///
    /// # Errors
    /// [`StartError`] if the limits are invalid or the address is taken.
    pub fn connect(&mut self, config: SimClientConfig) -> Result<SimClient, StartError> {
        config.limits.validate()?;
        let addr = config.addr.unwrap_or_else(|| self.fresh_addr());
        if self.by_addr.contains_key(&addr) {
            return Err(StartError::Io(std::io::Error::from(
                std::io::ErrorKind::AddrInUse,
            )));
        }
        let (quinn_config, _) = client_config(
            &ServerTrust::PinnedSha256(vec![self.certificate_hash()]),
            &config.limits,
            &config.protocol,
        )?;
        let now = self.now();
        // It opens a new connection for another attempt, as the native
        // client does.
        let session = SessionConfig {
            token: config.token.clone(),
            retry: true,
            retry_seed: u64::from_le_bytes(
                self.node_seed(self.nodes.len(), 0x7e7e)[..8]
                    .try_into()
                    .unwrap_or_default(),
            ),
            ..SessionConfig::new(config.protocol, config.limits)
        };
        let cell = SessionCell::new(Session::client(Arc::new(session), SERVER_ADDR, now));
        let mut endpoint = Endpoint::new(
            Arc::new(self.endpoint_config(self.nodes.len())),
            None,
            true,
            None,
        );
        let index = self.nodes.len();
        let (handle, conn) = endpoint
            .connect(now, quinn_config.clone(), SERVER_ADDR, "localhost")
            .map_err(|e| StartError::Io(std::io::Error::other(e)))?;
        let role = Role::Client {
            config: quinn_config,
            cell: cell.clone(),
        };
        let node = self.add_node(addr, endpoint, role, config.up, config.down);
        debug_assert_eq!(node, index);
        self.insert_slot(node, handle, SimConn::new(conn, Some(cell.clone()), None));
        Ok(SimClient {
            core: ClientCore::new(cell),
            node: NodeId(node),
            addr,
        })
    }

    /// A raw QUIC peer connecting to the server: no zao session, driven by
    /// the test through [`RawPeer`](super::RawPeer).
    ///
    /// # Errors
    /// [`StartError`] if the address is taken.
    pub fn raw_peer(&mut self, config: RawPeerConfig) -> Result<super::RawPeer, StartError> {
        let addr = config.addr.unwrap_or_else(|| self.fresh_addr());
        if self.by_addr.contains_key(&addr) {
            return Err(StartError::Io(std::io::Error::from(
                std::io::ErrorKind::AddrInUse,
            )));
        }
        let (mut quinn_config, _) = client_config(
            &ServerTrust::PinnedSha256(vec![self.certificate_hash()]),
            &Limits::default(),
            &Protocol::new(),
        )?;
        quinn_config.transport_config(config.transport);
        let mut endpoint = Endpoint::new(
            Arc::new(self.endpoint_config(self.nodes.len())),
            None,
            true,
            None,
        );
        let (handle, conn) = endpoint
            .connect(self.now(), quinn_config, SERVER_ADDR, "localhost")
            .map_err(|e| StartError::Io(std::io::Error::other(e)))?;
        let node = self.add_node(addr, endpoint, Role::Raw, config.up, config.down);
        self.insert_slot(node, handle, SimConn::new(conn, None, None));
        Ok(super::RawPeer::new(NodeId(node), handle.0))
    }

    fn insert_slot(&mut self, node: usize, handle: ConnectionHandle, conn: SimConn) {
        if let Some(node) = self.nodes.get_mut(node) {
            node.slots.insert(
                handle.0,
                Slot {
                    conn,
                    dirty: true,
                    wake_at: None,
                },
            );
        }
    }

    /// Stops the server: every connection is closed (its clients hear
    /// why, as from a real server shutting down), then its address stops
    /// answering and a new server may start there. Its [`SimServer`]
    /// reports nothing more.
    pub fn stop_server(&mut self) {
        let Some(index) = self.server else {
            return;
        };
        if let Some(node) = self.nodes.get_mut(index)
            && let Role::Server { shared, .. } = &node.role
        {
            ServerCore::new(shared.clone()).close_all("server shutting down");
            for slot in node.slots.values_mut() {
                slot.dirty = true;
            }
        }
        // The closes go out on the links.
        self.step();
        self.server = None;
        self.by_addr.remove(&SERVER_ADDR);
        if let Some(node) = self.nodes.get_mut(index) {
            node.slots.clear();
            node.role = Role::Raw;
        }
    }

    /// Changes a client's links from now on.
    pub fn set_links(&mut self, node: NodeId, up: LinkSpec, down: LinkSpec) {
        if let Some(n) = self.nodes.get_mut(node.0) {
            n.up.spec = up;
            n.down.spec = down;
        }
    }

    /// What a client's links did: towards the server, and back.
    #[must_use]
    pub fn link_stats(&self, node: NodeId) -> Option<(LinkStats, LinkStats)> {
        self.nodes.get(node.0).map(|n| (n.up.stats, n.down.stats))
    }

    /// QUIC connections the server holds now, handshakes included: what a
    /// connection flood can make it keep.
    #[must_use]
    pub fn server_connections(&self) -> usize {
        self.server
            .and_then(|i| self.nodes.get(i))
            .map_or(0, |n| n.slots.len())
    }

    /// Datagrams sent to an address no node has.
    #[must_use]
    pub fn unroutable(&self) -> u64 {
        self.unroutable
    }

    /// Real (wall) time the simulation has spent doing the server's work:
    /// its QUIC endpoint and connections (quinn-proto: packetizing,
    /// encrypting, decrypting, acknowledging) and its sessions, everything
    /// a real server does between its application's calls but the socket
    /// system calls. One thread runs it all, so this is the server's CPU;
    /// add the time of the `ServerCore` calls for the whole. For
    /// measurements: it never changes what the simulation does.
    #[must_use]
    pub fn server_busy(&self) -> Duration {
        self.server_busy
    }

    /// Runs the network for `duration` of virtual time.
    pub fn run_for(&mut self, duration: Duration) {
        self.run_until(self.offset + duration);
    }

    /// Runs the network until `at` (virtual time since the start); returns
    /// at once if that is past.
    pub fn run_until(&mut self, at: Duration) {
        let mut steps_here = 0u32;
        let mut last = self.offset;
        loop {
            self.step();
            match self.next_event() {
                Some(next) if next <= at => {
                    self.offset = self.offset.max(next);
                    if self.offset == last {
                        steps_here += 1;
                        if steps_here > MAX_STEPS_PER_INSTANT {
                            tracing::warn!(at = ?self.offset, "zao sim: stuck at one instant");
                            self.offset += Duration::from_micros(1);
                        }
                    } else {
                        steps_here = 0;
                        last = self.offset;
                    }
                    self.deliver_due();
                }
                _ => {
                    self.offset = self.offset.max(at);
                    self.step();
                    return;
                }
            }
        }
    }

    /// The earliest pending event: a datagram's arrival, a held datagram's
    /// release, a connection's timer.
    fn next_event(&self) -> Option<Duration> {
        let packets = self.in_flight.peek().map(|Reverse(p)| p.at);
        let held = self
            .nodes
            .iter()
            .flat_map(|n| n.up.held.iter().chain(n.down.held.iter()))
            .map(|h| h.until)
            .min();
        let timers = self
            .nodes
            .iter()
            .flat_map(|n| n.slots.values().filter_map(|s| s.wake_at).chain(n.retry_at))
            .min()
            .map(|t| t.saturating_duration_since(self.base));
        let auths = self
            .nodes
            .iter()
            .flat_map(|n| n.slots.values())
            .any(|s| s.conn.authenticating())
            // Pending auth futures are polled at every step; keep stepping
            // in small increments while they run.
            .then(|| self.offset + Duration::from_millis(1));
        [packets, held, timers, auths].into_iter().flatten().min()
    }

    /// Delivers every datagram due by now, and releases held ones.
    fn deliver_due(&mut self) {
        let now = self.now();
        for node in &mut self.nodes {
            for link in [&mut node.up, &mut node.down] {
                while let Some(i) = link.held.iter().position(|h| h.until <= self.offset) {
                    if let Some(h) = link.held.remove(i) {
                        self.seq += 1;
                        self.in_flight.push(Reverse(InFlight {
                            at: h.until,
                            seq: self.seq,
                            packet: h.packet,
                        }));
                    }
                }
            }
        }
        while self
            .in_flight
            .peek()
            .is_some_and(|Reverse(p)| p.at <= self.offset)
        {
            let Some(Reverse(InFlight { packet, .. })) = self.in_flight.pop() else {
                break;
            };
            let Some(&index) = self.by_addr.get(&packet.to) else {
                self.unroutable += 1;
                continue;
            };
            self.receive(index, now, packet);
        }
    }

    fn receive(&mut self, index: usize, now: Instant, packet: Packet) {
        let started = (Some(index) == self.server).then(Instant::now);
        self.receive_at(index, now, packet);
        if let Some(started) = started {
            self.server_busy += started.elapsed();
        }
    }

    fn receive_at(&mut self, index: usize, now: Instant, packet: Packet) {
        let Some(node) = self.nodes.get_mut(index) else {
            return;
        };
        self.buf.clear();
        let event = node.endpoint.handle(
            now,
            packet.from,
            None,
            packet.ecn,
            packet.data,
            &mut self.buf,
        );
        let mut out = Vec::new();
        match event {
            None => {}
            Some(DatagramEvent::ConnectionEvent(handle, event)) => {
                if let Some(slot) = node.slots.get_mut(&handle.0) {
                    slot.conn.conn.handle_event(event);
                    slot.dirty = true;
                }
            }
            Some(DatagramEvent::Response(transmit)) => {
                out.push(packet_of(node.addr, &transmit, &self.buf));
            }
            Some(DatagramEvent::NewConnection(incoming)) => {
                let Role::Server { shared, .. } = &node.role else {
                    node.endpoint.ignore(incoming);
                    return;
                };
                let shared = shared.clone();
                let addr = incoming.remote_address();
                let validated = incoming.remote_address_validated();
                let verdict = shared.handle_incoming(addr, validated, incoming.may_retry());
                match verdict {
                    IncomingVerdict::Accept => {
                        let cell = shared.new_session(addr, validated, now);
                        match node.endpoint.accept(incoming, now, &mut self.buf, None) {
                            Ok((handle, conn)) => {
                                node.slots.insert(
                                    handle.0,
                                    Slot {
                                        conn: SimConn::new(conn, Some(cell), Some(shared)),
                                        dirty: true,
                                        wake_at: None,
                                    },
                                );
                            }
                            Err(e) => {
                                if let Some(transmit) = e.response {
                                    out.push(packet_of(node.addr, &transmit, &self.buf));
                                }
                                cell.lock()
                                    .handle_connection_lost(now, link_closed(&e.cause).into());
                                shared.after_drive(&cell);
                            }
                        }
                    }
                    IncomingVerdict::Retry => match node.endpoint.retry(incoming, &mut self.buf) {
                        Ok(transmit) => out.push(packet_of(node.addr, &transmit, &self.buf)),
                        Err(e) => {
                            self.buf.clear();
                            let transmit = node.endpoint.refuse(e.into_incoming(), &mut self.buf);
                            out.push(packet_of(node.addr, &transmit, &self.buf));
                        }
                    },
                    IncomingVerdict::Refuse => {
                        let transmit = node.endpoint.refuse(incoming, &mut self.buf);
                        out.push(packet_of(node.addr, &transmit, &self.buf));
                    }
                }
            }
        }
        for packet in out {
            self.send(index, packet);
        }
    }

    /// Drives every connection that has something to do now, and sends
    /// what they transmit.
    fn step(&mut self) {
        let now = self.now();
        let mut outgoing = Vec::new();
        for (index, node) in self.nodes.iter_mut().enumerate() {
            let started = (Some(index) == self.server).then(Instant::now);
            for (&handle, slot) in &mut node.slots {
                let notified = slot.conn.cell().is_some_and(|c| c.take_notified(None));
                let due = slot.wake_at.is_some_and(|t| t <= now);
                if !(slot.dirty || notified || due || slot.conn.authenticating()) {
                    continue;
                }
                slot.dirty = false;
                if slot.conn.conn.poll_timeout().is_some_and(|t| t <= now) {
                    slot.conn.conn.handle_timeout(now);
                }
                slot.conn.drive(now);
                loop {
                    let mut progressed = false;
                    loop {
                        self.buf.clear();
                        let Some(transmit) = slot.conn.conn.poll_transmit(now, 1, &mut self.buf)
                        else {
                            break;
                        };
                        outgoing.push((index, packet_of(node.addr, &transmit, &self.buf)));
                        progressed = true;
                    }
                    while let Some(event) = slot.conn.conn.poll_endpoint_events() {
                        if let Some(back) =
                            node.endpoint.handle_event(ConnectionHandle(handle), event)
                        {
                            slot.conn.conn.handle_event(back);
                            progressed = true;
                        }
                    }
                    if !progressed {
                        break;
                    }
                    slot.conn.drive(now);
                }
                let session = slot.conn.cell().and_then(|c| c.lock().poll_timeout());
                slot.wake_at = [slot.conn.conn.poll_timeout(), session]
                    .into_iter()
                    .flatten()
                    .min();
            }
            // A raw peer's log outlives its connection: tests read it after.
            node.slots
                .retain(|_, s| s.conn.cell().is_none() || !s.conn.conn.is_drained());
            if let Role::Client { config, cell } = &node.role {
                node.retry_at =
                    Self::reconnect(&mut node.endpoint, &mut node.slots, config, cell, now);
            }
            if let Some(started) = started {
                self.server_busy += started.elapsed();
            }
        }
        for (index, packet) in outgoing {
            self.send(index, packet);
        }
    }

    /// A client whose session asked for another attempt gets it when due,
    /// on a new connection from the same endpoint (as the native client):
    /// the abandoned one is dropped, undriven. When the next attempt is
    /// due, if one is planned and not yet.
    fn reconnect(
        endpoint: &mut Endpoint,
        slots: &mut BTreeMap<usize, Slot>,
        config: &quinn_proto::ClientConfig,
        cell: &Arc<SessionCell>,
        now: Instant,
    ) -> Option<Instant> {
        let at = cell.lock().poll_retry()?;
        if at > now {
            return Some(at);
        }
        // The abandoned attempt sent its close when it ended; the endpoint
        // forgets it (quinn's driver would go on closing it a while).
        let abandoned: Vec<usize> = slots
            .iter()
            .filter(|(_, s)| s.conn.cell().is_some_and(|c| Arc::ptr_eq(c, cell)))
            .map(|(h, _)| *h)
            .collect();
        for handle in abandoned {
            slots.remove(&handle);
            let _ = endpoint.handle_event(ConnectionHandle(handle), EndpointEvent::drained());
        }
        cell.lock().restart(now);
        match endpoint.connect(now, config.clone(), SERVER_ADDR, "localhost") {
            Ok((handle, conn)) => {
                slots.insert(
                    handle.0,
                    Slot {
                        conn: SimConn::new(conn, Some(cell.clone()), None),
                        dirty: true,
                        // Stepped at once, not at the next unrelated event.
                        wake_at: Some(now),
                    },
                );
            }
            Err(e) => cell
                .lock()
                .handle_connection_lost(now, crate::endpoint::connect_error(&e)),
        }
        cell.driven();
        None
    }

    /// Puts a datagram from node `from` on its link.
    fn send(&mut self, from: usize, packet: Packet) {
        let server = self.server;
        let link_node = if Some(from) == server {
            self.by_addr.get(&packet.to).copied()
        } else {
            Some(from)
        };
        let Some(node) = link_node.and_then(|i| self.nodes.get_mut(i)) else {
            self.unroutable += 1;
            return;
        };
        let link = if Some(from) == server {
            &mut node.down
        } else {
            &mut node.up
        };
        match link.fate(self.offset, packet.data.len()) {
            super::link::Fate::Dropped => {}
            super::link::Fate::Delivered {
                delay,
                duplicate,
                held,
            } => {
                let at = self.offset + delay;
                // Datagrams held back wait for this one.
                let mut released = Vec::new();
                for h in &mut link.held {
                    h.after = h.after.saturating_sub(1);
                }
                while let Some(i) = link.held.iter().position(|h| h.after == 0) {
                    if let Some(h) = link.held.remove(i) {
                        released.push(h.packet);
                    }
                }
                if let Some(extra) = duplicate {
                    let copy = Packet {
                        from: packet.from,
                        to: packet.to,
                        ecn: packet.ecn,
                        data: packet.data.clone(),
                    };
                    self.seq += 1;
                    self.in_flight.push(Reverse(InFlight {
                        at: self.offset + extra,
                        seq: self.seq,
                        packet: copy,
                    }));
                }
                if held > 0 {
                    link.held.push_back(Held {
                        after: held,
                        until: at + HOLD_MAX,
                        packet,
                    });
                } else {
                    self.seq += 1;
                    self.in_flight.push(Reverse(InFlight {
                        at,
                        seq: self.seq,
                        packet,
                    }));
                }
                for packet in released {
                    self.seq += 1;
                    self.in_flight.push(Reverse(InFlight {
                        at: at + Duration::from_micros(1),
                        seq: self.seq,
                        packet,
                    }));
                }
            }
        }
    }

    /// The raw peer's connection, to act on; marks it to be driven.
    pub(crate) fn raw_conn(&mut self, node: NodeId, handle: usize) -> Option<&mut SimConn> {
        let slot = self.nodes.get_mut(node.0)?.slots.get_mut(&handle)?;
        slot.dirty = true;
        Some(&mut slot.conn)
    }

    /// The raw peer's connection, to look at.
    pub(crate) fn raw_view(&self, node: NodeId, handle: usize) -> Option<&SimConn> {
        self.nodes.get(node.0)?.slots.get(&handle).map(|s| &s.conn)
    }
}

fn packet_of(from: SocketAddr, transmit: &quinn_proto::Transmit, buf: &[u8]) -> Packet {
    Packet {
        from,
        to: transmit.destination,
        ecn: transmit.ecn,
        data: BytesMut::from(buf.get(..transmit.size).unwrap_or(buf)),
    }
}
