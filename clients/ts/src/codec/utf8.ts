/**
 * UTF-8 for the codec: exact byte lengths, an ASCII fast path both ways,
 * and strict validation (overlong forms, surrogates and code points past
 * U+10FFFF are refused, as `core::str::from_utf8` refuses them).
 */
import { DecodeError } from './errors.js';

const encoder = new TextEncoder();
// `fatal`: ill-formed input throws instead of decoding to U+FFFD;
// `ignoreBOM`: a leading U+FEFF is part of the string, as in Rust.
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Bytes the UTF-8 encoding of `s` takes. A lone surrogate (which a Rust
 * `String` cannot hold) counts as U+FFFD, 3 bytes, as `TextEncoder` writes it.
 */
export function utf8Length(s: string): number {
  const n = s.length;
  let bytes = n;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) {
      bytes += 1;
    } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        // A pair: 4 bytes for 2 code units.
        bytes += 2;
        i++;
      } else {
        bytes += 2;
      }
    } else {
      bytes += 2;
    }
  }
  return bytes;
}

/**
 * Writes `s` at `pos` (the room, `byteLength` bytes, is checked by the
 * caller); returns the position after it.
 */
export function putUtf8(buf: Uint8Array, pos: number, s: string, byteLength: number): number {
  const n = s.length;
  if (byteLength === n) {
    // ASCII: one byte per code unit.
    for (let i = 0; i < n; i++) buf[pos + i] = s.charCodeAt(i);
    return pos + n;
  }
  encoder.encodeInto(s, buf.subarray(pos, pos + byteLength));
  return pos + byteLength;
}

/** `s` as UTF-8 bytes (a fresh array). */
export function utf8Bytes(s: string): Uint8Array {
  return encoder.encode(s);
}

const units: number[] = [];

/**
 * Decodes `bytes[start, end)` as UTF-8, refusing anything ill-formed with
 * `DecodeError('InvalidUtf8')`. Short strings are decoded here (validated
 * byte by byte); long ones by `TextDecoder` in fatal mode.
 */
export function getUtf8(bytes: Uint8Array, start: number, end: number): string {
  const len = end - start;
  if (len === 0) return '';
  if (len <= 16) {
    // Most names: ASCII, a few bytes, made by one `fromCharCode` call.
    let or = 0;
    for (let i = start; i < end; i++) or |= bytes[i]!;
    if (or < 0x80) return len <= 8 ? ascii8(bytes, start, len) : ascii8(bytes, start, 8) + ascii8(bytes, start + 8, len - 8);
    return decodeShort(bytes, start, end);
  }
  if (len <= 64) return decodeShort(bytes, start, end);
  try {
    return decoder.decode(bytes.subarray(start, end));
  } catch {
    throw new DecodeError('InvalidUtf8');
  }
}

/** Up to 8 ASCII bytes as a string. */
function ascii8(b: Uint8Array, p: number, n: number): string {
  const f = String.fromCharCode;
  switch (n) {
    case 1:
      return f(b[p]!);
    case 2:
      return f(b[p]!, b[p + 1]!);
    case 3:
      return f(b[p]!, b[p + 1]!, b[p + 2]!);
    case 4:
      return f(b[p]!, b[p + 1]!, b[p + 2]!, b[p + 3]!);
    case 5:
      return f(b[p]!, b[p + 1]!, b[p + 2]!, b[p + 3]!, b[p + 4]!);
    case 6:
      return f(b[p]!, b[p + 1]!, b[p + 2]!, b[p + 3]!, b[p + 4]!, b[p + 5]!);
    case 7:
      return f(b[p]!, b[p + 1]!, b[p + 2]!, b[p + 3]!, b[p + 4]!, b[p + 5]!, b[p + 6]!);
    default:
      return f(b[p]!, b[p + 1]!, b[p + 2]!, b[p + 3]!, b[p + 4]!, b[p + 5]!, b[p + 6]!, b[p + 7]!);
  }
}

/** A validating decoder for short strings, in JavaScript. */
function decodeShort(bytes: Uint8Array, start: number, end: number): string {
  units.length = 0;
  let i = start;
  while (i < end) {
    const b0 = bytes[i]!;
    if (b0 < 0x80) {
      units.push(b0);
      i += 1;
      continue;
    }
    let cp: number;
    if (b0 >= 0xc2 && b0 <= 0xdf) {
      if (i + 1 >= end) bad();
      const b1 = bytes[i + 1]!;
      if ((b1 & 0xc0) !== 0x80) bad();
      cp = ((b0 & 0x1f) << 6) | (b1 & 0x3f);
      i += 2;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
      if (i + 2 >= end) bad();
      const b1 = bytes[i + 1]!;
      const b2 = bytes[i + 2]!;
      const lo = b0 === 0xe0 ? 0xa0 : 0x80;
      const hi = b0 === 0xed ? 0x9f : 0xbf;
      if (b1 < lo || b1 > hi || (b2 & 0xc0) !== 0x80) bad();
      cp = ((b0 & 0x0f) << 12) | ((b1 & 0x3f) << 6) | (b2 & 0x3f);
      i += 3;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
      if (i + 3 >= end) bad();
      const b1 = bytes[i + 1]!;
      const b2 = bytes[i + 2]!;
      const b3 = bytes[i + 3]!;
      const lo = b0 === 0xf0 ? 0x90 : 0x80;
      const hi = b0 === 0xf4 ? 0x8f : 0xbf;
      if (b1 < lo || b1 > hi || (b2 & 0xc0) !== 0x80 || (b3 & 0xc0) !== 0x80) bad();
      cp = ((b0 & 0x07) << 18) | ((b1 & 0x3f) << 12) | ((b2 & 0x3f) << 6) | (b3 & 0x3f);
      i += 4;
      cp -= 0x10000;
      units.push(0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
      continue;
    } else {
      bad();
    }
    units.push(cp);
  }
  return String.fromCharCode.apply(null, units);
}

function bad(): never {
  throw new DecodeError('InvalidUtf8');
}
