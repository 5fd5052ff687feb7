/**
 * The delta codec (docs/WIRE.md §12.10, src/proto/delta/codec.rs): a
 * snapshot's items against a baseline's, cut into chunks by key range,
 * each decodable alone by a client that holds the baseline.
 *
 * ```text
 * lo:K  last:1  [hi:K]                    key range lo..hi (last: no upper bound)
 * removed:γ  ( gap:γ )*                   baseline rows of the range that are gone
 * [ code:8 ×lanes ]                       if any baseline row of the range is kept
 * ( changed:1 [ value ×lanes ] )*         each kept row, in key order
 * added:γ                                 rows new in the range
 * [ code:8  ( base:F  width:6 ) ×lanes ]  if any row is added
 * ( key  lanes )*                         each added row, in key order
 * ```
 *
 * A code is `zero:1 escape:1 width:6`, each field least significant bit
 * first, in that order. The decoder is what a client needs; the encoder is
 * here for tests and for servers written in TypeScript.
 */
import { BitReader, BitWriter, bitsFor, gammaLen } from '../codec/bits.js';
import { fail } from '../codec/errors.js';
import { laneApply, laneDiff, unzigzag, zigzag, type LaneSpec } from './lanes.js';
import { Table } from './table.js';

/** What every chunk of one encode shares: the key's width and the lanes. */
export interface Layout {
  readonly keyBits: number;
  readonly lanes: readonly LaneSpec[];
}

/** How a stream of unsigned values is written. */
export interface Code {
  /** A leading bit says whether the value is zero (nothing follows); a non-zero value is stored less one. */
  readonly zero: boolean;
  /** A bit says whether the value fits `width` bits or the absolute value follows in full. */
  readonly escape: boolean;
  readonly width: number;
}

function getCode(r: BitReader): Code {
  const zero = r.getBool();
  const escape = r.getBool();
  return { zero, escape, width: r.getBits(6) };
}

function putCode(w: BitWriter, c: Code): void {
  w.putBool(c.zero);
  w.putBool(c.escape);
  w.putBits(c.width, 6);
}

/** Set by `readCoded`: whether the value read was the absolute value. */
let codedFull = false;

function readCoded(c: Code, r: BitReader, full: number, fullBig: boolean): number {
  codedFull = false;
  if (c.zero && !r.getBool()) return 0;
  if (c.escape && r.getBool()) {
    codedFull = true;
    return fullBig ? safeKey(r.getBitsBig(full)) : r.getBits(full);
  }
  const stored = r.getBits(c.width);
  return c.zero ? stored + 1 : stored;
}

/** Bits `value` takes under a code, with `full` bits for an escape. */
function codeCost(c: Code, value: number, full: number): number {
  const zero = c.zero ? 1 : 0;
  if (c.zero && value === 0) return 1;
  const stored = c.zero ? value - 1 : value;
  const esc = c.escape ? 1 : 0;
  return bitsFor(stored) <= c.width ? zero + esc + c.width : zero + esc + full;
}

function writeCoded(c: Code, w: BitWriter, value: number, absolute: number, full: number): void {
  if (c.zero) {
    w.putBool(value !== 0);
    if (value === 0) return;
  }
  const stored = c.zero ? value - 1 : value;
  const fits = bitsFor(stored) <= c.width;
  if (c.escape) w.putBool(!fits);
  if (fits) w.putBits(stored, c.width);
  else if (full > 53) w.putBitsBig(BigInt(absolute), full);
  else w.putBits(absolute, full);
}

/** A key of more than 53 bits: exact, or `InvalidValue` past 2^53 − 1 (a TypeScript limit). */
function safeKey(v: bigint): number {
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) fail('InvalidValue');
  return Number(v);
}

function readKey(r: BitReader, keyBits: number): number {
  return keyBits > 53 ? safeKey(r.getBitsBig(keyBits)) : r.getBits(keyBits);
}

function putKey(w: BitWriter, key: number, keyBits: number): void {
  if (keyBits > 53) w.putBitsBig(BigInt(key), keyBits);
  else w.putBits(key, keyBits);
}

/** A chunk applied: the rows of its key range at the new snapshot. */
export interface ChunkRows {
  readonly lo: number;
  /** `null`: the last chunk, no upper bound. */
  readonly hi: number | null;
  readonly rows: Table;
}

/**
 * Applies one chunk's bits (`bytes[start, end)`) to `base` (empty for a
 * keyframe). Throws `DecodeError` for anything malformed; nothing is applied.
 */
