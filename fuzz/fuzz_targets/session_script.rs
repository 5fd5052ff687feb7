//! The `session` fuzz target's input: a [`Script`] (a mode byte, a limits
//! byte, then [`Op`]s) read from any bytes, and written back for the seeds
//! `tests/fuzz_session.rs` builds. Shared by the target and that test;
//! `session_check.rs` runs scripts.
//!
//! Any bytes are a script: past the input's end every read is zero or
//! empty. Selectors are bytes too, read by [`stream_id`] and [`id_bytes`], so
//! a mutation of one byte moves a message to another stream or id.

use std::time::Duration;

use zao::proto::{
    Channel, ChannelKind, Direction, Limits, Protocol, RateLimit, Role, StreamId, frame_header,
};
use zao::{Decode, Encode, NetMessage};

/// A sequenced message both sides send (no type of the reference protocol
/// is sequenced).
#[derive(Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 6)]
pub(crate) struct Aim {
    pub(crate) yaw: u16,
    pub(crate) pitch: i16,
}

/// A reliable message only the server sends.
#[derive(Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 7)]
pub(crate) struct Notice {
    pub(crate) text: String,
}

/// A message of the second ordered channel, both ways.
#[derive(Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 8)]
pub(crate) struct Whisper {
    pub(crate) text: String,
}

/// A reliable-unordered message, both ways.
#[derive(Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 9)]
pub(crate) struct Loot {
    pub(crate) item: u32,
}

/// A reliable message only clients send, with a two-byte id.
#[derive(Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 300)]
pub(crate) struct Chat {
    pub(crate) text: String,
}

/// The declared channels: a second ordered channel of a higher priority,
/// an unordered one of a lower, a sequenced one.
pub(crate) const CHAT: Channel = Channel(3);
/// See [`CHAT`].
pub(crate) const DROPS: Channel = Channel(4);
/// See [`CHAT`].
pub(crate) const AIM: Channel = Channel(5);
/// Channel selectors name the protocol's channels and one past them (a
/// channel no protocol declares).
pub(crate) const CHANNEL_SELECTORS: u8 = 7;

/// The reference protocol plus a channel of each kind it lacks, and a
/// message type on each: every channel has a type each side may and may
/// not send.
pub(crate) fn protocol() -> Protocol {
    let mut p = zao_messages::protocol();
    let chat = p.add_channel_with_priority("chat", ChannelKind::ReliableOrdered, 3);
    let drops = p.add_channel_with_priority("drops", ChannelKind::ReliableUnordered, -1);
    let aim = p.add_channel("aim", ChannelKind::Sequenced);
    assert_eq!((chat, drops, aim), (CHAT, DROPS, AIM));
    p.add::<Aim>(aim, Direction::Both)
        .add::<Notice>(Channel::RELIABLE, Direction::ServerToClient)
        .add::<Whisper>(chat, Direction::Both)
        .add::<Loot>(drops, Direction::Both)
        .add::<Chat>(Channel::RELIABLE, Direction::ClientToServer);
    p
}

/// The channel a selector names: one of the protocol's, or one past them.
pub(crate) fn channel(sel: u8) -> Channel {
    Channel(sel % CHANNEL_SELECTORS)
}

/// The token the client presents.
pub(crate) const TOKEN: &[u8] = b"fuzz-token";

// The mode byte.
/// Server, handshake done first (modes 0 and 1).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) const SERVER: u8 = 0;
/// Client, handshake done first.
pub(crate) const CLIENT: u8 = 2;
/// The handshake is the fuzzer's; [`HANDSHAKE_CLIENT`] picks the side.
pub(crate) const HANDSHAKE: u8 = 3;
/// With [`HANDSHAKE`]: a client session (else a server).
pub(crate) const HANDSHAKE_CLIENT: u8 = 0x04;
/// Bits 3–5: how many bytes the driver hands over per read.
pub(crate) const CHUNKS: [usize; 8] = [usize::MAX, 1, 2, 3, 7, 16, 64, 1200];
/// The application reads every event after each op (and wakes the driver).
pub(crate) const APP_EAGER: u8 = 0x40;
/// The driver drains datagrams and stream writes after each op.
pub(crate) const NET_EAGER: u8 = 0x80;

