/**
 * The hostile cases C1–C16 of the test matrix (W4: against the TypeScript
 * decoder): each refused with a `DecodeError` of the kind the Rust decoder
 * gives (tests/hostile.rs), never another exception type, never a hang.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as ref from '../src/generated/reference.js';
import * as k from './generated/kitchen.js';
import { DANGEROUS_UNLIMITED, DEFAULT_LIMITS, EncodeError, splitMessage, varintBytes, type MessageCodec } from '../src/index.js';
import { concat, decodeResult, expectDecodeError, goldenFiles, hex, Rng, toHex } from './helpers.js';
import { kitchen, reference } from './samples.js';

const BODY_CODECS: MessageCodec<never>[] = [ref.PlayerMoved, ref.PlayerInput, ref.SpawnEntity, ref.WorldSnapshot, ref.Inventory] as unknown as MessageCodec<never>[];
const KITCHEN_CODECS: MessageCodec<never>[] = [...k.codecs.values()];

/** SpawnEntity's body with its 34 fixed bytes, then `tail` where the name is. */
function spawnWithName(tail: Uint8Array | number[]): Uint8Array {
  const full = new Uint8Array(64);
  const n = ref.SpawnEntity.encode(reference.spawnEntity(), full);
  return concat(full.subarray(0, n - 7), tail);
}

function encode<T>(codec: MessageCodec<T>, v: T): Uint8Array {
  const out = new Uint8Array(codec.encodedLen(v));
  codec.encode(v, out);
  return out;
}

test('C1: the empty buffer is UnexpectedEnd for every body and for a framed message', () => {
  for (const c of [...BODY_CODECS, ...KITCHEN_CODECS]) {
    if (c.minSize === 0) continue; // a unit struct: nothing is a whole value
    expectDecodeError(() => c.decode(new Uint8Array(0)), 'UnexpectedEnd', c.NAME);
  }
  assert.deepEqual(k.Empty.decode(new Uint8Array(0)), {});
  expectDecodeError(() => ref.decodeAny(new Uint8Array(0)), 'UnexpectedEnd');
  expectDecodeError(() => splitMessage(new Uint8Array(0)), 'UnexpectedEnd');
});

test('C2: every strict prefix of every golden message fails, framed and as a body', () => {
  for (const [name, file] of goldenFiles()) {
    ref.decodeAny(file);
    const codec = ref.codecs.get(file[0]!)!;
    for (let end = 0; end < file.length; end++) {
      const prefix = file.subarray(0, end);
      assert.ok(decodeResult(() => ref.decodeAny(prefix), name) !== null, `${name}[..${end}] decoded`);
      if (end >= 1) assert.ok(decodeResult(() => codec.decode(prefix.subarray(1)), name) !== null, `${name} body[..${end - 1}] decoded`);
      if (end >= 1) assert.ok(decodeResult(() => codec.decodeInPlace(codec.decode(file.subarray(1)), prefix.subarray(1)), name) !== null);
    }
  }
});

test('C3: lengths of 2^32, u32::MAX and u64::MAX followed by one byte are over the limit; unlimited, past the input', () => {
  for (const claim of [2n ** 32n, 2n ** 32n - 1n, 2n ** 64n - 1n]) {
    const prefix = concat(varintBytes(claim), [0x78]);
    expectDecodeError(() => ref.SpawnEntity.decode(spawnWithName(prefix)), 'OverLimit', `string ${claim}`);
    expectDecodeError(() => ref.Inventory.decode(concat([1, 0, 0, 0], prefix)), 'OverLimit', `map ${claim}`);
    expectDecodeError(() => k.Nested.decode(prefix), 'OverLimit', `vec ${claim}`);
    expectDecodeError(() => k.Pair.decode(concat([1, 0, 0, 0], prefix), DANGEROUS_UNLIMITED), 'LengthExceedsRemaining', `unlimited ${claim}`);
  }
  const snapshot = concat([1, 0, 0, 0], [0xff, 0xff, 0xff, 0xff], [0x78]);
  expectDecodeError(() => ref.WorldSnapshot.decode(snapshot), 'OverLimit');
  expectDecodeError(() => ref.WorldSnapshot.decode(snapshot, DANGEROUS_UNLIMITED), 'LengthExceedsRemaining');
});

