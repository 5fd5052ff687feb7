/**
 * The client session, driven with bytes and a virtual clock (no network):
 * the handshake and its failures (§12.2–§12.3), reliable streams
 * (§12.5), datagrams of every kind (§12.6), heartbeats (§12.7), what the
 * receiver does with the unexpected (§12.8) and the close codes (§12.9).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as ref from '../src/generated/reference.js';
import * as k from './generated/kitchen.js';
import {
  ackDatagram,
  ClientSession,
  CloseCode,
  DATAGRAM_BUDGET,
  DEFAULT_CLIENT_LIMITS,
  MIN_UP_DATAGRAM,
  deltaDatagram,
  encodeHelloReply,
  frame,
  FrameDecoder,
  FrameError,
  SendError,
  snapshotDatagram,
  SnapshotReceiver,
  splitDatagram,
  streamHeader,
  DeltaReceiver,
  type ClientEvent,
  type HelloReply,
  type ProtocolInfo,
  type Transmit,
} from '../src/index.js';
import { asset, concat, hex, Rng, toHex } from './helpers.js';
import { reference } from './samples.js';

/** Everything written on a stream until now. */
function drain(s: ClientSession, stream: 'control' | number): { data: Uint8Array; finished: boolean } {
  const parts: Uint8Array[] = [];
  let finished = false;
  for (let w = s.pollStream(stream); w !== null; w = s.pollStream(stream)) {
    if (w.kind === 'data') parts.push(w.data);
    else finished = true;
  }
  return { data: concat(...parts), finished };
}

function transmits(s: ClientSession): Transmit[] {
  const out: Transmit[] = [];
  for (let t = s.pollTransmit(); t !== null; t = s.pollTransmit()) out.push(t);
  return out;
}

function events(s: ClientSession): ClientEvent[] {
  const out: ClientEvent[] = [];
  for (let e = s.pollEvent(); e !== null; e = s.pollEvent()) out.push(e);
  return out;
}

function reply(r: HelloReply): Uint8Array {
  return frame(encodeHelloReply(r));
}

/** A client of `protocol` that said hello and got Welcome { client_id: 7 }. */
function connected(protocol: ProtocolInfo = ref.protocol, now = 0): ClientSession {
  const s = new ClientSession({ protocol }, now);
  s.handleConnected(now, 1200);
  drain(s, 'control');
  s.handleControlBytes(now, reply({ tag: 'Welcome', clientId: 7n }));
  assert.deepEqual(events(s), [{ kind: 'Connected', clientId: 7n }]);
  return s;
}

function closeOf(s: ClientSession): Transmit | undefined {
  return transmits(s).find((t) => t.kind === 'close');
}

function message<T>(codec: { messageLen(v: T): number; encodeMessage(v: T, b: Uint8Array): number }, v: T): Uint8Array {
  const out = new Uint8Array(codec.messageLen(v));
  codec.encodeMessage(v, out);
  return out;
}

test('the hello goes out on the control stream, byte for byte hello.bin, then the stream is finished', () => {
  const s = new ClientSession({ protocol: ref.protocol }, 0);
  assert.deepEqual(s.writableStreams(), []);
  s.handleConnected(0, 1200);
  assert.deepEqual(s.writableStreams(), ['control']);
  const { data, finished } = drain(s, 'control');
  assert.equal(toHex(data), toHex(asset('conformance', 'hello.bin')));
  assert.ok(finished);
  // Welcome, split at every byte.
  const w = reply({ tag: 'Welcome', clientId: 1n });
  assert.equal(toHex(w), '09 00 01 00 00 00 00 00 00 00');
  for (const b of w) s.handleControlBytes(1, Uint8Array.of(b));
  assert.deepEqual(events(s), [{ kind: 'Connected', clientId: 1n }]);
  assert.ok(s.isConnected());
  assert.equal(s.clientId(), 1n);
});

test('a refusal closes with code 1 and the reason text; the application reads the reason', () => {
  const s = new ClientSession({ protocol: ref.protocol }, 0);
  s.handleConnected(0, 1200);
  s.handleControlBytes(0, hex('02 01 04'));
  assert.deepEqual(closeOf(s), { kind: 'close', code: CloseCode.Refused, reason: 'server full' });
  assert.deepEqual(events(s), [{ kind: 'Disconnected', reason: { kind: 'Refused', reason: { tag: 'ServerFull' } } }]);
  const t = new ClientSession({ protocol: ref.protocol }, 0);
  t.handleConnected(0, 1200);
  t.handleControlBytes(0, hex('10 01 03 0d 75 6e 6b 6e 6f 77 6e 20 74 6f 6b 65 6e'));
  assert.deepEqual(closeOf(t), { kind: 'close', code: 1, reason: 'unauthorized: unknown token' });
});

