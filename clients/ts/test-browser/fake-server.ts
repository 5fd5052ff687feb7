/**
 * A stand-in for the Rust `web_demo` server's zao side, sans I/O, written
 * from the same contract: it answers the hello (refusing another protocol
 * with "protocol mismatch"), sends `demo_world(tick)` as delta snapshots
 * against the newest baseline the client acked, a full WorldSnapshot every
 * 30 ticks, echoes PlayerMoved, SpawnEntity and Inventory, and answers a
 * PlayerInput with `PlayerMoved { entity: 0x8000_0000 | tick }`.
 *
 * The Node tests connect it to a `ClientSession`; the page self-test runs
 * it inside Chromium behind a fake `WebTransport` (fake-webtransport.ts).
 * It checks the page's logic, not the Rust server.
 */
import {
  BitWriter,
  FrameDecoder,
  decodeHello,
  deltaDatagram,
  encodeDelta,
  encodeHelloReply,
  frame,
  putVarint,
  snapshotDatagram,
  splitDatagram,
  streamHeader,
  tableOf,
  varintLen,
  type Table,
} from '../src/index.js';
import { EntitySnapshot, EntitySnapshotDelta, PlayerInput, PlayerMoved, WorldSnapshot, protocol } from '../web/protocol.js';
import { demoWorld } from '../web/world.js';

/** What the server sends, for its driver to carry. */
export interface ServerOut {
  /** Bytes on the control stream (the hello reply). */
  control(bytes: Uint8Array): void;
  /** Bytes on the server's reliable-ordered stream for channel 0 (the first call's bytes start with its header). */
  reliable(bytes: Uint8Array): void;
  datagram(bytes: Uint8Array): void;
}

export interface FakeServerOptions {
  entities: number;
  clientId: bigint;
  /** Changes the world the server sends: a test that the page's check catches a wrong entity. */
  corrupt?: (tick: number, entities: { entity: number; position: number[]; heading: number }[]) => void;
  /** The tick the world starts at. */
  startTick?: number;
}

const DATAGRAM_BUDGET = 1150;
/** The kind byte of an unreliable datagram (docs/WIRE.md §12.6). */
const KIND_UNRELIABLE = 0x01;
const HISTORY = 128;

export class FakeDemoServer {
  private readonly out: ServerOut;
  private readonly entities: number;
  private readonly clientId: bigint;
  private readonly corrupt: FakeServerOptions['corrupt'];
  private readonly control = new FrameDecoder(64 * 1024);
  private readonly streams = new Map<number, { frames: FrameDecoder; channel: number | null }>();
  private welcomed = false;
  private refused = false;
  private reliableOpen = false;
  private tickNo: number;
  private seq = 0;
  private readonly sent = new Map<number, Table>();
  private acked = 0;
  /** Gone without a word (a killed process): reads nothing, sends nothing. */
  dead = false;
  /** Counters for the tests. */
  readonly counts = { echoed: 0, answered: 0, deltas: 0, againstBaseline: 0, chunks: 0, full: 0, acks: 0 };

  constructor(out: ServerOut, o: FakeServerOptions) {
    this.out = out;
    this.entities = o.entities;
    this.clientId = o.clientId;
    this.corrupt = o.corrupt;
    this.tickNo = o.startTick ?? 0;
  }

  get open(): boolean {
    return this.welcomed;
  }

  /** Bytes the client wrote on the control stream. */
  handleControl(bytes: Uint8Array): void {
    if (this.welcomed || this.refused || this.dead) return;
    this.control.handleBytes(bytes.slice());
    const f = this.control.pollFrame();
    if (f === null) return;
    const hello = decodeHello(f);
    if (hello.protocolHash !== protocol.hash) {
      this.refused = true;
      const detail = `client protocol hash 0x${hello.protocolHash.toString(16)}, server 0x${protocol.hash.toString(16)}`;
      this.out.control(frame(encodeHelloReply({ tag: 'Refused', reason: { tag: 'ProtocolMismatch', detail } })));
      return;
    }
    this.welcomed = true;
    this.out.control(frame(encodeHelloReply({ tag: 'Welcome', clientId: this.clientId })));
  }

  /** Bytes the client wrote on a unidirectional stream (`stream` names it). */
  handleStream(stream: number, bytes: Uint8Array): void {
    if (this.dead) return;
    let s = this.streams.get(stream);
    if (s === undefined) {
      s = { frames: new FrameDecoder(256 * 1024), channel: null };
      this.streams.set(stream, s);
    }
    s.frames.handleBytes(bytes.slice());
    if (s.channel === null) {
      const h = s.frames.pollHeader();
      if (h === null) return;
      s.channel = h;
    }
    for (let f = s.frames.pollFrame(); f !== null; f = s.frames.pollFrame()) {
      if (f.length === 1 && f[0] === 0) continue; // a heartbeat
      this.reliableEcho(f);
    }
  }

