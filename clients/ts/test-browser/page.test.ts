/**
 * The web demo page in headless Chromium without the Rust server: served by
 * a throwaway Node server with web_demo's routes.
 *
 * - With the network replaced by an in-page fake of web_demo
 *   (fake-webtransport.ts): the same steps as web-demo.test.ts (tiers,
 *   checked delta snapshots, a restart the page recovers from, a wrong hash,
 *   a wrong protocol, a screenshot).
 * - With the browser's real WebTransport and nothing listening: the page
 *   shows the browser's error, keeps retrying, and never connects.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { freePorts, launchChromium, openPage, waitForResult, waitForStatus, within, zaoResult, type Context } from './harness.js';
import { startStatic, type StaticServer } from './static-server.js';

let browser: Browser | null = null;

before(async () => {
  browser = await within(45_000, 'launching Chromium', launchChromium());
});

after(async () => {
  await within(15_000, 'closing Chromium', browser?.close() ?? Promise.resolve()).catch(() => {});
});

test('the page against an in-page fake web_demo: tiers, checked snapshots, restart, wrong hash, wrong protocol', { timeout: 120_000 }, async (t) => {
  let hash = randomBytes(32).toString('hex');
  const web = await startStatic({ fake: true, certificate: () => ({ hashes: [hash], port: 4433 }) });
  const log: string[] = [];
  const ctx: Context = { log };
  try {
    const page = await openPage(browser!, log, 'fake');
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${web.url}?mode=test&entities=256&hz=60`);
    const done = (index: number) => (r: NonNullable<Awaited<ReturnType<typeof zaoResult>>>) =>
      r.connected && r.current !== null && r.current.index >= index && r.current.allTiers && r.current.snapshotsApplied >= 120;
    const bad = (r: NonNullable<Awaited<ReturnType<typeof zaoResult>>>) => (r.snapshots.mismatches > 0 ? `mismatch: ${r.snapshots.firstMismatch}` : null);
    const r = await waitForResult(page, 'connected, every tier, 120 snapshots', 20_000, ctx, done(0), bad);
    assert.equal(await page.textContent('#status'), 'connected as client 1');
    assert.equal(r.snapshots.applyErrors, 0);
    assert.ok(r.snapshots.perSecond > 30, `${r.snapshots.perSecond}/s`);
    assert.notEqual(r.rttMs, null);
    assert.match((await page.textContent('#stats')) ?? '', /RTT .* ms/);
    t.diagnostic(`fake: connect ${r.connectMs?.toFixed(1)} ms, ${r.snapshots.perSecond.toFixed(1)} snapshots/s, tiers ${JSON.stringify(r.current?.tiers)}`);

    // A restart: the old server falls silent, /zao/certificate names a new hash.
    hash = randomBytes(32).toString('hex');
    assert.equal(await page.evaluate(() => (window as unknown as { zaoFake: { kill(): number } }).zaoFake.kill()), 1);
    const again = await waitForResult(page, 'reconnected after the restart', 20_000, ctx, (x) => x.reconnects >= 1 && done(1)(x), bad);
    assert.equal(again.current?.clientId, '2');
    assert.match(again.connections[0]!.closed ?? '', /nothing from the server/);
    assert.deepEqual(errors, []);

    const wrongHash = await openPage(browser!, log, 'hash');
    await wrongHash.goto(`${web.url}?mode=test&hash=${'0'.repeat(64)}`);
    const text = await waitForStatus(wrongHash, 'an error in #status', 10_000, ctx, (s) => s.startsWith('transport:'));
    assert.equal(text, 'transport: Opening handshake failed.');
    await new Promise((ok) => setTimeout(ok, 700));
    const w = await zaoResult(wrongHash);
    assert.equal(w?.connects, 0);
    assert.ok((w?.attempts ?? 0) >= 2);
    await wrongHash.close();

    const wrongProtocol = await openPage(browser!, log, 'protocol');
    await wrongProtocol.goto(`${web.url}?mode=test&protocol=wrong`);
    const refused = await waitForStatus(wrongProtocol, '"protocol mismatch" in #status', 10_000, ctx, (s) => s.includes('protocol mismatch'));
    assert.match(refused, /^refused: protocol mismatch: /);
    await wrongProtocol.close();

    const demo = await openPage(browser!, log, 'demo');
    await demo.setViewportSize({ width: 960, height: 720 });
    await demo.goto(`${web.url}?mode=demo&entities=256`);
    await waitForResult(demo, 'connected (demo)', 10_000, ctx, (x) => x.connected);
    await new Promise((ok) => setTimeout(ok, 2000));
    const d = await zaoResult(demo);
    assert.ok(d !== null && d.snapshots.applied > 60 && d.snapshots.mismatches === 0 && d.current?.tiers.playerMoved === null);
    // Entities are drawn: the canvas is not one colour.
    const colours = await demo.evaluate(() => {
      const c = document.getElementById('world') as HTMLCanvasElement;
      const px = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
      const seen = new Set<number>();
      for (let i = 0; i < px.length; i += 4 * 97) seen.add((px[i]! << 16) | (px[i + 1]! << 8) | px[i + 2]!);
      return seen.size;
    });
    assert.ok(colours > 3, `the canvas shows entities (${colours} colours sampled)`);
    const shot = join(mkdtempSync(join(tmpdir(), 'zao-page-')), 'web_demo_fake.png');
    await demo.screenshot({ path: shot });
    t.diagnostic(`screenshot: ${shot}`);
    await demo.close();
  } finally {
    await web.close();
  }
});

test('the page with the real WebTransport and nothing listening: the browser error in #status, retries, never connected', { timeout: 60_000 }, async (t) => {
  const { udp } = await freePorts();
  let up = false;
  let web: StaticServer | null = null;
  web = await startStatic({ fake: false, certificate: () => (up ? { hashes: [randomBytes(32).toString('hex')], port: udp } : null) });
  const log: string[] = [];
  const ctx: Context = { log };
  try {
    const page = await openPage(browser!, log, 'real');
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${web.url}?mode=test`);
    assert.equal(await page.evaluate(() => typeof WebTransport), 'function', 'WebTransport exists in this Chromium (a secure context)');
    const down = await waitForStatus(page, 'the certificate fetch failing', 10_000, ctx, (s) => s.startsWith('certificate:'));
    assert.equal(down, 'certificate: Error: HTTP 503');
    up = true;
    const text = await waitForStatus(page, 'a transport error in #status', 10_000, ctx, (s) => s.startsWith('transport:'));
    await new Promise((ok) => setTimeout(ok, 1000));
    const r = await zaoResult(page);
    assert.equal(r?.connects, 0);
    assert.ok((r?.attempts ?? 0) >= 3, `retries every 250 ms: ${r?.attempts} attempts`);
    assert.deepEqual(errors, []);
    t.diagnostic(`nothing listening: ${text}; console: ${log.filter((l) => l.includes('Failed to establish')).slice(0, 1).join('')}`);
  } finally {
    await web.close();
  }
});
