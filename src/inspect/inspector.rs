//! Framed messages (`id + body`) read and written against a protocol.

use core::fmt;
use core::fmt::Write as _;

use crate::proto::{Channel, Direction, Protocol};
use crate::wire::schema::FieldStyle;
use crate::{DecodeError, DecodeLimits, Reader};

use super::decode::{Cursor, Decoder, Note, Quiet, Sink, inspector_limits};
use super::encode::{Encoder, put_varint};
use super::error::{FieldPath, InspectError, InspectErrorKind, Path, TextError};
use super::parse::Parser;
use super::print::{Printer, TextStyle, quote_bytes};
use super::schema::{MessageSchema, ProtocolSchema};
use super::shape::{OwnedShape, OwnedStruct};
use super::value::Value;

/// Reads and writes any message of a protocol without its Rust type: as a
/// [`Value`], as readable text both ways, and as an annotated hex dump.
///
/// ```
/// use zao::inspect::Inspector;
/// use zao::proto::{Channel, Direction, Protocol};
///
/// #[derive(zao::Encode, zao::Decode, zao::NetMessage)]
/// #[zao(id = 7)]
/// struct Chat { from: u32, text: String }
///
/// let mut protocol = Protocol::new();
/// protocol.add::<Chat>(Channel::RELIABLE, Direction::Both);
/// let inspector = Inspector::from_protocol(&protocol);
///
/// let mut bytes = [0u8; 16];
/// let n = zao::encode_message(&Chat { from: 42, text: "gg".into() }, &mut bytes)?;
/// let text = inspector.to_text(&bytes[..n])?;
/// assert_eq!(text, r#"Chat { from: 42, text: "gg" }"#);
/// assert_eq!(inspector.from_text(&text)?, &bytes[..n]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Inspector {
    schema: ProtocolSchema,
    limits: DecodeLimits,
    heartbeat: MessageSchema,
}

/// A message decoded without its Rust type.
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded<'a> {
    /// Its registration: id, name, shape.
    pub message: &'a MessageSchema,
    /// Its body.
    pub value: Value,
}

/// The name the heartbeat (id 0, no body, docs/WIRE.md §12.7) reads as.
pub const HEARTBEAT: &str = "Heartbeat";

impl Inspector {
    /// An inspector for `schema`'s messages, under [`DecodeLimits::DEFAULT`].
    #[must_use]
    pub fn new(schema: ProtocolSchema) -> Self {
        let heartbeat = MessageSchema {
            id: 0,
            name: HEARTBEAT.to_owned(),
            fingerprint: 0,
            channel: Channel::RELIABLE,
            direction: Direction::Both,
            shape: Some(OwnedShape::Struct(OwnedStruct {
                name: HEARTBEAT.to_owned(),
                style: FieldStyle::Unit,
                fields: Vec::new(),
                tolerant: false,
                blittable: false,
            })),
        };
        Self {
            schema,
            limits: DecodeLimits::DEFAULT,
            heartbeat,
        }
    }

    /// An inspector for the messages `protocol` registered.
    #[must_use]
    pub fn from_protocol(protocol: &Protocol) -> Self {
        Self::new(ProtocolSchema::from_protocol(protocol))
    }

    /// Decodes under `limits` instead (see [`INSPECTOR_ALLOC_FACTOR`](super::INSPECTOR_ALLOC_FACTOR)
    /// for the allocation budget).
    #[must_use]
    pub fn with_limits(mut self, limits: DecodeLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The protocol's messages.
    #[must_use]
    pub fn schema(&self) -> &ProtocolSchema {
        &self.schema
    }

    /// The registration of message `id`; id 0, unless registered, is the
    /// heartbeat.
    #[must_use]
    pub fn message(&self, id: u32) -> Option<&MessageSchema> {
        self.schema
            .get(id)
            .or_else(|| (id == 0).then_some(&self.heartbeat))
    }

    fn message_named(&self, name: &str) -> Option<&MessageSchema> {
        self.schema
            .by_name(name)
            .or_else(|| (name == HEARTBEAT).then_some(&self.heartbeat))
    }

    /// Decodes a framed message under the inspector's limits, with the
    /// rules the Rust type's decoder applies.
    ///
    /// # Errors
    /// [`InspectError`] with the byte offset and field path of the first
    /// broken rule; an unknown id is [`DecodeError::UnknownMessage`].
    pub fn decode(&self, framed: &[u8]) -> Result<Decoded<'_>, InspectError> {
        self.decode_with(framed, Quiet)
            .map(|(message, value, _)| Decoded { message, value })
            .map_err(|(e, _)| e)
    }

