//! Owned shapes: the [`Shape`] tree of a Rust type, or one read from a
//! protocol's JSON, in a form the inspector can hold at run time.

use crate::wire::schema::{FieldStyle, Scalar, Shape, leaf, mix_str, mix_u64};

/// A type's wire form, owned: converted from a compile-time [`Shape`] or
/// read from JSON. The variants mirror [`Shape`]'s one for one.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OwnedShape {
    /// See [`Shape::Scalar`].
    Scalar(Scalar),
    /// See [`Shape::Str`].
    Str,
    /// See [`Shape::Bytes`].
    Bytes,
    /// See [`Shape::Seq`].
    Seq(Box<OwnedShape>),
    /// See [`Shape::Array`].
    Array {
        /// N.
        len: usize,
        /// The element.
        item: Box<OwnedShape>,
    },
    /// See [`Shape::Option`].
    Option(Box<OwnedShape>),
    /// See [`Shape::Boxed`].
    Boxed(Box<OwnedShape>),
    /// See [`Shape::Tuple`].
    Tuple(Vec<OwnedShape>),
    /// See [`Shape::Map`].
    Map {
        /// The key.
        key: Box<OwnedShape>,
        /// The value.
        value: Box<OwnedShape>,
        /// Keys strictly ascending (`BTreeMap`).
        sorted: bool,
    },
    /// See [`Shape::Vector`].
    Vector {
        /// `"vec2"`, `"vec3"`, `"vec4"`, `"quat"`.
        name: String,
        /// The component type.
        scalar: Scalar,
        /// The number of components.
        len: usize,
    },
    /// See [`Shape::Struct`].
    Struct(OwnedStruct),
    /// See [`Shape::Enum`].
    Enum(OwnedEnum),
    /// See [`Shape::Flags`].
    Flags(OwnedFlags),
    /// See [`Shape::Custom`].
    Custom {
        /// The type's name.
        name: String,
        /// Its wire form.
        wire: Box<OwnedShape>,
        /// Its fingerprint.
        fingerprint: u64,
    },
    /// See [`Shape::Recursive`].
    Recursive {
        /// The field's type as written in the source.
        spelled: String,
        /// The type with each self-reference as [`OwnedShape::SelfRef`].
        shape: Option<Box<OwnedShape>>,
    },
    /// See [`Shape::SelfRef`].
    SelfRef,
}

/// A derived struct (see [`StructShape`](crate::wire::schema::StructShape)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedStruct {
    /// The type's name.
    pub name: String,
    /// Named, tuple or unit.
    pub style: FieldStyle,
    /// The fields in wire order.
    pub fields: Vec<OwnedField>,
    /// Length-prefixed body (§8.4).
    pub tolerant: bool,
    /// Memory image (§8.3).
    pub blittable: bool,
}

/// One field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedField {
    /// Its name (`"0"`, `"1"`, ... in a tuple struct).
    pub name: String,
    /// Its type.
    pub shape: OwnedShape,
}

/// A derived enum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedEnum {
    /// The type's name.
    pub name: String,
    /// The variants, in ascending tag order.
    pub variants: Vec<OwnedVariant>,
}

/// One enum variant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedVariant {
    /// Its name.
    pub name: String,
    /// Its wire tag.
    pub tag: u32,
    /// Named, tuple or unit.
    pub style: FieldStyle,
    /// Its fields.
    pub fields: Vec<OwnedField>,
}

/// Bit flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedFlags {
    /// The type's name.
    pub name: String,
    /// The unsigned integer on the wire.
    pub bits: Scalar,
    /// Each flag's name and value.
    pub flags: Vec<(String, u64)>,
}

impl OwnedFlags {
    /// Every bit some flag uses.
    #[must_use]
    pub fn mask(&self) -> u64 {
        self.flags.iter().fold(0, |mask, &(_, value)| mask | value)
    }
}

impl OwnedEnum {
    /// The variant with wire tag `tag`.
    #[must_use]
    pub fn variant(&self, tag: u32) -> Option<&OwnedVariant> {
        self.variants.iter().find(|v| v.tag == tag)
    }

    /// Whether every tag is one byte on the wire: the decoder then reads a
    /// byte, as the derive does (docs/WIRE.md §8.2).
    #[must_use]
    pub(crate) fn small_tags(&self) -> bool {
        self.variants.iter().all(|v| v.tag < 0x80)
    }
}

