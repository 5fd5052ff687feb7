//! Schema shapes and fingerprints.
//!
//! Every [`Encode`](crate::Encode) type describes its wire form as a
//! [`Shape`], a tree of `'static` data built at compile time: struct and
//! field names, field types, enum variants and tags, collections, maps,
//! options, blittable layouts and tolerant bodies. The derive writes it;
//! the impls for std, glam and bytes types write theirs by hand.
//! [`zao::inspect`](crate) reads bytes against a shape without the Rust type.
//!
//! The **fingerprint** ([`Schema::FINGERPRINT`]) is a 64-bit digest of the
//! shape ([`Shape::fingerprint`], docs/WIRE.md §9). It mixes, in order, each
//! field's name and its type's fingerprint, so renaming, retyping or
//! reordering a field, at any depth, changes it. Types with the same wire
//! form share a fingerprint: `String` and `&str` are both `str`; `Vec<u8>`,
//! `&[u8]` and `Bytes` are all `seq<u8>`. Names of types are in the shape
//! but not in the digest, so a borrowed twin (`SpawnEntityRef`) matches its
//! owned type (`SpawnEntity`).

/// A type with a wire shape and a schema fingerprint. Derived along with
/// `Encode`.
///
/// A hand-written impl states its [`SHAPE`](Self::SHAPE); the fingerprint
/// follows from it. A type whose decoder checks more than its shape says
/// (bit flags, a range) uses [`Shape::Flags`] or [`Shape::Custom`].
pub trait Schema {
    /// The type's wire form.
    const SHAPE: Shape;

    /// Digest of the type's wire shape (see the module docs and
    /// docs/WIRE.md §9). Computed from [`SHAPE`](Self::SHAPE).
    const FINGERPRINT: u64 = Self::SHAPE.fingerprint();

    /// The shape of `[Self]` and `&[Self]`. Only `u8` overrides it: `&[u8]`
    /// decodes as a byte string (§4), not a sequence.
    #[doc(hidden)]
    const SLICE_SHAPE: Shape = Shape::Seq(&Self::SHAPE);

    /// The shape of `Box<Self>`. Unsized types override it: `Box<str>`
    /// decodes as a string, without the level of depth a `Box<T>` enters.
    #[doc(hidden)]
    const BOXED_SHAPE: Shape = Shape::Boxed(&Self::SHAPE);
}

/// FNV-1a offset basis: the fingerprint of nothing.
pub const FINGERPRINT_SEED: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

// `i < len` bounds every index below; `get` is not usable in a `const fn` loop.
#[allow(clippy::indexing_slicing)]
/// Mixes a string (with its length, so `"ab","c"` differs from `"a","bc"`) into `hash`.
#[must_use]
pub const fn mix_str(hash: u64, s: &str) -> u64 {
    let bytes = s.as_bytes();
    let mut hash = mix_u64(hash, bytes.len() as u64);
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(FNV_PRIME);
        i += 1;
    }
    hash
}

#[allow(clippy::indexing_slicing)]
/// Mixes a `u64` (a nested fingerprint, a tag, an array length) into `hash`.
#[must_use]
pub const fn mix_u64(hash: u64, value: u64) -> u64 {
    let bytes = value.to_le_bytes();
    let mut hash = hash;
    let mut i = 0;
    while i < 8 {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(FNV_PRIME);
        i += 1;
    }
    hash
}

/// The fingerprint of a leaf type named `name`.
#[must_use]
pub const fn leaf(name: &str) -> u64 {
    mix_str(FINGERPRINT_SEED, name)
}

