/**
 * Delta snapshots (docs/WIRE.md §12.10): the chunk bits in the order the
 * Rust codec writes them, encode/decode round trips (ported from
 * src/proto/delta/codec.rs tests), hostile chunks, the receiver's baselines
 * and acks, and the jitter buffer.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  BitWriter,
  DeltaReceiver,
  decodeChunk,
  encodeDelta,
  JitterBuffer,
  jitterConfig,
  interpolated,
  Lane,
  laneApply,
  putVarint,
  Table,
  tableOf,
  varintLen,
  DecodeError,
  ackHolds,
  MAX_CHUNK_ROWS,
  type DeltaCodec,
  type Layout,
  type SnapshotChunk,
} from '../src/index.js';
import * as k from './generated/kitchen.js';
import * as ref from '../src/generated/reference.js';
import { canon, decodeResult, hex, Rng, toHex } from './helpers.js';
import { kitchen } from './samples.js';

function bitsOf(layout: Layout, base: Table, cur: Table, budget: number): Uint8Array[] {
  return encodeDelta(layout, base, cur, budget, 4096, (_i, _n, write) => {
    const buf = new Uint8Array(Math.ceil(budget / 8) + 8);
    const w = new BitWriter(buf);
    write(w);
    const end = w.finish();
    assert.ok(end !== null);
    return buf.slice(0, end);
  });
}

function apply(layout: Layout, base: Table, chunks: Uint8Array[]): Table {
  const rows = new Table(layout.lanes.length);
  let expect: number | null = 0;
  for (const c of chunks) {
    const part = decodeChunk(layout, base, c, 0, c.length, 1 << 20);
    assert.equal(part.lo, expect);
    expect = part.hi;
    rows.extend(part.rows);
  }
  assert.equal(expect, null, 'the last chunk has no end');
  return rows;
}

test('the bits of a one-row keyframe, in the order the Rust codec writes them', () => {
  // Key 8 bits; one lane of 0..=3 (F = 2). One item: key 5, lane 2.
  const layout: Layout = { keyBits: 8, lanes: [Lane.upto(3)] };
  const cur = new Table(1);
  cur.push(5, [2]);
  const [chunk] = bitsOf(layout, new Table(1), cur, 1000);
  // lo 00000000 · last 1 · removed γ(0) 1 · added γ(1) 010 · code zero 0 escape 0 width 000011 (3)
  // · frame base 2 in 2 bits, width 0 in 6 · key gap 5 in 3 bits, least significant bit first.
  assert.equal(toHex(chunk!), '00 8b 41 a0');
  const part = decodeChunk(layout, new Table(1), chunk!, 0, chunk!.length, 100);
  assert.deepEqual([part.lo, part.hi, part.rows.keys, part.rows.lanes], [0, null, [5], [2]]);
  // A zero byte after the padding is TrailingBytes; a set padding bit InvalidValue.
  assert.equal(decodeResult(() => decodeChunk(layout, new Table(1), hex('00 8b 41 a0 00'), 0, 5, 100))?.kind, 'TrailingBytes');
});

const LANES = [Lane.upto(8_191_999), Lane.upto(8_191_999), Lane.wrapping(12), Lane.upto(1), Lane.bits(32)];
const LAYOUT: Layout = { keyBits: 32, lanes: LANES };

function randomRow(r: Rng): number[] {
  return LANES.map((l) => (l.max === 0xffffffff ? r.next() : r.below(l.max + 1)));
}

function world(r: Rng, n: number): Table {
  const t = new Table(LANES.length);
  let key = 0;
  for (let i = 0; i < n; i++) {
    key += 1 + r.below(3);
    t.push(key, randomRow(r));
  }
  return t;
}

function step(r: Rng, base: Table): Table {
  const t = new Table(LANES.length);
  let nextNew = (base.keys[base.length - 1] ?? 0) + 1;
  for (let i = 0; i < base.length; i++) {
    if (r.below(50) === 0) continue;
    let row = base.row(i);
    const kind = r.below(4);
    if (kind === 1) row = randomRow(r);
    else if (kind >= 2) row = row.map((v, l) => laneApply(LANES[l]!, v, r.below(600) - 300) ?? v);
    t.push(base.keys[i]!, row);
  }
  for (let i = r.below(5); i > 0; i--) {
    t.push(nextNew, randomRow(r));
    nextNew += 1 + r.below(1000);
  }
  return t;
}

test('deltas and keyframes rebuild the snapshot exactly, whatever the chunk budget', () => {
  const r = new Rng(1);
  for (let round = 0; round < 40; round++) {
    const base = world(r, [0, 1, 7, 300][round % 4]!);
    const cur = step(r, base);
    for (const budget of [400, 1500, 9000, 1 << 20]) {
      const chunks = bitsOf(LAYOUT, base, cur, budget);
      for (const c of chunks) assert.ok(c.length * 8 <= budget + 7);
      assert.equal(canon(apply(LAYOUT, base, chunks)), canon(cur), `round ${round}, budget ${budget}`);
      const empty = new Table(LANES.length);
      assert.equal(canon(apply(LAYOUT, empty, bitsOf(LAYOUT, empty, cur, budget))), canon(cur));
      for (const c of chunks) {
        const part = decodeChunk(LAYOUT, base, c, 0, c.length, 1 << 20);
        const [s, e] = cur.range(part.lo, part.hi);
        assert.deepEqual(part.rows.keys, cur.keys.slice(s, e));
      }
    }
  }
});

test('an unchanged row costs one bit', () => {
  const base = world(new Rng(2), 1000);
  const bytes = bitsOf(LAYOUT, base, base, 1 << 20).reduce((n, c) => n + c.length, 0);
  assert.ok(bytes <= 1000 / 8 + 16, `${bytes}`);
});

test('garbage never throws anything but DecodeError and never applies a value out of its lane', () => {
  const r = new Rng(3);
  const base = world(r, 50);
  const good = bitsOf(LAYOUT, base, step(r, base), 1 << 20)[0]!;
  let bad = 0;
  for (let i = 0; i < 20000; i++) {
    let bytes: Uint8Array = new Uint8Array(good);
    if (i % 2 === 0) bytes[r.below(bytes.length)]! ^= 1 << r.below(8);
    else bytes = r.bytes(r.below(64));
    try {
      const part = decodeChunk(LAYOUT, base, bytes, 0, bytes.length, 1 << 16);
      for (let j = 0; j < part.rows.length; j++) {
        part.rows.row(j).forEach((v, l) => assert.ok(v <= LANES[l]!.max));
        if (j > 0) assert.ok(part.rows.keys[j - 1]! < part.rows.keys[j]!);
      }
    } catch (e) {
      assert.ok(e instanceof DecodeError, String(e));
      bad++;
    }
  }
  assert.ok(bad > 10000, `${bad}`);
});

/** What a server sends: for each chunk, `id + header (the message with no items) + bits`. */
function chunksOf<S, I>(
  codec: DeltaCodec<S, I>,
  headerBytes: Uint8Array,
  seq: number,
  baseline: number,
  base: readonly I[],
  cur: readonly I[],
  budget = 1000 * 8,
): SnapshotChunk[] {
  const layout = { keyBits: codec.keyBits, lanes: codec.lanes };
  return encodeDelta(layout, tableOf(codec, base), tableOf(codec, cur), budget, 4096, (chunk, chunks, write) => {
    const idLen = varintLen(codec.ID);
    const buf = new Uint8Array(idLen + headerBytes.length + Math.ceil(budget / 8) + 8);
    putVarint(buf, 0, codec.ID);
    buf.set(headerBytes, idLen);
    const w = new BitWriter(buf, idLen + headerBytes.length);
    write(w);
    const end = w.finish()!;
    return { header: { seq, baseline, chunk, chunks }, id: codec.ID, message: buf.slice(0, end), bodyStart: idLen };
  });
}