export function decodeChunk(layout: Layout, base: Table, bytes: Uint8Array, start: number, end: number, maxRows: number): ChunkRows {
  const lanes = layout.lanes;
  const width = lanes.length;
  const keyBits = layout.keyBits;
  const keyMax = keyBits >= 53 ? Number.MAX_SAFE_INTEGER : 2 ** keyBits - 1;
  const r = new BitReader(bytes, start, end);
  const lo = readKey(r, keyBits);
  const last = r.getBool();
  let hi: number | null = null;
  if (!last) {
    hi = readKey(r, keyBits);
    if (hi <= lo) fail('InvalidValue');
  }
  const [rs, re] = base.range(lo, hi);
  const inRange = re - rs;
  const removed = r.getGamma();
  if (removed > inRange) fail('InvalidValue');
  const gone = new Uint8Array(inRange);
  let next = 0;
  for (let i = 0; i < removed; i++) {
    const index = next + r.getGamma();
    if (!(index < inRange)) fail('InvalidValue');
    gone[index] = 1;
    next = index + 1;
  }
  const kept = inRange - removed;
  const changes: Code[] = [];
  if (kept > 0) for (let l = 0; l < width; l++) changes.push(getCode(r));
  const keptRows = new Table(width);
  const row: number[] = new Array<number>(width).fill(0);
  for (let offset = 0; offset < inRange; offset++) {
    if (gone[offset] === 1) continue;
    const b = rs + offset;
    for (let l = 0; l < width; l++) row[l] = base.at(b, l);
    if (r.getBool()) {
      let same = true;
      for (let l = 0; l < width; l++) {
        const lane = lanes[l]!;
        const old = row[l]!;
        const v = readCoded(changes[l]!, r, lane.width, false);
        const nv = codedFull ? (v <= lane.max ? v : null) : laneApply(lane, old, unzigzag(v));
        if (nv === null) fail('InvalidValue');
        if (nv !== old) same = false;
        row[l] = nv;
      }
      // "Changed" with every lane equal is not how the encoder writes it.
      if (same) fail('InvalidValue');
    }
    keptRows.push(base.keys[b]!, row);
  }
  const added = r.getGamma();
  // The decoder's work and memory: at most MAX_CHUNK_ROWS added rows (and
  // maxRows), each with a distinct key in the chunk's range, so refused
  // before anything is allocated. Not the bits left: a row can cost no bit
  // at all (consecutive keys, unchanged lanes). As the Rust decoder.
  const span = (hi ?? keyMax) - lo + (hi === null ? 1 : 0);
  if (added > span) fail('InvalidValue');
  if (added > MAX_CHUNK_ROWS || added > maxRows) fail('OverLimit');
  const addedRows = new Table(width);
  if (added > 0) {
    const gaps = getCode(r);
    const frames: [number, number][] = [];
    for (const lane of lanes) {
      const baseValue = r.getBits(lane.width);
      frames.push([baseValue, r.getBits(6)]);
    }
    let nextKey = lo;
    for (let i = 0; i < added; i++) {
      const v = readCoded(gaps, r, keyBits, keyBits > 53);
      const key = codedFull ? (v >= nextKey ? v : -1) : nextKey + v;
      if (key < 0 || key > keyMax || !Number.isSafeInteger(key) || (hi !== null && key >= hi)) fail('InvalidValue');
      nextKey = key + 1;
      for (let l = 0; l < width; l++) {
        const [baseValue, w] = frames[l]!;
        const v2 = baseValue + r.getBits(w);
        if (!(v2 <= 0xffffffff && v2 <= lanes[l]!.max)) fail('InvalidValue');
        row[l] = v2;
      }
      addedRows.push(key, row);
    }
  }
  r.finish();
  // Kept and added rows by key; a key in both is malformed.
  const rows = new Table(width);
  let k = 0;
  let a = 0;
  while (k < keptRows.length || a < addedRows.length) {
    const kk = k < keptRows.length ? keptRows.keys[k]! : null;
    const ak = a < addedRows.length ? addedRows.keys[a]! : null;
    if (kk !== null && ak !== null && kk === ak) fail('DuplicateKey');
    if (kk !== null && (ak === null || kk < ak)) {
      rows.pushFrom(keptRows, k++);
    } else {
      rows.pushFrom(addedRows, a++);
    }
  }
  return { lo, hi, rows };
}

// ------------------------------------------------------------------ encoder

/** Histogram of bit lengths of the values a code will write. */
class Stats {
  readonly plain = new Array<number>(65).fill(0);
  readonly nonzero = new Array<number>(65).fill(0);
  zeros = 0;

  add(v: number): void {
    this.plain[bitsFor(v)]!++;
    if (v === 0) this.zeros++;
    else this.nonzero[bitsFor(v - 1)]!++;
  }

