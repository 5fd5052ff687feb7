//! Datagram payloads (docs/WIRE.md §12).
//!
//! ```text
//! unreliable: 0x01 ( len:varint  message:len )+
//! snapshot:   0x02 seq:varint chunk:varint chunks:varint message
//! delta:      0x03 seq:varint baseline:varint chunk:varint chunks:varint message
//! ack:        0x04 ( id:varint newest:varint held:u64 )+
//! ```
//!
//! A message is `id (varint) + body`. Unreliable datagrams pack several
//! small messages; a snapshot datagram carries one chunk of one snapshot;
//! a delta datagram one chunk of a snapshot encoded against a baseline
//! (server to client); an ack datagram what a client holds (client to
//! server).

use core::fmt;

use bytes::{BufMut, Bytes, BytesMut};

use crate::wire::{Reader, varint_len};
use crate::{DecodeError, Writer};

/// The first byte of a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
#[non_exhaustive]
pub enum DatagramKind {
    /// Packed unreliable messages.
    Unreliable = 0x01,
    /// One chunk of a sequenced snapshot.
    Snapshot = 0x02,
    /// One chunk of a delta snapshot (server to client).
    Delta = 0x03,
    /// The snapshots a client holds, for delta baselines (client to server).
    Ack = 0x04,
}

/// Where a delta snapshot chunk belongs (docs/WIRE.md §12.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeltaHeader {
    /// The sender's sequence number for this message type, from 1.
    pub seq: u64,
    /// The sequence number of the snapshot this one is encoded against;
    /// 0 for a keyframe (against nothing). Always below `seq`.
    pub baseline: u64,
    /// This chunk's index, below `chunks`.
    pub chunk: u32,
    /// How many chunks the snapshot was split into.
    pub chunks: u32,
}

/// What a client holds of one snapshot type: the newest whole snapshot it
/// applied and, bit `i` of `held`, whether it holds `newest − 1 − i` too.
/// A server encodes deltas only against snapshots a client acknowledged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SnapshotAck {
    /// The message id of the snapshot type.
    pub id: u32,
    /// The newest sequence number held whole (0: none).
    pub newest: u64,
    /// The 64 sequence numbers before `newest`, bit 0 for `newest − 1`.
    pub held: u64,
}

impl SnapshotAck {
    /// Whether the ack says `seq` is held.
    #[must_use]
    pub fn holds(&self, seq: u64) -> bool {
        if seq == 0 || seq > self.newest {
            return false;
        }
        let back = self.newest - seq;
        back == 0 || (back <= 64 && self.held & (1 << (back - 1)) != 0)
    }
}

/// Most acks one ack datagram carries.
pub const MAX_ACKS: usize = 16;

/// Where a snapshot chunk belongs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotHeader {
    /// The sender's sequence number for this message type, from 1: newer
    /// wins (0 is never delivered: receivers use it for "nothing yet").
    pub seq: u64,
    /// This chunk's index, below `chunks`.
    pub chunk: u32,
    /// How many chunks the snapshot was split into.
    pub chunks: u32,
}

/// Why a datagram was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatagramError {
    /// No bytes at all.
    Empty,
    /// A first byte that is no [`DatagramKind`].
    UnknownKind(u8),
    /// The rest does not parse.
    Malformed(DecodeError),
}

impl fmt::Display for DatagramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("empty datagram"),
            Self::UnknownKind(k) => write!(f, "unknown datagram kind {k:#04x}"),
            Self::Malformed(e) => write!(f, "malformed datagram: {e}"),
        }
    }
}

impl std::error::Error for DatagramError {}

impl From<DecodeError> for DatagramError {
    fn from(e: DecodeError) -> Self {
        Self::Malformed(e)
    }
}

/// A received datagram, parsed.
#[derive(Debug)]
#[non_exhaustive]
pub enum ParsedDatagram {
    /// Packed messages, each `id + body`, sharing the datagram's memory.
    Unreliable(Vec<Bytes>),
    /// One snapshot chunk.
    Snapshot(SnapshotHeader, Bytes),
    /// One delta snapshot chunk: `id + delta body`.
    Delta(DeltaHeader, Bytes),
    /// A client's acks.
    Acks(Vec<SnapshotAck>),
}