/// The wire form of a type (docs/WIRE.md §3–§8), as a tree of `'static`
/// data. Child shapes are references so that a shape is a constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Shape {
    /// A number, `bool`, `char`, `NonZero*` or `()` (§3).
    Scalar(Scalar),
    /// A UTF-8 string: varint byte length, then the bytes (§4).
    Str,
    /// A byte string decoded as one (`&[u8]`, `Bytes`): varint length, then
    /// the bytes, limited by `max_string` (§4). Fingerprint: `seq<u8>`.
    Bytes,
    /// `Vec<T>`, `[T]`: the count, then the elements (§5). The count is a
    /// varint, or 4 bytes where the element is a `#[zao(blittable)]` struct
    /// ([`Shape::counts_wide`]).
    Seq(&'static Shape),
    /// `[T; N]`: the `len` elements, no count (§5).
    Array {
        /// N.
        len: usize,
        /// The element.
        item: &'static Shape,
    },
    /// `Option<T>`: a tag byte `00`/`01`, then the value if `01` (§5).
    Option(&'static Shape),
    /// `Box<T>`: exactly `T` on the wire; decoding it enters a level of depth.
    Boxed(&'static Shape),
    /// A tuple: its elements in order (§5).
    Tuple(&'static [Shape]),
    /// `HashMap` (`sorted: false`) or `BTreeMap` (`sorted: true`): varint
    /// count, then key/value pairs (§6).
    Map {
        /// The key.
        key: &'static Shape,
        /// The value.
        value: &'static Shape,
        /// Keys must be strictly ascending (`BTreeMap`).
        sorted: bool,
    },
    /// A glam vector or quaternion: `len` scalars (§7).
    Vector {
        /// `"vec2"`, `"vec3"`, `"vec4"` or `"quat"`.
        name: &'static str,
        /// The component type.
        scalar: Scalar,
        /// The number of components.
        len: usize,
    },
    /// A derived struct (§8.1, §8.3, §8.4).
    Struct(&'static StructShape),
    /// A derived enum (§8.2).
    Enum(&'static EnumShape),
    /// Bit flags: an unsigned integer whose decoder refuses bits outside the
    /// named flags.
    Flags(&'static FlagsShape),
    /// A hand-written type: its wire form and a fingerprint of its own.
    Custom(&'static CustomShape),
    /// A field whose type names the type being derived (`Option<Box<Self>>`):
    /// its fingerprint is that of its spelling, to avoid a cycle; `shape` is
    /// the type with the self-reference as [`Shape::SelfRef`], when the
    /// derive could write it (a plain `Self` or the type's own name).
    Recursive {
        /// The field's type as written in the source.
        spelled: &'static str,
        /// The type with each self-reference replaced by `SelfRef`.
        shape: Option<&'static Shape>,
    },
    /// The nearest enclosing struct or enum, inside a [`Shape::Recursive`].
    SelfRef,
}

/// The fixed-size leaves of §3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[allow(missing_docs)] // the variants are the Rust types of the same name
pub enum Scalar {
    U8,
    U16,
    U32,
    U64,
    U128,
    I8,
    I16,
    I32,
    I64,
    I128,
    F32,
    F64,
    Bool,
    Char,
    /// A varint (§3).
    Usize,
    /// A zigzag varint (§3).
    Isize,
    /// `()`: no bytes.
    Unit,
    NonZeroU8,
    NonZeroU16,
    NonZeroU32,
    NonZeroU64,
    NonZeroI8,
    NonZeroI16,
    NonZeroI32,
    NonZeroI64,
}

/// Every scalar, for lookups by name.
const SCALARS: [Scalar; 25] = [
    Scalar::U8,
    Scalar::U16,
    Scalar::U32,
    Scalar::U64,
    Scalar::U128,
    Scalar::I8,
    Scalar::I16,
    Scalar::I32,
    Scalar::I64,
    Scalar::I128,
    Scalar::F32,
    Scalar::F64,
    Scalar::Bool,
    Scalar::Char,
    Scalar::Usize,
    Scalar::Isize,
    Scalar::Unit,
    Scalar::NonZeroU8,
    Scalar::NonZeroU16,
    Scalar::NonZeroU32,
    Scalar::NonZeroU64,
    Scalar::NonZeroI8,
    Scalar::NonZeroI16,
    Scalar::NonZeroI32,
    Scalar::NonZeroI64,
];

impl Scalar {
    /// The name its fingerprint is the leaf of: `"u32"`, `"bool"`,
    /// `"nz_u32"`, `"unit"`, ...
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::U8 => "u8",
            Self::U16 => "u16",
            Self::U32 => "u32",
            Self::U64 => "u64",
            Self::U128 => "u128",
            Self::I8 => "i8",
            Self::I16 => "i16",
            Self::I32 => "i32",
            Self::I64 => "i64",
            Self::I128 => "i128",
            Self::F32 => "f32",
            Self::F64 => "f64",
            Self::Bool => "bool",
            Self::Char => "char",
            Self::Usize => "usize",
            Self::Isize => "isize",
            Self::Unit => "unit",
            Self::NonZeroU8 => "nz_u8",
            Self::NonZeroU16 => "nz_u16",
            Self::NonZeroU32 => "nz_u32",
            Self::NonZeroU64 => "nz_u64",
            Self::NonZeroI8 => "nz_i8",
            Self::NonZeroI16 => "nz_i16",
            Self::NonZeroI32 => "nz_i32",
            Self::NonZeroI64 => "nz_i64",
        }
    }

    /// The scalar named `name` (as [`name`](Self::name) writes it).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        SCALARS.into_iter().find(|s| s.name() == name)
    }

    /// Bytes on the wire, or `None` for the varints (`usize`, `isize`).
    #[must_use]
    pub const fn size(self) -> Option<usize> {
        match self {
            Self::Unit => Some(0),
            Self::U8 | Self::I8 | Self::Bool | Self::NonZeroU8 | Self::NonZeroI8 => Some(1),
            Self::U16 | Self::I16 | Self::NonZeroU16 | Self::NonZeroI16 => Some(2),
            Self::U32
            | Self::I32
            | Self::F32
            | Self::Char
            | Self::NonZeroU32
            | Self::NonZeroI32 => Some(4),
            Self::U64 | Self::I64 | Self::F64 | Self::NonZeroU64 | Self::NonZeroI64 => Some(8),
            Self::U128 | Self::I128 => Some(16),
            Self::Usize | Self::Isize => None,
        }
    }
}

/// How a struct or variant spells its fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldStyle {
    /// `{ a: T, b: U }`.
    Named,
    /// `(T, U)`: fields are named `"0"`, `"1"`, ...
    Tuple,
    /// No fields.
    Unit,
}

/// One field of a struct or enum variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldShape {
    /// The field's name (`"0"`, `"1"`, ... for tuple fields).
    pub name: &'static str,
    /// Its type's shape.
    pub shape: Shape,
}

/// A derived struct.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StructShape {
    /// The type's name (not part of the fingerprint).
    pub name: &'static str,
    /// Named, tuple or unit.
    pub style: FieldStyle,
    /// The fields in declaration (= wire) order.
    pub fields: &'static [FieldShape],
    /// `#[zao(tolerant)]`: a varint body length, then the fields (§8.4).
    pub tolerant: bool,
    /// `#[zao(blittable)]`: the wire form is the memory image (§8.3); the
    /// bytes are those of the fields in order.
    pub blittable: bool,
}

/// A derived enum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnumShape {
    /// The type's name (not part of the fingerprint).
    pub name: &'static str,
    /// The variants, in ascending tag order.
    pub variants: &'static [VariantShape],
}

