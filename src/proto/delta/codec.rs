//! The delta codec (docs/WIRE.md §12.10): a snapshot's items against a
//! baseline's, split into chunks by key range, each chunk decodable alone
//! by a client that holds the baseline.
//!
//! A chunk's bits, after the header bytes:
//!
//! ```text
//! lo:K  last:1  [hi:K]                    key range lo..hi (last: no upper bound)
//! removed:γ  ( gap:γ )*                   baseline rows of the range that are gone
//! [ code:8 ×lanes ]                       if any baseline row of the range is kept
//! ( changed:1 [ value ×lanes ] )*         each kept row, in key order
//! added:γ                                 rows new in the range
//! [ code:8  ( base:F  width:6 ) ×lanes ]  if any row is added
//! ( key  lanes )*                         each added row, in key order
//! ```
//!
//! `γ` is Elias gamma; `code` is one [`Code`]. Every choice that shapes
//! the bits (code widths, frame-of-reference bases) is made once per
//! encode from the whole snapshot, so sizing and writing agree.

use bytes::Bytes;

use crate::DecodeError;
use crate::wire::Lane;
use crate::wire::bits::{BitReader, BitWriter, bits_for, gamma_len, mask};

use super::table::Table;

/// How a stream of unsigned values (zig-zagged changes, key gaps) is
/// written: optionally a zero flag, then `width` bits, optionally with an
/// escape to the value in full. Chosen per encode to cost the fewest bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Code {
    /// A leading bit says whether the value is zero (then nothing follows);
    /// a non-zero value is stored less one.
    zero: bool,
    /// A bit says whether the value fits `width` bits or is written in
    /// full (`full` bits, as the absolute value the stream stands for).
    escape: bool,
    width: u32,
}

/// What a coded value turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Coded {
    /// A small value (a zig-zagged change, a gap).
    Small(u64),
    /// The absolute value, written in full.
    Full(u64),
}

/// Histogram of bit lengths of the values a [`Code`] will write.
#[derive(Clone, Debug)]
pub(crate) struct Stats {
    /// By bit length of the value.
    plain: [u32; 65],
    /// By bit length of the value less one, for non-zero values.
    nonzero: [u32; 65],
    zeros: u32,
}

impl Default for Stats {
    fn default() -> Self {
        Self {
            plain: [0; 65],
            nonzero: [0; 65],
            zeros: 0,
        }
    }
}

impl Stats {
    pub(crate) fn add(&mut self, v: u64) {
        if let Some(n) = self.plain.get_mut(bits_for(v) as usize) {
            *n += 1;
        }
        if v == 0 {
            self.zeros += 1;
        } else if let Some(n) = self.nonzero.get_mut(bits_for(v - 1) as usize) {
            *n += 1;
        }
    }

    /// The cheapest code for these values, with `full` bits for an escape.
    pub(crate) fn best(&self, full: u32) -> Code {
        let mut best = (u64::MAX, Code::default());
        let mut consider = |cost: u64, code: Code| {
            if cost < best.0 {
                best = (cost, code);
            }
        };
        for zero in [false, true] {
            let hist = if zero { &self.nonzero } else { &self.plain };
            let extra = u64::from(zero);
            let fixed = if zero { u64::from(self.zeros) } else { 0 };
            let count: u64 = hist.iter().map(|n| u64::from(*n)).sum();
            let max_bits = hist.iter().rposition(|n| *n > 0).unwrap_or(0) as u32;
            if max_bits <= 63 {
                let w = u64::from(max_bits);
                consider(
                    fixed + count * (extra + w),
                    Code {
                        zero,
                        escape: false,
                        width: max_bits,
                    },
                );
            }
            let mut fit = 0u64;
            for width in 0..=63u32 {
                fit += u64::from(hist.get(width as usize).copied().unwrap_or(0));
                let w = u64::from(width);
                let cost =
                    fixed + fit * (extra + 1 + w) + (count - fit) * (extra + 1 + u64::from(full));
                consider(
                    cost,
                    Code {
                        zero,
                        escape: true,
                        width,
                    },
                );
            }
        }
        best.1
    }
}