function entityHeader(tick: number): Uint8Array {
  const out = new Uint8Array(5);
  k.EntitySnapshot.encode({ tick, entities: [] }, out);
  return out;
}

test('a receiver applies keyframes and deltas, keeps baselines, acks what it holds, refuses what it lacks', () => {
  const r = new Rng(4);
  const rx = new DeltaReceiver(k.EntitySnapshotDelta);
  const world1 = Array.from({ length: 200 }, (_, i) => kitchen.entityState(r, i * 2));
  const key1 = chunksOf(k.EntitySnapshotDelta, entityHeader(10), 1, 0, [], world1, 2000);
  assert.ok(key1.length > 1, 'split into chunks');
  // Out of order, one duplicated.
  for (const c of [...key1].reverse()) assert.ok(rx.handleChunk(c).ok);
  const dup = rx.handleChunk(key1[0]!);
  assert.ok(!dup.ok && dup.error.kind === 'Duplicate');
  assert.equal(rx.newestComplete(), 1);
  const latest = rx.latest()!;
  assert.equal(latest.tick, 10);
  assert.equal(canon(latest.snapshot), canon({ tick: 10, entities: world1 }));
  // A delta against snapshot 1.
  const world2 = world1.filter((_, i) => i % 7 !== 0).map((e) => (r.below(3) === 0 ? { ...e, heading: (e.heading + 5) % 4096 } : e));
  world2.push(kitchen.entityState(r, 1001));
  const d2 = chunksOf(k.EntitySnapshotDelta, entityHeader(11), 2, 1, world1, world2);
  for (const c of d2) {
    const res = rx.handleChunk(c);
    assert.ok(res.ok, res.ok ? '' : res.error.message);
  }
  assert.equal(canon(rx.snapshot(2)!.snapshot), canon({ tick: 11, entities: world2 }));
  const ack = rx.ack();
  assert.equal(ack.id, 10);
  assert.equal(ack.newest, 2);
  assert.ok(ackHolds(ack, 1) && ackHolds(ack, 2) && !ackHolds(ack, 3));
  // A baseline never held: dropped, never applied.
  const orphan = chunksOf(k.EntitySnapshotDelta, entityHeader(12), 4, 3, world2, world2);
  const miss = rx.handleChunk(orphan[0]!);
  assert.ok(!miss.ok && miss.error.kind === 'MissingBaseline');
  // Another message type's chunk.
  const wrong = rx.handleChunk({ ...orphan[0]!, id: 4 });
  assert.ok(!wrong.ok && wrong.error.kind === 'WrongType');
  // A header that differs between chunks of one snapshot.
  const split = chunksOf(k.EntitySnapshotDelta, entityHeader(13), 5, 2, world2, world1, 2000);
  assert.ok(split.length > 1);
  assert.ok(rx.handleChunk(split[0]!).ok);
  const other = chunksOf(k.EntitySnapshotDelta, entityHeader(14), 5, 2, world2, world1, 2000);
  const mismatch = rx.handleChunk(other[1]!);
  assert.ok(!mismatch.ok && mismatch.error.kind === 'Malformed');
  // Stale: far behind the newest.
  const far = chunksOf(k.EntitySnapshotDelta, entityHeader(500), 400, 0, [], world1);
  for (const c of far) rx.handleChunk(c);
  const stale = rx.handleChunk(key1[0]!);
  assert.ok(!stale.ok && stale.error.kind === 'Stale');
  assert.ok(rx.stats().applied > 0 && rx.stats().missingBaseline === 1 && rx.stats().malformed >= 1);
});

