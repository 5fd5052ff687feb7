/**
 * The golden vectors (assets/golden, docs/WIRE.md §11) decode to the values
 * the document gives and encode back to the same bytes; the framed vectors of
 * assets/conformance/readable.txt round-trip bit for bit.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  Inventory,
  PlayerInput,
  PlayerMoved,
  SpawnEntity,
  WorldSnapshot,
  codecs,
  decodeAny,
  Buttons,
} from '../src/generated/reference.js';
import { DecodeError, type MessageCodec } from '../src/index.js';
import { asset, assetText, canon, expectDecodeError, hex, toHex } from './helpers.js';

function roundTrip<T>(codec: MessageCodec<T>, file: string, expected: T): void {
  const bytes = asset('golden', file);
  const value = codec.decodeMessage(bytes);
  assert.equal(canon(value), canon(expected), `${file} decodes to the documented value`);
  const out = new Uint8Array(bytes.length + 8);
  const n = codec.encodeMessage(value, out);
  assert.equal(toHex(out.subarray(0, n)), toHex(bytes), `${file} encodes back to the same bytes`);
  assert.equal(codec.messageLen(value), bytes.length);
  assert.equal(codec.encodedLen(value), bytes.length - 1);
  // The body alone, and decoded in place over another value.
  assert.equal(canon(codec.decode(bytes.subarray(1))), canon(expected));
  const any = decodeAny(bytes);
  assert.equal(any.id, codec.ID);
  assert.equal(canon(any.value), canon(expected));
}

test('player_moved.bin: entity 7 at (1.5, -2.0, 3.25), 16 bytes', () => {
  roundTrip(PlayerMoved, 'player_moved.bin', { entity: 7, position: { x: 1.5, y: -2.0, z: 3.25 } });
  assert.equal(PlayerMoved.encodedLen({ entity: 0, position: { x: 0, y: 0, z: 0 } }), 16);
});

test('player_input.bin: tick 1000, FIRE | JUMP, aim (0.5, -1.0), crouching, 15 bytes', () => {
  roundTrip(PlayerInput, 'player_input.bin', { tick: 1000, buttons: Buttons.FIRE | Buttons.JUMP, aim: { x: 0.5, y: -1.0 }, stance: 'Crouching' });
});

test('spawn_entity.bin: entity 42, prefab 3, at (10, 0, -4), identity, "Goblin": 41 bytes', () => {
  roundTrip(SpawnEntity, 'spawn_entity.bin', {
    entity: 42,
    prefab: 3,
    position: { x: 10, y: 0, z: -4 },
    rotation: { x: 0, y: 0, z: 0, w: 1 },
    name: 'Goblin',
  });
});

test('world_snapshot.bin: tick 500, player i = entity 100 + i at (i, 0.5, -i), -0.0 kept', () => {
  const players = [0, 1, 2].map((i) => ({ entity: 100 + i, position: { x: i, y: 0.5, z: -i } }));
  roundTrip(WorldSnapshot, 'world_snapshot.bin', { tick: 500, players });
  const v = WorldSnapshot.decodeMessage(asset('golden', 'world_snapshot.bin'));
  assert.ok(Object.is(v.players[0]!.position.z, -0), 'the first player z is negative zero');
  // The count of a blittable run is 4 bytes: 03 00 00 00 after the tick.
  assert.equal(toHex(asset('golden', 'world_snapshot.bin').subarray(5, 9)), '03 00 00 00');
});

test('inventory.bin: owner 9, slot i = item 1000 + i, count i + 1, durability 100 - i, flags i % 4', () => {
  const slots = new Map([0, 1, 2].map((i) => [i, { item: 1000 + i, count: i + 1, durability: 100 - (i % 100), flags: i % 4 }]));
  roundTrip(Inventory, 'inventory.bin', { owner: 9, slots });
  // Any order of the 3! decodes to the same map (a HashMap is not canonical, §6).
  const bytes = asset('golden', 'inventory.bin');
  const entries = [0, 1, 2].map((i) => bytes.subarray(6 + 13 * i, 6 + 13 * (i + 1)));
  const reordered = new Uint8Array(bytes);
  reordered.set(entries[2]!, 6);
  reordered.set(entries[0]!, 6 + 13);
  reordered.set(entries[1]!, 6 + 26);
  const v = Inventory.decodeMessage(reordered);
  assert.equal(canon(new Map([...v.slots].sort((a, b) => a[0] - b[0]))), canon(slots));
});

test('readable.txt: every framed vector round-trips bit for bit (NaN payloads, -0.0, subnormals, infinities, escapes)', () => {
  const lines = assetText('conformance', 'readable.txt').split('\n');
  let checked = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('#') || line.trim() === '' || !/^[0-9a-f]{2}( [0-9a-f]{2})*$/.test(line.trim())) continue;
    const bytes = hex(line);
    const text = lines[i + 1] ?? '';
    if (bytes.length === 1 && bytes[0] === 0) {
      // The heartbeat: id 0, no body; no message type has it.
      assert.equal(text, 'Heartbeat');
      expectDecodeError(() => decodeAny(bytes), 'UnknownMessage', 'heartbeat');
      continue;
    }
    const m = decodeAny(bytes);
    const codec = codecs.get(m.id)!;
    const out = new Uint8Array(bytes.length);
    const n = codec.encodeMessage(m.value as never, out);
    assert.equal(toHex(out.subarray(0, n)), toHex(bytes), text);
    checked++;
  }
  assert.equal(checked, 10);
});

test('a quiet NaN with payload and sign, -0.0 and the smallest subnormal survive decode and encode', () => {
  const bytes = hex('01 ff ff ff ff 01 00 c0 ff 00 00 00 80 01 00 00 00');
  const v = PlayerMoved.decodeMessage(bytes);
  assert.ok(Number.isNaN(v.position.x));
  assert.ok(Object.is(v.position.y, -0));
  assert.equal(v.position.z, Math.fround(1e-45));
  const out = new Uint8Array(17);
  PlayerMoved.encodeMessage(v, out);
  assert.equal(toHex(out), toHex(bytes));
});

test('a DecodeError names the rule', () => {
  const e = expectDecodeError(() => PlayerMoved.decode(new Uint8Array(3)), 'UnexpectedEnd');
  assert.ok(e instanceof DecodeError);
  assert.match(e.message, /ended/);
});