/// Parses a received datagram. Message slices share the datagram's buffer.
///
/// # Errors
/// [`DatagramError`] for anything malformed; drop the datagram.
pub fn split_datagram(datagram: &Bytes) -> Result<ParsedDatagram, DatagramError> {
    let (&kind, rest) = datagram.split_first().ok_or(DatagramError::Empty)?;
    match kind {
        0x01 => parse_unreliable(datagram.slice(1..)).map(ParsedDatagram::Unreliable),
        0x02 => {
            let mut r = Reader::new(rest);
            let seq = r.get_varint()?;
            let chunk = r.get_varint_u32()?;
            let chunks = r.get_varint_u32()?;
            if chunk >= chunks || r.is_empty() {
                return Err(DatagramError::Malformed(DecodeError::InvalidValue));
            }
            let start = datagram.len() - r.remaining();
            Ok(ParsedDatagram::Snapshot(
                SnapshotHeader { seq, chunk, chunks },
                datagram.slice(start..),
            ))
        }
        0x03 => {
            let mut r = Reader::new(rest);
            let seq = r.get_varint()?;
            let baseline = r.get_varint()?;
            let chunk = r.get_varint_u32()?;
            let chunks = r.get_varint_u32()?;
            if chunk >= chunks || r.is_empty() || seq == 0 || baseline >= seq {
                return Err(DatagramError::Malformed(DecodeError::InvalidValue));
            }
            let start = datagram.len() - r.remaining();
            Ok(ParsedDatagram::Delta(
                DeltaHeader {
                    seq,
                    baseline,
                    chunk,
                    chunks,
                },
                datagram.slice(start..),
            ))
        }
        0x04 => {
            let mut r = Reader::new(rest);
            let mut acks = Vec::new();
            while !r.is_empty() {
                if acks.len() == MAX_ACKS {
                    return Err(DatagramError::Malformed(DecodeError::OverLimit));
                }
                acks.push(SnapshotAck {
                    id: r.get_varint_u32()?,
                    newest: r.get_varint()?,
                    held: r.get_u64_le()?,
                });
            }
            if acks.is_empty() {
                return Err(DatagramError::Malformed(DecodeError::UnexpectedEnd));
            }
            Ok(ParsedDatagram::Acks(acks))
        }
        other => Err(DatagramError::UnknownKind(other)),
    }
}

/// Splits the body of an unreliable datagram into its messages.
///
/// # Errors
/// [`DatagramError::Malformed`] if a length is bad or a message is empty.
pub fn parse_unreliable(body: Bytes) -> Result<Vec<Bytes>, DatagramError> {
    let mut out = Vec::new();
    let mut r = Reader::new(&body);
    while !r.is_empty() {
        let len = r.get_byte_len(false)?;
        if len == 0 {
            return Err(DatagramError::Malformed(DecodeError::InvalidValue));
        }
        let start = body.len() - r.remaining();
        r.take(len)?;
        out.push(body.slice(start..start + len));
    }
    if out.is_empty() {
        return Err(DatagramError::Malformed(DecodeError::UnexpectedEnd));
    }
    Ok(out)
}

/// Bytes a snapshot datagram for a message of `message_len` bytes takes.
#[must_use]
pub fn snapshot_datagram_len(header: SnapshotHeader, message_len: usize) -> usize {
    1 + varint_len(header.seq)
        + varint_len(u64::from(header.chunk))
        + varint_len(u64::from(header.chunks))
        + message_len
}

