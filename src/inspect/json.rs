//! The protocol as JSON (docs/INSPECT.md, "Protocol JSON"), written and read
//! without a JSON library: the document has one fixed schema, the reader
//! must refuse hostile input with a typed error and bounded nesting, and
//! the inspector then costs its users no dependency.

use core::fmt;
use core::fmt::Write as _;

use crate::Decode;
use crate::proto::{Channel, ChannelDef, ChannelKind, Direction, Protocol};
use crate::wire::schema::{FieldStyle, Scalar, Schema, Shape};

use super::schema::{MessageSchema, ProtocolSchema};
use super::shape::{OwnedEnum, OwnedField, OwnedFlags, OwnedShape, OwnedStruct, OwnedVariant};

/// The `"format"` of a protocol document.
pub const PROTOCOL_JSON_FORMAT: &str = "zao-protocol";
/// The `"version"` of the document layout this zao writes and reads.
pub const PROTOCOL_JSON_VERSION: u64 = 2;
/// Deepest nesting of arrays and objects the reader follows.
const MAX_NESTING: usize = 128;

/// Why a protocol document did not load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JsonError {
    /// What is wrong.
    pub kind: JsonErrorKind,
    /// Byte offset into the document.
    pub offset: usize,
}

/// What is wrong with a protocol document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JsonErrorKind {
    /// Not JSON: the grammar wanted this.
    Syntax(&'static str),
    /// Arrays and objects nested deeper than 128.
    TooDeep,
    /// An object lacks this key.
    Missing(&'static str),
    /// This key's value has the wrong type or an impossible value.
    Invalid(&'static str),
    /// Not a `zao-protocol` document of a version this zao reads.
    UnsupportedFormat,
    /// A message's shape does not give its fingerprint.
    FingerprintMismatch(u32),
    /// The protocol hash is not the hash of the messages.
    HashMismatch,
    /// Two messages share an id.
    DuplicateId(u32),
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "protocol JSON, at byte {}: ", self.offset)?;
        match self.kind {
            JsonErrorKind::Syntax(what) => write!(f, "expected {what}"),
            JsonErrorKind::TooDeep => f.write_str("nested deeper than 128"),
            JsonErrorKind::Missing(key) => write!(f, "missing key `{key}`"),
            JsonErrorKind::Invalid(key) => write!(f, "invalid value for `{key}`"),
            JsonErrorKind::UnsupportedFormat => {
                write!(
                    f,
                    "not a `{PROTOCOL_JSON_FORMAT}` document of version {PROTOCOL_JSON_VERSION}"
                )
            }
            JsonErrorKind::FingerprintMismatch(id) => {
                write!(f, "message {id}: its shape does not give its fingerprint")
            }
            JsonErrorKind::HashMismatch => f.write_str("the hash is not the messages' hash"),
            JsonErrorKind::DuplicateId(id) => write!(f, "message id {id} appears twice"),
        }
    }
}

impl std::error::Error for JsonError {}

impl Protocol {
    /// The whole protocol as JSON, for tools in any language: every
    /// message's id, name, fingerprint, channel, direction and shape, and
    /// the protocol hash (docs/INSPECT.md). [`ProtocolSchema::from_json`]
    /// reads it back.
    #[must_use]
    pub fn to_json(&self) -> String {
        ProtocolSchema::from_protocol(self).to_json()
    }
}

impl ProtocolSchema {
    /// This schema as a protocol document (see [`Protocol::to_json`]).
    #[must_use]
    pub fn to_json(&self) -> String {
        let messages = self
            .messages
            .iter()
            .map(|m| {
                Json::Obj(vec![
                    ("id", Json::Num(u64::from(m.id))),
                    ("name", Json::Str(m.name.clone())),
                    ("fingerprint", hex(m.fingerprint)),
                    (
                        "channel",
                        Json::Str(
                            self.channels
                                .get(usize::from(m.channel.0))
                                .map_or_else(|| m.channel.0.to_string(), |c| c.name.clone()),
                        ),
                    ),
                    (
                        "direction",
                        Json::Str(variant_name::<Direction>(m.direction as u32)),
                    ),
                    ("shape", m.shape.as_ref().map_or(Json::Null, shape_json)),
                ])
            })
            .collect();
        let channels = self
            .channels
            .iter()
            .map(|c| {
                Json::Obj(vec![
                    ("name", Json::Str(c.name.clone())),
                    (
                        "kind",
                        Json::Str(variant_name::<ChannelKind>(c.kind as u32)),
                    ),
                    ("priority", Json::Int(i64::from(c.priority))),
                ])
            })
            .collect();
        let doc = Json::Obj(vec![
            ("format", Json::Str(PROTOCOL_JSON_FORMAT.to_owned())),
            ("version", Json::Num(PROTOCOL_JSON_VERSION)),
            ("hash", hex(self.hash())),
            ("channels", Json::Arr(channels)),
            ("messages", Json::Arr(messages)),
        ]);
        let mut out = String::new();
        doc.write(&mut out, 0);
        out.push('\n');
        out
    }