test('a delta codec with a u16 key, f32, wrapping i16, bool, QQuat and u64 lanes round-trips through a receiver', () => {
  const r = new Rng(5);
  const rx = new DeltaReceiver(k.MovingDelta);
  const header = new Uint8Array(9);
  k.Moving.encode({ tick: 77n, things: [] }, header);
  const a = Array.from({ length: 60 }, (_, i) => kitchen.thing(r, i * 3));
  for (const c of chunksOf(k.MovingDelta, header, 1, 0, [], a)) assert.ok(rx.handleChunk(c).ok);
  const b = a.map((t) => ({ ...t, hp: t.hp === 32767 ? -32768 : t.hp + 1, pos: { ...t.pos, x: Math.fround(t.pos.x + 0.25) } }));
  for (const c of chunksOf(k.MovingDelta, header, 2, 1, a, b)) assert.ok(rx.handleChunk(c).ok);
  assert.equal(canon(rx.latest()!.snapshot), canon({ tick: 77n, things: b }));
  assert.equal(rx.latest()!.tick, 77);
});

test('a QQuat lane set that is no unit quaternion is refused as Malformed', () => {
  const header = new Uint8Array(9);
  k.Moving.encode({ tick: 1n, things: [] }, header);
  const thing = kitchen.thing(new Rng(6), 1);
  thing.rot = { largest: 0, steps: [510, 510, 510] };
  const rx = new DeltaReceiver(k.MovingDelta);
  const res = rx.handleChunk(chunksOf(k.MovingDelta, header, 1, 0, [], [thing])[0]!);
  assert.ok(!res.ok && res.error.kind === 'Malformed' && res.error.decodeError?.kind === 'InvalidValue');
});

