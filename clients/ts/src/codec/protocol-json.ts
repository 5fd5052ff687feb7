/**
 * Reading the protocol JSON (docs/INSPECT.md §4, src/inspect/json.rs):
 * the same checks as `ProtocolSchema::from_json`, each a typed error.
 */
import {
  CHANNEL_KINDS,
  DIRECTIONS,
  protocolHash,
  type ChannelDef,
  type ChannelKind,
  type Direction,
  type ProtocolEntry,
} from '../session/protocol.js';
import {
  fingerprint,
  isScalar,
  parseHex,
  type FieldShape,
  type FieldStyle,
  type Shape,
  type VariantShape,
} from './shape.js';

export const PROTOCOL_JSON_FORMAT = 'zao-protocol';
export const PROTOCOL_JSON_VERSION = 2;
const MAX_NESTING = 128;

/** Why a protocol document did not load: what is wrong, and where (a JSON path). */
export class ProtocolJsonError extends Error {
  readonly path: string;
  constructor(message: string, path: string) {
    super(`protocol JSON, at ${path}: ${message}`);
    this.name = 'ProtocolJsonError';
    this.path = path;
  }
}

/** One message of a protocol document. */
export interface MessageSchema {
  readonly id: number;
  readonly name: string;
  readonly fingerprint: bigint;
  /** The channel's index. */
  readonly channel: number;
  readonly channelName: string;
  readonly direction: Direction;
  /** `null`: a message known only by its fingerprint. */
  readonly shape: Shape | null;
}

/** A loaded protocol document: every fingerprint and the hash checked. */
export interface ProtocolSchema {
  readonly hash: bigint;
  readonly channels: readonly ChannelDef[];
  /** Ascending id. */
  readonly messages: readonly MessageSchema[];
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function obj(v: Json, path: string): { [key: string]: Json } {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new ProtocolJsonError('expected an object', path);
  return v;
}

function key(o: { [key: string]: Json }, k: string, path: string): Json {
  if (!Object.prototype.hasOwnProperty.call(o, k)) throw new ProtocolJsonError(`missing key \`${k}\``, path);
  return o[k]!;
}

function str(v: Json, path: string): string {
  if (typeof v !== 'string') throw new ProtocolJsonError('expected a string', path);
  return v;
}

function bool(v: Json, path: string): boolean {
  if (typeof v !== 'boolean') throw new ProtocolJsonError('expected true or false', path);
  return v;
}

function int(v: Json, path: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new ProtocolJsonError(`expected an integer from ${min} to ${max}`, path);
  }
  return v;
}

function arr(v: Json, path: string): Json[] {
  if (!Array.isArray(v)) throw new ProtocolJsonError('expected an array', path);
  return v;
}

function hex(v: Json, path: string): bigint {
  const h = parseHex(str(v, path));
  if (h === null) throw new ProtocolJsonError('expected `0x` and hex digits', path);
  return h;
}

function depth(v: Json, path: string, level: number): void {
  if (v === null || typeof v !== 'object') return;
  if (level >= MAX_NESTING) throw new ProtocolJsonError('nested deeper than 128', path);
  for (const child of Array.isArray(v) ? v : Object.values(v)) depth(child, path, level + 1);
}

function style(v: Json, path: string): FieldStyle {
  const s = str(v, path);
  if (s !== 'named' && s !== 'tuple' && s !== 'unit') throw new ProtocolJsonError('invalid style', path);
  return s;
}

function fields(o: { [key: string]: Json }, path: string): FieldShape[] {
  return arr(key(o, 'fields', path), `${path}.fields`).map((f, i) => {
    const p = `${path}.fields[${i}]`;
    const fo = obj(f, p);
    return { name: str(key(fo, 'name', p), `${p}.name`), shape: readShape(key(fo, 'shape', p), `${p}.shape`) };
  });
}

