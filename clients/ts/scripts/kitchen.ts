/**
 * The kitchen-sink protocol the tests generate code for: one message per
 * shape kind the protocol JSON can express (every scalar, strings, bytes,
 * options, sequences, arrays, tuples, both maps, glam vectors, structs
 * named/tuple/unit, tolerant and blittable structs, enums with unit, tuple
 * and named variants and tags past 127, flags, quantized customs, recursive
 * types), a declared fourth channel, and a quantized snapshot for deltas.
 *
 * `node dist/scripts/kitchen.js > test/fixtures/kitchen.json` writes it;
 * fingerprints and the hash come from the rules of docs/WIRE.md §9, §12.4,
 * whose implementation `test/conformance.test.ts` checks against the values
 * the Rust code pins.
 */
import { fingerprint, hex64, type FieldShape, type Shape } from '../src/codec/shape.js';
import { qangleFingerprint, qquatFingerprint, rangeFingerprint } from '../src/codec/quant.js';
import { protocolHash, type ChannelDef, type Direction } from '../src/session/protocol.js';

const S = (kind: string): Shape => ({ kind }) as Shape;
const f = (name: string, shape: Shape): FieldShape => ({ name, shape });
const struct = (name: string, fields: FieldShape[], opts: { style?: 'named' | 'tuple' | 'unit'; tolerant?: boolean; blittable?: boolean } = {}): Shape => ({
  kind: 'struct',
  name,
  style: opts.style ?? (fields.length === 0 ? 'unit' : 'named'),
  tolerant: opts.tolerant ?? false,
  blittable: opts.blittable ?? false,
  fields,
});
const seq = (item: Shape): Shape => ({ kind: 'seq', item });
const vec = (name: string, scalar: string, len: number): Shape => ({ kind: 'vector', name, scalar, len }) as Shape;
const bytesArray = (len: number): Shape => ({ kind: 'array', len, item: S('u8') });

const qvec3 = { kind: 'custom', name: 'QVector', fingerprint: hex64(rangeFingerprint('qvector', -4096, 4096, 1000, 3)), wire: bytesArray(9) } as const;
const qangle12 = { kind: 'custom', name: 'QAngle', fingerprint: hex64(qangleFingerprint(12)), wire: bytesArray(2) } as const;
const qf32 = { kind: 'custom', name: 'QF32', fingerprint: hex64(rangeFingerprint('qf32', -8000, 8000, 1000, 1)), wire: bytesArray(3) } as const;
const qquat9 = { kind: 'custom', name: 'QQuat', fingerprint: hex64(qquatFingerprint(9)), wire: bytesArray(4) } as const;

export const KITCHEN_CHANNELS: ChannelDef[] = [
  { name: 'reliable', kind: 'ReliableOrdered', priority: 0 },
  { name: 'unreliable', kind: 'Unreliable', priority: 0 },
  { name: 'snapshot', kind: 'Snapshot', priority: 0 },
  { name: 'chat', kind: 'ReliableUnordered', priority: -1 },
  { name: 'sequenced', kind: 'Sequenced', priority: 0 },
];

const itemStack = struct('ItemStack', [f('item', S('u32')), f('count', S('u16'))]);

