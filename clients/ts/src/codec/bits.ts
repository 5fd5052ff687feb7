/**
 * Bit-level cursors (docs/WIRE.md §7.1, src/wire/bits.rs): fields of any
 * width written one after another, least significant bit first (the first
 * field starts at bit 0 of byte 0, a field may straddle bytes), the last
 * byte padded with zero bits.
 *
 * Values up to 2^53 are numbers; wider fields (64-bit keys, the low bits of
 * a long gamma code) are read as numbers rounded past 2^53, which the
 * callers' range checks then refuse, or exactly as bigints.
 */
import { fail } from './errors.js';

const POW2: number[] = [];
for (let i = 0; i <= 64; i++) POW2.push(2 ** i);

/** Bits needed to write every value from 0 to `max`: 0 for 0, 1 for 1, 2 for 2–3 … */
export function bitsFor(max: number): number {
  if (max <= 0) return 0;
  if (max <= 0xffffffff) return 32 - Math.clz32(max);
  let n = 32;
  let v = Math.floor(max / 0x100000000);
  while (v > 0) {
    n++;
    v = Math.floor(v / 2);
  }
  return n;
}

/** Bits needed for a bigint `max`. */
export function bitsForBig(max: bigint): number {
  let n = 0;
  while (max > 0n) {
    n++;
    max >>= 1n;
  }
  return n;
}

/** Bits `putGamma` takes for `value`. */
export function gammaLen(value: number): number {
  return 2 * bitsFor(value + 1) - 1;
}

/** Writes bit fields into a byte buffer, least significant bit first. */
export class BitWriter {
  readonly buf: Uint8Array;
  /** Whole bytes written. */
  pos: number;
  private acc = 0;
  private pending = 0;
  private overflow = false;

  constructor(buf: Uint8Array, offset = 0) {
    this.buf = buf;
    this.pos = offset;
  }

  /** Writes the low `bits` bits of `value` (an integer below 2^53, `bits` ≤ 53). */
  putBits(value: number, bits: number): void {
    if (bits === 0) return;
    if (bits > 24) {
      // In pieces, so the accumulator stays a 32-bit integer.
      const low = value % POW2[24]!;
      this.putBits(low, 24);
      this.putBits(Math.floor(value / POW2[24]!), bits - 24);
      return;
    }
    const v = value % POW2[bits]!;
    this.acc |= v << this.pending;
    this.pending += bits;
    while (this.pending >= 8) {
      this.byte(this.acc & 0xff);
      this.acc >>>= 8;
      this.pending -= 8;
    }
  }

  /** Writes the low `bits` (≤ 64) bits of a bigint. */
  putBitsBig(value: bigint, bits: number): void {
    if (bits <= 32) {
      this.putBits(Number(BigInt.asUintN(bits, value)), bits);
      return;
    }
    this.putBits(Number(BigInt.asUintN(32, value)), 32);
    this.putBits(Number(BigInt.asUintN(bits - 32, value >> 32n)), bits - 32);
  }

  putBool(b: boolean): void {
    this.putBits(b ? 1 : 0, 1);
  }

  /**
   * Elias gamma: for `x = value + 1` of `n` bits, `n − 1` zero bits, a one
   * bit, then the low `n − 1` bits of `x`.
   */
  putGamma(value: number): void {
    const x = value + 1;
    const n = bitsFor(x);
    for (let z = n - 1; z > 0; z -= Math.min(z, 24)) this.putBits(0, Math.min(z, 24));
    this.putBits(1, 1);
    this.putBits(x % POW2[n - 1]!, n - 1);
  }

  private byte(b: number): void {
    if (this.pos < this.buf.length) {
      this.buf[this.pos++] = b;
    } else {
      this.overflow = true;
    }
  }

  /** Bits written so far, the partial byte included. */
  bitPosition(): number {
    return this.pos * 8 + this.pending;
  }

  overflowed(): boolean {
    return this.overflow;
  }

  /** Writes the padded last byte; returns the end position, or `null` if the buffer was too small. */
  finish(): number | null {
    if (this.pending > 0) {
      this.byte(this.acc & 0xff);
      this.acc = 0;
      this.pending = 0;
    }
    return this.overflow ? null : this.pos;
  }
}

/** Reads bit fields from untrusted bytes in the order `BitWriter` wrote them. */
export class BitReader {
  private readonly bytes: Uint8Array;
  private bit: number;
  private readonly endBit: number;

  constructor(bytes: Uint8Array, start = 0, end = bytes.length) {
    this.bytes = bytes;
    this.bit = start * 8;
    this.endBit = end * 8;
  }

  /** Reads a field of `bits` bits (≤ 64) as a number (exact up to 2^53). */
  getBits(bits: number): number {
    if (bits === 0) return 0;
    if (this.endBit - this.bit < bits) fail('UnexpectedEnd');
    if (bits > 32) {
      const low = this.getBits(32);
      return low + this.getBits(bits - 32) * POW2[32]!;
    }
    const b = this.bytes;
    let at = this.bit >>> 3;
    const shift = this.bit & 7;
    let v = b[at]! >>> shift;
    let got = 8 - shift;
    while (got < bits) {
      v += b[++at]! * POW2[got]!;
      got += 8;
    }
    this.bit += bits;
    return got > bits ? v % POW2[bits]! : v;
  }

  /** Reads a field of `bits` bits (≤ 64) exactly. */
  getBitsBig(bits: number): bigint {
    if (bits <= 32) return BigInt(this.getBits(bits));
    if (this.endBit - this.bit < bits) fail('UnexpectedEnd');
    const low = BigInt(this.getBits(32));
    return low | (BigInt(this.getBits(bits - 32)) << 32n);
  }

  getBool(): boolean {
    return this.getBits(1) === 1;
  }

  /** Reads an Elias gamma value; more than 63 leading zeros is `VarintOverflow`. */
  getGamma(): number {
    let zeros = 0;
    while (!this.getBool()) {
      zeros++;
      if (zeros > 63) fail('VarintOverflow');
    }
    const low = this.getBits(zeros);
    return POW2[zeros]! + low - 1;
  }

  /** Bits not read yet. */
  remainingBits(): number {
    return this.endBit - this.bit;
  }

  /**
   * Checks that what is left is the zero padding of the last byte: a whole
   * byte or more left is `TrailingBytes`, a set padding bit `InvalidValue`.
   */
  finish(): void {
    const left = this.endBit - this.bit;
    if (left >= 8) fail('TrailingBytes');
    if (left > 0 && this.getBits(left) !== 0) fail('InvalidValue');
  }
}
