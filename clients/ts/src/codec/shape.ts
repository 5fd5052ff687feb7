/**
 * Wire shapes as the protocol JSON carries them (docs/INSPECT.md §1, §4)
 * and their fingerprints (docs/WIRE.md §9, src/wire/schema.rs).
 */

/** The fixed-size leaves of §3, by the names their fingerprints use. */
export const SCALARS = [
  'u8', 'u16', 'u32', 'u64', 'u128', 'i8', 'i16', 'i32', 'i64', 'i128', 'f32', 'f64', 'bool',
  'char', 'usize', 'isize', 'unit', 'nz_u8', 'nz_u16', 'nz_u32', 'nz_u64', 'nz_i8', 'nz_i16',
  'nz_i32', 'nz_i64',
] as const;

export type ScalarName = (typeof SCALARS)[number];

export type FieldStyle = 'named' | 'tuple' | 'unit';

export interface FieldShape {
  readonly name: string;
  readonly shape: Shape;
}

export interface StructShape {
  readonly kind: 'struct';
  readonly name: string;
  readonly style: FieldStyle;
  readonly tolerant: boolean;
  readonly blittable: boolean;
  readonly fields: readonly FieldShape[];
}

export interface VariantShape {
  readonly name: string;
  readonly tag: number;
  readonly style: FieldStyle;
  readonly fields: readonly FieldShape[];
}

export interface EnumShape {
  readonly kind: 'enum';
  readonly name: string;
  readonly variants: readonly VariantShape[];
}

export interface FlagsShape {
  readonly kind: 'flags';
  readonly name: string;
  readonly bits: ScalarName;
  /** Each flag's name and value (`0x` hex in the JSON). */
  readonly flags: readonly { readonly name: string; readonly value: string }[];
}

export interface CustomShape {
  readonly kind: 'custom';
  readonly name: string;
  /** `0x` + hex. */
  readonly fingerprint: string;
  readonly wire: Shape;
}

export type Shape =
  | { readonly kind: ScalarName }
  | { readonly kind: 'str' }
  | { readonly kind: 'bytes' }
  | { readonly kind: 'seq'; readonly item: Shape }
  | { readonly kind: 'array'; readonly len: number; readonly item: Shape }
  | { readonly kind: 'option'; readonly item: Shape }
  | { readonly kind: 'box'; readonly item: Shape }
  | { readonly kind: 'tuple'; readonly items: readonly Shape[] }
  | { readonly kind: 'map'; readonly key: Shape; readonly value: Shape; readonly sorted: boolean }
  | { readonly kind: 'vector'; readonly name: string; readonly scalar: ScalarName; readonly len: number }
  | StructShape
  | EnumShape
  | FlagsShape
  | CustomShape
  | { readonly kind: 'recursive'; readonly spelled: string; readonly shape: Shape | null }
  | { readonly kind: 'self' };

export function isScalar(kind: string): kind is ScalarName {
  return (SCALARS as readonly string[]).includes(kind);
}

const MASK = 0xffffffffffffffffn;
/** FNV-1a offset basis: the fingerprint of nothing. */
export const FINGERPRINT_SEED = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;

/** Mixes the 8 little-endian bytes of `value` into `hash` (§9 `mix_u64`). */
export function mixU64(hash: bigint, value: bigint): bigint {
  let v = BigInt.asUintN(64, value);
  let h = hash;
  for (let i = 0; i < 8; i++) {
    h ^= v & 0xffn;
    h = (h * FNV_PRIME) & MASK;
    v >>= 8n;
  }
  return h;
}

const utf8 = new TextEncoder();

/** Mixes a string's byte length, then its bytes (§9 `mix_str`). */
export function mixStr(hash: bigint, s: string): bigint {
  const bytes = utf8.encode(s);
  let h = mixU64(hash, BigInt(bytes.length));
  for (const b of bytes) {
    h ^= BigInt(b);
    h = (h * FNV_PRIME) & MASK;
  }
  return h;
}

/** The fingerprint of a leaf type named `name`. */
export function leaf(name: string): bigint {
  return mixStr(FINGERPRINT_SEED, name);
}

/** Parses `0x` + hex (a JSON fingerprint, hash or flag value). */
export function parseHex(text: string): bigint | null {
  if (!/^0x[0-9a-fA-F]{1,16}$/.test(text)) return null;
  return BigInt(text);
}

/** `0x` + 16 hex digits. */
export function hex64(v: bigint): string {
  return '0x' + BigInt.asUintN(64, v).toString(16).padStart(16, '0');
}

/** Whether a run of this shape carries a 4-byte count (§5): a blittable struct. */
export function countsWide(item: Shape): boolean {
  return item.kind === 'struct' && item.blittable;
}

/** The fingerprint of a shape (§9, `Shape::fingerprint`). */
export function fingerprint(shape: Shape): bigint {
  switch (shape.kind) {
    case 'str':
      return leaf('str');
    case 'bytes':
      return mixU64(leaf('seq'), leaf('u8'));
    case 'seq':
      return mixU64(leaf(countsWide(shape.item) ? 'seq32' : 'seq'), fingerprint(shape.item));
    case 'array':
      return mixU64(mixU64(leaf('array'), BigInt(shape.len)), fingerprint(shape.item));
    case 'option':
      return mixU64(leaf('option'), fingerprint(shape.item));
    case 'box':
      return fingerprint(shape.item);
    case 'tuple': {
      let h = leaf('tuple');
      for (const item of shape.items) h = mixU64(h, fingerprint(item));
      return h;
    }
    case 'map':
      return mixU64(
        mixU64(leaf(shape.sorted ? 'sorted_map' : 'map'), fingerprint(shape.key)),
        fingerprint(shape.value),
      );
    case 'vector':
      return mixU64(leaf(shape.name), leaf(shape.scalar));
    case 'struct':
      if (shape.tolerant) return leaf('tolerant');
      return mixFields(leaf('struct'), shape.fields);
    case 'enum': {
      let h = leaf('enum');
      for (const v of shape.variants) {
        h = mixStr(h, v.name);
        h = mixU64(h, BigInt(v.tag));
        h = mixFields(h, v.fields);
      }
      return h;
    }
    case 'flags': {
      let mask = 0n;
      for (const f of shape.flags) mask |= parseHex(f.value) ?? 0n;
      return mixU64(leaf(shape.name), mask);
    }
    case 'custom':
      return parseHex(shape.fingerprint) ?? 0n;
    case 'recursive':
      return leaf(shape.spelled);
    case 'self':
      return leaf('self');
    default:
      return leaf(shape.kind);
  }
}

function mixFields(h: bigint, fields: readonly FieldShape[]): bigint {
  for (const f of fields) {
    h = mixStr(h, f.name);
    h = mixU64(h, fingerprint(f.shape));
  }
  return h;
}

/** Bytes a scalar takes on the wire (`null`: a varint). */
export function scalarSize(s: ScalarName): number | null {
  switch (s) {
    case 'unit':
      return 0;
    case 'u8': case 'i8': case 'bool': case 'nz_u8': case 'nz_i8':
      return 1;
    case 'u16': case 'i16': case 'nz_u16': case 'nz_i16':
      return 2;
    case 'u32': case 'i32': case 'f32': case 'char': case 'nz_u32': case 'nz_i32':
      return 4;
    case 'u64': case 'i64': case 'f64': case 'nz_u64': case 'nz_i64':
      return 8;
    case 'u128': case 'i128':
      return 16;
    case 'usize': case 'isize':
      return null;
  }
}
