/**
 * What the web demo page does with a connection, apart from the DOM and
 * the transport: applies the delta snapshots (acking them), checks each
 * against the world function, feeds the jitter buffer, measures the round
 * trip with echoed pings, and in test mode sends one message of every kind
 * and records when each echo (or answer) comes back. `result()` is the
 * plain, JSON-able object the page publishes as `window.zaoResult`.
 *
 * It runs the same in Node (tests drive it with a `ClientSession` and an
 * in-memory server) and in the browser (over `WebTransportClient`).
 */
import {
  DeltaReceiver,
  JitterBuffer,
  SendError,
  disconnectText,
  interpolated,
  jitterConfigFromHz,
  makeProtocol,
  type ClientEvent,
  type ClientSession,
  type MessageCodec,
  type ProtocolInfo,
} from '../src/index.js';
import {
  Buttons,
  EntitySnapshotDelta,
  Inventory,
  PlayerInput,
  PlayerMoved,
  SpawnEntity,
  WorldSnapshot,
  protocol,
  type EntitySnapshot,
  type EntityState,
} from './protocol.js';
import { firstMismatch, metres } from './world.js';

export type Mode = 'demo' | 'test';

/** What the probe sends and reads through: `WebTransportClient` is one. */
export interface Link {
  readonly session: ClientSession;
  /** Moves what the session has to send to the transport. */
  pump(): void;
}

export interface ProbeConfig {
  readonly mode: Mode;
  /** The number of entities the server simulates, when the page was told (`?entities=`); else only the key range is checked. */
  readonly entities: number | null;
  /** The server's tick rate (`?hz=`, 60 by default), for the jitter buffer. */
  readonly hz: number;
}

/** The protocol of `?protocol=wrong`: the web protocol without Inventory (the server refuses it). */
export function wrongProtocol(): ProtocolInfo {
  return makeProtocol(
    protocol.channels,
    protocol.entries.filter((e) => e.name !== 'Inventory'),
  );
}

/** Test mode's messages. */
export const TEST_MOVED = { entity: 42, position: { x: 1.5, y: -2, z: 3.25 } };
export const TEST_SPAWN = {
  entity: 7,
  prefab: 3,
  position: { x: 10, y: 0.5, z: -4 },
  rotation: { x: 0, y: 0, z: 0, w: 1 },
  name: 'web demo: Grüße, 世界 🚀',
};
export function testInventory(): { owner: number; slots: Map<number, { item: number; count: number; durability: number; flags: number }> } {
  return {
    owner: 7,
    slots: new Map([
      [0, { item: 1001, count: 1, durability: 100, flags: 0 }],
      [3, { item: 2002, count: 64, durability: 65535, flags: 3 }],
      [17, { item: 4242, count: 12, durability: 7, flags: 255 }],
    ]),
  };
}
/** The PlayerInput of connection `index` (0-based); its answer is `PlayerMoved { entity: 0x8000_0000 | tick, position: 0 }`. */
export function testInput(index: number): { tick: number; buttons: number; aim: { x: number; y: number }; stance: 'Crouching' } {
  return { tick: 1000 + index, buttons: Buttons.FIRE | Buttons.JUMP, aim: { x: 0.5, y: -0.25 }, stance: 'Crouching' };
}

/** Pings are PlayerMoved with an entity of 0x4000_0000 | sequence number. */
const PING_BIT = 0x40000000;
const ANSWER_BIT = 0x80000000;
const PING_EVERY_MS = 500;
const RESEND_EVERY_MS = 500;
const RATE_WINDOW_MS = 2000;
/**
 * Nothing from the server for this long while connected: it is gone (a
 * server killed without closing leaves the browser waiting for QUIC's idle
 * timeout); close and reconnect. The server sends a snapshot every tick.
 */
export const SILENCE_MS = 2500;

/** When each echo (or answer) arrived, in ms after Connected; null: not yet. */
export interface Tiers {
  playerMoved: number | null;
  spawnEntity: number | null;
  inventory: number | null;
  playerInput: number | null;
  worldSnapshot: number | null;
}

