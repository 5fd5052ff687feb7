//! Messages: types with a stable id, framed as `id (varint) + body`.

use super::{Decode, DecodeError, Encode, EncodeError, Reader, Schema, Writer, varint_len};

/// A type that travels as a message: it has a stable id and a schema
/// fingerprint. Derive it with `#[derive(Message)]` and `#[zao(id = N)]`.
///
/// The id is what a receiver dispatches on; the fingerprint (from [`Schema`])
/// is what client and server compare at connect time, so a field changed on
/// one side only is caught before any message is misread.
pub trait Message: Encode + Schema {
    /// The message id, written as a varint before the body.
    const ID: u32;
    /// The type's name, for error messages and logs.
    const NAME: &'static str;
}

/// Bytes [`encode_message`] writes for `msg`: the id's varint plus the body.
#[inline]
#[must_use]
pub fn message_len<M: Message>(msg: &M) -> usize {
    varint_len(u64::from(M::ID)) + msg.encoded_len()
}

/// Writes `id (varint) + body` into the front of `buf`; returns the bytes written.
///
/// # Errors
/// [`EncodeError`] if `buf` is too small; nothing is written then.
#[inline]
pub fn encode_message<M: Message>(msg: &M, buf: &mut [u8]) -> Result<usize, EncodeError> {
    let needed = message_len(msg);
    if needed > buf.len() {
        return Err(EncodeError {
            needed,
            available: buf.len(),
        });
    }
    let mut w = Writer::new(buf);
    w.put_varint(u64::from(M::ID));
    w.encode(msg)?;
    Ok(w.position())
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
pub fn decode_message<'de, M: Message + Decode<'de>>(bytes: &'de [u8]) -> Result<M, DecodeError> {
    let (id, body) = split_message(bytes)?;
    if id != M::ID {
        return Err(DecodeError::UnexpectedMessage {
            expected: M::ID,
            found: id,
        });
    }
    M::decode(body)
}
