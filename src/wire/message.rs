//! Messages: types with a stable id, framed as `id (varint) + body`.

use bytes::BytesMut;

use super::{Decode, DecodeError, Encode, EncodeError, Reader, Schema, Sink, Writer, varint_len};

/// A type that travels as a message: it has a stable id and a schema
/// fingerprint. Derive it with `#[derive(NetMessage)]` and `#[zao(id = N)]`.
///
/// The id is what a receiver dispatches on; the fingerprint (from [`Schema`])
/// is what client and server compare at connect time, so a field changed on
/// one side only is caught before any message is misread.
pub trait NetMessage: Encode + Schema {
    /// The message id, written as a varint before the body.
    const ID: u32;
    /// The type's name, for error messages and logs.
    const NAME: &'static str;
}

/// Bytes [`encode_message`] writes for `msg`: the id's varint plus the body.
#[inline]
#[must_use]
pub fn message_len<M: NetMessage>(msg: &M) -> usize {
    varint_len(u64::from(M::ID)) + msg.encoded_len()
}

/// Writes `id (varint) + body` into the front of `buf`; returns the bytes written.
///
/// # Errors
/// [`EncodeError`] if `buf` is too small, with the size the message needs;
/// `buf` may then have been partly overwritten.
#[inline]
pub fn encode_message<M: NetMessage>(msg: &M, buf: &mut [u8]) -> Result<usize, EncodeError> {
    // One pass, as `Writer::encode`: every write is checked, and the size
    // is computed only for the error.
    let id = u64::from(M::ID);
    let id_len = varint_len(id);
    let available = buf.len();
    let mut w = Writer::new(buf);
    w.put_varint(id);
    match w.encode(msg) {
        Ok(body) if !w.overflowed() => Ok(id_len + body),
        // The id did not fit (an empty body still "fits" behind it), or the
        // body did not, and `encode` computed its size.
        Ok(needed) | Err(EncodeError { needed, .. }) => Err(EncodeError {
            needed: id_len + needed,
            available,
        }),
    }
}

/// Appends `id (varint) + body` to `buf` and returns the bytes written: the
/// transport's send path. The message's size is computed once, `buf`
/// reserves it once (a message whose size is a walk over values of varying
/// size skips that pass and grows `buf` as it is written), and the bytes are appended without zero-filling the
/// buffer first (with a reused `BytesMut`: no allocation while its spare
/// capacity lasts). `split().freeze()` then gives the `Bytes` to send.
#[inline]
pub fn encode_message_to<M: NetMessage>(msg: &M, buf: &mut BytesMut) -> usize {
    // `Framed`'s size is `message_len`.
    Framed(msg).encode_to_bytes(buf)
}

/// A message as it goes on the wire: the id, then the body.
struct Framed<'m, M>(&'m M);

impl<M: NetMessage> Encode for Framed<'_, M> {
    const LEN_WALKS: bool = M::LEN_WALKS;

    #[inline(always)]
    fn encoded_len(&self) -> usize {
        message_len(self.0)
    }

    #[inline(always)]
    fn encode_to<W: Sink>(&self, w: &mut W) {
        w.put_varint(u64::from(M::ID));
        self.0.encode_to(w);
    }
}

/// Splits a framed message into its id and body.
///
/// # Errors
/// [`DecodeError`] if the id is not a canonical varint that fits a `u32`.
#[inline]
pub fn split_message(bytes: &[u8]) -> Result<(u32, &[u8]), DecodeError> {
    let mut r = Reader::new(bytes);
    let id = r.get_varint_u32()?;
    Ok((id, r.rest()))
}

/// Decodes a framed message that must be an `M`.
///
/// # Errors
/// [`DecodeError::UnexpectedMessage`] if the id is another's, or any error of
/// `M`'s body.
#[inline]
pub fn decode_message<'de, M: NetMessage + Decode<'de>>(
    bytes: &'de [u8],
) -> Result<M, DecodeError> {
    let (id, body) = split_message(bytes)?;
    if id != M::ID {
        return Err(DecodeError::UnexpectedMessage {
            expected: M::ID,
            found: id,
        });
    }
    M::decode(body)
}