test('C4: claims within the limits but past the input are refused; a wide count is checked as any count', () => {
  expectDecodeError(() => ref.SpawnEntity.decode(spawnWithName([100, 0x61, 0x62, 0x63])), 'LengthExceedsRemaining');
  expectDecodeError(() => ref.WorldSnapshot.decode(concat([0, 0, 0, 0], [0xe8, 0x03, 0, 0], new Uint8Array(16))), 'LengthExceedsRemaining');
  expectDecodeError(() => ref.Inventory.decode(concat([0, 0, 0, 0, 50], new Uint8Array(13))), 'LengthExceedsRemaining');
  for (let cut = 4; cut < 8; cut++) expectDecodeError(() => ref.WorldSnapshot.decode(hex('00 00 00 00 03 00 00 00').subarray(0, cut)), 'UnexpectedEnd', `cut ${cut}`);
  const max = DEFAULT_LIMITS.maxCollection;
  for (const [count, kind] of [
    [max, 'LengthExceedsRemaining'],
    [max + 1, 'OverLimit'],
  ] as const) {
    const bytes = new Uint8Array(8);
    new DataView(bytes.buffer).setUint32(4, count, true);
    expectDecodeError(() => ref.WorldSnapshot.decode(bytes), kind, `${count}`);
    expectDecodeError(() => ref.WorldSnapshot.decodeInPlace(reference.worldSnapshot(3), bytes), kind, `${count} in place`);
  }
  // A run of blittable structs takes at least its 4-byte count.
  expectDecodeError(() => k.BlitRun.decode(hex('07 00 00 05')), 'UnexpectedEnd');
  expectDecodeError(() => k.BlitRun.decode(hex('07 01 00 00 00 05')), 'LengthExceedsRemaining');
});

test('C5: nested claims that add up past the allocation budget are over the limit', () => {
  // 4 000 empty inner vectors: 4 001 bytes, 4 000 × 24 bytes of Vec headers.
  const bytes = concat(varintBytes(4000), new Uint8Array(4000));
  assert.equal(k.Nested.decode(bytes)[0].length, 4000, 'fits the default budget');
  expectDecodeError(() => k.Nested.decode(bytes, { ...DEFAULT_LIMITS, maxAlloc: 64 * 1024 }), 'OverLimit');
  // Amplification: 60 000 one-byte Nones of Option<[u64; 128]>.
  expectDecodeError(() => k.Options.decode(concat(varintBytes(60000), new Uint8Array(60000))), 'OverLimit');
  // Three strings that each claim their share of a small budget.
  const everything = kitchen.everything(new Rng(5));
  everything.w = ['a'.repeat(400), 'b'.repeat(400), 'c'.repeat(400)];
  const e = encode(k.Everything, everything);
  assert.equal(k.Everything.decode(e).w.length, 3);
  expectDecodeError(() => k.Everything.decode(e, { ...DEFAULT_LIMITS, maxAlloc: 1000 }), 'OverLimit');
});

test('C6: count × element size past u64 is over the limit, even unlimited', () => {
  for (const count of [2n ** 63n - 1n, 2n ** 61n + 1n, 2n ** 64n - 1n]) {
    expectDecodeError(() => k.Big.decode(varintBytes(count), DANGEROUS_UNLIMITED), 'OverLimit', `${count}`);
  }
});