impl From<&Shape> for OwnedShape {
    fn from(shape: &Shape) -> Self {
        let fields = |fields: &[crate::wire::schema::FieldShape]| -> Vec<OwnedField> {
            fields
                .iter()
                .map(|f| OwnedField {
                    name: f.name.to_owned(),
                    shape: Self::from(&f.shape),
                })
                .collect()
        };
        let boxed = |s: &Shape| Box::new(Self::from(s));
        match shape {
            Shape::Scalar(s) => Self::Scalar(*s),
            Shape::Str => Self::Str,
            Shape::Bytes => Self::Bytes,
            Shape::Seq(item) => Self::Seq(boxed(item)),
            Shape::Array { len, item } => Self::Array {
                len: *len,
                item: boxed(item),
            },
            Shape::Option(item) => Self::Option(boxed(item)),
            Shape::Boxed(item) => Self::Boxed(boxed(item)),
            Shape::Tuple(items) => Self::Tuple(items.iter().map(Self::from).collect()),
            Shape::Map { key, value, sorted } => Self::Map {
                key: boxed(key),
                value: boxed(value),
                sorted: *sorted,
            },
            Shape::Vector { name, scalar, len } => Self::Vector {
                name: (*name).to_owned(),
                scalar: *scalar,
                len: *len,
            },
            Shape::Struct(s) => Self::Struct(OwnedStruct {
                name: s.name.to_owned(),
                style: s.style,
                fields: fields(s.fields),
                tolerant: s.tolerant,
                blittable: s.blittable,
            }),
            Shape::Enum(e) => Self::Enum(OwnedEnum {
                name: e.name.to_owned(),
                variants: e
                    .variants
                    .iter()
                    .map(|v| OwnedVariant {
                        name: v.name.to_owned(),
                        tag: v.tag,
                        style: v.style,
                        fields: fields(v.fields),
                    })
                    .collect(),
            }),
            Shape::Flags(f) => Self::Flags(OwnedFlags {
                name: f.name.to_owned(),
                bits: f.bits,
                flags: f
                    .flags
                    .iter()
                    .map(|&(name, value)| (name.to_owned(), value))
                    .collect(),
            }),
            Shape::Custom(c) => Self::Custom {
                name: c.name.to_owned(),
                wire: boxed(&c.wire),
                fingerprint: c.fingerprint,
            },
            Shape::Recursive { spelled, shape } => Self::Recursive {
                spelled: (*spelled).to_owned(),
                shape: shape.map(boxed),
            },
            Shape::SelfRef => Self::SelfRef,
        }
    }
}

impl OwnedShape {
    /// [`Shape::counts_wide`] of the shape this one came from: a run of it
    /// carries a 4-byte count.
    #[must_use]
    pub fn counts_wide(&self) -> bool {
        matches!(self, Self::Struct(s) if s.blittable)
    }

    /// The fingerprint, by the rules of docs/WIRE.md §9: the same value as
    /// [`Shape::fingerprint`] of the shape this one came from.
    #[must_use]
    pub fn fingerprint(&self) -> u64 {
        let mix_fields = |hash: u64, fields: &[OwnedField]| {
            fields.iter().fold(hash, |h, f| {
                mix_u64(mix_str(h, &f.name), f.shape.fingerprint())
            })
        };
        match self {
            Self::Scalar(s) => leaf(s.name()),
            Self::Str => leaf("str"),
            Self::Bytes => mix_u64(leaf("seq"), leaf("u8")),
            Self::Seq(item) => mix_u64(
                leaf(crate::wire::schema::seq_kind(item.counts_wide())),
                item.fingerprint(),
            ),
            Self::Array { len, item } => {
                mix_u64(mix_u64(leaf("array"), *len as u64), item.fingerprint())
            }
            Self::Option(item) => mix_u64(leaf("option"), item.fingerprint()),
            Self::Boxed(item) => item.fingerprint(),
            Self::Tuple(items) => items
                .iter()
                .fold(leaf("tuple"), |h, item| mix_u64(h, item.fingerprint())),
            Self::Map { key, value, sorted } => {
                let kind = if *sorted { "sorted_map" } else { "map" };
                mix_u64(mix_u64(leaf(kind), key.fingerprint()), value.fingerprint())
            }
            Self::Vector { name, scalar, .. } => mix_u64(leaf(name), leaf(scalar.name())),
            Self::Struct(s) if s.tolerant => leaf("tolerant"),
            Self::Struct(s) => mix_fields(leaf("struct"), &s.fields),
            Self::Enum(e) => e.variants.iter().fold(leaf("enum"), |h, v| {
                mix_fields(mix_u64(mix_str(h, &v.name), u64::from(v.tag)), &v.fields)
            }),
            Self::Flags(f) => mix_u64(leaf(&f.name), f.mask()),
            Self::Custom { fingerprint, .. } => *fingerprint,
            Self::Recursive { spelled, .. } => leaf(spelled),
            Self::SelfRef => leaf("self"),
        }
    }

