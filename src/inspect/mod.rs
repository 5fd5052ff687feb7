//! The inspector: any zao message read and written without its Rust type.
//!
//! Every [`Encode`](crate::Encode) type describes its wire form as a
//! [`Shape`](crate::wire::schema::Shape); a [`Protocol`](crate::proto::Protocol)
//! keeps the shape of each message it registers and exports them all as
//! JSON ([`Protocol::to_json`](crate::proto::Protocol::to_json)). With
//! either, an [`Inspector`]:
//!
//! - decodes framed bytes (`id + body`) into a [`Value`] under the same
//!   [`DecodeLimits`](crate::DecodeLimits) and rules as the Rust decoder,
//!   errors naming the byte offset and the field path;
//! - prints a readable text form and parses it back to the same bytes
//!   ([`to_text`](Inspector::to_text), [`from_text`](Inspector::from_text)),
//!   floats bit for bit, so fixtures and bug reports can be written by hand:
//!   `PlayerMoved { entity: 7, position: (1.5, -2.0, 3.25) }`;
//! - shows an annotated hex view ([`annotate`](Inspector::annotate)).
//!
//! [`CaptureWriter`] and [`CaptureReader`] write and read a session capture
//! (docs/CAPTURE.md). The `zao-inspect` command in the workspace does all of
//! this from a shell. docs/INSPECT.md specifies the text form and the JSON.

mod capture;
mod decode;
mod encode;
mod error;
mod inspector;
mod json;
mod parse;
mod print;
mod schema;
mod shape;
mod value;

pub use capture::{
    CAPTURE_MAGIC, CAPTURE_VERSION, CaptureError, CaptureEvent, CaptureHeader, CaptureReader,
    CaptureRecord, CaptureWriter, Flow,
};
pub use decode::INSPECTOR_ALLOC_FACTOR;
pub use error::{FieldPath, InspectError, InspectErrorKind, TextError};
pub use inspector::{Annotated, AnnotatedRow, Decoded, HEARTBEAT, Inspector};
pub use json::{JsonError, JsonErrorKind, PROTOCOL_JSON_FORMAT, PROTOCOL_JSON_VERSION};
pub use print::TextStyle;
pub use schema::{MessageSchema, ProtocolSchema};
pub use shape::{OwnedEnum, OwnedField, OwnedFlags, OwnedShape, OwnedStruct, OwnedVariant};
pub use value::Value;
