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
use crate::wire::{Decode, DecodeError, Encode, Reader, Schema, Sink, varint_len};

#[inline(always)]
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

#[inline(always)]
fn put_entries<'a, K: Encode + 'a, V: Encode + 'a, W: Sink>(
    w: &mut W,
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
            let outer = w.mark_run(true);
            for (key, value) in entries {
                key.encode_to(w);
                value.encode_to(w);
            }
            w.mark_run(outer);
        }
    }
}

/// The entry count, checked against the limits and the remaining input; the
/// memory is charged by each map, which knows what it allocates.
#[inline]
fn map_count<'de, K: Decode<'de>, V: Decode<'de>>(
    r: &mut Reader<'de>,
) -> Result<usize, DecodeError> {
    r.get_count(K::MIN_SIZE.saturating_add(V::MIN_SIZE), 0)
}

/// The widest SIMD group of std's hash table (hashbrown): 16 control bytes
/// with SSE2, 8 elsewhere. The charge takes the wider, so it is never below
/// what the table allocates.
const GROUP: usize = 16;

/// Buckets of the table `HashMap::with_capacity(cap)` allocates: hashbrown's
/// `capacity_to_buckets`, whose small tables have a minimum capacity that
/// depends on the entry size and the group width (the larger of the two
/// widths' minimums here).
#[inline]
fn buckets_for<T>(cap: usize) -> Option<usize> {
    if cap == 0 {
        return Some(0);
    }
    if cap < 15 {
        let min = match size_of::<T>() {
            0..=1 => 14,
            2..=3 => 7,
            _ => 3,
        };
        let cap = cap.max(min);
        return Some(if cap < 4 {
            4
        } else if cap < 8 {
            8
        } else {
            16
        });
    }
    (cap.checked_mul(8)? / 7).checked_next_power_of_two()
}

/// Buckets of a table whose `capacity()` is `cap` (hashbrown keeps one
/// bucket free in small tables and an eighth free in the others).
#[inline]
fn buckets_of(cap: usize) -> usize {
    match cap {
        0 => 0,
        1..7 => cap + 1,
        _ => cap / 7 * 8,
    }
}

/// Bytes a hash table of `buckets` buckets of `T` allocates: the entries,
/// padded to the control bytes' alignment, then a control byte per bucket and
/// a trailing group (hashbrown's `calculate_layout_for`). For `(u32,
/// ItemStack)` and 128 entries that is 256 buckets, 4 368 bytes, 2.3 times
/// the `count × size` a decode used to charge.
#[inline]
fn table_bytes<T>(buckets: usize) -> Option<usize> {
    if buckets == 0 {
        return Some(0);
    }
    let align = align_of::<T>().max(GROUP);
    size_of::<T>()
        .checked_mul(buckets)?
        .checked_next_multiple_of(align)?
        .checked_add(buckets)?
        .checked_add(GROUP)
}

/// The bytes of `count` entries and the size of one, when keys and values
/// have exact sizes: one bounds check for the whole run (`get_count` proved
/// it is there), each entry then read from a window of its constant size,
/// where the compiler drops the per-field checks. `None` otherwise.
#[inline(always)]
fn exact_run<'de, K: Decode<'de>, V: Decode<'de>>(
    r: &mut Reader<'de>,
    count: usize,
) -> Result<Option<(&'de [u8], usize)>, DecodeError> {
    let entry = K::MIN_SIZE.saturating_add(V::MIN_SIZE);
    if !(K::EXACT_SIZE && V::EXACT_SIZE && entry > 0) {
        return Ok(None);
    }
    let run = r.take(count.checked_mul(entry).ok_or(DecodeError::OverLimit)?)?;
    Ok(Some((run, entry)))
}

/// Decodes the entry in `window` (exactly its bytes) and hands it to
/// `insert`.
#[inline(always)]
fn insert_at<'de, K: Decode<'de>, V: Decode<'de>>(
    window: &'de [u8],
    insert: &mut impl FnMut(K, V) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    let w = &mut Reader::new(window);
    insert(K::decode_from(w)?, V::decode_from(w)?)
}

