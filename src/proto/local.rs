//! A client in the server's own process (a listen server, host-as-client):
//! two sessions joined in memory, with no socket, no TLS and no QUIC. The
//! server admits it like any client (the hello, the protocol check, the
//! auth callback, a client id, the same events), so game code cannot tell
//! it from a remote one; whoever holds the [`LocalLink`] drives it.

use std::collections::{BTreeMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use super::cell::SessionCell;
use super::server::{Authentication, ServerShared};
use super::{
    AuthFuture, ClientCore, ClosedBy, DisconnectReason, IncomingVerdict, OutStream, PathStats,
    RefuseReason, Role, ServerCore, Session, SessionConfig, StreamId, StreamWrite, Transmit,
};

/// The address a local client has on its server: loopback, port 0 (no
/// socket has it).
pub const LOCAL_ADDR: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 0);

/// Most bytes a link holds for one stream that its reader does not want
/// yet: past it, what waits stays in the sending session's backlog, which
/// bounds it ([`Limits::reliable_backlog`](super::Limits::reliable_backlog)).
const HELD_PER_STREAM: usize = 64 * 1024;

/// What one side writes toward the other.
#[derive(Debug, Default)]
struct Direction {
    /// The stream id each of the writer's streams has at the reader.
    ids: BTreeMap<OutStream, StreamId>,
    /// Unidirectional streams the writer has opened.
    next_uni: u64,
    /// Writes the reader has not taken yet, per stream, in order.
    held: BTreeMap<StreamId, VecDeque<StreamWrite>>,
}

impl Direction {
    fn held_bytes(&self, id: StreamId) -> usize {
        self.held.get(&id).map_or(0, |q| {
            q.iter()
                .map(|w| match w {
                    StreamWrite::Data(d) => d.len(),
                    StreamWrite::Finish => 0,
                })
                .sum()
        })
    }

    fn open_uni(&mut self, writer: Role) -> StreamId {
        let id = StreamId::uni(writer, self.next_uni);
        self.next_uni += 1;
        id
    }
}

/// The in-memory connection between a [`ServerCore`] and a local
/// [`ClientCore`]: call [`drive`](Self::drive) whenever either side may
/// have something to deliver (the Bevy plugin does, in every update).
///
/// ```
/// use std::time::Instant;
/// use zao::proto::{ClientEvent, Protocol, ServerCore, ServerEvent};
///
/// let server = ServerCore::local(Protocol::new(), Default::default(), None)?;
/// let (mut client, mut link) = server.connect_local(None);
/// link.drive(Instant::now());
/// # let mut server = server;
/// assert!(matches!(server.poll_event(), Some(ServerEvent::Connected { .. })));
/// assert!(matches!(client.poll_event(), Some(ClientEvent::Connected { .. })));
/// # Ok::<(), zao::proto::LimitsError>(())
/// ```
#[derive(Debug)]
pub struct LocalLink {
    shared: Arc<ServerShared>,
    server: Arc<SessionCell>,
    client: Arc<SessionCell>,
    /// The server's auth callback, while it runs.
    auth: Option<AuthFutureBox>,
    up: Direction,
    down: Direction,
}

/// An auth future, printable, and shareable between threads as the
/// link's holders need (a Bevy resource is `Sync`): only `drive` polls it.
struct AuthFutureBox(std::sync::Mutex<AuthFuture>);

impl core::fmt::Debug for AuthFutureBox {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("AuthFuture")
    }
}

impl ServerCore {
    /// A server with no network backend: only local clients
    /// ([`connect_local`](Self::connect_local)) reach it. A single-player
    /// game that keeps the multiplayer code path uses it.
    ///
    /// # Errors
    /// [`LimitsError`](super::LimitsError) if the limits cannot work.
    pub fn local(
        protocol: super::Protocol,
        limits: super::Limits,
        auth: Option<super::AuthCallback>,
    ) -> Result<Self, super::LimitsError> {
        limits.validate()?;
        Ok(Self::new(ServerShared::new(
            SessionConfig::new(protocol, limits),
            auth,
        )))
    }