test('a bad reply, bytes after it, or an over-long frame is a protocol violation (code 2)', () => {
  for (const bytes of [hex('01 05'), concat(reply({ tag: 'Welcome', clientId: 1n }), [0]), hex('80 80 80 80 10'), hex('02 00 01')]) {
    const s = new ClientSession({ protocol: ref.protocol }, 0);
    s.handleConnected(0, 1200);
    s.handleControlBytes(0, bytes);
    const c = closeOf(s);
    assert.equal(c?.kind === 'close' ? c.code : -1, CloseCode.ProtocolViolation, toHex(bytes));
  }
});

test('no reply within the handshake timeout closes with code 3; datagrams too small, code 2', () => {
  const s = new ClientSession({ protocol: ref.protocol }, 0);
  s.handleConnected(0, 1200);
  assert.equal(s.pollTimeout(), DEFAULT_CLIENT_LIMITS.handshakeTimeoutMs);
  assert.equal(DEFAULT_CLIENT_LIMITS.handshakeTimeoutMs, 10000, 'as Limits::handshake_timeout');
  s.handleTimeout(9999);
  assert.ok(!s.isClosed());
  s.handleTimeout(10000);
  assert.deepEqual(closeOf(s), { kind: 'close', code: CloseCode.HandshakeTimeout, reason: 'handshake deadline passed' });
  assert.deepEqual(events(s), [{ kind: 'Disconnected', reason: { kind: 'HandshakeTimedOut' } }]);
  const small = new ClientSession({ protocol: ref.protocol }, 0);
  small.handleConnected(0, MIN_UP_DATAGRAM - 1);
  assert.deepEqual(closeOf(small), { kind: 'close', code: 2, reason: 'datagrams too small' });
  assert.deepEqual(events(small), [{ kind: 'Disconnected', reason: { kind: 'DatagramsUnsupported', max: MIN_UP_DATAGRAM - 1 } }]);
  // Chromium's 1024: the client connects and sends at most that.
  const chromium = new ClientSession({ protocol: ref.protocol }, 0);
  chromium.handleConnected(0, 1024);
  assert.ok(!chromium.isClosed());
});

test('the server closing during the handshake with code 3 reads as HandshakeTimedOut', () => {
  const s = new ClientSession({ protocol: ref.protocol }, 0);
  s.handleConnected(0, 1200);
  s.handleConnectionLost(10, { kind: 'Closed', by: 'Peer', code: 3, reason: 'handshake deadline passed' });
  assert.deepEqual(events(s), [{ kind: 'Disconnected', reason: { kind: 'HandshakeTimedOut' } }]);
});

test('reliable streams: the channel header then length-framed messages, split anywhere; ids admitted', () => {
  const spawn = message(ref.SpawnEntity, reference.spawnEntity());
  const inv = message(ref.Inventory, reference.inventory(3));
  const stream = concat(streamHeader(0), frame(spawn), frame(inv), hex('01 00'));
  assert.equal(toHex(stream.subarray(0, 2)), '00 2a');
  const r = new Rng(1);
  for (let round = 0; round < 30; round++) {
    const s = connected();
    let at = 0;
    while (at < stream.length) {
      const n = 1 + r.below(10);
      s.handleStreamBytes(1, 3, stream.subarray(at, at + n));
      at += n;
    }
    const ev = events(s);
    assert.equal(ev.length, 2, 'the heartbeat is no message');
    assert.ok(ev[0]!.kind === 'Message' && ev[0]!.id === 3 && ev[0]!.channel === 0);
    const first = ev[0]!;
    if (first.kind === 'Message') assert.deepEqual(ref.SpawnEntity.decode(first.message.subarray(first.bodyStart)), reference.spawnEntity());
  }
});

