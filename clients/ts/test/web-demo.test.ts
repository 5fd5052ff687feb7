/**
 * The web demo's parts that run without a browser: the world function
 * (`zao_messages::demo_world`) in the codec's steps, the snapshot check,
 * the page's probe driven through a real `ClientSession` by an in-memory
 * server written from the same contract, the browser test's parsing of the
 * server's output, and web/protocol.ts being what the generator writes.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ClientSession, angleToRadians, dequantize, parseProtocolJson } from '../src/index.js';
import { generate } from '../src/codegen/generate.js';
import { parseQuantParams } from '../src/codegen/quant-search.js';
import { EntitySnapshot, EntitySnapshotDelta, protocol, PROTOCOL_HASH } from '../web/protocol.js';
import { DemoProbe, SILENCE_MS, canonical, testInventory, wrongProtocol, type Link, type ProbeConfig } from '../web/probe.js';
import { POSITION, demoWorld, firstMismatch, headingStepFromRadians, metres, worldEntity, worldPosition } from '../web/world.js';
import { FakeDemoServer, type FakeServerOptions } from '../test-browser/fake-server.js';
import { BUILD_HINT, bothTransports, parseReady, parseStats, requireWebDemoBin } from '../test-browser/harness.js';
import { replaceSection } from '../bench/markers.js';
import { pkgText } from './helpers.js';

// ---------------------------------------------------------------- the world

test('demo_world: known entities at known ticks, in metres and in steps', () => {
  assert.deepEqual(worldPosition(0, 0), { x: -50, y: 0, z: -50 });
  // i = 5, t = 7: x = (185 + 7) / 4 − 50, z = (55 + 14) / 4 − 50, heading (12 mod 64) · 64.
  assert.deepEqual(worldPosition(5, 7), { x: -2, y: 5, z: -32.75 });
  assert.deepEqual(worldEntity(5, 7), { entity: 6, position: [4094000, 4101000, 4063250], heading: 768 });
  // Wraps: (37·10 + 30) mod 400 = 0.
  assert.equal(worldPosition(10, 30).x, -50);
  assert.equal(worldPosition(17, 0).y, 1);
  const w = demoWorld(100, 256);
  assert.equal(w.tick, 100);
  assert.equal(w.entities.length, 256);
  assert.deepEqual(
    w.entities.map((e) => e.entity),
    Array.from({ length: 256 }, (_, i) => i + 1),
  );
});

test('demo_world is exact in f32 and in the codec: 1 mm position steps, QAngle<12> headings of ((i + t) mod 64) · 64', () => {
  for (let i = 0; i < 300; i++) {
    for (const t of [0, 1, 2, 59, 60, 399, 400, 401, 1234, 65535, 1_000_003, 4_000_000]) {
      const p = worldPosition(i, t);
      for (const v of [p.x, p.y, p.z]) assert.equal(Math.fround(v), v, `f32-exact at i ${i}, t ${t}`);
      const e = worldEntity(i, t);
      assert.deepEqual(e.position, [(p.x + 4096) * 1000, (p.y + 4096) * 1000, (p.z + 4096) * 1000]);
      assert.deepEqual(metres(e), p, 'steps back to metres, exactly');
      assert.equal(headingStepFromRadians(i, t), e.heading, `QAngle::from_radians at i ${i}, t ${t}`);
      assert.equal(e.heading % 64, 0);
    }
  }
  // The heading step is a turn's fraction: step 1024 is a quarter turn.
  assert.ok(Math.abs(angleToRadians(12, 1024) - Math.PI / 2) < 1e-6);
  assert.equal(dequantize(POSITION, 4096000), 0);
});

test('the check: exact items pass; a step off, a wrong heading, a key out of range do not', () => {
  const items = demoWorld(77, 32).entities;
  assert.equal(firstMismatch(77, items, 32), null);
  assert.equal(firstMismatch(77, items, null), null);
  assert.match(firstMismatch(78, items, 32)!, /tick 78: entity 1 /);
  const off = items.map((e) => ({ ...e, position: [...e.position] }));
  off[9]!.position[2]! += 1;
  assert.match(firstMismatch(77, off, 32)!, /entity 10 /);
  const turned = items.map((e) => ({ ...e }));
  turned[3]!.heading = (turned[3]!.heading + 1) % 4096;
  assert.match(firstMismatch(77, turned, 32)!, /entity 4 /);
  assert.match(firstMismatch(77, [worldEntity(32, 77)], 32)!, /key 33 outside 1\.\.32/);
  assert.match(firstMismatch(77, [{ ...items[0]!, entity: 0 }], null)!, /key 0 outside/);
});

test('canonical text compares maps by key, whatever their order', () => {
  const a = testInventory();
  const b = { owner: a.owner, slots: new Map([...a.slots.entries()].reverse()) };
  assert.equal(canonical(a), canonical(b));
  b.slots.set(3, { item: 2002, count: 63, durability: 65535, flags: 3 });
  assert.notEqual(canonical(a), canonical(b));
});

// ---------------------------------------------------------------- the probe over a session

/** A client session, the page's probe and the fake server, wired like WebTransportClient wires them. */
class Harness implements Link {
  readonly session: ClientSession;
  readonly server: FakeDemoServer;
  readonly probe: DemoProbe;
  now = 0;
  closed: { code: number; reason: string } | null = null;
  private pumping = false;
  private again = false;
  private readonly inbox: (() => void)[] = [];

