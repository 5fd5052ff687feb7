//! A [`Value`] as readable text (the grammar is in docs/INSPECT.md).
//!
//! The compact form is canonical: parsing it and printing the result gives
//! the same text, and every value prints one way. Floats print as the
//! shortest decimal that reads back to the same bits (Rust's `{:?}`), with
//! `inf`, `-inf`, `NaN` for the quiet NaN `f32::NAN`/`f64::NAN` and
//! `NaN(0x…)` with the bits for every other NaN, so every bit pattern
//! survives text.

use core::fmt::Write as _;

use crate::wire::schema::{FieldStyle, Scalar};

use super::error::{InspectError, InspectErrorKind, Path, Seg};
use super::shape::{OwnedField, OwnedShape};
use super::value::Value;

/// How text is laid out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TextStyle {
    /// One line; the canonical form.
    #[default]
    Compact,
    /// A struct, list or map holding structs, lists or maps puts each item
    /// on its own line, indented by four spaces. Reads back to the same
    /// bytes as the compact form.
    Pretty,
}

pub(crate) struct Printer<'s> {
    pub(crate) out: String,
    style: TextStyle,
    indent: usize,
    path: Path<'s>,
    named: Vec<&'s OwnedShape>,
    self_refs: u32,
}

impl<'s> Printer<'s> {
    pub(crate) fn new(style: TextStyle) -> Self {
        Self {
            out: String::new(),
            style,
            indent: 0,
            path: Path::default(),
            named: Vec::new(),
            self_refs: 0,
        }
    }

    fn mismatch(&self) -> InspectError {
        InspectError::new(InspectErrorKind::Mismatch, 0, &self.path)
    }

    /// A top-level message: its name, then its value (`Name { .. }`,
    /// `Name(..)`, `Name`, `Name::Variant ..`, or `Name(value)`).
    pub(crate) fn message(
        &mut self,
        name: &str,
        shape: &'s OwnedShape,
        value: &Value,
    ) -> Result<(), InspectError> {
        self.out.push_str(name);
        match (shape, value) {
            (OwnedShape::Struct(s), Value::Struct { fields, extra }) => {
                self.named.push(shape);
                if s.style == FieldStyle::Named {
                    self.out.push(' ');
                }
                let r = self.fields(s.style, &s.fields, fields, extra, true);
                self.named.pop();
                r
            }
            (OwnedShape::Enum(_), Value::Variant { .. }) => {
                self.out.push_str("::");
                self.value(shape, value)
            }
            _ => {
                self.out.push('(');
                self.value(shape, value)?;
                self.out.push(')');
                Ok(())
            }
        }
    }

