//! Inputs found by the fuzz targets in `fuzz/`, kept as tests with the
//! behaviour they must have.

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use zao::proto::{
    Channel, ChannelKind, ClientId, CloseCode, Direction, Hello, Limits, Outgoing, ParsedDatagram,
    Protocol, Session, SessionConfig, SessionEvent, SnapshotReceiver, SnapshotVerdict, StreamId,
    Transmit, frame_header, split_datagram,
};
use zao::{Decode, Encode, NetMessage};

/// Parses a snapshot datagram and sequences it, as the transport does.
fn receive(rx: &mut SnapshotReceiver, datagram: &[u8]) -> SnapshotVerdict {
    match split_datagram(&Bytes::copy_from_slice(datagram)).unwrap() {
        ParsedDatagram::Snapshot(header, message) => {
            let (id, _) = zao::split_message(&message).unwrap();
            rx.handle_chunk(id, header)
        }
        _ => panic!("not a snapshot datagram"),
    }
}

/// fuzz target `snapshot_chunks`. A snapshot's chunk count changes (2 chunks
/// at seq 10, 3 at seq 11); a late chunk of an older snapshot (seq 5) with
/// the new count lands at an index where seq 10 was already delivered. The
/// receiver used to clear its per-index history at the count change and
/// deliver seq 5, an older snapshot after a newer one; it now keeps the
/// newest seq at the change as a floor.
#[test]
fn older_snapshot_after_a_chunk_count_change_is_stale() {
    let mut rx = SnapshotReceiver::new();
    // kind 02, seq, chunk, chunks, then WorldSnapshot (id 04) with tick = seq and no players.
    let seq10_chunk1_of2 = [0x02, 0x0a, 0x01, 0x02, 0x04, 0x0a, 0x00, 0x00, 0x00, 0x00];
    let seq11_chunk0_of3 = [0x02, 0x0b, 0x00, 0x03, 0x04, 0x0b, 0x00, 0x00, 0x00, 0x00];
    let seq05_chunk1_of3 = [0x02, 0x05, 0x01, 0x03, 0x04, 0x05, 0x00, 0x00, 0x00, 0x00];
    assert_eq!(
        receive(&mut rx, &seq10_chunk1_of2),
        SnapshotVerdict::Deliver
    );
    assert_eq!(
        receive(&mut rx, &seq11_chunk0_of3),
        SnapshotVerdict::Deliver
    );
    assert_eq!(receive(&mut rx, &seq05_chunk1_of3), SnapshotVerdict::Stale);
}

/// fuzz target `snapshot_chunks` (crash-a081f595…, reduced): the same
/// (seq 1, chunk 1) is delivered twice, once under each chunk count, because
/// the count changed in between (to 2320 at seq 23296).
#[test]
fn same_seq_and_chunk_is_not_delivered_twice_across_a_chunk_count_change() {
    let mut rx = SnapshotReceiver::new();
    // seq 1, chunk 1 of 64.
    let first = [0x02, 0x01, 0x01, 0x40, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00];
    // seq 23296 (80 b6 01), chunk 8 of 2320 (90 12).
    let newer = [
        0x02, 0x80, 0xb6, 0x01, 0x08, 0x90, 0x12, 0x04, 0x00, 0x5b, 0x00, 0x00, 0x00,
    ];
    // seq 1, chunk 1 of 2320 (90 12).
    let again = [
        0x02, 0x01, 0x01, 0x90, 0x12, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00,
    ];
    assert_eq!(receive(&mut rx, &first), SnapshotVerdict::Deliver);
    assert_eq!(receive(&mut rx, &newer), SnapshotVerdict::Deliver);
    assert_ne!(receive(&mut rx, &again), SnapshotVerdict::Deliver);
}

/// A sequenced message clients send (the reference protocol has none).
#[derive(Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 6)]
struct Aim {
    yaw: u16,
}

/// The reference protocol and a declared sequenced channel: a hello that
/// carries a declared channel too.
fn session_protocol() -> Protocol {
    let mut p = zao_messages::protocol();
    let aim = p.add_channel("aim", ChannelKind::Sequenced);
    p.add::<Aim>(aim, Direction::ClientToServer);
    p
}

fn framed(payload: &[u8]) -> Vec<u8> {
    let (header, n) = frame_header(payload.len());
    [&header[..n], payload].concat()
}

/// A server session for `limits`, connected at `now`; its client's hello in
/// reads of `read` bytes while the session wants them. Returns the session
/// and whether the hello got through to the auth step.
fn server_hello(limits: Limits, now: Instant, read: usize) -> (Session, bool) {
    let config = Arc::new(SessionConfig::new(session_protocol(), limits));
    let mut s = Session::server(config, SocketAddr::from(([192, 0, 2, 1], 4433)), now);
    s.handle_connected(now, Some(1200));
    let hello = framed(&Hello::new(&session_protocol(), None).to_encoded_vec());
    for chunk in hello.chunks(read) {
        if !s.wants_stream_bytes(StreamId::CONTROL) {
            break; // a driver leaves the rest in QUIC's buffers
        }
        s.handle_stream_bytes(now, StreamId::CONTROL, chunk);
    }
    let asked = s.poll_auth().is_some();
    (s, asked)
}

/// An admitted server session for `limits`.
fn open_server(limits: Limits, now: Instant) -> Session {
    let (mut s, asked) = server_hello(limits, now, usize::MAX);
    assert!(asked);
    s.handle_admission(now, Ok((ClientId(1), None)));
    assert!(matches!(
        s.poll_event(),
        Some(SessionEvent::Connected { .. })
    ));
    s
}

/// fuzz target `session`: with `max_message_size` (a limit of the reliable
/// channel) below the size of a hello, the session stopped asking for the
/// control stream's bytes once more than `max_message_size` were buffered,
/// so a hello that came in several reads never completed and the client
/// was closed at the handshake deadline. The control stream now has its
/// own limit, the handshake frame's 64 KiB.
#[test]
fn a_hello_longer_than_max_message_size_still_arrives() {
    let mut limits = Limits::default();
    limits.max_message_size = 40;
    let hello = framed(&Hello::new(&session_protocol(), None).to_encoded_vec());
    assert!(hello.len() > 3 * 40, "the hello is {} bytes", hello.len());
    let (_, asked) = server_hello(limits, Instant::now(), 7);
    assert!(asked, "the hello arrived whole and waits for auth");
}

/// fuzz target `session`: unreliable messages packed and not yet flushed
/// survived the close, so a `flush` after it queued a datagram behind
/// `Transmit::Close`, for a connection already closed. The close now drops
/// them with the rest of what was queued.
#[test]
fn nothing_is_transmitted_after_the_close() {
    let now = Instant::now();
    let mut s = open_server(Limits::default(), now);
    let moved = zao_messages::samples::player_moved();
    let out = Outgoing::encode(&moved, &mut BytesMut::new()).unwrap();
    s.send(Channel::UNRELIABLE, &out).unwrap();
    s.close(CloseCode::Normal, "bye");
    assert!(!s.flush(), "nothing to flush after the close");
    let transmits: Vec<Transmit> = core::iter::from_fn(|| s.poll_transmit()).collect();
    assert!(
        matches!(transmits.as_slice(), [Transmit::Close { .. }]),
        "{transmits:?}"
    );
}
