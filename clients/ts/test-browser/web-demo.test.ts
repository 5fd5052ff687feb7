/**
 * The web demo end to end in a real browser: the Rust `web_demo` server
 * (target/release/examples/web_demo, or $ZAO_WEB_DEMO_BIN) and Debian's
 * headless Chromium driven by playwright-core.
 *
 * 1. `?mode=test`: connected; every tier both ways (PlayerMoved,
 *    SpawnEntity, Inventory echoed, PlayerInput answered, a full
 *    WorldSnapshot); ≥ 120 delta snapshots applied, each equal to the world
 *    function.
 * 2. The server's stats show a `webtransport` and a `quic` client at one tick.
 * 3. The server restarts on the same ports: the page reconnects by itself
 *    and everything holds again.
 * 4. A wrong certificate hash is refused; the page never connects.
 * 5. A wrong protocol is refused with "protocol mismatch".
 * 6. A screenshot of `?mode=demo` ($ZAO_SCREENSHOT, else target/web_demo.png).
 *
 * `npm run test:browser` (not part of `npm test`).
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { test } from 'node:test';
import type { Browser } from 'playwright-core';
import type { ZaoResult } from '../web/probe.js';
import {
  PKG,
  DemoServer,
  bothTransports,
  freePorts,
  launchChromium,
  openPage,
  requireWebDemoBin,
  waitForResult,
  waitForStatus,
  within,
  zaoResult,
  type Context,
  type ServerOptions,
} from './harness.js';

const ENTITIES = Number(process.env['ZAO_WEB_ENTITIES'] ?? 256);
const HZ = Number(process.env['ZAO_WEB_HZ'] ?? 60);
const MIN_SNAPSHOTS = 120;

/** A failure that names the snapshot check, or null. */
function snapshotFailure(r: ZaoResult): string | null {
  if (r.snapshots.mismatches > 0) return `${r.snapshots.mismatches} delta snapshots differ from the world function (first: ${r.snapshots.firstMismatch})`;
  const c = r.current;
  if (c !== null && c.echoMismatches > 0) return `${c.echoMismatches} echoes came back different from what was sent`;
  return null;
}

/** Connection `index` (0: the first) has every tier and enough checked snapshots. */
function connectionDone(index: number): (r: ZaoResult) => boolean {
  return (r) => r.connected && r.current !== null && r.current.index >= index && r.current.allTiers && r.current.snapshotsApplied >= MIN_SNAPSHOTS;
}