    fn decode_with<'s, S: Sink<'s>>(
        &'s self,
        framed: &[u8],
        sink: S,
    ) -> Result<(&'s MessageSchema, Value, S), (InspectError, S)> {
        let mut d = Decoder::new(sink, &self.limits);
        let wire =
            |e, at, d: &Decoder<'s, S>| InspectError::new(InspectErrorKind::Decode(e), at, &d.path);
        let mut r = Reader::with_limits(framed, inspector_limits(self.limits));
        let id = match r.get_varint_u32() {
            Ok(id) => id,
            Err(e) => return Err((wire(e, 0, &d), d.sink)),
        };
        let body_at = framed.len() - r.remaining();
        // Id 0 with a body is no heartbeat, but an unknown id (§12.7).
        let message = self
            .message(id)
            .filter(|m| !std::ptr::eq(*m, &self.heartbeat) || r.is_empty());
        let Some(message) = message else {
            return Err((wire(DecodeError::UnknownMessage(id), 0, &d), d.sink));
        };
        d.sink
            .note(0, body_at, &d.path, Note::Tag(id, &message.name));
        if r.remaining() > self.limits.max_message {
            return Err((wire(DecodeError::MessageTooLarge, body_at, &d), d.sink));
        }
        let Some(shape) = &message.shape else {
            let body = Value::Bytes(r.rest().to_vec());
            d.sink.note(
                body_at,
                framed.len(),
                &d.path,
                Note::Leaf(&OwnedShape::Bytes, &body),
            );
            return Ok((message, body, d.sink));
        };
        let mut c = Cursor {
            r,
            end: framed.len(),
        };
        match d.value(&mut c, shape) {
            Ok(value) => match c.r.finish() {
                Ok(()) => Ok((message, value, d.sink)),
                Err(e) => Err((wire(e, c.offset(), &d), d.sink)),
            },
            Err(e) => Err((e, d.sink)),
        }
    }

    /// Encodes `value` as message `id`, framed (`id + body`).
    ///
    /// # Errors
    /// [`DecodeError::UnknownMessage`] for an id the protocol lacks;
    /// [`InspectErrorKind::Mismatch`] if `value` does not fit the shape; any
    /// error the bytes would meet when decoded, so what this returns is
    /// always a valid message.
    pub fn encode(&self, id: u32, value: &Value) -> Result<Vec<u8>, InspectError> {
        let Some(message) = self.message(id) else {
            return Err(InspectError::new(
                InspectErrorKind::Decode(DecodeError::UnknownMessage(id)),
                0,
                &Path::default(),
            ));
        };
        let mut out = Vec::new();
        put_varint(&mut out, u64::from(id));
        match (&message.shape, value) {
            (Some(shape), value) => Encoder::new().value(&mut out, shape, value)?,
            (None, Value::Bytes(body)) => out.extend_from_slice(body),
            (None, _) => {
                return Err(InspectError::new(
                    InspectErrorKind::Mismatch,
                    0,
                    &Path::default(),
                ));
            }
        }
        self.decode(&out)?;
        Ok(out)
    }

    /// The readable form of a framed message, compact (the canonical form:
    /// [`from_text`](Self::from_text) gives back the same bytes).
    ///
    /// # Errors
    /// As [`decode`](Self::decode).
    pub fn to_text(&self, framed: &[u8]) -> Result<String, InspectError> {
        self.to_text_styled(framed, TextStyle::Compact)
    }

    /// The readable form in `style`.
    ///
    /// # Errors
    /// As [`decode`](Self::decode).
    pub fn to_text_styled(&self, framed: &[u8], style: TextStyle) -> Result<String, InspectError> {
        let decoded = self.decode(framed)?;
        self.value_text(decoded.message, &decoded.value, style)
    }

    /// The readable form of `value` as `message`.
    ///
    /// # Errors
    /// [`InspectErrorKind::Mismatch`] if `value` does not fit the shape.
    pub fn value_text(
        &self,
        message: &MessageSchema,
        value: &Value,
        style: TextStyle,
    ) -> Result<String, InspectError> {
        let mut p = Printer::new(style);
        match (&message.shape, value) {
            (Some(shape), value) => p.message(&message.name, shape, value)?,
            (None, Value::Bytes(body)) => {
                p.out.push_str(&message.name);
                p.out.push('(');
                quote_bytes(&mut p.out, body);
                p.out.push(')');
            }
            (None, _) => {
                return Err(InspectError::new(
                    InspectErrorKind::Mismatch,
                    0,
                    &Path::default(),
                ));
            }
        }
        Ok(p.out)
    }