    /// Reads a protocol document. Checks every message's fingerprint
    /// against its shape and the hash against the messages, so a document
    /// that loads describes exactly the protocol whose hash it carries.
    ///
    /// # Errors
    /// [`JsonError`] with the byte offset of the first problem.
    pub fn from_json(text: &str) -> Result<Self, JsonError> {
        let doc = Reader::new(text).document()?;
        let format = doc.key("format")?;
        let version = doc.key("version")?;
        if format.str("format")? != PROTOCOL_JSON_FORMAT
            || version.u64("version")? != PROTOCOL_JSON_VERSION
        {
            return Err(format.error(JsonErrorKind::UnsupportedFormat));
        }
        let mut channels: Vec<ChannelDef> = Vec::new();
        for c in doc.key("channels")?.arr("channels")? {
            let name = c.key("name")?;
            if channels
                .iter()
                .any(|o| o.name == name.str("name").unwrap_or_default())
            {
                return Err(name.error(JsonErrorKind::Invalid("channels")));
            }
            let priority = c.key("priority")?;
            channels.push(ChannelDef {
                name: name.str("name")?.to_owned(),
                kind: c.key("kind")?.variant::<ChannelKind>("kind")?,
                priority: i32::try_from(priority.i64("priority")?)
                    .map_err(|_| priority.error(JsonErrorKind::Invalid("priority")))?,
            });
        }
        if channels.len() > usize::from(u8::MAX) {
            return Err(doc.error(JsonErrorKind::Invalid("channels")));
        }
        let mut messages: Vec<MessageSchema> = Vec::new();
        for m in doc.key("messages")?.arr("messages")? {
            let id = m.key("id")?;
            let id_value =
                u32::try_from(id.u64("id")?).map_err(|_| id.error(JsonErrorKind::Invalid("id")))?;
            let fingerprint = m.key("fingerprint")?.hex("fingerprint")?;
            let shape_node = m.key("shape")?;
            let shape = match shape_node.v {
                Value::Null => None,
                _ => Some(shape_node.shape()?),
            };
            if shape
                .as_ref()
                .is_some_and(|s| s.fingerprint() != fingerprint)
            {
                return Err(shape_node.error(JsonErrorKind::FingerprintMismatch(id_value)));
            }
            let channel = m.key("channel")?;
            let direction = m.key("direction")?;
            if messages.iter().any(|o| o.id == id_value) {
                return Err(id.error(JsonErrorKind::DuplicateId(id_value)));
            }
            messages.push(MessageSchema {
                id: id_value,
                name: m.key("name")?.str("name")?.to_owned(),
                fingerprint,
                channel: channels
                    .iter()
                    .position(|c| c.name == channel.str("channel").unwrap_or_default())
                    .and_then(|i| u8::try_from(i).ok())
                    .map(Channel)
                    .ok_or_else(|| channel.error(JsonErrorKind::Invalid("channel")))?,
                direction: direction.variant::<Direction>("direction")?,
                shape,
            });
        }
        messages.sort_by_key(|m| m.id);
        let schema = Self { channels, messages };
        let hash = doc.key("hash")?;
        if hash.hex("hash")? != schema.hash() {
            return Err(hash.error(JsonErrorKind::HashMismatch));
        }
        Ok(schema)
    }
}

/// `0x` and 16 hex digits: a `u64` exact in any JSON reader (numbers past
/// 2⁵³ are not, in JavaScript).
fn hex(v: u64) -> Json {
    Json::Str(format!("0x{v:016x}"))
}