/// One enum variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VariantShape {
    /// The variant's name.
    pub name: &'static str,
    /// Its wire tag (a varint, §8.2).
    pub tag: u32,
    /// Named, tuple or unit.
    pub style: FieldStyle,
    /// Its fields in order.
    pub fields: &'static [FieldShape],
}

/// Bit flags: an unsigned integer holding any combination of named bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlagsShape {
    /// The type's name: part of the fingerprint.
    pub name: &'static str,
    /// The integer on the wire (`U8` … `U64`).
    pub bits: Scalar,
    /// Each flag's name and value; a decoder refuses any bit outside them.
    pub flags: &'static [(&'static str, u64)],
}

impl FlagsShape {
    /// Every bit some flag uses.
    #[must_use]
    pub const fn mask(&self) -> u64 {
        let mut mask = 0;
        let mut i = 0;
        while i < self.flags.len() {
            // `i < len` bounds the index; `get` is not usable in a const loop.
            #[allow(clippy::indexing_slicing)]
            let (_, value) = self.flags[i];
            mask |= value;
            i += 1;
        }
        mask
    }
}

/// A hand-written type that is none of the other shapes: what its bytes
/// look like, and the fingerprint it chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CustomShape {
    /// The type's name.
    pub name: &'static str,
    /// Its wire form. The type's decoder may refuse values this shape
    /// allows; a tool reading the shape cannot know.
    pub wire: Shape,
    /// Its fingerprint.
    pub fingerprint: u64,
}