  private reliableEcho(message: Uint8Array): void {
    const framed = frame(message);
    if (!this.reliableOpen) {
      this.reliableOpen = true;
      const h = streamHeader(0);
      const first = new Uint8Array(h.length + framed.length);
      first.set(h);
      first.set(framed, h.length);
      this.out.reliable(first);
    } else {
      this.out.reliable(framed);
    }
    this.counts.echoed++;
  }

  private unreliable(message: Uint8Array): void {
    const f = frame(message);
    const d = new Uint8Array(1 + f.length);
    d[0] = KIND_UNRELIABLE;
    d.set(f, 1);
    this.out.datagram(d);
  }

  /** A datagram from the client. */
  handleDatagram(bytes: Uint8Array): void {
    if (!this.welcomed || this.dead) return;
    const p = splitDatagram(bytes);
    if (p.kind === 'acks') {
      this.counts.acks++;
      for (const a of p.acks) if (a.id === EntitySnapshotDelta.ID && a.newest > this.acked) this.acked = a.newest;
      return;
    }
    if (p.kind !== 'unreliable') return;
    for (const m of p.messages) {
      const msg = m.bytes.slice(m.start, m.end);
      if (msg.length === 1 && msg[0] === 0) continue;
      if (msg[0] === PlayerMoved.ID) {
        this.unreliable(msg);
        this.counts.echoed++;
      } else if (msg[0] === PlayerInput.ID) {
        const input = PlayerInput.decodeMessage(msg);
        const answer = { entity: (0x80000000 | input.tick) >>> 0, position: { x: 0, y: 0, z: 0 } };
        const out = new Uint8Array(PlayerMoved.messageLen(answer));
        PlayerMoved.encodeMessage(answer, out);
        this.unreliable(out);
        this.counts.answered++;
      }
    }
  }

  /** One server tick: the delta snapshot of `demo_world(tick)`, and every 30 ticks a full WorldSnapshot. */
  tick(): void {
    if (!this.welcomed || this.dead) return;
    const t = this.tickNo++;
    const seq = ++this.seq;
    const world = demoWorld(t, this.entities).entities;
    this.corrupt?.(t, world);
    const cur = tableOf(EntitySnapshotDelta, world);
    const baseline = this.acked > 0 && this.sent.has(this.acked) ? this.acked : 0;
    const base = baseline === 0 ? tableOf(EntitySnapshotDelta, []) : this.sent.get(baseline)!;
    const header = new Uint8Array(EntitySnapshot.encodedLen({ tick: t, entities: [] }));
    EntitySnapshot.encode({ tick: t, entities: [] }, header);
    const idLen = varintLen(EntitySnapshotDelta.ID);
    // Room for the datagram header (kind + 4 varints of up to 5 bytes).
    const budgetBytes = DATAGRAM_BUDGET - 21 - idLen - header.length;
    const layout = { keyBits: EntitySnapshotDelta.keyBits, lanes: EntitySnapshotDelta.lanes };
    const messages = encodeDelta(layout, base, cur, budgetBytes * 8, 4096, (_i, _n, write) => {
      const buf = new Uint8Array(idLen + header.length + budgetBytes + 8);
      putVarint(buf, 0, EntitySnapshotDelta.ID);
      buf.set(header, idLen);
      const w = new BitWriter(buf, idLen + header.length);
      write(w);
      const end = w.finish()!;
      return buf.slice(0, end);
    });
    messages.forEach((m, chunk) => this.out.datagram(deltaDatagram({ seq, baseline, chunk, chunks: messages.length }, m)));
    this.counts.deltas++;
    if (baseline !== 0) this.counts.againstBaseline++;
    this.counts.chunks += messages.length;
    this.sent.set(seq, cur);
    for (const s of [...this.sent.keys()]) if (s + HISTORY <= seq) this.sent.delete(s);
    if (t % 30 === 0) {
      const w = { tick: t, players: Array.from({ length: 8 }, (_, i) => ({ entity: 1000 + i, position: { x: i, y: 0, z: -i } })) };
      const msg = new Uint8Array(WorldSnapshot.messageLen(w));
      WorldSnapshot.encodeMessage(w, msg);
      this.out.datagram(snapshotDatagram({ seq: t / 30 + 1, chunk: 0, chunks: 1 }, msg));
      this.counts.full++;
    }
  }
}