export interface ConnectionResult {
  /** 0 for the page's first connection, then 1, 2, … */
  index: number;
  clientId: string;
  connectMs: number;
  /** Test mode: when each tier answered. Demo mode: only `worldSnapshot` and any echo of the pings. */
  tiers: Tiers;
  /** Every tier answered (test mode). */
  allTiers: boolean;
  /** Echoes that came back different from what was sent. */
  echoMismatches: number;
  /** Whole delta snapshots applied. */
  snapshotsApplied: number;
  chunksApplied: number;
  /** Whole snapshots checked against the world function (every one applied). */
  checked: number;
  /** Snapshots with any entity not the world's (or a key range that is not 1..N). */
  mismatches: number;
  entityMismatches: number;
  /** Chunks the receiver refused (missing baseline, stale, …). */
  applyErrors: number;
  /** Full WorldSnapshot messages received. */
  fullSnapshots: number;
  lastTick: number | null;
  /** Why it ended, or null while open. */
  closed: string | null;
}

export interface ZaoResult {
  mode: Mode;
  status: string;
  connected: boolean;
  clientId: string | null;
  /** Connection attempts (each fetch of the certificate starts one). */
  attempts: number;
  /** Connections that reached Connected. */
  connects: number;
  /** Connections after the first: the page reconnected by itself. */
  reconnects: number;
  disconnects: number;
  /** Certificate fetch start → Connected, of the newest connection and of the first. */
  connectMs: number | null;
  connectMsFirst: number | null;
  /** Median of the last pings' echo round trips. */
  rttMs: number | null;
  /** The transport's smoothed RTT, where the browser reports it (`WebTransport.getStats`). */
  transportRttMs: number | null;
  /** Bytes of messages and snapshot chunks received per second, over the last 2 s. */
  bytesInPerSec: number;
  snapshots: {
    /** Whole delta snapshots applied, all connections. */
    applied: number;
    /** Of the current connection, over the last 2 s. */
    perSecond: number;
    checked: number;
    mismatches: number;
    entityMismatches: number;
    firstMismatch: string | null;
    applyErrors: number;
    jitterDelayMs: number | null;
  };
  fullSnapshots: number;
  current: ConnectionResult | null;
  /** Every connection, oldest first (the last 20). */
  connections: ConnectionResult[];
  lastError: string | null;
  /** The last 20 errors and close reasons. */
  errors: string[];
  updatedAt: number;
}

interface Pending {
  items: number;
  maxKey: number;
  bad: boolean;
}

/** Stable text of a value, maps by sorted key (an echoed map may come back in another order). */
export function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => {
    if (x instanceof Map) return [...x.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    if (typeof x === 'bigint') return x.toString();
    return x;
  });
}