  constructor(config: ProbeConfig, server: Omit<FakeServerOptions, 'clientId'>, proto = protocol) {
    this.probe = new DemoProbe(config);
    this.server = new FakeDemoServer(
      {
        control: (b) => this.inbox.push(() => this.session.handleControlBytes(this.now, b)),
        reliable: (b) => this.inbox.push(() => this.session.handleStreamBytes(this.now, 1, b)),
        datagram: (b) => this.inbox.push(() => this.session.handleDatagram(this.now, b)),
      },
      { ...server, clientId: 9n },
    );
    this.probe.attemptStarted(0);
    this.session = new ClientSession({ protocol: proto }, 0);
    this.session.handleConnected(0, 1200);
    this.pump();
  }

  pump(): void {
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    try {
      for (let round = 0; round < 64; round++) {
        this.again = false;
        while (this.inbox.length > 0) this.inbox.shift()!();
        this.session.handleTimeout(this.now);
        for (let e = this.session.pollEvent(); e !== null; e = this.session.pollEvent()) this.probe.handleEvent(e, this, this.now);
        if (this.session.hasSnapshots()) this.probe.handleSnapshots(this, this.now);
        for (const s of this.session.writableStreams()) {
          for (let w = this.session.pollStream(s); w !== null; w = this.session.pollStream(s)) {
            if (w.kind !== 'data') continue;
            if (s === 'control') this.server.handleControl(w.data);
            else this.server.handleStream(100 + s, w.data);
          }
        }
        for (let t = this.session.pollTransmit(); t !== null; t = this.session.pollTransmit()) {
          if (t.kind === 'datagram') this.server.handleDatagram(t.data);
          else this.closed = { code: t.code, reason: t.reason };
        }
        if (!this.again && this.inbox.length === 0) break;
      }
    } finally {
      this.pumping = false;
    }
  }

  /** `n` server ticks at `hz`, the page's timer every tick. */
  run(n: number, hz = 60): void {
    for (let i = 0; i < n; i++) {
      this.now += 1000 / hz;
      this.server.tick();
      this.pump();
      this.probe.tick(this.now);
    }
  }
}

test('test mode over a session: every tier answered, 180 delta snapshots against acked baselines, all equal to the world', () => {
  const h = new Harness({ mode: 'test', entities: 256, hz: 60 }, { entities: 256, startTick: 5 });
  h.run(180);
  const r = h.probe.result(h.now);
  assert.equal(r.status, 'connected as client 9');
  assert.ok(r.connected);
  assert.equal(r.connects, 1);
  assert.equal(r.reconnects, 0);
  const c = r.current!;
  assert.ok(c.allTiers, JSON.stringify(c.tiers));
  assert.equal(c.echoMismatches, 0);
  assert.equal(c.snapshotsApplied, 180);
  assert.equal(c.checked, 180);
  assert.equal(r.snapshots.mismatches, 0, r.snapshots.firstMismatch ?? '');
  assert.equal(r.snapshots.applyErrors, 0);
  assert.ok(c.chunksApplied > 180, 'a keyframe of 256 entities takes several chunks');
  assert.equal(c.lastTick, 5 + 179);
  assert.ok(h.server.counts.againstBaseline > 150, `deltas against acked baselines: ${JSON.stringify(h.server.counts)}`);
  assert.ok(h.server.counts.acks > 150);
  assert.ok(r.fullSnapshots >= 5);
  assert.ok(Math.abs(r.snapshots.perSecond - 60) < 2, `${r.snapshots.perSecond}/s`);
  assert.ok(r.bytesInPerSec > 0);
  assert.equal(r.rttMs, 0, 'the in-memory server echoes the pings at once');
  assert.ok(r.snapshots.jitterDelayMs !== null && r.snapshots.jitterDelayMs > 0);
  // The latest whole snapshot is demo_world of its tick, and the drawing has every entity.
  const latest = h.probe.latest()!;
  assert.equal(canonical(latest), canonical(demoWorld(latest.tick, 256)));
  assert.equal(h.probe.sample(h.now).length, 256);
  // JSON-able, as window.zaoResult must be.
  assert.deepEqual(JSON.parse(JSON.stringify(r)), r);
});