test('C7: varints of 11 bytes, a continuation on the last byte and non-minimal forms are refused', () => {
  const eleven = new Uint8Array(11).fill(0xff);
  expectDecodeError(() => splitMessage(eleven), 'VarintOverflow');
  expectDecodeError(() => ref.SpawnEntity.decode(spawnWithName(eleven)), 'VarintOverflow');
  expectDecodeError(() => ref.SpawnEntity.decode(spawnWithName(new Uint8Array(10).fill(0xff))), 'VarintOverflow');
  expectDecodeError(() => ref.SpawnEntity.decode(spawnWithName(hex('ff ff ff ff ff ff ff ff ff 02'))), 'VarintOverflow');
  expectDecodeError(() => splitMessage(hex('80')), 'UnexpectedEnd');
  expectDecodeError(() => ref.SpawnEntity.decode(spawnWithName(hex('ff ff'))), 'UnexpectedEnd');
  expectDecodeError(() => ref.decodeAny(hex('81')), 'UnexpectedEnd');
  expectDecodeError(() => splitMessage(hex('80 00')), 'NonCanonicalVarint');
  expectDecodeError(() => ref.decodeAny(hex('81 00')), 'NonCanonicalVarint');
  expectDecodeError(() => ref.SpawnEntity.decode(spawnWithName(hex('80 00'))), 'NonCanonicalVarint');
  expectDecodeError(() => k.Nested.decode(hex('80 80 00')), 'NonCanonicalVarint');
  expectDecodeError(() => splitMessage(hex('ff ff ff ff 1f')), 'VarintOverflow');
  // A usize past what the target holds (2^53 here).
  const everything = encode(k.Everything, kitchen.everything(new Rng(1)));
  const usizeAt = 79;
  const tooBig = concat(everything.subarray(0, usizeAt), varintBytes(2n ** 60n), everything.subarray(usizeAt + everything.subarray(usizeAt).findIndex((b) => b < 0x80) + 1));
  expectDecodeError(() => k.Everything.decode(tooBig), 'VarintOverflow');
  expectDecodeError(() => k.Everything.decode(concat(everything.subarray(0, usizeAt), eleven)), 'VarintOverflow');
});

test('C8: invalid UTF-8 is refused, short and long, owned and in place', () => {
  const cases = [[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0x6f, 0x6b, 0xfe], [0xf4, 0x90, 0x80, 0x80], [0xf0, 0x8f, 0xbf, 0xbf], [0xe0, 0x9f, 0xbf], [0x80]];
  for (const bad of cases) {
    for (const pad of [0, 20, 100]) {
      const text = concat(new Uint8Array(pad).fill(0x61), bad);
      const spawn = spawnWithName(concat(varintBytes(text.length), text));
      expectDecodeError(() => ref.SpawnEntity.decode(spawn), 'InvalidUtf8', toHex(text));
      expectDecodeError(() => ref.SpawnEntity.decodeInPlace(reference.spawnEntity(), spawn), 'InvalidUtf8');
    }
  }
  // A leading BOM is part of the string, as in Rust.
  const bom = spawnWithName([3, 0xef, 0xbb, 0xbf]);
  assert.equal(ref.SpawnEntity.decode(bom).name, '\ufeff');
});

