/**
 * Quantized values (docs/WIRE.md §7.1, src/wire/quant.rs), held as the
 * integers they travel as: a `QF32` is its step, a `QVector` its steps, a
 * `QAngle` its step, a `QQuat` its largest component's index and three
 * steps. The arithmetic follows the Rust code exactly: f32 inputs widened
 * to f64, rounding half away from zero, f64 results narrowed to f32.
 */
import { BitReader, BitWriter, bitsFor } from './bits.js';
import { fail } from './errors.js';
import { leaf, mixU64 } from './shape.js';

/** `f64::round`: half away from zero (`Math.round` goes half up). */
export function roundHalfAway(x: number): number {
  return x < 0 ? -Math.round(-x) : Math.round(x);
}

/** A `QF32<MIN, MAX, PER_UNIT>` (or each component of a `QVector`). */
export interface QRange {
  readonly min: number;
  readonly max: number;
  readonly perUnit: number;
  /** `(MAX − MIN) · PER_UNIT`: the largest step. */
  readonly steps: number;
  /** `bits(STEPS)`. */
  readonly bits: number;
}

export function qrange(min: number, max: number, perUnit: number): QRange {
  if (!(max > min) || perUnit <= 0) throw new RangeError('a quantized range needs MAX > MIN and PER_UNIT > 0');
  const steps = (max - min) * perUnit;
  if (steps > 0xffffffff) throw new RangeError('a quantized range may have at most 2^32 - 1 steps');
  return { min, max, perUnit, steps, bits: bitsFor(steps) };
}

/** `v` as a step: rounded to the nearest, clamped to the range; NaN is `MIN` (step 0). */
export function quantize(range: QRange, v: number): number {
  const q = roundHalfAway((Math.fround(v) - range.min) * range.perUnit);
  if (Number.isNaN(q) || q <= 0) return 0;
  return q >= range.steps ? range.steps : q;
}

/** The float a step stands for. */
export function dequantize(range: QRange, step: number): number {
  return Math.fround(range.min + step / range.perUnit);
}

/** The fingerprint of `QF32` (`n` 1) or `QVector<n, …>`. */
export function rangeFingerprint(name: 'qf32' | 'qvector', min: number, max: number, perUnit: number, n: number): bigint {
  let h = mixU64(leaf(name), BigInt.asUintN(64, BigInt(min)));
  h = mixU64(h, BigInt.asUintN(64, BigInt(max)));
  h = mixU64(h, BigInt(perUnit));
  return mixU64(h, BigInt(n));
}

export function qangleFingerprint(bits: number): bigint {
  return mixU64(leaf('qangle'), BigInt(bits));
}

export function qquatFingerprint(bits: number): bigint {
  return mixU64(leaf('qquat'), BigInt(bits));
}

/** Bytes `n` components of `bits` bits take as a field. */
export function fieldBytes(bits: number): number {
  return Math.ceil(bits / 8);
}

/** Reads `count` fields of `bits` bits from `bytes[p, p + len)`, checks the padding. */
function readFields(bytes: Uint8Array, p: number, len: number, bits: readonly number[]): number[] {
  const r = new BitReader(bytes, p, p + len);
  const out = bits.map((b) => r.getBits(b));
  try {
    r.finish();
  } catch {
    fail('InvalidValue');
  }
  return out;
}

function writeFields(buf: Uint8Array, p: number, len: number, fields: readonly (readonly [number, number])[]): void {
  const w = new BitWriter(buf, p);
  for (const [v, b] of fields) w.putBits(v, b);
  w.finish();
  // The padding of a field is zero: `finish` wrote the partial byte.
  void len;
}

/** Decodes a `QF32` step at `p` (its `bytes` are there). */
export function getQF32(range: QRange, bytes: Uint8Array, p: number): number {
  const [step] = readFields(bytes, p, fieldBytes(range.bits), [range.bits]);
  if (step! > range.steps) fail('InvalidValue');
  return step!;
}

export function putQF32(range: QRange, buf: Uint8Array, p: number, step: number): void {
  writeFields(buf, p, fieldBytes(range.bits), [[step, range.bits]]);
}

/** Decodes a `QVector` of `n` components at `p`. */
export function getQVector(range: QRange, n: number, bytes: Uint8Array, p: number): number[] {
  const steps = readFields(bytes, p, fieldBytes(range.bits * n), new Array<number>(n).fill(range.bits));
  for (const s of steps) if (s > range.steps) fail('InvalidValue');
  return steps;
}

export function putQVector(range: QRange, n: number, buf: Uint8Array, p: number, steps: readonly number[]): void {
  const fields: [number, number][] = [];
  for (let i = 0; i < n; i++) fields.push([steps[i] ?? 0, range.bits]);
  writeFields(buf, p, fieldBytes(range.bits * n), fields);
}

/** `QAngle<B>`: a step of a turn in 2^B steps. */
export function getQAngle(bits: number, bytes: Uint8Array, p: number): number {
  const [step] = readFields(bytes, p, fieldBytes(bits), [bits]);
  return step!;
}

