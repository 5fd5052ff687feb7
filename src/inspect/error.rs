//! The inspector's errors: where (a byte or text offset and a field path)
//! and what.

use core::fmt;

use crate::DecodeError;

/// Why the inspector could not read or write a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InspectError {
    /// What went wrong.
    pub kind: InspectErrorKind,
    /// Where: the byte offset into the framed message for a decode, into the
    /// text for a parse (for a rule only the encoded bytes can break, such as
    /// a limit, the offset into those bytes).
    pub offset: usize,
    /// The field where it went wrong, e.g. `players[3].position.y`; empty at
    /// the top level.
    pub path: FieldPath,
}

/// A path to a field, written as in Rust: `slots[2].value.count`,
/// `reply.Welcome.client_id`. Map entries are `[i].key` and `[i].value` by
/// their position in the map, a tolerant struct's unknown bytes `..`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FieldPath(pub(crate) String);

impl FieldPath {
    /// The path as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum InspectErrorKind {
    /// The bytes break a wire rule or a [`DecodeLimits`](crate::DecodeLimits)
    /// limit, exactly as the Rust type's decoder would say (an unknown id is
    /// [`DecodeError::UnknownMessage`]).
    Decode(DecodeError),
    /// The text is not the readable form of a message of the protocol.
    Text(TextError),
    /// A [`Value`](super::Value) given to encode does not fit its shape.
    Mismatch,
    /// The shape cannot be read: a recursive field the derive could not
    /// describe, or a self-reference outside a struct or enum.
    Unsupported,
    /// Nesting deeper than the inspector goes (the smaller of
    /// `DecodeLimits::max_depth` and 256 self-references), so that hostile
    /// input cannot overflow its stack.
    TooDeep,
}

/// How text broke the readable form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TextError {
    /// Something else came where the grammar wanted this.
    Expected(&'static str),
    /// A message, field, variant or flag name the shape does not have.
    UnknownName,
    /// A field the struct needs is missing.
    MissingField,
    /// A field is given twice.
    DuplicateField,
    /// A tolerant struct's fields are not a leading run of its fields.
    NotAPrefix,
    /// A number does not fit its type.
    OutOfRange,
    /// A malformed number.
    InvalidNumber,
    /// A malformed escape in a string, character or byte string.
    InvalidEscape,
    /// A value its type refuses: zero for a `NonZero*`, a flag bit outside
    /// the named flags, NaN bits that are not a NaN.
    InvalidValue,
    /// An array, tuple or vector with the wrong number of elements.
    WrongLength,
    /// A map key repeated, or a sorted map's keys out of order.
    DuplicateKey,
    /// Text after the message.
    TrailingText,
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Expected(what) => write!(f, "expected {what}"),
            Self::UnknownName => f.write_str("no such name in this shape"),
            Self::MissingField => f.write_str("a field is missing"),
            Self::DuplicateField => f.write_str("a field is given twice"),
            Self::NotAPrefix => {
                f.write_str("a tolerant struct's fields must be a leading run of its fields")
            }
            Self::OutOfRange => f.write_str("number out of range for its type"),
            Self::InvalidNumber => f.write_str("malformed number"),
            Self::InvalidEscape => f.write_str("malformed escape"),
            Self::InvalidValue => f.write_str("value not allowed for its type"),
            Self::WrongLength => f.write_str("wrong number of elements"),
            Self::DuplicateKey => f.write_str("map key repeated or out of order"),
            Self::TrailingText => f.write_str("text after the message"),
        }
    }
}

impl fmt::Display for InspectErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Decode(e) => e.fmt(f),
            Self::Text(e) => e.fmt(f),
            Self::Mismatch => f.write_str("value does not fit its shape"),
            Self::Unsupported => f.write_str("shape cannot be read"),
            Self::TooDeep => f.write_str("nesting deeper than the inspector goes"),
        }
    }
}

impl fmt::Display for InspectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            InspectErrorKind::Text(_) => "text",
            _ => "byte",
        };
        if self.path.0.is_empty() {
            write!(f, "at {what} {}: {}", self.offset, self.kind)
        } else {
            write!(f, "at {what} {}, {}: {}", self.offset, self.path, self.kind)
        }
    }
}

impl std::error::Error for InspectError {}

impl InspectError {
    pub(crate) fn new(kind: InspectErrorKind, offset: usize, path: &Path<'_>) -> Self {
        Self {
            kind,
            offset,
            path: path.render(),
        }
    }
}

/// One step of a path.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Seg<'a> {
    Field(&'a str),
    Index(usize),
    Key(usize),
    Value(usize),
    Extra,
}

/// The path being walked, as a stack of steps.
#[derive(Debug, Default)]
pub(crate) struct Path<'a>(pub(crate) Vec<Seg<'a>>);

impl<'a> Path<'a> {
    pub(crate) fn push(&mut self, seg: Seg<'a>) {
        self.0.push(seg);
    }

    pub(crate) fn pop(&mut self) {
        self.0.pop();
    }

    pub(crate) fn render(&self) -> FieldPath {
        use fmt::Write as _;
        let mut out = String::new();
        for seg in &self.0 {
            // Writing to a String cannot fail.
            let _ = match seg {
                Seg::Field(name) if out.is_empty() => write!(out, "{name}"),
                Seg::Field(name) => write!(out, ".{name}"),
                Seg::Index(i) => write!(out, "[{i}]"),
                Seg::Key(i) => write!(out, "[{i}].key"),
                Seg::Value(i) => write!(out, "[{i}].value"),
                Seg::Extra => write!(out, ".."),
            };
        }
        FieldPath(out)
    }
}
