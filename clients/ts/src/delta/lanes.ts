/**
 * Values as lanes (docs/WIRE.md §12.10, src/wire/lanes.rs): bounded
 * unsigned integers that delta snapshots compare, subtract and bit-pack.
 */
import { bitsFor } from '../codec/bits.js';

/** One lane: an unsigned integer from 0 to `max`, wrapping or not. */
export interface LaneSpec {
  readonly max: number;
  /** A wrapping lane (an angle, a signed integer's bits): differences modulo 2^width. */
  readonly wrapping: boolean;
  /** `bits(max)`: bits a value takes written in full. */
  readonly width: number;
}

export const Lane = Object.freeze({
  /** A lane of `bits` bits (1 to 32) taking every value. */
  bits(bits: number): LaneSpec {
    const max = bits >= 32 ? 0xffffffff : 2 ** bits - 1;
    return Object.freeze({ max, wrapping: false, width: bitsFor(max) });
  },
  /** A lane from 0 to `max`. */
  upto(max: number): LaneSpec {
    return Object.freeze({ max, wrapping: false, width: bitsFor(max) });
  },
  /** A lane of `bits` bits whose values wrap around. */
  wrapping(bits: number): LaneSpec {
    const max = bits >= 32 ? 0xffffffff : 2 ** bits - 1;
    return Object.freeze({ max, wrapping: true, width: bitsFor(max) });
  },
});

/** The signed change from `base` to `value`: modulo 2^width and centred on zero for a wrapping lane. */
export function laneDiff(lane: LaneSpec, base: number, value: number): number {
  const d = value - base;
  if (!lane.wrapping) return d;
  const span = 2 ** lane.width;
  const m = ((d % span) + span) % span;
  return m >= span / 2 ? m - span : m;
}

/** `base` changed by `diff`, if that is a value of the lane; else `null`. */
export function laneApply(lane: LaneSpec, base: number, diff: number): number | null {
  let v = base + diff;
  if (!Number.isSafeInteger(v)) return null;
  if (lane.wrapping) {
    const span = 2 ** lane.width;
    v = ((v % span) + span) % span;
  }
  return v >= 0 && v <= lane.max ? v : null;
}

/** Zig-zag: 0, −1, 1, −2 … as 0, 1, 2, 3 … */
export function zigzag(d: number): number {
  return d >= 0 ? 2 * d : -2 * d - 1;
}

export function unzigzag(z: number): number {
  return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
}