    pub(crate) fn value(
        &mut self,
        shape: &'s OwnedShape,
        value: &Value,
    ) -> Result<(), InspectError> {
        match (shape, value) {
            (OwnedShape::Scalar(s), v) => self.scalar(*s, v)?,
            (OwnedShape::Str, Value::Str(s)) => quote_str(&mut self.out, s),
            (
                OwnedShape::Bytes | OwnedShape::Seq(_) | OwnedShape::Array { .. },
                Value::Bytes(b),
            ) => {
                quote_bytes(&mut self.out, b);
            }
            (OwnedShape::Seq(item) | OwnedShape::Array { item, .. }, Value::List(items)) => {
                let multi = self.multiline(items.iter().map(|v| (&**item, v)));
                self.open('[', multi);
                for (i, v) in items.iter().enumerate() {
                    self.sep(i, multi);
                    self.path.push(Seg::Index(i));
                    self.value(item, v)?;
                    self.path.pop();
                }
                self.close(']', multi, !items.is_empty());
            }
            (OwnedShape::Option(_), Value::Option(None)) => self.out.push_str("None"),
            (OwnedShape::Option(item), Value::Option(Some(v))) => {
                self.out.push_str("Some(");
                self.value(item, v)?;
                self.out.push(')');
            }
            (OwnedShape::Boxed(item), v) => self.value(item, v)?,
            (OwnedShape::Tuple(shapes), Value::List(items)) => {
                self.out.push('(');
                for (i, (s, v)) in shapes.iter().zip(items).enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.path.push(Seg::Index(i));
                    self.value(s, v)?;
                    self.path.pop();
                }
                if items.len() == 1 {
                    self.out.push(',');
                }
                self.out.push(')');
            }
            (OwnedShape::Map { key, value, .. }, Value::Map(entries)) => {
                let multi = self.style == TextStyle::Pretty
                    && entries
                        .iter()
                        .any(|(k, v)| !is_simple(key, k) || !is_simple(value, v));
                self.open('{', multi);
                for (i, (k, v)) in entries.iter().enumerate() {
                    self.sep(i, multi);
                    self.path.push(Seg::Key(i));
                    self.value(key, k)?;
                    self.path.pop();
                    self.out.push_str(": ");
                    self.path.push(Seg::Value(i));
                    self.value(value, v)?;
                    self.path.pop();
                }
                self.close('}', multi, !entries.is_empty());
            }
            (OwnedShape::Vector { scalar, .. }, Value::List(items)) => {
                self.out.push('(');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.scalar(*scalar, v)?;
                }
                self.out.push(')');
            }
            (OwnedShape::Struct(s), Value::Struct { fields, extra }) => {
                self.named.push(shape);
                let r = self.fields(s.style, &s.fields, fields, extra, false);
                self.named.pop();
                r?;
            }
            (OwnedShape::Enum(e), Value::Variant { tag, fields }) => {
                let Some(variant) = e.variant(*tag) else {
                    return Err(self.mismatch());
                };
                self.out.push_str(&variant.name);
                if variant.style == FieldStyle::Named {
                    self.out.push(' ');
                }
                self.named.push(shape);
                self.path.push(Seg::Field(&variant.name));
                let r = if variant.style == FieldStyle::Unit {
                    if fields.is_empty() {
                        Ok(())
                    } else {
                        Err(self.mismatch())
                    }
                } else {
                    self.fields(variant.style, &variant.fields, fields, &[], true)
                };
                self.path.pop();
                self.named.pop();
                r?;
            }
            (OwnedShape::Flags(f), Value::Uint(bits)) => {
                let mut rest = *bits;
                let mut first = true;
                for (name, value) in &f.flags {
                    let value = u128::from(*value);
                    if value != 0 && rest & value == value {
                        if !first {
                            self.out.push_str(" | ");
                        }
                        self.out.push_str(name);
                        rest &= !value;
                        first = false;
                    }
                }
                if rest != 0 || first {
                    if !first {
                        self.out.push_str(" | ");
                    }
                    let _ = write!(self.out, "{rest}");
                }
            }
            (OwnedShape::Custom { wire, .. }, v) => self.value(wire, v)?,
            (
                OwnedShape::Recursive {
                    shape: Some(inner), ..
                },
                v,
            ) => self.value(inner, v)?,
            (OwnedShape::SelfRef, v) => {
                let Some(&named) = self.named.last() else {
                    return Err(InspectError::new(
                        InspectErrorKind::Unsupported,
                        0,
                        &self.path,
                    ));
                };
                if self.self_refs >= super::decode::MAX_SELF_REFS {
                    return Err(InspectError::new(InspectErrorKind::TooDeep, 0, &self.path));
                }
                self.self_refs += 1;
                self.value(named, v)?;
                self.self_refs -= 1;
            }
            _ => return Err(self.mismatch()),
        }
        Ok(())
    }

    /// `{ a: 1, b: 2 }`, `(1, 2)` or `()` (nothing after a name), with a
    /// tolerant body's unknown bytes as `.. x"…"`.
    fn fields(
        &mut self,
        style: FieldStyle,
        shapes: &'s [OwnedField],
        values: &[Value],
        extra: &[u8],
        named_before: bool,
    ) -> Result<(), InspectError> {
        if values.len() > shapes.len() {
            return Err(self.mismatch());
        }
        let (open, close) = match style {
            FieldStyle::Named => ('{', '}'),
            FieldStyle::Tuple => ('(', ')'),
            FieldStyle::Unit if values.is_empty() && extra.is_empty() => {
                if !named_before {
                    self.out.push_str("()");
                }
                return Ok(());
            }
            FieldStyle::Unit => ('{', '}'),
        };
        let multi = style == FieldStyle::Named
            && self.multiline(shapes.iter().map(|f| &f.shape).zip(values));
        let spaced = style == FieldStyle::Named && !(values.is_empty() && extra.is_empty());
        self.out.push(open);
        if multi {
            self.indent += 1;
        } else if spaced {
            self.out.push(' ');
        }
        for (i, (f, v)) in shapes.iter().zip(values).enumerate() {
            if multi {
                self.newline();
            } else if i > 0 {
                self.out.push_str(", ");
            }
            if style == FieldStyle::Named {
                self.out.push_str(&f.name);
                self.out.push_str(": ");
            }
            self.path.push(Seg::Field(&f.name));
            self.value(&f.shape, v)?;
            self.path.pop();
            if multi {
                self.out.push(',');
            }
        }
        if !extra.is_empty() {
            if multi {
                self.newline();
            } else if !values.is_empty() {
                self.out.push_str(", ");
            }
            self.out.push_str(".. ");
            quote_bytes(&mut self.out, extra);
        }
        if multi {
            self.indent -= 1;
            self.newline();
        } else if spaced {
            self.out.push(' ');
        }
        self.out.push(close);
        Ok(())
    }

    fn scalar(&mut self, s: Scalar, v: &Value) -> Result<(), InspectError> {
        match (s, v) {
            (Scalar::Unit, Value::Unit) => self.out.push_str("()"),
            (Scalar::Bool, Value::Bool(b)) => self.out.push_str(if *b { "true" } else { "false" }),
            (Scalar::Char, Value::Char(c)) => quote_char(&mut self.out, *c),
            (Scalar::F32, Value::F32(f)) => write_f32(&mut self.out, *f),
            (Scalar::F64, Value::F64(f)) => write_f64(&mut self.out, *f),
            (_, Value::Uint(n)) if is_unsigned(s) => {
                let _ = write!(self.out, "{n}");
            }
            (_, Value::Int(n)) if is_signed(s) => {
                let _ = write!(self.out, "{n}");
            }
            _ => return Err(self.mismatch()),
        }
        Ok(())
    }

    /// Whether items go one per line: pretty style, and some item is a
    /// struct, list or map of its own.
    fn multiline<'v>(&self, mut items: impl Iterator<Item = (&'s OwnedShape, &'v Value)>) -> bool {
        self.style == TextStyle::Pretty && items.any(|(s, v)| !is_simple(s, v))
    }

    fn open(&mut self, c: char, multi: bool) {
        self.out.push(c);
        if multi {
            self.indent += 1;
        }
    }

    fn sep(&mut self, i: usize, multi: bool) {
        if multi {
            if i > 0 {
                self.out.push(',');
            }
            self.newline();
        } else if i > 0 {
            self.out.push_str(", ");
        }
    }

    fn close(&mut self, c: char, multi: bool, any: bool) {
        if multi {
            if any {
                self.out.push(',');
            }
            self.indent -= 1;
            self.newline();
        }
        self.out.push(c);
    }

    fn newline(&mut self) {
        self.out.push('\n');
        for _ in 0..self.indent {
            self.out.push_str("    ");
        }
    }
}

