/**
 * The code generator: a protocol document (docs/INSPECT.md §4) in,
 * TypeScript out. Every message gets a type and a codec object (`ID`,
 * `NAME`, `FINGERPRINT`, `encodedLen`, `encode`, `decode`,
 * `decodeInPlace`, and the framed forms); the file also exports the
 * `protocol` a session says hello with and `decodeAny`, which dispatches on
 * the message id.
 *
 * The emitted decoders follow the Rust decoders' order of checks (derive
 * codegen, src/wire/impls): a struct's leading exact-size fields are
 * bounds-checked at once, a collection's count before anything else, so the
 * same bytes give the same `DecodeError` kind.
 */
import { bitsFor } from '../codec/bits.js';
import type { MessageSchema, ProtocolSchema } from '../codec/protocol-json.js';
import {
  countsWide,
  fingerprint,
  hex64,
  parseHex,
  scalarSize,
  type EnumShape,
  type FieldShape,
  type FlagsShape,
  type ScalarName,
  type Shape,
  type StructShape,
} from '../codec/shape.js';
import { findQuantParams, type QuantParams } from './quant-search.js';

export interface SnapshotHint {
  /** The field holding the items (a `Vec` of structs). */
  readonly items?: string;
  /** The item's key field. */
  readonly key?: string;
  /** The header's tick field (`#[zao(tick)]`); `''`: none. */
  readonly tick?: string;
}

export interface GenerateOptions {
  /** The module the generated file imports the runtime from (`zao-client`). */
  readonly runtime?: string;
  /** Shown in the header comment. */
  readonly source?: string;
  /** Quantized parameters by custom fingerprint (`0x…`), overriding the search. */
  readonly quant?: ReadonlyMap<string, QuantParams>;
  /** Delta snapshot layout by message name, overriding the heuristics. */
  readonly snapshots?: ReadonlyMap<string, SnapshotHint>;
}

/** A shape the generator cannot emit: the message is skipped with this reason in a comment. */
class Unsupported extends Error {}

/** What the generator knows of one shape occurrence. */
interface G {
  /** The TypeScript type. */
  ts: string;
  /** `Decode::MIN_SIZE`. */
  min: number;
  /** `Decode::EXACT_SIZE`. */
  exact: boolean;
  /** `Encode::FIXED_SIZE`: the encoded length if it never varies. */
  fixed: number | null;
  /** An estimate of `size_of` in Rust, for the allocation budget. */
  mem: number;
  align: number;
  /** Encoded length of `v` (only used when `fixed` is null). */
  len(v: string): string;
  /** Statements writing `v` at `p` (a `let`), advancing `p`. */
  put(v: string): string;
  /** For fixed-size shapes: statements writing `v` at `base + off`, not moving `p`. */
  putAt: ((v: string, base: string, off: number) => string) | null;
  /** An expression decoding from `r` with every check. */
  get(): string;
  /** For exact shapes whose bytes are known present: an expression reading at `base + off` from `b`/`dv`. */
  getAt: ((base: string, off: number) => string) | null;
  /** Statements decoding into the existing `t` (same shape), or null: assign `get()`. */
  setAt: ((t: string, base: string, off: number) => string) | null;
  /** Decode in place from `r` into `t`, an expression returning the value, or null. */
  into: ((t: string) => string) | null;
  /** Whether values compare by value as `Map` keys (primitives). */
  primitive: boolean;
  /** A comparator for sorted-map keys, or null (the order is unknown: only repeats are refused). */
  cmp: string | null;
  /** The `Default::default()` value (tolerant structs). */
  def: string;
}

const RT = [
  'Reader', 'DecodeError', 'EncodeError', 'DEFAULT_LIMITS', 'viewOf', 'fail', 'varintLen', 'putVarint',
  'strLen', 'putStr', 'bytesLen', 'putBytes', 'boolOf', 'charOf', 'charCode', 'nonZero', 'nonZeroBig',
  'getU128', 'getI128', 'putU128', 'isizeLen', 'putIsize', 'hashMapCharge', 'btreeCharge', 'cmpNum',
  'cmpStr', 'cmpBool', 'cmpBytes', 'keyOf', 'badValue', 'qrange', 'getQF32', 'putQF32', 'getQVector',
  'putQVector', 'getQAngle', 'putQAngle', 'getQQuat', 'putQQuat', 'splitMessage', 'makeProtocol',
  'f32Bits', 'bitsF32', 'f64Lanes', 'lanesF64', 'Lane', 'quantize', 'dequantize', 'qquatFromXyzw',
  'qquatToXyzw', 'qquatFits', 'lerpF32', 'lerpAngleStep', 'slerpQuat', 'nlerpQuat', 'quatOfLanes',
];
const RT_TYPES = [
  'DecodeLimits', 'MessageCodec', 'ProtocolInfo', 'Vec2', 'Vec3', 'Vec4', 'QQuatValue', 'QRange',
  'DeltaCodec', 'ChannelKind', 'LaneBuffer',
];

function ofs(base: string, off: number): string {
  return off === 0 ? base : `${base} + ${off}`;
}

function q(s: string): string {
  return JSON.stringify(s);
}

/** A property key: bare when it is an identifier or an index. */
function prop(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) || /^(0|[1-9][0-9]*)$/.test(name) ? name : q(name);
}

/** `v.name` or `v[0]` or `v["odd name"]`. */
function access(v: string, name: string): string {
  if (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name)) return `${v}.${name}`;
  if (/^(0|[1-9][0-9]*)$/.test(name)) return `${v}[${name}]`;
  return `${v}[${q(name)}]`;
}

function ident(name: string): string {
  const s = name.replace(/[^A-Za-z0-9_]/g, '_');
  return /^[0-9]/.test(s) ? `_${s}` : s;
}

function indent(code: string, n = 1): string {
  const pad = '  '.repeat(n);
  return code
    .split('\n')
    .map((l) => (l.length > 0 ? pad + l : l))
    .join('\n');
}

function roundUp(n: number, a: number): number {
  return a <= 1 ? n : Math.ceil(n / a) * a;
}

/** The key of a named shape occurrence: its name and its structure. */
function shapeKey(shape: Shape): string {
  return JSON.stringify(shape);
}

interface Named {
  name: string;
  shape: StructShape | EnumShape | FlagsShape;
  g: G | null;
  min: number;
  mem: number;
  align: number;
}

interface LaneSpec {
  /** Statements writing the field's lanes from `v` into `out` at `at + k`. */
  write: (v: string, at: number) => string;
  /** An expression rebuilding the field from `lanes` at `at + k`. */
  read: (at: number) => string;
  lanes: string[];
  /** An expression interpolating `a` to `b` by `t`. */
  interp: (a: string, b: string) => string;
}

export function generate(schema: ProtocolSchema, options: GenerateOptions = {}): string {
  return new Generator(schema, options).run();
}

class Generator {
  private readonly schema: ProtocolSchema;
  private readonly options: GenerateOptions;
  private readonly out: string[] = [];
  private readonly decls: string[] = [];
  private readonly named = new Map<string, Named>();
  private readonly usedNames = new Set<string>();
  private readonly anon = new Map<string, G>();
  private readonly ranges = new Map<string, string>();
  private counter = 0;
  /** The enclosing named struct or enum, for `self`. */
  private selfStack: Named[] = [];

  constructor(schema: ProtocolSchema, options: GenerateOptions) {
    this.schema = schema;
    this.options = options;
  }

  run(): string {
    for (const reserved of ['protocol', 'codecs', 'decodeAny', 'PROTOCOL_HASH', 'AnyMessage']) this.usedNames.add(reserved);
    const runtime = this.options.runtime ?? 'zao-client';
    const head: string[] = [];
    head.push(`// Generated by zao-codegen${this.options.source !== undefined ? ` from ${this.options.source}` : ''}. Do not edit.`);
    head.push(`// Protocol hash ${hex64(this.schema.hash)}.`);
    head.push('/* eslint-disable */');
    head.push(`import {\n${RT.map((n) => `  ${n} as $${n},`).join('\n')}\n} from ${q(runtime)};`);
    head.push(`import type {\n${RT_TYPES.map((n) => `  ${n} as $${n},`).join('\n')}\n} from ${q(runtime)};`);
    head.push('');
    head.push('// Keeps every import used, whichever shapes this protocol has.');
    head.push(`export const $runtime = [${RT.map((n) => `$${n}`).join(', ')}] as const;`);
    const messages: string[] = [];
    const any: { id: number; name: string; codec: string; type: string }[] = [];
    for (const m of this.schema.messages) {
      if (m.shape === null) {
        messages.push(`// ${m.name} (id ${m.id}): known only by its fingerprint; no codec.`);
        continue;
      }
      try {
        const codec = this.message(m, m.shape);
        messages.push(codec.code);
        any.push({ id: m.id, name: m.name, codec: codec.name, type: codec.type });
      } catch (e) {
        if (!(e instanceof Unsupported)) throw e;
        messages.push(`// ${m.name} (id ${m.id}): no codec: ${e.message}`);
      }
    }
    const body: string[] = [];
    body.push(...this.decls);
    body.push(...messages);
    body.push(this.protocol());
    body.push(this.anyMessage(any));
    for (const m of this.schema.messages) {
      if (m.shape === null) continue;
      const delta = this.delta(m, m.shape);
      if (delta !== null) body.push(delta);
    }
    const helpers = [...body.join('\n').matchAll(/^function (\$\w+)/gm)].map((x) => x[1]!);
    body.push(`// Every helper, so that a build with \`noUnusedLocals\` accepts this file.\nexport const $helpers = [\n${helpers.map((h) => `  ${h},`).join('\n')}\n] as const;`);
    const ranges = [...this.ranges.entries()].map(([k, v]) => `const ${v}: $QRange = $qrange(${k});`);
    return [...head, ...(ranges.length > 0 ? ['', ...ranges] : []), '', body.join('\n\n'), ''].join('\n');
  }

  private tmp(prefix = 't'): string {
    this.counter++;
    return `${prefix}${this.counter}`;
  }

  private uniqueName(name: string): string {
    let n = ident(name);
    if (n.length === 0) n = 'T';
    let candidate = n;
    let i = 2;
    while (this.usedNames.has(candidate)) candidate = `${n}_${i++}`;
    this.usedNames.add(candidate);
    return candidate;
  }

  // ---------------------------------------------------------------- shapes