/// The name of `T`'s variant with tag `tag` (`Channel`, `Direction`): the
/// names follow the enums' shapes, so a variant added there is written here.
fn variant_name<T: Schema>(tag: u32) -> String {
    match T::SHAPE {
        Shape::Enum(e) => e
            .variants
            .iter()
            .find(|v| v.tag == tag)
            .map_or_else(|| tag.to_string(), |v| v.name.to_owned()),
        _ => tag.to_string(),
    }
}

fn style_name(style: FieldStyle) -> &'static str {
    match style {
        FieldStyle::Named => "named",
        FieldStyle::Tuple => "tuple",
        FieldStyle::Unit => "unit",
    }
}

fn fields_json(fields: &[OwnedField]) -> Json {
    Json::Arr(
        fields
            .iter()
            .map(|f| {
                Json::Obj(vec![
                    ("name", Json::Str(f.name.clone())),
                    ("shape", shape_json(&f.shape)),
                ])
            })
            .collect(),
    )
}

fn shape_json(shape: &OwnedShape) -> Json {
    let kind = |k: &str| ("kind", Json::Str(k.to_owned()));
    let boxed = |s: &OwnedShape| shape_json(s);
    Json::Obj(match shape {
        OwnedShape::Scalar(s) => vec![kind(s.name())],
        OwnedShape::Str => vec![kind("str")],
        OwnedShape::Bytes => vec![kind("bytes")],
        OwnedShape::Seq(item) => vec![kind("seq"), ("item", boxed(item))],
        OwnedShape::Array { len, item } => vec![
            kind("array"),
            ("len", Json::Num(*len as u64)),
            ("item", boxed(item)),
        ],
        OwnedShape::Option(item) => vec![kind("option"), ("item", boxed(item))],
        OwnedShape::Boxed(item) => vec![kind("box"), ("item", boxed(item))],
        OwnedShape::Tuple(items) => vec![
            kind("tuple"),
            ("items", Json::Arr(items.iter().map(shape_json).collect())),
        ],
        OwnedShape::Map { key, value, sorted } => vec![
            kind("map"),
            ("key", boxed(key)),
            ("value", boxed(value)),
            ("sorted", Json::Bool(*sorted)),
        ],
        OwnedShape::Vector { name, scalar, len } => vec![
            kind("vector"),
            ("name", Json::Str(name.clone())),
            ("scalar", Json::Str(scalar.name().to_owned())),
            ("len", Json::Num(*len as u64)),
        ],
        OwnedShape::Struct(s) => vec![
            kind("struct"),
            ("name", Json::Str(s.name.clone())),
            ("style", Json::Str(style_name(s.style).to_owned())),
            ("tolerant", Json::Bool(s.tolerant)),
            ("blittable", Json::Bool(s.blittable)),
            ("fields", fields_json(&s.fields)),
        ],
        OwnedShape::Enum(e) => vec![
            kind("enum"),
            ("name", Json::Str(e.name.clone())),
            (
                "variants",
                Json::Arr(
                    e.variants
                        .iter()
                        .map(|v| {
                            Json::Obj(vec![
                                ("name", Json::Str(v.name.clone())),
                                ("tag", Json::Num(u64::from(v.tag))),
                                ("style", Json::Str(style_name(v.style).to_owned())),
                                ("fields", fields_json(&v.fields)),
                            ])
                        })
                        .collect(),
                ),
            ),
        ],
        OwnedShape::Flags(f) => vec![
            kind("flags"),
            ("name", Json::Str(f.name.clone())),
            ("bits", Json::Str(f.bits.name().to_owned())),
            (
                "flags",
                Json::Arr(
                    f.flags
                        .iter()
                        .map(|(name, value)| {
                            Json::Obj(vec![
                                ("name", Json::Str(name.clone())),
                                ("value", Json::Str(format!("0x{value:x}"))),
                            ])
                        })
                        .collect(),
                ),
            ),
        ],
        OwnedShape::Custom {
            name,
            wire,
            fingerprint,
        } => vec![
            kind("custom"),
            ("name", Json::Str(name.clone())),
            ("fingerprint", hex(*fingerprint)),
            ("wire", boxed(wire)),
        ],
        OwnedShape::Recursive { spelled, shape } => vec![
            kind("recursive"),
            ("spelled", Json::Str(spelled.clone())),
            ("shape", shape.as_deref().map_or(Json::Null, shape_json)),
        ],
        OwnedShape::SelfRef => vec![kind("self")],
    })
}

