/**
 * Interpolation between two states (src/proto/delta/interp.rs), for
 * rendering between snapshots. Generated `DeltaCodec.interpolate` uses
 * these per field.
 */
import { fail } from '../codec/errors.js';
import { qquatFits, qquatHalf, type QQuatValue } from '../codec/quant.js';
import type { Vec4 } from '../codec/message.js';

/** `a + (b − a)·t` in f32 arithmetic, as Rust's `f32::interpolate`. */
export function lerpF32(a: number, b: number, t: number): number {
  const f = Math.fround;
  return f(f(a) + f(f(f(b) - f(a)) * f(t)));
}

/** A `QAngle<B>` step `t` of the way from `a` to `b`, the shorter way round. */
export function lerpAngleStep(bits: number, a: number, b: number, t: number): number {
  const turn = 2 ** bits;
  let d = (((b - a) % turn) + turn) % turn;
  if (d >= turn / 2) d -= turn;
  const x = d * Math.fround(t);
  const step = a + (x < 0 ? -Math.round(-x) : Math.round(x));
  return ((step % turn) + turn) % turn;
}

/** Normalised linear interpolation of `[x, y, z, w]` along the shorter arc (Rust `nlerp`). */
export function nlerpQuat(
  a: readonly [number, number, number, number],
  b: readonly [number, number, number, number],
  t: number,
): [number, number, number, number] {
  const f = Math.fround;
  let dot = 0;
  for (let i = 0; i < 4; i++) dot = f(dot + f(a[i]! * b[i]!));
  const sign = dot < 0 ? -1 : 1;
  const out: [number, number, number, number] = [0, 0, 0, 0];
  for (let i = 0; i < 4; i++) out[i] = f(a[i]! + f(f(f(b[i]! * sign) - a[i]!) * f(t)));
  let len = 0;
  for (const c of out) len = f(len + f(c * c));
  len = f(Math.sqrt(len));
  if (len > 0) for (let i = 0; i < 4; i++) out[i] = f(out[i]! / len);
  return out;
}

/** Spherical interpolation of glam quaternions along the shorter arc (glam `Quat::slerp`). */
export function slerpQuat(a: Vec4, b: Vec4, t: number): Vec4 {
  let dot = a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
  let e = b;
  if (dot < 0) {
    e = { x: -b.x, y: -b.y, z: -b.z, w: -b.w };
    dot = -dot;
  }
  const f = Math.fround;
  if (dot > 0.9995) {
    // Nearly parallel: linear, then normalised.
    const r = { x: a.x + (e.x - a.x) * t, y: a.y + (e.y - a.y) * t, z: a.z + (e.z - a.z) * t, w: a.w + (e.w - a.w) * t };
    const len = Math.hypot(r.x, r.y, r.z, r.w);
    return { x: f(r.x / len), y: f(r.y / len), z: f(r.z / len), w: f(r.w / len) };
  }
  const theta = Math.acos(dot);
  const s = Math.sin(theta);
  const wa = Math.sin((1 - t) * theta) / s;
  const wb = Math.sin(t * theta) / s;
  return { x: f(a.x * wa + e.x * wb), y: f(a.y * wa + e.y * wb), z: f(a.z * wa + e.z * wb), w: f(a.w * wa + e.w * wb) };
}

/** A `QQuat` from its four lanes (`read_lanes`): three steps that make no unit quaternion are `InvalidValue`. */
export function quatOfLanes(bits: number, largest: number, a: number, b: number, c: number): QQuatValue {
  const h2 = 2 * qquatHalf(bits);
  const steps: [number, number, number] = [a, b, c];
  if (largest > 3 || a > h2 || b > h2 || c > h2 || !qquatFits(bits, steps)) fail('InvalidValue');
  return { largest, steps };
}
