//! The codec: `Encode`/`Decode`, a writer and a reader over caller buffers,
//! canonical varints, limits and errors. Depends on nothing heavy: no I/O, no
//! runtime, no clock.

pub mod bits;
#[doc(hidden)]
pub mod blit;
mod decode;
mod encode;
mod error;
mod impls;
mod lanes;
mod limits;
mod message;
mod quant;
mod reader;
pub mod schema;
mod sink;
#[doc(hidden)]
pub mod size;
mod varint;
mod writer;

pub use decode::Decode;
/// For derived enums' `Decode::decode_then`.
#[doc(hidden)]
pub use decode::Then;
pub use encode::Encode;
pub use error::{DecodeError, EncodeError};
pub use lanes::{Lane, Lanes, lane_at, set_lane};
pub use limits::DecodeLimits;
pub use message::{
    NetMessage, decode_message, encode_message, encode_message_to, message_len, split_message,
};
pub use quant::{QAngle, QF32, QQuat, QVec2, QVec3, QVector};
pub use reader::Reader;
pub use schema::Schema;
pub use sink::Sink;
pub use varint::{MAX_VARINT_LEN, varint_len};
pub use writer::Writer;

/// For the benchmark's floor row: the validation the `&str` decode runs.
#[doc(hidden)]
pub use impls::utf8;