  /** The cheapest code for these values, with `full` bits for an escape. */
  best(full: number): Code {
    let bestCost = Infinity;
    let best: Code = { zero: false, escape: false, width: 0 };
    const consider = (cost: number, code: Code): void => {
      if (cost < bestCost) {
        bestCost = cost;
        best = code;
      }
    };
    for (const zero of [false, true]) {
      const hist = zero ? this.nonzero : this.plain;
      const extra = zero ? 1 : 0;
      const fixed = zero ? this.zeros : 0;
      let count = 0;
      let maxBits = 0;
      hist.forEach((n, i) => {
        count += n;
        if (n > 0) maxBits = i;
      });
      if (maxBits <= 63) consider(fixed + count * (extra + maxBits), { zero, escape: false, width: maxBits });
      let fit = 0;
      for (let w = 0; w <= 63; w++) {
        fit += hist[w]!;
        consider(fixed + fit * (extra + 1 + w) + (count - fit) * (extra + 1 + full), { zero, escape: true, width: w });
      }
    }
    return best;
  }
}

type Event = { kind: 'removed'; b: number } | { kind: 'kept'; b: number; c: number; changed: boolean } | { kind: 'added'; c: number };

interface Codes {
  changes: Code[];
  gaps: Code;
  added: [number, number][];
}

/** One item is over the chunk budget, or the snapshot needs more chunks than allowed. */
export class DeltaTooLarge extends Error {
  constructor() {
    super('delta snapshot too large to chunk');
    this.name = 'DeltaTooLarge';
  }
}

/**
 * Encodes `cur` against `base` (empty for a keyframe) into chunks of at
 * most `budgetBits` bits each; `emit(index, count, write)` builds each
 * chunk from a writer of its bits.
 */
export function encodeDelta<T>(
  layout: Layout,
  base: Table,
  cur: Table,
  budgetBits: number,
  maxChunks: number,
  emit: (index: number, count: number, write: (w: BitWriter) => void) => T,
): T[] {
  const events = merge(base, cur);
  const codes = choose(layout, base, cur, events);
  const cuts = plan(layout, base, cur, events, codes, budgetBits, maxChunks);
  const out: T[] = [];
  cuts.forEach((cut, i) => {
    const endEvent = i + 1 < cuts.length ? cuts[i + 1]!.start : events.length;
    const hi = i + 1 < cuts.length ? cuts[i + 1]!.lo : null;
    out.push(emit(i, cuts.length, (w) => writeChunk(w, layout, base, cur, codes, events.slice(cut.start, endEvent), cut.lo, hi)));
  });
  return out;
}

function merge(base: Table, cur: Table): Event[] {
  const events: Event[] = [];
  let b = 0;
  let c = 0;
  while (b < base.length || c < cur.length) {
    if (c >= cur.length || (b < base.length && base.keys[b]! < cur.keys[c]!)) {
      events.push({ kind: 'removed', b: b++ });
    } else if (b >= base.length || cur.keys[c]! < base.keys[b]!) {
      events.push({ kind: 'added', c: c++ });
    } else {
      events.push({ kind: 'kept', b, c, changed: !base.rowsEqual(b, cur, c) });
      b++;
      c++;
    }
  }
  return events;
}

function choose(layout: Layout, base: Table, cur: Table, events: Event[]): Codes {
  const n = layout.lanes.length;
  const changes = Array.from({ length: n }, () => new Stats());
  const gaps = new Stats();
  const added: [number, number][] = Array.from({ length: n }, () => [Infinity, 0] as [number, number]);
  let prev: number | null = null;
  for (const e of events) {
    if (e.kind === 'kept' && e.changed) {
      layout.lanes.forEach((lane, l) => changes[l]!.add(zigzag(laneDiff(lane, base.at(e.b, l), cur.at(e.c, l)))));
    } else if (e.kind === 'added') {
      const key = cur.keys[e.c]!;
      gaps.add(key - (prev === null ? 0 : prev + 1));
      prev = key;
      for (let l = 0; l < n; l++) {
        const v = cur.at(e.c, l);
        added[l]![0] = Math.min(added[l]![0], v);
        added[l]![1] = Math.max(added[l]![1], v);
      }
    }
  }
  return {
    changes: changes.map((s, l) => s.best(layout.lanes[l]!.width)),
    gaps: gaps.best(layout.keyBits),
    added: added.map(([lo, hi]) => (lo > hi ? [0, 0] : [lo, bitsFor(hi - lo)])),
  };
}

function eventKey(e: Event, base: Table, cur: Table): number {
  return e.kind === 'added' ? cur.keys[e.c]! : base.keys[e.b]!;
}

/** The most rows one chunk adds (Rust's `delta::MAX_CHUNK_ROWS`). */
export const MAX_CHUNK_ROWS = 4096;

interface Cut {
  start: number;
  lo: number;
}

class ChunkState {
  baseRows = 0;
  lastRemoved: number | null = null;
  anyKept = false;
  anyAdded = false;
  added = 0;
  nextKey: number;

  constructor(lo: number) {
    this.nextKey = lo;
  }