test('C9: enum tags past the last, bools of 2..=255, Option tags past 1, NonZero 0 and bad chars are refused', () => {
  for (const tag of [3n, 255n, 0xffffffffn, 0x100000000n]) {
    const input = encode(ref.PlayerInput, reference.playerInput());
    const bad = concat(input.subarray(0, 14), varintBytes(tag));
    expectDecodeError(() => ref.PlayerInput.decode(bad), 'InvalidTag', `${tag}`);
  }
  const input = encode(ref.PlayerInput, reference.playerInput());
  const buttons = new Uint8Array(input);
  buttons[5] = 0x40;
  expectDecodeError(() => ref.PlayerInput.decode(buttons), 'InvalidValue');
  // The exact-size prefix is checked before any field: a bad button in a short input is UnexpectedEnd.
  expectDecodeError(() => ref.PlayerInput.decode(buttons.subarray(0, 10)), 'UnexpectedEnd');
  const e = encode(k.Everything, kitchen.everything(new Rng(2)));
  for (let b = 2; b <= 255; b++) {
    const bad = new Uint8Array(e);
    bad[74] = b; // m: bool
    expectDecodeError(() => k.Everything.decode(bad), 'InvalidTag', `bool ${b}`);
  }
  const opt = k.Rare.decode(hex('07'));
  assert.deepEqual(opt, { x: 7 });
  for (const tag of [2, 3, 0x80, 0xff]) expectDecodeError(() => k.Linked.decode(Uint8Array.of(5, tag)), 'InvalidTag', `option ${tag}`);
  const badChar = new Uint8Array(e);
  new DataView(badChar.buffer).setUint32(75, 0xd800, true);
  expectDecodeError(() => k.Everything.decode(badChar), 'InvalidValue', 'surrogate');
  new DataView(badChar.buffer).setUint32(75, 0x110000, true);
  expectDecodeError(() => k.Everything.decode(badChar), 'InvalidValue', 'past U+10FFFF');
  // NonZero: r (nz_u32) follows o (usize) and p (isize), whose lengths vary: patch a fresh value.
  const value = kitchen.everything(new Rng(2));
  value.o = 1;
  value.p = 1;
  const withSmall = encode(k.Everything, value);
  withSmall.set([0, 0, 0, 0], 81);
  expectDecodeError(() => k.Everything.decode(withSmall), 'InvalidValue', 'NonZeroU32 0');
  // Enum with a tag past 127 (varint tags): 2 is no variant, 300 is.
  expectDecodeError(() => k.Shape.decode(hex('02')), 'InvalidTag');
  assert.deepEqual(k.Shape.decode(hex('ac 02 00 00 80 3f')), { tag: 'Circle', radius: 1 });
  expectDecodeError(() => k.Shape.decode(hex('ff ff ff ff 1f')), 'VarintOverflow');
  // Flags: a bit no flag uses.
  expectDecodeError(() => k.Input.decode(hex('04 00 00 00 00 00 00 00 00')), 'InvalidValue');
  expectDecodeError(() => k.Input.decode(hex('00 02 00 00 00 00 00 00 00')), 'InvalidValue');
});

test('C10: nesting past the depth limit is refused without a stack overflow', () => {
  expectDecodeError(() => k.Tree.decode(new Uint8Array(1_000_000).fill(1)), 'DepthExceeded');
  expectDecodeError(() => k.Deep.decode(new Uint8Array(100).fill(1), { ...DEFAULT_LIMITS, maxDepth: 3 }), 'DepthExceeded');
  const tree: k.Tree = { tag: 'Node', 0: { tag: 'Leaf', 0: 1 }, 1: { tag: 'Node', 0: { tag: 'Leaf', 0: 2 }, 1: { tag: 'Leaf', 0: 3 } } };
  const bytes = encode(k.Tree, tree);
  assert.equal(toHex(bytes), '01 00 01 01 00 02 00 03');
  assert.deepEqual(k.Tree.decode(bytes), tree);
  const limits = { ...DEFAULT_LIMITS, maxDepth: 4 };
  k.Tree.decode(concat(new Uint8Array(4).fill(1), hex('00 09 00 09 00 09 00 09 00 09')), limits);
  expectDecodeError(() => k.Tree.decode(concat(new Uint8Array(5).fill(1), hex('00 09 00 09 00 09 00 09 00 09 00 09')), limits), 'DepthExceeded');
  expectDecodeError(() => k.Linked.decode(concat(...Array.from({ length: 40 }, () => [7, 1]), [7, 0])), 'DepthExceeded');
});

