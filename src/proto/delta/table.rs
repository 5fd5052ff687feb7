//! A snapshot's items as the delta codec sees them: keys ascending, each
//! item's lanes in one row of a flat array.

use crate::DecodeError;

use super::item::{SnapshotItem, SnapshotKey};

/// Items by ascending key, their lanes row by row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Table {
    pub(crate) keys: Vec<u64>,
    pub(crate) lanes: Vec<u32>,
    /// Lanes a row.
    pub(crate) width: usize,
}

/// Two items of one snapshot have the same key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DuplicateKey(pub(crate) u64);

impl Table {
    /// An empty table of rows `width` lanes wide.
    pub(crate) fn empty(width: usize) -> Self {
        Self {
            keys: Vec::new(),
            lanes: Vec::new(),
            width,
        }
    }

    /// The table of `items`, sorted by key (already sorted items are not
    /// sorted again).
    pub(crate) fn from_items<I: SnapshotItem>(items: &[I]) -> Result<Self, DuplicateKey> {
        let width = I::LANES;
        let mut table = Self {
            keys: Vec::with_capacity(items.len()),
            lanes: vec![0; items.len() * width],
            width,
        };
        let sorted = items
            .windows(2)
            .all(|w| matches!(w, [a, b] if a.key() < b.key()));
        if sorted {
            for (item, row) in items.iter().zip(table.lanes.chunks_exact_mut(width.max(1))) {
                table.keys.push(item.key().to_u64());
                item.write_lanes(row);
            }
            if width == 0 {
                table.keys = items.iter().map(|i| i.key().to_u64()).collect();
            }
            return Ok(table);
        }
        let mut order: Vec<(u64, usize)> = items
            .iter()
            .enumerate()
            .map(|(i, item)| (item.key().to_u64(), i))
            .collect();
        order.sort_unstable();
        if let Some(w) = order.windows(2).find(|w| matches!(w, [a, b] if a.0 == b.0)) {
            return Err(DuplicateKey(w.first().map_or(0, |p| p.0)));
        }
        for (row, &(key, i)) in order.iter().enumerate() {
            table.keys.push(key);
            if let (Some(item), Some(out)) = (
                items.get(i),
                table.lanes.get_mut(row * width..(row + 1) * width),
            ) {
                item.write_lanes(out);
            }
        }
        Ok(table)
    }

    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    pub(crate) fn row(&self, i: usize) -> &[u32] {
        self.lanes
            .get(i * self.width..(i + 1) * self.width)
            .unwrap_or_default()
    }

    /// Appends a row.
    pub(crate) fn push(&mut self, key: u64, row: &[u32]) {
        self.keys.push(key);
        self.lanes.extend_from_slice(row);
    }

    /// Appends every row of `other` (whose keys all come after this
    /// table's).
    pub(crate) fn extend(&mut self, other: &Self) {
        self.keys.extend_from_slice(&other.keys);
        self.lanes.extend_from_slice(&other.lanes);
    }

    /// The rows whose keys are in `lo..hi` (`hi` `None`: no upper bound),
    /// as a range of row indexes.
    pub(crate) fn range(&self, lo: u64, hi: Option<u64>) -> core::ops::Range<usize> {
        let start = self.keys.partition_point(|k| *k < lo);
        let end = match hi {
            Some(hi) => self.keys.partition_point(|k| *k < hi),
            None => self.keys.len(),
        };
        start..end.max(start)
    }

    /// The items, in key order.
    pub(crate) fn to_items<I: SnapshotItem>(&self, out: &mut Vec<I>) -> Result<(), DecodeError> {
        out.clear();
        out.reserve(self.len());
        for (i, &key) in self.keys.iter().enumerate() {
            let key = I::Key::from_u64(key).ok_or(DecodeError::InvalidValue)?;
            out.push(I::from_lanes(key, self.row(i))?);
        }
        Ok(())
    }
}
