/** Quantized values (docs/WIRE.md §7.1, src/wire/quant.rs tests), as the runtime and the generated codecs handle them. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  angleFromRadians,
  angleToRadians,
  dequantize,
  getQAngle,
  getQF32,
  getQQuat,
  getQVector,
  putQF32,
  putQQuat,
  putQVector,
  qquatFromXyzw,
  qquatIdentity,
  qquatToXyzw,
  qrange,
  quantize,
  type QQuatValue,
} from '../src/index.js';
import * as k from './generated/kitchen.js';
import { expectDecodeError, hex, Rng, toHex } from './helpers.js';

const pos = qrange(-8000, 8000, 1000);
const v3 = qrange(-4096, 4096, 1000);

test('sizes follow the declared range', () => {
  assert.equal(pos.steps, 16_000_000);
  assert.equal(pos.bits, 24);
  assert.equal(v3.bits, 23);
  assert.equal(qrange(0, 1, 255).bits, 8);
  assert.equal(k.Quantized.encodedLen({ a: 0, q: qquatIdentity(9), h: 0, p: [0, 0, 0] }), 3 + 4 + 2 + 9);
});

test('floats round to the nearest step and clamp; NaN is MIN', () => {
  assert.equal(dequantize(pos, quantize(pos, 1.2344)), Math.fround(1.234));
  assert.equal(dequantize(pos, quantize(pos, -1.2346)), Math.fround(-1.235));
  assert.equal(dequantize(pos, quantize(pos, 9000)), 8000);
  assert.equal(dequantize(pos, quantize(pos, -Infinity)), -8000);
  assert.equal(quantize(pos, NaN), 0);
  // 1.5 is step 8 001 500: dc 17 7a.
  assert.equal(quantize(pos, 1.5), 8_001_500);
  const out = new Uint8Array(3);
  putQF32(pos, out, 0, 8_001_500);
  assert.equal(toHex(out), 'dc 17 7a');
  // Half a step from a step rounds away from zero, as f64::round does.
  const half = qrange(0, 10, 1);
  assert.equal(quantize(half, 2.5), 3);
  assert.equal(quantize(qrange(-10, 0, 1), -2.5), 8); // (−2.5 + 10)·1 = 7.5; negative halves are clamped to 0 either way
});

test('out-of-range steps and set padding bits are InvalidValue', () => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, 16_000_001, true);
  expectDecodeError(() => getQF32(pos, b, 0), 'InvalidValue');
  const q100 = qrange(0, 1, 100);
  expectDecodeError(() => getQF32(q100, hex('80'), 0), 'InvalidValue');
  expectDecodeError(() => getQF32(q100, hex('65'), 0), 'InvalidValue');
  assert.equal(dequantize(q100, getQF32(q100, hex('64'), 0)), 1);
  const vec = new Uint8Array(9);
  putQVector(v3, 3, vec, 0, [0, 0, 0]);
  vec[8]! |= 0x20;
  expectDecodeError(() => getQVector(v3, 3, vec, 0), 'InvalidValue');
  expectDecodeError(() => getQAngle(12, hex('00 10'), 0), 'InvalidValue');
  // Through a generated codec: a truncated field is UnexpectedEnd first.
  expectDecodeError(() => k.Quantized.decode(hex('00 00')), 'UnexpectedEnd');
});

test('vectors and angles', () => {
  const steps = [-4096, 1.2345, 4095.5].map((x) => quantize(v3, x));
  assert.deepEqual(steps.map((s) => dequantize(v3, s)), [-4096, Math.fround(1.235), 4095.5]);
  assert.equal(angleFromRadians(12, -Math.PI / 2), 3072);
  assert.ok(Math.abs(angleToRadians(12, 3072) + Math.PI / 2) < 1e-6);
  assert.equal(angleFromRadians(12, Math.fround(2 * Math.PI * 3)), 0);
  assert.equal(angleFromRadians(12, NaN), 0);
});

test('quaternions keep their rotation within the precision; three extreme components are no unit', () => {
  let seed = 7n;
  const next = (): number => {
    seed = (seed * 6364136223846793005n + 1n) & 0xffffffffffffffffn;
    return Math.fround((Number(seed >> 33n) / 2 ** 31) * 2 - 1);
  };
  for (let i = 0; i < 2000; i++) {
    const q: [number, number, number, number] = [next(), next(), next(), next()];
    const len = Math.hypot(...q);
    const unit = q.map((c) => c / len);
    const packed = qquatFromXyzw(9, q);
    const bytes = new Uint8Array(4);
    putQQuat(9, bytes, 0, packed);
    assert.deepEqual(getQQuat(9, bytes, 0), packed);
    const back = qquatToXyzw(9, packed);
    const dot = Math.abs(unit.reduce((s, c, j) => s + c * back[j]!, 0));
    assert.ok(dot > Math.cos((0.5 * Math.PI) / 180 / 2), `${unit} -> ${back}`);
  }
  assert.deepEqual(qquatFromXyzw(9, [0, 0, 0, 0]), qquatIdentity(9));
  assert.deepEqual(qquatToXyzw(9, qquatIdentity(9)), [0, 0, 0, 1]);
  const bad = (largest: number, steps: [number, number, number]): void => {
    const b = new Uint8Array(4);
    putQQuat(9, b, 0, { largest, steps } as QQuatValue);
    expectDecodeError(() => getQQuat(9, b, 0), 'InvalidValue', `${largest} ${steps}`);
  };
  bad(0, [510, 510, 510]);
  bad(0, [511, 255, 255]);
  const id = new Uint8Array(4);
  putQQuat(9, id, 0, qquatIdentity(9));
  id[1]! |= 0b100;
  expectDecodeError(() => getQQuat(9, id, 0), 'InvalidValue');
});

test('QQuat at small B: rounding pushed past the unit sphere is pulled back in', () => {
  const r = new Rng(3);
  for (const bits of [2, 3, 4, 5]) {
    for (let i = 0; i < 500; i++) {
      const q = qquatFromXyzw(bits, [r.f32() % 1, r.f32() % 1, r.f32() % 1, r.f32() % 1]);
      const b = new Uint8Array(Math.ceil((2 + 3 * bits) / 8));
      putQQuat(bits, b, 0, q);
      assert.deepEqual(getQQuat(bits, b, 0), q);
    }
  }
});
