/**
 * The client's side of delta snapshots (src/proto/delta/receiver.rs):
 * chunks applied to the baselines the client holds, reassembled per
 * snapshot, and the acks that tell the server which baselines it may use.
 */
import { DecodeError } from '../codec/errors.js';
import { DEFAULT_LIMITS, type DecodeLimits } from '../codec/limits.js';
import { Reader } from '../codec/reader.js';
import type { DeltaHeader, SnapshotAck } from '../session/datagram.js';
import { MAX_CHUNKS } from '../session/snapshot.js';
import { decodeChunk, type ChunkRows, type Layout } from './codec.js';
import type { LaneSpec } from './lanes.js';
import { Table } from './table.js';

/** Snapshots the server keeps to encode against (`DEFAULT_HISTORY`). */
export const DEFAULT_HISTORY = 128;
/** Sequence numbers a receiver keeps whole snapshots beyond its history. */
const SLACK = 64;

/** Lanes written into or read from a flat array. */
export type LaneBuffer = { [index: number]: number };

/**
 * What the receiver needs of a snapshot type and its items: generated as
 * `<Message>Delta` for a snapshot message whose items have a key and lanes.
 */
export interface DeltaCodec<S, I> {
  readonly ID: number;
  /** Bits of the key: 8, 16, 32 or 64. */
  readonly keyBits: number;
  /** The lanes of an item beside its key. */
  readonly lanes: readonly LaneSpec[];
  key(item: I): number;
  writeLanes(item: I, out: LaneBuffer, at: number): void;
  /** The item of `key` and these lanes; `DecodeError('InvalidValue')` if a field refuses them. */
  readLanes(key: number, lanes: ArrayLike<number>, at: number): I;
  items(snapshot: S): I[];
  withItems(header: S, items: I[]): S;
  /** Decodes the header: the message with no items. */
  decodeHeader(r: Reader): S;
  /** The header's tick, or null: the sequence number stands for it. */
  tick(snapshot: S): number | null;
  /** The state `t` of the way from `a` to `b`. */
  interpolate(a: I, b: I, t: number): I;
}

/** One delta chunk as a client receives it (`ClientSession.pollSnapshot`). */
export interface SnapshotChunk {
  readonly header: DeltaHeader;
  /** The message id. */
  readonly id: number;
  /** `id + delta body`. */
  readonly message: Uint8Array;
  /** Where the body starts in `message`. */
  readonly bodyStart: number;
}

export type ApplyErrorKind = 'WrongType' | 'MissingBaseline' | 'Duplicate' | 'Stale' | 'Malformed';

/** Why a chunk was not applied: drop it (the next snapshot comes within a tick). */
export class ApplyError extends Error {
  readonly kind: ApplyErrorKind;
  /** `Malformed`: the decode error. */
  readonly decodeError: DecodeError | undefined;
  /** `WrongType`: the id; `MissingBaseline`: the baseline. */
  readonly value: number | undefined;

  constructor(kind: ApplyErrorKind, detail?: { cause?: DecodeError; value?: number }) {
    super(kind === 'Malformed' && detail?.cause !== undefined ? `malformed chunk: ${detail.cause.message}` : kind);
    this.name = 'ApplyError';
    this.kind = kind;
    this.decodeError = detail?.cause;
    this.value = detail?.value;
  }
}

/** A chunk that was applied. */
export interface Applied {
  readonly seq: number;
  readonly tick: number;
  readonly baseline: number;
  readonly chunk: number;
  readonly chunks: number;
  /** Chunks of the snapshot applied so far, this one included. */
  readonly received: number;
  /** The snapshot is whole: a baseline from now on, and the next `ack` says so. */
  readonly complete: boolean;
}

export type ApplyResult<I> = { readonly ok: true; readonly applied: Applied; readonly items: I[] } | { readonly ok: false; readonly error: ApplyError };

/** A snapshot as reassembled so far. */
export interface Assembled<S> {
  readonly seq: number;
  readonly tick: number;
  readonly received: number;
  readonly chunks: number;
  readonly snapshot: S;
}

export interface ReceiverStats {
  applied: number;
  completed: number;
  missingBaseline: number;
  dropped: number;
  malformed: number;
}

interface Assembly {
  baseline: number;
  chunks: number;
  received: number;
  tick: number;
  header: Uint8Array;
  parts: (ChunkRows | null)[];
}

