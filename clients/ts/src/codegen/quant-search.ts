/**
 * Recovering the parameters of quantized types from their fingerprints.
 *
 * The protocol JSON gives a quantized field as `custom` with a name
 * (`QF32`, `QVector`, `QAngle`, `QQuat`), its wire bytes and its
 * fingerprint, but not its range or precision (SPEC-NOTES.md). `QAngle<B>`
 * and `QQuat<B>` have one parameter and are found exactly; `QF32` and
 * `QVector` are searched among common ranges and precisions, or given with
 * `--quant`.
 */
import { leaf } from '../codec/shape.js';
import { bitsFor } from '../codec/bits.js';

/** Parameters of one quantized type. */
export type QuantParams =
  | { readonly kind: 'qf32'; readonly min: number; readonly max: number; readonly perUnit: number }
  | { readonly kind: 'qvector'; readonly n: number; readonly min: number; readonly max: number; readonly perUnit: number }
  | { readonly kind: 'qangle'; readonly bits: number }
  | { readonly kind: 'qquat'; readonly bits: number };

/** A 64-bit FNV state in two 32-bit halves: the search runs millions of mixes. */
interface H {
  hi: number;
  lo: number;
}

function fromBig(v: bigint): H {
  return { hi: Number((v >> 32n) & 0xffffffffn), lo: Number(v & 0xffffffffn) };
}

function mixByte(h: H, byte: number): void {
  const lo = (h.lo ^ byte) >>> 0;
  // h * 0x100000001b3 = h * 0x1b3 + (h << 40), modulo 2^64.
  const p = lo * 0x1b3; // below 2^41: exact
  const carry = Math.floor(p / 0x100000000);
  h.lo = p >>> 0;
  h.hi = (Math.imul(h.hi, 0x1b3) + carry + (lo << 8)) >>> 0;
}

function mix(h: H, v: H): H {
  const out = { hi: h.hi, lo: h.lo };
  for (let i = 0; i < 4; i++) mixByte(out, (v.lo >>> (8 * i)) & 0xff);
  for (let i = 0; i < 4; i++) mixByte(out, (v.hi >>> (8 * i)) & 0xff);
  return out;
}

function i64(v: number): H {
  if (v >= 0) return { hi: Math.floor(v / 0x100000000) >>> 0, lo: v >>> 0 };
  const b = BigInt.asUintN(64, BigInt(v));
  return fromBig(b);
}

function candidatesBounds(): number[] {
  const set = new Set<number>([0, 90, 180, 360, 3600, 100000]);
  for (let i = 1; i <= 10; i++) set.add(i);
  for (let k = 0; k <= 24; k++) set.add(2 ** k);
  for (let k = 0; k <= 7; k++) for (let m = 1; m <= 9; m++) set.add(m * 10 ** k);
  for (let k = 0; k <= 6; k++) set.add(25 * 10 ** k).add(15 * 10 ** k);
  const out: number[] = [];
  for (const v of set) {
    if (v <= 0x7fffffff) {
      out.push(v);
      if (v !== 0) out.push(-v);
    }
  }
  return out.sort((a, b) => a - b);
}

function candidatesPerUnit(): number[] {
  const set = new Set<number>();
  for (let i = 1; i <= 1024; i++) set.add(i);
  for (let k = 0; k <= 24; k++) set.add(2 ** k);
  for (let k = 0; k <= 9; k++) for (let m = 1; m <= 9; m++) set.add(m * 10 ** k);
  return [...set].filter((v) => v <= 0xffffffff).sort((a, b) => a - b);
}

/**
 * The parameters of a `custom` quantized shape named `name` with `bytes`
 * wire bytes and fingerprint `fp`, or `null` if none of the candidates
 * gives that fingerprint.
 */
export function findQuantParams(name: string, bytes: number, fp: bigint): QuantParams | null {
  const target = fromBig(fp);
  const same = (h: H): boolean => h.hi === target.hi && h.lo === target.lo;
  if (name === 'QAngle' || name === 'QQuat') {
    const base = fromBig(leaf(name === 'QAngle' ? 'qangle' : 'qquat'));
    for (let b = 2; b <= (name === 'QAngle' ? 31 : 30); b++) {
      const wire = Math.ceil((name === 'QAngle' ? b : 2 + 3 * b) / 8);
      if (wire === bytes && same(mix(base, i64(b)))) {
        return name === 'QAngle' ? { kind: 'qangle', bits: b } : { kind: 'qquat', bits: b };
      }
    }
    return null;
  }
  if (name !== 'QF32' && name !== 'QVector') return null;
  const base = fromBig(leaf(name === 'QF32' ? 'qf32' : 'qvector'));
  const bounds = candidatesBounds();
  const perUnits = candidatesPerUnit();
  const ns = name === 'QF32' ? [1] : [1, 2, 3, 4];
  for (const min of bounds) {
    const h1 = mix(base, i64(min));
    for (const max of bounds) {
      if (max <= min) continue;
      const h2 = mix(h1, i64(max));
      for (const pu of perUnits) {
        const steps = (max - min) * pu;
        if (steps > 0xffffffff) break;
        const bits = bitsFor(steps);
        let any = false;
        for (const n of ns) if (Math.ceil((bits * n) / 8) === bytes) any = true;
        if (!any) continue;
        const h3 = mix(h2, i64(pu));
        for (const n of ns) {
          if (Math.ceil((bits * n) / 8) !== bytes) continue;
          if (same(mix(h3, i64(n)))) {
            return name === 'QF32' ? { kind: 'qf32', min, max, perUnit: pu } : { kind: 'qvector', n, min, max, perUnit: pu };
          }
        }
      }
    }
  }
  return null;
}

/** Parses a `--quant` value: `qf32:MIN:MAX:PER_UNIT`, `qvector:N:MIN:MAX:PER_UNIT`, `qangle:B`, `qquat:B`. */
export function parseQuantParams(text: string): QuantParams | null {
  const parts = text.split(':');
  const nums = parts.slice(1).map(Number);
  if (nums.some((n) => !Number.isInteger(n))) return null;
  switch (parts[0]) {
    case 'qf32':
      return nums.length === 3 ? { kind: 'qf32', min: nums[0]!, max: nums[1]!, perUnit: nums[2]! } : null;
    case 'qvector':
      return nums.length === 4 ? { kind: 'qvector', n: nums[0]!, min: nums[1]!, max: nums[2]!, perUnit: nums[3]! } : null;
    case 'qangle':
      return nums.length === 1 ? { kind: 'qangle', bits: nums[0]! } : null;
    case 'qquat':
      return nums.length === 1 ? { kind: 'qquat', bits: nums[0]! } : null;
    default:
      return null;
  }
}