impl Shape {
    /// Whether a run of values of this shape (a [`Shape::Seq`] of it)
    /// carries a 4-byte little-endian count instead of a varint: a
    /// `#[zao(blittable)]` struct (docs/WIRE.md §5).
    #[must_use]
    pub const fn counts_wide(&self) -> bool {
        matches!(self, Self::Struct(s) if s.blittable)
    }

    /// The fingerprint of this shape (docs/WIRE.md §9).
    #[must_use]
    pub const fn fingerprint(&self) -> u64 {
        match self {
            Self::Scalar(s) => leaf(s.name()),
            Self::Str => leaf("str"),
            Self::Bytes => mix_u64(leaf("seq"), leaf("u8")),
            Self::Seq(item) => mix_u64(leaf(seq_kind(item.counts_wide())), item.fingerprint()),
            Self::Array { len, item } => {
                mix_u64(mix_u64(leaf("array"), *len as u64), item.fingerprint())
            }
            Self::Option(item) => mix_u64(leaf("option"), item.fingerprint()),
            Self::Boxed(item) => item.fingerprint(),
            Self::Tuple(items) => {
                let mut hash = leaf("tuple");
                let mut i = 0;
                while i < items.len() {
                    #[allow(clippy::indexing_slicing)]
                    let item = &items[i];
                    hash = mix_u64(hash, item.fingerprint());
                    i += 1;
                }
                hash
            }
            Self::Map { key, value, sorted } => {
                let kind = if *sorted { "sorted_map" } else { "map" };
                mix_u64(mix_u64(leaf(kind), key.fingerprint()), value.fingerprint())
            }
            Self::Vector { name, scalar, .. } => mix_u64(leaf(name), leaf(scalar.name())),
            // Appending fields is a tolerant type's contract, so its
            // fingerprint does not cover them: old and new peers must agree.
            Self::Struct(s) if s.tolerant => leaf("tolerant"),
            Self::Struct(s) => mix_fields(leaf("struct"), s.fields),
            Self::Enum(e) => {
                let mut hash = leaf("enum");
                let mut i = 0;
                while i < e.variants.len() {
                    #[allow(clippy::indexing_slicing)]
                    let v = &e.variants[i];
                    hash = mix_str(hash, v.name);
                    hash = mix_u64(hash, v.tag as u64);
                    hash = mix_fields(hash, v.fields);
                    i += 1;
                }
                hash
            }
            Self::Flags(f) => mix_u64(leaf(f.name), f.mask()),
            Self::Custom(c) => c.fingerprint,
            Self::Recursive { spelled, .. } => leaf(spelled),
            Self::SelfRef => leaf("self"),
        }
    }
}

/// The leaf a sequence's fingerprint starts from: its count's form is part
/// of its wire form (§9).
#[must_use]
pub(crate) const fn seq_kind(wide_count: bool) -> &'static str {
    if wide_count { "seq32" } else { "seq" }
}

/// Each field's name, then its type's fingerprint.
const fn mix_fields(mut hash: u64, fields: &[FieldShape]) -> u64 {
    let mut i = 0;
    while i < fields.len() {
        #[allow(clippy::indexing_slicing)]
        let f = &fields[i];
        hash = mix_str(hash, f.name);
        hash = mix_u64(hash, f.shape.fingerprint());
        i += 1;
    }
    hash
}

/// The marker a derive puts where a field's type names the type itself:
/// its shape is [`Shape::SelfRef`]. Not for use outside generated code.
#[doc(hidden)]
pub struct SelfRef;

impl Schema for SelfRef {
    const SHAPE: Shape = Shape::SelfRef;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_names_round_trip() {
        for s in SCALARS {
            assert_eq!(Scalar::from_name(s.name()), Some(s));
        }
        assert_eq!(Scalar::from_name("u7"), None);
    }
}