test('the reference WorldSnapshot travels as deltas too (its header ends with a 4-byte count)', () => {
  const header = new Uint8Array(8);
  assert.equal(ref.WorldSnapshot.encode({ tick: 9, players: [] }, header), 8);
  assert.equal(toHex(header), '09 00 00 00 00 00 00 00');
  const players = Array.from({ length: 100 }, (_, i) => ({ entity: 100 + i, position: { x: i, y: 0.5, z: -i } }));
  const rx = new DeltaReceiver(ref.WorldSnapshotDelta);
  for (const c of chunksOf(ref.WorldSnapshotDelta, header, 1, 0, [], players)) assert.ok(rx.handleChunk(c).ok);
  assert.equal(canon(rx.latest()!.snapshot), canon({ tick: 9, players }));
});

test('the jitter buffer orders by tick, renders a measured delay behind, and interpolates', () => {
  const jb = new JitterBuffer<k.EntityState>(jitterConfig(50), (e) => e.entity);
  const at = (tick: number): k.EntityState[] => [{ entity: 1, position: [tick * 1000, 0, 0], heading: (tick * 100) % 4096 }];
  // Ticks every 50 ms with up to 10 ms of jitter, one arriving out of order.
  const arrivals: [number, number][] = [
    [0, 1],
    [60, 2],
    [95, 3],
    [160, 5],
    [158, 4],
    [205, 6],
  ];
  for (const [t, tick] of arrivals) jb.insert(t, tick, 1, at(tick));
  assert.ok(jb.stats().chunksOnTime >= 5);
  const s = jb.sample(300);
  assert.ok(s.from !== null && s.to !== null, 'between two ticks');
  assert.ok(s.to!.tick > s.from!.tick);
  const [e] = interpolated(s, k.EntitySnapshotDelta);
  const x = e!.position[0]!;
  assert.ok(x >= s.from!.tick * 1000 && x <= s.to!.tick * 1000, `${x}`);
  assert.ok(jb.delayMs() >= 50);
});

test('a chunk adds at most MAX_CHUNK_ROWS rows, even rows that cost no bit (as the Rust codec)', () => {
  // 10 000 rows with consecutive keys and one value: each added row costs
  // zero bits, so only the row cap cuts the chunks.
  const layout: Layout = { keyBits: 32, lanes: [Lane.upto(1000)] };
  const cur = new Table(1);
  for (let key = 0; key < 10_000; key++) cur.push(key, [7]);
  const chunks = bitsOf(layout, new Table(1), cur, 8 * 1100);
  assert.equal(chunks.length, Math.ceil(10_000 / MAX_CHUNK_ROWS));
  for (const c of chunks) {
    assert.ok(decodeChunk(layout, new Table(1), c, 0, c.length, 1 << 20).rows.keys.length <= MAX_CHUNK_ROWS);
  }
  assert.deepEqual(apply(layout, new Table(1), chunks).keys, cur.keys);

  // A hand-made chunk claiming 5000 zero-bit rows: refused before any row
  // is read, OverLimit as in Rust; a count past the key range is InvalidValue.
  const claim = (added: number, keyBits: number): Uint8Array => {
    const buf = new Uint8Array(64);
    const w = new BitWriter(buf);
    w.putBits(0, keyBits); // lo 0
    w.putBool(true); // the last chunk
    w.putGamma(0); // removed
    w.putGamma(added);
    const end = w.finish();
    assert.ok(end !== null);
    return buf.slice(0, end);
  };
  const big = claim(5000, 32);
  assert.equal(decodeResult(() => decodeChunk(layout, new Table(1), big, 0, big.length, 1 << 20))?.kind, 'OverLimit');
  const small: Layout = { keyBits: 8, lanes: [Lane.upto(1000)] };
  const past = claim(257, 8);
  assert.equal(decodeResult(() => decodeChunk(small, new Table(1), past, 0, past.length, 1 << 20))?.kind, 'InvalidValue');
});