  private gen(shape: Shape): G {
    switch (shape.kind) {
      case 'str':
        return this.str();
      case 'bytes':
        return this.byteString();
      case 'seq':
        return this.seq(shape.item);
      case 'array':
        return this.array(shape.len, shape.item);
      case 'option':
        return this.option(shape.item);
      case 'box':
        return this.box(shape.item);
      case 'tuple':
        return this.tuple(shape.items);
      case 'map':
        return this.map(shape.key, shape.value, shape.sorted);
      case 'vector':
        return this.vector(shape.name, shape.scalar, shape.len);
      case 'struct':
      case 'enum':
      case 'flags':
        return this.namedRef(shape);
      case 'custom':
        return this.custom(shape);
      case 'recursive': {
        if (shape.shape === null) throw new Unsupported(`the recursive field \`${shape.spelled}\` has no shape`);
        const inner = this.gen(shape.shape);
        // A recursive field counts nothing toward its struct's size (derive: `f.recursive`).
        return { ...inner, min: 0, exact: false, fixed: null, getAt: null, putAt: null, setAt: null };
      }
      case 'self': {
        const self = this.selfStack[this.selfStack.length - 1];
        if (self === undefined) throw new Unsupported('`self` outside a struct or enum');
        return this.namedG(self);
      }
      default:
        return this.scalar(shape.kind);
    }
  }

