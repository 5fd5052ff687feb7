//! Maps: a count, then key/value pairs (docs/WIRE.md §6).
//!
//! `BTreeMap` is canonical: keys go out in ascending order and a decoder
//! requires them strictly ascending, so one value has one byte string.
//! `HashMap` goes out in its iteration order, as every peer codec does:
//! sorting would cost more than the rest of the encode. Its decoder accepts
//! any order and refuses a repeated key, so the decoded value is still the
//! one the sender had; only the byte order of equal maps may differ.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hash};

use crate::wire::schema::Shape;
use crate::wire::{Decode, DecodeError, Encode, Reader, Schema, Writer, varint_len};

#[inline]
fn entries_len<'a, K: Encode + 'a, V: Encode + 'a>(
    len: usize,
    entries: impl Iterator<Item = (&'a K, &'a V)>,
) -> usize {
    let body = match (K::FIXED_SIZE, V::FIXED_SIZE) {
        (Some(k), Some(v)) => len * (k + v),
        _ => entries
            .map(|(k, v)| k.encoded_len() + v.encoded_len())
            .sum(),
    };
    varint_len(len as u64) + body
}

#[inline]
fn put_entries<'a, K: Encode + 'a, V: Encode + 'a>(
    w: &mut Writer<'_>,
    len: usize,
    entries: impl Iterator<Item = (&'a K, &'a V)>,
) {
    w.put_len(len);
    match (K::FIXED_SIZE, V::FIXED_SIZE) {
        // One window per entry: one bounds check instead of one per field.
        (Some(k), Some(v)) => {
            w.put_run(len, k + v, entries, |w, (key, value)| {
                key.encode_to(w);
                value.encode_to(w);
            });
        }
        _ => {
            for (key, value) in entries {
                key.encode_to(w);
                value.encode_to(w);
            }
        }
    }
}

#[inline]
fn map_count<'de, K: Decode<'de>, V: Decode<'de>>(
    r: &mut Reader<'de>,
) -> Result<usize, DecodeError> {
    r.get_count(K::MIN_SIZE.saturating_add(V::MIN_SIZE), size_of::<(K, V)>())
}

impl<K: Encode, V: Encode, S> Encode for HashMap<K, V, S> {
    #[inline]
    fn encoded_len(&self) -> usize {
        entries_len(self.len(), self.iter())
    }

    #[inline]
    fn encode_to(&self, w: &mut Writer<'_>) {
        put_entries(w, self.len(), self.iter());
    }
}

impl<'de, K, V, S> Decode<'de> for HashMap<K, V, S>
where
    K: Decode<'de> + Eq + Hash,
    V: Decode<'de>,
    S: BuildHasher + Default,
{
    const MIN_SIZE: usize = 1;

    #[inline]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        let mut map = HashMap::with_hasher(S::default());
        map.decode_in_place_from(r)?;
        Ok(map)
    }

    /// Clears the map and refills it; its table is kept, so a warmed map of
    /// plain keys and values decodes without allocating.
    #[inline]
    fn decode_in_place_from(&mut self, r: &mut Reader<'de>) -> Result<(), DecodeError> {
        r.enter()?;
        let count = map_count::<K, V>(r)?;
        self.clear();
        self.reserve(count);
        for _ in 0..count {
            let key = K::decode_from(r)?;
            let value = V::decode_from(r)?;
            if self.insert(key, value).is_some() {
                return Err(DecodeError::DuplicateKey);
            }
        }
        r.leave();
        Ok(())
    }
}

impl<K: Schema, V: Schema, S> Schema for HashMap<K, V, S> {
    const SHAPE: Shape = Shape::Map {
        key: &K::SHAPE,
        value: &V::SHAPE,
        sorted: false,
    };
}

impl<K: Encode, V: Encode> Encode for BTreeMap<K, V> {
    #[inline]
    fn encoded_len(&self) -> usize {
        entries_len(self.len(), self.iter())
    }

    #[inline]
    fn encode_to(&self, w: &mut Writer<'_>) {
        put_entries(w, self.len(), self.iter());
    }
}

impl<'de, K: Decode<'de> + Ord, V: Decode<'de>> Decode<'de> for BTreeMap<K, V> {
    const MIN_SIZE: usize = 1;

    #[inline]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        let mut map = BTreeMap::new();
        map.decode_in_place_from(r)?;
        Ok(map)
    }

    #[inline]
    fn decode_in_place_from(&mut self, r: &mut Reader<'de>) -> Result<(), DecodeError> {
        r.enter()?;
        let count = map_count::<K, V>(r)?;
        self.clear();
        for _ in 0..count {
            let key = K::decode_from(r)?;
            let value = V::decode_from(r)?;
            // Strictly ascending keys: the canonical order, and no repeats.
            if self.last_key_value().is_some_and(|(last, _)| key <= *last) {
                return Err(DecodeError::DuplicateKey);
            }
            self.insert(key, value);
        }
        r.leave();
        Ok(())
    }
}

/// Not `HashMap`'s fingerprint: a `BTreeMap` reader refuses the unsorted
/// keys a `HashMap` writer may send.
impl<K: Schema, V: Schema> Schema for BTreeMap<K, V> {
    const SHAPE: Shape = Shape::Map {
        key: &K::SHAPE,
        value: &V::SHAPE,
        sorted: true,
    };
}