// The limits byte.
/// `inbound_queue` of 64 bytes.
pub(crate) const TINY_INBOUND: u8 = 0x01;
/// 20 messages a second, bursts of 5, two flood windows.
pub(crate) const TIGHT_RATE: u8 = 0x02;
/// `reliable_backlog` of 48 bytes.
pub(crate) const SMALL_BACKLOG: u8 = 0x04;
/// `max_message_size` of 40 bytes.
pub(crate) const SMALL_MESSAGES: u8 = 0x08;
/// `datagram_send_buffer` of 1 500 bytes.
pub(crate) const SMALL_SEND_BUFFER: u8 = 0x10;
/// `max_datagram_payload` of 64 bytes.
pub(crate) const SMALL_DATAGRAMS: u8 = 0x20;
/// A 300 ms handshake deadline and a 2 s silence timeout.
pub(crate) const SHORT_TIMERS: u8 = 0x40;
/// No silence timeout (nor heartbeats).
pub(crate) const NO_SILENCE: u8 = 0x80;

/// Most ops one input runs.
const MAX_OPS: usize = 4096;

/// One input: how the session is set up, then what happens to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Script {
    pub(crate) mode: u8,
    pub(crate) limits: u8,
    pub(crate) ops: Vec<Op>,
}

/// One thing that happens to the session. Stream selectors and id
/// selectors are bytes read by [`stream_id`] and [`id_bytes`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// Raw bytes from the peer on a stream.
    Bytes { stream: u8, data: Vec<u8> },
    /// One frame from the peer on a stream: length, id, body.
    Frame { stream: u8, id: u8, body: Vec<u8> },
    /// The peer finishes a stream (after what it sent on it).
    Finish(u8),
    /// A raw datagram.
    Datagram(Vec<u8>),
    /// An unreliable datagram packing these messages (id, body).
    Unreliable(Vec<(u8, Vec<u8>)>),
    /// A snapshot datagram.
    Snapshot {
        seq: u16,
        chunk: u8,
        chunks: u8,
        id: u8,
        body: Vec<u8>,
    },
    /// The peer opens a uni stream no selector names and writes a stream
    /// header (any value: [`DROPS`] is the unordered channel) and one
    /// frame, then finishes it if `finish`: a reliable-unordered message.
    Fresh {
        header: u8,
        id: u8,
        body: Vec<u8>,
        finish: bool,
    },
    /// `(count + 1) × 8` copies of one message, `gap × 0.5 ms` apart: kind
    /// 0 reliable frames, 1 single-message datagrams, 2 packed datagrams,
    /// 3 sequenced datagrams (chunks of rising seq), 4 reliable heartbeats,
    /// 5 datagram heartbeats, 6 unordered messages (a fresh stream each).
    Flood {
        kind: u8,
        count: u8,
        id: u8,
        len: u8,
        gap: u8,
    },
    /// Virtual time passes (see [`delay`]), timers fire.
    Advance(u8),
    /// A spurious `handle_timeout`.
    Timeout,
    /// QUIC's handshake is done; the byte picks the peer's datagram size.
    Connected(u8),
    /// The endpoint's admission answer.
    Admission(u8),
    /// QUIC lost the connection.
    Lost(u8),
    /// The application reads `n & 0x7f` events (0: all); unless bit 7 is
    /// set it then wakes the driver.
    Read(u8),
    /// The application sends a message (a channel selector, see
    /// [`channel`]).
    Send { channel: u8, id: u8, body: Vec<u8> },
    /// The application sends `count % 8 + 1` snapshot datagrams of `len`
    /// message bytes on channel selector `channel + 2` (0: the snapshot
    /// channel).
    SendDatagrams {
        channel: u8,
        id: u8,
        count: u8,
        len: u16,
    },
    /// The application flushes the packed unreliable messages.
    Flush,
    /// The application closes with a code (mod 10).
    Close(u8),
    /// The driver takes every datagram and close.
    DrainTransmits,
    /// The driver takes up to `n` stream writes, then unordered messages
    /// (0: all).
    DrainStreams(u8),
    /// The peer's handshake message on the control stream: a hello variant
    /// (server) or a reply variant (client).
    Handshake(u8),
}

/// The stream a selector names, seen from `role`: 0 the control stream, 1
/// and 2 the peer's first uni streams, 3 our own uni stream, 4 and 5 bidi
/// streams past the control stream, any other the raw id.
pub(crate) fn stream_id(sel: u8, role: Role) -> StreamId {
    match sel {
        0 => StreamId::CONTROL,
        1 => StreamId::uni(role.peer(), 0),
        2 => StreamId::uni(role.peer(), 1),
        3 => StreamId::uni(role, 0),
        4 => StreamId(4),
        5 => StreamId(1),
        other => StreamId(u64::from(other)),
    }
}