export function putQAngle(bits: number, buf: Uint8Array, p: number, step: number): void {
  writeFields(buf, p, fieldBytes(bits), [[step, bits]]);
}

/** An angle in radians as a `QAngle<B>` step: any number of turns folded into one; not finite is 0. */
export function angleFromRadians(bits: number, radians: number): number {
  const turn = 2 ** bits;
  let turns = Math.fround(radians) / (2 * Math.PI);
  turns = Number.isFinite(turns) ? turns - Math.floor(turns) : 0;
  return Math.round(turns * turn) % turn;
}

/** The angle of a step, in radians from −π (inclusive) to π. */
export function angleToRadians(bits: number, step: number): number {
  const turn = 2 ** bits;
  const s = step >= turn / 2 ? step - turn : step;
  return Math.fround((s / turn) * 2 * Math.PI);
}

/** A `QQuat`: the index of the largest component (0 = x … 3 = w) and the other three's steps. */
export interface QQuatValue {
  largest: number;
  steps: [number, number, number];
}

export function qquatHalf(bits: number): number {
  return 2 ** (bits - 1) - 1;
}

export function qquatIdentity(bits: number): QQuatValue {
  const h = qquatHalf(bits);
  return { largest: 3, steps: [h, h, h] };
}

/** Σ(c − H)² ≤ 2H², exactly (in bigints past 2^53). */
export function qquatFits(bits: number, steps: readonly number[]): boolean {
  const h = qquatHalf(bits);
  if (bits <= 24) {
    let sum = 0;
    for (const c of steps) sum += (c - h) * (c - h);
    return sum <= 2 * h * h;
  }
  const hb = BigInt(h);
  let sum = 0n;
  for (const c of steps) sum += (BigInt(c) - hb) ** 2n;
  return sum <= 2n * hb * hb;
}

export function getQQuat(bits: number, bytes: Uint8Array, p: number): QQuatValue {
  const len = fieldBytes(2 + 3 * bits);
  const r = new BitReader(bytes, p, p + len);
  const largest = r.getBits(2);
  const steps: [number, number, number] = [r.getBits(bits), r.getBits(bits), r.getBits(bits)];
  const h2 = 2 * qquatHalf(bits);
  if (steps[0] > h2 || steps[1] > h2 || steps[2] > h2 || !qquatFits(bits, steps)) fail('InvalidValue');
  try {
    r.finish();
  } catch {
    fail('InvalidValue');
  }
  return { largest, steps };
}

export function putQQuat(bits: number, buf: Uint8Array, p: number, q: QQuatValue): void {
  writeFields(buf, p, fieldBytes(2 + 3 * bits), [
    [q.largest, 2],
    [q.steps[0], bits],
    [q.steps[1], bits],
    [q.steps[2], bits],
  ]);
}

/** `QQuat::from_xyzw`: normalised, smallest three, pulled inside the unit sphere if rounding pushed it out. */
export function qquatFromXyzw(bits: number, xyzw: readonly [number, number, number, number]): QQuatValue {
  const q = xyzw.map((c) => Math.fround(c));
  let sum = 0;
  for (const c of q) sum += c * c;
  const len = Math.sqrt(sum);
  if (!Number.isFinite(len) || len === 0) return qquatIdentity(bits);
  let largest = 0;
  for (let i = 1; i < 4; i++) if (Math.abs(q[i]!) > Math.abs(q[largest]!)) largest = i;
  const sign = q[largest]! < 0 ? -1 : 1;
  const half = qquatHalf(bits);
  const steps: [number, number, number] = [0, 0, 0];
  let k = 0;
  for (let i = 0; i < 4; i++) {
    if (i === largest) continue;
    const v = (q[i]! * sign) / len;
    const c = roundHalfAway(v * Math.SQRT2 * half) + half;
    steps[k++] = Math.min(Math.max(c, 0), 2 * half);
  }
  while (!qquatFits(bits, steps)) {
    let far = 0;
    for (let i = 1; i < 3; i++) if (Math.abs(steps[i]! - half) > Math.abs(steps[far]! - half)) far = i;
    steps[far] = steps[far]! > half ? steps[far]! - 1 : steps[far]! + 1;
  }
  return { largest, steps };
}

/** The unit quaternion `[x, y, z, w]` a `QQuat` stands for. */
export function qquatToXyzw(bits: number, q: QQuatValue): [number, number, number, number] {
  const half = qquatHalf(bits);
  const small = q.steps.map((c) => (c - half) / (half * Math.SQRT2));
  let s = 0;
  for (const c of small) s += c * c;
  const big = Math.sqrt(Math.max(1 - s, 0));
  const out: [number, number, number, number] = [0, 0, 0, 0];
  let k = 0;
  for (let i = 0; i < 4; i++) out[i] = Math.fround(i === q.largest ? big : small[k++]!);
  return out;
}

/** `QF32` steps from floats, per component. */
export function quantizeVector(range: QRange, v: readonly number[]): number[] {
  return v.map((c) => quantize(range, c));
}

export function dequantizeVector(range: QRange, steps: readonly number[]): number[] {
  return steps.map((s) => dequantize(range, s));
}
