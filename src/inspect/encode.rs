//! A [`Value`] to bytes, against its [`OwnedShape`]: the inverse of the
//! decoder, so a decoded value encodes back to the bytes it came from.

use crate::wire::schema::Scalar;

use super::error::{InspectError, InspectErrorKind, Path, Seg};
use super::shape::{OwnedField, OwnedShape};
use super::value::Value;

/// Appends `value`'s encoding as `shape` to `out`.
pub(crate) struct Encoder<'s> {
    path: Path<'s>,
    named: Vec<&'s OwnedShape>,
    self_refs: u32,
}

impl<'s> Encoder<'s> {
    pub(crate) fn new() -> Self {
        Self {
            path: Path::default(),
            named: Vec::new(),
            self_refs: 0,
        }
    }

    fn mismatch(&self, out: &[u8]) -> InspectError {
        InspectError::new(InspectErrorKind::Mismatch, out.len(), &self.path)
    }

    pub(crate) fn value(
        &mut self,
        out: &mut Vec<u8>,
        shape: &'s OwnedShape,
        value: &Value,
    ) -> Result<(), InspectError> {
        match (shape, value) {
            (OwnedShape::Scalar(s), v) => self.scalar(out, *s, v)?,
            (OwnedShape::Str, Value::Str(s)) => {
                put_varint(out, s.len() as u64);
                out.extend_from_slice(s.as_bytes());
            }
            (OwnedShape::Bytes, Value::Bytes(b)) | (OwnedShape::Seq(_), Value::Bytes(b))
                if is_bytes(shape) =>
            {
                put_varint(out, b.len() as u64);
                out.extend_from_slice(b);
            }
            (OwnedShape::Seq(item), Value::List(items)) => {
                if item.counts_wide() {
                    let count = u32::try_from(items.len()).map_err(|_| self.mismatch(out))?;
                    out.extend_from_slice(&count.to_le_bytes());
                } else {
                    put_varint(out, items.len() as u64);
                }
                self.items(out, item, items)?;
            }
            (OwnedShape::Array { len, item }, Value::Bytes(b))
                if matches!(**item, OwnedShape::Scalar(Scalar::U8)) && b.len() == *len =>
            {
                out.extend_from_slice(b);
            }
            (OwnedShape::Array { len, item }, Value::List(items)) if items.len() == *len => {
                self.items(out, item, items)?;
            }
            (OwnedShape::Option(_), Value::Option(None)) => out.push(0),
            (OwnedShape::Option(item), Value::Option(Some(v))) => {
                out.push(1);
                self.value(out, item, v)?;
            }
            (OwnedShape::Boxed(item), v) => self.value(out, item, v)?,
            (OwnedShape::Tuple(shapes), Value::List(items)) if shapes.len() == items.len() => {
                for (i, (shape, item)) in shapes.iter().zip(items).enumerate() {
                    self.path.push(Seg::Index(i));
                    self.value(out, shape, item)?;
                    self.path.pop();
                }
            }
            (OwnedShape::Map { key, value, .. }, Value::Map(entries)) => {
                put_varint(out, entries.len() as u64);
                for (i, (k, v)) in entries.iter().enumerate() {
                    self.path.push(Seg::Key(i));
                    self.value(out, key, k)?;
                    self.path.pop();
                    self.path.push(Seg::Value(i));
                    self.value(out, value, v)?;
                    self.path.pop();
                }
            }
            (OwnedShape::Vector { scalar, len, .. }, Value::List(items)) if items.len() == *len => {
                for item in items {
                    self.scalar(out, *scalar, item)?;
                }
            }
            (OwnedShape::Struct(s), Value::Struct { fields, extra }) => {
                self.named.push(shape);
                if s.tolerant {
                    let mut body = Vec::new();
                    self.fields(&mut body, &s.fields, fields, true)?;
                    body.extend_from_slice(extra);
                    put_varint(out, body.len() as u64);
                    out.extend_from_slice(&body);
                } else {
                    if !extra.is_empty() {
                        return Err(self.mismatch(out));
                    }
                    self.fields(out, &s.fields, fields, false)?;
                }
                self.named.pop();
            }
            (OwnedShape::Enum(e), Value::Variant { tag, fields }) => {
                let Some(variant) = e.variant(*tag) else {
                    return Err(self.mismatch(out));
                };
                put_varint(out, u64::from(*tag));
                self.named.push(shape);
                self.path.push(Seg::Field(&variant.name));
                self.fields(out, &variant.fields, fields, false)?;
                self.path.pop();
                self.named.pop();
            }
            (OwnedShape::Flags(f), v) => self.scalar(out, f.bits, v)?,
            (OwnedShape::Custom { wire, .. }, v) => self.value(out, wire, v)?,
            (
                OwnedShape::Recursive {
                    shape: Some(inner), ..
                },
                v,
            ) => self.value(out, inner, v)?,
            (OwnedShape::SelfRef, v) => {
                let Some(&named) = self.named.last() else {
                    return Err(InspectError::new(
                        InspectErrorKind::Unsupported,
                        out.len(),
                        &self.path,
                    ));
                };
                if self.self_refs >= super::decode::MAX_SELF_REFS {
                    return Err(InspectError::new(
                        InspectErrorKind::TooDeep,
                        out.len(),
                        &self.path,
                    ));
                }
                self.self_refs += 1;
                self.value(out, named, v)?;
                self.self_refs -= 1;
            }
            _ => return Err(self.mismatch(out)),
        }
        Ok(())
    }

