/**
 * Small pieces generated codecs call: checked scalar conversions, 128-bit
 * and zigzag integers, map bookkeeping (budget charges as the Rust decoder
 * makes them, key order, repeated keys) and float bits for lanes.
 */
import { fail } from './errors.js';
import { putVarint, putVarintBig, varintLen, varintLenBig } from './varint.js';

/** A `bool` byte: `00`, `01`, else `InvalidTag`. */
export function boolOf(x: number): boolean {
  if (x > 1) fail('InvalidTag');
  return x === 1;
}

/** A `char`: a Unicode scalar value, else `InvalidValue`. */
export function charOf(c: number): string {
  if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) fail('InvalidValue');
  return String.fromCodePoint(c);
}

/** The scalar value of a one-character string (a `char` to encode). */
export function charCode(s: string): number {
  return s.codePointAt(0) ?? 0;
}

/** A `NonZero*`: zero is `InvalidValue`. */
export function nonZero(x: number): number {
  if (x === 0) fail('InvalidValue');
  return x;
}

export function nonZeroBig(x: bigint): bigint {
  if (x === 0n) fail('InvalidValue');
  return x;
}

export function getU128(dv: DataView, at: number): bigint {
  return dv.getBigUint64(at, true) | (dv.getBigUint64(at + 8, true) << 64n);
}

export function getI128(dv: DataView, at: number): bigint {
  return BigInt.asIntN(128, getU128(dv, at));
}

export function putU128(dv: DataView, at: number, v: bigint): void {
  const u = BigInt.asUintN(128, v);
  dv.setBigUint64(at, BigInt.asUintN(64, u), true);
  dv.setBigUint64(at + 8, u >> 64n, true);
}

function zigzag(v: number): bigint {
  const b = BigInt(v);
  return BigInt.asUintN(64, (b << 1n) ^ (b >> 63n));
}

/** Bytes an `isize` (a zigzag varint) takes. */
export function isizeLen(v: number): number {
  return varintLenBig(zigzag(v));
}

export function putIsize(buf: Uint8Array, pos: number, v: number): number {
  return putVarintBig(buf, pos, zigzag(v));
}

export { putVarint, varintLen };

/** Whether a 4-byte float holds exactly this number's bits pattern family (used by tests). */
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
const f64 = new Float64Array(1);
const u32x2 = new Uint32Array(f64.buffer);

/** An `f32`'s bits (a lane). */
export function f32Bits(v: number): number {
  f32[0] = v;
  return u32[0]!;
}

/** The `f32` of these bits. */
export function bitsF32(bits: number): number {
  u32[0] = bits;
  return f32[0]!;
}

/** An `f64`'s bits as two 32-bit lanes, low first. */
export function f64Lanes(v: number, out: Uint32Array | number[], at: number): void {
  f64[0] = v;
  out[at] = u32x2[0]!;
  out[at + 1] = u32x2[1]!;
}

export function lanesF64(lo: number, hi: number): number {
  u32x2[0] = lo;
  u32x2[1] = hi;
  return f64[0]!;
}

/** hashbrown's buckets for a table made `with_capacity(cap)` (src/wire/impls/map.rs `buckets_for`). */
function bucketsFor(cap: number, entrySize: number): number {
  if (cap === 0) return 0;
  if (cap < 15) {
    const min = entrySize <= 1 ? 14 : entrySize <= 3 ? 7 : 3;
    const c = Math.max(cap, min);
    return c < 4 ? 4 : c < 8 ? 8 : 16;
  }
  const adjusted = Math.floor((cap * 8) / 7);
  return 2 ** Math.ceil(Math.log2(adjusted));
}

/**
 * What the Rust decoder charges for a `HashMap` of `count` entries of
 * `entrySize` bytes aligned to `entryAlign`: the table hashbrown allocates.
 */
export function hashMapCharge(count: number, entrySize: number, entryAlign: number): number {
  const buckets = bucketsFor(count, entrySize);
  if (buckets === 0) return 0;
  const align = Math.max(entryAlign, 16);
  return Math.ceil((entrySize * buckets) / align) * align + buckets + 16;
}

/** What the Rust decoder charges for a `BTreeMap` of `count` entries: an upper bound of its nodes. */
export function btreeCharge(count: number, keySize: number, valueSize: number, align: number): number {
  if (count === 0) return 0;
  const a = Math.max(8, align);
  const node = Math.ceil(((keySize + valueSize) * 11 + 12 * 8 + 8 + 4) / a) * a;
  return node * (Math.floor(count / 5) + 1) * 2;
}

/** Orders numbers and bigints. */
export function cmpNum(a: number | bigint, b: number | bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Orders strings as Rust does: by their UTF-8 bytes (code points), not UTF-16 units. */
export function cmpStr(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x < y ? -1 : 1;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}

/** Orders booleans: false before true. */
export function cmpBool(a: boolean, b: boolean): number {
  return a === b ? 0 : a ? 1 : -1;
}

/** Orders byte strings lexicographically. */
export function cmpBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/** A map key's wire bytes as a string: repeated keys of any type have equal byte strings. */
export function keyOf(bytes: Uint8Array, start: number, end: number): string {
  let s = '';
  for (let i = start; i < end; i++) s += String.fromCharCode(bytes[i]!);
  return s;
}

/** Throws `TypeError` for a value that is not of its declared type (a programming error, not a wire error). */
export function badValue(what: string): never {
  throw new TypeError(`zao: not a value of ${what}`);
}
