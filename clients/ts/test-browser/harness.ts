/**
 * What the browser tests share: free ports, the `web_demo` server process
 * (its ready line and its once-a-second stats), headless Chromium through
 * playwright-core, and waiting on the page's `window.zaoResult` with the
 * page's console in every failure message.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import type { ZaoResult } from '../web/probe.js';

/** The package root (clients/ts), from dist/test-browser/. */
export const PKG = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The repository root. */
export const REPO = resolve(PKG, '..', '..');

export const BUILD_HINT = 'build it first: cargo build --release --example web_demo';

/** The server binary: `$ZAO_WEB_DEMO_BIN`, else target/release/examples/web_demo. */
export function webDemoBin(): string {
  const env = process.env['ZAO_WEB_DEMO_BIN'];
  return env !== undefined && env !== '' ? resolve(env) : resolve(REPO, 'target', 'release', 'examples', 'web_demo');
}

/** Throws with the build hint when the binary is missing. */
export function requireWebDemoBin(): string {
  const bin = webDemoBin();
  if (!existsSync(bin)) throw new Error(`the web_demo server is missing at ${bin}: ${BUILD_HINT}`);
  return bin;
}

// ---------------------------------------------------------------- the server's stdout

export interface ReadyInfo {
  page: string;
  webtransport: string;
  certificate: string;
}

export interface StatsClient {
  id: number;
  transport: 'webtransport' | 'quic' | string;
  rtt_ms: number;
  bytes_out_per_s: number;
  snapshots_sent: number;
}

export interface StatsLine {
  tick: number;
  clients: StatsClient[];
}

const READY = 'ZAO_WEB_DEMO ';
const STATS = 'ZAO_WEB_STATS ';

/** `ZAO_WEB_DEMO {...}` → its JSON, or null for any other line. Throws on a ready line that is not what the contract says. */
export function parseReady(line: string): ReadyInfo | null {
  if (!line.startsWith(READY)) return null;
  const v = JSON.parse(line.slice(READY.length)) as Partial<ReadyInfo>;
  if (typeof v.page !== 'string' || typeof v.webtransport !== 'string' || typeof v.certificate !== 'string') {
    throw new Error(`bad ready line (want page, webtransport, certificate): ${line}`);
  }
  return { page: v.page, webtransport: v.webtransport, certificate: v.certificate };
}

/** `ZAO_WEB_STATS {...}` → its JSON, or null for any other line. */
export function parseStats(line: string): StatsLine | null {
  if (!line.startsWith(STATS)) return null;
  const v = JSON.parse(line.slice(STATS.length)) as Partial<StatsLine>;
  if (typeof v.tick !== 'number' || !Array.isArray(v.clients)) throw new Error(`bad stats line (want tick, clients): ${line}`);
  return { tick: v.tick, clients: v.clients };
}

/** Whether one stats line shows a browser and a native client in the world at once. */
export function bothTransports(s: StatsLine): boolean {
  return s.clients.some((c) => c.transport === 'webtransport') && s.clients.some((c) => c.transport === 'quic');
}

// ---------------------------------------------------------------- ports

function freeTcp(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a !== null ? a.port : 0;
      s.close(() => ok(port));
    });
  });
}

function udpFree(port: number): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createSocket('udp4');
    s.once('error', fail);
    s.bind(port, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => ok(p));
    });
  });
}

/** Two distinct free ports: HTTP (TCP) and WebTransport (UDP), each free for its protocol. */
export async function freePorts(): Promise<{ http: number; udp: number }> {
  for (let i = 0; i < 20; i++) {
    const http = await freeTcp();
    const udp = await udpFree(0);
    if (udp !== http) return { http, udp };
  }
  throw new Error('no free ports');
}

// ---------------------------------------------------------------- the server process

export interface ServerOptions {
  bin: string;
  httpPort: number;
  udpPort: number;
  entities: number;
  hz: number;
  nativeBots: number;
  readyTimeoutMs?: number;
}

/** The `web_demo` process: its ready line, its stats lines, the tail of its output. */
export class DemoServer {
  readonly ready: ReadyInfo;
  readonly stats: { at: number; line: StatsLine }[] = [];
  private readonly child: ChildProcess;
  private readonly tail: string[];
  private exited: Promise<void>;

  private constructor(child: ChildProcess, ready: ReadyInfo, tail: string[], exited: Promise<void>) {
    this.child = child;
    this.ready = ready;
    this.tail = tail;
    this.exited = exited;
  }