test('demo mode sends no test messages but still measures the round trip and checks snapshots', () => {
  const h = new Harness({ mode: 'demo', entities: null, hz: 60 }, { entities: 40 });
  h.run(90);
  const r = h.probe.result(h.now);
  const t = r.current!.tiers;
  assert.equal(t.playerMoved, null);
  assert.equal(t.spawnEntity, null);
  assert.equal(t.inventory, null);
  assert.equal(t.playerInput, null);
  assert.notEqual(t.worldSnapshot, null);
  assert.equal(h.server.counts.answered, 0);
  assert.ok(h.server.counts.echoed > 0, 'pings');
  assert.equal(r.snapshots.checked, 90);
  assert.equal(r.snapshots.mismatches, 0);
  assert.notEqual(r.rttMs, null);
});

test('the check catches a server whose world is off by one step, and one missing an entity', () => {
  const h = new Harness(
    { mode: 'test', entities: 64, hz: 60 },
    {
      entities: 64,
      corrupt: (tick, es) => {
        if (tick === 40) es[17]!.position[0]! += 1;
      },
    },
  );
  h.run(60);
  const r = h.probe.result(h.now);
  assert.equal(r.snapshots.mismatches, 1);
  assert.equal(r.snapshots.entityMismatches, 1);
  assert.match(r.snapshots.firstMismatch!, /^tick 40: entity 18 /);
  const g = new Harness({ mode: 'test', entities: 64, hz: 60 }, { entities: 64, corrupt: (tick, es) => void (tick === 10 && es.pop()) });
  g.run(30);
  const q = g.probe.result(g.now);
  assert.equal(q.snapshots.mismatches, 1);
  assert.match(q.snapshots.firstMismatch!, /^tick 10: 63 entities, keys up to 63, expected 1\.\.64/);
});

test('a protocol the server does not speak is refused with "protocol mismatch" in the status', () => {
  assert.notEqual(wrongProtocol().hash, protocol.hash);
  assert.equal(protocol.hash, PROTOCOL_HASH);
  const h = new Harness({ mode: 'test', entities: 8, hz: 60 }, { entities: 8 }, wrongProtocol());
  h.run(3);
  const r = h.probe.result(h.now);
  assert.match(r.status, /^refused: protocol mismatch: /);
  assert.equal(r.connects, 0);
  assert.equal(r.connected, false);
  assert.equal(h.closed?.code, 1);
});

test('a server that falls silent is left after SILENCE_MS, with the reason in the status', () => {
  const h = new Harness({ mode: 'test', entities: 8, hz: 60 }, { entities: 8 });
  h.run(30);
  assert.ok(h.probe.result(h.now).connected);
  h.server.dead = true;
  h.run(Math.ceil((SILENCE_MS / 1000) * 60) - 10);
  assert.ok(h.probe.result(h.now).connected, 'not before SILENCE_MS');
  h.run(20);
  const r = h.probe.result(h.now);
  assert.equal(r.connected, false);
  assert.equal(r.disconnects, 1);
  assert.match(r.status, /^closed locally \(Normal\): nothing from the server for \d+ ms$/);
  assert.equal(h.closed?.code, 0);
  assert.equal(r.connections[0]!.closed, r.status);
});

// ---------------------------------------------------------------- the browser test's plumbing