    fn items(
        &mut self,
        out: &mut Vec<u8>,
        shape: &'s OwnedShape,
        items: &[Value],
    ) -> Result<(), InspectError> {
        for (i, item) in items.iter().enumerate() {
            self.path.push(Seg::Index(i));
            self.value(out, shape, item)?;
            self.path.pop();
        }
        Ok(())
    }

    /// The fields of a struct or variant; a tolerant struct may hold a
    /// leading run of them.
    fn fields(
        &mut self,
        out: &mut Vec<u8>,
        shapes: &'s [OwnedField],
        values: &[Value],
        prefix_ok: bool,
    ) -> Result<(), InspectError> {
        if values.len() > shapes.len() || (!prefix_ok && values.len() != shapes.len()) {
            return Err(self.mismatch(out));
        }
        for (f, v) in shapes.iter().zip(values) {
            self.path.push(Seg::Field(&f.name));
            self.value(out, &f.shape, v)?;
            self.path.pop();
        }
        Ok(())
    }

    fn scalar(&mut self, out: &mut Vec<u8>, s: Scalar, v: &Value) -> Result<(), InspectError> {
        macro_rules! uint {
            ($ty:ty, $n:expr) => {
                match v {
                    Value::Uint(n) => match <$ty>::try_from(*n) {
                        Ok(n) if n != 0 || !$n => out.extend_from_slice(&n.to_le_bytes()),
                        _ => return Err(self.mismatch(out)),
                    },
                    _ => return Err(self.mismatch(out)),
                }
            };
        }
        macro_rules! int {
            ($ty:ty, $n:expr) => {
                match v {
                    Value::Int(n) => match <$ty>::try_from(*n) {
                        Ok(n) if n != 0 || !$n => out.extend_from_slice(&n.to_le_bytes()),
                        _ => return Err(self.mismatch(out)),
                    },
                    _ => return Err(self.mismatch(out)),
                }
            };
        }
        match s {
            Scalar::U8 => uint!(u8, false),
            Scalar::U16 => uint!(u16, false),
            Scalar::U32 => uint!(u32, false),
            Scalar::U64 => uint!(u64, false),
            Scalar::U128 => uint!(u128, false),
            Scalar::I8 => int!(i8, false),
            Scalar::I16 => int!(i16, false),
            Scalar::I32 => int!(i32, false),
            Scalar::I64 => int!(i64, false),
            Scalar::I128 => int!(i128, false),
            Scalar::NonZeroU8 => uint!(u8, true),
            Scalar::NonZeroU16 => uint!(u16, true),
            Scalar::NonZeroU32 => uint!(u32, true),
            Scalar::NonZeroU64 => uint!(u64, true),
            Scalar::NonZeroI8 => int!(i8, true),
            Scalar::NonZeroI16 => int!(i16, true),
            Scalar::NonZeroI32 => int!(i32, true),
            Scalar::NonZeroI64 => int!(i64, true),
            Scalar::F32 => match v {
                Value::F32(f) => out.extend_from_slice(&f.to_bits().to_le_bytes()),
                _ => return Err(self.mismatch(out)),
            },
            Scalar::F64 => match v {
                Value::F64(f) => out.extend_from_slice(&f.to_bits().to_le_bytes()),
                _ => return Err(self.mismatch(out)),
            },
            Scalar::Bool => match v {
                Value::Bool(b) => out.push(u8::from(*b)),
                _ => return Err(self.mismatch(out)),
            },
            Scalar::Char => match v {
                Value::Char(c) => out.extend_from_slice(&u32::from(*c).to_le_bytes()),
                _ => return Err(self.mismatch(out)),
            },
            Scalar::Usize => match v {
                Value::Uint(n) => match u64::try_from(*n) {
                    Ok(n) if usize::try_from(n).is_ok() => put_varint(out, n),
                    _ => return Err(self.mismatch(out)),
                },
                _ => return Err(self.mismatch(out)),
            },
            Scalar::Isize => match v {
                Value::Int(n) => match i64::try_from(*n) {
                    Ok(n) if isize::try_from(n).is_ok() => {
                        put_varint(out, ((n << 1) ^ (n >> 63)) as u64);
                    }
                    _ => return Err(self.mismatch(out)),
                },
                _ => return Err(self.mismatch(out)),
            },
            Scalar::Unit => match v {
                Value::Unit => {}
                _ => return Err(self.mismatch(out)),
            },
        }
        Ok(())
    }
}

/// Whether `shape` holds a byte string: `Bytes`, or a sequence of `u8`.
fn is_bytes(shape: &OwnedShape) -> bool {
    match shape {
        OwnedShape::Bytes => true,
        OwnedShape::Seq(item) => matches!(**item, OwnedShape::Scalar(Scalar::U8)),
        _ => false,
    }
}

/// Appends a canonical LEB128 varint (docs/WIRE.md §2).
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}