/// A document to write: keys in the order given.
enum Json {
    Null,
    Bool(bool),
    Num(u64),
    Int(i64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(&'static str, Json)>),
}

/// Widest line the writer puts an array or object on whole.
const LINE: usize = 100;

impl Json {
    /// Pretty-printed with two-space indents; an array or object that fits
    /// on one line of [`LINE`] columns stays on one line.
    fn write(&self, out: &mut String, indent: usize) {
        let mut flat = String::new();
        self.write_flat(&mut flat);
        if !matches!(self, Self::Arr(_) | Self::Obj(_)) || indent * 2 + flat.len() <= LINE {
            out.push_str(&flat);
            return;
        }
        let pad = |out: &mut String, n: usize| out.extend(core::iter::repeat_n("  ", n));
        match self {
            Self::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    out.push_str(if i > 0 { ",\n" } else { "\n" });
                    pad(out, indent + 1);
                    item.write(out, indent + 1);
                }
                out.push('\n');
                pad(out, indent);
                out.push(']');
            }
            Self::Obj(entries) => {
                out.push('{');
                for (i, (key, value)) in entries.iter().enumerate() {
                    out.push_str(if i > 0 { ",\n" } else { "\n" });
                    pad(out, indent + 1);
                    write_str(out, key);
                    out.push_str(": ");
                    value.write(out, indent + 1);
                }
                out.push('\n');
                pad(out, indent);
                out.push('}');
            }
            _ => {}
        }
    }

    /// On one line.
    fn write_flat(&self, out: &mut String) {
        match self {
            Self::Null => out.push_str("null"),
            Self::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Self::Int(n) => {
                let _ = write!(out, "{n}");
            }
            Self::Num(n) => {
                let _ = write!(out, "{n}");
            }
            Self::Str(s) => write_str(out, s),
            Self::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    item.write_flat(out);
                }
                out.push(']');
            }
            Self::Obj(entries) => {
                out.push('{');
                for (i, (key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_str(out, key);
                    out.push_str(": ");
                    value.write_flat(out);
                }
                out.push('}');
            }
        }
    }
}

fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A parsed JSON value and where it starts.
struct Node {
    at: usize,
    v: Value,
}

enum Value {
    Null,
    Bool(bool),
    /// The number's text, converted when a key asks for it.
    Num(String),
    Str(String),
    Arr(Vec<Node>),
    Obj(Vec<(String, Node)>),
}

impl Node {
    fn error(&self, kind: JsonErrorKind) -> JsonError {
        JsonError {
            kind,
            offset: self.at,
        }
    }