/** Reads one shape object. */
export function readShape(v: Json, path: string): Shape {
  const o = obj(v, path);
  const kind = str(key(o, 'kind', path), `${path}.kind`);
  const item = (k: string): Shape => readShape(key(o, k, path), `${path}.${k}`);
  switch (kind) {
    case 'str':
    case 'bytes':
    case 'self':
      return { kind };
    case 'seq':
    case 'option':
    case 'box':
      return { kind, item: item('item') };
    case 'array':
      return { kind, len: int(key(o, 'len', path), `${path}.len`, 0, Number.MAX_SAFE_INTEGER), item: item('item') };
    case 'tuple':
      return { kind, items: arr(key(o, 'items', path), `${path}.items`).map((s, i) => readShape(s, `${path}.items[${i}]`)) };
    case 'map':
      return { kind, key: item('key'), value: item('value'), sorted: bool(key(o, 'sorted', path), `${path}.sorted`) };
    case 'vector': {
      const scalar = str(key(o, 'scalar', path), `${path}.scalar`);
      if (!isScalar(scalar)) throw new ProtocolJsonError('invalid scalar', `${path}.scalar`);
      return {
        kind,
        name: str(key(o, 'name', path), `${path}.name`),
        scalar,
        len: int(key(o, 'len', path), `${path}.len`, 0, Number.MAX_SAFE_INTEGER),
      };
    }
    case 'struct':
      return {
        kind,
        name: str(key(o, 'name', path), `${path}.name`),
        style: style(key(o, 'style', path), `${path}.style`),
        fields: fields(o, path),
        tolerant: bool(key(o, 'tolerant', path), `${path}.tolerant`),
        blittable: bool(key(o, 'blittable', path), `${path}.blittable`),
      };
    case 'enum': {
      const variants: VariantShape[] = [];
      arr(key(o, 'variants', path), `${path}.variants`).forEach((vv, i) => {
        const p = `${path}.variants[${i}]`;
        const vo = obj(vv, p);
        const tag = int(key(vo, 'tag', p), `${p}.tag`, 0, 0xffffffff);
        const last = variants[variants.length - 1];
        if (last !== undefined && last.tag >= tag) throw new ProtocolJsonError('tags must ascend', `${p}.tag`);
        variants.push({ name: str(key(vo, 'name', p), `${p}.name`), tag, style: style(key(vo, 'style', p), `${p}.style`), fields: fields(vo, p) });
      });
      return { kind, name: str(key(o, 'name', path), `${path}.name`), variants };
    }
    case 'flags': {
      const bits = str(key(o, 'bits', path), `${path}.bits`);
      if (!isScalar(bits)) throw new ProtocolJsonError('invalid bits', `${path}.bits`);
      return {
        kind,
        name: str(key(o, 'name', path), `${path}.name`),
        bits,
        flags: arr(key(o, 'flags', path), `${path}.flags`).map((f, i) => {
          const p = `${path}.flags[${i}]`;
          const fo = obj(f, p);
          const value = str(key(fo, 'value', p), `${p}.value`);
          hex(value, `${p}.value`);
          return { name: str(key(fo, 'name', p), `${p}.name`), value };
        }),
      };
    }
    case 'custom': {
      const fp = str(key(o, 'fingerprint', path), `${path}.fingerprint`);
      hex(fp, `${path}.fingerprint`);
      return { kind, name: str(key(o, 'name', path), `${path}.name`), fingerprint: fp, wire: item('wire') };
    }
    case 'recursive': {
      const inner = key(o, 'shape', path);
      return {
        kind,
        spelled: str(key(o, 'spelled', path), `${path}.spelled`),
        shape: inner === null ? null : readShape(inner, `${path}.shape`),
      };
    }
    default:
      if (isScalar(kind)) return { kind };
      throw new ProtocolJsonError(`unknown kind \`${kind}\``, `${path}.kind`);
  }
}

/**
 * Parses and checks a protocol document: format and version, channels,
 * every message's fingerprint against its shape, the hash against the
 * messages.
 */
export function parseProtocolJson(text: string): ProtocolSchema {
  let doc: Json;
  try {
    doc = JSON.parse(text) as Json;
  } catch (e) {
    throw new ProtocolJsonError(`not JSON: ${e instanceof Error ? e.message : String(e)}`, '$');
  }
  depth(doc, '$', 0);
  const root = obj(doc, '$');
  if (str(key(root, 'format', '$'), '$.format') !== PROTOCOL_JSON_FORMAT || key(root, 'version', '$') !== PROTOCOL_JSON_VERSION) {
    throw new ProtocolJsonError(`not a \`${PROTOCOL_JSON_FORMAT}\` document of version ${PROTOCOL_JSON_VERSION}`, '$');
  }
  const channels: ChannelDef[] = arr(key(root, 'channels', '$'), '$.channels').map((c, i) => {
    const p = `$.channels[${i}]`;
    const co = obj(c, p);
    const kind = str(key(co, 'kind', p), `${p}.kind`);
    if (!(CHANNEL_KINDS as readonly string[]).includes(kind)) throw new ProtocolJsonError('invalid channel kind', `${p}.kind`);
    return {
      name: str(key(co, 'name', p), `${p}.name`),
      kind: kind as ChannelKind,
      priority: int(key(co, 'priority', p), `${p}.priority`, -0x80000000, 0x7fffffff),
    };
  });
  channels.forEach((c, i) => {
    if (channels.findIndex((o) => o.name === c.name) !== i) throw new ProtocolJsonError('two channels of one name', `$.channels[${i}].name`);
  });
  if (channels.length > 255) throw new ProtocolJsonError('more than 255 channels', '$.channels');
  const messages: MessageSchema[] = [];
  arr(key(root, 'messages', '$'), '$.messages').forEach((m, i) => {
    const p = `$.messages[${i}]`;
    const mo = obj(m, p);
    const id = int(key(mo, 'id', p), `${p}.id`, 0, 0xffffffff);
    const fp = hex(key(mo, 'fingerprint', p), `${p}.fingerprint`);
    const shapeJson = key(mo, 'shape', p);
    const shape = shapeJson === null ? null : readShape(shapeJson, `${p}.shape`);
    if (shape !== null && fingerprint(shape) !== fp) {
      throw new ProtocolJsonError(`message ${id}: its shape does not give its fingerprint`, `${p}.shape`);
    }
    const channelName = str(key(mo, 'channel', p), `${p}.channel`);
    const channel = channels.findIndex((c) => c.name === channelName);
    if (channel < 0) throw new ProtocolJsonError('a message naming no channel', `${p}.channel`);
    const direction = str(key(mo, 'direction', p), `${p}.direction`);
    if (!(DIRECTIONS as readonly string[]).includes(direction)) throw new ProtocolJsonError('invalid direction', `${p}.direction`);
    if (messages.some((o) => o.id === id)) throw new ProtocolJsonError(`message id ${id} appears twice`, `${p}.id`);
    messages.push({
      id,
      name: str(key(mo, 'name', p), `${p}.name`),
      fingerprint: fp,
      channel,
      channelName,
      direction: direction as Direction,
      shape,
    });
  });
  messages.sort((a, b) => a.id - b.id);
  const entries: ProtocolEntry[] = messages.map((m) => ({
    id: m.id,
    name: m.name,
    fingerprint: m.fingerprint,
    channel: m.channel,
    direction: m.direction,
  }));
  const hash = hex(key(root, 'hash', '$'), '$.hash');
  if (hash !== protocolHash(channels, entries)) throw new ProtocolJsonError("the hash is not the messages' hash", '$.hash');
  return { hash, channels, messages };
}