    /// Reads the readable form back to the framed bytes.
    ///
    /// # Errors
    /// [`InspectError`] with the text offset and field path of the first
    /// problem; a value the bytes cannot carry (over a limit) is reported
    /// as the decode error the bytes would meet.
    pub fn from_text(&self, text: &str) -> Result<Vec<u8>, InspectError> {
        let mut p = Parser::new(text);
        let (name, at) = p.message_name()?;
        let Some(message) = self.message_named(name) else {
            return Err(InspectError::new(
                InspectErrorKind::Text(TextError::UnknownName),
                at,
                &Path::default(),
            ));
        };
        let value = match &message.shape {
            Some(shape) => p.message_body(shape)?,
            None => Value::Bytes(p.raw_body()?),
        };
        p.finish()?;
        self.encode(message.id, &value)
    }

    /// The annotated hex view of a framed message: each field's offset,
    /// bytes, path, type and value, as a protocol analyzer shows them. On
    /// bytes that do not decode it shows every field up to the error, the
    /// error, and the bytes left.
    #[must_use]
    pub fn annotate(&self, framed: &[u8]) -> Annotated {
        let (rows, error) = match self.decode_with(framed, Rows::default()) {
            Ok((_, _, rows)) => (rows.0, None),
            Err((e, rows)) => (rows.0, Some(e)),
        };
        Annotated {
            bytes: framed.to_vec(),
            rows,
            error,
        }
    }
}

/// One row of the annotated view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnnotatedRow {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
    /// The field.
    pub path: FieldPath,
    /// What the bytes are: `u32 = 7`, `count 3`, `tag 1 = Crouching`.
    pub label: String,
}

/// A framed message, annotated field by field. `Display` prints the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Annotated {
    bytes: Vec<u8>,
    rows: Vec<AnnotatedRow>,
    error: Option<InspectError>,
}

impl Annotated {
    /// The rows, in byte order.
    #[must_use]
    pub fn rows(&self) -> &[AnnotatedRow] {
        &self.rows
    }

    /// Why decoding stopped, if it did.
    #[must_use]
    pub fn error(&self) -> Option<&InspectError> {
        self.error.as_ref()
    }
}

/// Bytes shown on one line.
const HEX_PER_LINE: usize = 16;

impl fmt::Display for Annotated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = HEX_PER_LINE * 3 - 1;
        let line = |f: &mut fmt::Formatter<'_>, at: usize, bytes: &[u8], label: &str| {
            let mut hex = String::new();
            for (i, b) in bytes.iter().enumerate() {
                if i > 0 {
                    hex.push(' ');
                }
                let _ = write!(hex, "{b:02x}");
            }
            let label = label.trim_end();
            if label.is_empty() {
                writeln!(f, "{at:06x}  {hex}")
            } else {
                writeln!(f, "{at:06x}  {hex:<width$}  {label}")
            }
        };
        let mut covered = 0;
        for row in &self.rows {
            let bytes = self.bytes.get(row.start..row.end).unwrap_or_default();
            let label = if row.path.as_str().is_empty() {
                row.label.clone()
            } else {
                format!("{}: {}", row.path, row.label)
            };
            if bytes.is_empty() {
                line(f, row.start, bytes, &label)?;
            }
            for (i, chunk) in bytes.chunks(HEX_PER_LINE).enumerate() {
                let text = if i == 0 { label.as_str() } else { "" };
                line(f, row.start + i * HEX_PER_LINE, chunk, text)?;
            }
            covered = covered.max(row.end);
        }
        if let Some(e) = &self.error {
            let rest = self.bytes.get(covered..).unwrap_or_default();
            for (i, chunk) in rest.chunks(HEX_PER_LINE).enumerate() {
                let text = if i == 0 { "(not decoded)" } else { "" };
                line(f, covered + i * HEX_PER_LINE, chunk, text)?;
            }
            writeln!(f, "error {e}")?;
        }
        Ok(())
    }
}

/// The sink of the annotated view.
#[derive(Default)]
struct Rows(Vec<AnnotatedRow>);

impl<'s> Sink<'s> for Rows {
    fn note(&mut self, start: usize, end: usize, path: &Path<'s>, note: Note<'_, 's>) {
        let label = match note {
            Note::Leaf(shape, value) => {
                let mut p = Printer::new(TextStyle::Compact);
                match p.value(shape, value) {
                    Ok(()) => format!("{} = {}", shape.type_name(), p.out),
                    Err(_) => shape.type_name(),
                }
            }
            Note::Count(n) => format!("count {n}"),
            Note::Body(n) => format!("tolerant body, {n} bytes"),
            Note::Tag(tag, name) if path.0.is_empty() && start == 0 => format!("id {tag} = {name}"),
            Note::Tag(tag, name) => format!("tag {tag} = {name}"),
            Note::Present(true) => "Some".to_owned(),
            Note::Present(false) => "None".to_owned(),
            Note::Extra => "bytes this shape does not know".to_owned(),
        };
        self.0.push(AnnotatedRow {
            start,
            end,
            path: path.render(),
            label,
        });
    }
}
