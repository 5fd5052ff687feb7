/**
 * Messages (docs/WIRE.md §9): `id (varint) + body`, and the interface every
 * generated codec implements.
 */
import type { Direction } from '../session/protocol.js';
import { fail } from './errors.js';
import type { DecodeLimits } from './limits.js';
import type { Reader } from './reader.js';

/** glam `Vec2` (and `IVec2`, `UVec2`). */
export interface Vec2 {
  x: number;
  y: number;
}

/** glam `Vec3` (and `IVec3`, `UVec3`). */
export interface Vec3 {
  x: number;
  y: number;
  z: number;
}

/** glam `Vec4`, `Quat` (`x y z w`), `IVec4`, `UVec4`. */
export interface Vec4 {
  x: number;
  y: number;
  z: number;
  w: number;
}

export type Quat = Vec4;

/** A value type's codec (what `Encode` and `Decode` are in Rust). */
export interface Codec<T> {
  /** `Decode::MIN_SIZE`. */
  readonly minSize: number;
  /** `Decode::EXACT_SIZE`. */
  readonly exactSize: boolean;
  /** The exact number of bytes `encode` writes. */
  encodedLen(value: T): number;
  /**
   * Writes `value` into `buf` at `offset`; returns the bytes written.
   * Throws `EncodeError` (with `needed` and `available`) if it does not
   * fit; nothing else.
   */
  encode(value: T, buf: Uint8Array, offset?: number): number;
  /** Decodes `bytes`, which must hold exactly one value; throws `DecodeError`. */
  decode(bytes: Uint8Array, limits?: DecodeLimits): T;
  /**
   * Decodes into `target` (a value decoded before), reusing its arrays,
   * objects and maps where the shape allows; returns the value (`target`
   * or a new one). After a failure `target` is valid but unspecified.
   */
  decodeInPlace(target: T, bytes: Uint8Array, limits?: DecodeLimits): T;
  /** Decodes one value from a reader (nested use). */
  decodeFrom(r: Reader): T;
}

/** A message type's codec: a value codec with an id, name and fingerprint. */
export interface MessageCodec<T> extends Codec<T> {
  readonly ID: number;
  readonly NAME: string;
  readonly FINGERPRINT: bigint;
  /** The channel's index in the protocol. */
  readonly CHANNEL: number;
  readonly DIRECTION: Direction;
  /** Bytes `encodeMessage` writes: the id's varint and the body. */
  messageLen(value: T): number;
  /** Writes `id + body`; returns the bytes written. */
  encodeMessage(value: T, buf: Uint8Array, offset?: number): number;
  /** Decodes `id + body`; another id is `UnexpectedMessage`. */
  decodeMessage(bytes: Uint8Array, limits?: DecodeLimits): T;
}

/**
 * Splits a framed message into its id and the offset of its body: the id
 * must be a canonical varint that fits a `u32`.
 */
export function splitMessage(bytes: Uint8Array, start = 0, end = bytes.length): [number, number] {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 10; i++) {
    const at = start + i;
    if (at >= end) fail('UnexpectedEnd');
    const byte = bytes[at]!;
    const group = byte & 0x7f;
    if (i === 9 && group > 1) fail('VarintOverflow');
    value += group * scale;
    scale *= 128;
    if (byte < 0x80) {
      if (byte === 0 && i > 0) fail('NonCanonicalVarint');
      if (value > 0xffffffff) fail('VarintOverflow');
      return [value, at + 1];
    }
  }
  return fail('VarintOverflow');
}
