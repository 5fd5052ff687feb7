/** Shared by the tests: the repository's assets, hex, seeded randomness, error checks. */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DecodeError, type DecodeErrorKind } from '../src/index.js';

const here = dirname(fileURLToPath(import.meta.url));
/** The package root (tests run from dist/test). */
export const PKG = join(here, '..', '..');
/** The repository's assets, relative to the package. */
export const ASSETS = join(PKG, '..', '..', 'assets');

export function asset(...parts: string[]): Uint8Array {
  return new Uint8Array(readFileSync(join(ASSETS, ...parts)));
}

export function assetText(...parts: string[]): string {
  return readFileSync(join(ASSETS, ...parts), 'utf8');
}

export function pkgText(...parts: string[]): string {
  return readFileSync(join(PKG, ...parts), 'utf8');
}

/** Every golden file: name and bytes. */
export function goldenFiles(): [string, Uint8Array][] {
  return readdirSync(join(ASSETS, 'golden'))
    .filter((f) => f.endsWith('.bin'))
    .sort()
    .map((f) => [f, asset('golden', f)]);
}

export function hex(text: string): Uint8Array {
  const clean = text.replace(/[^0-9a-fA-F]/g, '');
  const out = new Uint8Array(clean.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(clean.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function toHex(b: Uint8Array): string {
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join(' ');
}

export function concat(...parts: (Uint8Array | number[])[]): Uint8Array {
  const n = parts.reduce((s, p) => s + p.length, 0);
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Runs `fn`, which must throw a `DecodeError` of `kind` (no other exception type). */
export function expectDecodeError(fn: () => unknown, kind: DecodeErrorKind, what = ''): DecodeError {
  try {
    fn();
  } catch (e) {
    if (!(e instanceof DecodeError)) {
      assert.fail(`${what}: expected DecodeError(${kind}), got ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
    }
    assert.equal(e.kind, kind, `${what}: DecodeError kind`);
    return e;
  }
  return assert.fail(`${what}: expected DecodeError(${kind}), decoded`);
}

/** Runs `fn`; returns the DecodeError it threw, or null if it returned. Any other exception fails the test. */
export function decodeResult(fn: () => unknown, what = ''): DecodeError | null {
  try {
    fn();
    return null;
  } catch (e) {
    if (e instanceof DecodeError) return e;
    return assert.fail(`${what}: a ${e instanceof Error ? e.name : typeof e} escaped the decoder: ${String(e)}`);
  }
}

/** A seeded generator (splitmix32-style), so a failure reproduces. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  next(): number {
    this.s = (this.s + 0x9e3779b9) >>> 0;
    let z = this.s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  }
  below(n: number): number {
    return n <= 0 ? 0 : Math.floor((this.next() / 0x100000000) * n);
  }
  bool(): boolean {
    return (this.next() & 1) === 1;
  }
  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.next() & 0xff;
    return out;
  }
  /** An f32 from random bits (NaNs made quiet: see SPEC-NOTES.md on signalling NaNs). */
  f32(): number {
    const bits = this.next();
    const f = new Float32Array(new Uint32Array([bits]).buffer)[0]!;
    return Number.isNaN(f) ? Math.fround(1.5) : f;
  }
  u64(): bigint {
    return (BigInt(this.next()) << 32n) | BigInt(this.next());
  }
  string(max: number): string {
    const pool = ['a', 'Z', '0', ' ', 'é', '€', '😀', '\u0000', '"', '\\', 'ж', '中'];
    let s = '';
    const n = this.below(max + 1);
    for (let i = 0; i < n; i++) s += pool[this.below(pool.length)]!;
    return s;
  }
}

/** A JSON form that keeps bigints, Maps, typed arrays, -0 and NaN apart, for deep comparisons. */
export function canon(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => {
    if (typeof x === 'bigint') return `${x}n`;
    if (x instanceof Map) return { $map: [...x.entries()] };
    if (x instanceof Uint8Array) return { $bytes: [...x] };
    if (typeof x === 'number') {
      if (Object.is(x, -0)) return '-0';
      if (Number.isNaN(x)) return 'NaN';
      if (!Number.isFinite(x)) return String(x);
    }
    return x;
  });
}