  static async start(o: ServerOptions): Promise<DemoServer> {
    const args = ['--udp-port', `${o.udpPort}`, '--http-port', `${o.httpPort}`, '--entities', `${o.entities}`, '--hz', `${o.hz}`, '--native-bots', `${o.nativeBots}`, '--seconds', '0'];
    const child = spawn(o.bin, args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    live.add(child);
    const tail: string[] = [];
    const keep = (prefix: string, line: string): void => {
      if (line.startsWith(STATS)) return;
      tail.push(prefix + line);
      while (tail.length > 60) tail.shift();
    };
    const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
    let server: DemoServer | null = null;
    createInterface({ input: child.stderr! }).on('line', (l) => keep('[server stderr] ', l));
    const ready = await new Promise<ReadyInfo>((ok, fail) => {
      const timeout = o.readyTimeoutMs ?? 60_000;
      const timer = setTimeout(() => fail(new Error(`web_demo printed no ready line within ${timeout / 1000} s\n${tail.join('\n')}`)), timeout);
      child.once('error', (e) => {
        clearTimeout(timer);
        fail(new Error(`web_demo did not start: ${e.message}`));
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        fail(new Error(`web_demo exited (${signal ?? `code ${code}`}) before its ready line\n${tail.join('\n')}`));
      });
      createInterface({ input: child.stdout! }).on('line', (l) => {
        keep('[server] ', l);
        try {
          const r = parseReady(l);
          if (r !== null) {
            clearTimeout(timer);
            ok(r);
            return;
          }
          const s = parseStats(l);
          if (s !== null) server?.stats.push({ at: Date.now(), line: s });
        } catch (e) {
          clearTimeout(timer);
          fail(e as Error);
        }
      });
    }).catch(async (e: unknown) => {
      child.kill('SIGKILL');
      await exited;
      live.delete(child);
      throw e;
    });
    server = new DemoServer(child, ready, tail, exited);
    return server;
  }

  /** The last lines the server printed (stats lines left out). */
  output(): string {
    return this.tail.join('\n');
  }

  /** Stats lines seen since `since` (Date.now()). */
  statsSince(since: number): StatsLine[] {
    return this.stats.filter((s) => s.at >= since).map((s) => s.line);
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it exited. */
  async stop(graceMs = 3000): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
      await this.exited;
      clearTimeout(timer);
    }
    live.delete(this.child);
  }
}

/** Every server still running: killed when this process exits, whatever happened. */
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

// ---------------------------------------------------------------- the browser

/** Chromium from the system (`$CHROMIUM_PATH`, else /usr/bin/chromium); never a downloaded one. */
export function chromiumPath(): string {
  return process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
}

export async function launchChromium(): Promise<Browser> {
  const path = chromiumPath();
  if (!existsSync(path)) throw new Error(`no Chromium at ${path}: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: path,
    headless: true,
    timeout: 30_000,
    // Never --disable-quic: it turns WebTransport off too.
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** A page whose console messages and errors are kept, for failure output. */
export async function openPage(browser: Browser, log: string[], label: string): Promise<Page> {
  const page = await browser.newPage();
  page.setDefaultTimeout(15_000);
  let last = '';
  let repeats = 0;
  const keep = (text: string): void => {
    const line = `[${label}] ${text}`;
    // A page that retries every 250 ms says the same thing many times: count repeats.
    if (line === last) {
      repeats++;
      log[log.length - 1] = `${line} (×${repeats + 1})`;
      return;
    }
    last = line;
    repeats = 0;
    log.push(line);
    while (log.length > 200) log.shift();
  };
  page.on('console', (m) => keep(`console.${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => keep(`page error: ${e.message}`));
  page.on('requestfailed', (r) => keep(`request failed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
  return page;
}

export async function zaoResult(page: Page): Promise<ZaoResult | null> {
  return page.evaluate(() => (window as unknown as { zaoResult?: ZaoResult }).zaoResult ?? null);
}

export interface Context {
  log: string[];
  server?: () => string;
}

/** The failure text: what was expected, the page's last result, its console, the server's output. */
export function failure(what: string, last: unknown, ctx: Context): Error {
  const parts = [what, `last window.zaoResult: ${JSON.stringify(last, null, 1)}`, `page console (last 40):\n${ctx.log.slice(-40).join('\n')}`];
  if (ctx.server !== undefined) parts.push(`server output (last lines):\n${ctx.server()}`);
  return new Error(parts.join('\n\n'));
}

/**
 * Polls `window.zaoResult` until `done` holds (returns that result), or
 * `fatal` names a failure, or `timeoutMs` passes (throws with everything
 * known).
 */
export async function waitForResult(
  page: Page,
  what: string,
  timeoutMs: number,
  ctx: Context,
  done: (r: ZaoResult) => boolean,
  fatal: (r: ZaoResult) => string | null = () => null,
): Promise<ZaoResult> {
  const end = Date.now() + timeoutMs;
  let last: ZaoResult | null = null;
  for (;;) {
    last = await zaoResult(page);
    if (last !== null) {
      const bad = fatal(last);
      if (bad !== null) throw failure(`${what}: ${bad}`, last, ctx);
      if (done(last)) return last;
    }
    if (Date.now() >= end) throw failure(`${what}: not within ${timeoutMs / 1000} s`, last, ctx);
    await new Promise((ok) => setTimeout(ok, 100));
  }
}

/** Polls `#status` until `done` holds on its text; returns the text. */
export async function waitForStatus(page: Page, what: string, timeoutMs: number, ctx: Context, done: (text: string) => boolean): Promise<string> {
  const end = Date.now() + timeoutMs;
  let text = '';
  for (;;) {
    text = (await page.textContent('#status')) ?? '';
    if (done(text)) return text;
    if (Date.now() >= end) throw failure(`${what}: not within ${timeoutMs / 1000} s (#status: ${JSON.stringify(text)})`, await zaoResult(page), ctx);
    await new Promise((ok) => setTimeout(ok, 100));
  }
}

/** Rejects after `ms` with `what`: a bound on anything that could hang. */
export async function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, fail) => (timer = setTimeout(() => fail(new Error(`${what}: over ${ms / 1000} s`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
