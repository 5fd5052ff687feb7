//! WebTransport (HTTP/3) on the QUIC endpoint: what the link does with a
//! connection whose TLS handshake chose ALPN `h3` (a browser's), through
//! web-transport-quinn. The zao session is the same: its control stream is
//! the session's first bidirectional stream, its reliable channels the
//! session's unidirectional streams, its datagrams the session's
//! datagrams. docs/TRANSPORTS.md describes the mapping.

use std::pin::pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use quinn::{Connection, VarInt};
use web_transport_quinn as wt;
use wt::generic::poll::Session as _;

use super::link::{LinkRecv, LinkSend};
use crate::endpoint::{link_closed, stream_id};
use crate::proto::pump::{Accepted, DatagramRefused, LinkClosed, Opened, Read};
use crate::proto::{ClosedBy, DisconnectReason, StreamId, TransportError};

/// HTTP/3's ALPN, which browsers offer for WebTransport.
pub(crate) const ALPN: &[u8] = b"h3";

/// HTTP/3's `H3_GENERAL_PROTOCOL_ERROR`: a CONNECT that went wrong.
const H3_GENERAL_PROTOCOL_ERROR: u32 = 0x101;

/// The ALPN the TLS handshake chose.
pub(crate) fn alpn(conn: &Connection) -> Option<Vec<u8>> {
    conn.handshake_data()?
        .downcast::<quinn::crypto::rustls::HandshakeData>()
        .ok()?
        .protocol
}

/// A server's side of WebTransport's handshake: HTTP/3 SETTINGS both
/// ways, then the browser's CONNECT, answered 200. The handshake already
/// offered HTTP/3's streams beside zao's (`endpoint::server_config`).
pub(crate) async fn accept(conn: Connection) -> Result<wt::Session, String> {
    let request = wt::Request::accept(conn).await.map_err(|e| e.to_string())?;
    request.ok().await.map_err(|e| e.to_string())
}

/// The stream limits of a WebTransport connection: zao's and HTTP/3's
/// (`BROWSER_STREAMS`). A server's handshake already offered them; a
/// client raises its own here.
fn raise_stream_limits(conn: &Connection, allowance: u32) {
    let (bidi, uni) = crate::endpoint::BROWSER_STREAMS;
    conn.set_max_concurrent_bi_streams(VarInt::from_u32(1 + bidi));
    conn.set_max_concurrent_uni_streams(VarInt::from_u32(allowance.saturating_add(uni)));
}

/// A client's side: SETTINGS, then CONNECT to `url`. The server opens
/// HTTP/3's streams beside zao's, as a browser does.
pub(crate) async fn connect(
    conn: Connection,
    url: url::Url,
    allowance: u32,
) -> Result<wt::Session, String> {
    raise_stream_limits(&conn, allowance);
    wt::Session::connect(conn, wt::proto::ConnectRequest::new(url))
        .await
        .map_err(|e| e.to_string())
}

/// The HTTP/3 handshake failed: close the connection and say why.
pub(crate) fn handshake_failed(conn: &Connection, why: &str) -> DisconnectReason {
    let code = wt::proto::error_to_http3(H3_GENERAL_PROTOCOL_ERROR);
    conn.close(
        VarInt::from_u64(code).unwrap_or(VarInt::MAX),
        why.as_bytes(),
    );
    DisconnectReason::Transport(TransportError::Quic {
        code,
        by: ClosedBy::Local,
        reason: format!("WebTransport handshake failed: {why}"),
    })
}

/// The session's end, in the pump's terms. web-transport-quinn reports
/// our own close and a peer's CONNECT stream ending (a tab that went away)
/// alike, so `we_closed` tells them apart.
pub(crate) fn poll_closed(
    session: &mut wt::Session,
    we_closed: bool,
    cx: &mut Context<'_>,
) -> Poll<DisconnectReason> {
    session.poll_closed(cx).map(|e| closed(e, we_closed).into())
}

fn closed(e: wt::SessionError, we_closed: bool) -> LinkClosed {
    match e {
        wt::SessionError::WebTransportError(wt::WebTransportError::Closed(code, reason)) => {
            LinkClosed::ByPeer {
                code: u64::from(code),
                reason: Bytes::from(reason),
            }
        }
        wt::SessionError::ConnectionError(quinn::ConnectionError::LocallyClosed) if we_closed => {
            LinkClosed::Locally
        }
        wt::SessionError::ConnectionError(quinn::ConnectionError::LocallyClosed) => {
            LinkClosed::ByPeer {
                code: 0,
                reason: Bytes::from_static(b"the WebTransport session ended"),
            }
        }
        wt::SessionError::ConnectionError(e) => link_closed(&e),
        other => LinkClosed::Transport {
            code: 0,
            by: ClosedBy::Local,
            reason: other.to_string(),
        },
    }
}