test('the server contract lines parse; a stats line with both transports is recognised', () => {
  assert.equal(parseReady('hello'), null);
  const ready = parseReady('ZAO_WEB_DEMO {"page":"http://127.0.0.1:8080/","webtransport":"https://127.0.0.1:4433/","certificate":"http://127.0.0.1:8080/zao/certificate"}');
  assert.deepEqual(ready, { page: 'http://127.0.0.1:8080/', webtransport: 'https://127.0.0.1:4433/', certificate: 'http://127.0.0.1:8080/zao/certificate' });
  assert.throws(() => parseReady('ZAO_WEB_DEMO {"page":1}'), /bad ready line/);
  const s = parseStats(
    'ZAO_WEB_STATS {"tick":120,"clients":[{"id":1,"transport":"quic","rtt_ms":0.3,"bytes_out_per_s":51000,"snapshots_sent":120},{"id":2,"transport":"webtransport","rtt_ms":0.9,"bytes_out_per_s":52000,"snapshots_sent":60}]}',
  )!;
  assert.equal(s.tick, 120);
  assert.ok(bothTransports(s));
  assert.ok(!bothTransports({ tick: 1, clients: [s.clients[0]!] }));
  assert.equal(parseStats('ZAO_WEB_DEMO {}'), null);
});

test('a missing server binary fails with the build hint', () => {
  const old = process.env['ZAO_WEB_DEMO_BIN'];
  process.env['ZAO_WEB_DEMO_BIN'] = join(mkdtempSync(join(tmpdir(), 'zao-')), 'no_such_web_demo');
  try {
    assert.throws(() => requireWebDemoBin(), (e: Error) => e.message.includes(BUILD_HINT) && e.message.includes('no_such_web_demo'));
    assert.equal(BUILD_HINT, 'build it first: cargo build --release --example web_demo');
  } finally {
    if (old === undefined) delete process.env['ZAO_WEB_DEMO_BIN'];
    else process.env['ZAO_WEB_DEMO_BIN'] = old;
  }
});

test('web/protocol.ts is what zao-codegen writes for web/protocol.json (npm run codegen:web)', () => {
  const schema = parseProtocolJson(pkgText('web', 'protocol.json'));
  const quant = new Map([
    ['0xc9e8d3ec877fff92', parseQuantParams('qvector:3:-4096:4096:1000')!],
    ['0x74d2ea2c97ca95e1', parseQuantParams('qangle:12')!],
  ]);
  const snapshots = new Map([['EntitySnapshot', { items: 'entities', key: 'entity', tick: 'tick' }]]);
  const text = generate(schema, { runtime: '../src/index.js', source: 'web/protocol.json', quant, snapshots });
  assert.equal(text, pkgText('web', 'protocol.ts'), 'regenerate with `npm run codegen:web`');
  assert.equal(EntitySnapshot.ID, 6);
  assert.equal(EntitySnapshotDelta.keyBits, 32);
  assert.equal(EntitySnapshotDelta.lanes.length, 4);
});

// ---------------------------------------------------------------- BENCHMARKS.md

test('bench:write replaces the TypeScript section between its markers, or appends it', () => {
  const section = '## TypeScript codec (Node)\n\nnew table\n';
  const withMarkers = '# Benchmarks\n\nbefore\n\n<!-- typescript:start -->\nold\n<!-- typescript:end -->\n\nafter\n';
  assert.equal(replaceSection(withMarkers, section), '# Benchmarks\n\nbefore\n\n<!-- typescript:start -->\n## TypeScript codec (Node)\n\nnew table\n<!-- typescript:end -->\n\nafter\n');
  const appended = replaceSection('# Benchmarks\n\ntext', section);
  assert.equal(appended, '# Benchmarks\n\ntext\n\n<!-- typescript:start -->\n## TypeScript codec (Node)\n\nnew table\n<!-- typescript:end -->\n');
  assert.equal(replaceSection(appended, section), appended, 'idempotent');
  assert.throws(() => replaceSection('<!-- typescript:end -->\n<!-- typescript:start -->', section), /markers/);
  // Round trip through a file, as bench:write does it.
  const dir = mkdtempSync(join(tmpdir(), 'zao-bench-'));
  const file = join(dir, 'BENCHMARKS.md');
  writeFileSync(file, withMarkers);
  writeFileSync(file, replaceSection(readFileSync(file, 'utf8'), section));
  assert.ok(readFileSync(file, 'utf8').includes('new table'));
});
