//! Dynamic values: a decoded message without its Rust type.

/// A value read against an [`OwnedShape`](super::OwnedShape). The shape
/// says what each value is (a `Uint` may be a `u8` or flags, a `List` an
/// array or a tuple); the value holds only the data, so printing, encoding
/// and comparing take the shape beside it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// `()` and unit structs' absence of data.
    Unit,
    /// `bool`.
    Bool(bool),
    /// `char`.
    Char(char),
    /// Unsigned integers of every width, `usize`, `NonZeroU*` and flags.
    Uint(u128),
    /// Signed integers of every width, `isize` and `NonZeroI*`.
    Int(i128),
    /// `f32`, bit for bit.
    F32(f32),
    /// `f64`, bit for bit.
    F64(f64),
    /// A string.
    Str(String),
    /// A byte string, and any sequence or array of `u8`.
    Bytes(Vec<u8>),
    /// A sequence, array or tuple, or a vector's components.
    List(Vec<Value>),
    /// `Option`.
    Option(Option<Box<Value>>),
    /// A map's entries in wire order (a `HashMap`'s order is its writer's).
    Map(Vec<(Value, Value)>),
    /// A struct: its fields in wire order. A tolerant struct may hold fewer
    /// fields than its shape (an older writer sent only those) and `extra`
    /// bytes (a newer writer appended fields this shape does not know);
    /// keeping both makes re-encoding give back the same bytes.
    Struct {
        /// The fields present, in order.
        fields: Vec<Value>,
        /// Unknown trailing bytes of a tolerant body.
        extra: Vec<u8>,
    },
    /// An enum variant: its tag and fields.
    Variant {
        /// The wire tag.
        tag: u32,
        /// The variant's fields in order.
        fields: Vec<Value>,
    },
}
