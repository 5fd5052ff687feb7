//! The two codec errors: encoding can only run out of buffer; decoding can
//! meet any hostile byte string and says which rule it broke.

use core::fmt;

/// The only way encoding fails: the caller's buffer is too small.
///
/// Encoding writes in one pass, every write checked, and computes the size
/// the value needs only when it did not fit: a failed encode counts nothing
/// as written (a [`Writer`](crate::Writer)'s position stays where it was),
/// though bytes past that position may have been overwritten.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EncodeError {
    /// Bytes the value needs.
    pub needed: usize,
    /// Bytes the buffer had left.
    pub available: usize,
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "buffer too small: the value needs {} bytes, {} are available",
            self.needed, self.available
        )
    }
}

impl std::error::Error for EncodeError {}

/// Why bytes did not decode.
///
/// Bytes from a peer are hostile: every rule the wire format sets is checked,
/// and breaking one is an error, never a panic. The enum is small and `Copy`
/// so that returning it costs nothing on the fast path.
///
/// Its tag is a whole word (`repr(usize)`), so in a `Result<T, DecodeError>`
/// a small `T` lies in a word of its own, past the tag. With a `u32` tag a
/// `T` of four bytes or less shared the tag's word: every `?` packed and
/// unpacked it with shifts, and a value stored in halves and read back whole
/// stalled store forwarding. Against the best peer, paired in one worker:
/// PlayerInput decode 1.33-1.55 -> 0.88-1.11x speedy's (inputs at three
/// placements), the nested ~1 MB workload's decode 1.17 -> 1.09x wincode's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[repr(usize)]
pub enum DecodeError {
    /// The input ended before the value did.
    UnexpectedEnd,
    /// A length or count prefix claims more bytes than remain in the input.
    LengthExceedsRemaining,
    /// A length, count, depth or allocation total is over a [`DecodeLimits`](crate::DecodeLimits) limit.
    OverLimit,
    /// The whole input is longer than [`DecodeLimits::max_message`](crate::DecodeLimits::max_message).
    MessageTooLarge,
    /// Nesting went deeper than [`DecodeLimits::max_depth`](crate::DecodeLimits::max_depth).
    DepthExceeded,
    /// A varint is longer than ten bytes or does not fit its target type.
    VarintOverflow,
    /// A varint uses more bytes than needed (for example `0x80 0x00` for 0).
    NonCanonicalVarint,
    /// A string is not valid UTF-8.
    InvalidUtf8,
    /// An enum, `bool` or `Option` tag has no matching variant.
    InvalidTag,
    /// A value breaks its type's invariant (a zero `NonZero*`, a surrogate `char`).
    InvalidValue,
    /// A map holds the same key twice, or a sorted map's keys are out of order.
    DuplicateKey,
    /// [`Decode::decode`](crate::Decode::decode) was given bytes after one whole value.
    TrailingBytes,
    /// A message id that this side does not know.
    UnknownMessage(u32),
    /// A message id other than the one the caller asked for.
    UnexpectedMessage {
        /// The id the caller asked for.
        expected: u32,
        /// The id on the wire.
        found: u32,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnexpectedEnd => f.write_str("input ended before the value did"),
            Self::LengthExceedsRemaining => {
                f.write_str("a length prefix claims more bytes than remain")
            }
            Self::OverLimit => f.write_str("a length, count or allocation is over its limit"),
            Self::MessageTooLarge => f.write_str("message is longer than the message limit"),
            Self::DepthExceeded => f.write_str("nesting is deeper than the depth limit"),
            Self::VarintOverflow => f.write_str("varint does not fit its type"),
            Self::NonCanonicalVarint => f.write_str("varint is not in its shortest form"),
            Self::InvalidUtf8 => f.write_str("string is not valid UTF-8"),
            Self::InvalidTag => f.write_str("tag matches no variant"),
            Self::InvalidValue => f.write_str("value breaks its type's invariant"),
            Self::DuplicateKey => f.write_str("map key repeated or out of order"),
            Self::TrailingBytes => f.write_str("bytes remain after the value"),
            Self::UnknownMessage(id) => write!(f, "unknown message id {id}"),
            Self::UnexpectedMessage { expected, found } => {
                write!(f, "expected message id {expected}, found {found}")
            }
        }
    }
}

impl std::error::Error for DecodeError {}