impl Code {
    pub(crate) fn put(self, w: &mut BitWriter<'_>) {
        w.put_bool(self.zero);
        w.put_bool(self.escape);
        w.put_bits(u64::from(self.width), 6);
    }

    pub(crate) fn get(r: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            zero: r.get_bool()?,
            escape: r.get_bool()?,
            width: r.get_bits(6)? as u32,
        })
    }

    /// Bits `value` takes, with `full` bits for an escape.
    pub(crate) fn cost(self, value: u64, full: u32) -> u32 {
        let zero = u32::from(self.zero);
        if self.zero && value == 0 {
            return 1;
        }
        let stored = if self.zero { value - 1 } else { value };
        let esc = u32::from(self.escape);
        if bits_for(stored) <= self.width {
            zero + esc + self.width
        } else {
            zero + esc + full
        }
    }

    /// Writes `value`, or `absolute` in `full` bits if it does not fit.
    pub(crate) fn write(self, w: &mut BitWriter<'_>, value: u64, absolute: u64, full: u32) {
        if self.zero {
            w.put_bool(value != 0);
            if value == 0 {
                return;
            }
        }
        let stored = if self.zero { value - 1 } else { value };
        let fits = bits_for(stored) <= self.width;
        if self.escape {
            w.put_bool(!fits);
        }
        if fits {
            w.put_bits(stored, self.width);
        } else {
            w.put_bits(absolute, full);
        }
    }

    pub(crate) fn read(self, r: &mut BitReader<'_>, full: u32) -> Result<Coded, DecodeError> {
        if self.zero && !r.get_bool()? {
            return Ok(Coded::Small(0));
        }
        if self.escape && r.get_bool()? {
            return Ok(Coded::Full(r.get_bits(full)?));
        }
        let stored = r.get_bits(self.width)?;
        Ok(Coded::Small(if self.zero {
            stored.checked_add(1).ok_or(DecodeError::InvalidValue)?
        } else {
            stored
        }))
    }
}

fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// The layout every chunk of one encode shares.
pub(crate) struct Layout<'a> {
    pub(crate) key_bits: u32,
    pub(crate) lanes: &'a [Lane],
}

/// One item-level step of a delta, in key order.
#[derive(Clone, Copy, Debug)]
enum Event {
    /// A baseline row (its index) is gone.
    Removed(usize),
    /// A baseline row (index) is kept as a current row (index); changed or
    /// not.
    Kept(usize, usize, bool),
    /// A current row (index) is new.
    Added(usize),
}

/// Where a chunk starts and what it holds.
#[derive(Clone, Debug)]
struct Cut {
    /// First event.
    start: usize,
    /// The lowest key it covers.
    lo: u64,
}

/// The most rows one chunk adds (docs/WIRE.md §12.10): the encoder cuts a
/// chunk there, the decoder refuses more. It bounds the decoder's work on
/// a chunk, since an added row may cost no bit at all.
pub const MAX_CHUNK_ROWS: usize = 4096;

/// The coding choices of one encode.
struct Codes {
    changes: Vec<Code>,
    gaps: Code,
    /// Frame of reference of added rows' lanes: (base, width).
    added: Vec<(u32, u32)>,
}

/// Encodes `cur` against `base` (empty for a keyframe) into chunks of at
/// most `budget_bits` bits each after the header; `write` gets each chunk's
/// bits as `(index, count, write_bits)` and returns its datagram.
pub(crate) struct DeltaEncoder {
    events: Vec<Event>,
    costs: Vec<u32>,
    cuts: Vec<Cut>,
}

/// A delta could not be split: one item alone is over the chunk budget, or
/// it needs more chunks than allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TooLarge;

impl DeltaEncoder {
    pub(crate) fn new() -> Self {
        Self {
            events: Vec::new(),
            costs: Vec::new(),
            cuts: Vec::new(),
        }
    }