/// The id bytes a selector stands for: the heartbeat's 0, ids 1–9 and 300
/// (registered), 99 (not), `u32::MAX`, 2³² (over `u32`), a non-canonical
/// varint, or nothing.
pub(crate) fn id_bytes(sel: u8) -> Vec<u8> {
    match sel % 16 {
        n @ 0..=9 => vec![n],
        10 => vec![0xac, 0x02],
        11 => vec![99],
        12 => vec![0xff, 0xff, 0xff, 0xff, 0x0f],
        13 => vec![0x80, 0x80, 0x80, 0x80, 0x10],
        14 => vec![0x81, 0x00],
        _ => Vec::new(),
    }
}

/// The id a selector names as a `u32` (99 where its bytes are no id).
pub(crate) fn id_value(sel: u8) -> u32 {
    let mut bytes = id_bytes(sel);
    bytes.push(0);
    zao::split_message(&bytes).map_or(99, |(id, _)| id)
}

/// The time an [`Op::Advance`] byte stands for: 0–127 ms, then steps of
/// 50 ms to 3.2 s, then whole seconds to 64 s.
pub(crate) fn delay(b: u8) -> Duration {
    match b {
        0..=127 => Duration::from_millis(u64::from(b)),
        128..=191 => Duration::from_millis(u64::from(b - 127) * 50),
        _ => Duration::from_secs(u64::from(b - 191)),
    }
}

/// `payload` behind its varint length.
pub(crate) fn framed(payload: &[u8]) -> Vec<u8> {
    let (header, n) = frame_header(payload.len());
    let mut out = header.get(..n).unwrap_or_default().to_vec();
    out.extend_from_slice(payload);
    out
}

/// The limits a limits byte stands for (the flags above, on the defaults).
pub(crate) fn limits(bits: u8) -> Limits {
    let mut l = Limits::default();
    if bits & TINY_INBOUND != 0 {
        l.inbound_queue = 64;
    }
    if bits & TIGHT_RATE != 0 {
        l.receive_rate = RateLimit {
            messages_per_second: 20,
            burst: 5,
            flood_windows: 2,
        };
    }
    if bits & SMALL_BACKLOG != 0 {
        l.reliable_backlog = 48;
    }
    if bits & SMALL_MESSAGES != 0 {
        l.max_message_size = 40;
    }
    if bits & SMALL_SEND_BUFFER != 0 {
        l.datagram_send_buffer = 1500;
    }
    if bits & SMALL_DATAGRAMS != 0 {
        l.max_datagram_payload = 64;
    }
    if bits & SHORT_TIMERS != 0 {
        l.handshake_timeout = Duration::from_millis(300);
        l.silence_timeout = Some(Duration::from_secs(2));
    }
    if bits & NO_SILENCE != 0 {
        l.silence_timeout = None;
    }
    assert_eq!(l.validate(), Ok(()), "the fuzz limits are valid");
    l
}

/// Reads the input; past its end every read is zero or empty, so any
/// bytes are a script.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let (taken, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        taken.to_vec()
    }

    fn short(&mut self) -> Vec<u8> {
        let n = self.u8();
        self.bytes(usize::from(n))
    }

    fn long(&mut self) -> Vec<u8> {
        let n = self.u16() % 2048;
        self.bytes(usize::from(n))
    }
}

fn put_short(out: &mut Vec<u8>, data: &[u8]) {
    let n = u8::try_from(data.len()).expect("a short field holds at most 255 bytes");
    out.push(n);
    out.extend_from_slice(data);
}

fn put_long(out: &mut Vec<u8>, data: &[u8]) {
    assert!(data.len() < 2048, "a long field holds at most 2047 bytes");
    out.extend_from_slice(&(data.len() as u16).to_le_bytes());
    out.extend_from_slice(data);
}

impl Script {
    /// Reads a script from any bytes.
    pub(crate) fn decode(data: &[u8]) -> Self {
        let mut input = Input(data);
        let mode = input.u8();
        let limits = input.u8();
        let mut ops = Vec::new();
        while !input.0.is_empty() && ops.len() < MAX_OPS {
            ops.push(Op::decode(&mut input));
        }
        Self { mode, limits, ops }
    }

