//! Readable text back to a [`Value`], directed by the shape: the inverse of
//! the printer (docs/INSPECT.md has the grammar). Whitespace and `//`
//! comments may go between any two tokens.

use std::cmp::Ordering;
use std::collections::HashSet;

use crate::wire::schema::{FieldStyle, Scalar};

use super::decode::{MAX_SELF_REFS, natural_cmp};
use super::encode::Encoder;
use super::error::{InspectError, InspectErrorKind, Path, Seg, TextError};
use super::print::{F32_NAN, F64_NAN, is_signed, is_unsigned};
use super::shape::{OwnedField, OwnedShape};
use super::value::Value;

pub(crate) struct Parser<'t, 's> {
    src: &'t str,
    pos: usize,
    path: Path<'s>,
    named: Vec<&'s OwnedShape>,
    self_refs: u32,
}

type Result<T> = core::result::Result<T, InspectError>;

impl<'t, 's> Parser<'t, 's> {
    pub(crate) fn new(src: &'t str) -> Self {
        Self {
            src,
            pos: 0,
            path: Path::default(),
            named: Vec::new(),
            self_refs: 0,
        }
    }

    fn err_at(&self, e: TextError, at: usize) -> InspectError {
        InspectError::new(InspectErrorKind::Text(e), at, &self.path)
    }

    fn err(&self, e: TextError) -> InspectError {
        self.err_at(e, self.pos)
    }