    /// Connects a client living in this process: it is admitted as any
    /// client is (the hello, the protocol check, `token` through the auth
    /// callback, `max_clients`), gets its own id and appears in
    /// [`poll_event`](Self::poll_event) as a client from [`LOCAL_ADDR`].
    /// Nothing moves until the link is [driven](LocalLink::drive).
    #[must_use]
    pub fn connect_local(&self, token: Option<Vec<u8>>) -> (ClientCore, LocalLink) {
        let shared = self.shared().clone();
        let now = Instant::now();
        let config = SessionConfig {
            token,
            ..SessionConfig::new(
                shared.config().protocol.clone(),
                shared.config().limits.clone(),
            )
        };
        let client = SessionCell::new(Session::client(Arc::new(config), LOCAL_ADDR, now));
        let server = shared.new_session(LOCAL_ADDR, now);
        let max = Some(shared.config().limits.max_datagram_payload);
        match shared.handle_incoming(LOCAL_ADDR, true, false) {
            IncomingVerdict::Accept => {
                for cell in [&client, &server] {
                    let mut session = cell.lock();
                    session.handle_path_stats(now, PathStats::default());
                    session.handle_connected(now, max);
                }
            }
            IncomingVerdict::Retry | IncomingVerdict::Refuse => {
                // A server at its limits refuses a local client as it
                // would a remote one.
                let reason = DisconnectReason::Refused(RefuseReason::ServerFull);
                client.lock().handle_connection_lost(now, reason.clone());
                server.lock().handle_connection_lost(now, reason);
            }
        }
        let link = LocalLink {
            shared,
            server,
            client: client.clone(),
            auth: None,
            up: Direction::default(),
            down: Direction::default(),
        };
        (ClientCore::new(client), link)
    }
}

impl LocalLink {
    /// Moves everything either session has for the other, runs their
    /// timers due at `now` and the server's auth callback, until neither
    /// has more.
    pub fn drive(&mut self, now: Instant) {
        for _ in 0..64 {
            let mut moved = false;
            moved |= carry(now, &self.client, &self.server, Role::Client, &mut self.up);
            moved |= carry(
                now,
                &self.server,
                &self.client,
                Role::Server,
                &mut self.down,
            );
            moved |= self.authenticate(now);
            for cell in [&self.client, &self.server] {
                // Timers due, and what a full inbound queue held back once
                // the application made room.
                let mut session = cell.lock();
                let (due, before) = (
                    session.poll_timeout().is_some_and(|t| t <= now),
                    session.has_events(),
                );
                session.handle_timeout(now);
                moved |= due || session.has_events() != before;
            }
            self.shared.after_drive(&self.server);
            // The application's sends since the last look.
            moved |= self.client.take_notified(None) | self.server.take_notified(None);
            if !moved {
                break;
            }
        }
    }

