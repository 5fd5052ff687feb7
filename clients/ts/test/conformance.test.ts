/**
 * The conformance vectors (docs/WIRE.md §12.3, §12.4, §13,
 * assets/conformance): the hello is byte for byte hello.bin, the protocol
 * hash and every fingerprint are recomputed from the shapes by the rules of
 * §9, and the pinned fingerprints of tests/fingerprints.rs hold.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { protocol, PROTOCOL_HASH, PlayerMoved, PlayerInput, SpawnEntity, WorldSnapshot, Inventory } from '../src/generated/reference.js';
import {
  decodeHello,
  decodeHelloReply,
  encodeHello,
  encodeHelloReply,
  fingerprint,
  frame,
  hex64,
  leaf,
  makeHello,
  makeProtocol,
  mixU64,
  parseProtocolJson,
  protocolHash,
  refuseReasonText,
  versionsCompatible,
  type FieldShape,
  type Shape,
} from '../src/index.js';
import { asset, assetText, hex, toHex } from './helpers.js';

test('hello.bin: the hello of the reference protocol, version 0.1.0, no token (153 bytes)', () => {
  const bytes = frame(encodeHello(makeHello(protocol)));
  const expected = asset('conformance', 'hello.bin');
  assert.equal(bytes.length, 153);
  assert.equal(toHex(bytes), toHex(expected));
  const back = decodeHello(expected.subarray(2));
  assert.equal(back.protocolHash, 0xf4930a7edce7a50an);
  assert.equal(back.messages.length, 5);
  assert.equal(back.token, null);
});

test('the protocol hash, recomputed from the entries, is 0xf4930a7edce7a50a', () => {
  assert.equal(protocol.hash, 0xf4930a7edce7a50an);
  assert.equal(PROTOCOL_HASH, protocol.hash);
  assert.equal(leaf('zao-protocol'), 0xb6c4146e6de712fcn);
  const schema = parseProtocolJson(assetText('conformance', 'protocol.json'));
  assert.equal(schema.hash, protocolHash(schema.channels, schema.messages));
});

test('every fingerprint, recomputed from its shape, is the one §13 gives', () => {
  const schema = parseProtocolJson(assetText('conformance', 'protocol.json'));
  const expected: [number, string, bigint][] = [
    [1, 'PlayerMoved', 0x17f43c4427b2d450n],
    [2, 'PlayerInput', 0x73bf220f3eb60602n],
    [3, 'SpawnEntity', 0x17253e58ade539c1n],
    [4, 'WorldSnapshot', 0xc174223d1073dc29n],
    [5, 'Inventory', 0xd952fef0cf6b432fn],
  ];
  for (const [id, name, fp] of expected) {
    const m = schema.messages.find((x) => x.id === id)!;
    assert.equal(m.name, name);
    assert.equal(fingerprint(m.shape!), fp, name);
  }
  assert.deepEqual(
    [PlayerMoved, PlayerInput, SpawnEntity, WorldSnapshot, Inventory].map((c) => [c.ID, c.NAME, c.FINGERPRINT]),
    expected,
  );
  // Buttons: mix_u64(leaf("Buttons"), 0x3f).
  assert.equal(mixU64(leaf('Buttons'), 0x3fn), 0xa017b38d1955be44n);
});

test('the protocol JSON loader refuses a wrong fingerprint, a wrong hash, a duplicate id, an unknown channel', () => {
  const text = assetText('conformance', 'protocol.json');
  assert.throws(() => parseProtocolJson(text.replace('0x17f43c4427b2d450', '0x17f43c4427b2d451')), /fingerprint/);
  assert.throws(() => parseProtocolJson(text.replace('"hash": "0xf4930a7edce7a50a"', '"hash": "0xf4930a7edce7a50b"')), /hash/);
  assert.throws(() => parseProtocolJson(text.replace('"id": 2,', '"id": 1,')), /twice|fingerprint|hash/);
  assert.throws(() => parseProtocolJson(text.replace('"channel": "reliable"', '"channel": "nope"')), /channel/);
  assert.throws(() => parseProtocolJson(text.replace('"version": 2', '"version": 3')), /version/);
  assert.throws(() => parseProtocolJson('['.repeat(200) + ']'.repeat(200)), /128/);
});

test('§12.3: the Ping example, with its fingerprint, hash and 45-byte hello with token "abc"', () => {
  const ping: Shape = { kind: 'struct', name: 'Ping', style: 'named', tolerant: false, blittable: false, fields: [{ name: 'n', shape: { kind: 'u32' } }] };
  const fp = fingerprint(ping);
  assert.equal(fp, 0xe5bee0234d6c640an);
  const p = makeProtocol(
    [
      { name: 'reliable', kind: 'ReliableOrdered', priority: 0 },
      { name: 'unreliable', kind: 'Unreliable', priority: 0 },
      { name: 'snapshot', kind: 'Snapshot', priority: 0 },
    ],
    [{ id: 1, name: 'Ping', fingerprint: fp, channel: 0, direction: 'Both' }],
  );
  assert.equal(p.hash, 0x0a1a1c7eb06b557cn);
  const bytes = frame(encodeHello(makeHello(p, new TextEncoder().encode('abc'))));
  // The example exactly as WIRE.md §12.3 prints it.
  const printed = hex(`2c 31 4f 41 5a 05 30 2e 31 2e 30 7c 55 6b b0 7e 1c 1a 0a 01 01 00 00 00 04 50 69 6e 67
    0a 64 6c 4d 23 e0 be e5 00 02 00 01 03 61 62 63`);
  assert.equal(printed.length, 45);
  assert.equal(toHex(bytes), toHex(printed));
});

test('§12.3: the replies down, decoded and encoded', () => {
  const welcome = hex('09 00 01 00 00 00 00 00 00 00');
  assert.deepEqual(decodeHelloReply(welcome.subarray(1)), { tag: 'Welcome', clientId: 1n });
  const full = hex('02 01 04');
  assert.deepEqual(decodeHelloReply(full.subarray(1)), { tag: 'Refused', reason: { tag: 'ServerFull' } });
  const unauthorized = hex('10 01 03 0d 75 6e 6b 6e 6f 77 6e 20 74 6f 6b 65 6e');
  const r = decodeHelloReply(unauthorized.subarray(1));
  assert.deepEqual(r, { tag: 'Refused', reason: { tag: 'Unauthorized', detail: 'unknown token' } });
  assert.equal(toHex(frame(encodeHelloReply(r))), toHex(unauthorized));
  if (r.tag === 'Refused') assert.equal(refuseReasonText(r.reason), 'unauthorized: unknown token');
});

test('versions: 0.1.x compatible with 0.1.0; 0.2.0, 0.1-beta, v0.1.0 and 1 not (§12.3)', () => {
  for (const v of ['0.1.0', '0.1.7', '0.1.0-beta.2', '+0.+1.9']) assert.ok(versionsCompatible(v, '0.1.0'), v);
  for (const v of ['0.2.0', '0.1-beta', 'v0.1.0', '1', '', '0. 1.0', '-0.1.0']) assert.ok(!versionsCompatible(v, '0.1.0'), v);
  assert.ok(!versionsCompatible('garbage', 'garbage'));
  assert.ok(versionsCompatible('1.2.0', '1.9.1'));
  assert.ok(!versionsCompatible('1.2.0', '2.0.0'));
});

// ---------------------------------------------------------------- tests/fingerprints.rs

const S = (kind: string): Shape => ({ kind }) as Shape;
const f = (name: string, shape: Shape): FieldShape => ({ name, shape });
const st = (fields: FieldShape[], o: { style?: 'named' | 'tuple' | 'unit'; tolerant?: boolean; blittable?: boolean } = {}): Shape => ({
  kind: 'struct',
  name: 'T',
  style: o.style ?? 'named',
  tolerant: o.tolerant ?? false,
  blittable: o.blittable ?? false,
  fields,
});
const seq = (item: Shape): Shape => ({ kind: 'seq', item });
const vec = (name: string, scalar: string): Shape => ({ kind: 'vector', name, scalar, len: 3 }) as Shape;
const en = (variants: { name: string; tag: number; style: 'named' | 'tuple' | 'unit'; fields: FieldShape[] }[]): Shape => ({ kind: 'enum', name: 'E', variants });
const vec3 = vec('vec3', 'f32');
const playerState = st([f('entity', S('u32')), f('position', vec3)], { blittable: true });
const protocolEntry = st([f('id', S('u32')), f('name', S('str')), f('fingerprint', S('u64')), f('channel', st([f('0', S('u8'))], { style: 'tuple' })), f('direction', en([{ name: 'ClientToServer', tag: 0, style: 'unit', fields: [] }, { name: 'ServerToClient', tag: 1, style: 'unit', fields: [] }, { name: 'Both', tag: 2, style: 'unit', fields: [] }]))]);
const refuse = en([
  { name: 'NotZao', tag: 0, style: 'unit', fields: [] },
  { name: 'VersionMismatch', tag: 1, style: 'named', fields: [f('server', S('str')), f('client', S('str'))] },
  { name: 'ProtocolMismatch', tag: 2, style: 'named', fields: [f('detail', S('str'))] },
  { name: 'Unauthorized', tag: 3, style: 'named', fields: [f('detail', S('str'))] },
  { name: 'ServerFull', tag: 4, style: 'unit', fields: [] },
  { name: 'DatagramsTooSmall', tag: 5, style: 'named', fields: [f('max', S('u64')), f('required', S('u64'))] },
  { name: 'AlreadyConnected', tag: 6, style: 'unit', fields: [] },
  { name: 'AuthUnavailable', tag: 7, style: 'named', fields: [f('detail', S('str'))] },
  { name: 'TooManyFromAddress', tag: 8, style: 'named', fields: [f('max', S('u64'))] },
  { name: 'Draining', tag: 9, style: 'unit', fields: [] },
  { name: 'Busy', tag: 10, style: 'unit', fields: [] },
  { name: 'AddressValidationFailed', tag: 11, style: 'unit', fields: [] },
]);

const PINNED: [string, Shape, bigint][] = [
  ['u8', S('u8'), 0x9c88c3d328cbe24an],
  ['u16', S('u16'), 0x2aebfdd28e1360ban],
  ['u32', S('u32'), 0x2af301d28e198634n],
  ['u64', S('u64'), 0x2b03fdd28e27f29bn],
  ['u128', S('u128'), 0xf235ececa3f41aa5n],
  ['i8', S('i8'), 0x9c7b3bd328c070d6n],
  ['i16', S('i16'), 0x06ffc9d2795e2916n],
  ['i32', S('i32'), 0x0706d5d279645c28n],
  ['i64', S('i64'), 0x06fc49d2795b19bfn],
  ['i128', S('i128'), 0x495d9c8760853539n],
  ['f32', S('f32'), 0x866570d230e6ffe1n],
  ['f64', S('f64'), 0x866fe4d230f01982n],
  ['bool', S('bool'), 0x654e6e5cb0df2a01n],
  ['char', S('char'), 0x508afd55cbf45999n],
  ['usize', S('usize'), 0xfb566655e51db046n],
  ['isize', S('isize'), 0x56b79e94b2494bean],
  ['()', S('unit'), 0xf2a939eb82123e3bn],
  ['NonZeroU8', S('nz_u8'), 0x7d96df2f823c1360n],
  ['NonZeroU32', S('nz_u32'), 0x799af461996cd61an],
  ['NonZeroI64', S('nz_i64'), 0x9d981861ae3065c1n],
  ['str', S('str'), 0x3c34fdd297db1a89n],
  ['Vec<u8>', seq(S('u8')), 0x9e6d4490b5a94278n],
  ['&[u8]', S('bytes'), 0x9e6d4490b5a94278n],
  ['[u16]', seq(S('u16')), 0x36faf4d25e3c348en],
  ['Vec<String>', seq(S('str')), 0x1c424f4e132b6e15n],
  ['[u32; 4]', { kind: 'array', len: 4, item: S('u32') }, 0xa82057bb73033fe8n],
  ['[Vec3; 2]', { kind: 'array', len: 2, item: vec3 }, 0x838b52ded6f05442n],
  ['Option<u32>', { kind: 'option', item: S('u32') }, 0x3f97feeaa5ceb0b3n],
  ['Option<Option<String>>', { kind: 'option', item: { kind: 'option', item: S('str') } }, 0x55c489f4a78b0cdfn],
  ['Box<u64>', { kind: 'box', item: S('u64') }, 0x2b03fdd28e27f29bn],
  ['(u8,)', { kind: 'tuple', items: [S('u8')] }, 0x797016988d616093n],
  ['(u8, String)', { kind: 'tuple', items: [S('u8'), S('str')] }, 0x51ad3dfa50d731ebn],
  ['(u8, u16, u32, u64, i8, i16, i32, i64)', { kind: 'tuple', items: ['u8', 'u16', 'u32', 'u64', 'i8', 'i16', 'i32', 'i64'].map(S) }, 0xa89156daf6ab0f53n],
  ['HashMap<u32, String>', { kind: 'map', key: S('u32'), value: S('str'), sorted: false }, 0xc96bf1bf34fe8a09n],
  ['BTreeMap<String, Vec<u8>>', { kind: 'map', key: S('str'), value: seq(S('u8')), sorted: true }, 0x6315b36a818bf964n],
  ['Vec2', { kind: 'vector', name: 'vec2', scalar: 'f32', len: 2 }, 0x1f5fff2bbc200056n],
  ['Vec3', vec3, 0x72209f4e1aaa4f19n],
  ['Vec4', { kind: 'vector', name: 'vec4', scalar: 'f32', len: 4 }, 0xe85dfbcfbc72b3bcn],
  ['Quat', { kind: 'vector', name: 'quat', scalar: 'f32', len: 4 }, 0xc4cf401fd1d970d5n],
  ['IVec3', vec('vec3', 'i32'), 0x3d58d3161d41786bn],
  ['UVec2', { kind: 'vector', name: 'vec2', scalar: 'u32', len: 2 }, 0xd726cb4d8f94a300n],
  ['PlayerState', playerState, 0x17f43c4427b2d450n],
  ['WorldSnapshot', st([f('tick', S('u32')), f('players', seq(playerState))]), 0xc174223d1073dc29n],
  ['ItemStack', st([f('item', S('u32')), f('count', S('u16')), f('durability', S('u16')), f('flags', S('u8'))]), 0x5414091bf0cee15an],
  ['Stance', en([{ name: 'Standing', tag: 0, style: 'unit', fields: [] }, { name: 'Crouching', tag: 1, style: 'unit', fields: [] }, { name: 'Prone', tag: 2, style: 'unit', fields: [] }]), 0x1011ba2a67277b93n],
  ['Buttons', { kind: 'flags', name: 'Buttons', bits: 'u16', flags: ['0x1', '0x2', '0x4', '0x8', '0x10', '0x20'].map((value, i) => ({ name: `F${i}`, value })) }, 0xa017b38d1955be44n],
  ['ProtocolEntry', protocolEntry, 0xe74a377000e117ddn],
  ['Channel', st([f('0', S('u8'))], { style: 'tuple' }), 0x6a3e7ea82007cc94n],
  ['HelloReply', en([{ name: 'Welcome', tag: 0, style: 'named', fields: [f('client_id', S('u64'))] }, { name: 'Refused', tag: 1, style: 'tuple', fields: [f('0', refuse)] }]), 0xf59360b5bbaa6f11n],
  ['RefuseReason', refuse, 0x1da92d28fa6310e0n],
  ['Node', st([f('value', S('u32')), f('children', { kind: 'recursive', spelled: 'Vec < Node >', shape: seq(S('self')) })]), 0x77ac2b07b39ccfe1n],
  ['Linked', st([f('value', S('u8')), f('next', { kind: 'recursive', spelled: 'Option < Box < Self > >', shape: null })]), 0xd48f8fd88b649298n],
  ['Pair', st([f('0', S('u32')), f('1', S('str'))], { style: 'tuple' }), 0x556aeb2a1f0c93c0n],
  ['Empty', st([], { style: 'unit' }), 0x3e56da384ccf6c0an],
  ['Settings', st([f('volume', S('u8')), f('name', S('str'))], { tolerant: true }), 0x67d0aa9fb9d0e9a0n],
  ['Generic<u32>', st([f('inner', S('u32')), f('list', seq(S('u32')))]), 0x311948cdb0fa66fbn],
  ['Generic<String>', st([f('inner', S('str')), f('list', seq(S('str')))]), 0x791907bf26b18435n],
  [
    'Shape',
    en([
      { name: 'Nothing', tag: 0, style: 'unit', fields: [] },
      { name: 'Square', tag: 1, style: 'tuple', fields: [f('0', S('f64'))] },
      { name: 'Circle', tag: 300, style: 'named', fields: [f('radius', S('f32'))] },
    ]),
    0xd51d2cff52f7bd3fn,
  ],
];

test('the fingerprints tests/fingerprints.rs pins, computed from shapes by the §9 rules', () => {
  for (const [name, shape, pinned] of PINNED) assert.equal(hex64(fingerprint(shape)), hex64(pinned), name);
});

test('Hello: the pinned fingerprint is that of the hello with its channels field (§12.3)', () => {
  const channelDef = st([f('name', S('str')), f('kind', en(['ReliableOrdered', 'ReliableUnordered', 'Unreliable', 'Sequenced', 'Snapshot'].map((name, tag) => ({ name, tag, style: 'unit' as const, fields: [] })))), f('priority', S('i32'))]);
  const hello = st([f('magic', S('u32')), f('version', S('str')), f('protocol_hash', S('u64')), f('messages', seq(protocolEntry)), f('channels', seq(channelDef)), f('token', { kind: 'option', item: seq(S('u8')) })]);
  assert.equal(hex64(fingerprint(hello)), hex64(0xb3cf59b18f6826edn));
});