    fn rest(&self) -> &'t str {
        self.src.get(self.pos..).unwrap_or_default()
    }

    fn skip_ws(&mut self) {
        loop {
            let rest = self.rest();
            let trimmed = rest.trim_start();
            self.pos += rest.len() - trimmed.len();
            if trimmed.starts_with("//") {
                let line = trimmed.find('\n').unwrap_or(trimmed.len());
                self.pos += line;
            } else {
                return;
            }
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.rest().chars().next()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char, what: &'static str) -> Result<()> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.err(TextError::Expected(what)))
        }
    }

    fn eat_str(&mut self, s: &str) -> bool {
        self.skip_ws();
        if self.rest().starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    /// An identifier (`r#` raw ones included), if one comes next.
    fn ident(&mut self) -> Option<&'t str> {
        self.skip_ws();
        let rest = self.rest();
        let body = rest.strip_prefix("r#").unwrap_or(rest);
        let mut chars = body.char_indices();
        match chars.next() {
            Some((_, c)) if c.is_alphabetic() || c == '_' => {}
            _ => return None,
        }
        let len = chars
            .find(|&(_, c)| !(c.is_alphanumeric() || c == '_'))
            .map_or(body.len(), |(i, _)| i);
        let total = rest.len() - body.len() + len;
        let word = rest.get(..total)?;
        self.pos += total;
        Some(word)
    }

    fn keyword(&mut self, word: &str) -> bool {
        let save = self.pos;
        if self.ident() == Some(word) {
            true
        } else {
            self.pos = save;
            false
        }
    }

    pub(crate) fn finish(&mut self) -> Result<()> {
        self.skip_ws();
        if self.pos < self.src.len() {
            Err(self.err(TextError::TrailingText))
        } else {
            Ok(())
        }
    }

    /// A top-level message of `shape` whose name was read: the text after
    /// the name, as the printer writes it.
    pub(crate) fn message_body(&mut self, shape: &'s OwnedShape) -> Result<Value> {
        match shape {
            OwnedShape::Struct(s) => {
                self.named.push(shape);
                let v = self.fields(s.style, &s.fields, s.tolerant, true);
                self.named.pop();
                v.map(|(fields, extra)| Value::Struct { fields, extra })
            }
            OwnedShape::Enum(_) => {
                if !self.eat_str("::") {
                    return Err(self.err(TextError::Expected("`::` and a variant")));
                }
                self.value(shape)
            }
            _ => {
                self.expect('(', "`(`")?;
                let v = self.value(shape)?;
                self.expect(')', "`)`")?;
                Ok(v)
            }
        }
    }

    /// `(x"…")` after the name of a message known only by its fingerprint.
    pub(crate) fn raw_body(&mut self) -> Result<Vec<u8>> {
        self.expect('(', "`(`")?;
        let body = self.bytes()?;
        self.expect(')', "`)`")?;
        Ok(body)
    }

    /// The name at the start of a message.
    pub(crate) fn message_name(&mut self) -> Result<(&'t str, usize)> {
        self.skip_ws();
        let at = self.pos;
        match self.ident() {
            Some(name) => Ok((name, at)),
            None => Err(self.err(TextError::Expected("a message name"))),
        }
    }

    pub(crate) fn value(&mut self, shape: &'s OwnedShape) -> Result<Value> {
        self.skip_ws();
        let at = self.pos;
        match shape {
            OwnedShape::Scalar(s) => self.scalar(*s),
            OwnedShape::Str => self.string().map(Value::Str),
            OwnedShape::Bytes => self.bytes().map(Value::Bytes),
            OwnedShape::Seq(item) | OwnedShape::Array { item, .. } => {
                let len = match shape {
                    OwnedShape::Array { len, .. } => Some(*len),
                    _ => None,
                };
                let is_u8 = matches!(**item, OwnedShape::Scalar(Scalar::U8));
                let value = if is_u8 && matches!(self.peek(), Some('b' | 'x')) {
                    Value::Bytes(self.bytes()?)
                } else {
                    self.expect('[', "`[`")?;
                    let mut items = Vec::new();
                    while !self.eat(']') {
                        if !items.is_empty() {
                            self.expect(',', "`,` or `]`")?;
                            if self.eat(']') {
                                break;
                            }
                        }
                        self.path.push(Seg::Index(items.len()));
                        let v = self.value(item);
                        self.path.pop();
                        items.push(v?);
                    }
                    if is_u8 {
                        let bytes = items
                            .iter()
                            .map(|v| match v {
                                Value::Uint(b) => u8::try_from(*b).ok(),
                                _ => None,
                            })
                            .collect::<Option<Vec<u8>>>();
                        match bytes {
                            Some(b) => Value::Bytes(b),
                            None => return Err(self.err_at(TextError::OutOfRange, at)),
                        }
                    } else {
                        Value::List(items)
                    }
                };
                let n = match &value {
                    Value::Bytes(b) => b.len(),
                    Value::List(items) => items.len(),
                    _ => 0,
                };
                if len.is_some_and(|len| len != n) {
                    return Err(self.err_at(TextError::WrongLength, at));
                }
                Ok(value)
            }
            OwnedShape::Option(item) => {
                if self.keyword("None") {
                    Ok(Value::Option(None))
                } else if self.keyword("Some") {
                    self.expect('(', "`(`")?;
                    let v = self.value(item)?;
                    self.expect(')', "`)`")?;
                    Ok(Value::Option(Some(Box::new(v))))
                } else {
                    Err(self.err(TextError::Expected("`None` or `Some(…)`")))
                }
            }
            OwnedShape::Boxed(item) => self.value(item),
            OwnedShape::Tuple(shapes) => {
                let items = self.tuple(|p, i| match shapes.get(i) {
                    Some(s) => {
                        p.path.push(Seg::Index(i));
                        let v = p.value(s);
                        p.path.pop();
                        v.map(Some)
                    }
                    None => Ok(None),
                })?;
                if items.len() != shapes.len() {
                    return Err(self.err_at(TextError::WrongLength, at));
                }
                Ok(Value::List(items))
            }
            OwnedShape::Vector { scalar, len, .. } => {
                let items = self.tuple(|p, i| {
                    if i < *len {
                        p.scalar(*scalar).map(Some)
                    } else {
                        Ok(None)
                    }
                })?;
                if items.len() != *len {
                    return Err(self.err_at(TextError::WrongLength, at));
                }
                Ok(Value::List(items))
            }
            OwnedShape::Map { key, value, sorted } => self.map(key, value, *sorted),
            OwnedShape::Struct(s) => {
                // An optional type name, as Rust's `Debug` writes it.
                let save = self.pos;
                let named = match self.ident() {
                    Some(name) if name == s.name => true,
                    Some(_) => return Err(self.err_at(TextError::UnknownName, save)),
                    None => false,
                };
                self.named.push(shape);
                let v = self.fields(s.style, &s.fields, s.tolerant, named);
                self.named.pop();
                v.map(|(fields, extra)| Value::Struct { fields, extra })
            }
            OwnedShape::Enum(e) => {
                let Some(name) = self.ident() else {
                    return Err(self.err(TextError::Expected("a variant name")));
                };
                let Some(variant) = e.variants.iter().find(|v| v.name == name) else {
                    return Err(self.err_at(TextError::UnknownName, at));
                };
                self.named.push(shape);
                self.path.push(Seg::Field(&variant.name));
                let v = self.fields(variant.style, &variant.fields, false, true);
                self.path.pop();
                self.named.pop();
                let (fields, _) = v?;
                Ok(Value::Variant {
                    tag: variant.tag,
                    fields,
                })
            }
            OwnedShape::Flags(f) => {
                let mut bits = 0u128;
                loop {
                    self.skip_ws();
                    let term_at = self.pos;
                    if let Some(name) = self.ident() {
                        match f.flags.iter().find(|(n, _)| n == name) {
                            Some((_, value)) => bits |= u128::from(*value),
                            None => return Err(self.err_at(TextError::UnknownName, term_at)),
                        }
                    } else {
                        match self.scalar(f.bits)? {
                            Value::Uint(n) => bits |= n,
                            _ => return Err(self.err_at(TextError::InvalidNumber, term_at)),
                        }
                    }
                    if !self.eat('|') {
                        break;
                    }
                }
                if bits & !u128::from(f.mask()) != 0 {
                    return Err(self.err_at(TextError::InvalidValue, at));
                }
                Ok(Value::Uint(bits))
            }
            OwnedShape::Custom { wire, .. } => self.value(wire),
            OwnedShape::Recursive { shape, .. } => match shape {
                Some(inner) => self.value(inner),
                None => Err(InspectError::new(
                    InspectErrorKind::Unsupported,
                    at,
                    &self.path,
                )),
            },
            OwnedShape::SelfRef => {
                let Some(&named) = self.named.last() else {
                    return Err(InspectError::new(
                        InspectErrorKind::Unsupported,
                        at,
                        &self.path,
                    ));
                };
                if self.self_refs >= MAX_SELF_REFS {
                    return Err(InspectError::new(InspectErrorKind::TooDeep, at, &self.path));
                }
                self.self_refs += 1;
                let v = self.value(named);
                self.self_refs -= 1;
                v
            }
        }
    }

    /// `( a, b, … )` with an optional trailing comma; `item` reads the i-th
    /// element, or says there is none (`Ok(None)`: too many elements).
    fn tuple(
        &mut self,
        mut item: impl FnMut(&mut Self, usize) -> Result<Option<Value>>,
    ) -> Result<Vec<Value>> {
        let at = self.pos;
        self.expect('(', "`(`")?;
        let mut items = Vec::new();
        while !self.eat(')') {
            if !items.is_empty() {
                self.expect(',', "`,` or `)`")?;
                if self.eat(')') {
                    break;
                }
            }
            match item(self, items.len())? {
                Some(v) => items.push(v),
                None => return Err(self.err_at(TextError::WrongLength, at)),
            }
        }
        Ok(items)
    }

    /// A struct's or variant's fields after its name (if any): `{ a: 1 }`,
    /// `(1, 2)`, `()` or nothing; a tolerant struct may end with `.. x"…"`
    /// and give a leading run of its fields.
    fn fields(
        &mut self,
        style: FieldStyle,
        shapes: &'s [OwnedField],
        tolerant: bool,
        after_name: bool,
    ) -> Result<(Vec<Value>, Vec<u8>)> {
        let at = self.pos;
        let mut extra = Vec::new();
        match (style, self.peek()) {
            (FieldStyle::Named, _) | (FieldStyle::Unit, Some('{')) => {
                self.expect('{', "`{`")?;
                let mut got: Vec<Option<Value>> = vec![None; shapes.len()];
                let mut first = true;
                while !self.eat('}') {
                    if !first {
                        self.expect(',', "`,` or `}`")?;
                        if self.eat('}') {
                            break;
                        }
                    }
                    first = false;
                    if tolerant && self.eat_str("..") {
                        extra = self.bytes()?;
                        self.eat(',');
                        self.expect('}', "`}` after the unknown bytes")?;
                        break;
                    }
                    self.skip_ws();
                    let name_at = self.pos;
                    let Some(name) = self.ident() else {
                        return Err(self.err(TextError::Expected("a field name")));
                    };
                    let Some(i) = shapes.iter().position(|f| f.name == name) else {
                        return Err(self.err_at(TextError::UnknownName, name_at));
                    };
                    self.expect(':', "`:`")?;
                    let Some(field) = shapes.get(i) else {
                        return Err(self.err_at(TextError::UnknownName, name_at));
                    };
                    self.path.push(Seg::Field(&field.name));
                    let v = self.value(&field.shape);
                    self.path.pop();
                    let v = v?;
                    match got.get_mut(i) {
                        Some(slot @ None) => *slot = Some(v),
                        _ => return Err(self.err_at(TextError::DuplicateField, name_at)),
                    }
                }
                let present = got.iter().take_while(|v| v.is_some()).count();
                if got.iter().skip(present).any(Option::is_some) {
                    return Err(self.err_at(
                        if tolerant {
                            TextError::NotAPrefix
                        } else {
                            TextError::MissingField
                        },
                        at,
                    ));
                }
                if present < shapes.len() && !tolerant {
                    return Err(self.err_at(TextError::MissingField, at));
                }
                Ok((got.into_iter().flatten().collect(), extra))
            }
            (FieldStyle::Tuple, _) | (FieldStyle::Unit, Some('(')) => {
                self.expect('(', "`(`")?;
                let mut values = Vec::new();
                while !self.eat(')') {
                    if !values.is_empty() || !extra.is_empty() {
                        self.expect(',', "`,` or `)`")?;
                        if self.eat(')') {
                            break;
                        }
                    }
                    if tolerant && self.eat_str("..") {
                        extra = self.bytes()?;
                        self.eat(',');
                        self.expect(')', "`)` after the unknown bytes")?;
                        break;
                    }
                    let Some(f) = shapes.get(values.len()) else {
                        return Err(self.err(TextError::WrongLength));
                    };
                    self.path.push(Seg::Field(&f.name));
                    let v = self.value(&f.shape);
                    self.path.pop();
                    values.push(v?);
                }
                if values.len() < shapes.len() && !tolerant {
                    return Err(self.err_at(TextError::WrongLength, at));
                }
                Ok((values, extra))
            }
            (FieldStyle::Unit, _) if after_name => Ok((Vec::new(), extra)),
            (FieldStyle::Unit, _) => Err(self.err(TextError::Expected("`()`"))),
        }
    }

    fn map(&mut self, key: &'s OwnedShape, value: &'s OwnedShape, sorted: bool) -> Result<Value> {
        self.expect('{', "`{`")?;
        let mut entries: Vec<(Value, Value)> = Vec::new();
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        while !self.eat('}') {
            if !entries.is_empty() {
                self.expect(',', "`,` or `}`")?;
                if self.eat('}') {
                    break;
                }
            }
            let i = entries.len();
            self.skip_ws();
            let key_at = self.pos;
            self.path.push(Seg::Key(i));
            let k = self.value(key)?;
            let mut bytes = Vec::new();
            let encoded = Encoder::new().value(&mut bytes, key, &k);
            self.path.pop();
            encoded?;
            self.expect(':', "`:`")?;
            self.path.push(Seg::Value(i));
            let v = self.value(value);
            self.path.pop();
            let v = v?;
            let repeated = if sorted {
                match (entries.last(), keys.last()) {
                    (Some((last, _)), Some(last_bytes)) => match natural_cmp(key, last, &k) {
                        Some(order) => order != Ordering::Less,
                        None => *last_bytes == bytes,
                    },
                    _ => false,
                }
            } else {
                !seen.insert(bytes.clone())
            };
            if repeated {
                self.path.push(Seg::Key(i));
                return Err(self.err_at(TextError::DuplicateKey, key_at));
            }
            keys.push(bytes);
            entries.push((k, v));
        }
        Ok(Value::Map(entries))
    }

    fn scalar(&mut self, s: Scalar) -> Result<Value> {
        self.skip_ws();
        let at = self.pos;
        match s {
            Scalar::Unit => {
                self.expect('(', "`()`")?;
                self.expect(')', "`()`")?;
                Ok(Value::Unit)
            }
            Scalar::Bool => {
                if self.keyword("true") {
                    Ok(Value::Bool(true))
                } else if self.keyword("false") {
                    Ok(Value::Bool(false))
                } else {
                    Err(self.err(TextError::Expected("`true` or `false`")))
                }
            }
            Scalar::Char => {
                if !self.eat('\'') {
                    return Err(self.err(TextError::Expected("a character in `'…'`")));
                }
                let c = match self.rest().chars().next() {
                    Some('\\') => self.escape()?,
                    Some(c) if c != '\'' => {
                        self.pos += c.len_utf8();
                        c
                    }
                    _ => return Err(self.err(TextError::Expected("a character"))),
                };
                if !self.rest().starts_with('\'') {
                    return Err(self.err(TextError::Expected("`'`")));
                }
                self.pos += 1;
                Ok(Value::Char(c))
            }
            Scalar::F32 => {
                if let Some(bits) = self.nan()? {
                    let bits = u32::try_from(bits.unwrap_or(u64::from(F32_NAN)))
                        .map_err(|_| self.err_at(TextError::OutOfRange, at))?;
                    let f = f32::from_bits(bits);
                    return if f.is_nan() {
                        Ok(Value::F32(f))
                    } else {
                        Err(self.err_at(TextError::InvalidValue, at))
                    };
                }
                if let Some(neg) = self.inf() {
                    return Ok(Value::F32(if neg {
                        f32::NEG_INFINITY
                    } else {
                        f32::INFINITY
                    }));
                }
                let token = self.number()?;
                token
                    .parse::<f32>()
                    .map(Value::F32)
                    .map_err(|_| self.err_at(TextError::InvalidNumber, at))
            }
            Scalar::F64 => {
                if let Some(bits) = self.nan()? {
                    let f = f64::from_bits(bits.unwrap_or(F64_NAN));
                    return if f.is_nan() {
                        Ok(Value::F64(f))
                    } else {
                        Err(self.err_at(TextError::InvalidValue, at))
                    };
                }
                if let Some(neg) = self.inf() {
                    return Ok(Value::F64(if neg {
                        f64::NEG_INFINITY
                    } else {
                        f64::INFINITY
                    }));
                }
                let token = self.number()?;
                token
                    .parse::<f64>()
                    .map(Value::F64)
                    .map_err(|_| self.err_at(TextError::InvalidNumber, at))
            }
            _ => {
                let token = self.number()?;
                let value = if is_unsigned(s) {
                    let n: u128 = token
                        .parse()
                        .map_err(|_| self.err_at(number_error(token), at))?;
                    let max = match s {
                        Scalar::U8 | Scalar::NonZeroU8 => u128::from(u8::MAX),
                        Scalar::U16 | Scalar::NonZeroU16 => u128::from(u16::MAX),
                        Scalar::U32 | Scalar::NonZeroU32 => u128::from(u32::MAX),
                        Scalar::U64 | Scalar::NonZeroU64 => u128::from(u64::MAX),
                        Scalar::Usize => usize::MAX as u128,
                        _ => u128::MAX,
                    };
                    if n > max {
                        return Err(self.err_at(TextError::OutOfRange, at));
                    }
                    Value::Uint(n)
                } else if is_signed(s) {
                    let n: i128 = token
                        .parse()
                        .map_err(|_| self.err_at(number_error(token), at))?;
                    let (min, max) = match s {
                        Scalar::I8 | Scalar::NonZeroI8 => (i8::MIN.into(), i8::MAX.into()),
                        Scalar::I16 | Scalar::NonZeroI16 => (i16::MIN.into(), i16::MAX.into()),
                        Scalar::I32 | Scalar::NonZeroI32 => (i32::MIN.into(), i32::MAX.into()),
                        Scalar::I64 | Scalar::NonZeroI64 => (i64::MIN.into(), i64::MAX.into()),
                        Scalar::Isize => (isize::MIN as i128, isize::MAX as i128),
                        _ => (i128::MIN, i128::MAX),
                    };
                    if n < min || n > max {
                        return Err(self.err_at(TextError::OutOfRange, at));
                    }
                    Value::Int(n)
                } else {
                    return Err(self.err_at(TextError::InvalidNumber, at));
                };
                let zero = matches!(value, Value::Uint(0) | Value::Int(0));
                let non_zero = matches!(
                    s,
                    Scalar::NonZeroU8
                        | Scalar::NonZeroU16
                        | Scalar::NonZeroU32
                        | Scalar::NonZeroU64
                        | Scalar::NonZeroI8
                        | Scalar::NonZeroI16
                        | Scalar::NonZeroI32
                        | Scalar::NonZeroI64
                );
                if zero && non_zero {
                    return Err(self.err_at(TextError::InvalidValue, at));
                }
                Ok(value)
            }
        }
    }

    /// `NaN` (`Some(None)`) or `NaN(0x…)` (`Some(Some(bits))`).
    fn nan(&mut self) -> Result<Option<Option<u64>>> {
        if !self.keyword("NaN") {
            return Ok(None);
        }
        if !self.rest().starts_with('(') {
            return Ok(Some(None));
        }
        self.pos += 1;
        self.skip_ws();
        let at = self.pos;
        let token = self.number()?;
        let bits = token
            .strip_prefix("0x")
            .and_then(|hex| u64::from_str_radix(hex, 16).ok())
            .ok_or_else(|| self.err_at(TextError::InvalidNumber, at))?;
        self.expect(')', "`)`")?;
        Ok(Some(Some(bits)))
    }

    /// `inf` (`Some(false)`) or `-inf` (`Some(true)`).
    fn inf(&mut self) -> Option<bool> {
        if self.eat_str("-inf") {
            return Some(true);
        }
        self.keyword("inf").then_some(false)
    }

    /// A number's characters: an optional `-`, then digits, letters, `.`,
    /// and a sign after an exponent's `e`.
    fn number(&mut self) -> Result<&'t str> {
        self.skip_ws();
        let rest = self.rest();
        let bytes = rest.as_bytes();
        let mut len = usize::from(bytes.first() == Some(&b'-'));
        match bytes.get(len) {
            Some(b) if b.is_ascii_digit() => {}
            _ => return Err(self.err(TextError::Expected("a number"))),
        }
        while let Some(&b) = bytes.get(len) {
            let sign_after_e =
                (b == b'-' || b == b'+') && matches!(bytes.get(len - 1), Some(b'e' | b'E'));
            if b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || sign_after_e {
                len += 1;
            } else {
                break;
            }
        }
        let token = rest.get(..len).unwrap_or_default();
        self.pos += len;
        Ok(token)
    }

    /// `"…"` with `\\ \" \' \n \r \t \0 \u{…}` escapes.
    fn string(&mut self) -> Result<String> {
        if !self.eat('"') {
            return Err(self.err(TextError::Expected("a string in `\"…\"`")));
        }
        let mut out = String::new();
        loop {
            match self.rest().chars().next() {
                None => return Err(self.err(TextError::Expected("the closing `\"`"))),
                Some('"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some('\\') => out.push(self.escape()?),
                Some(c) => {
                    self.pos += c.len_utf8();
                    out.push(c);
                }
            }
        }
    }

    /// One escape after a `\`.
    fn escape(&mut self) -> Result<char> {
        let at = self.pos;
        let rest = self.rest();
        let mut chars = rest.chars().skip(1);
        let c = match chars.next() {
            Some('\\') => '\\',
            Some('"') => '"',
            Some('\'') => '\'',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some('0') => '\0',
            Some('u') => {
                let body = rest.get(2..).unwrap_or_default();
                let inner = body
                    .strip_prefix('{')
                    .and_then(|b| b.split_once('}'))
                    .map(|(hex, _)| hex)
                    .filter(|hex| !hex.is_empty() && hex.len() <= 6)
                    .ok_or_else(|| self.err_at(TextError::InvalidEscape, at))?;
                let c = u32::from_str_radix(inner, 16)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(|| self.err_at(TextError::InvalidEscape, at))?;
                self.pos += 2 + inner.len() + 2;
                return Ok(c);
            }
            _ => return Err(self.err_at(TextError::InvalidEscape, at)),
        };
        self.pos += 2;
        Ok(c)
    }

    /// `b"…"` (printable ASCII with `\\ \" \n \r \t \0 \xNN` escapes) or
    /// `x"…"` (hex digits, two a byte).
    fn bytes(&mut self) -> Result<Vec<u8>> {
        self.skip_ws();
        let at = self.pos;
        let mut out = Vec::new();
        if self.rest().starts_with("x\"") {
            self.pos += 2;
            let rest = self.rest();
            let Some(end) = rest.find('"') else {
                return Err(self.err(TextError::Expected("the closing `\"`")));
            };
            let hex = rest.get(..end).unwrap_or_default();
            if hex.len() % 2 != 0 {
                return Err(self.err_at(TextError::InvalidEscape, at));
            }
            for pair in hex.as_bytes().chunks(2) {
                let byte = core::str::from_utf8(pair)
                    .ok()
                    .and_then(|p| u8::from_str_radix(p, 16).ok())
                    .ok_or_else(|| self.err_at(TextError::InvalidEscape, at))?;
                out.push(byte);
            }
            self.pos += end + 1;
            return Ok(out);
        }
        if !self.rest().starts_with("b\"") {
            return Err(self.err(TextError::Expected("bytes in `b\"…\"` or `x\"…\"`")));
        }
        self.pos += 2;
        loop {
            let rest = self.rest().as_bytes();
            match rest.first() {
                None => return Err(self.err(TextError::Expected("the closing `\"`"))),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    let esc_at = self.pos;
                    let (byte, len) = match rest.get(1) {
                        Some(b'\\') => (b'\\', 2),
                        Some(b'"') => (b'"', 2),
                        Some(b'n') => (b'\n', 2),
                        Some(b'r') => (b'\r', 2),
                        Some(b't') => (b'\t', 2),
                        Some(b'0') => (0, 2),
                        Some(b'x') => {
                            let hex = rest
                                .get(2..4)
                                .and_then(|h| core::str::from_utf8(h).ok())
                                .and_then(|h| u8::from_str_radix(h, 16).ok())
                                .ok_or_else(|| self.err_at(TextError::InvalidEscape, esc_at))?;
                            (hex, 4)
                        }
                        _ => return Err(self.err_at(TextError::InvalidEscape, esc_at)),
                    };
                    out.push(byte);
                    self.pos += len;
                }
                Some(&b) if (0x20..=0x7e).contains(&b) => {
                    out.push(b);
                    self.pos += 1;
                }
                Some(_) => return Err(self.err(TextError::InvalidEscape)),
            }
        }
    }
}

/// Out of range if the token is all digits (it only overflowed), else
/// malformed.
fn number_error(token: &str) -> TextError {
    let digits = token.strip_prefix('-').unwrap_or(token);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        TextError::OutOfRange
    } else {
        TextError::InvalidNumber
    }
}
