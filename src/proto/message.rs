//! Messages as the session moves them: encoded once with their frame
//! prefix for any number of connections, and received with their id
//! parsed once.

use bytes::{Bytes, BytesMut};

use super::SendError;
use crate::wire::varint_len;
use crate::{Decode, DecodeError, EncodeError, NetMessage, Writer};

/// Takes what `buf` holds as a `Bytes` of its own, leaving `buf` empty
/// with its capacity, for the next encode.
///
/// A copy, on purpose: what a send returns is queued (in the session, in
/// QUIC's send buffer until acknowledged) for as long as a slow peer
/// takes, and a `split().freeze()` of a reused buffer shares its whole
/// allocation. A stalled client's few queued frames then pinned every
/// 64 KiB arena they were cut from: 4.9 MB live in tests/memory.rs for
/// 15 KB of queued messages, past `Limits::worst_case_bytes_per_connection`.
/// The copy is one per message, whatever the number of targets.
pub(crate) fn detach(buf: &mut BytesMut) -> Bytes {
    let out = Bytes::copy_from_slice(buf);
    buf.clear();
    out
}

/// A message encoded once, ready for any channel and any number of
/// connections: `len (varint) | id (varint) | body`. A reliable stream
/// writes the whole frame, a packed datagram the same frame, a snapshot or
/// sequenced datagram the message without its length; every connection
/// shares the bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    frame: Bytes,
    id: u32,
    /// Bytes of the length prefix.
    prefix: usize,
}

impl Outgoing {
    /// Encodes `msg` with its id and length prefix into `buf` (reused: only
    /// its spare capacity is touched) and splits it off.
    ///
    /// # Errors
    /// [`SendError::BadEncodedLen`] if `msg`'s `encoded_len` is not the size
    /// its `encode` writes (a hand-written `Encode` that lies): the frame
    /// would be cut short or padded with zeros. Debug builds also panic, so
    /// the bug is caught where it is made.
    pub fn encode<M: NetMessage>(msg: &M, buf: &mut BytesMut) -> Result<Self, SendError> {
        let body = msg.encoded_len();
        let message = varint_len(u64::from(M::ID)) + body;
        let prefix = varint_len(message as u64);
        buf.clear();
        buf.resize(prefix + message, 0);
        let mut w = Writer::new(buf);
        w.put_len(message);
        w.put_varint(u64::from(M::ID));
        let written = match w.encode(msg) {
            Ok(written) if !w.overflowed() => written,
            Ok(needed) | Err(EncodeError { needed, .. }) => needed,
        };
        if written != body {
            debug_assert_eq!(
                written,
                body,
                "{}: encode wrote {written} bytes, encoded_len said {body}",
                M::NAME
            );
            buf.clear();
            return Err(SendError::BadEncodedLen {
                id: M::ID,
                promised: body,
                written,
            });
        }
        Ok(Self {
            frame: detach(buf),
            id: M::ID,
            prefix,
        })
    }

    /// Frames an already encoded message (`id + body`) of id `id` (copied
    /// once, behind its length prefix).
    ///
    /// # Errors
    /// [`DecodeError`] if `message` does not start with the varint `id`.
    pub fn from_message(message: &[u8]) -> Result<Self, DecodeError> {
        let (id, _) = crate::split_message(message)?;
        let prefix = varint_len(message.len() as u64);
        let mut buf = BytesMut::with_capacity(prefix + message.len());
        let (header, n) = super::frame_header(message.len());
        buf.extend_from_slice(header.get(..n).unwrap_or_default());
        buf.extend_from_slice(message);
        Ok(Self {
            frame: buf.freeze(),
            id,
            prefix,
        })
    }

    /// The message id.
    #[must_use]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The whole frame: length prefix, id, body.
    #[must_use]
    pub fn frame(&self) -> &Bytes {
        &self.frame
    }

    /// The message without its length prefix: id and body.
    #[must_use]
    pub fn message(&self) -> Bytes {
        self.frame.slice(self.prefix..)
    }

    /// Bytes of the message without its length prefix.
    #[must_use]
    pub fn message_len(&self) -> usize {
        self.frame.len() - self.prefix
    }
}

/// A received message: its id was parsed once, where it arrived, and
/// travels with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    id: u32,
    /// `id + body`, sharing the received buffer.
    message: Bytes,
    /// Bytes of the id's varint.
    body_at: usize,
}

impl Received {
    /// Splits `message` (`id + body`) into its id and body.
    ///
    /// # Errors
    /// [`DecodeError`] if it does not start with a varint id that fits a `u32`.
    pub fn parse(message: Bytes) -> Result<Self, DecodeError> {
        let (id, body) = crate::split_message(&message)?;
        let body_at = message.len() - body.len();
        Ok(Self {
            id,
            message,
            body_at,
        })
    }

    /// The message id.
    #[must_use]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The body, after the id.
    #[must_use]
    pub fn body(&self) -> &[u8] {
        self.message.get(self.body_at..).unwrap_or_default()
    }

    /// The message as it travelled: `id + body`.
    #[must_use]
    pub fn message(&self) -> &Bytes {
        &self.message
    }

    /// Decodes the body as an `M`, which must be this message's type.
    ///
    /// # Errors
    /// [`DecodeError::UnexpectedMessage`] if the id is another type's, or
    /// any error of `M`'s body.
    pub fn decode<'de, M: NetMessage + Decode<'de>>(&'de self) -> Result<M, DecodeError> {
        if self.id != M::ID {
            return Err(DecodeError::UnexpectedMessage {
                expected: M::ID,
                found: self.id,
            });
        }
        M::decode(self.body())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Encode;

    #[derive(Debug, PartialEq, crate::Encode, crate::Decode, crate::NetMessage)]
    #[zao(id = 300)]
    struct Chat {
        text: String,
    }

    #[test]
    fn an_outgoing_frame_is_length_id_body_and_parses_back() {
        let chat = Chat { text: "hi".into() };
        let out = Outgoing::encode(&chat, &mut BytesMut::new()).unwrap();
        let body = chat.to_encoded_vec();
        // 300 is a two-byte varint; the message is 2 + 3 bytes.
        assert_eq!(out.frame()[..], [&[5, 0xac, 0x02][..], &body].concat());
        assert_eq!(out.id(), 300);
        assert_eq!(out.message_len(), 5);
        let got = Received::parse(out.message()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(got.id(), 300);
        assert_eq!(got.body(), &body[..]);
        assert_eq!(got.decode::<Chat>(), Ok(chat));
        assert_eq!(Outgoing::from_message(got.message()), Ok(out));
    }
}