/// Hands every entry of an exact-size `run` to `insert`, in wire order.
#[inline(always)]
fn insert_run<'de, K: Decode<'de>, V: Decode<'de>>(
    run: &'de [u8],
    entry: usize,
    mut insert: impl FnMut(K, V) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    run.chunks_exact(entry)
        .try_for_each(|window| insert_at(window, &mut insert))
}

/// Reads `count` entries and hands each to `insert`, in wire order.
#[inline]
fn read_entries<'de, K: Decode<'de>, V: Decode<'de>>(
    r: &mut Reader<'de>,
    count: usize,
    mut insert: impl FnMut(K, V) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    if let Some((run, entry)) = exact_run::<K, V>(r, count)? {
        return insert_run(run, entry, insert);
    }
    for _ in 0..count {
        let key = K::decode_from(r)?;
        let value = V::decode_from(r)?;
        insert(key, value)?;
    }
    Ok(())
}

/// Reads `count` entries into an empty `map`.
#[inline(always)]
fn fill_map<'de, K, V, S>(
    map: &mut HashMap<K, V, S>,
    r: &mut Reader<'de>,
    count: usize,
) -> Result<(), DecodeError>
where
    K: Decode<'de> + Eq + Hash,
    V: Decode<'de>,
    S: BuildHasher,
{
    let Some((run, entry)) = exact_run::<K, V>(r, count)? else {
        return read_entries(r, count, |key, value| insert_new(map, key, value));
    };
    if insert_spread(map, run, count, entry).is_err() {
        // The first error in wire order, whatever the spread met.
        map.clear();
        insert_run(run, entry, |key, value| insert_new(map, key, value))?;
    }
    Ok(())
}

/// Inserts an entry whose key must be new.
#[inline(always)]
fn insert_new<K: Eq + Hash, V, S: BuildHasher>(
    map: &mut HashMap<K, V, S>,
    key: K,
    value: V,
) -> Result<(), DecodeError> {
    match map.insert(key, value) {
        Some(_) => Err(DecodeError::DuplicateKey),
        None => Ok(()),
    }
}

/// Inserts the `count` exact-size entries of `run` alternately from its two
/// halves.
///
/// A map sent by a peer with the same hasher (a fixed-seed one, as Bevy's
/// maps use) arrives in the order of its own buckets, which is the order of
/// the new table's buckets too: inserted in that order, each entry writes a
/// control byte of the group the next entry's probe loads at once, a load
/// the store cannot forward to, and the insert stalls. Entries half the run
/// apart land far apart. Which entry an error is met at may differ from wire
/// order, so on an error the caller decodes the run again in order.
///
/// A repeated key is found by the count, not entry by entry: `map` starts
/// empty, so it holds fewer than `count` entries after the run exactly when
/// a key came twice. That drops a test and a branch on `insert`'s result
/// per entry (callgrind, Inventory(128) decode: 21 087 -> 20 848
/// instructions, wincode 20 953); the caller's in-order pass then reports
/// the first error in wire order, as for any other error.
#[inline(always)]
fn insert_spread<'de, K, V, S>(
    map: &mut HashMap<K, V, S>,
    run: &'de [u8],
    count: usize,
    entry: usize,
) -> Result<(), DecodeError>
where
    K: Decode<'de> + Eq + Hash,
    V: Decode<'de>,
    S: BuildHasher,
{
    let mut insert = |key, value| {
        map.insert(key, value);
        Ok(())
    };
    let (front, back) = run.split_at((count / 2) * entry);
    for (a, b) in front.chunks_exact(entry).zip(back.chunks_exact(entry)) {
        insert_at(a, &mut insert)?;
        insert_at(b, &mut insert)?;
    }
    if count % 2 == 1
        && let Some(last) = back.rchunks_exact(entry).next()
    {
        insert_at(last, &mut insert)?;
    }
    if map.len() == count {
        Ok(())
    } else {
        Err(DecodeError::DuplicateKey)
    }
}

/// The bytes the table for `count` entries allocates, refused when their
/// size overflows.
#[inline(always)]
fn table_size<K, V>(count: usize) -> Result<usize, DecodeError> {
    buckets_for::<(K, V)>(count)
        .and_then(table_bytes::<(K, V)>)
        .ok_or(DecodeError::OverLimit)
}

