//! Bytes to a [`Value`], against an [`OwnedShape`], under [`DecodeLimits`].
//!
//! The rules are the Rust decoders' (docs/WIRE.md §2–§8), checked in the
//! same order with the same errors, through the same [`Reader`]: counts and
//! lengths against the limits and the remaining input before anything is
//! allocated, depth on every `Vec`, map and `Box`. The allocation budget is
//! charged for the inspector's own memory (see [`INSPECTOR_ALLOC_FACTOR`]).

use std::cmp::Ordering;
use std::collections::HashSet;

use crate::wire::schema::Scalar;
use crate::{DecodeError, DecodeLimits, Reader};

use super::error::{InspectError, InspectErrorKind, Path, Seg};
use super::shape::{OwnedField, OwnedShape};
use super::value::Value;

/// A dynamic value takes more memory than the Rust value it stands for (a
/// 16-byte `PlayerState` is four [`Value`]s), so the inspector's budget is
/// this multiple of [`DecodeLimits::max_alloc`]: with the defaults, 64 MiB,
/// enough for any message the Rust decoder accepts under 8 MiB.
pub const INSPECTOR_ALLOC_FACTOR: usize = 8;

/// The most self-references (`Shape::SelfRef`) one decode follows, whatever
/// `max_depth` says: each costs a few stack frames.
pub(crate) const MAX_SELF_REFS: u32 = 256;

/// What the memory of one value costs against the budget.
pub(crate) const VALUE_SIZE: usize = size_of::<Value>();

/// What the annotated view hears about: each run of bytes and what it is.
pub(crate) trait Sink<'s> {
    /// `[start, end)` of the input is `note`, at `path`.
    fn note(&mut self, start: usize, end: usize, path: &Path<'s>, note: Note<'_, 's>);
}

/// What a run of bytes is.
pub(crate) enum Note<'v, 's> {
    /// A whole value of a leaf shape (a number, a string, a vector, flags).
    Leaf(&'s OwnedShape, &'v Value),
    /// A sequence's or map's element count.
    Count(usize),
    /// A tolerant struct's body length.
    Body(usize),
    /// An enum's tag and the variant it names.
    Tag(u32, &'s str),
    /// An option's tag.
    Present(bool),
    /// Bytes of a tolerant body that no field of this shape covers.
    Extra,
}

/// The sink of a plain decode: hears nothing.
pub(crate) struct Quiet;

impl<'s> Sink<'s> for Quiet {
    #[inline]
    fn note(&mut self, _: usize, _: usize, _: &Path<'s>, _: Note<'_, 's>) {}
}

/// One decode in progress.
pub(crate) struct Decoder<'s, S> {
    pub(crate) path: Path<'s>,
    /// The structs and enums being decoded, innermost last: a `SelfRef`
    /// stands for the last one.
    named: Vec<&'s OwnedShape>,
    self_refs: u32,
    max_self_refs: u32,
    pub(crate) sink: S,
}

/// A reader and the offset, in the whole input, where its bytes end (so
/// the offset of its position is `end - remaining`).
pub(crate) struct Cursor<'b> {
    pub(crate) r: Reader<'b>,
    pub(crate) end: usize,
}

impl Cursor<'_> {
    #[inline]
    pub(crate) fn offset(&self) -> usize {
        self.end.saturating_sub(self.r.remaining())
    }
}

/// The reader's limits for the inspector: the caller's, with the budget
/// scaled for dynamic values.
pub(crate) fn inspector_limits(limits: DecodeLimits) -> DecodeLimits {
    DecodeLimits {
        max_alloc: limits.max_alloc.saturating_mul(INSPECTOR_ALLOC_FACTOR),
        ..limits
    }
}

