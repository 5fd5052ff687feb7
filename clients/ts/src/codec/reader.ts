/**
 * A cursor over untrusted input (src/wire/reader.rs). Every read is
 * bounds-checked and throws `DecodeError`; every length and count is
 * checked against the limits and the remaining bytes, and charged to the
 * allocation budget, before anything is allocated.
 */
import { DecodeError, fail } from './errors.js';
import { DEFAULT_LIMITS, type DecodeLimits } from './limits.js';
import { getUtf8 } from './utf8.js';
import { viewOf } from './view.js';

/** 2^64 − 1 as a float: what a `u64` product may not pass (`checked_mul`). */
const U64_MAX = 18446744073709551615;
/** Largest JavaScript array: a count past it of zero-size elements. */
const MAX_ARRAY = 0xffffffff;

export class Reader {
  /** The input. Generated decoders read it directly. */
  bytes: Uint8Array;
  /** A little-endian view of `bytes`. */
  view: DataView;
  /** The next byte to read. */
  pos: number;
  /** One past the last byte this reader may read (a tolerant body's end). */
  end: number;
  limits: DecodeLimits;
  depth: number;
  /** Bytes of the allocation budget left. */
  budget: number;

  constructor(bytes: Uint8Array, limits: DecodeLimits = DEFAULT_LIMITS, start = 0, end = bytes.length) {
    this.bytes = bytes;
    this.view = viewOf(bytes);
    this.pos = start;
    this.end = end;
    this.limits = limits;
    this.depth = 0;
    this.budget = limits.maxAlloc;
  }

  private static sharedReader: Reader | null = null;

  /**
   * The reader every top-level decode uses, reset over `bytes`: decoding
   * is synchronous and never nests a top-level decode, so one object serves.
   */
  static acquire(bytes: Uint8Array, limits: DecodeLimits): Reader {
    let r = Reader.sharedReader;
    if (r === null) {
      r = new Reader(bytes, limits);
      Reader.sharedReader = r;
      return r;
    }
    if (r.bytes !== bytes) {
      r.bytes = bytes;
      r.view = viewOf(bytes);
    }
    r.pos = 0;
    r.end = bytes.length;
    r.limits = limits;
    r.depth = 0;
    r.budget = limits.maxAlloc;
    return r;
  }

  /** Bytes not read yet. */
  remaining(): number {
    return this.end - this.pos;
  }

  /** Throws `TrailingBytes` unless every byte was read. */
  finish(): void {
    if (this.pos !== this.end) fail('TrailingBytes');
  }

  /** Skips `n` bytes and returns where they start. */
  take(n: number): number {
    const p = this.pos;
    if (this.end - p < n) fail('UnexpectedEnd');
    this.pos = p + n;
    return p;
  }

  /** The next `n` bytes, borrowed (a view into the input). */
  slice(n: number): Uint8Array {
    const p = this.take(n);
    return this.bytes.subarray(p, p + n);
  }

  u8(): number {
    const p = this.pos;
    if (p >= this.end) fail('UnexpectedEnd');
    this.pos = p + 1;
    return this.bytes[p]!;
  }

  i8(): number {
    return (this.u8() << 24) >> 24;
  }

  u16(): number {
    return this.view.getUint16(this.take(2), true);
  }

  i16(): number {
    return this.view.getInt16(this.take(2), true);
  }

  u32(): number {
    return this.view.getUint32(this.take(4), true);
  }

  i32(): number {
    return this.view.getInt32(this.take(4), true);
  }

  u64(): bigint {
    return this.view.getBigUint64(this.take(8), true);
  }

  i64(): bigint {
    return this.view.getBigInt64(this.take(8), true);
  }

  u128(): bigint {
    const p = this.take(16);
    return this.view.getBigUint64(p, true) | (this.view.getBigUint64(p + 8, true) << 64n);
  }

  i128(): bigint {
    return BigInt.asIntN(128, this.u128());
  }

  f32(): number {
    return this.view.getFloat32(this.take(4), true);
  }

  f64(): number {
    return this.view.getFloat64(this.take(8), true);
  }

  /** `00` false, `01` true, anything else `InvalidTag`. */
  bool(): boolean {
    const b = this.u8();
    if (b > 1) fail('InvalidTag');
    return b === 1;
  }