    /// Plans and writes the chunks of `cur` against `base`; `emit` builds
    /// each chunk's datagram from its index, the chunk count and a writer
    /// of its bits, and returns it into `out`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn encode(
        &mut self,
        layout: &Layout<'_>,
        base: &Table,
        cur: &Table,
        budget_bits: usize,
        max_chunks: usize,
        mut emit: impl FnMut(u32, u32, &mut dyn FnMut(&mut BitWriter<'_>)) -> Bytes,
        out: &mut Vec<Bytes>,
    ) -> Result<usize, TooLarge> {
        self.merge(base, cur);
        let codes = self.choose(layout, base, cur);
        self.plan(layout, base, cur, &codes, budget_bits, max_chunks)?;
        let count = self.cuts.len() as u32;
        for (i, cut) in self.cuts.iter().enumerate() {
            let end = self.cuts.get(i + 1).map_or(self.events.len(), |c| c.start);
            let hi = self.cuts.get(i + 1).map(|c| c.lo);
            let events = self.events.get(cut.start..end).unwrap_or_default();
            let mut write = |w: &mut BitWriter<'_>| {
                write_chunk(w, layout, base, cur, &codes, events, cut.lo, hi);
            };
            out.push(emit(i as u32, count, &mut write));
        }
        Ok(self.cuts.len())
    }

    fn merge(&mut self, base: &Table, cur: &Table) {
        self.events.clear();
        let (mut b, mut c) = (0, 0);
        loop {
            let (bk, ck) = (base.keys.get(b), cur.keys.get(c));
            match (bk, ck) {
                (None, None) => break,
                (Some(_), None) => {
                    self.events.push(Event::Removed(b));
                    b += 1;
                }
                (None, Some(_)) => {
                    self.events.push(Event::Added(c));
                    c += 1;
                }
                (Some(bk), Some(ck)) => {
                    if bk < ck {
                        self.events.push(Event::Removed(b));
                        b += 1;
                    } else if ck < bk {
                        self.events.push(Event::Added(c));
                        c += 1;
                    } else {
                        let changed = base.row(b) != cur.row(c);
                        self.events.push(Event::Kept(b, c, changed));
                        b += 1;
                        c += 1;
                    }
                }
            }
        }
    }

    fn choose(&self, layout: &Layout<'_>, base: &Table, cur: &Table) -> Codes {
        let n = layout.lanes.len();
        let mut changes = vec![Stats::default(); n];
        let mut gaps = Stats::default();
        let mut added: Vec<(u32, u32)> = vec![(u32::MAX, 0); n];
        let mut prev: Option<u64> = None;
        for event in &self.events {
            match *event {
                Event::Kept(b, c, true) => {
                    for (l, ((lane, old), new)) in layout
                        .lanes
                        .iter()
                        .zip(base.row(b))
                        .zip(cur.row(c))
                        .enumerate()
                    {
                        if let Some(s) = changes.get_mut(l) {
                            s.add(zigzag(lane.diff(*old, *new)));
                        }
                    }
                }
                Event::Added(c) => {
                    let key = cur.keys.get(c).copied().unwrap_or(0);
                    gaps.add(key - prev.map_or(0, |p| p.saturating_add(1)));
                    prev = Some(key);
                    for (range, v) in added.iter_mut().zip(cur.row(c)) {
                        range.0 = range.0.min(*v);
                        range.1 = range.1.max(*v);
                    }
                }
                _ => {}
            }
        }
        Codes {
            changes: changes
                .iter()
                .zip(layout.lanes)
                .map(|(s, lane)| s.best(lane.width()))
                .collect(),
            gaps: gaps.best(layout.key_bits),
            added: added
                .into_iter()
                .map(|(lo, hi)| {
                    if lo > hi {
                        (0, 0)
                    } else {
                        (lo, bits_for(u64::from(hi - lo)))
                    }
                })
                .collect(),
        }
    }