  private scalar(kind: ScalarName): G {
    const size = scalarSize(kind);
    const base: G = {
      ts: 'number',
      min: size ?? 1,
      exact: size !== null,
      fixed: size,
      mem: size ?? 8,
      align: size === 16 ? 16 : Math.max(size ?? 8, 1),
      len: () => `${size}`,
      put: () => '',
      putAt: null,
      get: () => '',
      getAt: null,
      setAt: null,
      into: null,
      primitive: true,
      cmp: '$cmpNum',
      def: '0',
    };
    const fixedG = (ts: string, read: (at: string) => string, write: (v: string, at: string) => string, def: string, cmp: string | null): G => {
      const g: G = {
        ...base,
        ts,
        def,
        cmp,
        getAt: (b, o) => read(ofs(b, o)),
        putAt: (v, b, o) => `${write(v, ofs(b, o))};`,
        get: () => '',
        put: () => '',
      };
      g.get = () => read(`r.take(${size})`).replace(/\bdv\b/g, 'r.view').replace(/\bb\[/g, 'r.bytes[');
      g.put = (v) => `${write(v, 'p')};\np += ${size};`;
      return g;
    };
    switch (kind) {
      case 'unit':
        return {
          ...base,
          ts: 'null',
          min: 0,
          exact: true,
          fixed: 0,
          mem: 0,
          align: 1,
          getAt: () => 'null',
          putAt: () => '',
          get: () => 'null',
          put: () => '',
          cmp: null,
          def: 'null',
        };
      case 'u8':
        return { ...fixedG('number', (at) => `b[${at}]!`, (v, at) => `b[${at}] = ${v}`, '0', '$cmpNum'), get: () => 'r.u8()' };
      case 'i8':
        return { ...fixedG('number', (at) => `((b[${at}]! << 24) >> 24)`, (v, at) => `b[${at}] = ${v}`, '0', '$cmpNum'), get: () => 'r.i8()' };
      case 'u16':
        return fixedG('number', (at) => `dv.getUint16(${at}, true)`, (v, at) => `dv.setUint16(${at}, ${v}, true)`, '0', '$cmpNum');
      case 'i16':
        return fixedG('number', (at) => `dv.getInt16(${at}, true)`, (v, at) => `dv.setInt16(${at}, ${v}, true)`, '0', '$cmpNum');
      case 'u32':
        return fixedG('number', (at) => `dv.getUint32(${at}, true)`, (v, at) => `dv.setUint32(${at}, ${v}, true)`, '0', '$cmpNum');
      case 'i32':
        return fixedG('number', (at) => `dv.getInt32(${at}, true)`, (v, at) => `dv.setInt32(${at}, ${v}, true)`, '0', '$cmpNum');
      case 'u64':
        return fixedG('bigint', (at) => `dv.getBigUint64(${at}, true)`, (v, at) => `dv.setBigUint64(${at}, ${v}, true)`, '0n', '$cmpNum');
      case 'i64':
        return fixedG('bigint', (at) => `dv.getBigInt64(${at}, true)`, (v, at) => `dv.setBigInt64(${at}, ${v}, true)`, '0n', '$cmpNum');
      case 'u128':
        return fixedG('bigint', (at) => `$getU128(dv, ${at})`, (v, at) => `$putU128(dv, ${at}, ${v})`, '0n', '$cmpNum');
      case 'i128':
        return fixedG('bigint', (at) => `$getI128(dv, ${at})`, (v, at) => `$putU128(dv, ${at}, ${v})`, '0n', '$cmpNum');
      case 'f32':
        return fixedG('number', (at) => `dv.getFloat32(${at}, true)`, (v, at) => `dv.setFloat32(${at}, ${v}, true)`, '0', null);
      case 'f64':
        return fixedG('number', (at) => `dv.getFloat64(${at}, true)`, (v, at) => `dv.setFloat64(${at}, ${v}, true)`, '0', null);
      case 'bool':
        return { ...fixedG('boolean', (at) => `$boolOf(b[${at}]!)`, (v, at) => `b[${at}] = ${v} ? 1 : 0`, 'false', '$cmpBool'), get: () => '$boolOf(r.u8())' };
      case 'char':
        return fixedG('string', (at) => `$charOf(dv.getUint32(${at}, true))`, (v, at) => `dv.setUint32(${at}, $charCode(${v}), true)`, "'\\0'", '$cmpStr');
      case 'nz_u8':
        return { ...fixedG('number', (at) => `$nonZero(b[${at}]!)`, (v, at) => `b[${at}] = ${v}`, '1', '$cmpNum'), get: () => '$nonZero(r.u8())' };
      case 'nz_i8':
        return { ...fixedG('number', (at) => `$nonZero((b[${at}]! << 24) >> 24)`, (v, at) => `b[${at}] = ${v}`, '1', '$cmpNum'), get: () => '$nonZero(r.i8())' };
      case 'nz_u16':
        return fixedG('number', (at) => `$nonZero(dv.getUint16(${at}, true))`, (v, at) => `dv.setUint16(${at}, ${v}, true)`, '1', '$cmpNum');
      case 'nz_i16':
        return fixedG('number', (at) => `$nonZero(dv.getInt16(${at}, true))`, (v, at) => `dv.setInt16(${at}, ${v}, true)`, '1', '$cmpNum');
      case 'nz_u32':
        return fixedG('number', (at) => `$nonZero(dv.getUint32(${at}, true))`, (v, at) => `dv.setUint32(${at}, ${v}, true)`, '1', '$cmpNum');
      case 'nz_i32':
        return fixedG('number', (at) => `$nonZero(dv.getInt32(${at}, true))`, (v, at) => `dv.setInt32(${at}, ${v}, true)`, '1', '$cmpNum');
      case 'nz_u64':
        return fixedG('bigint', (at) => `$nonZeroBig(dv.getBigUint64(${at}, true))`, (v, at) => `dv.setBigUint64(${at}, ${v}, true)`, '1n', '$cmpNum');
      case 'nz_i64':
        return fixedG('bigint', (at) => `$nonZeroBig(dv.getBigInt64(${at}, true))`, (v, at) => `dv.setBigInt64(${at}, ${v}, true)`, '1n', '$cmpNum');
      case 'usize':
        return { ...base, len: (v) => `$varintLen(${v})`, put: (v) => `p = $putVarint(b, p, ${v});`, get: () => 'r.usize()' };
      case 'isize':
        return { ...base, len: (v) => `$isizeLen(${v})`, put: (v) => `p = $putIsize(b, p, ${v});`, get: () => 'r.isize()' };
    }
  }

  private str(): G {
    return {
      ts: 'string',
      min: 1,
      exact: false,
      fixed: null,
      mem: 24,
      align: 8,
      len: (v) => `$strLen(${v})`,
      put: (v) => `p = $putStr(b, p, ${v});`,
      putAt: null,
      get: () => 'r.str()',
      getAt: null,
      setAt: null,
      into: null,
      primitive: true,
      cmp: '$cmpStr',
      def: "''",
    };
  }

  private byteString(): G {
    return {
      ts: 'Uint8Array',
      min: 1,
      exact: false,
      fixed: null,
      mem: 32,
      align: 8,
      len: (v) => `$bytesLen(${v})`,
      put: (v) => `p = $putBytes(b, p, ${v});`,
      putAt: null,
      get: () => 'r.byteString()',
      getAt: null,
      setAt: null,
      into: null,
      primitive: false,
      cmp: '$cmpBytes',
      def: 'new Uint8Array(0)',
    };
  }

  /** A helper function set for an anonymous composite shape, made once per structure. */
  private helper(key: string, make: (name: string) => { g: G; code: string }): G {
    const k = key.includes('"self"') ? `${key}|${this.selfStack.map((s) => s.name).join('/')}` : key;
    const found = this.anon.get(k);
    if (found !== undefined) return found;
    const name = `h${this.anon.size + 1}`;
    const { g, code } = make(name);
    this.anon.set(k, g);
    this.decls.push(code);
    return g;
  }

  private seq(itemShape: Shape): G {
    const item = this.gen(itemShape);
    const wide = countsWide(itemShape);
    const isU8 = itemShape.kind === 'u8';
    return this.helper(`seq:${shapeKey(itemShape)}`, (h) => {
      const countLen = wide ? '4' : '$varintLen(v.length)';
      const putCount = wide ? 'dv.setUint32(p, v.length, true);\np += 4;' : 'p = $putVarint(b, p, v.length);';
      const readCount = wide ? `r.wideCount(${item.min}, ${item.mem})` : `r.count(${item.min}, ${item.mem})`;
      if (isU8) {
        const code = [
          `function $len_${h}(v: Uint8Array): number {\n  return $varintLen(v.length) + v.length;\n}`,
          `function $put_${h}(v: Uint8Array, b: Uint8Array, dv: DataView, p: number): number {\n  p = $putVarint(b, p, v.length);\n  b.set(v, p);\n  return p + v.length;\n}`,
          `function $get_${h}(r: $Reader): Uint8Array {\n  r.enter();\n  const n = r.count(1, 1);\n  const at = r.take(n);\n  r.leave();\n  return r.bytes.slice(at, at + n);\n}`,
        ].join('\n\n');
        return { g: this.callG(h, 'Uint8Array', 1, 24, 8, { def: 'new Uint8Array(0)', cmp: '$cmpBytes' }), code };
      }
      const ts = `${wrapType(item.ts)}[]`;
      const lenBody =
        item.fixed !== null
          ? `return ${countLen} + v.length * ${item.fixed};`
          : `let n = ${countLen};\nfor (let i = 0; i < v.length; i++) n += ${item.len('v[i]!')};\nreturn n;`;
      const putLoop =
        item.putAt !== null && item.fixed !== null
          ? `for (let i = 0; i < v.length; i++) {\n${indent(item.putAt('v[i]!', 'p', 0))}\n  p += ${item.fixed};\n}`
          : `for (let i = 0; i < v.length; i++) {\n${indent(item.put('v[i]!'))}\n}`;
      const getLoop =
        item.getAt !== null && item.exact
          ? `let p = r.pos;\nconst b = r.bytes, dv = r.view;\nfor (let i = 0; i < n; i++) {\n  out.push(${item.getAt('p', 0)});\n  p += ${item.min};\n}\nr.pos = p;`
          : `for (let i = 0; i < n; i++) out.push(${item.get()});`;
      const lines = [
        `function $len_${h}(v: ${ts}): number {\n${indent(lenBody)}\n}`,
        `function $put_${h}(v: ${ts}, b: Uint8Array, dv: DataView, p: number): number {\n${indent(putCount)}\n${indent(putLoop)}\n  return p;\n}`,
        `function $get_${h}(r: $Reader): ${ts} {\n  r.enter();\n  const n = ${readCount};\n  const out: ${ts} = [];\n${indent(getLoop)}\n  r.leave();\n  return out;\n}`,
      ];
      let into: ((t: string) => string) | null = null;
      if (item.setAt !== null && item.getAt !== null && item.exact) {
        lines.push(
          `function $into_${h}(r: $Reader, t: ${ts}): ${ts} {\n  r.enter();\n  const n = ${readCount};\n  let p = r.pos;\n  const b = r.bytes, dv = r.view;\n  if (t.length > n) t.length = n;\n  const m = t.length;\n  for (let i = 0; i < m; i++) {\n${indent(item.setAt('t[i]!', 'p', 0), 2)}\n    p += ${item.min};\n  }\n  for (let i = m; i < n; i++) {\n    t.push(${item.getAt('p', 0)});\n    p += ${item.min};\n  }\n  r.pos = p;\n  r.leave();\n  return t;\n}`,
        );
        into = (t) => `$into_${h}(r, ${t})`;
      } else if (item.into !== null) {
        const intoItem = item.into('t[i]!');
        lines.push(
          `function $into_${h}(r: $Reader, t: ${ts}): ${ts} {\n  r.enter();\n  const n = ${readCount};\n  if (t.length > n) t.length = n;\n  const m = t.length;\n  for (let i = 0; i < m; i++) t[i] = ${intoItem};\n  for (let i = m; i < n; i++) t.push(${item.get()});\n  r.leave();\n  return t;\n}`,
        );
        into = (t) => `$into_${h}(r, ${t})`;
      }
      const g = this.callG(h, ts, wide ? 4 : 1, 24, 8, { def: '[]', cmp: null });
      g.into = into;
      return { g, code: lines.join('\n\n') };
    });
  }

  /** A G that calls the helper functions `$len_h`, `$put_h`, `$get_h`. */
  private callG(h: string, ts: string, min: number, mem: number, align: number, extra: { def: string; cmp: string | null }): G {
    return {
      ts,
      min,
      exact: false,
      fixed: null,
      mem,
      align,
      len: (v) => `$len_${h}(${v})`,
      put: (v) => `p = $put_${h}(${v}, b, dv, p);`,
      putAt: null,
      get: () => `$get_${h}(r)`,
      getAt: null,
      setAt: null,
      into: null,
      primitive: false,
      cmp: extra.cmp,
      def: extra.def,
    };
  }

  private array(len: number, itemShape: Shape): G {
    const item = this.gen(itemShape);
    const isU8 = itemShape.kind === 'u8';
    const ts = isU8 ? 'Uint8Array' : `${wrapType(item.ts)}[]`;
    const exact = item.exact;
    const fixed = item.fixed === null ? null : item.fixed * len;
    return this.helper(`array:${len}:${shapeKey(itemShape)}`, (h) => {
      const lines: string[] = [];
      if (isU8) {
        lines.push(`function $getAt_${h}(b: Uint8Array, dv: DataView, at: number): Uint8Array {\n  return b.slice(at, at + ${len});\n}`);
        lines.push(`function $putAt_${h}(v: Uint8Array, b: Uint8Array, dv: DataView, at: number): void {\n  for (let i = 0; i < ${len}; i++) b[at + i] = v[i] ?? 0;\n}`);
        lines.push(`function $get_${h}(r: $Reader): Uint8Array {\n  const at = r.take(${len});\n  return r.bytes.slice(at, at + ${len});\n}`);
      } else {
        if (item.getAt !== null && exact) {
          lines.push(`function $getAt_${h}(b: Uint8Array, dv: DataView, at: number): ${ts} {\n  const out: ${ts} = [];\n  for (let i = 0; i < ${len}; i++) out.push(${item.getAt(`at + i * ${item.min}`, 0)});\n  return out;\n}`);
        }
        if (item.putAt !== null && item.fixed !== null) {
          lines.push(`function $putAt_${h}(v: ${ts}, b: Uint8Array, dv: DataView, at: number): void {\n  for (let i = 0; i < ${len}; i++) {\n${indent(item.putAt('v[i]!', `at + i * ${item.fixed}`, 0), 2)}\n  }\n}`);
        }
        // Element by element, each with its own checks (`decode_slice_in_place`).
        lines.push(`function $get_${h}(r: $Reader): ${ts} {\n  const out: ${ts} = [];\n  for (let i = 0; i < ${len}; i++) out.push(${item.get()});\n  return out;\n}`);
      }
      lines.push(
        `function $len_${h}(v: ${ts}): number {\n${indent(item.fixed !== null ? `return ${fixed};` : `let n = 0;\nfor (let i = 0; i < ${len}; i++) n += ${item.len('v[i]!')};\nreturn n;`)}\n}`,
      );
      const putBody =
        item.putAt !== null && item.fixed !== null
          ? `$putAt_${h}(v, b, dv, p);\nreturn p + ${fixed};`
          : `for (let i = 0; i < ${len}; i++) {\n${indent(item.put('v[i]!'))}\n}\nreturn p;`;
      lines.push(`function $put_${h}(v: ${ts}, b: Uint8Array, dv: DataView, p: number): number {\n${indent(putBody)}\n}`);
      const g = this.callG(h, ts, item.min * len, item.mem * len, item.align, {
        def: isU8 ? `new Uint8Array(${len})` : `[${new Array<string>(len).fill(item.def).join(', ')}]`,
        cmp: isU8 ? '$cmpBytes' : null,
      });
      g.exact = exact;
      g.fixed = fixed;
      if (isU8 || (item.getAt !== null && exact)) g.getAt = (b, o) => `$getAt_${h}(b, dv, ${ofs(b, o)})`;
      if (isU8 || (item.putAt !== null && item.fixed !== null)) g.putAt = (v, b, o) => `$putAt_${h}(${v}, b, dv, ${ofs(b, o)});`;
      return { g, code: lines.join('\n\n') };
    });
  }

  private option(itemShape: Shape): G {
    const item = this.gen(itemShape);
    // `T | null`, or `{ some: T } | null` where `T` holds null itself
    // (`Option<Option<T>>`, `Option<()>`), so that every value has its form.
    const wrapped = /\bnull\b/.test(item.ts);
    const ts = wrapped ? `{ some: ${item.ts} } | null` : `${wrapType(item.ts)} | null`;
    const inner = wrapped ? 'v.some' : 'v';
    const niche = ['str', 'bytes', 'seq', 'map', 'box', 'bool', 'char', 'enum', 'option'].includes(itemShape.kind) || itemShape.kind.startsWith('nz_');
    return this.helper(`option:${shapeKey(itemShape)}`, (h) => {
      const lenBody = item.fixed !== null ? `return v === null ? 1 : ${1 + item.fixed};` : `return v === null ? 1 : 1 + ${item.len(inner)};`;
      const code = [
        `function $len_${h}(v: ${ts}): number {\n  ${lenBody}\n}`,
        `function $put_${h}(v: ${ts}, b: Uint8Array, dv: DataView, p: number): number {\n  if (v === null) {\n    b[p] = 0;\n    return p + 1;\n  }\n  b[p++] = 1;\n${indent(item.put(inner))}\n  return p;\n}`,
        // The tag alone decides what is read (c9_option_tags_alone_decide_what_is_read).
        `function $get_${h}(r: $Reader): ${ts} {\n  const tag = r.u8();\n  if (tag === 0) return null;\n  if (tag !== 1) $fail('InvalidTag');\n  return ${wrapped ? `{ some: ${item.get()} }` : item.get()};\n}`,
      ].join('\n\n');
      const mem = niche ? item.mem : item.mem + Math.max(item.align, 1);
      return { g: this.callG(h, ts, 1, mem, item.align, { def: 'null', cmp: null }), code };
    });
  }

  private box(itemShape: Shape): G {
    const item = this.gen(itemShape);
    return this.helper(`box:${shapeKey(itemShape)}`, (h) => {
      const code = [
        `function $len_${h}(v: ${item.ts}): number {\n  return ${item.fixed !== null ? item.fixed : item.len('v')};\n}`,
        `function $put_${h}(v: ${item.ts}, b: Uint8Array, dv: DataView, p: number): number {\n${indent(item.put('v'))}\n  return p;\n}`,
        `function $get_${h}(r: $Reader): ${item.ts} {\n  r.enter();\n  r.charge(${item.mem});\n  const v = ${item.get()};\n  r.leave();\n  return v;\n}`,
      ].join('\n\n');
      const g = this.callG(h, item.ts, item.min, 8, 8, { def: item.def, cmp: item.cmp });
      g.fixed = item.fixed;
      g.primitive = item.primitive;
      return { g, code };
    });
  }

  private tuple(items: readonly Shape[]): G {
    const gs = items.map((s) => this.gen(s));
    const ts = `[${gs.map((g) => g.ts).join(', ')}]`;
    const exact = gs.every((g) => g.exact);
    const fixed = gs.every((g) => g.fixed !== null) ? gs.reduce((n, g) => n + (g.fixed ?? 0), 0) : null;
    const min = gs.reduce((n, g) => n + g.min, 0);
    return this.helper(`tuple:${shapeKey({ kind: 'tuple', items })}`, (h) => {
      const lines: string[] = [];
      const lenExpr = fixed !== null ? `${fixed}` : gs.map((g, i) => (g.fixed !== null ? `${g.fixed}` : g.len(`v[${i}]`))).join(' + ') || '0';
      lines.push(`function $len_${h}(v: ${ts}): number {\n  return ${lenExpr};\n}`);
      lines.push(`function $put_${h}(v: ${ts}, b: Uint8Array, dv: DataView, p: number): number {\n${indent(gs.map((g, i) => g.put(`v[${i}]`)).join('\n'))}\n  return p;\n}`);
      const allAt = gs.every((g) => g.getAt !== null);
      if (exact && allAt) {
        let off = 0;
        const parts = gs.map((g) => {
          const e = g.getAt!('at', off);
          off += g.min;
          return e;
        });
        lines.push(`function $getAt_${h}(b: Uint8Array, dv: DataView, at: number): ${ts} {\n  return [${parts.join(', ')}];\n}`);
        // An exact-size tuple is one bounds check (src/wire/impls/seq.rs `tuple!`).
        lines.push(`function $get_${h}(r: $Reader): ${ts} {\n  const at = r.take(${min});\n  return $getAt_${h}(r.bytes, r.view, at);\n}`);
      } else {
        const vars = gs.map(() => this.tmp('e'));
        const check = exact ? `  if (r.end - r.pos < ${min}) $fail('UnexpectedEnd');\n` : '';
        lines.push(`function $get_${h}(r: $Reader): ${ts} {\n${check}${gs.map((g, i) => `  const ${vars[i]} = ${g.get()};`).join('\n')}\n  return [${vars.join(', ')}];\n}`);
      }
      const mem = roundUp(gs.reduce((n, g) => n + g.mem, 0), Math.max(1, ...gs.map((g) => g.align)));
      const g = this.callG(h, ts, min, mem, Math.max(1, ...gs.map((x) => x.align)), { def: `[${gs.map((x) => x.def).join(', ')}]`, cmp: null });
      g.exact = exact;
      g.fixed = fixed;
      if (exact && allAt) g.getAt = (b, o) => `$getAt_${h}(b, dv, ${ofs(b, o)})`;
      if (fixed !== null && gs.every((x) => x.putAt !== null)) {
        let off = 0;
        const stmts = gs.map((x, i) => {
          const s = x.putAt!(`v[${i}]`, 'at', off);
          off += x.fixed ?? 0;
          return s;
        });
        lines.push(`function $putAt_${h}(v: ${ts}, b: Uint8Array, dv: DataView, at: number): void {\n${indent(stmts.join('\n'))}\n}`);
        g.putAt = (v, b, o) => `$putAt_${h}(${v}, b, dv, ${ofs(b, o)});`;
      }
      if (gs.every((x) => x.cmp !== null)) {
        lines.push(`function $cmp_${h}(a: ${ts}, b: ${ts}): number {\n${gs.map((x, i) => `  {\n    const c = ${x.cmp}(a[${i}], b[${i}]);\n    if (c !== 0) return c;\n  }`).join('\n')}\n  return 0;\n}`);
        g.cmp = `$cmp_${h}`;
      }
      return { g, code: lines.join('\n\n') };
    });
  }

  private map(keyShape: Shape, valueShape: Shape, sorted: boolean): G {
    const k = this.gen(keyShape);
    const v = this.gen(valueShape);
    const ts = `Map<${k.ts}, ${v.ts}>`;
    return this.helper(`map:${sorted}:${shapeKey(keyShape)}:${shapeKey(valueShape)}`, (h) => {
      const lines: string[] = [];
      const entries = sorted && k.cmp !== null ? `[...m.entries()].sort((x, y) => ${k.cmp}(x[0], y[0]))` : 'm';
      const lenBody =
        k.fixed !== null && v.fixed !== null
          ? `return $varintLen(m.size) + m.size * ${k.fixed + v.fixed};`
          : `let n = $varintLen(m.size);\nfor (const [key, value] of m) n += ${k.fixed !== null ? k.fixed : k.len('key')} + ${v.fixed !== null ? v.fixed : v.len('value')};\nreturn n;`;
      lines.push(`function $len_${h}(m: ${ts}): number {\n${indent(lenBody)}\n}`);
      const putEntry =
        k.putAt !== null && v.putAt !== null && k.fixed !== null && v.fixed !== null
          ? `${k.putAt('key', 'p', 0)}\n${v.putAt('value', 'p', k.fixed)}\np += ${k.fixed + v.fixed};`
          : `${k.put('key')}\n${v.put('value')}`;
      lines.push(`function $put_${h}(m: ${ts}, b: Uint8Array, dv: DataView, p: number): number {\n  p = $putVarint(b, p, m.size);\n  for (const [key, value] of ${entries}) {\n${indent(putEntry, 2)}\n  }\n  return p;\n}`);
      const entrySize = roundUp(k.mem + v.mem, Math.max(k.align, v.align, 1));
      const entryAlign = Math.max(k.align, v.align, 1);
      const charge = sorted ? `$btreeCharge(n, ${k.mem}, ${v.mem}, ${entryAlign})` : `$hashMapCharge(n, ${entrySize}, ${entryAlign})`;
      // Key, then value, then the repeat check (`insert_new`); sorted: strictly ascending.
      // Keys and values of exact size are one run, checked by the count (`exact_run`).
      const run = k.exact && v.exact && k.getAt !== null && v.getAt !== null && k.min + v.min > 0;
      let check: string;
      if (sorted && k.cmp !== null) {
        check = `if (i > 0 && ${k.cmp}(key, last!) <= 0) $fail('DuplicateKey');\nlast = key;`;
      } else if (k.primitive) {
        check = `if (m.has(key)) $fail('DuplicateKey');`;
      } else {
        check = `const kb = $keyOf(b, ks, ke);\nif (seen.has(kb)) $fail('DuplicateKey');\nseen.add(kb);`;
      }
      const keyBytes = !(sorted && k.cmp !== null) && !k.primitive;
      const readEntry = run
        ? `${keyBytes ? `const ks = p, ke = p + ${k.min};\n` : ''}const key = ${k.getAt!('p', 0)};\nconst value = ${v.getAt!('p', k.min)};\n${check}\nm.set(key, value);\np += ${k.min + v.min};`
        : `${keyBytes ? 'const ks = r.pos;\n' : ''}const key = ${k.get()};\n${keyBytes ? 'const ke = r.pos;\n' : ''}const value = ${v.get()};\n${check}\nm.set(key, value);`;
      const decls = `${sorted && k.cmp !== null ? `let last: ${k.ts} | undefined;\n` : ''}${keyBytes ? 'const seen = new Set<string>();\n' : ''}${run ? 'let p = r.pos;\n' : ''}${run || keyBytes ? 'const b = r.bytes, dv = r.view;\n' : ''}`;
      const fill = `const n = r.count(${k.min + v.min}, 0);\nr.charge(${charge});\n${decls}for (let i = 0; i < n; i++) {\n${indent(readEntry)}\n}${run ? '\nr.pos = p;' : ''}`;
      lines.push(`function $get_${h}(r: $Reader): ${ts} {\n  r.enter();\n  const m: ${ts} = new Map();\n${indent(fill)}\n  r.leave();\n  return m;\n}`);
      lines.push(`function $into_${h}(r: $Reader, m: ${ts}): ${ts} {\n  r.enter();\n  m.clear();\n${indent(fill)}\n  r.leave();\n  return m;\n}`);
      const g = this.callG(h, ts, 1, sorted ? 24 : 48, 8, { def: 'new Map()', cmp: null });
      g.into = (t) => `$into_${h}(r, ${t})`;
      return { g, code: lines.join('\n\n') };
    });
  }

  private vector(name: string, scalar: ScalarName, len: number): G {
    const size = scalarSize(scalar) ?? 4;
    const comps = ['x', 'y', 'z', 'w'].slice(0, len);
    const get = scalar === 'f32' ? 'getFloat32' : scalar === 'i32' ? 'getInt32' : scalar === 'u32' ? 'getUint32' : scalar === 'f64' ? 'getFloat64' : null;
    if (get === null || len < 1 || len > 4) throw new Unsupported(`vector ${name} of ${scalar}`);
    const set = get.replace('get', 'set');
    const ts = len === 2 ? '$Vec2' : len === 3 ? '$Vec3' : '$Vec4';
    const fixed = size * len;
    const g: G = {
      ts,
      min: fixed,
      exact: true,
      fixed,
      mem: fixed,
      align: len === 4 && scalar === 'f32' ? 16 : size,
      len: () => `${fixed}`,
      putAt: (v, b, o) => comps.map((c, i) => `dv.${set}(${ofs(b, o + i * size)}, ${v}.${c}, true);`).join('\n'),
      put: (v) => `${comps.map((c, i) => `dv.${set}(${ofs('p', i * size)}, ${v}.${c}, true);`).join('\n')}\np += ${fixed};`,
      getAt: (b, o) => `{ ${comps.map((c, i) => `${c}: dv.${get}(${ofs(b, o + i * size)}, true)`).join(', ')} }`,
      get: () => '',
      setAt: (t, b, o) => comps.map((c, i) => `${t}.${c} = dv.${get}(${ofs(b, o + i * size)}, true);`).join('\n'),
      into: null,
      primitive: false,
      cmp: null,
      def: `{ ${comps.map((c) => `${c}: ${name === 'quat' && c === 'w' ? 1 : 0}`).join(', ')} }`,
    };
    g.get = () => `((at: number, dv: DataView) => (${g.getAt!('at', 0)}))(r.take(${fixed}), r.view)`;
    // A function of its own reads better than an arrow per call.
    return this.helper(`vector:${name}:${scalar}:${len}`, (h) => {
      const code = `function $get_${h}(r: $Reader): ${ts} {\n  const at = r.take(${fixed});\n  const dv = r.view;\n  return ${g.getAt!('at', 0)};\n}`;
      g.get = () => `$get_${h}(r)`;
      return { g, code };
    });
  }

  private custom(shape: Extract<Shape, { kind: 'custom' }>): G {
    const fp = parseHex(shape.fingerprint) ?? 0n;
    const wire = shape.wire;
    const bytes = wire.kind === 'array' && wire.item.kind === 'u8' ? wire.len : null;
    if (bytes !== null && ['QF32', 'QVector', 'QAngle', 'QQuat'].includes(shape.name)) {
      const params = this.options.quant?.get(hex64(fp)) ?? findQuantParams(shape.name, bytes, fp);
      if (params !== null) return this.quant(params, bytes);
    }
    // Another hand-written type: its wire shape.
    return this.gen(wire);
  }

  private rangeConst(min: number, max: number, perUnit: number): string {
    const key = `${min}, ${max}, ${perUnit}`;
    let name = this.ranges.get(key);
    if (name === undefined) {
      name = `$range${this.ranges.size + 1}`;
      this.ranges.set(key, name);
    }
    return name;
  }

  private quant(params: QuantParams, bytes: number): G {
    const base = {
      min: bytes,
      exact: true,
      fixed: bytes,
      len: () => `${bytes}`,
      setAt: null,
      into: null,
      primitive: false,
      cmp: null as string | null,
    };
    const make = (ts: string, mem: number, getAt: (at: string) => string, putAt: (v: string, at: string) => string, def: string, primitive: boolean): G => ({
      ...base,
      ts,
      mem,
      align: 4,
      primitive,
      cmp: primitive ? '$cmpNum' : null,
      def,
      getAt: (b, o) => getAt(ofs(b, o)),
      putAt: (v, b, o) => `${putAt(v, ofs(b, o))};`,
      get: () => getAt(`r.take(${bytes})`).replace(/\bb\b/g, 'r.bytes'),
      put: (v) => `${putAt(v, 'p')};\np += ${bytes};`,
    });
    switch (params.kind) {
      case 'qf32': {
        const R = this.rangeConst(params.min, params.max, params.perUnit);
        const steps = (params.max - params.min) * params.perUnit;
        return make('number', 4, (at) => `$getQF32(${R}, b, ${at})`, (v, at) => `$putQF32(${R}, b, ${at}, ${v})`, `${defaultStep(params.min, params.max, params.perUnit, steps)}`, true);
      }
      case 'qvector': {
        const R = this.rangeConst(params.min, params.max, params.perUnit);
        const steps = (params.max - params.min) * params.perUnit;
        const d = defaultStep(params.min, params.max, params.perUnit, steps);
        return make('number[]', 4 * params.n, (at) => `$getQVector(${R}, ${params.n}, b, ${at})`, (v, at) => `$putQVector(${R}, ${params.n}, b, ${at}, ${v})`, `[${new Array<number>(params.n).fill(d).join(', ')}]`, false);
      }
      case 'qangle':
        return make('number', 4, (at) => `$getQAngle(${params.bits}, b, ${at})`, (v, at) => `$putQAngle(${params.bits}, b, ${at}, ${v})`, '0', true);
      case 'qquat': {
        const h = 2 ** (params.bits - 1) - 1;
        return make('$QQuatValue', 16, (at) => `$getQQuat(${params.bits}, b, ${at})`, (v, at) => `$putQQuat(${params.bits}, b, ${at}, ${v})`, `{ largest: 3, steps: [${h}, ${h}, ${h}] }`, false);
      }
    }
  }

  // ---------------------------------------------------------------- named types

  private namedRef(shape: StructShape | EnumShape | FlagsShape): G {
    const key = shapeKey(shape);
    let n = this.named.get(key);
    if (n === undefined) {
      n = { name: this.uniqueName(shape.name), shape, g: null, min: 0, mem: 0, align: 1 };
      this.named.set(key, n);
      this.emitNamed(n);
    }
    return this.namedG(n);
  }

  private namedG(n: Named): G {
    if (n.g !== null) return n.g;
    // A reference from inside its own definition (`self`): calls only.
    return {
      ts: n.name,
      min: n.min,
      exact: false,
      fixed: null,
      mem: n.mem,
      align: n.align,
      len: (v) => `$len_${n.name}(${v})`,
      put: (v) => `p = $put_${n.name}(${v}, b, dv, p);`,
      putAt: null,
      get: () => `$get_${n.name}(r)`,
      getAt: null,
      setAt: null,
      into: null,
      primitive: false,
      cmp: null,
      def: `$default_${n.name}()`,
    };
  }

  private emitNamed(n: Named): void {
    switch (n.shape.kind) {
      case 'struct':
        return this.emitStruct(n, n.shape);
      case 'enum':
        return this.emitEnum(n, n.shape);
      case 'flags':
        return this.emitFlags(n, n.shape);
    }
  }

  /** MIN_SIZE and a size estimate before the fields are generated (for `self`). */
  private preSize(fields: readonly FieldShape[]): { min: number; mem: number; align: number } {
    let min = 0;
    let mem = 0;
    let align = 1;
    for (const f of fields) {
      const s = quickSize(f.shape);
      if (f.shape.kind !== 'recursive') min += s.min;
      mem += s.mem;
      align = Math.max(align, s.align);
    }
    return { min, mem: roundUp(mem, align), align };
  }

  private emitStruct(n: Named, s: StructShape): void {
    const pre = this.preSize(s.fields);
    n.min = s.tolerant ? 1 : pre.min;
    n.mem = pre.mem;
    n.align = pre.align;
    this.selfStack.push(n);
    const fields = s.fields.map((f) => ({ f, g: this.gen(f.shape) }));
    this.selfStack.pop();
    const T = n.name;
    const tuple = s.style === 'tuple';
    const unit = s.fields.length === 0;
    // The type.
    let typeDecl: string;
    if (unit) typeDecl = `export type ${T} = Record<string, never>;`;
    else if (tuple) typeDecl = `export type ${T} = [${fields.map(({ g }) => g.ts).join(', ')}];`;
    else typeDecl = `export interface ${T} {\n${fields.map(({ f, g }) => `  ${prop(f.name)}: ${g.ts};`).join('\n')}\n}`;
    const field = (v: string, f: FieldShape): string => (tuple ? `${v}[${f.name}]` : access(v, f.name));
    const build = (vals: string[]): string =>
      unit ? '{}' : tuple ? `[${vals.join(', ')}]` : `{ ${fields.map(({ f }, i) => `${prop(f.name)}: ${vals[i]}`).join(', ')} }`;
    const exact = !s.tolerant && fields.every(({ g }) => g.exact);
    const fixed = !s.tolerant && fields.every(({ g }) => g.fixed !== null) ? fields.reduce((a, { g }) => a + (g.fixed ?? 0), 0) : null;
    const min = s.tolerant ? 1 : fields.reduce((a, { g }) => a + g.min, 0);
    n.min = min;
    const lines: string[] = [typeDecl];
    // Length.
    const bodyLen = fixed !== null ? `${fixed}` : fields.map(({ f, g }) => (g.fixed !== null ? `${g.fixed}` : g.len(field('v', f)))).join(' + ') || '0';
    if (s.tolerant) {
      lines.push(`function $body_${T}(v: ${T}): number {\n  return ${bodyLen};\n}`);
      lines.push(`function $len_${T}(v: ${T}): number {\n  const n = $body_${T}(v);\n  return $varintLen(n) + n;\n}`);
    } else {
      lines.push(`function $len_${T}(v: ${T}): number {\n  return ${bodyLen};\n}`);
    }
    // Put: runs of fixed-size fields at constant offsets.
    const putStmts: string[] = [];
    if (s.tolerant) putStmts.push(`p = $putVarint(b, p, $body_${T}(v));`);
    let run = 0;
    for (const { f, g } of fields) {
      if (g.putAt !== null && g.fixed !== null) {
        putStmts.push(g.putAt(field('v', f), 'p', run));
        run += g.fixed;
      } else {
        if (run > 0) putStmts.push(`p += ${run};`);
        run = 0;
        putStmts.push(g.put(field('v', f)));
      }
    }
    if (run > 0) putStmts.push(`p += ${run};`);
    lines.push(`function $put_${T}(v: ${T}, b: Uint8Array, dv: DataView, p: number): number {\n${indent(putStmts.filter((x) => x !== '').join('\n'))}\n  return p;\n}`);
    // Get.
    const allAt = fields.every(({ g }) => g.getAt !== null);
    let getAt: ((b: string, o: number) => string) | null = null;
    let putAt: ((v: string, b: string, o: number) => string) | null = null;
    let setAt: ((t: string, b: string, o: number) => string) | null = null;
    if (exact && allAt) {
      let off = 0;
      const vals = fields.map(({ g }) => {
        const e = g.getAt!('at', off);
        off += g.min;
        return e;
      });
      lines.push(`function $getAt_${T}(b: Uint8Array, dv: DataView, at: number): ${T} {\n  return ${build(vals)};\n}`);
      lines.push(`function $get_${T}(r: $Reader): ${T} {\n  const at = r.pos;\n  if (r.end - at < ${min}) $fail('UnexpectedEnd');\n  r.pos = at + ${min};\n  return $getAt_${T}(r.bytes, r.view, at);\n}`);
      getAt = (b, o) => `$getAt_${T}(b, dv, ${ofs(b, o)})`;
      // In place: each field over the existing value.
      off = 0;
      const sets = fields.map(({ f, g }) => {
        const target = field('t', f);
        const st = g.setAt !== null ? g.setAt(target, 'at', off) : `${target} = ${g.getAt!('at', off)};`;
        off += g.min;
        return st;
      });
      lines.push(`function $setAt_${T}(b: Uint8Array, dv: DataView, at: number, t: ${T}): void {\n${indent(sets.join('\n'))}\n}`);
      setAt = (t, b, o) => `$setAt_${T}(b, dv, ${ofs(b, o)}, ${t});`;
      lines.push(`function $into_${T}(r: $Reader, t: ${T}): ${T} {\n  const at = r.pos;\n  if (r.end - at < ${min}) $fail('UnexpectedEnd');\n  r.pos = at + ${min};\n  $setAt_${T}(r.bytes, r.view, at, t);\n  return t;\n}`);
    } else if (s.tolerant) {
      const vars = fields.map(() => this.tmp('v'));
      const stmts = fields.map(({ g }, i) => `const ${vars[i]} = r.atEnd() ? ${g.def} : ${g.get()};`);
      lines.push(`function $get_${T}(r: $Reader): ${T} {\n  const outer = r.splitBody();\n${indent(stmts.join('\n'))}\n  r.join(outer);\n  return ${build(vars)};\n}`);
      lines.push(`function $into_${T}(r: $Reader, t: ${T}): ${T} {\n  return $get_${T}(r);\n}`);
    } else {
      // The leading exact-size fields are checked at once (derive: `__prefix`).
      let prefix = 0;
      let k = 0;
      while (k < fields.length && fields[k]!.g.exact && fields[k]!.f.shape.kind !== 'recursive') {
        prefix += fields[k]!.g.min;
        k++;
      }
      const vars = fields.map(() => this.tmp('v'));
      const stmts: string[] = [];
      const intoStmts: string[] = [];
      const both = (x: string): void => {
        stmts.push(x);
        intoStmts.push(x);
      };
      if (prefix > 0) both(`const at = r.pos;\nif (r.end - at < ${prefix}) $fail('UnexpectedEnd');\nconst b = r.bytes, dv = r.view;`);
      let off = 0;
      let atOffsets = prefix > 0;
      for (let i = 0; i < fields.length; i++) {
        const { f, g } = fields[i]!;
        const target = field('t', f);
        if (i < k && atOffsets && g.getAt !== null) {
          stmts.push(`const ${vars[i]} = ${g.getAt('at', off)};`);
          intoStmts.push(g.setAt !== null ? g.setAt(target, 'at', off) : `${target} = ${g.getAt('at', off)};`);
          off += g.min;
          continue;
        }
        if (atOffsets) {
          // The rest reads in order from the reader (the prefix is known present).
          if (prefix > 0) both(`r.pos = at + ${off};`);
          atOffsets = false;
        }
        stmts.push(`const ${vars[i]} = ${g.get()};`);
        intoStmts.push(g.into !== null ? `${target} = ${g.into(target)};` : `${target} = ${g.get()};`);
      }
      if (atOffsets && prefix > 0) both(`r.pos = at + ${off};`);
      lines.push(`function $get_${T}(r: $Reader): ${T} {\n${indent(stmts.join('\n'))}\n  return ${build(vars)};\n}`);
      lines.push(`function $into_${T}(r: $Reader, t: ${T}): ${T} {\n${indent(intoStmts.join('\n'))}\n  return t;\n}`);
    }
    if (fixed !== null && fields.every(({ g }) => g.putAt !== null)) {
      let off = 0;
      const stmts = fields.map(({ f, g }) => {
        const st = g.putAt!(field('v', f), 'at', off);
        off += g.fixed ?? 0;
        return st;
      });
      lines.push(`function $putAt_${T}(v: ${T}, b: Uint8Array, dv: DataView, at: number): void {\n${indent(stmts.join('\n'))}\n}`);
      putAt = (v, b, o) => `$putAt_${T}(${v}, b, dv, ${ofs(b, o)});`;
    }
    lines.push(`function $default_${T}(): ${T} {\n  return ${build(fields.map(({ g }) => g.def))};\n}`);
    this.decls.push(lines.join('\n\n'));
    n.g = {
      ts: T,
      min,
      exact,
      fixed,
      mem: roundUp(fields.reduce((a, { g }) => a + g.mem, 0), Math.max(1, ...fields.map(({ g }) => g.align))),
      align: Math.max(1, ...fields.map(({ g }) => g.align)),
      len: (v) => `$len_${T}(${v})`,
      put: (v) => `p = $put_${T}(${v}, b, dv, p);`,
      putAt,
      get: () => `$get_${T}(r)`,
      getAt,
      setAt,
      into: (t) => `$into_${T}(r, ${t})`,
      primitive: false,
      cmp: null,
      def: `$default_${T}()`,
    };
  }

  private emitEnum(n: Named, e: EnumShape): void {
    const T = n.name;
    const small = e.variants.every((v) => v.tag < 0x80);
    const unitOnly = e.variants.every((v) => v.fields.length === 0);
    const tagKey = e.variants.some((v) => v.fields.some((f) => f.name === 'tag')) ? '$tag' : 'tag';
    const tagLen = (tag: number): number => (tag < 0x80 ? 1 : tag < 0x4000 ? 2 : tag < 0x200000 ? 3 : tag < 0x10000000 ? 4 : 5);
    // Size first, for `self` inside variants.
    let pmin = Infinity;
    let pmem = 0;
    for (const v of e.variants) {
      const s = this.preSize(v.fields);
      pmin = Math.min(pmin, tagLen(v.tag) + s.min);
      pmem = Math.max(pmem, s.mem);
    }
    n.min = e.variants.length === 0 ? 0 : pmin;
    n.mem = pmem + 8;
    n.align = 8;
    this.selfStack.push(n);
    const variants = e.variants.map((v) => ({ v, gs: v.fields.map((f) => ({ f, g: this.gen(f.shape) })) }));
    this.selfStack.pop();
    const sizes = variants.map(({ v, gs }) => tagLen(v.tag) + gs.reduce((a, { g }) => a + g.min, 0));
    const exact = variants.length > 0 && variants.every(({ gs }, i) => gs.every(({ g }) => g.exact) && sizes[i] === sizes[0]);
    const min = variants.length === 0 ? 0 : Math.min(...sizes);
    const fixedSizes = variants.map(({ v, gs }) => (gs.every(({ g }) => g.fixed !== null) ? tagLen(v.tag) + gs.reduce((a, { g }) => a + (g.fixed ?? 0), 0) : null));
    const fixed = variants.length > 0 && fixedSizes.every((x) => x !== null && x === fixedSizes[0]) ? fixedSizes[0]! : null;
    const lines: string[] = [];
    const putTag = (tag: number): string => (tag < 0x80 ? `b[p++] = ${tag};` : `p = $putVarint(b, p, ${tag});`);
    const readTag = small ? 'r.u8()' : 'r.varintU32()';
    if (unitOnly) {
      lines.push(`export type ${T} = ${variants.length === 0 ? 'never' : variants.map(({ v }) => q(v.name)).join(' | ')};`);
      lines.push(`export const ${T}Variants = [${variants.map(({ v }) => q(v.name)).join(', ')}] as const;`);
      lines.push(`function $len_${T}(v: ${T}): number {\n${indent(fixed !== null ? `return ${fixed};` : `switch (v) {\n${variants.map(({ v }) => `  case ${q(v.name)}: return ${tagLen(v.tag)};`).join('\n')}\n  default: return $badValue(${q(T)});\n}`)}\n}`);
      lines.push(`function $put_${T}(v: ${T}, b: Uint8Array, dv: DataView, p: number): number {\n  switch (v) {\n${variants.map(({ v }) => `    case ${q(v.name)}:\n      ${putTag(v.tag)}\n      return p;`).join('\n')}\n    default:\n      return $badValue(${q(T)});\n  }\n}`);
      lines.push(`function $get_${T}(r: $Reader): ${T} {\n  switch (${readTag}) {\n${variants.map(({ v }) => `    case ${v.tag}: return ${q(v.name)};`).join('\n')}\n    default: return $fail('InvalidTag');\n  }\n}`);
    } else {
      const vt = (v: (typeof variants)[number]): string =>
        `{ readonly ${tagKey}: ${q(v.v.name)}${v.gs.map(({ f, g }) => `; ${prop(f.name)}: ${g.ts}`).join('')} }`;
      lines.push(`export type ${T} =\n${variants.map((v) => `  | ${vt(v)}`).join('\n')};`);
      const lenCases = variants.map(({ v, gs }) => {
        const parts = [`${tagLen(v.tag)}`, ...gs.map(({ f, g }) => (g.fixed !== null ? `${g.fixed}` : g.len(access('v', f.name))))];
        return `    case ${q(v.name)}:\n      return ${parts.join(' + ')};`;
      });
      lines.push(`function $len_${T}(v: ${T}): number {\n  switch (v.${tagKey}) {\n${lenCases.join('\n')}\n    default:\n      return $badValue(${q(T)});\n  }\n}`);
      const putCases = variants.map(({ v, gs }) => `    case ${q(v.name)}: {\n      ${putTag(v.tag)}\n${indent(gs.map(({ f, g }) => g.put(access('v', f.name))).join('\n'), 3)}\n      return p;\n    }`);
      lines.push(`function $put_${T}(v: ${T}, b: Uint8Array, dv: DataView, p: number): number {\n  switch (v.${tagKey}) {\n${putCases.join('\n')}\n    default:\n      return $badValue(${q(T)});\n  }\n}`);
      const getCases = variants.map(({ v, gs }) => {
        const vars = gs.map(() => this.tmp('v'));
        const stmts = gs.map(({ g }, i) => `const ${vars[i]} = ${g.get()};`);
        const obj = `{ ${tagKey}: ${q(v.name)}${gs.map(({ f }, i) => `, ${prop(f.name)}: ${vars[i]}`).join('')} }`;
        return `    case ${v.tag}: {\n${indent(stmts.join('\n'), 3)}\n      return ${obj};\n    }`;
      });
      lines.push(`function $get_${T}(r: $Reader): ${T} {\n  switch (${readTag}) {\n${getCases.join('\n')}\n    default:\n      return $fail('InvalidTag');\n  }\n}`);
    }
    // Exact enums of one-byte tags read at an offset (a struct's checked prefix).
    let getAt: ((b: string, o: number) => string) | null = null;
    let putAt: ((v: string, b: string, o: number) => string) | null = null;
    if (exact && small && variants.every(({ gs }) => gs.every(({ g }) => g.getAt !== null))) {
      const cases = variants.map(({ v, gs }) => {
        let off = 1;
        const vals = gs.map(({ g }) => {
          const e = g.getAt!('at', off);
          off += g.min;
          return e;
        });
        const value = unitOnly ? q(v.name) : `{ ${tagKey}: ${q(v.name)}${gs.map(({ f }, i) => `, ${prop(f.name)}: ${vals[i]}`).join('')} }`;
        return `    case ${v.tag}: return ${value};`;
      });
      lines.push(`function $getAt_${T}(b: Uint8Array, dv: DataView, at: number): ${T} {\n  switch (b[at]) {\n${cases.join('\n')}\n    default: return $fail('InvalidTag');\n  }\n}`);
      getAt = (b, o) => `$getAt_${T}(b, dv, ${ofs(b, o)})`;
    }
    if (fixed !== null) {
      lines.push(`function $putAt_${T}(v: ${T}, b: Uint8Array, dv: DataView, at: number): void {\n  $put_${T}(v, b, dv, at);\n}`);
      putAt = (v, b, o) => `$putAt_${T}(${v}, b, dv, ${ofs(b, o)});`;
    }
    const first = variants[0];
    const def = first === undefined ? `$badValue(${q(T)})` : unitOnly ? q(first.v.name) : `{ ${tagKey}: ${q(first.v.name)}${first.gs.map(({ f, g }) => `, ${prop(f.name)}: ${g.def}`).join('')} }`;
    lines.push(`function $default_${T}(): ${T} {\n  return ${def} as ${T};\n}`);
    this.decls.push(lines.join('\n\n'));
    n.g = {
      ts: T,
      min,
      exact,
      fixed,
      mem: n.mem,
      align: 8,
      len: (v) => (fixed !== null ? `${fixed}` : `$len_${T}(${v})`),
      put: (v) => `p = $put_${T}(${v}, b, dv, p);`,
      putAt,
      get: () => `$get_${T}(r)`,
      getAt,
      setAt: null,
      into: null,
      primitive: unitOnly,
      cmp: null,
      def: `$default_${T}()`,
    };
  }

  private emitFlags(n: Named, f: FlagsShape): void {
    const T = n.name;
    const inner = this.scalar(f.bits);
    const big = inner.ts === 'bigint';
    let mask = 0n;
    for (const fl of f.flags) mask |= parseHex(fl.value) ?? 0n;
    const lit = (v: bigint): string => (big ? `0x${v.toString(16)}n` : `0x${v.toString(16)}`);
    const lines: string[] = [];
    lines.push(`export type ${T} = ${inner.ts};`);
    lines.push(`export const ${T} = {\n${f.flags.map((fl) => `  ${prop(fl.name)}: ${lit(parseHex(fl.value) ?? 0n)},`).join('\n')}\n  NONE: ${lit(0n)},\n  ALL: ${lit(mask)},\n} as const;`);
    const check = big ? `(x & ~${lit(mask)}) !== 0n` : `(x & ~${lit(mask)}) !== 0`;
    lines.push(`function $flags_${T}(x: ${T}): ${T} {\n  if (${check}) $fail('InvalidValue');\n  return x;\n}`);
    this.decls.push(lines.join('\n\n'));
    n.mem = inner.mem;
    n.align = inner.align;
    n.min = inner.min;
    n.g = {
      ...inner,
      ts: T,
      getAt: (b, o) => `$flags_${T}(${inner.getAt!(b, o)})`,
      get: () => `$flags_${T}(${inner.get()})`,
      primitive: true,
      cmp: '$cmpNum',
      def: lit(0n),
    };
  }

  // ---------------------------------------------------------------- messages

  private message(m: MessageSchema, shape: Shape): { code: string; name: string; type: string } {
    const g = this.gen(shape);
    const named = shape.kind === 'struct' || shape.kind === 'enum' || shape.kind === 'flags' ? this.named.get(shapeKey(shape))! : null;
    const codecName =
      named !== null && named.shape.kind !== 'flags' && named.name === ident(m.name)
        ? named.name
        : this.uniqueName(named !== null && named.shape.kind === 'flags' ? `${m.name}Message` : m.name);
    let type = g.ts;
    const lines: string[] = [];
    if (named === null || named.name !== codecName) {
      type = this.uniqueName(`${m.name}Value`);
      lines.push(`export type ${type} = ${g.ts};`);
    }
    const T = type;
    const blittable = shape.kind === 'struct' && shape.blittable && g.getAt !== null && g.fixed !== null;
    const fastExact = g.exact && g.getAt !== null && g.fixed !== null;
    const encodeBody =
      g.fixed !== null
        ? `const available = buf.length - offset;\nif (available < ${g.fixed}) throw new $EncodeError(${g.fixed}, Math.max(0, available));\nconst b = buf, dv = $viewOf(buf);\n${g.putAt !== null ? g.putAt('v', 'offset', 0) : `let p = offset;\n${g.put('v')}`}\nreturn ${g.fixed};`
        : `const n = ${g.len('v')};\nconst available = buf.length - offset;\nif (available < n) throw new $EncodeError(n, Math.max(0, available));\nconst b = buf, dv = $viewOf(buf);\nlet p = offset;\n${g.put('v')}\nreturn n;`;
    const general = `if (bytes.length > limits.maxMessage) $fail('MessageTooLarge');\nconst r = $Reader.acquire(bytes, limits);\nconst v = ${g.get()};\nif (r.pos !== r.end) $fail('TrailingBytes');\nreturn v;`;
    let decodeBody: string;
    if (blittable) {
      // The memory image under default limits: one length check (`blit_len_error`).
      decodeBody = `if (limits === $DEFAULT_LIMITS) {\n  if (bytes.length !== ${g.fixed}) $fail(bytes.length < ${g.fixed} ? 'UnexpectedEnd' : 'TrailingBytes');\n  const b = bytes, dv = $viewOf(bytes);\n  return ${g.getAt!('0', 0)};\n}\n${general}`;
    } else if (fastExact) {
      // One compare stands for the size limit, the bounds and the trailing bytes (`check_length`).
      decodeBody = `if (bytes.length === ${g.min} && ${g.min} <= limits.maxMessage) {\n  const b = bytes, dv = $viewOf(bytes);\n  return ${g.getAt!('0', 0)};\n}\n${general}`;
    } else {
      decodeBody = general;
    }
    const intoBody = g.into !== null
      ? `if (bytes.length > limits.maxMessage) $fail('MessageTooLarge');\nconst r = $Reader.acquire(bytes, limits);\nconst v = ${g.into('target')};\nif (r.pos !== r.end) $fail('TrailingBytes');\nreturn v;`
      : `return ${codecName}.decode(bytes, limits);`;
    const idLen = m.id < 0x80 ? 1 : m.id < 0x4000 ? 2 : m.id < 0x200000 ? 3 : m.id < 0x10000000 ? 4 : 5;
    lines.push(`/** ${m.name}: message id ${m.id} on channel ${q(m.channelName)}, ${m.direction}. */
export const ${codecName}: $MessageCodec<${T}> = {
  ID: ${m.id},
  NAME: ${q(m.name)},
  FINGERPRINT: ${hex64(m.fingerprint)}n,
  CHANNEL: ${m.channel},
  DIRECTION: ${q(m.direction)},
  minSize: ${g.min},
  exactSize: ${g.exact},
  encodedLen(v: ${T}): number {
    return ${g.fixed !== null ? g.fixed : g.len('v')};
  },
  encode(v: ${T}, buf: Uint8Array, offset = 0): number {
${indent(encodeBody, 2)}
  },
  decode(bytes: Uint8Array, limits: $DecodeLimits = $DEFAULT_LIMITS): ${T} {
${indent(decodeBody, 2)}
  },
  decodeInPlace(target: ${T}, bytes: Uint8Array, limits: $DecodeLimits = $DEFAULT_LIMITS): ${T} {
${indent(intoBody, 2)}
  },
  decodeFrom(r: $Reader): ${T} {
    return ${g.get()};
  },
  messageLen(v: ${T}): number {
    return ${idLen} + ${codecName}.encodedLen(v);
  },
  encodeMessage(v: ${T}, buf: Uint8Array, offset = 0): number {
    const n = ${codecName}.messageLen(v);
    const available = buf.length - offset;
    if (available < n) throw new $EncodeError(n, Math.max(0, available));
    const p = $putVarint(buf, offset, ${m.id});
    return p - offset + ${codecName}.encode(v, buf, p);
  },
  decodeMessage(bytes: Uint8Array, limits: $DecodeLimits = $DEFAULT_LIMITS): ${T} {
    const [id, at] = $splitMessage(bytes);
    if (id !== ${m.id}) throw new $DecodeError('UnexpectedMessage', { expected: ${m.id}, found: id });
    return ${codecName}.decode(bytes.subarray(at), limits);
  },
};`);
    return { code: lines.join('\n\n'), name: codecName, type: T };
  }

  private protocol(): string {
    const channels = this.schema.channels.map((c) => `    { name: ${q(c.name)}, kind: ${q(c.kind)}, priority: ${c.priority} },`).join('\n');
    const entries = this.schema.messages
      .map((m) => `    { id: ${m.id}, name: ${q(m.name)}, fingerprint: ${hex64(m.fingerprint)}n, channel: ${m.channel}, direction: ${q(m.direction)} },`)
      .join('\n');
    return `/** The protocol: what a client says hello with (docs/WIRE.md §12.3). */
export const protocol: $ProtocolInfo = $makeProtocol(
  [
${channels}
  ],
  [
${entries}
  ],
);

/** The hash the document states; \`protocol.hash\` is computed and must equal it. */
export const PROTOCOL_HASH = ${hex64(this.schema.hash)}n;`;
  }

  private anyMessage(any: { id: number; name: string; codec: string; type: string }[]): string {
    const union = any.length === 0 ? 'never' : any.map((a) => `\n  | { readonly id: ${a.id}; readonly name: ${q(a.name)}; readonly value: ${a.type} }`).join('');
    const cases = any.map((a) => `    case ${a.id}:\n      return { id: ${a.id}, name: ${q(a.name)}, value: ${a.codec}.decode(body, limits) };`).join('\n');
    return `/** Any message of this protocol, by id. */
export type AnyMessage = ${union};

/** Every codec, by message id. */
export const codecs: ReadonlyMap<number, $MessageCodec<never>> = new Map<number, $MessageCodec<never>>([
${any.map((a) => `  [${a.id}, ${a.codec} as unknown as $MessageCodec<never>],`).join('\n')}
]);

/** Decodes one framed message (\`id + body\`); an id not in the protocol is \`UnknownMessage\`. */
export function decodeAny(bytes: Uint8Array, limits: $DecodeLimits = $DEFAULT_LIMITS): AnyMessage {
  const [id, at] = $splitMessage(bytes);
  const body = bytes.subarray(at);
  switch (id) {
${cases}
    default:
      throw new $DecodeError('UnknownMessage', { id });
  }
}`;
  }

  // ---------------------------------------------------------------- delta snapshots

  /** A `DeltaCodec` for a snapshot message whose items have a key and lanes; null when not. */
  private delta(m: MessageSchema, shape: Shape): string | null {
    const kind = this.schema.channels[m.channel]?.kind;
    if (kind !== 'Snapshot' || shape.kind !== 'struct' || shape.tolerant || shape.style !== 'named') return null;
    const hint = this.options.snapshots?.get(m.name) ?? {};
    const seqs = shape.fields.filter((f) => f.shape.kind === 'seq' && f.shape.item.kind === 'struct');
    const itemsField = hint.items !== undefined ? shape.fields.find((f) => f.name === hint.items) : seqs.length === 1 ? seqs[0] : undefined;
    if (itemsField === undefined || itemsField.shape.kind !== 'seq' || itemsField.shape.item.kind !== 'struct') return null;
    const item = itemsField.shape.item;
    if (item.style !== 'named' || item.tolerant) return null;
    const unsigned = (s: Shape): boolean => ['u8', 'u16', 'u32', 'u64'].includes(s.kind);
    const keyField =
      hint.key !== undefined
        ? item.fields.find((f) => f.name === hint.key)
        : item.fields.find((f) => unsigned(f.shape) && ['entity', 'id', 'key'].includes(f.name)) ?? item.fields.find((f) => unsigned(f.shape));
    if (keyField === undefined || !unsigned(keyField.shape)) return null;
    const keyBits = { u8: 8, u16: 16, u32: 32, u64: 64 }[keyField.shape.kind as 'u8'];
    const tickName = hint.tick !== undefined ? hint.tick : 'tick';
    const tickField = shape.fields.find((f) => f.name === tickName && unsigned(f.shape));
    const specs: { f: FieldShape; spec: LaneSpec }[] = [];
    for (const f of item.fields) {
      if (f === keyField) continue;
      const spec = this.lanes(f.shape);
      if (spec === null) return null;
      specs.push({ f, spec });
    }
    const S = this.named.get(shapeKey(shape))!.name;
    const I = this.named.get(shapeKey(item))!.name;
    const lanes = specs.flatMap(({ spec }) => spec.lanes);
    let at = 0;
    const writes: string[] = [];
    const reads: string[] = [];
    const interps: string[] = [];
    for (const { f, spec } of specs) {
      writes.push(spec.write(access('item', f.name), at));
      reads.push(`${prop(f.name)}: ${spec.read(at)}`);
      interps.push(`${prop(f.name)}: ${spec.interp(access('a', f.name), access('b', f.name))}`);
      at += spec.lanes.length;
    }
    const keyIsBig = keyField.shape.kind === 'u64';
    const keyOf = keyIsBig ? `Number(${access('item', keyField.name)})` : access('item', keyField.name);
    const keyFrom = keyIsBig ? 'BigInt(key)' : 'key';
    const fieldsInOrder = item.fields.map((f) => (f === keyField ? `${prop(f.name)}: ${keyFrom}` : reads[specs.findIndex((s) => s.f === f)]!));
    const interpInOrder = item.fields.map((f) => (f === keyField ? `${prop(f.name)}: ${access('b', f.name)}` : interps[specs.findIndex((s) => s.f === f)]!));
    const name = this.uniqueName(`${m.name}Delta`);
    return `/** ${m.name} as delta snapshots (docs/WIRE.md §12.10): items ${q(itemsField.name)} keyed by ${q(keyField.name)}. */
export const ${name}: $DeltaCodec<${S}, ${I}> = {
  ID: ${m.id},
  keyBits: ${keyBits},
  lanes: [
${lanes.map((l) => `    ${l},`).join('\n')}
  ],
  key(item: ${I}): number {
    return ${keyOf};
  },
  writeLanes(item: ${I}, out: $LaneBuffer, at: number): void {
${indent(writes.join('\n'), 2)}
  },
  readLanes(key: number, lanes: ArrayLike<number>, at: number): ${I} {
    return { ${fieldsInOrder.join(', ')} };
  },
  items(snapshot: ${S}): ${I}[] {
    return ${access('snapshot', itemsField.name)};
  },
  withItems(header: ${S}, items: ${I}[]): ${S} {
    return { ...header, ${prop(itemsField.name)}: items };
  },
  decodeHeader(r: $Reader): ${S} {
    return $get_${S}(r);
  },
  tick(snapshot: ${S}): number | null {
    return ${tickField !== undefined ? (tickField.shape.kind === 'u64' ? `Number(${access('snapshot', tickField.name)})` : access('snapshot', tickField.name)) : 'null'};
  },
  interpolate(a: ${I}, b: ${I}, t: number): ${I} {
    return { ${interpInOrder.join(', ')} };
  },
};`;
  }

  /** The lanes of a field (src/wire/lanes.rs, quant.rs), or null when the type has none. */
  private lanes(shape: Shape): LaneSpec | null {
    const discrete = (a: string, b: string): string => `(t < 0.5 ? ${a} : ${b})`;
    const one = (lane: string, write: (v: string) => string, read: (x: string) => string, interp: (a: string, b: string) => string): LaneSpec => ({
      lanes: [lane],
      write: (v, at) => `out[at + ${at}] = ${write(v)};`,
      read: (at) => read(`lanes[at + ${at}]!`),
      interp,
    });
    switch (shape.kind) {
      case 'u8':
        return one('$Lane.bits(8)', (v) => v, (x) => x, discrete);
      case 'u16':
        return one('$Lane.bits(16)', (v) => v, (x) => x, discrete);
      case 'u32':
        return one('$Lane.bits(32)', (v) => v, (x) => x, discrete);
      case 'i8':
        return one('$Lane.wrapping(8)', (v) => `${v} & 0xff`, (x) => `((${x} << 24) >> 24)`, discrete);
      case 'i16':
        return one('$Lane.wrapping(16)', (v) => `${v} & 0xffff`, (x) => `((${x} << 16) >> 16)`, discrete);
      case 'i32':
        return one('$Lane.wrapping(32)', (v) => `${v} >>> 0`, (x) => `(${x} | 0)`, discrete);
      case 'bool':
        return one('$Lane.upto(1)', (v) => `${v} ? 1 : 0`, (x) => `${x} === 1`, discrete);
      case 'f32':
        return one('$Lane.bits(32)', (v) => `$f32Bits(${v})`, (x) => `$bitsF32(${x})`, (a, b) => `$lerpF32(${a}, ${b}, t)`);
      case 'u64':
      case 'i64':
      case 'f64': {
        const lane = shape.kind === 'i64' ? '$Lane.wrapping(32)' : '$Lane.bits(32)';
        return {
          lanes: [lane, lane],
          write: (v, at) =>
            shape.kind === 'f64'
              ? `$f64Lanes(${v}, out, at + ${at});`
              : `out[at + ${at}] = Number(BigInt.asUintN(32, ${v}));\nout[at + ${at + 1}] = Number(BigInt.asUintN(32, ${v} >> 32n));`,
          read: (at) =>
            shape.kind === 'f64'
              ? `$lanesF64(lanes[at + ${at}]!, lanes[at + ${at + 1}]!)`
              : `${shape.kind === 'i64' ? 'BigInt.asIntN' : 'BigInt.asUintN'}(64, BigInt(lanes[at + ${at}]!) | (BigInt(lanes[at + ${at + 1}]!) << 32n))`,
          interp: shape.kind === 'f64' ? (a, b) => `(${a} + (${b} - ${a}) * t)` : discrete,
        };
      }
      case 'vector': {
        const comps = ['x', 'y', 'z', 'w'].slice(0, shape.len);
        const sc = shape.scalar;
        const inner = this.lanes({ kind: sc });
        if (inner === null || inner.lanes.length !== 1) return null;
        const isQuat = shape.name === 'quat';
        return {
          lanes: comps.map(() => inner.lanes[0]!),
          write: (v, at) => comps.map((c, i) => inner.write(`${v}.${c}`, at + i)).join('\n'),
          read: (at) => `{ ${comps.map((c, i) => `${c}: ${inner.read(at + i)}`).join(', ')} }`,
          interp: isQuat ? (a, b) => `$slerpQuat(${a}, ${b}, t)` : (a, b) => `{ ${comps.map((c) => `${c}: ${inner.interp(`${a}.${c}`, `${b}.${c}`)}`).join(', ')} }`,
        };
      }
      case 'array': {
        const inner = this.lanes(shape.item);
        if (inner === null) return null;
        const w = inner.lanes.length;
        const idx = Array.from({ length: shape.len }, (_, i) => i);
        return {
          lanes: idx.flatMap(() => inner.lanes),
          write: (v, at) => idx.map((i) => inner.write(`${v}[${i}]`, at + i * w)).join('\n'),
          read: (at) => `[${idx.map((i) => inner.read(at + i * w)).join(', ')}]`,
          interp: (a, b) => `[${idx.map((i) => inner.interp(`${a}[${i}]`, `${b}[${i}]`)).join(', ')}]`,
        };
      }
      case 'custom': {
        const wire = shape.wire;
        const bytes = wire.kind === 'array' && wire.item.kind === 'u8' ? wire.len : null;
        const fp = parseHex(shape.fingerprint) ?? 0n;
        const params = bytes === null ? null : this.options.quant?.get(hex64(fp)) ?? findQuantParams(shape.name, bytes, fp);
        if (params === null) return null;
        switch (params.kind) {
          case 'qf32': {
            const R = this.rangeConst(params.min, params.max, params.perUnit);
            return one(`$Lane.upto(${(params.max - params.min) * params.perUnit})`, (v) => v, (x) => x, (a, b) => `$quantize(${R}, $lerpF32($dequantize(${R}, ${a}), $dequantize(${R}, ${b}), t))`);
          }
          case 'qvector': {
            const R = this.rangeConst(params.min, params.max, params.perUnit);
            const steps = (params.max - params.min) * params.perUnit;
            const idx = Array.from({ length: params.n }, (_, i) => i);
            return {
              lanes: idx.map(() => `$Lane.upto(${steps})`),
              write: (v, at) => idx.map((i) => `out[at + ${at + i}] = ${v}[${i}]!;`).join('\n'),
              read: (at) => `[${idx.map((i) => `lanes[at + ${at + i}]!`).join(', ')}]`,
              interp: (a, b) => `[${idx.map((i) => `$quantize(${R}, $lerpF32($dequantize(${R}, ${a}[${i}]!), $dequantize(${R}, ${b}[${i}]!), t))`).join(', ')}]`,
            };
          }
          case 'qangle':
            return one(`$Lane.wrapping(${params.bits})`, (v) => v, (x) => x, (a, b) => `$lerpAngleStep(${params.bits}, ${a}, ${b}, t)`);
          case 'qquat':
            return {
              lanes: ['$Lane.upto(3)', `$Lane.upto(${2 * (2 ** (params.bits - 1) - 1)})`, `$Lane.upto(${2 * (2 ** (params.bits - 1) - 1)})`, `$Lane.upto(${2 * (2 ** (params.bits - 1) - 1)})`],
              write: (v, at) => `out[at + ${at}] = ${v}.largest;\nout[at + ${at + 1}] = ${v}.steps[0];\nout[at + ${at + 2}] = ${v}.steps[1];\nout[at + ${at + 3}] = ${v}.steps[2];`,
              read: (at) => `$quatOfLanes(${params.bits}, lanes[at + ${at}]!, lanes[at + ${at + 1}]!, lanes[at + ${at + 2}]!, lanes[at + ${at + 3}]!)`,
              interp: (a, b) => `$qquatFromXyzw(${params.bits}, $nlerpQuat($qquatToXyzw(${params.bits}, ${a}), $qquatToXyzw(${params.bits}, ${b}), t))`,
            };
        }
        return null;
      }
      default:
        return null;
    }
  }
}

/** Wraps a union type for use in an array type. */
function wrapType(ts: string): string {
  return ts.includes('|') || ts.includes('=>') ? `(${ts})` : ts;
}

/** The step nearest zero of a range: `QF32::default()`. */
function defaultStep(min: number, max: number, perUnit: number, steps: number): number {
  const qv = Math.round(-min * perUnit);
  return Math.min(Math.max(qv, 0), steps);
}

/** MIN_SIZE and a size estimate of a shape, without generating it (for `self`). */
function quickSize(shape: Shape): { min: number; mem: number; align: number } {
  switch (shape.kind) {
    case 'str':
      return { min: 1, mem: 24, align: 8 };
    case 'bytes':
      return { min: 1, mem: 32, align: 8 };
    case 'seq':
      return { min: countsWide(shape.item) ? 4 : 1, mem: 24, align: 8 };
    case 'map':
      return { min: 1, mem: shape.sorted ? 24 : 48, align: 8 };
    case 'option': {
      const s = quickSize(shape.item);
      return { min: 1, mem: s.mem + s.align, align: s.align };
    }
    case 'box':
      return { min: quickSize(shape.item).min, mem: 8, align: 8 };
    case 'array': {
      const s = quickSize(shape.item);
      return { min: s.min * shape.len, mem: s.mem * shape.len, align: s.align };
    }
    case 'tuple': {
      let min = 0;
      let mem = 0;
      let align = 1;
      for (const i of shape.items) {
        const s = quickSize(i);
        min += s.min;
        mem += s.mem;
        align = Math.max(align, s.align);
      }
      return { min, mem, align };
    }
    case 'vector': {
      const size = (scalarSize(shape.scalar) ?? 4) * shape.len;
      return { min: size, mem: size, align: 4 };
    }
    case 'struct': {
      if (shape.tolerant) return { min: 1, mem: 24, align: 8 };
      let min = 0;
      let mem = 0;
      for (const f of shape.fields) {
        const s = quickSize(f.shape);
        if (f.shape.kind !== 'recursive') min += s.min;
        mem += s.mem;
      }
      return { min, mem, align: 8 };
    }
    case 'enum':
      return { min: 1, mem: 16, align: 8 };
    case 'flags': {
      const size = scalarSize(shape.bits) ?? 8;
      return { min: size, mem: size, align: size };
    }
    case 'custom':
      return shape.wire.kind === 'array' ? { min: shape.wire.len, mem: 16, align: 4 } : quickSize(shape.wire);
    case 'recursive':
      return { min: 0, mem: 24, align: 8 };
    case 'self':
      return { min: 0, mem: 8, align: 8 };
    default: {
      const size = scalarSize(shape.kind);
      return { min: size ?? 1, mem: size ?? 8, align: Math.max(1, size ?? 8) };
    }
  }
}

export { bitsFor, fingerprint };