test('C11: a valid message and a trailing byte is TrailingBytes; exact-size messages keep the general errors at every length', () => {
  for (const [name, file] of goldenFiles()) expectDecodeError(() => ref.decodeAny(concat(file, [0])), 'TrailingBytes', name);
  const moved = concat(encode(ref.PlayerMoved, reference.playerMoved()), [0xaa]);
  expectDecodeError(() => ref.PlayerMoved.decode(moved), 'TrailingBytes');
  expectDecodeError(() => ref.PlayerMoved.decodeInPlace(reference.playerMoved(), moved), 'TrailingBytes');
  const input = encode(ref.PlayerInput, reference.playerInput());
  const badStance = new Uint8Array(input);
  badStance[14] = 9;
  const small = { ...DEFAULT_LIMITS, maxMessage: input.length - 1 };
  for (let len = 0; len <= input.length + 2; len++) {
    const bytes = new Uint8Array(len);
    bytes.set(input.subarray(0, Math.min(len, input.length)));
    if (len < input.length) expectDecodeError(() => ref.PlayerInput.decode(bytes), 'UnexpectedEnd', `${len}`);
    else if (len === input.length) assert.deepEqual(ref.PlayerInput.decode(bytes), reference.playerInput());
    else expectDecodeError(() => ref.PlayerInput.decode(bytes), 'TrailingBytes', `${len}`);
    if (len >= input.length) {
      const s = new Uint8Array(len);
      s.set(badStance);
      expectDecodeError(() => ref.PlayerInput.decode(s), 'InvalidTag', `${len}`);
    }
    expectDecodeError(() => ref.PlayerInput.decode(bytes, small), len > small.maxMessage ? 'MessageTooLarge' : 'UnexpectedEnd', `${len} small`);
    expectDecodeError(() => ref.PlayerInput.decodeInPlace(reference.playerInput(), bytes, small), len > small.maxMessage ? 'MessageTooLarge' : 'UnexpectedEnd');
  }
  // The whole input over max_message, for a message of variable size.
  expectDecodeError(() => ref.SpawnEntity.decode(new Uint8Array(64), { ...DEFAULT_LIMITS, maxMessage: 40 }), 'MessageTooLarge');
});

test('C12: floats round-trip bit for bit: quiet NaN payloads, ±inf, -0.0, subnormals; signalling NaNs come back quiet (SPEC-NOTES.md)', () => {
  const bits = [0x7fc00000, 0x7fc01234, 0xffc00000, 0xffc00001, 0x7f800000, 0xff800000, 0x80000000, 0x00000001, 0x807fffff, 0x7f7fffff];
  for (const b of bits) {
    const body = new Uint8Array(16);
    const dv = new DataView(body.buffer);
    dv.setUint32(0, 7, true);
    for (let i = 0; i < 3; i++) dv.setUint32(4 + 4 * i, b, true);
    const out = new Uint8Array(16);
    ref.PlayerMoved.encode(ref.PlayerMoved.decode(body), out);
    assert.equal(toHex(out), toHex(body), `0x${b.toString(16)}`);
  }
  // A signalling NaN (quiet bit clear) widens to a quiet one in the JavaScript engine.
  const body = new Uint8Array(16);
  new DataView(body.buffer).setUint32(4, 0x7f800001, true);
  const out = new Uint8Array(16);
  ref.PlayerMoved.encode(ref.PlayerMoved.decode(body), out);
  assert.equal(new DataView(out.buffer).getUint32(4, true), 0x7fc00001);
  // f64 NaN payloads survive (no conversion).
  const shape = hex('01 01 00 00 00 00 00 f0 7f');
  const o2 = new Uint8Array(9);
  k.Shape.encode(k.Shape.decode(shape), o2);
  assert.equal(toHex(o2), toHex(shape));
});

test('C13: a repeated map key is DuplicateKey; a sorted map out of order too', () => {
  const entry = hex('00 00 00 00 e8 03 00 00 01 00 64 00 00');
  expectDecodeError(() => ref.Inventory.decode(concat([9, 0, 0, 0, 2], entry, entry)), 'DuplicateKey');
  const v = kitchen.everything(new Rng(3));
  v.cc = new Map([['a', new Uint8Array(0)], ['b', new Uint8Array(0)]]);
  const good = encode(k.Everything, v);
  const at = toHex(good).indexOf('02 01 61 00 01 62 00') / 3;
  assert.ok(at > 0);
  const swapped = new Uint8Array(good);
  swapped.set([2, 1, 0x62, 0, 1, 0x61, 0], at);
  expectDecodeError(() => k.Everything.decode(swapped), 'DuplicateKey', 'out of order');
  const repeated = new Uint8Array(good);
  repeated.set([2, 1, 0x61, 0, 1, 0x61, 0], at);
  expectDecodeError(() => k.Everything.decode(repeated), 'DuplicateKey', 'repeated');
  // Struct keys (no known order): a repeat by bytes.
  v.cc = new Map();
  v.ll = new Map([[{ item: 1, count: 2 }, true], [{ item: 1, count: 3 }, false]]);
  const withKeys = encode(k.Everything, v);
  const keysAt = toHex(withKeys).indexOf('02 01 00 00 00 02 00 01 01 00 00 00 03 00 00') / 3;
  assert.ok(keysAt > 0);
  const dup = new Uint8Array(withKeys);
  dup[keysAt + 12] = 2;
  expectDecodeError(() => k.Everything.decode(dup), 'DuplicateKey', 'struct keys');
});