    fn key(&self, key: &'static str) -> Result<&Node, JsonError> {
        match &self.v {
            Value::Obj(entries) => entries
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v)
                .ok_or_else(|| self.error(JsonErrorKind::Missing(key))),
            _ => Err(self.error(JsonErrorKind::Invalid(key))),
        }
    }

    fn str(&self, key: &'static str) -> Result<&str, JsonError> {
        match &self.v {
            Value::Str(s) => Ok(s),
            _ => Err(self.error(JsonErrorKind::Invalid(key))),
        }
    }

    fn bool(&self, key: &'static str) -> Result<bool, JsonError> {
        match &self.v {
            Value::Bool(b) => Ok(*b),
            _ => Err(self.error(JsonErrorKind::Invalid(key))),
        }
    }

    fn u64(&self, key: &'static str) -> Result<u64, JsonError> {
        match &self.v {
            Value::Num(n) => n
                .parse()
                .map_err(|_| self.error(JsonErrorKind::Invalid(key))),
            _ => Err(self.error(JsonErrorKind::Invalid(key))),
        }
    }

    fn i64(&self, key: &'static str) -> Result<i64, JsonError> {
        match &self.v {
            Value::Num(n) => n
                .parse()
                .map_err(|_| self.error(JsonErrorKind::Invalid(key))),
            _ => Err(self.error(JsonErrorKind::Invalid(key))),
        }
    }

    fn usize(&self, key: &'static str) -> Result<usize, JsonError> {
        usize::try_from(self.u64(key)?).map_err(|_| self.error(JsonErrorKind::Invalid(key)))
    }

    fn hex(&self, key: &'static str) -> Result<u64, JsonError> {
        self.str(key)?
            .strip_prefix("0x")
            .filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .ok_or_else(|| self.error(JsonErrorKind::Invalid(key)))
    }

    fn arr(&self, key: &'static str) -> Result<&[Node], JsonError> {
        match &self.v {
            Value::Arr(items) => Ok(items),
            _ => Err(self.error(JsonErrorKind::Invalid(key))),
        }
    }

    fn scalar(&self, key: &'static str) -> Result<Scalar, JsonError> {
        Scalar::from_name(self.str(key)?).ok_or_else(|| self.error(JsonErrorKind::Invalid(key)))
    }

    fn style(&self) -> Result<FieldStyle, JsonError> {
        match self.str("style")? {
            "named" => Ok(FieldStyle::Named),
            "tuple" => Ok(FieldStyle::Tuple),
            "unit" => Ok(FieldStyle::Unit),
            _ => Err(self.error(JsonErrorKind::Invalid("style"))),
        }
    }

    /// `T`'s variant named by this string (`"Reliable"`), by `T`'s shape.
    fn variant<T: Schema + for<'de> Decode<'de>>(&self, key: &'static str) -> Result<T, JsonError> {
        let name = self.str(key)?;
        let tag = match T::SHAPE {
            Shape::Enum(e) => e.variants.iter().find(|v| v.name == name).map(|v| v.tag),
            _ => None,
        };
        tag.and_then(|tag| u8::try_from(tag).ok())
            .and_then(|tag| T::decode(&[tag]).ok())
            .ok_or_else(|| self.error(JsonErrorKind::Invalid(key)))
    }

    fn fields(&self) -> Result<Vec<OwnedField>, JsonError> {
        self.key("fields")?
            .arr("fields")?
            .iter()
            .map(|f| {
                Ok(OwnedField {
                    name: f.key("name")?.str("name")?.to_owned(),
                    shape: f.key("shape")?.shape()?,
                })
            })
            .collect()
    }

    fn shape(&self) -> Result<OwnedShape, JsonError> {
        let item = |key: &'static str| -> Result<Box<OwnedShape>, JsonError> {
            Ok(Box::new(self.key(key)?.shape()?))
        };
        let kind = self.key("kind")?;
        Ok(match kind.str("kind")? {
            "str" => OwnedShape::Str,
            "bytes" => OwnedShape::Bytes,
            "seq" => OwnedShape::Seq(item("item")?),
            "array" => OwnedShape::Array {
                len: self.key("len")?.usize("len")?,
                item: item("item")?,
            },
            "option" => OwnedShape::Option(item("item")?),
            "box" => OwnedShape::Boxed(item("item")?),
            "tuple" => OwnedShape::Tuple(
                self.key("items")?
                    .arr("items")?
                    .iter()
                    .map(Node::shape)
                    .collect::<Result<_, _>>()?,
            ),
            "map" => OwnedShape::Map {
                key: item("key")?,
                value: item("value")?,
                sorted: self.key("sorted")?.bool("sorted")?,
            },
            "vector" => OwnedShape::Vector {
                name: self.key("name")?.str("name")?.to_owned(),
                scalar: self.key("scalar")?.scalar("scalar")?,
                len: self.key("len")?.usize("len")?,
            },
            "struct" => OwnedShape::Struct(OwnedStruct {
                name: self.key("name")?.str("name")?.to_owned(),
                style: self.key("style")?.style()?,
                fields: self.fields()?,
                tolerant: self.key("tolerant")?.bool("tolerant")?,
                blittable: self.key("blittable")?.bool("blittable")?,
            }),
            "enum" => {
                let mut variants: Vec<OwnedVariant> = Vec::new();
                for v in self.key("variants")?.arr("variants")? {
                    let tag = v.key("tag")?;
                    let tag_value = u32::try_from(tag.u64("tag")?)
                        .map_err(|_| tag.error(JsonErrorKind::Invalid("tag")))?;
                    // Ascending, so the fingerprint's order is the document's.
                    if variants.last().is_some_and(|last| last.tag >= tag_value) {
                        return Err(tag.error(JsonErrorKind::Invalid("tag")));
                    }
                    variants.push(OwnedVariant {
                        name: v.key("name")?.str("name")?.to_owned(),
                        tag: tag_value,
                        style: v.key("style")?.style()?,
                        fields: v.fields()?,
                    });
                }
                OwnedShape::Enum(OwnedEnum {
                    name: self.key("name")?.str("name")?.to_owned(),
                    variants,
                })
            }
            "flags" => OwnedShape::Flags(OwnedFlags {
                name: self.key("name")?.str("name")?.to_owned(),
                bits: self.key("bits")?.scalar("bits")?,
                flags: self
                    .key("flags")?
                    .arr("flags")?
                    .iter()
                    .map(|f| {
                        Ok((
                            f.key("name")?.str("name")?.to_owned(),
                            f.key("value")?.hex("value")?,
                        ))
                    })
                    .collect::<Result<_, JsonError>>()?,
            }),
            "custom" => OwnedShape::Custom {
                name: self.key("name")?.str("name")?.to_owned(),
                wire: item("wire")?,
                fingerprint: self.key("fingerprint")?.hex("fingerprint")?,
            },
            "recursive" => {
                let inner = self.key("shape")?;
                OwnedShape::Recursive {
                    spelled: self.key("spelled")?.str("spelled")?.to_owned(),
                    shape: match inner.v {
                        Value::Null => None,
                        _ => Some(Box::new(inner.shape()?)),
                    },
                }
            }
            "self" => OwnedShape::SelfRef,
            other => match Scalar::from_name(other) {
                Some(s) => OwnedShape::Scalar(s),
                None => return Err(kind.error(JsonErrorKind::Invalid("kind"))),
            },
        })
    }
}