impl<'s, S: Sink<'s>> Decoder<'s, S> {
    pub(crate) fn new(sink: S, limits: &DecodeLimits) -> Self {
        Self {
            path: Path::default(),
            named: Vec::new(),
            self_refs: 0,
            max_self_refs: limits.max_depth.min(MAX_SELF_REFS),
            sink,
        }
    }

    fn fail(&self, kind: InspectErrorKind, offset: usize) -> InspectError {
        InspectError::new(kind, offset, &self.path)
    }

    fn wire(&self, e: DecodeError, offset: usize) -> InspectError {
        self.fail(InspectErrorKind::Decode(e), offset)
    }

    /// Decodes one value of `shape`.
    pub(crate) fn value(
        &mut self,
        c: &mut Cursor<'_>,
        shape: &'s OwnedShape,
    ) -> Result<Value, InspectError> {
        let start = c.offset();
        let value = match shape {
            OwnedShape::Scalar(s) => self.scalar(c, *s)?,
            OwnedShape::Str => {
                let len = c.r.get_byte_len(true).map_err(|e| self.wire(e, start))?;
                let bytes = c.r.take(len).map_err(|e| self.wire(e, start))?;
                match core::str::from_utf8(bytes) {
                    Ok(s) => Value::Str(s.to_owned()),
                    Err(_) => return Err(self.wire(DecodeError::InvalidUtf8, start)),
                }
            }
            OwnedShape::Bytes => {
                let len = c.r.get_byte_len(true).map_err(|e| self.wire(e, start))?;
                Value::Bytes(c.r.take(len).map_err(|e| self.wire(e, start))?.to_vec())
            }
            OwnedShape::Seq(item) => return self.seq(c, item, start),
            OwnedShape::Array { len, item } => return self.array(c, *len, item, start),
            OwnedShape::Option(item) => {
                let present = match c.r.get_u8().map_err(|e| self.wire(e, start))? {
                    0 => false,
                    1 => true,
                    _ => return Err(self.wire(DecodeError::InvalidTag, start)),
                };
                self.sink
                    .note(start, start + 1, &self.path, Note::Present(present));
                if !present {
                    return Ok(Value::Option(None));
                }
                c.r.charge(VALUE_SIZE).map_err(|e| self.wire(e, start))?;
                let inner = self.value(c, item)?;
                return Ok(Value::Option(Some(Box::new(inner))));
            }
            OwnedShape::Boxed(item) => {
                c.r.enter().map_err(|e| self.wire(e, start))?;
                c.r.charge(VALUE_SIZE).map_err(|e| self.wire(e, start))?;
                let inner = self.value(c, item)?;
                c.r.leave();
                return Ok(inner);
            }
            OwnedShape::Tuple(items) => {
                c.r.charge(items.len().saturating_mul(VALUE_SIZE))
                    .map_err(|e| self.wire(e, start))?;
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    self.path.push(Seg::Index(i));
                    let v = self.value(c, item);
                    self.path.pop();
                    out.push(v?);
                }
                return Ok(Value::List(out));
            }
            OwnedShape::Map { key, value, sorted } => {
                return self.map(c, key, value, *sorted, start);
            }
            OwnedShape::Vector { scalar, len, .. } => {
                c.r.charge(len.saturating_mul(VALUE_SIZE))
                    .map_err(|e| self.wire(e, start))?;
                let mut out = Vec::with_capacity(*len);
                for _ in 0..*len {
                    out.push(self.scalar(c, *scalar)?);
                }
                Value::List(out)
            }
            OwnedShape::Struct(s) => {
                self.named.push(shape);
                let v = self.fields_struct(c, &s.fields, s.tolerant, start);
                self.named.pop();
                return v;
            }
            OwnedShape::Enum(e) => {
                let tag = if e.small_tags() {
                    u32::from(c.r.get_u8().map_err(|err| self.wire(err, start))?)
                } else {
                    c.r.get_varint_u32().map_err(|err| self.wire(err, start))?
                };
                let Some(variant) = e.variant(tag) else {
                    return Err(self.wire(DecodeError::InvalidTag, start));
                };
                let tag_end = c.offset();
                self.sink
                    .note(start, tag_end, &self.path, Note::Tag(tag, &variant.name));
                self.named.push(shape);
                self.path.push(Seg::Field(&variant.name));
                let fields = self.fields(c, &variant.fields);
                self.path.pop();
                self.named.pop();
                return Ok(Value::Variant {
                    tag,
                    fields: fields?,
                });
            }
            OwnedShape::Flags(f) => {
                let bits = match self.scalar(c, f.bits)? {
                    Value::Uint(bits) => bits,
                    _ => return Err(self.fail(InspectErrorKind::Unsupported, start)),
                };
                if bits & !u128::from(f.mask()) != 0 {
                    return Err(self.wire(DecodeError::InvalidValue, start));
                }
                Value::Uint(bits)
            }
            OwnedShape::Custom { wire, .. } => return self.value(c, wire),
            OwnedShape::Recursive { shape, .. } => match shape {
                Some(shape) => return self.value(c, shape),
                None => return Err(self.fail(InspectErrorKind::Unsupported, start)),
            },
            OwnedShape::SelfRef => {
                let Some(&named) = self.named.last() else {
                    return Err(self.fail(InspectErrorKind::Unsupported, start));
                };
                if self.self_refs >= self.max_self_refs {
                    return Err(self.fail(InspectErrorKind::TooDeep, start));
                }
                self.self_refs += 1;
                let v = self.value(c, named);
                self.self_refs -= 1;
                return v;
            }
        };
        self.sink
            .note(start, c.offset(), &self.path, Note::Leaf(shape, &value));
        Ok(value)
    }

    fn scalar(&mut self, c: &mut Cursor<'_>, s: Scalar) -> Result<Value, InspectError> {
        let start = c.offset();
        let r = &mut c.r;
        let v = match s {
            Scalar::U8 => r.get_u8().map(|v| Value::Uint(v.into())),
            Scalar::U16 => r.get_u16_le().map(|v| Value::Uint(v.into())),
            Scalar::U32 => r.get_u32_le().map(|v| Value::Uint(v.into())),
            Scalar::U64 => r.get_u64_le().map(|v| Value::Uint(v.into())),
            Scalar::U128 => r.get_u128_le().map(Value::Uint),
            Scalar::I8 => r.get_u8().map(|v| Value::Int((v as i8).into())),
            Scalar::I16 => r.get_i16_le().map(|v| Value::Int(v.into())),
            Scalar::I32 => r.get_i32_le().map(|v| Value::Int(v.into())),
            Scalar::I64 => r.get_i64_le().map(|v| Value::Int(v.into())),
            Scalar::I128 => r.get_i128_le().map(Value::Int),
            Scalar::F32 => r.get_u32_le().map(|v| Value::F32(f32::from_bits(v))),
            Scalar::F64 => r.get_u64_le().map(|v| Value::F64(f64::from_bits(v))),
            Scalar::Bool => match r.get_u8() {
                Ok(0) => Ok(Value::Bool(false)),
                Ok(1) => Ok(Value::Bool(true)),
                Ok(_) => Err(DecodeError::InvalidTag),
                Err(e) => Err(e),
            },
            Scalar::Char => r
                .get_u32_le()
                .and_then(|v| char::from_u32(v).ok_or(DecodeError::InvalidValue))
                .map(Value::Char),
            Scalar::Usize => r.get_varint().and_then(|v| {
                usize::try_from(v)
                    .map(|v| Value::Uint(v as u128))
                    .map_err(|_| DecodeError::VarintOverflow)
            }),
            Scalar::Isize => r.get_varint().and_then(|v| {
                let v = ((v >> 1) as i64) ^ -((v & 1) as i64);
                isize::try_from(v)
                    .map(|v| Value::Int(v as i128))
                    .map_err(|_| DecodeError::VarintOverflow)
            }),
            Scalar::Unit => Ok(Value::Unit),
            Scalar::NonZeroU8 => nonzero_u(r.get_u8().map(u128::from)),
            Scalar::NonZeroU16 => nonzero_u(r.get_u16_le().map(u128::from)),
            Scalar::NonZeroU32 => nonzero_u(r.get_u32_le().map(u128::from)),
            Scalar::NonZeroU64 => nonzero_u(r.get_u64_le().map(u128::from)),
            Scalar::NonZeroI8 => nonzero_i(r.get_u8().map(|v| i128::from(v as i8))),
            Scalar::NonZeroI16 => nonzero_i(r.get_i16_le().map(i128::from)),
            Scalar::NonZeroI32 => nonzero_i(r.get_i32_le().map(i128::from)),
            Scalar::NonZeroI64 => nonzero_i(r.get_i64_le().map(i128::from)),
        };
        v.map_err(|e| self.wire(e, start))
    }

    fn seq(
        &mut self,
        c: &mut Cursor<'_>,
        item: &'s OwnedShape,
        start: usize,
    ) -> Result<Value, InspectError> {
        c.r.enter().map_err(|e| self.wire(e, start))?;
        if matches!(item, OwnedShape::Scalar(Scalar::U8)) {
            // `Vec<u8>`: a count and a run of bytes, kept as one byte string.
            let count = c.r.get_count(1, 1).map_err(|e| self.wire(e, start))?;
            let bytes = c.r.take(count).map_err(|e| self.wire(e, start))?.to_vec();
            c.r.leave();
            let value = Value::Bytes(bytes);
            self.sink.note(
                start,
                c.offset(),
                &self.path,
                Note::Leaf(&OwnedShape::Bytes, &value),
            );
            return Ok(value);
        }
        let count =
            c.r.get_run_count(
                item.counts_wide(),
                item.min_size(self.named.last().copied()),
                VALUE_SIZE,
            )
            .map_err(|e| self.wire(e, start))?;
        self.sink
            .note(start, c.offset(), &self.path, Note::Count(count));
        let items = self.items(c, count, item)?;
        c.r.leave();
        Ok(Value::List(items))
    }

    fn array(
        &mut self,
        c: &mut Cursor<'_>,
        len: usize,
        item: &'s OwnedShape,
        start: usize,
    ) -> Result<Value, InspectError> {
        if matches!(item, OwnedShape::Scalar(Scalar::U8)) {
            c.r.charge(len).map_err(|e| self.wire(e, start))?;
            let bytes = c.r.take(len).map_err(|e| self.wire(e, start))?.to_vec();
            let value = Value::Bytes(bytes);
            self.sink.note(
                start,
                c.offset(),
                &self.path,
                Note::Leaf(&OwnedShape::Bytes, &value),
            );
            return Ok(value);
        }
        // The Rust decoder allocates nothing for an array; a dynamic one
        // holds `len` values, charged before they exist.
        c.r.charge(len.saturating_mul(VALUE_SIZE))
            .map_err(|e| self.wire(e, start))?;
        Ok(Value::List(self.items(c, len, item)?))
    }

    fn items(
        &mut self,
        c: &mut Cursor<'_>,
        count: usize,
        item: &'s OwnedShape,
    ) -> Result<Vec<Value>, InspectError> {
        let mut out = Vec::with_capacity(count);
        for i in 0..count {
            self.path.push(Seg::Index(i));
            let v = self.value(c, item);
            self.path.pop();
            out.push(v?);
        }
        Ok(out)
    }

    fn map(
        &mut self,
        c: &mut Cursor<'_>,
        key: &'s OwnedShape,
        value: &'s OwnedShape,
        sorted: bool,
        start: usize,
    ) -> Result<Value, InspectError> {
        c.r.enter().map_err(|e| self.wire(e, start))?;
        let count =
            c.r.get_count(
                key.min_size(self.named.last().copied())
                    .saturating_add(value.min_size(self.named.last().copied())),
                2 * VALUE_SIZE,
            )
            .map_err(|e| self.wire(e, start))?;
        self.sink
            .note(start, c.offset(), &self.path, Note::Count(count));
        let mut entries: Vec<(Value, Value)> = Vec::with_capacity(count);
        // Keys by their bytes: a repeated key has the same bytes (canonical
        // encodings), the rule a `HashMap` decoder enforces by value.
        let mut seen: HashSet<&[u8]> = HashSet::new();
        let mut previous: Option<&[u8]> = None;
        for i in 0..count {
            let key_start = c.offset();
            let before = c.r.rest();
            self.path.push(Seg::Key(i));
            let k = self.value(c, key);
            self.path.pop();
            let k = k?;
            let key_bytes = before
                .get(..before.len().saturating_sub(c.r.remaining()))
                .unwrap_or_default();
            self.path.push(Seg::Value(i));
            let v = self.value(c, value);
            self.path.pop();
            let v = v?;
            // As the Rust decoders: the key is checked once its value is read.
            let repeated = if sorted {
                let in_order = match (entries.last(), previous) {
                    (Some((last, _)), Some(last_bytes)) => {
                        match natural_cmp(key, last, &k) {
                            Some(order) => order == Ordering::Less,
                            // An order zao cannot know (a user type's `Ord`):
                            // only a repeat is caught.
                            None => last_bytes != key_bytes,
                        }
                    }
                    _ => true,
                };
                !in_order
            } else {
                !seen.insert(key_bytes)
            };
            if repeated {
                self.path.push(Seg::Key(i));
                let err = self.wire(DecodeError::DuplicateKey, key_start);
                return Err(err);
            }
            previous = Some(key_bytes);
            entries.push((k, v));
        }
        c.r.leave();
        Ok(Value::Map(entries))
    }

    /// A struct's fields; a tolerant body first splits off its length.
    fn fields_struct(
        &mut self,
        c: &mut Cursor<'_>,
        fields: &'s [OwnedField],
        tolerant: bool,
        start: usize,
    ) -> Result<Value, InspectError> {
        if !tolerant {
            // The leading exact-size fields are checked with one length
            // check, as the derived decoder does.
            let prefix = fields
                .iter()
                .map_while(|f| f.shape.exact_size())
                .fold(0usize, usize::saturating_add);
            if c.r.remaining() < prefix {
                return Err(self.wire(DecodeError::UnexpectedEnd, start));
            }
            let fields = self.fields(c, fields)?;
            return Ok(Value::Struct {
                fields,
                extra: Vec::new(),
            });
        }
        let body = c.r.split_body().map_err(|e| self.wire(e, start))?;
        let end = c.offset();
        let mut inner = Cursor { r: body, end };
        let body_start = inner.offset();
        self.sink.note(
            start,
            body_start,
            &self.path,
            Note::Body(end.saturating_sub(body_start)),
        );
        c.r.charge(fields.len().saturating_mul(VALUE_SIZE))
            .map_err(|e| self.wire(e, start))?;
        let mut out = Vec::with_capacity(fields.len());
        for f in fields {
            // A body that ends before a field starts: that field and the
            // rest take their defaults (docs/WIRE.md §8.4).
            if inner.r.is_empty() {
                break;
            }
            self.path.push(Seg::Field(&f.name));
            let v = self.value(&mut inner, &f.shape);
            self.path.pop();
            out.push(v?);
        }
        let extra = inner.r.rest().to_vec();
        if !extra.is_empty() {
            self.path.push(Seg::Extra);
            self.sink.note(inner.offset(), end, &self.path, Note::Extra);
            self.path.pop();
        }
        c.r.join(inner.r);
        Ok(Value::Struct { fields: out, extra })
    }

    fn fields(
        &mut self,
        c: &mut Cursor<'_>,
        fields: &'s [OwnedField],
    ) -> Result<Vec<Value>, InspectError> {
        let start = c.offset();
        c.r.charge(fields.len().saturating_mul(VALUE_SIZE))
            .map_err(|e| self.wire(e, start))?;
        let mut out = Vec::with_capacity(fields.len());
        for f in fields {
            self.path.push(Seg::Field(&f.name));
            let v = self.value(c, &f.shape);
            self.path.pop();
            out.push(v?);
        }
        Ok(out)
    }
}