impl<K: Encode, V: Encode, S> Encode for HashMap<K, V, S> {
    const LEN_WALKS: bool = K::FIXED_SIZE.is_none() || V::FIXED_SIZE.is_none();

    #[inline(always)]
    fn encoded_len(&self) -> usize {
        entries_len(self.len(), self.iter())
    }

    #[inline(always)]
    fn encode_to<W: Sink>(&self, w: &mut W) {
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
        r.enter()?;
        let count = map_count::<K, V>(r)?;
        r.charge(table_size::<K, V>(count)?)?;
        // Made at its size: growing an empty map to it cost a rehash pass.
        let mut map = HashMap::with_capacity_and_hasher(count, S::default());
        fill_map(&mut map, r, count)?;
        r.leave();
        Ok(map)
    }

    /// Clears the map and refills it; its table is kept, so a warmed map of
    /// plain keys and values decodes without allocating.
    ///
    /// The table, the map's whole allocation, is charged at its real size
    /// (hashbrown allocates up to 2.3 times `count × size_of::<(K, V)>()`),
    /// and a reused table is charged for all it holds; a table the budget
    /// cannot hold, or one too small, is freed before the new one is made.
    #[inline]
    fn decode_in_place_from(&mut self, r: &mut Reader<'de>) -> Result<(), DecodeError> {
        r.enter()?;
        let count = map_count::<K, V>(r)?;
        let needed = table_size::<K, V>(count)?;
        self.clear();
        if count > self.capacity() {
            // Free the old table first: growing would hold both at once.
            self.shrink_to(0);
            r.charge(needed)?;
            self.reserve(count);
        } else {
            let held = table_bytes::<(K, V)>(buckets_of(self.capacity())).unwrap_or(usize::MAX);
            if !r.charge_reuse(held, needed)? {
                self.shrink_to(0);
                self.reserve(count);
            }
        }
        fill_map(self, r, count)?;
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
    const LEN_WALKS: bool = K::FIXED_SIZE.is_none() || V::FIXED_SIZE.is_none();

    #[inline(always)]
    fn encoded_len(&self) -> usize {
        entries_len(self.len(), self.iter())
    }

    #[inline(always)]
    fn encode_to<W: Sink>(&self, w: &mut W) {
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

    /// The nodes are charged at an upper bound of what the tree allocates
    /// for `count` keys inserted in order.
    #[inline]
    fn decode_in_place_from(&mut self, r: &mut Reader<'de>) -> Result<(), DecodeError> {
        r.enter()?;
        let count = map_count::<K, V>(r)?;
        self.clear();
        r.charge(btree_bytes::<K, V>(count).ok_or(DecodeError::OverLimit)?)?;
        read_entries(r, count, |key, value| {
            // Strictly ascending keys: the canonical order, and no repeats.
            if self.last_key_value().is_some_and(|(last, _)| key <= *last) {
                return Err(DecodeError::DuplicateKey);
            }
            self.insert(key, value);
            Ok(())
        })?;
        r.leave();
        Ok(())
    }
}

/// An upper bound of the bytes std's `BTreeMap` allocates for `count` keys
/// inserted in ascending order: nodes of up to 11 entries, every node but the
/// root at least 5 full, so at most `count / 5 + 1` leaves and as many
/// internal nodes again; each node no larger than an internal node (the
/// entries, twelve edges, a parent pointer and two lengths).
#[inline]
fn btree_bytes<K, V>(count: usize) -> Option<usize> {
    if count == 0 {
        return Some(0);
    }
    const CAPACITY: usize = 11;
    let node = size_of::<K>()
        .checked_add(size_of::<V>())?
        .checked_mul(CAPACITY)?
        .checked_add((CAPACITY + 1) * size_of::<usize>() + size_of::<usize>() + 4)?
        .checked_next_multiple_of(
            align_of::<usize>()
                .max(align_of::<K>())
                .max(align_of::<V>()),
        )?;
    let leaves = count / 5 + 1;
    node.checked_mul(leaves.checked_mul(2)?)
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