function median(xs: readonly number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

class Connection {
  readonly link: Link;
  readonly at: number;
  readonly rx = new DeltaReceiver(EntitySnapshotDelta);
  readonly jitter: JitterBuffer<EntityState>;
  readonly result: ConnectionResult;
  readonly pending = new Map<number, Pending>();
  readonly completions: number[] = [];
  lastResend = -Infinity;
  lastHeard: number;

  constructor(link: Link, index: number, clientId: bigint, connectMs: number, at: number, hz: number) {
    this.link = link;
    this.at = at;
    this.lastHeard = at;
    this.jitter = new JitterBuffer(jitterConfigFromHz(hz), (e) => e.entity);
    this.result = {
      index,
      clientId: clientId.toString(),
      connectMs,
      tiers: { playerMoved: null, spawnEntity: null, inventory: null, playerInput: null, worldSnapshot: null },
      allTiers: false,
      echoMismatches: 0,
      snapshotsApplied: 0,
      chunksApplied: 0,
      checked: 0,
      mismatches: 0,
      entityMismatches: 0,
      applyErrors: 0,
      fullSnapshots: 0,
      lastTick: null,
      closed: null,
    };
  }
}

export class DemoProbe {
  private readonly config: ProbeConfig;
  private conn: Connection | null = null;
  private readonly history: ConnectionResult[] = [];
  private status = 'connecting…';
  private attempts = 0;
  private attemptStart: number | null = null;
  private connects = 0;
  private disconnects = 0;
  private connectMsFirst: number | null = null;
  private readonly rtts: number[] = [];
  private transportRtt: number | null = null;
  private pingSeq = 0;
  private lastPing = -Infinity;
  private readonly pings = new Map<number, number>();
  private readonly arrivals: [number, number][] = [];
  private applied = 0;
  private checked = 0;
  private mismatches = 0;
  private entityMismatches = 0;
  private applyErrors = 0;
  private fullSnapshots = 0;
  private mismatchText: string | null = null;
  private lastError: string | null = null;
  private readonly errors: string[] = [];
  /** Called with each new status text (the page shows it and logs it). */
  onStatus: ((text: string) => void) | null = null;

  constructor(config: ProbeConfig) {
    this.config = config;
  }

  // ------------------------------------------------------------ connection lifecycle

  /** A connection attempt starts (before the certificate is fetched). */
  attemptStarted(now: number): void {
    this.attempts++;
    this.attemptStart = now;
  }

  /** An attempt failed before the session could say why (certificate fetch, WebTransport constructor). */
  attemptFailed(text: string): void {
    this.error(text);
    this.setStatus(text);
  }

  /** The session's event: Connected, Disconnected or a Message. */
  handleEvent(event: ClientEvent, link: Link, now: number): void {
    switch (event.kind) {
      case 'Connected':
        this.connected(link, event.clientId, now);
        return;
      case 'Disconnected': {
        const text = disconnectText(event.reason);
        this.error(text);
        this.setStatus(text);
        if (this.conn !== null && this.conn.link === link) {
          this.conn.result.closed = text;
          this.conn = null;
          this.disconnects++;
        }
        return;
      }
      case 'Message':
        if (this.conn === null || this.conn.link !== link) return;
        this.message(this.conn, event.id, event.message.subarray(event.bodyStart), event.message.length, now);
        return;
    }
  }

  private connected(link: Link, clientId: bigint, now: number): void {
    const connectMs = this.attemptStart === null ? 0 : now - this.attemptStart;
    const c = new Connection(link, this.connects, clientId, connectMs, now, this.config.hz);
    this.connects++;
    if (this.connectMsFirst === null) this.connectMsFirst = connectMs;
    this.conn = c;
    this.history.push(c.result);
    while (this.history.length > 20) this.history.shift();
    this.pings.clear();
    this.setStatus(`connected as client ${clientId}`);
    if (this.config.mode === 'test') {
      this.send(c, SpawnEntity, TEST_SPAWN);
      this.send(c, Inventory, testInventory());
      this.sendUnreliable(c, now);
    }
    this.ping(c, now);
    link.pump();
  }

  // ------------------------------------------------------------ sending

  private send<T>(c: Connection, codec: MessageCodec<T>, value: T): void {
    try {
      c.link.session.sendMessage(codec, value);
    } catch (e) {
      if (e instanceof SendError) this.error(`send ${codec.NAME}: ${e.message}`);
      else throw e;
    }
  }

  /** Test mode's unreliable messages that have no answer yet (sent again until they have one). */
  private sendUnreliable(c: Connection, now: number): void {
    c.lastResend = now;
    if (c.result.tiers.playerMoved === null) this.send(c, PlayerMoved, TEST_MOVED);
    if (c.result.tiers.playerInput === null) this.send(c, PlayerInput, testInput(c.result.index));
    this.flush(c);
  }

  private ping(c: Connection, now: number): void {
    this.lastPing = now;
    this.pingSeq = (this.pingSeq + 1) & 0xffff;
    this.pings.set(this.pingSeq, now);
    if (this.pings.size > 32) this.pings.delete(this.pings.keys().next().value!);
    this.send(c, PlayerMoved, { entity: PING_BIT | this.pingSeq, position: { x: 0, y: 0, z: 0 } });
    this.flush(c);
  }

  private flush(c: Connection): void {
    try {
      c.link.session.flush();
    } catch {
      // Closed: nothing to flush.
    }
  }

  // ------------------------------------------------------------ receiving

  private message(c: Connection, id: number, body: Uint8Array, size: number, now: number): void {
    this.arrivals.push([now, size]);
    c.lastHeard = now;
    const since = now - c.at;
    const t = c.result.tiers;
    try {
      switch (id) {
        case PlayerMoved.ID: {
          const m = PlayerMoved.decode(body);
          if ((m.entity & 0xc0000000) >>> 0 === PING_BIT) {
            const sent = this.pings.get(m.entity & 0xffff);
            if (sent !== undefined) {
              this.pings.delete(m.entity & 0xffff);
              this.rtts.push(now - sent);
              while (this.rtts.length > 9) this.rtts.shift();
            }
          } else if (m.entity === TEST_MOVED.entity) {
            if (canonical(m) === canonical(TEST_MOVED)) t.playerMoved ??= since;
            else c.result.echoMismatches++;
          } else if (m.entity === (ANSWER_BIT | testInput(c.result.index).tick) >>> 0) {
            if (m.position.x === 0 && m.position.y === 0 && m.position.z === 0) t.playerInput ??= since;
            else c.result.echoMismatches++;
          }
          break;
        }
        case SpawnEntity.ID:
          if (canonical(SpawnEntity.decode(body)) === canonical(TEST_SPAWN)) t.spawnEntity ??= since;
          else c.result.echoMismatches++;
          break;
        case Inventory.ID:
          if (canonical(Inventory.decode(body)) === canonical(testInventory())) t.inventory ??= since;
          else c.result.echoMismatches++;
          break;
        case WorldSnapshot.ID: {
          const w = WorldSnapshot.decode(body);
          c.result.fullSnapshots++;
          this.fullSnapshots++;
          if (w.players.length > 0) t.worldSnapshot ??= since;
          break;
        }
        default:
          break;
      }
    } catch (e) {
      this.error(`message ${id}: ${e instanceof Error ? e.message : String(e)}`);
    }
    this.updateTiers(c);
  }

  private updateTiers(c: Connection): void {
    const t = c.result.tiers;
    c.result.allTiers = t.playerMoved !== null && t.spawnEntity !== null && t.inventory !== null && t.playerInput !== null && t.worldSnapshot !== null;
  }

  /** Delta chunks are waiting in `link.session`: apply, check, buffer, ack. */
  handleSnapshots(link: Link, now: number): void {
    const c = this.conn;
    const s = link.session;
    for (let chunk = s.pollSnapshot(); chunk !== null; chunk = s.pollSnapshot()) {
      if (c === null || c.link !== link) continue;
      this.arrivals.push([now, chunk.message.length]);
      c.lastHeard = now;
      if (chunk.id !== EntitySnapshotDelta.ID) continue;
      const r = c.rx.handleChunk(chunk);
      if (!r.ok) {
        c.result.applyErrors++;
        this.applyErrors++;
        continue;
      }
      const a = r.applied;
      c.result.chunksApplied++;
      let p = c.pending.get(a.seq);
      if (p === undefined) {
        p = { items: 0, maxKey: 0, bad: false };
        c.pending.set(a.seq, p);
        if (c.pending.size > 256) c.pending.delete(c.pending.keys().next().value!);
      }
      p.items += r.items.length;
      for (const item of r.items) if (item.entity > p.maxKey) p.maxKey = item.entity;
      let bad: string | null = firstMismatch(a.tick, r.items, this.config.entities);
      if (bad !== null) {
        let n = 0;
        for (const item of r.items) if (firstMismatch(a.tick, [item], this.config.entities) !== null) n++;
        c.result.entityMismatches += n;
        this.entityMismatches += n;
      }
      if (a.complete) {
        const n = this.config.entities;
        if (bad === null && (p.items !== p.maxKey || (n !== null && p.items !== n))) {
          bad = `tick ${a.tick}: ${p.items} entities, keys up to ${p.maxKey}${n !== null ? `, expected 1..${n}` : ''}`;
        }
      }
      if (bad !== null && !p.bad) {
        p.bad = true;
        c.result.mismatches++;
        this.mismatches++;
        this.mismatchText ??= bad;
      }
      c.jitter.insert(now, a.tick, a.chunks, r.items);
      if (a.complete) {
        c.pending.delete(a.seq);
        c.result.snapshotsApplied++;
        c.result.checked++;
        c.result.lastTick = a.tick;
        this.applied++;
        this.checked++;
        c.completions.push(now);
      }
    }
    if (c !== null && c.link === link && c.rx.newestComplete() > 0 && s.isConnected()) {
      try {
        s.sendAcks([c.rx.ack()]);
      } catch {
        // Closed meanwhile.
      }
    }
  }

  // ------------------------------------------------------------ time

  /** Call every few tens of milliseconds: pings, resends, windows. Pumps the link. */
  tick(now: number): void {
    const c = this.conn;
    while (this.arrivals.length > 0 && this.arrivals[0]![0] < now - RATE_WINDOW_MS) this.arrivals.shift();
    if (c === null) return;
    while (c.completions.length > 0 && c.completions[0]! < now - RATE_WINDOW_MS) c.completions.shift();
    if (!c.link.session.isConnected()) return;
    if (now - c.lastHeard > SILENCE_MS) {
      c.link.session.disconnect(`nothing from the server for ${Math.round(now - c.lastHeard)} ms`);
      c.link.pump();
      return;
    }
    if (now - this.lastPing >= PING_EVERY_MS) this.ping(c, now);
    if (this.config.mode === 'test' && (c.result.tiers.playerMoved === null || c.result.tiers.playerInput === null) && now - c.lastResend >= RESEND_EVERY_MS) {
      this.sendUnreliable(c, now);
    }
    c.link.pump();
  }

  /** The transport's own figures, where the browser has them. */
  transportStats(rttMs: number | null): void {
    this.transportRtt = rttMs;
    if (rttMs !== null) this.conn?.jitter.setRtt(rttMs);
  }

  /** The entities to draw at `now` (interpolated), in metres. */
  sample(now: number): { key: number; x: number; y: number; z: number; heading: number }[] {
    const c = this.conn;
    if (c === null) return [];
    return interpolated(c.jitter.sample(now), EntitySnapshotDelta).map((e) => ({ key: e.entity, ...metres(e), heading: (e.heading / 4096) * 2 * Math.PI }));
  }

  /** The newest whole snapshot, for tests. */
  latest(): EntitySnapshot | null {
    return this.conn?.rx.latest()?.snapshot ?? null;
  }

  // ------------------------------------------------------------ results

  private setStatus(text: string): void {
    this.status = text;
    this.onStatus?.(text);
  }

  private error(text: string): void {
    this.lastError = text;
    this.errors.push(text);
    while (this.errors.length > 20) this.errors.shift();
  }

  currentStatus(): string {
    return this.status;
  }

  result(now: number): ZaoResult {
    const c = this.conn;
    let perSecond = 0;
    if (c !== null) {
      const span = Math.min(RATE_WINDOW_MS, now - c.at);
      const n = c.completions.filter((t) => t >= now - RATE_WINDOW_MS).length;
      perSecond = span >= 250 ? (n * 1000) / span : 0;
    }
    const bytes = this.arrivals.reduce((sum, [t, b]) => (t >= now - RATE_WINDOW_MS ? sum + b : sum), 0);
    const clone = (r: ConnectionResult): ConnectionResult => ({ ...r, tiers: { ...r.tiers } });
    const newest = this.history[this.history.length - 1];
    return {
      mode: this.config.mode,
      status: this.status,
      connected: c !== null && c.link.session.isConnected(),
      clientId: c?.result.clientId ?? null,
      attempts: this.attempts,
      connects: this.connects,
      reconnects: Math.max(0, this.connects - 1),
      disconnects: this.disconnects,
      connectMs: newest?.connectMs ?? null,
      connectMsFirst: this.connectMsFirst,
      rttMs: median(this.rtts),
      transportRttMs: this.transportRtt,
      bytesInPerSec: Math.round((bytes * 1000) / RATE_WINDOW_MS),
      snapshots: {
        applied: this.applied,
        perSecond,
        checked: this.checked,
        mismatches: this.mismatches,
        entityMismatches: this.entityMismatches,
        firstMismatch: this.mismatchText,
        applyErrors: this.applyErrors,
        jitterDelayMs: c === null ? null : c.jitter.delayMs(),
      },
      fullSnapshots: this.fullSnapshots,
      current: c === null ? null : clone(c.result),
      connections: this.history.map(clone),
      lastError: this.lastError,
      errors: [...this.errors],
      updatedAt: now,
    };
  }
}