pub(crate) fn is_unsigned(s: Scalar) -> bool {
    matches!(
        s,
        Scalar::U8
            | Scalar::U16
            | Scalar::U32
            | Scalar::U64
            | Scalar::U128
            | Scalar::Usize
            | Scalar::NonZeroU8
            | Scalar::NonZeroU16
            | Scalar::NonZeroU32
            | Scalar::NonZeroU64
    )
}

pub(crate) fn is_signed(s: Scalar) -> bool {
    matches!(
        s,
        Scalar::I8
            | Scalar::I16
            | Scalar::I32
            | Scalar::I64
            | Scalar::I128
            | Scalar::Isize
            | Scalar::NonZeroI8
            | Scalar::NonZeroI16
            | Scalar::NonZeroI32
            | Scalar::NonZeroI64
    )
}

/// A value that prints on one line in any style.
fn is_simple(shape: &OwnedShape, value: &Value) -> bool {
    match value {
        Value::List(items) => {
            matches!(shape, OwnedShape::Vector { .. })
                || (matches!(shape, OwnedShape::Tuple(_)) && items.len() <= 4)
        }
        Value::Map(_) | Value::Struct { .. } => false,
        Value::Variant { fields, .. } => fields.is_empty(),
        Value::Option(Some(inner)) => match shape {
            OwnedShape::Option(item) => is_simple(item, inner),
            _ => false,
        },
        _ => true,
    }
}