test('the web demo in headless Chromium: tiers, delta snapshots, native and browser clients, restart, refusals', { timeout: 240_000 }, async (t) => {
  const bin = requireWebDemoBin();
  const ports = await freePorts();
  const options: ServerOptions = { bin, httpPort: ports.http, udpPort: ports.udp, entities: ENTITIES, hz: HZ, nativeBots: 1 };
  const log: string[] = [];
  let server: DemoServer | null = null;
  let browser: Browser | null = null;
  const ctx: Context = { log, server: () => server?.output() ?? '(no server)' };
  const summary = { connectMs: NaN, rttMs: NaN, perSecond: NaN };
  let connectedOnce = false;
  try {
    server = await DemoServer.start(options);
    const base = server.ready.page.endsWith('/') ? server.ready.page : `${server.ready.page}/`;
    assert.equal(new URL(base).port, `${ports.http}`, 'the page is served on the HTTP port asked for');
    assert.equal(new URL(server.ready.webtransport).port, `${ports.udp}`, 'WebTransport listens on the UDP port asked for');
    browser = await within(45_000, 'launching Chromium', launchChromium());
    const page = await openPage(browser, log, 'test');
    const query = `entities=${ENTITIES}&hz=${HZ}`;

    await t.test('1. mode=test: every tier both ways and ≥ 120 delta snapshots equal to the world', async () => {
      await page.goto(`${base}?mode=test&${query}`);
      const r = await waitForResult(page, 'connected, every tier, 120 snapshots', 20_000, ctx, connectionDone(0), snapshotFailure);
      t.diagnostic(`tiers (ms after Connected): ${JSON.stringify(r.current?.tiers)}`);
      // 120 snapshots take 2 s at 60 Hz; half a second more for a full rate window at any rate.
      await new Promise((ok) => setTimeout(ok, 500));
      const settled = await waitForResult(page, 'still connected', 5_000, ctx, (x) => x.connected && x.snapshots.perSecond > 0, snapshotFailure);
      summary.connectMs = settled.connectMsFirst ?? NaN;
      summary.rttMs = settled.rttMs ?? settled.transportRttMs ?? NaN;
      summary.perSecond = settled.snapshots.perSecond;
      assert.equal(settled.connects, 1);
      assert.equal(settled.snapshots.mismatches, 0);
      assert.ok(settled.snapshots.checked >= MIN_SNAPSHOTS);
      connectedOnce = true;
    });

    await t.test('2. ZAO_WEB_STATS: a webtransport and a quic client in the world at one tick', async (tt) => {
      if (!connectedOnce) return tt.skip('step 1 failed: the page never connected');
      const since = Date.now();
      const end = since + 5_000;
      for (;;) {
        const r = await zaoResult(page);
        assert.ok(r?.connected, 'the page is still connected');
        const hit = server!.statsSince(since - 1500).find(bothTransports);
        if (hit !== undefined) {
          t.diagnostic(`stats at tick ${hit.tick}: ${JSON.stringify(hit.clients)}`);
          break;
        }
        if (Date.now() > end) {
          const seen = server!.statsSince(since - 1500).map((s) => JSON.stringify(s));
          throw new Error(`no ZAO_WEB_STATS line with both a webtransport and a quic client within 5 s; lines seen:\n${seen.join('\n')}\n${server!.output()}`);
        }
        await new Promise((ok) => setTimeout(ok, 200));
      }
    });

    await t.test('3. the server restarts on the same ports; the page reconnects by itself', async (tt) => {
      if (!connectedOnce) return tt.skip('step 1 failed: the page never connected');
      const before = await zaoResult(page);
      await within(10_000, 'stopping the server', server!.stop());
      server = await DemoServer.start(options);
      const r = await waitForResult(
        page,
        'reconnected after the restart, every tier, 120 snapshots',
        25_000,
        ctx,
        (x) => x.reconnects >= 1 && connectionDone(1)(x),
        snapshotFailure,
      );
      assert.ok(r.reconnects >= 1);
      assert.notEqual(r.current?.clientId, undefined);
      t.diagnostic(`reconnected: attempts ${r.attempts} (before the restart ${before?.attempts}), connect ${r.connectMs?.toFixed(1)} ms`);
    });

    await t.test('4. a wrong certificate hash: refused, an error in #status, never connected', async () => {
      const p = await openPage(browser!, log, 'hash');
      try {
        await p.goto(`${base}?mode=test&hash=${'0'.repeat(64)}&${query}`);
        const text = await waitForStatus(p, 'an error in #status', 10_000, ctx, (s) => s !== '' && !s.startsWith('loading') && !s.startsWith('connecting'));
        assert.ok(!text.startsWith('connected'), `#status: ${text}`);
        // A few more attempts: still never connected.
        await new Promise((ok) => setTimeout(ok, 1000));
        const r = await zaoResult(p);
        assert.equal(r?.connects, 0, `connected with a wrong hash: ${JSON.stringify(r)}`);
        assert.ok((r?.attempts ?? 0) >= 2, 'it keeps trying');
        t.diagnostic(`wrong hash: ${text}`);
      } finally {
        await p.close();
      }
    });

    await t.test('5. a wrong protocol: refused with "protocol mismatch"', async () => {
      const p = await openPage(browser!, log, 'protocol');
      try {
        await p.goto(`${base}?mode=test&protocol=wrong&${query}`);
        const text = await waitForStatus(p, '"protocol mismatch" in #status', 10_000, ctx, (s) => s.includes('protocol mismatch'));
        const r = await zaoResult(p);
        assert.equal(r?.connects, 0);
        t.diagnostic(`wrong protocol: ${text}`);
      } finally {
        await p.close();
      }
    });

    await t.test('6. mode=demo: a screenshot after 2 s', async () => {
      const p = await openPage(browser!, log, 'demo');
      try {
        await p.setViewportSize({ width: 960, height: 720 });
        await p.goto(`${base}?mode=demo&${query}`);
        await waitForResult(p, 'connected (demo)', 10_000, ctx, (x) => x.connected, snapshotFailure);
        await new Promise((ok) => setTimeout(ok, 2000));
        const r = await zaoResult(p);
        assert.ok(r !== null && r.snapshots.applied > 0 && r.snapshots.mismatches === 0, `demo mode applies snapshots: ${JSON.stringify(r?.snapshots)}`);
        const out = resolve(PKG, process.env['ZAO_SCREENSHOT'] ?? '../../target/web_demo.png');
        mkdirSync(dirname(out), { recursive: true });
        await p.screenshot({ path: out });
        t.diagnostic(`screenshot: ${out}`);
      } finally {
        await p.close();
      }
    });

    const line = `browser: connect ${summary.connectMs.toFixed(1)} ms, RTT ${summary.rttMs.toFixed(2)} ms, ${summary.perSecond.toFixed(1)} delta snapshots/s at ${HZ} Hz with ${ENTITIES} entities`;
    console.log(line);
  } finally {
    await within(15_000, 'closing Chromium', browser?.close() ?? Promise.resolve()).catch(() => {});
    await within(10_000, 'stopping the server', server?.stop() ?? Promise.resolve()).catch(() => {});
  }
});