test('C14: an unknown message id is UnknownMessage with the id; another message id is UnexpectedMessage', () => {
  const e = expectDecodeError(() => ref.decodeAny(hex('09 00')), 'UnknownMessage');
  assert.equal(e.id, 9);
  const e0 = expectDecodeError(() => ref.decodeAny(hex('00')), 'UnknownMessage');
  assert.equal(e0.id, 0);
  const u = expectDecodeError(() => ref.PlayerMoved.decodeMessage(hex('02 00')), 'UnexpectedMessage');
  assert.equal(u.expected, 1);
  assert.equal(u.found, 2);
});

test('C15: encoding into encodedLen − 1 bytes is an EncodeError with the sizes, nothing else', () => {
  const cases: [MessageCodec<never>, unknown][] = [
    [ref.PlayerMoved as never, reference.playerMoved()],
    [ref.PlayerInput as never, reference.playerInput()],
    [ref.SpawnEntity as never, reference.spawnEntity()],
    [ref.WorldSnapshot as never, reference.worldSnapshot(32)],
    [ref.Inventory as never, reference.inventory(128)],
    [k.Everything as never, kitchen.everything(new Rng(4))],
  ];
  for (const [codec, value] of cases) {
    const n = codec.encodedLen(value as never);
    for (const offset of [0, 3]) {
      const buf = new Uint8Array(offset + n - 1);
      try {
        codec.encode(value as never, buf, offset);
        assert.fail(`${codec.NAME} encoded into too small a buffer`);
      } catch (e) {
        assert.ok(e instanceof EncodeError, `${codec.NAME}: ${String(e)}`);
        assert.equal(e.needed, n);
        assert.equal(e.available, n - 1);
      }
      const m = codec.messageLen(value as never);
      assert.throws(() => codec.encodeMessage(value as never, new Uint8Array(m - 1)), EncodeError);
    }
  }
});

test('C16: 64 KiB of random bytes, and random mutations of valid messages, only ever give a value or a DecodeError', () => {
  const all: MessageCodec<never>[] = [...BODY_CODECS, ...KITCHEN_CODECS];
  for (let seed = 1; seed <= 12; seed++) {
    const r = new Rng(seed);
    const big = r.bytes(64 * 1024);
    decodeResult(() => ref.decodeAny(big));
    decodeResult(() => k.decodeAny(big));
    for (const c of all) decodeResult(() => c.decode(big), c.NAME);
  }
  const r = new Rng(99);
  const valid: Uint8Array[] = [
    encode(ref.SpawnEntity, reference.spawnEntity()),
    encode(ref.Inventory, reference.inventory(5)),
    encode(k.Everything, kitchen.everything(r)),
    encode(k.Tree, kitchen.tree(r)),
    encode(k.Node, kitchen.node(r)),
    encode(k.EntitySnapshot, kitchen.entitySnapshot(r)),
    encode(k.Quantized, kitchen.quantized(r)),
  ];
  let ok = 0;
  for (let i = 0; i < 20000; i++) {
    const base = valid[i % valid.length]!;
    const m = new Uint8Array(base);
    const flips = 1 + r.below(3);
    for (let j = 0; j < flips; j++) m[r.below(m.length)] ^= 1 << r.below(8);
    const cut = r.below(4) === 0 ? m.subarray(0, r.below(m.length + 1)) : m;
    for (const c of all) if (decodeResult(() => c.decode(cut), c.NAME) === null) ok++;
  }
  assert.ok(ok > 0);
});
