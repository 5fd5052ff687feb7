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

use bytes::Bytes;

use super::cell::SessionCell;
use super::pump::{Accepted, DatagramRefused, LinkClosed, Opened, Pump, Read, Transport};
use super::server::ServerShared;
use super::{
    ClientCore, DisconnectReason, IncomingVerdict, PathStats, RefuseReason, Role, ServerCore,
    Session, SessionConfig, StreamId,
};

/// The address a local client has on its server: loopback, port 0 (no
/// socket has it).
pub const LOCAL_ADDR: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 0);

/// Most bytes a stream holds that its reader has not taken: past it the
/// writer waits, as behind QUIC's flow control, and what waits stays in
/// the sending session's backlog, which bounds it
/// ([`Limits::reliable_backlog`](super::Limits::reliable_backlog)).
const HELD_PER_STREAM: usize = 64 * 1024;
/// Most datagram bytes one direction holds that its reader has not taken.
const HELD_DATAGRAMS: usize = 256 * 1024;

/// What one side writes toward the other.
#[derive(Debug, Default)]
struct Lane {
    datagrams: VecDeque<Bytes>,
    datagram_bytes: usize,
    /// Streams the writer opened that the reader has not accepted.
    opened: VecDeque<StreamId>,
    /// Each stream's bytes the reader has not read, and whether it ended.
    streams: BTreeMap<StreamId, Flow>,
    /// Unidirectional streams the writer has opened.
    next_uni: u64,
}

#[derive(Debug, Default)]
struct Flow {
    data: VecDeque<Bytes>,
    bytes: usize,
    finished: bool,
}

/// Both directions of the in-memory connection, and how it ended.
#[derive(Debug, Default)]
struct Pipe {
    /// Client to server.
    up: Lane,
    /// Server to client.
    down: Lane,
    /// The client was refused before any handshake (the server's limits).
    refused: Option<DisconnectReason>,
    /// Who closed the connection, with the code and reason.
    closed: Option<(Role, u64, Bytes)>,
    /// The largest datagram either side takes.
    max_datagram: usize,
}

/// One end of the pipe, as its pump's transport: a view made for one step.
struct End<'a> {
    pipe: &'a mut Pipe,
    role: Role,
}

impl End<'_> {
    /// The lane this end writes, and the one it reads.
    fn lanes(&mut self) -> (&mut Lane, &mut Lane) {
        match self.role {
            Role::Client => (&mut self.pipe.up, &mut self.pipe.down),
            Role::Server => (&mut self.pipe.down, &mut self.pipe.up),
        }
    }
}