test('§12.8: an unknown id, a wrong channel, a wrong direction, a bad header or frame close with code 2', () => {
  const cases: [string, Uint8Array][] = [
    ['unknown id', concat([0], frame(hex('09 00')))],
    ['a datagram message on a stream', concat([0], frame(message(ref.PlayerMoved, reference.playerMoved())))],
    ['a client-only message', concat([1], frame(message(ref.PlayerInput, reference.playerInput())))],
    ['a header naming no reliable channel', hex('01 01 00')],
    ['a header naming no channel', hex('09 01 00')],
    ['a frame over the limit', hex('00 80 80 80 80 10')],
    ['a non-canonical frame length', hex('00 80 00')],
    ['a bad id varint', concat([0], frame(hex('80 00')))],
  ];
  for (const [what, bytes] of cases) {
    const s = connected();
    s.handleStreamBytes(1, 3, bytes);
    const c = closeOf(s);
    assert.equal(c?.kind === 'close' ? c.code : -1, 2, what);
    assert.ok(s.isClosed(), what);
  }
  // A second stream for an ordered channel; the peer finishing one inside
  // a message.
  const s = connected();
  s.handleStreamBytes(1, 3, hex('00'));
  s.handleStreamBytes(1, 7, hex('00 01 00'));
  assert.equal((closeOf(s) as { code: number }).code, 2);
  const t = connected();
  t.handleStreamBytes(1, 3, concat([0], frame(hex('01 00')).subarray(0, 2)));
  t.handleStreamFinished(2, 3);
  assert.equal((closeOf(t) as { code: number }).code, 2);
});

test('a draining server finishes an ordered stream after its last whole message: no violation', () => {
  const s = connected();
  const spawn = message(ref.SpawnEntity, reference.spawnEntity());
  s.handleStreamBytes(1, 3, concat(streamHeader(0), frame(spawn)));
  s.handleStreamFinished(2, 3);
  assert.ok(!s.isClosed());
  const [e] = events(s);
  assert.ok(e?.kind === 'Message' && e.id === 3);
});

test('a reliable-unordered stream carries one message, then ends', () => {
  const s = connected(k.protocol);
  const pair = message(k.Pair, [1, 'x']);
  s.handleStreamBytes(1, 11, concat(streamHeader(3), frame(pair)));
  s.handleStreamFinished(1, 11);
  assert.ok(!s.isClosed());
  const [e] = events(s);
  assert.ok(e?.kind === 'Message' && e.id === 7 && e.channel === 3);
});

test('datagrams: unreliable packing, snapshot chunks newest-wins, delta chunks to pollSnapshot', () => {
  const s = connected();
  const moved = message(ref.PlayerMoved, reference.playerMoved());
  s.handleDatagram(1, concat([1], frame(moved), frame(moved), hex('01 00')));
  assert.equal(events(s).length, 2);
  // §12.6's example: world_snapshot.bin as seq 1, chunk 0 of 1.
  const snap = concat(hex('02 01 00 01'), asset('golden', 'world_snapshot.bin'));
  assert.equal(snap.length, 61);
  s.handleDatagram(2, snap);
  s.handleDatagram(3, snap);
  const ev = events(s);
  assert.equal(ev.length, 1, 'the duplicate is dropped');
  assert.equal(s.stats().datagramsDropped, 1);
  // A delta chunk (03) goes to pollSnapshot, never to pollEvent.
  const body = hex('04 01 00 00 00 00 00 00 00');
  s.handleDatagram(4, deltaDatagram({ seq: 1, baseline: 0, chunk: 0, chunks: 1 }, body));
  assert.equal(events(s).length, 0);
  const chunk = s.pollSnapshot();
  assert.ok(chunk !== null && chunk.id === 4 && chunk.header.seq === 1);
  assert.equal(s.pollSnapshot(), null);
  // Over the payload limit: dropped and counted; before the handshake too.
  s.handleDatagram(5, new Uint8Array(1453));
  assert.equal(s.stats().datagramsDropped, 2);
  const early = new ClientSession({ protocol: ref.protocol }, 0);
  early.handleDatagram(0, snap);
  assert.equal(early.stats().datagramsDropped, 1);
});