interface Whole {
  tick: number;
  chunks: number;
  header: Uint8Array;
  rows: Table;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Reassembles one snapshot type's delta chunks: applies each to the
 * baseline it names (never to one it does not hold), keeps every whole
 * snapshot of the last `history` sequence numbers (plus 64) as a baseline,
 * and says what it holds in `ack()`.
 */
export class DeltaReceiver<S, I> {
  private readonly codec: DeltaCodec<S, I>;
  private readonly history: number;
  private readonly layout: Layout;
  private readonly limits: DecodeLimits;
  private readonly pending = new Map<number, Assembly>();
  private readonly whole = new Map<number, Whole>();
  private newest = 0;
  private readonly empty: Table;
  private readonly counters: ReceiverStats = { applied: 0, completed: 0, missingBaseline: 0, dropped: 0, malformed: 0 };

  constructor(codec: DeltaCodec<S, I>, history = DEFAULT_HISTORY, limits: DecodeLimits = DEFAULT_LIMITS) {
    this.codec = codec;
    this.history = Math.max(history, 1);
    this.layout = { keyBits: codec.keyBits, lanes: codec.lanes };
    this.limits = limits;
    this.empty = new Table(codec.lanes.length);
  }

  /** Applies one chunk; on success also returns its items (its key range at its snapshot). */
  handleChunk(chunk: SnapshotChunk): ApplyResult<I> {
    let result: ApplyResult<I>;
    try {
      result = this.apply(chunk);
    } catch (e) {
      if (e instanceof ApplyError) result = { ok: false, error: e };
      else if (e instanceof DecodeError) result = { ok: false, error: new ApplyError('Malformed', { cause: e }) };
      else throw e;
    }
    if (result.ok) {
      this.counters.applied++;
      if (result.applied.complete) this.counters.completed++;
    } else if (result.error.kind === 'MissingBaseline') {
      this.counters.missingBaseline++;
    } else if (result.error.kind === 'Malformed') {
      this.counters.malformed++;
    } else {
      this.counters.dropped++;
    }
    return result;
  }

  private apply(chunk: SnapshotChunk): ApplyResult<I> {
    const h = chunk.header;
    if (chunk.id !== this.codec.ID) throw new ApplyError('WrongType', { value: chunk.id });
    if (h.seq + this.history <= this.newest) throw new ApplyError('Stale');
    if (this.whole.has(h.seq)) throw new ApplyError('Duplicate');
    const pendingAssembly = this.pending.get(h.seq);
    if (pendingAssembly !== undefined) {
      if (pendingAssembly.baseline !== h.baseline || pendingAssembly.chunks !== h.chunks) {
        throw new ApplyError('Malformed', { cause: new DecodeError('InvalidValue') });
      }
      if (pendingAssembly.parts[h.chunk] !== null && pendingAssembly.parts[h.chunk] !== undefined) throw new ApplyError('Duplicate');
    }
    if (h.chunks > MAX_CHUNKS) throw new ApplyError('Malformed', { cause: new DecodeError('OverLimit') });
    let base: Table;
    if (h.baseline === 0) {
      base = this.empty;
    } else {
      const w = this.whole.get(h.baseline);
      if (w === undefined) throw new ApplyError('MissingBaseline', { value: h.baseline });
      base = w.rows;
    }
    // The header: the message with no items, then the bits.
    const bytes = chunk.message;
    const r = new Reader(bytes, this.limits, chunk.bodyStart, bytes.length);
    const header = this.codec.decodeHeader(r);
    if (this.codec.items(header).length !== 0) throw new DecodeError('InvalidValue');
    const headerBytes = bytes.slice(chunk.bodyStart, r.pos);
    const rows = decodeChunk(this.layout, base, bytes, r.pos, bytes.length, this.limits.maxCollection);
    const last = h.chunk + 1 === h.chunks;
    if ((h.chunk === 0 && rows.lo !== 0) || last !== (rows.hi === null)) throw new DecodeError('InvalidValue');
    const items = this.toItems(rows.rows);
    const tick = this.codec.tick(header) ?? h.seq;
    let assembly = this.pending.get(h.seq);
    if (assembly === undefined) {
      assembly = { baseline: h.baseline, chunks: h.chunks, received: 0, tick, header: headerBytes, parts: new Array<ChunkRows | null>(h.chunks).fill(null) };
      this.pending.set(h.seq, assembly);
    }
    if (!sameBytes(assembly.header, headerBytes)) throw new DecodeError('InvalidValue');
    assembly.parts[h.chunk] = rows;
    assembly.received++;
    const received = assembly.received;
    const complete = received === h.chunks;
    this.newest = Math.max(this.newest, h.seq);
    if (complete) this.complete(h.seq);
    this.prune();
    return { ok: true, applied: { seq: h.seq, tick, baseline: h.baseline, chunk: h.chunk, chunks: h.chunks, received, complete }, items };
  }