    /// The fewest bytes a value takes on the wire: the `MIN_SIZE` the Rust
    /// decoder checks a count against, never more (0 where it cannot know).
    /// `this` is the struct or enum a [`SelfRef`](Self::SelfRef) stands for.
    pub(crate) fn min_size(&self, this: Option<&OwnedShape>) -> usize {
        let sum = |fields: &[OwnedField]| {
            fields
                .iter()
                .fold(0usize, |n, f| n.saturating_add(f.shape.min_size(None)))
        };
        match self {
            Self::Scalar(s) => s.size().unwrap_or(1),
            Self::Seq(item) if item.counts_wide() => 4,
            Self::Str | Self::Bytes | Self::Seq(_) | Self::Option(_) | Self::Map { .. } => 1,
            Self::Array { len, item } => item.min_size(this).saturating_mul(*len),
            Self::Boxed(item) => item.min_size(this),
            Self::Tuple(items) => items
                .iter()
                .fold(0usize, |n, i| n.saturating_add(i.min_size(this))),
            Self::Vector { scalar, len, .. } => scalar.size().unwrap_or(0).saturating_mul(*len),
            Self::Struct(s) if s.tolerant => 1,
            // Inside a struct or enum a self-reference sits in a `Recursive`
            // field, which counts 0 as in the derive: no cycle.
            Self::Struct(s) => sum(&s.fields),
            Self::Enum(e) => e
                .variants
                .iter()
                .map(|v| crate::varint_len(u64::from(v.tag)).saturating_add(sum(&v.fields)))
                .min()
                .unwrap_or(0),
            Self::Flags(f) => f.bits.size().unwrap_or(0),
            // `Vec<Self>` counts against `Self::MIN_SIZE`.
            Self::SelfRef => this.map_or(0, |t| t.min_size(None)),
            Self::Custom { .. } | Self::Recursive { .. } => 0,
        }
    }

    /// `Some(n)` when every value takes exactly `n` bytes: the Rust
    /// decoder's `EXACT_SIZE` (a struct checks its leading run of such
    /// fields with one length check, and the inspector does the same, so
    /// the two report the same error for the same bytes).
    pub(crate) fn exact_size(&self) -> Option<usize> {
        let sum = |fields: &[OwnedField]| {
            fields
                .iter()
                .try_fold(0usize, |n, f| n.checked_add(f.shape.exact_size()?))
        };
        match self {
            Self::Scalar(Scalar::Usize | Scalar::Isize) => None,
            Self::Scalar(s) => s.size(),
            Self::Array { len, item } => item.exact_size()?.checked_mul(*len),
            Self::Tuple(items) => items
                .iter()
                .try_fold(0usize, |n, i| n.checked_add(i.exact_size()?)),
            Self::Vector { scalar, len, .. } => scalar.size()?.checked_mul(*len),
            Self::Struct(s) if s.tolerant => None,
            Self::Struct(s) => sum(&s.fields),
            Self::Enum(e) => {
                let mut sizes = e
                    .variants
                    .iter()
                    .map(|v| crate::varint_len(u64::from(v.tag)).checked_add(sum(&v.fields)?));
                let first = sizes.next()??;
                sizes.all(|s| s == Some(first)).then_some(first)
            }
            Self::Flags(f) => f.bits.size(),
            _ => None,
        }
    }

    /// A short name for the annotated view: `u32`, `str`, `vec3<f32>`,
    /// `Vec<PlayerState>`, the name of a struct or enum.
    #[must_use]
    pub fn type_name(&self) -> String {
        match self {
            Self::Scalar(s) => s.name().to_owned(),
            Self::Str => "str".to_owned(),
            Self::Bytes => "bytes".to_owned(),
            Self::Seq(item) => format!("Vec<{}>", item.type_name()),
            Self::Array { len, item } => format!("[{}; {len}]", item.type_name()),
            Self::Option(item) => format!("Option<{}>", item.type_name()),
            Self::Boxed(item) => format!("Box<{}>", item.type_name()),
            Self::Tuple(items) => {
                let items: Vec<String> = items.iter().map(Self::type_name).collect();
                format!("({})", items.join(", "))
            }
            Self::Map { key, value, sorted } => format!(
                "{}<{}, {}>",
                if *sorted { "BTreeMap" } else { "HashMap" },
                key.type_name(),
                value.type_name()
            ),
            Self::Vector { name, scalar, .. } => format!("{name}<{}>", scalar.name()),
            Self::Struct(s) => s.name.clone(),
            Self::Enum(e) => e.name.clone(),
            Self::Flags(f) => f.name.clone(),
            Self::Custom { name, .. } => name.clone(),
            Self::Recursive { spelled, .. } => spelled.replace(' ', ""),
            Self::SelfRef => "Self".to_owned(),
        }
    }
}