/// Builds a snapshot datagram in `buf` (reused: only its spare capacity is
/// touched) and returns it: the header, then the message `write` puts into
/// the `message_len` bytes that follow.
pub fn snapshot_datagram(
    buf: &mut BytesMut,
    header: SnapshotHeader,
    message_len: usize,
    write: impl FnOnce(&mut Writer<'_>),
) -> Bytes {
    let len = snapshot_datagram_len(header, message_len);
    buf.clear();
    buf.resize(len, 0);
    let mut w = Writer::new(buf);
    w.put_u8(DatagramKind::Snapshot as u8);
    w.put_varint(header.seq);
    w.put_varint(u64::from(header.chunk));
    w.put_varint(u64::from(header.chunks));
    write(&mut w);
    let written = w.position();
    buf.truncate(written);
    super::message::detach(buf)
}

/// Bytes a delta datagram for a message of `message_len` bytes takes.
#[must_use]
pub fn delta_datagram_len(header: DeltaHeader, message_len: usize) -> usize {
    1 + varint_len(header.seq)
        + varint_len(header.baseline)
        + varint_len(u64::from(header.chunk))
        + varint_len(u64::from(header.chunks))
        + message_len
}

/// Worst-case bytes of a delta datagram's header: the kind, a sequence
/// number, a baseline, a chunk index and a chunk count.
pub const DELTA_HEADER_MAX: usize = 1 + 10 + 10 + 5 + 5;

/// Writes a delta datagram's header into `w`.
pub fn put_delta_header(w: &mut Writer<'_>, header: DeltaHeader) {
    w.put_u8(DatagramKind::Delta as u8);
    w.put_varint(header.seq);
    w.put_varint(header.baseline);
    w.put_varint(u64::from(header.chunk));
    w.put_varint(u64::from(header.chunks));
}

/// An ack datagram holding `acks` (at most [`MAX_ACKS`]; more are left
/// out).
#[must_use]
pub fn ack_datagram(acks: &[SnapshotAck]) -> Bytes {
    let acks = acks.get(..acks.len().min(MAX_ACKS)).unwrap_or_default();
    let len = 1 + acks
        .iter()
        .map(|a| varint_len(u64::from(a.id)) + varint_len(a.newest) + 8)
        .sum::<usize>();
    let mut buf = vec![0u8; len];
    let mut w = Writer::new(&mut buf);
    w.put_u8(DatagramKind::Ack as u8);
    for ack in acks {
        w.put_varint(u64::from(ack.id));
        w.put_varint(ack.newest);
        w.put_u64_le(ack.held);
    }
    Bytes::from(buf)
}

/// An unreliable datagram holding one message (`id + body`).
#[must_use]
pub fn unreliable_datagram(message: &[u8]) -> Bytes {
    let mut buf = BytesMut::with_capacity(1 + varint_len(message.len() as u64) + message.len());
    buf.put_u8(DatagramKind::Unreliable as u8);
    put_framed(&mut buf, message);
    buf.freeze()
}

fn put_framed(buf: &mut BytesMut, message: &[u8]) {
    let (header, n) = super::frame_header(message.len());
    buf.put_slice(header.get(..n).unwrap_or_default());
    buf.put_slice(message);
}

/// Packs small unreliable messages into datagrams of at most `max` bytes.
#[derive(Debug, Default)]
pub struct UnreliablePacker {
    buf: BytesMut,
}

impl UnreliablePacker {
    /// An empty packer.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one message. If it does not fit beside what is packed, the
    /// packed datagram is returned to send first. A message that cannot fit
    /// a datagram of `max` bytes even alone (`1 + varint + len > max`) still
    /// goes out alone: check its size before pushing, as the transport does.
    #[must_use = "a returned datagram must be sent"]
    pub fn push(&mut self, message: &[u8], max: usize) -> Option<Bytes> {
        let framed = varint_len(message.len() as u64) + message.len();
        let flushed = if !self.buf.is_empty() && self.buf.len() + framed > max {
            self.flush()
        } else {
            None
        };
        if self.buf.is_empty() {
            self.buf.put_u8(DatagramKind::Unreliable as u8);
        }
        put_framed(&mut self.buf, message);
        flushed
    }

    /// Adds one message already framed (`len + id + body`, as
    /// [`Outgoing::frame`](super::Outgoing::frame) holds it), as
    /// [`push`](Self::push) does.
    #[must_use = "a returned datagram must be sent"]
    pub fn push_frame(&mut self, frame: &[u8], max: usize) -> Option<Bytes> {
        let flushed = if !self.buf.is_empty() && self.buf.len() + frame.len() > max {
            self.flush()
        } else {
            None
        };
        if self.buf.is_empty() {
            self.buf.put_u8(DatagramKind::Unreliable as u8);
        }
        self.buf.put_slice(frame);
        flushed
    }

    /// Whether nothing is packed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Takes what is packed as one datagram.
    #[must_use = "a returned datagram must be sent"]
    pub fn flush(&mut self) -> Option<Bytes> {
        (!self.buf.is_empty()).then(|| super::message::detach(&mut self.buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_messages_come_back_in_order() {
        let mut p = UnreliablePacker::new();
        let mut datagrams = Vec::new();
        for i in 0..100u8 {
            if let Some(d) = p.push(&[i; 30], 200) {
                datagrams.push(d);
            }
        }
        datagrams.extend(p.flush());
        assert!(datagrams.iter().all(|d| d.len() <= 200));
        let mut seen = Vec::new();
        for d in &datagrams {
            match split_datagram(d).unwrap() {
                ParsedDatagram::Unreliable(msgs) => seen.extend(msgs.iter().map(|m| m[0])),
                _ => panic!("kind"),
            }
        }
        assert_eq!(seen, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn snapshot_header_round_trips() {
        let h = SnapshotHeader {
            seq: 300,
            chunk: 2,
            chunks: 5,
        };
        let d = snapshot_datagram(&mut BytesMut::new(), h, 3, |w| w.put_slice(b"abc"));
        assert_eq!(d.len(), snapshot_datagram_len(h, 3));
        match split_datagram(&d).unwrap() {
            ParsedDatagram::Snapshot(got, msg) => {
                assert_eq!(got, h);
                assert_eq!(&msg[..], b"abc");
            }
            _ => panic!("kind"),
        }
    }

    #[test]
    fn acks_and_delta_headers_round_trip() {
        let acks = [
            SnapshotAck {
                id: 4,
                newest: 300,
                held: 0b101,
            },
            SnapshotAck {
                id: 70_000,
                newest: 0,
                held: u64::MAX,
            },
        ];
        match split_datagram(&ack_datagram(&acks)).unwrap() {
            ParsedDatagram::Acks(got) => assert_eq!(got, acks),
            _ => panic!("kind"),
        }
        assert!(acks[0].holds(300) && acks[0].holds(299) && !acks[0].holds(298));
        assert!(acks[0].holds(297) && !acks[0].holds(301) && !acks[0].holds(0));
        let h = DeltaHeader {
            seq: 9,
            baseline: 7,
            chunk: 1,
            chunks: 2,
        };
        let mut buf = vec![0u8; delta_datagram_len(h, 2)];
        let mut w = Writer::new(&mut buf);
        put_delta_header(&mut w, h);
        w.put_slice(&[4, 0]);
        match split_datagram(&Bytes::from(buf)).unwrap() {
            ParsedDatagram::Delta(got, msg) => {
                assert_eq!(got, h);
                assert_eq!(&msg[..], [4, 0]);
            }
            _ => panic!("kind"),
        }
    }

    #[test]
    fn garbage_is_an_error() {
        for bad in [
            &[][..],
            &[0x00],
            &[0x03, 1],
            &[0x01],
            &[0x01, 0x00],
            &[0x01, 5, 1],
            &[0x02, 1, 3, 3, 9],
            &[0x02, 1, 0, 1],
            // Delta: baseline not below seq, seq 0, chunk past the count, no message.
            &[0x03, 5, 5, 0, 1, 4],
            &[0x03, 0, 0, 0, 1, 4],
            &[0x03, 5, 1, 1, 1, 4],
            &[0x03, 5, 1, 0, 1],
            // Ack: none, cut short, too many.
            &[0x04],
            &[0x04, 4, 1, 0, 0],
        ] {
            assert!(
                split_datagram(&Bytes::copy_from_slice(bad)).is_err(),
                "{bad:?}"
            );
        }
    }
}