fn nonzero_u(v: Result<u128, DecodeError>) -> Result<Value, DecodeError> {
    match v? {
        0 => Err(DecodeError::InvalidValue),
        v => Ok(Value::Uint(v)),
    }
}

fn nonzero_i(v: Result<i128, DecodeError>) -> Result<Value, DecodeError> {
    match v? {
        0 => Err(DecodeError::InvalidValue),
        v => Ok(Value::Int(v)),
    }
}

/// The order Rust's `Ord` gives two values of `shape`, where zao knows it
/// (numbers, `bool`, `char`, strings, byte strings, and sequences, tuples
/// and options of those); `None` for user types, whose `Ord` is their own.
pub(crate) fn natural_cmp(shape: &OwnedShape, a: &Value, b: &Value) -> Option<Ordering> {
    match (shape, a, b) {
        (OwnedShape::Scalar(_), Value::Uint(a), Value::Uint(b)) => Some(a.cmp(b)),
        (OwnedShape::Scalar(_), Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
        (OwnedShape::Scalar(_), Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
        (OwnedShape::Scalar(_), Value::Char(a), Value::Char(b)) => Some(a.cmp(b)),
        (OwnedShape::Scalar(_), Value::Unit, Value::Unit) => Some(Ordering::Equal),
        (OwnedShape::Str, Value::Str(a), Value::Str(b)) => Some(a.cmp(b)),
        (_, Value::Bytes(a), Value::Bytes(b)) => Some(a.cmp(b)),
        (OwnedShape::Boxed(inner), a, b) => natural_cmp(inner, a, b),
        (OwnedShape::Option(inner), Value::Option(a), Value::Option(b)) => match (a, b) {
            (None, None) => Some(Ordering::Equal),
            (None, Some(_)) => Some(Ordering::Less),
            (Some(_), None) => Some(Ordering::Greater),
            (Some(a), Some(b)) => natural_cmp(inner, a, b),
        },
        (
            OwnedShape::Seq(item) | OwnedShape::Array { item, .. },
            Value::List(a),
            Value::List(b),
        ) => {
            for (x, y) in a.iter().zip(b) {
                match natural_cmp(item, x, y)? {
                    Ordering::Equal => {}
                    other => return Some(other),
                }
            }
            Some(a.len().cmp(&b.len()))
        }
        (OwnedShape::Tuple(items), Value::List(a), Value::List(b)) => {
            for ((shape, x), y) in items.iter().zip(a).zip(b) {
                match natural_cmp(shape, x, y)? {
                    Ordering::Equal => {}
                    other => return Some(other),
                }
            }
            Some(Ordering::Equal)
        }
        _ => None,
    }
}