  /** A `char`: a Unicode scalar value as `u32` LE; a surrogate or past U+10FFFF is `InvalidValue`. */
  char(): string {
    const c = this.u32();
    if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) fail('InvalidValue');
    return String.fromCodePoint(c);
  }

  /**
   * A canonical varint, as a number: exact up to 2^53, rounded above
   * (lengths and counts that large fail their checks either way).
   */
  varint(): number {
    const b = this.bytes;
    const p = this.pos;
    if (p < this.end) {
      const b0 = b[p]!;
      if (b0 < 0x80) {
        this.pos = p + 1;
        return b0;
      }
      if (p + 1 < this.end) {
        const b1 = b[p + 1]!;
        if (b1 < 0x80 && b1 !== 0) {
          this.pos = p + 2;
          return (b0 & 0x7f) | (b1 << 7);
        }
      }
    }
    return this.varintSlow();
  }

  private varintSlow(): number {
    const b = this.bytes;
    const start = this.pos;
    const avail = this.end - start;
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10 && i < avail; i++) {
      const byte = b[start + i]!;
      const group = byte & 0x7f;
      if (i === 9 && group > 1) fail('VarintOverflow');
      value += group * scale;
      scale *= 128;
      if (byte < 0x80) {
        if (byte === 0 && i > 0) fail('NonCanonicalVarint');
        this.pos = start + i + 1;
        return value;
      }
    }
    return fail(avail >= 10 ? 'VarintOverflow' : 'UnexpectedEnd');
  }

  /** A canonical varint as an exact `u64`. */
  varintBig(): bigint {
    const start = this.pos;
    const small = this.varint();
    if (small <= Number.MAX_SAFE_INTEGER) return BigInt(small);
    // Re-read exactly; the form was checked above.
    let value = 0n;
    let shift = 0n;
    for (let i = start; i < this.pos; i++) {
      value |= BigInt(this.bytes[i]! & 0x7f) << shift;
      shift += 7n;
    }
    return value;
  }

  /** A varint that must fit a `u32` (a message id, an enum tag). */
  varintU32(): number {
    const v = this.varint();
    if (v > 0xffffffff) fail('VarintOverflow');
    return v;
  }

  /**
   * A `usize`: a varint that must fit the target's `usize`. In
   * JavaScript that is a safe integer (below 2^53), else `VarintOverflow`.
   */
  usize(): number {
    const v = this.varint();
    if (v > Number.MAX_SAFE_INTEGER) fail('VarintOverflow');
    return v;
  }

  /** An `isize`: a zigzag varint, a safe integer. */
  isize(): number {
    const z = this.varintBig();
    const v = BigInt.asIntN(64, (z >> 1n) ^ -(z & 1n));
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) fail('VarintOverflow');
    return Number(v);
  }

  /**
   * The length of a string or byte string, checked against `maxString`,
   * then the input, then (where `allocates`) the budget.
   */
  byteLen(allocates: boolean): number {
    const len = this.varint();
    if (len > this.limits.maxString) fail('OverLimit');
    if (len > this.end - this.pos) fail('LengthExceedsRemaining');
    if (allocates) this.charge(len);
    return len;
  }

  /** A UTF-8 string. */
  str(): string {
    const len = this.byteLen(true);
    const p = this.pos;
    this.pos = p + len;
    return getUtf8(this.bytes, p, p + len);
  }

  /** A byte string (`&[u8]`, `Bytes`), copied. */
  byteString(): Uint8Array {
    const len = this.byteLen(true);
    const p = this.pos;
    this.pos = p + len;
    return this.bytes.slice(p, p + len);
  }

  /**
   * The element count of a collection (a varint), checked before anything
   * is allocated: against `maxCollection`, against the input (each element
   * takes at least `minWire` bytes) and against the budget (`memSize` each).
   */
  count(minWire: number, memSize: number): number {
    return this.checkCount(this.varint(), minWire, memSize);
  }

  /** The 4-byte count of a run of blittable structs (§5), checked as any count. */
  wideCount(minWire: number, memSize: number): number {
    const p = this.take(4);
    return this.checkCount(this.view.getUint32(p, true), minWire, memSize);
  }

  private checkCount(count: number, minWire: number, memSize: number): number {
    if (count > this.limits.maxCollection) fail('OverLimit');
    const wire = count * minWire;
    if (wire > U64_MAX) fail('OverLimit');
    if (wire > this.end - this.pos) fail('LengthExceedsRemaining');
    const mem = count * memSize;
    if (mem > U64_MAX) fail('OverLimit');
    this.charge(mem);
    if (count > MAX_ARRAY) fail('OverLimit');
    return count;
  }

  /** Charges `bytes` of memory against the budget. */
  charge(bytes: number): void {
    if (bytes > this.budget) fail('OverLimit');
    this.budget -= bytes;
  }

  /** Enters one level of nesting. */
  enter(): void {
    if (this.depth >= this.limits.maxDepth) fail('DepthExceeded');
    this.depth++;
  }

  /** Leaves one level of nesting. */
  leave(): void {
    if (this.depth > 0) this.depth--;
  }

  /**
   * A tolerant body: reads its varint length and narrows the reader to it;
   * returns the outer end, for `join`.
   */
  splitBody(): number {
    const len = this.varint();
    if (len > this.limits.maxMessage) fail('OverLimit');
    if (len > this.end - this.pos) fail('LengthExceedsRemaining');
    const outer = this.end;
    this.end = this.pos + len;
    return outer;
  }

  /** Leaves a tolerant body: skips what is left of it (fields a newer writer appended). */
  join(outerEnd: number): void {
    this.pos = this.end;
    this.end = outerEnd;
  }

  /** Whether the reader is at its end (a tolerant body's fields default there). */
  atEnd(): boolean {
    return this.pos >= this.end;
  }
}

export { DecodeError };