  private toItems(rows: Table): I[] {
    const out: I[] = [];
    const w = rows.width;
    for (let i = 0; i < rows.length; i++) out.push(this.codec.readLanes(rows.keys[i]!, rows.lanes, i * w));
    return out;
  }

  /** Joins a snapshot's chunks, which must tile the key space in order. */
  private complete(seq: number): void {
    const assembly = this.pending.get(seq);
    if (assembly === undefined) return;
    this.pending.delete(seq);
    const rows = new Table(this.codec.lanes.length);
    let expect: number | null = 0;
    for (const part of assembly.parts) {
      if (part === null) throw new DecodeError('UnexpectedEnd');
      if (expect !== part.lo) throw new DecodeError('InvalidValue');
      rows.extend(part.rows);
      expect = part.hi;
    }
    this.whole.set(seq, { tick: assembly.tick, chunks: assembly.chunks, header: assembly.header, rows });
  }

  private prune(): void {
    const floor = Math.max(0, this.newest - this.history);
    for (const seq of [...this.pending.keys()]) if (seq <= floor) this.pending.delete(seq);
    const newestWhole = this.newestComplete();
    const floor2 = Math.max(0, floor - SLACK);
    for (const seq of [...this.whole.keys()]) if (seq <= floor2 && seq !== newestWhole) this.whole.delete(seq);
  }

  /** What this client holds, to send to the server (`ClientSession.sendAcks`). */
  ack(): SnapshotAck {
    const newest = this.newestComplete();
    let held = 0n;
    for (const seq of this.whole.keys()) {
      if (seq < newest && seq >= newest - 64) held |= 1n << BigInt(newest - seq - 1);
    }
    return { id: this.codec.ID, newest, held };
  }

  /** The newest whole snapshot's sequence number (0: none yet). */
  newestComplete(): number {
    let n = 0;
    for (const seq of this.whole.keys()) if (seq > n) n = seq;
    return n;
  }

  /** The snapshot `seq` as reassembled so far (whole or in part), if any of it is held. */
  snapshot(seq: number): Assembled<S> | null {
    const w = this.whole.get(seq);
    if (w !== undefined) {
      const header = this.codec.decodeHeader(new Reader(w.header, this.limits));
      return { seq, tick: w.tick, received: w.chunks, chunks: w.chunks, snapshot: this.codec.withItems(header, this.toItems(w.rows)) };
    }
    const a = this.pending.get(seq);
    if (a === undefined) return null;
    const rows = new Table(this.codec.lanes.length);
    for (const part of a.parts) if (part !== null) rows.extend(part.rows);
    const header = this.codec.decodeHeader(new Reader(a.header, this.limits));
    return { seq, tick: a.tick, received: a.received, chunks: a.chunks, snapshot: this.codec.withItems(header, this.toItems(rows)) };
  }

  /** The newest whole snapshot. */
  latest(): Assembled<S> | null {
    const n = this.newestComplete();
    return n === 0 ? null : this.snapshot(n);
  }

  stats(): Readonly<ReceiverStats> {
    return { ...this.counters };
  }
}

/** The table of `items` for the encoder (tests, TypeScript servers): sorted by key. */
export function tableOf<S, I>(codec: DeltaCodec<S, I>, items: readonly I[]): Table {
  const width = codec.lanes.length;
  const sorted = [...items].sort((a, b) => codec.key(a) - codec.key(b));
  const t = new Table(width);
  const row = new Array<number>(width).fill(0);
  for (const item of sorted) {
    codec.writeLanes(item, row, 0);
    t.push(codec.key(item), row);
  }
  return t;
}

export type { LaneSpec };
