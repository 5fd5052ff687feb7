//! Schema fingerprints: a 64-bit digest of a type's wire shape.
//!
//! The fingerprint of a derived type mixes, in order, each field's name and
//! its type's fingerprint, so renaming, retyping or reordering a field, at any
//! depth, changes it. Types with the same wire form share a fingerprint:
//! `String` and `&str` are both `str`, `Vec<u8>`, `&[u8]` and `Bytes` are all
//! `seq<u8>`. The type's own name does not count, so a borrowed twin
//! (`SpawnEntityRef`) matches its owned type (`SpawnEntity`).

/// A type with a schema fingerprint. Derived along with `Encode`.
pub trait Schema {
    /// Digest of the type's wire shape (see the module docs).
    const FINGERPRINT: u64;
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