    /// Cuts the events into chunks of at most `budget` bits.
    fn plan(
        &mut self,
        layout: &Layout<'_>,
        base: &Table,
        cur: &Table,
        codes: &Codes,
        budget: usize,
        max_chunks: usize,
    ) -> Result<(), TooLarge> {
        self.cuts.clear();
        self.costs.clear();
        let key_bits = layout.key_bits as usize;
        let lanes = layout.lanes.len();
        let kept_params = 8 * lanes;
        let added_params: usize = 8 + layout
            .lanes
            .iter()
            .map(|l| l.width() as usize + 6)
            .sum::<usize>();
        // The counts' gamma codes, for the most events a chunk could hold.
        let counts = 2 * gamma_len(self.events.len() as u64);
        let fixed = 2 * key_bits + 1 + counts;
        let mut state = ChunkState::new(0);
        let mut bits = fixed;
        self.cuts.push(Cut { start: 0, lo: 0 });
        for (i, event) in self.events.iter().enumerate() {
            let key = event_key(*event, base, cur);
            let mut cost = state.cost(*event, layout, base, cur, codes, kept_params, added_params);
            // A chunk adds at most `MAX_CHUNK_ROWS` rows, whatever they cost
            // in bits (rows at one point with consecutive keys cost none):
            // the decoder's bound on its work.
            let full = matches!(event, Event::Added(_)) && state.added == MAX_CHUNK_ROWS;
            if (full || bits + cost > budget)
                && i > 0
                && self.cuts.last().is_some_and(|c| c.start < i)
            {
                self.cuts.push(Cut { start: i, lo: key });
                if self.cuts.len() > max_chunks {
                    return Err(TooLarge);
                }
                state = ChunkState::new(key);
                bits = fixed;
                cost = state.cost(*event, layout, base, cur, codes, kept_params, added_params);
            }
            if bits + cost > budget {
                return Err(TooLarge);
            }
            state.take(*event, base, cur);
            bits += cost;
        }
        Ok(())
    }
}

fn event_key(event: Event, base: &Table, cur: &Table) -> u64 {
    match event {
        Event::Removed(b) | Event::Kept(b, _, _) => base.keys.get(b).copied().unwrap_or(0),
        Event::Added(c) => cur.keys.get(c).copied().unwrap_or(0),
    }
}

/// What the cost of the next event depends on, within a chunk.
struct ChunkState {
    /// Baseline rows of the chunk so far (for removed rows' indexes).
    base_rows: u64,
    last_removed: Option<u64>,
    any_kept: bool,
    any_added: bool,
    /// Rows added in the chunk so far.
    added: usize,
    /// The lowest key the next added row may have.
    next_key: u64,
}