export const KITCHEN: { id: number; name: string; channel: string; direction: Direction; shape: Shape }[] = [
  {
    id: 1,
    name: 'Everything',
    channel: 'reliable',
    direction: 'Both',
    shape: struct('Everything', [
      f('a', S('u8')),
      f('b', S('i8')),
      f('c', S('u16')),
      f('d', S('i16')),
      f('e', S('u32')),
      f('f', S('i32')),
      f('g', S('u64')),
      f('h', S('i64')),
      f('i', S('u128')),
      f('j', S('i128')),
      f('k', S('f32')),
      f('l', S('f64')),
      f('m', S('bool')),
      f('n', S('char')),
      f('o', S('usize')),
      f('p', S('isize')),
      f('q', S('unit')),
      f('r', S('nz_u32')),
      f('s', S('nz_i64')),
      f('t', S('str')),
      f('u', S('bytes')),
      f('v', seq(S('u8'))),
      f('w', seq(S('str'))),
      f('x', { kind: 'array', len: 4, item: S('u32') }),
      f('y', { kind: 'option', item: S('u32') }),
      f('z', { kind: 'option', item: { kind: 'option', item: S('str') } }),
      f('aa', { kind: 'tuple', items: [S('u8'), S('str')] }),
      f('bb', { kind: 'map', key: S('u32'), value: S('str'), sorted: false }),
      f('cc', { kind: 'map', key: S('str'), value: seq(S('u8')), sorted: true }),
      f('dd', vec('vec3', 'f32', 3)),
      f('ee', vec('quat', 'f32', 4)),
      f('ff', vec('vec3', 'i32', 3)),
      f('gg', vec('vec2', 'u32', 2)),
      f('hh', { kind: 'box', item: S('u64') }),
      f('ii', vec('vec4', 'f32', 4)),
      f('jj', bytesArray(3)),
      f('kk', S('nz_u8')),
      f('ll', { kind: 'map', key: itemStack, value: S('bool'), sorted: false }),
      f('mm', { kind: 'map', key: S('i32'), value: S('u8'), sorted: true }),
      f('nn', seq({ kind: 'tuple', items: [S('u16'), S('f32')] })),
    ]),
  },
  {
    id: 2,
    name: 'Shape',
    channel: 'unreliable',
    direction: 'Both',
    shape: {
      kind: 'enum',
      name: 'Shape',
      variants: [
        { name: 'Nothing', tag: 0, style: 'unit', fields: [] },
        { name: 'Square', tag: 1, style: 'tuple', fields: [f('0', S('f64'))] },
        { name: 'Circle', tag: 300, style: 'named', fields: [f('radius', S('f32'))] },
      ],
    },
  },
  { id: 3, name: 'Settings', channel: 'reliable', direction: 'Both', shape: struct('Settings', [f('volume', S('u8')), f('name', S('str'))], { tolerant: true }) },
  {
    id: 4,
    name: 'Linked',
    channel: 'reliable',
    direction: 'Both',
    shape: struct('Linked', [
      f('value', S('u8')),
      f('next', { kind: 'recursive', spelled: 'Option < Box < Self > >', shape: { kind: 'option', item: { kind: 'box', item: S('self') } } }),
    ]),
  },
  {
    id: 5,
    name: 'Tree',
    channel: 'reliable',
    direction: 'Both',
    shape: {
      kind: 'enum',
      name: 'Tree',
      variants: [
        { name: 'Leaf', tag: 0, style: 'tuple', fields: [f('0', S('u8'))] },
        {
          name: 'Node',
          tag: 1,
          style: 'tuple',
          fields: [
            f('0', { kind: 'recursive', spelled: 'Box < Tree >', shape: { kind: 'box', item: S('self') } }),
            f('1', { kind: 'recursive', spelled: 'Box < Tree >', shape: { kind: 'box', item: S('self') } }),
          ],
        },
      ],
    },
  },
  {
    id: 6,
    name: 'Node',
    channel: 'reliable',
    direction: 'Both',
    shape: struct('Node', [f('value', S('u32')), f('children', { kind: 'recursive', spelled: 'Vec < Node >', shape: seq(S('self')) })]),
  },
  { id: 7, name: 'Pair', channel: 'chat', direction: 'Both', shape: struct('Pair', [f('0', S('u32')), f('1', S('str'))], { style: 'tuple' }) },
  { id: 8, name: 'Empty', channel: 'unreliable', direction: 'ClientToServer', shape: struct('Empty', []) },
  {
    id: 9,
    name: 'Input',
    channel: 'sequenced',
    direction: 'Both',
    shape: struct('Input', [
      f('keys', { kind: 'flags', name: 'Keys', bits: 'u8', flags: [{ name: 'UP', value: '0x1' }, { name: 'DOWN', value: '0x2' }, { name: 'JUMP', value: '0x80' }] }),
      f('wide', { kind: 'flags', name: 'Wide', bits: 'u64', flags: [{ name: 'LOW', value: '0x1' }, { name: 'HIGH', value: '0x8000000000000000' }] }),
    ]),
  },
  {
    id: 10,
    name: 'EntitySnapshot',
    channel: 'snapshot',
    direction: 'ServerToClient',
    shape: struct('EntitySnapshot', [
      f('tick', S('u32')),
      f('entities', seq(struct('EntityState', [f('entity', S('u32')), f('position', qvec3), f('heading', qangle12)]))),
    ]),
  },
  { id: 11, name: 'Quantized', channel: 'reliable', direction: 'Both', shape: struct('Quantized', [f('a', qf32), f('q', qquat9), f('h', qangle12), f('p', qvec3)]) },
  {
    id: 12,
    name: 'BlitRun',
    channel: 'reliable',
    direction: 'Both',
    shape: struct('BlitRun', [f('tag', S('u8')), f('items', seq(struct('Blit', [f('a', S('u32')), f('b', S('f32'))], { blittable: true })))]),
  },
  { id: 13, name: 'Nested', channel: 'reliable', direction: 'Both', shape: struct('Nested', [f('0', seq(seq(S('u32'))))], { style: 'tuple' }) },
  { id: 14, name: 'Options', channel: 'reliable', direction: 'Both', shape: struct('Options', [f('0', seq({ kind: 'option', item: { kind: 'array', len: 128, item: S('u64') } }))], { style: 'tuple' }) },
  { id: 15, name: 'Big', channel: 'reliable', direction: 'Both', shape: struct('Big', [f('0', seq({ kind: 'array', len: 1024, item: S('u64') }))], { style: 'tuple' }) },
  { id: 16, name: 'Deep', channel: 'reliable', direction: 'Both', shape: struct('Deep', [f('0', seq(seq(seq(seq(S('u8'))))))], { style: 'tuple' }) },
  {
    id: 17,
    name: 'Moving',
    channel: 'snapshot',
    direction: 'ServerToClient',
    shape: struct('Moving', [
      f('tick', S('u64')),
      f('things', seq(struct('Thing', [f('id', S('u16')), f('pos', vec('vec3', 'f32', 3)), f('hp', S('i16')), f('alive', S('bool')), f('rot', qquat9), f('big', S('u64'))]))),
    ]),
  },
  { id: 300, name: 'Rare', channel: 'reliable', direction: 'ServerToClient', shape: struct('Rare', [f('x', S('u8'))]) },
];

/** The kitchen protocol as the JSON `Protocol::to_json` writes (layout aside). */
export function kitchenJson(): string {
  const channelIndex = (name: string): number => KITCHEN_CHANNELS.findIndex((c) => c.name === name);
  const entries = KITCHEN.map((m) => ({ id: m.id, name: m.name, fingerprint: fingerprint(m.shape), channel: channelIndex(m.channel), direction: m.direction }));
  const doc = {
    format: 'zao-protocol',
    version: 2,
    hash: hex64(protocolHash(KITCHEN_CHANNELS, entries)),
    channels: KITCHEN_CHANNELS,
    messages: KITCHEN.map((m) => ({ id: m.id, name: m.name, fingerprint: hex64(fingerprint(m.shape)), channel: m.channel, direction: m.direction, shape: m.shape })),
  };
  return JSON.stringify(doc, null, 2) + '\n';
}

if (process.argv[1]?.endsWith('kitchen.js') === true) process.stdout.write(kitchenJson());