test('§12.8 for datagrams: malformed, unknown kind, acks from the server, wrong kinds of ids close with code 2', () => {
  const moved = message(ref.PlayerMoved, reference.playerMoved());
  const cases: [string, Uint8Array][] = [
    ['empty', new Uint8Array(0)],
    ['unknown kind', hex('07 00')],
    ['unreliable with a zero length', hex('01 00')],
    ['unreliable past its end', hex('01 05 01')],
    ['snapshot chunk past the count', hex('02 01 03 03 04')],
    ['snapshot without a message', hex('02 01 00 01')],
    ['delta with baseline not below seq', hex('03 05 05 00 01 04')],
    ['delta with seq 0', hex('03 00 00 00 01 04')],
    ['acks from the server', ackDatagram([{ id: 4, newest: 1, held: 0n }])],
    ['an unreliable message in a snapshot datagram', concat(hex('02 01 00 01'), moved)],
    ['a snapshot message packed as unreliable', concat([1], frame(asset('golden', 'world_snapshot.bin')))],
    ['an unknown id in a datagram', hex('01 02 09 00')],
    ['a delta of a non-snapshot id', concat(hex('03 01 00 00 01'), moved)],
    ['id 0 in a snapshot datagram', hex('02 01 00 01 00')],
  ];
  for (const [what, d] of cases) {
    const s = connected();
    s.handleDatagram(1, d);
    const c = closeOf(s);
    assert.equal(c?.kind === 'close' ? c.code : -1, 2, what);
  }
  // Past MAX_CHUNKS, or 1 024 sequence numbers behind: dropped, not a violation.
  const s = connected();
  const body = hex('04 01 00 00 00 00 00 00 00');
  s.handleDatagram(1, deltaDatagram({ seq: 1, baseline: 0, chunk: 0, chunks: 4097 }, body));
  s.handleDatagram(1, deltaDatagram({ seq: 2000, baseline: 0, chunk: 0, chunks: 1 }, body));
  s.handleDatagram(1, deltaDatagram({ seq: 976, baseline: 0, chunk: 0, chunks: 1 }, body));
  s.handleDatagram(1, snapshotDatagram({ seq: 1, chunk: 0, chunks: 4097 }, asset('golden', 'world_snapshot.bin')));
  assert.ok(!s.isClosed());
  assert.equal(s.stats().datagramsDropped, 3);
  assert.equal(s.pollSnapshot()?.header.seq, 2000);
});

test('newest wins per chunk (§12.6 table, src/proto/snapshot.rs tests)', () => {
  const h = (seq: number, chunk: number, chunks: number) => ({ seq, chunk, chunks });
  const r = new SnapshotReceiver();
  const expect: [ReturnType<typeof h>, string][] = [
    [h(5, 0, 2), 'Deliver'],
    [h(5, 0, 2), 'Duplicate'],
    [h(4, 0, 2), 'Stale'],
    [h(4, 1, 2), 'Deliver'],
    [h(7, 1, 2), 'Deliver'],
    [h(5, 1, 2), 'Stale'],
    [h(7, 0, 2), 'Deliver'],
    [h(6, 0, 3), 'Stale'],
    [h(8, 2, 3), 'Deliver'],
    [h(7, 0, 2), 'Stale'],
    [h(8, 0, 3), 'Deliver'],
  ];
  for (const [header, verdict] of expect) assert.equal(r.handleChunk(1, header), verdict, JSON.stringify(header));
  assert.equal(r.handleChunk(2, h(1, 0, 1)), 'Deliver');
  assert.notEqual(r.handleChunk(1, h(9, 3, 2)), 'Deliver');
  assert.notEqual(r.handleChunk(1, h(9, 0, 0xffffffff)), 'Deliver');
});

test('sending: reliable frames behind the channel header, unreliable packing, sequenced numbering, unordered streams', () => {
  const s = connected(k.protocol);
  s.sendMessage(k.Settings, { volume: 1, name: 'a' });
  s.sendMessage(k.Settings, { volume: 2, name: 'b' });
  assert.deepEqual(s.writableStreams(), [0]);
  const { data } = drain(s, 0);
  assert.equal(toHex(data), '00 05 03 03 01 01 61 05 03 03 02 01 62');
  // Unreliable: packed until flush, §12.6's layout.
  s.sendMessage(k.Shape, { tag: 'Nothing' });
  s.sendMessage(k.Empty, {});
  assert.deepEqual(transmits(s), []);
  assert.ok(s.flush());
  const [d] = transmits(s);
  assert.equal(d?.kind === 'datagram' ? toHex(d.data) : '', '01 02 02 00 01 08');
  // Sequenced: one datagram each, seq per id from 1.
  s.sendMessage(k.Input, { keys: 1, wide: 0n });
  s.sendMessage(k.Input, { keys: 2, wide: 0n });
  const seqs = transmits(s).map((t) => (t.kind === 'datagram' ? splitDatagram(t.data) : null));
  assert.deepEqual(seqs.map((p) => (p?.kind === 'snapshot' ? p.header.seq : -1)), [1, 2]);
  // Unordered: the header and the frame, for a stream of its own.
  s.sendMessage(k.Pair, [5, 'z']);
  const u = s.pollUnordered();
  assert.equal(u === null ? '' : toHex(u.data), '03 07 07 05 00 00 00 01 7a');
  assert.equal(u?.priority, -1);
  // Not registered for this side or channel; snapshots are the server's.
  assert.throws(() => s.sendMessage(k.Rare, { x: 1 }), (e: unknown) => e instanceof SendError && e.kind === 'NotRegistered');
  assert.throws(() => s.send(1, message(k.Settings, { volume: 1, name: '' })), (e: unknown) => e instanceof SendError && e.kind === 'NotRegistered');
  assert.throws(
    () => s.sendMessage(k.Settings, { volume: 1, name: 'x'.repeat(300 * 1024) }),
    (e: unknown) => e instanceof SendError && e.kind === 'TooLarge',
  );
  const big = { tag: 1, items: Array.from({ length: 200 }, () => ({ a: 1, b: 2 })) };
  void big;
  assert.throws(() => s.sendMessage(k.Shape, { tag: 'Nothing' }, 0), (e: unknown) => e instanceof SendError);
});