impl ChunkState {
    fn new(lo: u64) -> Self {
        Self {
            base_rows: 0,
            last_removed: None,
            any_kept: false,
            any_added: false,
            added: 0,
            next_key: lo,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn cost(
        &self,
        event: Event,
        layout: &Layout<'_>,
        base: &Table,
        cur: &Table,
        codes: &Codes,
        kept_params: usize,
        added_params: usize,
    ) -> usize {
        match event {
            Event::Removed(_) => {
                let gap = self.base_rows - self.last_removed.map_or(0, |r| r + 1);
                gamma_len(gap)
            }
            Event::Kept(b, c, changed) => {
                let params = if self.any_kept { 0 } else { kept_params };
                let mut bits = 1;
                if changed {
                    for ((lane, code), (old, new)) in layout
                        .lanes
                        .iter()
                        .zip(&codes.changes)
                        .zip(base.row(b).iter().zip(cur.row(c)))
                    {
                        let z = zigzag(lane.diff(*old, *new));
                        bits += code.cost(z, lane.width()) as usize;
                    }
                }
                params + bits
            }
            Event::Added(c) => {
                let params = if self.any_added { 0 } else { added_params };
                let key = cur.keys.get(c).copied().unwrap_or(0);
                let gap = key.saturating_sub(self.next_key);
                let lanes: usize = codes.added.iter().map(|(_, w)| *w as usize).sum();
                params + codes.gaps.cost(gap, layout.key_bits) as usize + lanes
            }
        }
    }

    fn take(&mut self, event: Event, _base: &Table, cur: &Table) {
        match event {
            Event::Removed(_) => {
                self.last_removed = Some(self.base_rows);
                self.base_rows += 1;
            }
            Event::Kept(..) => {
                self.any_kept = true;
                self.base_rows += 1;
            }
            Event::Added(c) => {
                self.any_added = true;
                self.added += 1;
                // Saturating: `u64::MAX` is a key, and no key follows it.
                self.next_key = cur
                    .keys
                    .get(c)
                    .map_or(self.next_key, |k| k.saturating_add(1));
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn write_chunk(
    w: &mut BitWriter<'_>,
    layout: &Layout<'_>,
    base: &Table,
    cur: &Table,
    codes: &Codes,
    events: &[Event],
    lo: u64,
    hi: Option<u64>,
) {
    let key_bits = layout.key_bits;
    w.put_bits(lo, key_bits);
    w.put_bool(hi.is_none());
    if let Some(hi) = hi {
        w.put_bits(hi, key_bits);
    }
    // Removed rows, as gaps between their indexes among the range's
    // baseline rows.
    let removed = events
        .iter()
        .filter(|e| matches!(e, Event::Removed(_)))
        .count();
    w.put_gamma(removed as u64);
    let mut index = 0u64;
    let mut last: Option<u64> = None;
    let mut kept = false;
    for event in events {
        match event {
            Event::Removed(_) => {
                w.put_gamma(index - last.map_or(0, |r| r + 1));
                last = Some(index);
                index += 1;
            }
            Event::Kept(..) => {
                kept = true;
                index += 1;
            }
            Event::Added(_) => {}
        }
    }
    if kept {
        for code in &codes.changes {
            code.put(w);
        }
    }
    for event in events {
        if let Event::Kept(b, c, changed) = *event {
            w.put_bool(changed);
            if changed {
                for ((lane, code), (old, new)) in layout
                    .lanes
                    .iter()
                    .zip(&codes.changes)
                    .zip(base.row(b).iter().zip(cur.row(c)))
                {
                    let z = zigzag(lane.diff(*old, *new));
                    code.write(w, z, u64::from(*new), lane.width());
                }
            }
        }
    }
    let added = events
        .iter()
        .filter(|e| matches!(e, Event::Added(_)))
        .count();
    w.put_gamma(added as u64);
    if added == 0 {
        return;
    }
    codes.gaps.put(w);
    for (lane, (base_value, width)) in layout.lanes.iter().zip(&codes.added) {
        w.put_bits(u64::from(*base_value), lane.width());
        w.put_bits(u64::from(*width), 6);
    }
    let mut next = lo;
    for event in events {
        if let Event::Added(c) = *event {
            let key = cur.keys.get(c).copied().unwrap_or(0);
            codes.gaps.write(w, key - next, key, key_bits);
            next = key.saturating_add(1);
            for (v, (base_value, width)) in cur.row(c).iter().zip(&codes.added) {
                w.put_bits(u64::from(v - base_value), *width);
            }
        }
    }
}

/// A chunk applied: the rows of its key range at the new snapshot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ChunkRows {
    pub(crate) lo: u64,
    /// `None`: the last chunk, no upper bound.
    pub(crate) hi: Option<u64>,
    pub(crate) rows: Table,
}

/// Applies one chunk's bits to `base` (empty for a keyframe).
///
/// # Errors
/// Any [`DecodeError`]: the bits break a rule of the format, a value is
/// out of its lane's range, or padding is left set.
pub(crate) fn decode_chunk(
    layout: &Layout<'_>,
    base: &Table,
    bits: &[u8],
    max_rows: usize,
) -> Result<ChunkRows, DecodeError> {
    let width = layout.lanes.len();
    let key_bits = layout.key_bits;
    let key_max = mask(key_bits);
    let mut r = BitReader::new(bits);
    let lo = r.get_bits(key_bits)?;
    let last = r.get_bool()?;
    let hi = if last {
        None
    } else {
        let hi = r.get_bits(key_bits)?;
        if hi <= lo {
            return Err(DecodeError::InvalidValue);
        }
        Some(hi)
    };
    let range = base.range(lo, hi);
    let in_range = range.len() as u64;
    let removed = r.get_gamma()?;
    if removed > in_range {
        return Err(DecodeError::InvalidValue);
    }
    let mut gone = vec![false; range.len()];
    let mut next = 0u64;
    for _ in 0..removed {
        let index = next
            .checked_add(r.get_gamma()?)
            .filter(|i| *i < in_range)
            .ok_or(DecodeError::InvalidValue)?;
        if let Some(g) = gone.get_mut(index as usize) {
            *g = true;
        }
        next = index + 1;
    }
    let kept = in_range - removed;
    let mut changes = Vec::new();
    if kept > 0 {
        for _ in 0..width {
            changes.push(Code::get(&mut r)?);
        }
    }
    let mut kept_rows = Table::empty(width);
    let mut row = vec![0u32; width];
    for (offset, gone) in gone.iter().enumerate() {
        if *gone {
            continue;
        }
        let b = range.start + offset;
        let old = base.row(b);
        row.copy_from_slice(old);
        if r.get_bool()? {
            for (l, (lane, code)) in layout.lanes.iter().zip(&changes).enumerate() {
                let old = old.get(l).copied().unwrap_or(0);
                let new = match code.read(&mut r, lane.width())? {
                    Coded::Small(z) => lane.apply(old, unzigzag(z)),
                    Coded::Full(v) => u32::try_from(v).ok().filter(|v| *v <= lane.max),
                }
                .ok_or(DecodeError::InvalidValue)?;
                if let Some(slot) = row.get_mut(l) {
                    *slot = new;
                }
            }
            // "Changed" with every lane equal is not how the encoder
            // writes it.
            if row.as_slice() == old {
                return Err(DecodeError::InvalidValue);
            }
        }
        kept_rows.push(base.keys.get(b).copied().unwrap_or(0), &row);
    }
    let added = r.get_gamma()?;
    // The decoder's work and memory: at most `MAX_CHUNK_ROWS` added rows
    // (and `max_rows`), each with a distinct key in the chunk's range, so
    // refused before anything is allocated. Not the bits left: a row can
    // cost no bit at all (consecutive keys, unchanged lanes: a world whose
    // players all stand on the spawn point).
    let span = hi
        .unwrap_or(key_max)
        .saturating_sub(lo)
        .saturating_add(u64::from(hi.is_none()));
    if added > span {
        return Err(DecodeError::InvalidValue);
    }
    if added > MAX_CHUNK_ROWS as u64 || added > max_rows as u64 {
        return Err(DecodeError::OverLimit);
    }
    let mut added_rows = Table::empty(width);
    if added > 0 {
        let gaps = Code::get(&mut r)?;
        let mut frames = Vec::with_capacity(width);
        for lane in layout.lanes {
            let base_value = r.get_bits(lane.width())?;
            let w = r.get_bits(6)? as u32;
            frames.push((base_value, w));
        }
        let mut next = lo;
        for i in 0..added {
            let key = match gaps.read(&mut r, key_bits)? {
                Coded::Small(gap) => next.checked_add(gap),
                Coded::Full(key) => Some(key).filter(|k| *k >= next),
            }
            .filter(|k| *k <= key_max && hi.is_none_or(|hi| *k < hi))
            .ok_or(DecodeError::InvalidValue)?;
            // `u64::MAX` is a key like any other, but only the last one.
            next = match key.checked_add(1) {
                Some(n) => n,
                None if i + 1 == added => key,
                None => return Err(DecodeError::InvalidValue),
            };
            for ((slot, lane), (base_value, w)) in row.iter_mut().zip(layout.lanes).zip(&frames) {
                let v = base_value
                    .checked_add(r.get_bits(*w)?)
                    .and_then(|v| u32::try_from(v).ok())
                    .filter(|v| *v <= lane.max)
                    .ok_or(DecodeError::InvalidValue)?;
                *slot = v;
            }
            added_rows.push(key, &row);
        }
    }
    r.finish()?;
    // Merge kept and added rows by key; a key in both is malformed.
    let mut rows = Table::empty(width);
    rows.keys.reserve(kept_rows.len() + added_rows.len());
    rows.lanes
        .reserve((kept_rows.len() + added_rows.len()) * width);
    let (mut k, mut a) = (0, 0);
    while k < kept_rows.len() || a < added_rows.len() {
        let (kk, ak) = (kept_rows.keys.get(k), added_rows.keys.get(a));
        let take_kept = match (kk, ak) {
            (Some(kk), Some(ak)) if kk == ak => return Err(DecodeError::DuplicateKey),
            (Some(kk), Some(ak)) => kk < ak,
            (Some(_), None) => true,
            _ => false,
        };
        if take_kept {
            rows.push(kk.copied().unwrap_or(0), kept_rows.row(k));
            k += 1;
        } else {
            rows.push(ak.copied().unwrap_or(0), added_rows.row(a));
            a += 1;
        }
    }
    Ok(ChunkRows { lo, hi, rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n.max(1)
        }
    }

    const LANES: [Lane; 5] = [
        Lane::upto(8_191_999),
        Lane::upto(8_191_999),
        Lane::wrapping(12),
        Lane::upto(1),
        Lane::bits(32),
    ];

    fn layout() -> Layout<'static> {
        Layout {
            key_bits: 32,
            lanes: &LANES,
        }
    }

    fn random_row(rng: &mut Rng) -> Vec<u32> {
        LANES
            .iter()
            .map(|l| (rng.next() % (u64::from(l.max) + 1)) as u32)
            .collect()
    }

    fn world(rng: &mut Rng, n: usize) -> Table {
        let mut t = Table::empty(LANES.len());
        let mut key = 0;
        for _ in 0..n {
            key += 1 + rng.below(3);
            t.push(key, &random_row(rng));
        }
        t
    }

    /// The next tick: most rows move a little, some jump, some vanish,
    /// some appear.
    fn step(rng: &mut Rng, base: &Table) -> Table {
        let mut t = Table::empty(LANES.len());
        let mut next_new = base.keys.last().copied().unwrap_or(0) + 1;
        for i in 0..base.len() {
            if rng.below(50) == 0 {
                continue;
            }
            let mut row = base.row(i).to_vec();
            match rng.below(4) {
                0 => {}
                1 => row = random_row(rng),
                _ => {
                    for (v, lane) in row.iter_mut().zip(&LANES) {
                        let d = rng.below(600) as i64 - 300;
                        *v = lane.apply(*v, d).unwrap_or(*v);
                    }
                }
            }
            t.push(base.keys[i], &row);
        }
        // New keys go at the end and in the gaps.
        let mut extra = Table::empty(LANES.len());
        for _ in 0..rng.below(5) {
            extra.push(next_new, &random_row(rng));
            next_new += 1 + rng.below(1000);
        }
        t.extend(&extra);
        t
    }

    fn encode(base: &Table, cur: &Table, budget_bits: usize) -> Vec<Bytes> {
        let mut out = Vec::new();
        DeltaEncoder::new()
            .encode(
                &layout(),
                base,
                cur,
                budget_bits,
                4096,
                |_, _, write| {
                    let mut buf = vec![0u8; budget_bits / 8 + 1];
                    let mut w = BitWriter::new(&mut buf);
                    write(&mut w);
                    let n = w.finish().expect("the plan fits the budget");
                    Bytes::copy_from_slice(&buf[..n])
                },
                &mut out,
            )
            .unwrap();
        out
    }

    fn apply(base: &Table, chunks: &[Bytes]) -> Table {
        let mut rows = Table::empty(LANES.len());
        let mut expect = Some(0);
        for chunk in chunks {
            let part = decode_chunk(&layout(), base, chunk, 1 << 20).unwrap();
            assert_eq!(Some(part.lo), expect);
            expect = part.hi;
            rows.extend(&part.rows);
        }
        assert_eq!(expect, None, "the last chunk has no end");
        rows
    }

    #[test]
    fn deltas_and_keyframes_rebuild_the_snapshot_exactly() {
        let mut rng = Rng(1);
        for round in 0..40 {
            let base = world(&mut rng, [0, 1, 7, 300][round % 4]);
            let cur = step(&mut rng, &base);
            for budget in [400, 1500, 9000, 1 << 20] {
                let chunks = encode(&base, &cur, budget);
                assert!(chunks.iter().all(|c| c.len() * 8 <= budget + 7));
                assert_eq!(apply(&base, &chunks), cur, "round {round}, budget {budget}");
                let empty = Table::empty(LANES.len());
                let keyframe = encode(&empty, &cur, budget);
                assert_eq!(apply(&empty, &keyframe), cur);
                // Every chunk alone: exactly the rows of its range.
                for chunk in &chunks {
                    let part = decode_chunk(&layout(), &base, chunk, 1 << 20).unwrap();
                    let range = cur.range(part.lo, part.hi);
                    assert_eq!(part.rows.keys, cur.keys[range]);
                }
            }
        }
    }

    #[test]
    fn an_unchanged_row_costs_one_bit() {
        let mut rng = Rng(2);
        let base = world(&mut rng, 1000);
        let chunks = encode(&base, &base, 1 << 20);
        let bytes: usize = chunks.iter().map(Bytes::len).sum();
        // 1000 bits of "unchanged", the range and the params.
        assert!(bytes <= 1000 / 8 + 16, "{bytes}");
    }

    #[test]
    fn codes_pick_the_cheapest_form() {
        let mut zeros = Stats::default();
        for _ in 0..100 {
            zeros.add(0);
        }
        zeros.add(5);
        let c = zeros.best(23);
        assert!(c.zero, "{c:?}");
        let mut spread = Stats::default();
        for v in 0..100 {
            spread.add(300 + v);
        }
        spread.add(1 << 20);
        let c = spread.best(23);
        assert!(!c.zero && c.escape && c.width == 9, "{c:?}");
        for v in [0u64, 1, 301, 1 << 20] {
            let mut buf = [0u8; 8];
            let mut w = BitWriter::new(&mut buf);
            c.write(&mut w, v, 77, 23);
            let bits = w.bit_position();
            assert_eq!(bits as u32, c.cost(v, 23));
            w.finish();
            let got = c.read(&mut BitReader::new(&buf), 23).unwrap();
            let expect = if bits_for(v) <= 9 {
                Coded::Small(v)
            } else {
                Coded::Full(77)
            };
            assert_eq!(got, expect);
        }
    }

    #[test]
    fn garbage_never_panics_and_never_applies_out_of_range() {
        let mut rng = Rng(3);
        let base = world(&mut rng, 50);
        let cur = step(&mut rng, &base);
        let good = encode(&base, &cur, 1 << 20);
        let mut bad = 0;
        for i in 0..20_000 {
            let mut bytes = good[0].to_vec();
            if i % 2 == 0 {
                let at = rng.below(bytes.len() as u64) as usize;
                bytes[at] ^= 1 << rng.below(8);
            } else {
                bytes = (0..rng.below(64)).map(|_| rng.next() as u8).collect();
            }
            match decode_chunk(&layout(), &base, &bytes, 1 << 16) {
                Ok(part) => {
                    for i in 0..part.rows.len() {
                        for (v, lane) in part.rows.row(i).iter().zip(&LANES) {
                            assert!(*v <= lane.max);
                        }
                    }
                    assert!(part.rows.keys.windows(2).all(|w| w[0] < w[1]));
                }
                Err(_) => bad += 1,
            }
        }
        assert!(bad > 10_000, "{bad}");
    }
}
