/**
 * Encoding into caller-owned buffers (src/wire/writer.rs). Generated
 * encoders compute the exact size first, check the room once, then write
 * with the helpers here (no further check, no allocation). `Writer` is the
 * same as an object, for hand-written encoders.
 */
import { EncodeError } from './errors.js';
import { putVarint, putVarintBig, varintLen } from './varint.js';
import { putUtf8, utf8Length } from './utf8.js';
import { viewOf } from './view.js';

const encoder = new TextEncoder();

/** Bytes a string takes on the wire: its varint byte length, then the bytes. */
export function strLen(s: string): number {
  const n = s.length < 0x80 && isAscii(s) ? s.length : utf8Length(s);
  return varintLen(n) + n;
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return false;
  return true;
}

/** Writes a string (length, then UTF-8) at `pos`; returns the position after it. */
export function putStr(buf: Uint8Array, pos: number, s: string): number {
  const n = s.length;
  if (n < 43) {
    // At most 126 bytes: a one-byte length, written after the text.
    let i = 0;
    const at = pos + 1;
    for (; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) break;
      buf[at + i] = c;
    }
    if (i === n) {
      buf[pos] = n;
      return at + n;
    }
    const written = i + encoder.encodeInto(s.slice(i), buf.subarray(at + i)).written;
    buf[pos] = written;
    return at + written;
  }
  const len = utf8Length(s);
  pos = putVarint(buf, pos, len);
  return putUtf8(buf, pos, s, len);
}

/** Bytes a byte string takes: its varint length, then the bytes. */
export function bytesLen(b: Uint8Array): number {
  return varintLen(b.length) + b.length;
}

/** Writes a byte string at `pos`; returns the position after it. */
export function putBytes(buf: Uint8Array, pos: number, b: Uint8Array): number {
  pos = putVarint(buf, pos, b.length);
  buf.set(b, pos);
  return pos + b.length;
}

/** Throws `EncodeError` unless `needed` bytes fit `buf` from `offset`. */
export function ensureRoom(buf: Uint8Array, offset: number, needed: number): void {
  const available = buf.length - offset;
  if (available < needed) throw new EncodeError(needed, Math.max(0, available));
}

/**
 * A cursor over a caller's buffer for hand-written encoders. Each `put`
 * checks its room and throws `EncodeError`; the position stays on failure.
 */
export class Writer {
  readonly buf: Uint8Array;
  readonly view: DataView;
  pos: number;

  constructor(buf: Uint8Array, offset = 0) {
    this.buf = buf;
    this.view = viewOf(buf);
    this.pos = offset;
  }

  private room(n: number): number {
    const p = this.pos;
    if (this.buf.length - p < n) throw new EncodeError(n, Math.max(0, this.buf.length - p));
    this.pos = p + n;
    return p;
  }

  u8(v: number): this {
    this.buf[this.room(1)] = v;
    return this;
  }

  u16(v: number): this {
    this.view.setUint16(this.room(2), v, true);
    return this;
  }

  u32(v: number): this {
    this.view.setUint32(this.room(4), v, true);
    return this;
  }

  i32(v: number): this {
    this.view.setInt32(this.room(4), v, true);
    return this;
  }

  u64(v: bigint): this {
    this.view.setBigUint64(this.room(8), BigInt.asUintN(64, v), true);
    return this;
  }

  f32(v: number): this {
    this.view.setFloat32(this.room(4), v, true);
    return this;
  }

  varint(v: number): this {
    const n = varintLen(v);
    const p = this.room(n);
    putVarint(this.buf, p, v);
    return this;
  }

  varintBig(v: bigint): this {
    const tmp = new Uint8Array(10);
    const n = putVarintBig(tmp, 0, v);
    this.room(n);
    this.buf.set(tmp.subarray(0, n), this.pos - n);
    return this;
  }

  str(s: string): this {
    const n = strLen(s);
    const p = this.room(n);
    putStr(this.buf, p, s);
    return this;
  }

  bytes(b: Uint8Array): this {
    const p = this.room(b.length);
    this.buf.set(b, p);
    return this;
  }

  byteString(b: Uint8Array): this {
    return this.varint(b.length).bytes(b);
  }
}
