/**
 * The web demo page (web/index.html): fetches the server's certificate
 * hashes, joins over WebTransport, reconnects by itself, draws the
 * interpolated entities and publishes what it measured as
 * `window.zaoResult`.
 *
 * Query: `mode=demo` (default) or `mode=test` (send one message of every
 * kind and check the echoes), `hash=HEX` (pin this hash instead of the
 * fetched ones), `protocol=wrong` (say hello with a protocol the server
 * refuses), `entities=N` and `hz=N` (what the server runs, for the checks
 * and the jitter buffer).
 */
import { WebTransportClient } from '../src/index.js';
import { protocol } from './protocol.js';
import { DemoProbe, wrongProtocol, type ZaoResult } from './probe.js';

declare global {
  interface Window {
    zaoResult: ZaoResult;
  }
}

interface CertificateInfo {
  hashes: string[];
  port: number;
}

const RETRY_MS = 250;
const params = new URLSearchParams(location.search);
const mode = params.get('mode') === 'test' ? 'test' : 'demo';
const hashOverride = params.get('hash');
const wrong = params.get('protocol') === 'wrong';
const entitiesParam = Number(params.get('entities'));
const entities = params.has('entities') && Number.isInteger(entitiesParam) && entitiesParam > 0 ? entitiesParam : null;
const hzParam = Number(params.get('hz') ?? '60');
const hz = Number.isFinite(hzParam) && hzParam > 0 ? hzParam : 60;
// Chromium resolves localhost to ::1 first and QUIC does not fall back to IPv4.
const host = location.hostname === 'localhost' || location.hostname === '' ? '127.0.0.1' : location.hostname;

const statusEl = document.getElementById('status')!;
const statsEl = document.getElementById('stats')!;
const canvas = document.getElementById('world') as HTMLCanvasElement;
const ctx = canvas.getContext('2d');

const probe = new DemoProbe({ mode, entities, hz });
probe.onStatus = (text) => {
  statusEl.textContent = text;
  statusEl.className = text.startsWith('connected') ? 'ok' : 'error';
  console.log(`[zao] ${text}`);
};
statusEl.textContent = 'connecting…';

let client: WebTransportClient | null = null;

function message(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}

function retry(): void {
  setTimeout(() => void attempt(), RETRY_MS);
}

async function attempt(): Promise<void> {
  probe.attemptStarted(performance.now());
  let cert: CertificateInfo;
  try {
    const r = await fetch('/zao/certificate', { cache: 'no-store' });
    if (!r.ok) throw new Error(`HTTP ${r.status}`);
    cert = (await r.json()) as CertificateInfo;
    if (!Array.isArray(cert.hashes) || typeof cert.port !== 'number') throw new Error('no hashes and port in the answer');
  } catch (e) {
    probe.attemptFailed(`certificate: ${message(e)}`);
    retry();
    return;
  }
  const hashes = hashOverride !== null ? [hashOverride] : cert.hashes;
  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    client = null;
    retry();
  };
  try {
    const c = await WebTransportClient.connect(`https://${host}:${cert.port}/`, {
      protocol: wrong ? wrongProtocol() : protocol,
      certHashes: hashes,
      onEvent(event, link) {
        if (event.kind === 'Connected') client = link;
        probe.handleEvent(event, link, performance.now());
        if (event.kind === 'Disconnected') end();
      },
      onSnapshot(link) {
        probe.handleSnapshots(link, performance.now());
      },
    });
    if (ended) return;
    void c;
  } catch (e) {
    probe.attemptFailed(`transport: ${message(e)}`);
    end();
  }
}

interface TransportStats {
  smoothedRtt?: number;
}

async function transportStats(): Promise<void> {
  const c = client;
  const t = c?.transport as (WebTransport & { getStats?: () => Promise<TransportStats> }) | undefined;
  if (t?.getStats === undefined) return;
  try {
    const s = await t.getStats();
    probe.transportStats(typeof s.smoothedRtt === 'number' ? s.smoothedRtt : null);
  } catch {
    // Closed meanwhile.
  }
}

function fmt(x: number | null, digits = 1): string {
  return x === null ? '–' : x.toFixed(digits);
}

function showStats(r: ZaoResult): void {
  statsEl.textContent = [
    `RTT ${fmt(r.rttMs)} ms${r.transportRttMs !== null ? ` (transport ${fmt(r.transportRttMs)} ms)` : ''}`,
    `in ${(r.bytesInPerSec / 1024).toFixed(1)} KiB/s`,
    `snapshots ${r.snapshots.applied} (${r.snapshots.perSecond.toFixed(1)}/s)`,
    `jitter delay ${fmt(r.snapshots.jitterDelayMs)} ms`,
    `checked ${r.snapshots.checked}, mismatches ${r.snapshots.mismatches}`,
    `connects ${r.connects}, attempts ${r.attempts}`,
  ].join('\n');
}

function draw(): void {
  if (ctx !== null) {
    const now = performance.now();
    const w = canvas.width;
    const h = canvas.height;
    ctx.fillStyle = '#10141c';
    ctx.fillRect(0, 0, w, h);
    ctx.strokeStyle = '#2a3040';
    ctx.strokeRect(0.5, 0.5, w - 1, h - 1);
    // x and z span −50..50 m.
    const sx = (x: number): number => ((x + 55) / 110) * w;
    const sz = (z: number): number => ((z + 55) / 110) * h;
    for (const e of probe.sample(now)) {
      const px = sx(e.x);
      const pz = sz(e.z);
      ctx.fillStyle = `hsl(${(e.y / 16) * 300}, 80%, 60%)`;
      ctx.beginPath();
      ctx.arc(px, pz, 3, 0, 2 * Math.PI);
      ctx.fill();
      ctx.strokeStyle = ctx.fillStyle;
      ctx.beginPath();
      ctx.moveTo(px, pz);
      ctx.lineTo(px + 7 * Math.cos(e.heading), pz + 7 * Math.sin(e.heading));
      ctx.stroke();
    }
  }
  requestAnimationFrame(draw);
}

let lastShown = 0;
let lastStats = 0;
window.zaoResult = probe.result(performance.now());
setInterval(() => {
  const now = performance.now();
  probe.tick(now);
  const r = probe.result(now);
  window.zaoResult = r;
  if (now - lastShown >= 250) {
    lastShown = now;
    showStats(r);
  }
  if (now - lastStats >= 1000) {
    lastStats = now;
    void transportStats();
  }
}, 50);
requestAnimationFrame(draw);
void attempt();