/// A JSON parser (RFC 8259) over a string, nesting bounded.
struct Reader<'t> {
    src: &'t str,
    pos: usize,
    depth: usize,
}

impl<'t> Reader<'t> {
    fn new(src: &'t str) -> Self {
        Self {
            src,
            pos: 0,
            depth: 0,
        }
    }

    fn error(&self, kind: JsonErrorKind) -> JsonError {
        JsonError {
            kind,
            offset: self.pos,
        }
    }

    fn bytes(&self) -> &'t [u8] {
        self.src.as_bytes().get(self.pos..).unwrap_or_default()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes().first() {
            self.pos += 1;
        }
    }

    fn document(&mut self) -> Result<Node, JsonError> {
        let node = self.value()?;
        self.ws();
        if self.pos < self.src.len() {
            return Err(self.error(JsonErrorKind::Syntax("the end of the document")));
        }
        Ok(node)
    }

    fn literal(&mut self, word: &str, v: Value) -> Result<Value, JsonError> {
        if self.bytes().starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(v)
        } else {
            Err(self.error(JsonErrorKind::Syntax("a JSON value")))
        }
    }

    fn value(&mut self) -> Result<Node, JsonError> {
        self.ws();
        let at = self.pos;
        let v = match self.bytes().first() {
            Some(b'n') => self.literal("null", Value::Null)?,
            Some(b't') => self.literal("true", Value::Bool(true))?,
            Some(b'f') => self.literal("false", Value::Bool(false))?,
            Some(b'"') => Value::Str(self.string()?),
            Some(b'-' | b'0'..=b'9') => Value::Num(self.number()?),
            Some(b'[') => {
                self.enter()?;
                self.pos += 1;
                let mut items = Vec::new();
                self.ws();
                if self.bytes().first() == Some(&b']') {
                    self.pos += 1;
                } else {
                    loop {
                        items.push(self.value()?);
                        self.ws();
                        match self.bytes().first() {
                            Some(b',') => self.pos += 1,
                            Some(b']') => {
                                self.pos += 1;
                                break;
                            }
                            _ => return Err(self.error(JsonErrorKind::Syntax("`,` or `]`"))),
                        }
                    }
                }
                self.depth -= 1;
                Value::Arr(items)
            }
            Some(b'{') => {
                self.enter()?;
                self.pos += 1;
                let mut entries = Vec::new();
                self.ws();
                if self.bytes().first() == Some(&b'}') {
                    self.pos += 1;
                } else {
                    loop {
                        self.ws();
                        if self.bytes().first() != Some(&b'"') {
                            return Err(self.error(JsonErrorKind::Syntax("a key string")));
                        }
                        let key = self.string()?;
                        self.ws();
                        if self.bytes().first() != Some(&b':') {
                            return Err(self.error(JsonErrorKind::Syntax("`:`")));
                        }
                        self.pos += 1;
                        entries.push((key, self.value()?));
                        self.ws();
                        match self.bytes().first() {
                            Some(b',') => self.pos += 1,
                            Some(b'}') => {
                                self.pos += 1;
                                break;
                            }
                            _ => return Err(self.error(JsonErrorKind::Syntax("`,` or `}`"))),
                        }
                    }
                }
                self.depth -= 1;
                Value::Obj(entries)
            }
            _ => return Err(self.error(JsonErrorKind::Syntax("a JSON value"))),
        };
        Ok(Node { at, v })
    }

    fn enter(&mut self) -> Result<(), JsonError> {
        if self.depth >= MAX_NESTING {
            return Err(self.error(JsonErrorKind::TooDeep));
        }
        self.depth += 1;
        Ok(())
    }

    fn number(&mut self) -> Result<String, JsonError> {
        let start = self.pos;
        let b = self.bytes();
        let mut i = usize::from(b.first() == Some(&b'-'));
        let digits = |b: &[u8], mut i: usize| {
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            i
        };
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => i = digits(b, i),
            _ => return Err(self.error(JsonErrorKind::Syntax("a digit"))),
        }
        if b.get(i) == Some(&b'.') {
            let after = digits(b, i + 1);
            if after == i + 1 {
                return Err(self.error(JsonErrorKind::Syntax("a digit after `.`")));
            }
            i = after;
        }
        if let Some(b'e' | b'E') = b.get(i) {
            i += 1;
            if let Some(b'+' | b'-') = b.get(i) {
                i += 1;
            }
            let after = digits(b, i);
            if after == i {
                return Err(self.error(JsonErrorKind::Syntax("an exponent")));
            }
            i = after;
        }
        self.pos += i;
        Ok(self.src.get(start..self.pos).unwrap_or_default().to_owned())
    }

    fn string(&mut self) -> Result<String, JsonError> {
        self.pos += 1; // the opening quote
        let mut out = String::new();
        loop {
            let rest = self.src.get(self.pos..).unwrap_or_default();
            let mut chars = rest.chars();
            match chars.next() {
                None => return Err(self.error(JsonErrorKind::Syntax("the closing `\"`"))),
                Some('"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some('\\') => {
                    let c = match chars.next() {
                        Some('"') => '"',
                        Some('\\') => '\\',
                        Some('/') => '/',
                        Some('b') => '\u{8}',
                        Some('f') => '\u{c}',
                        Some('n') => '\n',
                        Some('r') => '\r',
                        Some('t') => '\t',
                        Some('u') => {
                            let unit = self.hex4(self.pos + 2)?;
                            self.pos += 6;
                            let c = if (0xd800..0xdc00).contains(&unit) {
                                // A high surrogate: a low one must follow.
                                if !self.bytes().starts_with(b"\\u") {
                                    return Err(
                                        self.error(JsonErrorKind::Syntax("a low surrogate"))
                                    );
                                }
                                let low = self.hex4(self.pos + 2)?;
                                if !(0xdc00..0xe000).contains(&low) {
                                    return Err(
                                        self.error(JsonErrorKind::Syntax("a low surrogate"))
                                    );
                                }
                                self.pos += 6;
                                char::from_u32(0x1_0000 + ((unit - 0xd800) << 10) + (low - 0xdc00))
                            } else {
                                char::from_u32(unit)
                            };
                            match c {
                                Some(c) => out.push(c),
                                None => {
                                    return Err(
                                        self.error(JsonErrorKind::Syntax("a valid `\\u` escape"))
                                    );
                                }
                            }
                            continue;
                        }
                        _ => return Err(self.error(JsonErrorKind::Syntax("a valid escape"))),
                    };
                    out.push(c);
                    self.pos += 2;
                }
                Some(c) if u32::from(c) < 0x20 => {
                    return Err(
                        self.error(JsonErrorKind::Syntax("no control character in a string"))
                    );
                }
                Some(c) => {
                    out.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
    }

    fn hex4(&self, at: usize) -> Result<u32, JsonError> {
        self.src
            .get(at..at + 4)
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| self.error(JsonErrorKind::Syntax("four hex digits")))
    }
}
