//! Caps on what a decoder will believe.

/// Limits a decoder enforces on untrusted input.
///
/// Every length prefix is checked against the bytes that remain *and* against
/// these limits before anything is allocated. The allocation budget catches
/// amplification: a one-byte `None` on the wire can stand for a large value in
/// memory, so the decoder charges what it is about to allocate, before it
/// allocates, and fails once the total passes [`max_alloc`](Self::max_alloc):
/// `count × size_of::<T>()` for a `Vec` (allocated exactly that), the byte
/// length for a `String` or `Bytes`, the real table size for a `HashMap`
/// (up to 2.3× its entries' size), an upper bound of the nodes for a
/// `BTreeMap`, `size_of::<T>()` for a `Box`. A decode in place also charges
/// the capacity the value keeps from earlier decodes, so a warmed value
/// never holds more than the budget either.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DecodeLimits {
    /// Longest whole input accepted by `decode`, in bytes.
    pub max_message: usize,
    /// Most elements in one collection (`Vec`, map, slice).
    pub max_collection: usize,
    /// Longest string or byte string, in bytes.
    pub max_string: usize,
    /// Deepest nesting of collections (`Vec`, maps) and boxes.
    pub max_depth: u32,
    /// Most bytes of heap memory one decoded value may hold: what a decode
    /// allocates for collections, strings and boxes, and for a decode in
    /// place also the capacity the value keeps.
    pub max_alloc: usize,
}

impl DecodeLimits {
    /// Defaults sized for game messages: 1 MiB messages, 65 536 elements,
    /// 64 KiB strings, depth 32, 8 MiB of allocation per decode.
    pub const DEFAULT: Self = Self {
        max_message: 1 << 20,
        max_collection: 1 << 16,
        max_string: 1 << 16,
        max_depth: 32,
        max_alloc: 8 << 20,
    };

    /// No limit beyond the input itself. For trusted input only (a file this
    /// program wrote): hostile bytes can then make the decoder allocate up to
    /// the amplification of the type.
    pub const DANGEROUS_UNLIMITED: Self = Self {
        max_message: usize::MAX,
        max_collection: usize::MAX,
        max_string: usize::MAX,
        max_depth: u32::MAX,
        max_alloc: usize::MAX,
    };
}

impl Default for DecodeLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}