impl Transport for End<'_> {
    fn name(&self) -> &'static str {
        "local"
    }

    type Send = StreamId;
    type Recv = StreamId;

    fn poll_connected(
        &mut self,
        _cx: &mut Context<'_>,
    ) -> Poll<Result<Option<usize>, DisconnectReason>> {
        Poll::Ready(match &self.pipe.refused {
            Some(reason) => Err(reason.clone()),
            None => Ok(Some(self.pipe.max_datagram)),
        })
    }

    fn poll_closed(&mut self, _cx: &mut Context<'_>) -> Poll<DisconnectReason> {
        match &self.pipe.closed {
            Some((by, _, _)) if *by == self.role => Poll::Ready(LinkClosed::Locally.into()),
            Some((_, code, reason)) => Poll::Ready(
                LinkClosed::ByPeer {
                    code: *code,
                    reason: reason.clone(),
                }
                .into(),
            ),
            None => Poll::Pending,
        }
    }

    fn poll_datagram(&mut self, _cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let (_, lane) = self.lanes();
        match lane.datagrams.pop_front() {
            Some(datagram) => {
                lane.datagram_bytes -= datagram.len();
                Poll::Ready(Some(datagram))
            }
            None => Poll::Pending,
        }
    }

    fn poll_accept(&mut self, _cx: &mut Context<'_>) -> Poll<Option<Accepted<StreamId, StreamId>>> {
        let (_, lane) = self.lanes();
        match lane.opened.pop_front() {
            Some(id) => Poll::Ready(Some(Accepted {
                id,
                recv: id,
                send: (!id.is_uni()).then_some(id),
            })),
            None => Poll::Pending,
        }
    }

    fn poll_read(&mut self, _cx: &mut Context<'_>, recv: &mut StreamId, max: usize) -> Poll<Read> {
        let (_, lane) = self.lanes();
        let Some(flow) = lane.streams.get_mut(recv) else {
            return Poll::Ready(Read::Gone);
        };
        match flow.data.pop_front() {
            Some(mut data) => {
                if data.len() > max {
                    flow.data.push_front(data.split_off(max));
                }
                flow.bytes -= data.len();
                Poll::Ready(Read::Data(data))
            }
            None if flow.finished => {
                lane.streams.remove(recv);
                Poll::Ready(Read::Finished)
            }
            None => Poll::Pending,
        }
    }

    fn poll_open(
        &mut self,
        _cx: &mut Context<'_>,
        bidi: bool,
    ) -> Poll<Option<Opened<StreamId, StreamId>>> {
        let role = self.role;
        let (lane, back) = self.lanes();
        let id = if bidi {
            StreamId::CONTROL
        } else {
            let id = StreamId::uni(role, lane.next_uni);
            lane.next_uni += 1;
            id
        };
        lane.opened.push_back(id);
        lane.streams.insert(id, Flow::default());
        if bidi {
            back.streams.insert(id, Flow::default());
        }
        Poll::Ready(Some(Opened {
            send: id,
            recv: bidi.then_some((id, id)),
        }))
    }

    fn set_priority(&mut self, _send: &mut StreamId, _priority: i32) {}

    fn poll_write(
        &mut self,
        _cx: &mut Context<'_>,
        send: &mut StreamId,
        data: &mut Bytes,
    ) -> Poll<Result<(), ()>> {
        let (lane, _) = self.lanes();
        let Some(flow) = lane.streams.get_mut(send) else {
            return Poll::Ready(Err(()));
        };
        let room = HELD_PER_STREAM.saturating_sub(flow.bytes);
        if room == 0 {
            return Poll::Pending;
        }
        let taken = data.split_to(room.min(data.len()));
        flow.bytes += taken.len();
        flow.data.push_back(taken);
        Poll::Ready(Ok(()))
    }

    fn finish(&mut self, send: &mut StreamId) {
        let (lane, _) = self.lanes();
        if let Some(flow) = lane.streams.get_mut(send) {
            flow.finished = true;
        }
    }

    fn poll_acked(&mut self, _cx: &mut Context<'_>, send: &mut StreamId) -> Poll<()> {
        // In memory, taken by the reader is acknowledged.
        if self.pipe.closed.is_some() {
            return Poll::Ready(());
        }
        let (lane, _) = self.lanes();
        match lane.streams.get(send) {
            Some(flow) if !flow.data.is_empty() => Poll::Pending,
            _ => Poll::Ready(()),
        }
    }

    fn try_send_datagram(&mut self, datagram: Bytes) -> Result<(), (DatagramRefused, Bytes)> {
        if self.pipe.closed.is_some() {
            return Err((DatagramRefused::Gone, datagram));
        }
        let (lane, _) = self.lanes();
        if lane.datagram_bytes + datagram.len() > HELD_DATAGRAMS {
            return Err((DatagramRefused::Full, datagram));
        }
        lane.datagram_bytes += datagram.len();
        lane.datagrams.push_back(datagram);
        Ok(())
    }

    fn close(&mut self, code: u64, reason: &[u8]) {
        if self.pipe.closed.is_none() {
            self.pipe.closed = Some((self.role, code, Bytes::copy_from_slice(reason)));
        }
    }

    fn path_stats(&self) -> PathStats {
        PathStats::default()
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
    client: Pump<StreamId, StreamId>,
    server: Pump<StreamId, StreamId>,
    pipe: Pipe,
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
        let server = shared.new_session(LOCAL_ADDR, true, now);
        let mut pipe = Pipe {
            max_datagram: shared.config().limits.max_datagram_payload,
            ..Pipe::default()
        };
        match shared.handle_incoming(LOCAL_ADDR, true, false) {
            IncomingVerdict::Accept => {}
            // A server at its limits refuses a local client as it would a
            // remote one.
            IncomingVerdict::Retry | IncomingVerdict::Refuse => {
                pipe.refused = Some(DisconnectReason::Refused(RefuseReason::Busy));
            }
        }
        let link = LocalLink {
            client: Pump::new(client.clone(), None),
            server: Pump::new(server, Some(shared)),
            pipe,
        };
        (ClientCore::new(client), link)
    }
}

impl LocalLink {
    /// Moves everything either session has for the other, runs their
    /// timers due at `now` and the server's auth callback, until neither
    /// has more: both ends are the one pump over an in-memory pipe.
    pub fn drive(&mut self, now: Instant) {
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..64 {
            let mut moved = false;
            for (pump, role) in [
                (&mut self.client, Role::Client),
                (&mut self.server, Role::Server),
            ] {
                let mut end = End {
                    pipe: &mut self.pipe,
                    role,
                };
                let step = pump.step(now, &mut cx, &mut end);
                moved |= step.moved || step.busy;
            }
            // The application's sends since the last look.
            moved |=
                self.client.cell().take_notified(None) | self.server.cell().take_notified(None);
            if !moved {
                break;
            }
        }
    }

    /// Whether both ends are closed: the link has nothing left to do.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.client.cell().lock().is_closed() && self.server.cell().lock().is_closed()
    }

    /// The time the next timer of either session is due, if any: drive
    /// the link then at the latest.
    #[must_use]
    pub fn next_timeout(&self) -> Option<Instant> {
        let a = self.client.cell().lock().poll_timeout();
        let b = self.server.cell().lock().poll_timeout();
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
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