/// The next datagram of this session; one for another session id (none
/// exists: a browser opens one session per connection) is skipped.
pub(crate) fn poll_datagram(
    session: &mut wt::Session,
    cx: &mut Context<'_>,
) -> Poll<Option<Bytes>> {
    loop {
        match session.poll_recv_datagram(cx) {
            Poll::Ready(Ok(datagram)) => return Poll::Ready(Some(datagram)),
            Poll::Ready(Err(wt::SessionError::WebTransportError(
                wt::WebTransportError::UnknownSession,
            ))) => {}
            Poll::Ready(Err(_)) => return Poll::Ready(None),
            Poll::Pending => return Poll::Pending,
        }
    }
}

/// The next stream the peer opened. The first bidirectional one is zao's
/// control stream: its QUIC id is not 0 (the CONNECT request's is), so it
/// is named [`StreamId::CONTROL`]; a later one keeps its own id, which the
/// session refuses.
pub(crate) fn poll_accept(
    session: &mut wt::Session,
    control_given: &mut bool,
    cx: &mut Context<'_>,
) -> Poll<Option<Accepted<LinkRecv, LinkSend>>> {
    if let Poll::Ready(accepted) = session.poll_accept_uni(cx) {
        return Poll::Ready(accepted.ok().map(|recv| Accepted {
            id: stream_id(recv.quic_id()),
            recv: LinkRecv::Web(recv),
            send: None,
        }));
    }
    session.poll_accept_bi(cx).map(|accepted| {
        accepted.ok().map(|(send, recv)| Accepted {
            id: bidi_id(control_given, recv.quic_id()),
            recv: LinkRecv::Web(recv),
            send: Some(LinkSend::Web(send)),
        })
    })
}

fn bidi_id(control_given: &mut bool, id: quinn::StreamId) -> StreamId {
    if *control_given {
        stream_id(id)
    } else {
        *control_given = true;
        StreamId::CONTROL
    }
}

/// Reads what a stream has, as the raw QUIC link does.
pub(crate) fn poll_read(recv: &mut wt::RecvStream, max: usize, cx: &mut Context<'_>) -> Poll<Read> {
    // Cancel-safe: quinn's read parks its waker in its stream table.
    match pin!(recv.read_chunk(max, true)).poll(cx) {
        Poll::Ready(Ok(Some(chunk))) => Poll::Ready(Read::Data(chunk.bytes)),
        Poll::Ready(Ok(None)) => Poll::Ready(Read::Finished),
        Poll::Ready(Err(wt::ReadError::Reset(code))) => Poll::Ready(Read::Reset(u64::from(code))),
        Poll::Ready(Err(wt::ReadError::InvalidReset(code))) => {
            Poll::Ready(Read::Reset(code.into_inner()))
        }
        Poll::Ready(Err(_)) => Poll::Ready(Read::Gone),
        Poll::Pending => Poll::Pending,
    }
}

/// Opens a stream: unidirectional for a reliable channel, bidirectional
/// for a client's control stream.
pub(crate) fn poll_open(
    session: &mut wt::Session,
    control_given: &mut bool,
    bidi: bool,
    cx: &mut Context<'_>,
) -> Poll<Option<Opened<LinkSend, LinkRecv>>> {
    if bidi {
        session.poll_open_bi(cx).map(|opened| {
            opened.ok().map(|(send, recv)| Opened {
                send: LinkSend::Web(send),
                recv: Some((bidi_id(control_given, recv.quic_id()), LinkRecv::Web(recv))),
            })
        })
    } else {
        session.poll_open_uni(cx).map(|opened| {
            opened.ok().map(|send| Opened {
                send: LinkSend::Web(send),
                recv: None,
            })
        })
    }
}

/// Sends a datagram, or refuses it when the send buffer is full (the
/// session chooses which to drop), as the raw QUIC link does.
pub(crate) fn try_send_datagram(
    session: &wt::Session,
    datagram: Bytes,
) -> Result<(), (DatagramRefused, Bytes)> {
    if datagram.len() > session.max_datagram_size() {
        return Err((DatagramRefused::Gone, Bytes::new()));
    }
    if session.datagram_send_buffer_space() < datagram.len() {
        return Err((DatagramRefused::Full, datagram));
    }
    session
        .send_datagram(datagram)
        .map_err(|_| (DatagramRefused::Gone, Bytes::new()))
}
