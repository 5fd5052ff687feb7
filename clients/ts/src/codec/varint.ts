/**
 * Canonical LEB128 varints (docs/WIRE.md §2, src/wire/varint.rs). Seven
 * bits a byte, least significant group first; only the shortest form is
 * accepted.
 */
import { EncodeError } from './errors.js';

/** Longest varint of a `u64`: ten bytes. */
export const MAX_VARINT_LEN = 10;

/** Bytes the varint encoding of `value` (a non-negative integer) takes. */
export function varintLen(value: number): number {
  if (value < 0x80) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x200000) return 3;
  if (value < 0x10000000) return 4;
  if (value < 0x800000000) return 5;
  // Above 2^35: count groups on the float (exact up to 2^53).
  let n = 5;
  let v = Math.floor(value / 0x800000000);
  while (v > 0) {
    n++;
    v = Math.floor(v / 0x80);
  }
  return n;
}

/** Bytes the varint encoding of a `u64` given as a bigint takes. */
export function varintLenBig(value: bigint): number {
  let n = 1;
  while (value >= 0x80n) {
    value >>= 7n;
    n++;
  }
  return n;
}

/**
 * Writes `value` (an integer from 0 to 2^53 − 1) at `pos`; returns the
 * position after it. The caller has checked the room.
 */
export function putVarint(buf: Uint8Array, pos: number, value: number): number {
  if (value < 0x80) {
    buf[pos] = value;
    return pos + 1;
  }
  if (value < 0x4000) {
    buf[pos] = (value & 0x7f) | 0x80;
    buf[pos + 1] = value >>> 7;
    return pos + 2;
  }
  while (value >= 0x80) {
    buf[pos++] = (value % 0x80) | 0x80;
    value = Math.floor(value / 0x80);
  }
  buf[pos++] = value;
  return pos;
}

/** Writes a `u64` varint given as a bigint; returns the position after it. */
export function putVarintBig(buf: Uint8Array, pos: number, value: bigint): number {
  value = BigInt.asUintN(64, value);
  while (value >= 0x80n) {
    buf[pos++] = Number(value & 0x7fn) | 0x80;
    value >>= 7n;
  }
  buf[pos++] = Number(value);
  return pos;
}

/** The varint of `value` as bytes (tests and small frames). */
export function varintBytes(value: number | bigint): Uint8Array {
  const out = new Uint8Array(MAX_VARINT_LEN);
  const end = typeof value === 'bigint' ? putVarintBig(out, 0, value) : putVarint(out, 0, value);
  return out.slice(0, end);
}

/** Throws unless `n` bytes from `pos` fit `buf`. */
export function checkRoom(buf: Uint8Array, pos: number, n: number): void {
  if (buf.length - pos < n) throw new EncodeError(n, Math.max(0, buf.length - pos));
}