test('heartbeats: `01 00` on the reliable stream after a quarter of the silence timeout with nothing sent', () => {
  const s = connected(ref.protocol, 0);
  assert.equal(s.pollTimeout(), 7500);
  s.handleTimeout(7500);
  const { data } = drain(s, 0);
  assert.equal(toHex(data), '00 01 00');
  // Something sent since: no heartbeat at the next check.
  s.sendMessage(ref.SpawnEntity, reference.spawnEntity());
  drain(s, 0);
  s.handleTimeout(15000);
  assert.equal(drain(s, 0).data.length, 0);
  s.handleTimeout(22500);
  assert.equal(toHex(drain(s, 0).data), '01 00');
});

test('acks: one datagram of kind 04 (§12.6 example), from a receiver', () => {
  assert.equal(toHex(ackDatagram([{ id: 6, newest: 42, held: 0b101n }])), '04 06 2a 05 00 00 00 00 00 00 00');
  const s = connected();
  const rx = new DeltaReceiver(ref.WorldSnapshotDelta);
  s.sendAcks([rx.ack()]);
  const [t] = transmits(s);
  assert.equal(t?.kind === 'datagram' ? toHex(t.data) : '', '04 04 00 00 00 00 00 00 00 00 00');
  const many = Array.from({ length: 17 }, (_, i) => ({ id: i + 1, newest: 0, held: 0n }));
  assert.throws(() => s.sendAcks(many), (e: unknown) => e instanceof SendError && e.kind === 'TooManyAcks' && e.max === 16);
});

test('disconnect: code 0 with the reason; nothing queued goes out after a close', () => {
  const s = connected();
  s.sendMessage(ref.SpawnEntity, reference.spawnEntity());
  s.disconnect('bye');
  assert.deepEqual(closeOf(s), { kind: 'close', code: 0, reason: 'bye' });
  assert.deepEqual(s.writableStreams(), []);
  assert.throws(() => s.sendMessage(ref.SpawnEntity, reference.spawnEntity()), (e: unknown) => e instanceof SendError && e.kind === 'NotConnected');
  const [e] = events(s);
  assert.deepEqual(e, { kind: 'Disconnected', reason: { kind: 'Closed', by: 'Local', code: 0, reason: 'bye' } });
});

test('the frame decoder refuses a 4 GiB claim at its fifth byte (§12.5)', () => {
  const d = new FrameDecoder(256 * 1024);
  d.handleBytes(hex('80 80 80 80'));
  assert.equal(d.pollFrame(), null);
  d.handleBytes(hex('10'));
  assert.throws(() => d.pollFrame(), (e: unknown) => e instanceof FrameError && e.kind === 'TooLarge' && e.claimed === 2 ** 32);
  const e = new FrameDecoder(Infinity);
  e.handleBytes(new Uint8Array(11).fill(0xff));
  assert.throws(() => e.pollFrame(), (x: unknown) => x instanceof FrameError && x.kind === 'BadLength');
});

test('a finished ordered stream waits for room in the inbound queue, then delivers every message', () => {
  const spawn = message(ref.SpawnEntity, reference.spawnEntity());
  const s = new ClientSession({ protocol: ref.protocol, limits: { inboundQueue: spawn.length } }, 0);
  s.handleConnected(0, 1200);
  drain(s, 'control');
  s.handleControlBytes(0, reply({ tag: 'Welcome', clientId: 7n }));
  events(s);
  s.handleStreamBytes(1, 3, concat(streamHeader(0), frame(spawn), frame(spawn), frame(spawn)));
  s.handleStreamFinished(2, 3);
  assert.ok(!s.isClosed());
  let got = 0;
  for (let i = 0; i < 8; i++) {
    got += events(s).filter((e) => e.kind === 'Message').length;
    s.handleTimeout(3);
  }
  assert.equal(got, 3);
  assert.ok(!s.isClosed());
});