    /// Whether both ends are closed: the link has nothing left to do.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.client.lock().is_closed() && self.server.lock().is_closed()
    }

    /// Runs the server's auth callback for the local client; whether it
    /// finished.
    fn authenticate(&mut self, now: Instant) -> bool {
        let request = self.server.lock().poll_auth();
        if let Some(request) = request {
            match self.shared.authenticate(&self.server, request, now) {
                Authentication::Run(future) => {
                    self.auth = Some(AuthFutureBox(std::sync::Mutex::new(future)));
                }
                Authentication::Done => return true,
            }
        }
        let Some(AuthFutureBox(future)) = &mut self.auth else {
            return false;
        };
        let future = future
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.server.lock().is_handshake_over() {
            self.auth = None;
            return false;
        }
        let mut cx = Context::from_waker(Waker::noop());
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(result) => {
                self.auth = None;
                self.shared.admit(&self.server, now, result.map(Some));
                true
            }
            Poll::Pending => false,
        }
    }

    /// The time the next timer of either session is due, if any: drive
    /// the link then at the latest.
    #[must_use]
    pub fn next_timeout(&self) -> Option<Instant> {
        let a = self.client.lock().poll_timeout();
        let b = self.server.lock().poll_timeout();
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Carries what `from` (of `role`) has for `to`: datagrams, stream writes
/// (as far as the reader wants them), a close. Whether anything moved.
fn carry(
    now: Instant,
    from: &SessionCell,
    to: &SessionCell,
    role: Role,
    dir: &mut Direction,
) -> bool {
    let mut moved = false;
    let mut datagrams = Vec::new();
    let mut close = None;
    {
        let mut session = from.lock();
        while let Some(transmit) = session.poll_transmit() {
            match transmit {
                Transmit::Datagram(d) => datagrams.push(d),
                Transmit::Close { code, reason } => close = Some((code, reason)),
            }
        }
        let writable: Vec<OutStream> = session.writable_streams().collect();
        for stream in writable {
            let id = match stream {
                OutStream::Control => StreamId::CONTROL,
                OutStream::Channel(_) => match dir.ids.get(&stream) {
                    Some(&id) => id,
                    None => {
                        let id = dir.open_uni(role);
                        dir.ids.insert(stream, id);
                        id
                    }
                },
            };
            while dir.held_bytes(id) < HELD_PER_STREAM {
                let Some(write) = session.poll_stream(stream) else {
                    break;
                };
                dir.held.entry(id).or_default().push_back(write);
                moved = true;
            }
        }
        while let Some(write) = session.poll_unordered() {
            let id = dir.open_uni(role);
            let queue = dir.held.entry(id).or_default();
            queue.push_back(StreamWrite::Data(write.data));
            queue.push_back(StreamWrite::Finish);
            moved = true;
        }
    }
    let mut session = to.lock();
    for d in datagrams {
        session.handle_datagram(now, d);
        moved = true;
    }
    for (&id, queue) in &mut dir.held {
        while !queue.is_empty() && session.wants_stream_bytes(id) {
            match queue.pop_front() {
                Some(StreamWrite::Data(data)) => session.handle_stream_bytes(now, id, &data),
                Some(StreamWrite::Finish) => session.handle_stream_finished(now, id),
                None => {}
            }
            moved = true;
        }
    }
    dir.held.retain(|_, q| !q.is_empty());
    if let Some((code, reason)) = close {
        let reason = String::from_utf8_lossy(&reason).into_owned();
        session.handle_connection_lost(
            now,
            DisconnectReason::Closed {
                by: ClosedBy::Peer,
                code,
                reason: reason.clone(),
            },
        );
        drop(session);
        from.lock().handle_connection_lost(
            now,
            DisconnectReason::Closed {
                by: ClosedBy::Local,
                code,
                reason,
            },
        );
        moved = true;
    }
    moved
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{Channel, ClientEvent, Direction as Dir, Protocol, ServerEvent, Target};

    #[derive(Clone, Debug, PartialEq, crate::Encode, crate::Decode, crate::NetMessage)]
    #[zao(id = 9)]
    struct Chat {
        text: String,
    }

    #[test]
    fn a_local_client_is_admitted_and_messages_cross_both_ways() {
        let mut p = Protocol::new();
        p.add::<Chat>(Channel::RELIABLE, Dir::Both);
        let mut server = ServerCore::local(p, crate::proto::Limits::default(), None).unwrap();
        let (mut client, mut link) = server.connect_local(None);
        let now = Instant::now();
        link.drive(now);
        let id = match server.poll_event() {
            Some(ServerEvent::Connected { client, addr, .. }) => {
                assert_eq!(addr, LOCAL_ADDR);
                client
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(
            client.poll_event(),
            Some(ClientEvent::Connected { client: id })
        );
        client
            .send(Channel::RELIABLE, &Chat { text: "up".into() })
            .unwrap();
        server
            .send(
                Target::One(id),
                Channel::RELIABLE,
                &Chat {
                    text: "down".into(),
                },
            )
            .unwrap();
        link.drive(now);
        match server.poll_event() {
            Some(ServerEvent::Message { message, .. }) => {
                assert_eq!(message.decode::<Chat>().unwrap().text, "up");
            }
            other => panic!("{other:?}"),
        }
        match client.poll_event() {
            Some(ClientEvent::Message { message, .. }) => {
                assert_eq!(message.decode::<Chat>().unwrap().text, "down");
            }
            other => panic!("{other:?}"),
        }
        server.disconnect(id, "bye");
        link.drive(now);
        assert!(matches!(
            client.poll_event(),
            Some(ClientEvent::Disconnected { .. })
        ));
        assert!(matches!(
            server.poll_event(),
            Some(ServerEvent::Disconnected { .. })
        ));
        assert!(link.is_closed());
    }
}