/// The quiet NaN that prints as plain `NaN` (`f32::NAN`).
pub(crate) const F32_NAN: u32 = 0x7fc0_0000;
/// The quiet NaN that prints as plain `NaN` (`f64::NAN`).
pub(crate) const F64_NAN: u64 = 0x7ff8_0000_0000_0000;

/// `inf`, `-inf`, `NaN`, `NaN(0x…)` or the shortest round-trip decimal.
pub(crate) fn write_f32(out: &mut String, f: f32) {
    if f.is_nan() {
        if f.to_bits() == F32_NAN {
            out.push_str("NaN");
        } else {
            let _ = write!(out, "NaN(0x{:08x})", f.to_bits());
        }
    } else if f.is_infinite() {
        out.push_str(if f > 0.0 { "inf" } else { "-inf" });
    } else {
        let _ = write!(out, "{f:?}");
    }
}

/// As [`write_f32`].
pub(crate) fn write_f64(out: &mut String, f: f64) {
    if f.is_nan() {
        if f.to_bits() == F64_NAN {
            out.push_str("NaN");
        } else {
            let _ = write!(out, "NaN(0x{:016x})", f.to_bits());
        }
    } else if f.is_infinite() {
        out.push_str(if f > 0.0 { "inf" } else { "-inf" });
    } else {
        let _ = write!(out, "{f:?}");
    }
}

/// Escapes `c` for a quoted string or character; `None` if it stands as is.
fn escape(c: char, quote: char) -> Option<&'static str> {
    Some(match c {
        '\\' => "\\\\",
        '\n' => "\\n",
        '\r' => "\\r",
        '\t' => "\\t",
        '"' if quote == '"' => "\\\"",
        '\'' if quote == '\'' => "\\'",
        _ => return None,
    })
}

fn push_escaped(out: &mut String, c: char, quote: char) {
    match escape(c, quote) {
        Some(e) => out.push_str(e),
        None if c.is_control() => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
        None => out.push(c),
    }
}

/// `"…"`: control characters, `"` and `\` escaped, the rest as is.
pub(crate) fn quote_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        push_escaped(out, c, '"');
    }
    out.push('"');
}

fn quote_char(out: &mut String, c: char) {
    out.push('\'');
    push_escaped(out, c, '\'');
    out.push('\'');
}

/// `b"…"` when every byte is printable ASCII, else `x"…"` in hex.
pub(crate) fn quote_bytes(out: &mut String, bytes: &[u8]) {
    if bytes.iter().all(|b| (0x20..=0x7e).contains(b)) {
        out.push_str("b\"");
        for &b in bytes {
            match b {
                b'"' => out.push_str("\\\""),
                b'\\' => out.push_str("\\\\"),
                _ => out.push(char::from(b)),
            }
        }
    } else {
        out.push_str("x\"");
        for b in bytes {
            let _ = write!(out, "{b:02x}");
        }
    }
    out.push('"');
}