  cost(e: Event, layout: Layout, base: Table, cur: Table, codes: Codes, keptParams: number, addedParams: number): number {
    switch (e.kind) {
      case 'removed':
        return gammaLen(this.baseRows - (this.lastRemoved === null ? 0 : this.lastRemoved + 1));
      case 'kept': {
        let bits = 1;
        if (e.changed) {
          layout.lanes.forEach((lane, l) => {
            bits += codeCost(codes.changes[l]!, zigzag(laneDiff(lane, base.at(e.b, l), cur.at(e.c, l))), lane.width);
          });
        }
        return (this.anyKept ? 0 : keptParams) + bits;
      }
      case 'added': {
        const key = cur.keys[e.c]!;
        const gap = Math.max(0, key - this.nextKey);
        const lanes = codes.added.reduce((s, [, w]) => s + w, 0);
        return (this.anyAdded ? 0 : addedParams) + codeCost(codes.gaps, gap, layout.keyBits) + lanes;
      }
    }
  }

  take(e: Event, cur: Table): void {
    switch (e.kind) {
      case 'removed':
        this.lastRemoved = this.baseRows;
        this.baseRows++;
        break;
      case 'kept':
        this.anyKept = true;
        this.baseRows++;
        break;
      case 'added':
        this.anyAdded = true;
        this.added++;
        this.nextKey = cur.keys[e.c]! + 1;
        break;
    }
  }
}

function plan(layout: Layout, base: Table, cur: Table, events: Event[], codes: Codes, budget: number, maxChunks: number): Cut[] {
  const keyBits = layout.keyBits;
  const lanes = layout.lanes.length;
  const keptParams = 8 * lanes;
  const addedParams = 8 + layout.lanes.reduce((s, l) => s + l.width + 6, 0);
  const counts = 2 * gammaLen(events.length);
  const fixed = 2 * keyBits + 1 + counts;
  const cuts: Cut[] = [{ start: 0, lo: 0 }];
  let state = new ChunkState(0);
  let bits = fixed;
  events.forEach((e, i) => {
    const key = eventKey(e, base, cur);
    let cost = state.cost(e, layout, base, cur, codes, keptParams, addedParams);
    // A chunk adds at most MAX_CHUNK_ROWS rows, whatever they cost in bits
    // (rows at one point with consecutive keys cost none): the decoder's
    // bound on its work.
    const full = e.kind === 'added' && state.added === MAX_CHUNK_ROWS;
    if ((full || bits + cost > budget) && i > 0 && cuts[cuts.length - 1]!.start < i) {
      cuts.push({ start: i, lo: key });
      if (cuts.length > maxChunks) throw new DeltaTooLarge();
      state = new ChunkState(key);
      bits = fixed;
      cost = state.cost(e, layout, base, cur, codes, keptParams, addedParams);
    }
    if (bits + cost > budget) throw new DeltaTooLarge();
    state.take(e, cur);
    bits += cost;
  });
  return cuts;
}

function writeChunk(w: BitWriter, layout: Layout, base: Table, cur: Table, codes: Codes, events: Event[], lo: number, hi: number | null): void {
  const keyBits = layout.keyBits;
  putKey(w, lo, keyBits);
  w.putBool(hi === null);
  if (hi !== null) putKey(w, hi, keyBits);
  const removed = events.filter((e) => e.kind === 'removed').length;
  w.putGamma(removed);
  let index = 0;
  let last: number | null = null;
  let kept = false;
  for (const e of events) {
    if (e.kind === 'removed') {
      w.putGamma(index - (last === null ? 0 : last + 1));
      last = index;
      index++;
    } else if (e.kind === 'kept') {
      kept = true;
      index++;
    }
  }
  if (kept) for (const c of codes.changes) putCode(w, c);
  for (const e of events) {
    if (e.kind !== 'kept') continue;
    w.putBool(e.changed);
    if (!e.changed) continue;
    layout.lanes.forEach((lane, l) => {
      const nv = cur.at(e.c, l);
      writeCoded(codes.changes[l]!, w, zigzag(laneDiff(lane, base.at(e.b, l), nv)), nv, lane.width);
    });
  }
  const added = events.filter((e) => e.kind === 'added');
  w.putGamma(added.length);
  if (added.length === 0) return;
  putCode(w, codes.gaps);
  layout.lanes.forEach((lane, l) => {
    w.putBits(codes.added[l]![0], lane.width);
    w.putBits(codes.added[l]![1], 6);
  });
  let next = lo;
  for (const e of added) {
    if (e.kind !== 'added') continue;
    const key = cur.keys[e.c]!;
    writeCoded(codes.gaps, w, key - next, key, keyBits);
    next = key + 1;
    for (let l = 0; l < layout.lanes.length; l++) w.putBits(cur.at(e.c, l) - codes.added[l]![0], codes.added[l]![1]);
  }
}