    /// The bytes [`decode`](Self::decode) reads back to this script.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = vec![self.mode, self.limits];
        for op in &self.ops {
            op.encode(&mut out);
        }
        out
    }
}

impl Op {
    fn decode(input: &mut Input<'_>) -> Self {
        match input.u8() % 21 {
            0 => Self::Bytes {
                stream: input.u8(),
                data: input.short(),
            },
            1 => Self::Frame {
                stream: input.u8(),
                id: input.u8(),
                body: input.short(),
            },
            2 => Self::Finish(input.u8()),
            3 => Self::Datagram(input.long()),
            4 => {
                let n = input.u8() % 16;
                Self::Unreliable(
                    (0..n)
                        .map(|_| {
                            let id = input.u8();
                            (id, input.short())
                        })
                        .collect(),
                )
            }
            5 => Self::Snapshot {
                seq: input.u16(),
                chunk: input.u8(),
                chunks: input.u8(),
                id: input.u8(),
                body: input.short(),
            },
            6 => Self::Flood {
                kind: input.u8(),
                count: input.u8(),
                id: input.u8(),
                len: input.u8(),
                gap: input.u8(),
            },
            7 => Self::Advance(input.u8()),
            8 => Self::Timeout,
            9 => Self::Connected(input.u8()),
            10 => Self::Admission(input.u8()),
            11 => Self::Lost(input.u8()),
            12 => Self::Read(input.u8()),
            13 => Self::Send {
                channel: input.u8(),
                id: input.u8(),
                body: input.long(),
            },
            14 => Self::SendDatagrams {
                channel: input.u8(),
                id: input.u8(),
                count: input.u8(),
                len: input.u16(),
            },
            15 => Self::Flush,
            16 => Self::Close(input.u8()),
            17 => Self::DrainTransmits,
            18 => Self::DrainStreams(input.u8()),
            19 => Self::Handshake(input.u8()),
            _ => Self::Fresh {
                header: input.u8(),
                id: input.u8(),
                finish: input.u8() & 1 != 0,
                body: input.short(),
            },
        }
    }

    #[cfg_attr(not(test), allow(dead_code))]
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Self::Bytes { stream, data } => {
                out.extend([0, *stream]);
                put_short(out, data);
            }
            Self::Frame { stream, id, body } => {
                out.extend([1, *stream, *id]);
                put_short(out, body);
            }
            Self::Finish(s) => out.extend([2, *s]),
            Self::Datagram(data) => {
                out.push(3);
                put_long(out, data);
            }
            Self::Unreliable(messages) => {
                assert!(messages.len() < 16, "at most 15 messages");
                out.extend([4, messages.len() as u8]);
                for (id, body) in messages {
                    out.push(*id);
                    put_short(out, body);
                }
            }
            Self::Snapshot {
                seq,
                chunk,
                chunks,
                id,
                body,
            } => {
                out.push(5);
                out.extend(seq.to_le_bytes());
                out.extend([*chunk, *chunks, *id]);
                put_short(out, body);
            }
            Self::Flood {
                kind,
                count,
                id,
                len,
                gap,
            } => out.extend([6, *kind, *count, *id, *len, *gap]),
            Self::Advance(b) => out.extend([7, *b]),
            Self::Timeout => out.push(8),
            Self::Connected(b) => out.extend([9, *b]),
            Self::Admission(b) => out.extend([10, *b]),
            Self::Lost(b) => out.extend([11, *b]),
            Self::Read(b) => out.extend([12, *b]),
            Self::Send { channel, id, body } => {
                out.extend([13, *channel, *id]);
                put_long(out, body);
            }
            Self::SendDatagrams {
                channel,
                id,
                count,
                len,
            } => {
                out.extend([14, *channel, *id, *count]);
                out.extend(len.to_le_bytes());
            }
            Self::Flush => out.push(15),
            Self::Close(b) => out.extend([16, *b]),
            Self::DrainTransmits => out.push(17),
            Self::DrainStreams(n) => out.extend([18, *n]),
            Self::Handshake(b) => out.extend([19, *b]),
            Self::Fresh {
                header,
                id,
                body,
                finish,
            } => {
                out.extend([20, *header, *id, u8::from(*finish)]);
                put_short(out, body);
            }
        }
    }
}
