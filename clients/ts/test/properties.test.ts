/**
 * Seeded properties (tests/properties.rs): decode(encode(x)) = x;
 * encodedLen(x) = bytes written; decodeInPlace gives what decode gives,
 * whatever the target held; a decode that succeeds re-encodes to its input
 * (canonical); varints and UTF-8 as the spec tables say.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as ref from '../src/generated/reference.js';
import * as k from './generated/kitchen.js';
import { getUtf8, Reader, utf8Length, varintBytes, varintLen, DecodeError, type MessageCodec } from '../src/index.js';
import { canon, expectDecodeError, hex, Rng, toHex } from './helpers.js';
import { kitchen, random } from './samples.js';

function check<T>(codec: MessageCodec<T>, make: (r: Rng) => T, rounds = 200): void {
  const r = new Rng(codec.ID * 7919);
  let previous = make(r);
  for (let i = 0; i < rounds; i++) {
    const v = make(r);
    const n = codec.encodedLen(v);
    const buf = new Uint8Array(n + 5);
    assert.equal(codec.encode(v, buf, 2), n, `${codec.NAME}: encodedLen`);
    const bytes = buf.slice(2, 2 + n);
    const back = codec.decode(bytes);
    assert.equal(canon(back), canon(v), `${codec.NAME}: round trip`);
    // Canonical: the decoded value encodes to the same bytes.
    const again = new Uint8Array(n);
    codec.encode(back, again);
    assert.equal(toHex(again), toHex(bytes), `${codec.NAME}: canonical`);
    // In place over an earlier, different value.
    const inPlace = codec.decodeInPlace(previous, bytes);
    assert.equal(canon(inPlace), canon(v), `${codec.NAME}: decodeInPlace`);
    previous = inPlace;
    // Framed.
    const framed = new Uint8Array(codec.messageLen(v));
    codec.encodeMessage(v, framed);
    assert.equal(canon(codec.decodeMessage(framed)), canon(v));
    // Every strict prefix fails (a unit struct has none).
    for (const end of [0, n >> 1, n - 1]) {
      if (end < n && end >= 0) {
        try {
          codec.decode(bytes.subarray(0, end));
          assert.fail(`${codec.NAME}: a prefix of ${end} of ${n} bytes decoded`);
        } catch (e) {
          assert.ok(e instanceof DecodeError, String(e));
        }
      }
    }
  }
}

test('reference messages round-trip (seeded)', () => {
  check(ref.PlayerMoved, random.playerMoved);
  check(ref.PlayerInput, random.playerInput);
  check(ref.SpawnEntity, random.spawnEntity);
  check(ref.WorldSnapshot, random.worldSnapshot, 50);
  check(ref.Inventory, random.inventory, 50);
});

test('every kitchen shape round-trips (seeded)', () => {
  check(k.Everything, kitchen.everything);
  check(k.Shape, kitchen.shape);
  check(k.Settings, kitchen.settings);
  check(k.Linked, kitchen.linked);
  check(k.Tree, (r) => kitchen.tree(r));
  check(k.Node, (r) => kitchen.node(r));
  check(k.Pair, kitchen.pair);
  check(k.Input, kitchen.input);
  check(k.EntitySnapshot, kitchen.entitySnapshot);
  check(k.Quantized, kitchen.quantized);
  check(k.BlitRun, kitchen.blitRun);
  check(k.Nested, kitchen.nested);
  check(k.Deep, kitchen.deep);
  check(k.Moving, kitchen.moving);
  check(k.Rare, kitchen.rare);
  assert.deepEqual(k.Empty.decode(new Uint8Array(0)), {});
  assert.equal(k.Empty.encodedLen({}), 0);
});

test('a tolerant struct skips unknown trailing bytes and defaults missing fields (§8.4)', () => {
  const full = new Uint8Array(16);
  const n = k.Settings.encode({ volume: 9, name: 'ab' }, full);
  assert.equal(toHex(full.subarray(0, n)), '04 09 02 61 62');
  // A newer writer appended two bytes.
  assert.deepEqual(k.Settings.decode(hex('06 09 02 61 62 ff ff')), { volume: 9, name: 'ab' });
  // An older writer sent only the volume.
  assert.deepEqual(k.Settings.decode(hex('01 09')), { volume: 9, name: '' });
  assert.deepEqual(k.Settings.decode(hex('00')), { volume: 0, name: '' });
  // A field cut in the middle is an error, not a default: UnexpectedEnd for
  // a cut varint, LengthExceedsRemaining for a string (as in Rust).
  expectDecodeError(() => k.Settings.decode(hex('02 09 80')), 'UnexpectedEnd');
  expectDecodeError(() => k.Settings.decode(hex('03 09 02 61')), 'LengthExceedsRemaining');
  expectDecodeError(() => k.Settings.decode(hex('05 09 02 61 62')), 'LengthExceedsRemaining');
});

test('blittable runs carry a 4-byte count; a boxed value is its inner value', () => {
  const bytes = new Uint8Array(64);
  const n = k.BlitRun.encode({ tag: 1, items: [{ a: 2, b: 1.5 }] }, bytes);
  assert.equal(toHex(bytes.subarray(0, n)), '01 01 00 00 00 02 00 00 00 00 00 c0 3f');
});

test('decodeInPlace reuses the arrays and objects of a warmed value', () => {
  const v = ref.WorldSnapshot.decode(encodeOf(ref.WorldSnapshot, { tick: 1, players: [{ entity: 1, position: { x: 1, y: 2, z: 3 } }] }));
  const players = v.players;
  const first = v.players[0]!;
  const next = ref.WorldSnapshot.decodeInPlace(v, encodeOf(ref.WorldSnapshot, { tick: 2, players: [{ entity: 5, position: { x: 4, y: 5, z: 6 } }, { entity: 6, position: { x: 0, y: 0, z: 0 } }] }));
  assert.equal(next, v);
  assert.equal(next.players, players);
  assert.equal(next.players[0], first);
  assert.equal(first.entity, 5);
  assert.equal(next.players.length, 2);
});

function encodeOf<T>(codec: MessageCodec<T>, v: T): Uint8Array {
  const out = new Uint8Array(codec.encodedLen(v));
  codec.encode(v, out);
  return out;
}

test('varints: the §2 tables', () => {
  const table: [number | bigint, string][] = [
    [0, '00'],
    [1, '01'],
    [127, '7f'],
    [128, '80 01'],
    [300, 'ac 02'],
    [16383, 'ff 7f'],
    [16384, '80 80 01'],
    [0xffffffff, 'ff ff ff ff 0f'],
    [2n ** 64n - 1n, 'ff ff ff ff ff ff ff ff ff 01'],
  ];
  for (const [v, bytes] of table) {
    assert.equal(toHex(varintBytes(v)), bytes);
    if (typeof v === 'number') {
      assert.equal(varintLen(v), bytes.split(' ').length);
      assert.equal(new Reader(hex(bytes)).varint(), v);
    } else {
      assert.equal(new Reader(hex(bytes)).varintBig(), v);
    }
  }
  const rejected: [string, 'NonCanonicalVarint' | 'VarintOverflow' | 'UnexpectedEnd'][] = [
    ['80 00', 'NonCanonicalVarint'],
    ['80 80 00', 'NonCanonicalVarint'],
    ['ff ff ff ff ff ff ff ff ff ff', 'VarintOverflow'],
    ['ff ff ff ff ff ff ff ff ff ff ff', 'VarintOverflow'],
    ['ff ff ff ff ff ff ff ff ff 02', 'VarintOverflow'],
    ['ff ff ff ff ff ff ff ff ff 81', 'VarintOverflow'],
    ['80', 'UnexpectedEnd'],
    ['', 'UnexpectedEnd'],
  ];
  for (const [bytes, kind] of rejected) expectDecodeError(() => new Reader(hex(bytes)).varint(), kind, bytes);
  const r = new Rng(11);
  for (let i = 0; i < 2000; i++) {
    const v = r.u64() >> BigInt(r.below(64));
    const b = varintBytes(v);
    const rd = new Reader(b);
    assert.equal(rd.varintBig(), v);
    assert.equal(rd.pos, b.length);
  }
});

test('UTF-8: the short-string decoder accepts exactly what TextDecoder (fatal) accepts', () => {
  const strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  const r = new Rng(12);
  const pool = [0x00, 0x41, 0x7f, 0x80, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff, 0x8f, 0x90, 0x9f, 0xa0];
  for (let i = 0; i < 50000; i++) {
    const n = r.below(12);
    const bytes = new Uint8Array(n);
    for (let j = 0; j < n; j++) bytes[j] = r.below(3) === 0 ? r.next() & 0xff : pool[r.below(pool.length)]!;
    let expected: string | null;
    try {
      expected = strict.decode(bytes);
    } catch {
      expected = null;
    }
    let got: string | null;
    try {
      got = getUtf8(bytes, 0, n);
    } catch (e) {
      assert.ok(e instanceof DecodeError && e.kind === 'InvalidUtf8');
      got = null;
    }
    assert.equal(got, expected, toHex(bytes));
    if (expected !== null) assert.equal(utf8Length(expected), n);
  }
});
