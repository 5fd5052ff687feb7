/**
 * A client's session, sans I/O (src/proto/session/, docs/WIRE.md §12): the
 * handshake, admission of every received message, stream framing,
 * datagrams, snapshot sequencing, delta chunks, heartbeats and close codes.
 * Bytes and `now` (milliseconds, any monotonic clock) come in through
 * `handle*`; what to send comes out of `poll*`. A transport adapter
 * (WebTransport in browsers, a test harness in Node) moves the bytes and
 * makes no decision of its own.
 *
 * ```text
 * Connecting ─handleConnected─▶ Handshaking ─Welcome─▶ Open ─▶ Closed
 *                                           └Refused─▶ Closed
 * ```
 */
import { DecodeError } from '../codec/errors.js';
import { splitMessage, type MessageCodec } from '../codec/message.js';
import { putVarint, varintLen } from '../codec/varint.js';
import type { SnapshotChunk } from '../delta/receiver.js';
import { CloseCode, SendError, closeCodeName, type DisconnectReason } from './close.js';
import {
  KIND_UNRELIABLE,
  UnreliablePacker,
  ackDatagram,
  snapshotDatagram,
  splitDatagram,
  DatagramError,
  MAX_ACKS,
  MIN_UP_DATAGRAM,
  type MessageSlice,
  type SnapshotAck,
} from './datagram.js';
import { FrameDecoder, FrameError, frame, streamHeader } from './framing.js';
import {
  HEARTBEAT_FRAME,
  MAX_HANDSHAKE_FRAME,
  decodeHelloReply,
  encodeHello,
  makeHello,
  refuseReasonText,
} from './handshake.js';
import { clientSends, isReliable, isSequenced, serverSends, type ChannelKind, type ProtocolEntry, type ProtocolInfo } from './protocol.js';
import { MAX_CHUNKS, SnapshotReceiver } from './snapshot.js';

/**
 * The largest datagram zao ever sends (§12.1): what QUIC carries at its
 * 1 200-byte minimum MTU with 20-byte connection ids.
 */
export const DATAGRAM_BUDGET = 1150;


/** Delta chunks this many sequence numbers older than the newest are dropped on receipt. */
const DELTA_WINDOW = 1024;

/** A client's limits (src/proto/limits.rs `Limits`, the fields a client uses). */
export interface ClientLimits {
  /** Largest message (length prefix, id and body) on a reliable stream (256 KiB). */
  readonly maxMessageSize: number;
  /** Largest datagram accepted; larger ones are dropped and counted (1 452). */
  readonly maxDatagramPayload: number;
  /** Outgoing reliable bytes queued before sends fail with `QueueFull` (512 KiB). */
  readonly reliableBacklog: number;
  /** Received bytes held for the application before streams stop being read and datagrams dropped (256 KiB). */
  readonly inboundQueue: number;
  /** Outgoing datagram bytes buffered before the oldest are dropped (256 KiB). */
  readonly datagramSendBuffer: number;
  /** Time to complete the handshake (10 s, as `Limits::handshake_timeout`; this client makes one attempt). */
  readonly handshakeTimeoutMs: number;
  /** The server's silence timeout (30 s): a heartbeat goes out after a quarter of it with nothing sent. `null`: none. */
  readonly silenceTimeoutMs: number | null;
}

export const DEFAULT_CLIENT_LIMITS: ClientLimits = Object.freeze({
  maxMessageSize: 256 * 1024,
  maxDatagramPayload: 1452,
  reliableBacklog: 512 * 1024,
  inboundQueue: 256 * 1024,
  datagramSendBuffer: 256 * 1024,
  handshakeTimeoutMs: 10000,
  silenceTimeoutMs: 30000,
});

export interface ClientConfig {
  readonly protocol: ProtocolInfo;
  /** A token for the server's auth callback. */
  readonly token?: Uint8Array | null;
  readonly limits?: Partial<ClientLimits>;
  /** The zao version the hello carries (default `0.1.0`, the wire format implemented). */
  readonly version?: string;
}

/** What happened, for the application. */
export type ClientEvent =
  | { readonly kind: 'Connected'; readonly clientId: bigint }
  | { readonly kind: 'Disconnected'; readonly reason: DisconnectReason }
  /** A message: `message` is `id + body`; decode it with its codec (`codec.decode(message.subarray(bodyStart))`). */
  | { readonly kind: 'Message'; readonly channel: number; readonly id: number; readonly message: Uint8Array; readonly bodyStart: number };

/** A stream the session writes: the control stream, or a reliable-ordered channel's (by index). */
export type OutStream = 'control' | number;

export type StreamWrite = { readonly kind: 'data'; readonly data: Uint8Array } | { readonly kind: 'finish' };

/** What the session asks its driver to do with the connection. */
export type Transmit = { readonly kind: 'datagram'; readonly data: Uint8Array } | { readonly kind: 'close'; readonly code: number; readonly reason: string };

/** A reliable-unordered message: the driver opens a uni stream, writes `data`, finishes it. */
export interface UnorderedWrite {
  readonly priority: number;
  readonly data: Uint8Array;
}

export interface ClientStats {
  messagesIn: number;
  messagesOut: number;
  datagramsDropped: number;
}

type State = 'Connecting' | 'Handshaking' | 'Open' | 'Closed';

interface OutQueue {
  stream: OutStream;
  priority: number;
  queue: StreamWrite[];
}

interface InStream {
  channel: number | null;
  frames: FrameDecoder;
  finished: boolean;
}

export class ClientSession {
  private readonly protocol: ProtocolInfo;
  private readonly limits: ClientLimits;
  private readonly token: Uint8Array | null;
  private readonly version: string | undefined;
  private state: State = 'Connecting';
  private client: bigint | null = null;
  private deadline: number | null;
  private heartbeatAt: number | null = null;
  private sentSinceBeat = false;
  private readonly control = new FrameDecoder(MAX_HANDSHAKE_FRAME);
  private readonly inStreams = new Map<number, InStream>();
  private readonly snapshots = new SnapshotReceiver();
  private readonly deltaNewest = new Map<number, number>();
  private readonly events: ClientEvent[] = [];
  private readonly chunks: SnapshotChunk[] = [];
  private inbound = 0;
  private chunkBytes = 0;
  private readonly outStreams: OutQueue[] = [];
  private readonly unordered: UnorderedWrite[] = [];
  private readonly seqs = new Map<number, number>();
  private backlog = 0;
  private readonly packer = new UnreliablePacker();
  private readonly transmits: Transmit[] = [];
  private datagramsQueued = 0;
  private readonly counters: ClientStats = { messagesIn: 0, messagesOut: 0, datagramsDropped: 0 };
  private closedReason: DisconnectReason | null = null;

  constructor(config: ClientConfig, now: number) {
    this.protocol = config.protocol;
    this.limits = { ...DEFAULT_CLIENT_LIMITS, ...config.limits };
    this.token = config.token ?? null;
    this.version = config.version;
    this.deadline = now + this.limits.handshakeTimeoutMs;
  }

  // ------------------------------------------------------------ state

  isConnected(): boolean {
    return this.state === 'Open';
  }

  isClosed(): boolean {
    return this.state === 'Closed';
  }

  /** Our id on the server, once connected. */
  clientId(): bigint | null {
    return this.client;
  }

  closeReason(): DisconnectReason | null {
    return this.closedReason;
  }

  stats(): Readonly<ClientStats> {
    return { ...this.counters };
  }

  private entry(id: number): ProtocolEntry | undefined {
    const e = this.protocol.entries;
    let lo = 0;
    let hi = e.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (e[mid]!.id < id) lo = mid + 1;
      else hi = mid;
    }
    return e[lo]?.id === id ? e[lo] : undefined;
  }

  private kindOf(channel: number): ChannelKind | undefined {
    return this.protocol.channels[channel]?.kind;
  }

  // ------------------------------------------------------------ driver in

  /**
   * The transport is connected; `maxDatagram` is the largest datagram the
   * server takes (`null`: none). The client says hello now.
   */
  handleConnected(now: number, maxDatagram: number | null): void {
    if (this.state !== 'Connecting') return;
    this.state = 'Handshaking';
    if (maxDatagram !== null) this.upBudget = Math.min(DATAGRAM_BUDGET, maxDatagram);
    if (maxDatagram === null || maxDatagram < MIN_UP_DATAGRAM) {
      this.closeWith(CloseCode.ProtocolViolation, 'datagrams too small', { kind: 'DatagramsUnsupported', max: maxDatagram });
      return;
    }
    const hello = encodeHello(makeHello(this.protocol, this.token, this.version));
    this.pushStream(this.queue('control', 0x7fffffff), frame(hello), false);
    this.queue('control', 0x7fffffff).queue.push({ kind: 'finish' });
    this.parseControl(now);
  }

  /** Bytes arrived on the control stream (the server's reply). */
  handleControlBytes(now: number, bytes: Uint8Array): void {
    if (this.state === 'Closed' || bytes.length === 0) return;
    if (this.state !== 'Connecting' && this.state !== 'Handshaking') {
      this.violation('data on the control stream after the handshake');
      return;
    }
    this.control.handleBytes(bytes.slice());
    this.parseControl(now);
  }

  private parseControl(now: number): void {
    if (this.state !== 'Handshaking') return;
    let f: Uint8Array | null;
    try {
      f = this.control.pollFrame();
    } catch (e) {
      if (e instanceof FrameError) return this.violation(`handshake: ${e.message}`);
      throw e;
    }
    if (f === null) return;
    if (this.control.buffered() > 0) return this.violation('bytes after the handshake message');
    let reply;
    try {
      reply = decodeHelloReply(f);
    } catch (e) {
      if (e instanceof DecodeError) return this.violation(`bad handshake reply: ${e.message}`);
      throw e;
    }
    if (reply.tag === 'Welcome') {
      this.open(now, reply.clientId);
    } else {
      this.closeWith(CloseCode.Refused, refuseReasonText(reply.reason), { kind: 'Refused', reason: reply.reason });
    }
  }

  private open(now: number, client: bigint): void {
    this.state = 'Open';
    this.client = client;
    this.deadline = null;
    if (this.limits.silenceTimeoutMs !== null) this.heartbeatAt = now + this.limits.silenceTimeoutMs / 4;
    this.events.push({ kind: 'Connected', clientId: client });
  }

  /** Bytes arrived on a unidirectional stream the server opened (`stream` names it; any number the driver picks). */
  handleStreamBytes(now: number, stream: number, bytes: Uint8Array): void {
    if (this.state === 'Closed' || bytes.length === 0) return;
    let s = this.inStreams.get(stream);
    if (s === undefined) {
      s = { channel: null, frames: new FrameDecoder(this.limits.maxMessageSize), finished: false };
      this.inStreams.set(stream, s);
    }
    s.frames.handleBytes(bytes.slice());
    this.parseStreams(now);
  }

  /**
   * The server finished `stream`. A reliable-unordered message's stream ends
   * after its message; a reliable-ordered channel's stream ends only when the
   * server drains before it closes, after a whole message. Checked once the
   * stream's bytes are parsed (they may wait for room in the inbound queue).
   */
  handleStreamFinished(now: number, stream: number): void {
    if (this.state !== 'Open') return;
    const s = this.inStreams.get(stream);
    if (s === undefined) return this.violation(`stream ${stream} closed by the peer`);
    s.finished = true;
    this.parseStreams(now);
  }

  /**
   * Whether the driver should read more of `stream` now: `false` while the
   * application's inbound queue is full (the transport's flow control then
   * holds the server back).
   */
  wantsStreamBytes(stream: number): boolean {
    if (this.state === 'Closed') return false;
    const buffered = this.inStreams.get(stream)?.frames.buffered() ?? 0;
    return this.inbound < this.limits.inboundQueue && buffered <= this.limits.maxMessageSize;
  }

  private parseStreams(now: number): void {
    if (this.state !== 'Open') return;
    for (const [id, s] of [...this.inStreams]) {
      while (this.state === 'Open' && this.inbound < this.limits.inboundQueue) {
        let channel = s.channel;
        try {
          if (channel === null) {
            const header = s.frames.pollHeader();
            if (header === null) {
              if (s.finished && s.frames.buffered() > 0) return this.violation(`stream ${id} ended inside its header`);
              break;
            }
            const kind = header <= 0xff ? this.kindOf(header) : undefined;
            if (kind === undefined || !isReliable(kind)) return this.violation(`stream header names no reliable channel: ${header}`);
            if (kind === 'ReliableOrdered' && [...this.inStreams.values()].some((o) => o !== s && o.channel === header)) {
              return this.violation(`a second stream for channel ${header}`);
            }
            s.channel = header;
            channel = header;
          }
          const f = s.frames.pollFrame();
          if (f === null) {
            // Everything the stream holds is parsed: if the server finished
            // it, it must have ended on a whole message.
            if (s.finished && s.frames.buffered() > 0) return this.violation(`stream ${id} ended inside a message`);
            break;
          }
          this.reliableFrame(now, channel, f);
        } catch (e) {
          if (e instanceof FrameError) return this.violation(`reliable stream: ${e.message}`);
          throw e;
        }
      }
      if (s.finished && s.channel === null && s.frames.buffered() === 0) return this.violation(`stream ${id} closed by the peer`);
      // A finished ordered channel's stream stays: no second stream may carry its channel.
      const unordered = s.channel !== null && this.kindOf(s.channel) === 'ReliableUnordered';
      if (unordered && s.finished && s.frames.buffered() === 0) this.inStreams.delete(id);
    }
  }

  private reliableFrame(_now: number, channel: number, f: Uint8Array): void {
    if (f.length === 1 && f[0] === 0) return; // a heartbeat
    const id = this.admit(channel, { bytes: f, start: 0, end: f.length });
    if (id === null) return;
    this.deliver(channel, id, f, 0, f.length);
  }

  /** Parses the id and applies the admission rule; a message that breaks it closes the connection. */
  private admit(channel: number, m: MessageSlice): number | null {
    let id: number;
    let bodyStart: number;
    try {
      [id, bodyStart] = splitMessage(m.bytes, m.start, m.end);
    } catch (e) {
      if (e instanceof DecodeError) {
        this.violation(`bad message id: ${e.message}`);
        return null;
      }
      throw e;
    }
    void bodyStart;
    const entry = this.entry(id);
    if (entry === undefined) {
      this.violation(`unknown message id ${id}`);
      return null;
    }
    if (entry.channel !== channel) {
      this.violation(`message id ${id} is registered on channel ${entry.channel}, not ${channel}`);
      return null;
    }
    if (!serverSends(entry.direction)) {
      this.violation(`message id ${id} is sent ${entry.direction}, not by this side`);
      return null;
    }
    return id;
  }

  /** A datagram's message: its id's channel must be of the datagram's kind (sequenced or unreliable). */
  private admitDatagram(m: MessageSlice, sequenced: boolean): [number, number] | null {
    let id: number;
    try {
      [id] = splitMessage(m.bytes, m.start, m.end);
    } catch (e) {
      if (e instanceof DecodeError) {
        this.violation(`bad message id: ${e.message}`);
        return null;
      }
      throw e;
    }
    const entry = this.entry(id);
    const kind = entry === undefined ? undefined : this.kindOf(entry.channel);
    if (entry === undefined || kind === undefined) {
      this.violation(`unknown message id ${id}`);
      return null;
    }
    const fits = sequenced ? isSequenced(kind) : kind === 'Unreliable';
    if (!fits) {
      this.violation(`message id ${id} is registered on channel ${entry.channel} (${kind}), not in this datagram`);
      return null;
    }
    const admitted = this.admit(entry.channel, m);
    return admitted === null ? null : [entry.channel, id];
  }

  private deliver(channel: number, id: number, bytes: Uint8Array, start: number, end: number): void {
    const message = start === 0 && end === bytes.length ? bytes : bytes.subarray(start, end);
    this.inbound += message.length;
    this.counters.messagesIn++;
    this.events.push({ kind: 'Message', channel, id, message, bodyStart: varintLen(id) });
  }

  private deliverDatagram(channel: number, id: number, m: MessageSlice): void {
    if (this.inbound >= this.limits.inboundQueue) {
      this.counters.datagramsDropped++;
      return;
    }
    this.deliver(channel, id, m.bytes, m.start, m.end);
  }

  /** A datagram arrived. */
  handleDatagram(_now: number, datagram: Uint8Array): void {
    if (this.state !== 'Open') {
      this.counters.datagramsDropped++;
      return;
    }
    if (datagram.length > this.limits.maxDatagramPayload) {
      this.counters.datagramsDropped++;
      return;
    }
    let parsed;
    try {
      parsed = splitDatagram(datagram);
    } catch (e) {
      if (e instanceof DatagramError) return this.violation(e.message);
      throw e;
    }
    switch (parsed.kind) {
      case 'unreliable':
        for (const m of parsed.messages) {
          if (this.state !== 'Open') return;
          if (m.end - m.start === 1 && m.bytes[m.start] === 0) continue; // a heartbeat
          const a = this.admitDatagram(m, false);
          if (a !== null) this.deliverDatagram(a[0], a[1], m);
        }
        return;
      case 'snapshot': {
        const a = this.admitDatagram(parsed.message, true);
        if (a === null) return;
        if (this.snapshots.handleChunk(a[1], parsed.header) === 'Deliver') this.deliverDatagram(a[0], a[1], parsed.message);
        else this.counters.datagramsDropped++;
        return;
      }
      case 'delta': {
        const a = this.admitDatagram(parsed.message, true);
        if (a === null) return;
        const [channel, id] = a;
        if (this.kindOf(channel) !== 'Snapshot') return this.violation(`delta snapshot of message id ${id} on a ${this.kindOf(channel)} channel`);
        const newest = this.deltaNewest.get(id) ?? 0;
        const h = parsed.header;
        if (h.chunks > MAX_CHUNKS || h.seq + DELTA_WINDOW <= newest) {
          this.counters.datagramsDropped++;
          return;
        }
        this.deltaNewest.set(id, Math.max(newest, h.seq));
        if (this.inbound + this.chunkBytes >= this.limits.inboundQueue) {
          this.counters.datagramsDropped++;
          return;
        }
        const m = parsed.message;
        const message = datagram.subarray(m.start, m.end);
        this.chunkBytes += message.length;
        this.counters.messagesIn++;
        this.chunks.push({ header: h, id, message, bodyStart: varintLen(id) });
        return;
      }
      case 'acks':
        return this.violation('snapshot acks from the server');
    }
  }

  /** The transport is gone (closed by the server, timed out, failed). */
  handleConnectionLost(_now: number, reason: DisconnectReason): void {
    if (this.state === 'Closed') return;
    let r = reason;
    if ((this.state === 'Connecting' || this.state === 'Handshaking') && r.kind === 'Closed' && r.by === 'Peer' && r.code === CloseCode.HandshakeTimeout) {
      r = { kind: 'HandshakeTimedOut' };
    }
    this.finishClosed(r);
  }

  /** Fires the timers due at `now`. */
  handleTimeout(now: number): void {
    if (this.state === 'Closed') return;
    if (this.deadline !== null && now >= this.deadline) {
      this.deadline = null;
      this.closeWith(CloseCode.HandshakeTimeout, 'handshake deadline passed', { kind: 'HandshakeTimedOut' });
      return;
    }
    if (this.state !== 'Open') return;
    if (this.heartbeatAt !== null && now >= this.heartbeatAt) this.heartbeat(now);
    this.parseStreams(now);
  }

  /** The earliest time `handleTimeout` has something to do. */
  pollTimeout(): number | null {
    if (this.state === 'Closed') return null;
    const t = [this.deadline, this.heartbeatAt].filter((x): x is number => x !== null);
    return t.length === 0 ? null : Math.min(...t);
  }

  private heartbeat(now: number): void {
    if (this.limits.silenceTimeoutMs === null) {
      this.heartbeatAt = null;
      return;
    }
    // A full backlog already shows the server we are alive.
    if (!this.sentSinceBeat && this.backlog < this.limits.reliableBacklog) {
      this.pushStream(this.channelStream(0), HEARTBEAT_FRAME, true);
    }
    this.sentSinceBeat = false;
    this.heartbeatAt = now + this.limits.silenceTimeoutMs / 4;
  }

  // ------------------------------------------------------------ application

  /** The next event, or null. Delta chunks wait for `pollSnapshot`. */
  pollEvent(): ClientEvent | null {
    const e = this.events.shift();
    if (e === undefined) return null;
    if (e.kind === 'Message') this.inbound = Math.max(0, this.inbound - e.message.length);
    return e;
  }

  /** Whether delta snapshot chunks wait for `pollSnapshot`. */
  hasSnapshots(): boolean {
    return this.chunks.length > 0;
  }

  /** The next delta snapshot chunk, or null: hand it to the `DeltaReceiver` of its id. */
  pollSnapshot(): SnapshotChunk | null {
    const c = this.chunks.shift();
    if (c === undefined) return null;
    this.chunkBytes -= c.message.length;
    return c;
  }

  /**
   * Sends a message (`id + body`, as `codec.encodeMessage` writes it) on
   * `channel`. Throws `SendError`.
   */
  send(channel: number, message: Uint8Array): void {
    if (this.state !== 'Open') throw new SendError('NotConnected');
    let id: number;
    try {
      [id] = splitMessage(message);
    } catch {
      throw new SendError('NotRegistered', { id: -1 });
    }
    const entry = this.entry(id);
    const kind = this.kindOf(channel);
    if (entry === undefined || entry.channel !== channel || !clientSends(entry.direction) || kind === undefined) {
      throw new SendError('NotRegistered', { id });
    }
    switch (kind) {
      case 'ReliableOrdered':
      case 'ReliableUnordered': {
        const f = frame(message);
        if (f.length > this.limits.maxMessageSize) throw new SendError('TooLarge', { size: f.length, max: this.limits.maxMessageSize });
        if (this.backlog > 0 && this.backlog + f.length > this.limits.reliableBacklog) throw new SendError('QueueFull');
        if (kind === 'ReliableOrdered') {
          this.pushStream(this.channelStream(channel), f, true);
        } else {
          const header = streamHeader(channel);
          const data = new Uint8Array(header.length + f.length);
          data.set(header);
          data.set(f, header.length);
          this.backlog += data.length;
          this.unordered.push({ priority: this.protocol.channels[channel]!.priority, data });
        }
        break;
      }
      case 'Unreliable': {
        const f = frame(message);
        if (1 + f.length > this.upBudget) throw new SendError('TooLarge', { size: 1 + f.length, max: this.upBudget });
        const full = this.packer.pushFrame(f, this.upBudget);
        if (full !== null) this.pushDatagram(full);
        break;
      }
      case 'Sequenced': {
        const seq = (this.seqs.get(id) ?? 0) + 1;
        const d = snapshotDatagram({ seq, chunk: 0, chunks: 1 }, message);
        if (d.length > this.upBudget) throw new SendError('TooLarge', { size: d.length, max: this.upBudget });
        this.seqs.set(id, seq);
        this.pushDatagram(d);
        break;
      }
      case 'Snapshot':
        throw new SendError('NotRegistered', { id });
    }
    this.counters.messagesOut++;
    this.sentSinceBeat = true;
  }

  private scratch = new Uint8Array(1024);

  /** The largest datagram this client sends: `DATAGRAM_BUDGET`, or less where the transport takes less. */
  private upBudget = DATAGRAM_BUDGET;

  /** Encodes `value` with its codec and sends it on the codec's channel (or `channel`). */
  sendMessage<T>(codec: MessageCodec<T>, value: T, channel: number = codec.CHANNEL): void {
    const n = codec.messageLen(value);
    if (this.scratch.length < n) this.scratch = new Uint8Array(Math.max(n, this.scratch.length * 2));
    codec.encodeMessage(value, this.scratch, 0);
    this.send(channel, this.scratch.slice(0, n));
  }

  /** Tells the server which delta snapshots this client holds (one ack datagram). */
  sendAcks(acks: readonly SnapshotAck[]): void {
    if (this.state !== 'Open') throw new SendError('NotConnected');
    if (acks.length > MAX_ACKS) throw new SendError('TooManyAcks', { size: acks.length, max: MAX_ACKS });
    if (acks.length === 0) return;
    this.pushDatagram(ackDatagram(acks));
    this.sentSinceBeat = true;
  }

  /** Sends the unreliable messages packed so far. Call once per tick. */
  flush(): boolean {
    const d = this.packer.flush();
    if (d === null) return false;
    this.pushDatagram(d);
    return true;
  }

  /** Leaves the server with a reason it will see. */
  disconnect(reason: string): void {
    this.close(CloseCode.Normal, reason);
  }

  // ------------------------------------------------------------ driver out

  /** Streams with something to write: the control stream first, then by priority. */
  writableStreams(): OutStream[] {
    return this.outStreams.filter((s) => s.queue.length > 0).map((s) => s.stream);
  }

  streamPriority(stream: OutStream): number {
    return this.outStreams.find((s) => s.stream === stream)?.priority ?? 0;
  }

  /** The next write on `stream`. */
  pollStream(stream: OutStream): StreamWrite | null {
    const out = this.outStreams.find((s) => s.stream === stream);
    const w = out?.queue.shift();
    if (w === undefined) return null;
    if (w.kind === 'data' && stream !== 'control') this.backlog = Math.max(0, this.backlog - w.data.length);
    return w;
  }

  /** The next reliable-unordered message, for a stream of its own. */
  pollUnordered(): UnorderedWrite | null {
    const w = this.unordered.shift();
    if (w === undefined) return null;
    this.backlog = Math.max(0, this.backlog - w.data.length);
    return w;
  }

  /** The next datagram, or the close to carry out. */
  pollTransmit(): Transmit | null {
    const t = this.transmits.shift();
    if (t === undefined) return null;
    if (t.kind === 'datagram') this.datagramsQueued -= t.data.length;
    return t;
  }

  // ------------------------------------------------------------ internals

  private queue(stream: OutStream, priority: number): OutQueue {
    let q = this.outStreams.find((s) => s.stream === stream);
    if (q === undefined) {
      q = { stream, priority, queue: [] };
      this.outStreams.push(q);
      this.outStreams.sort((a, b) => {
        if (a.stream === 'control') return -1;
        if (b.stream === 'control') return 1;
        return b.priority - a.priority || (a.stream as number) - (b.stream as number);
      });
    }
    return q;
  }

  /** A reliable-ordered channel's stream, its header queued on first use. */
  private channelStream(channel: number): OutQueue {
    const existing = this.outStreams.find((s) => s.stream === channel);
    if (existing !== undefined) return existing;
    const q = this.queue(channel, this.protocol.channels[channel]?.priority ?? 0);
    this.pushStream(q, streamHeader(channel), false);
    return q;
  }

  private pushStream(q: OutQueue, data: Uint8Array, counts: boolean): void {
    if (counts) this.backlog += data.length;
    q.queue.push({ kind: 'data', data });
  }

  private pushDatagram(d: Uint8Array): void {
    while (this.datagramsQueued + d.length > this.limits.datagramSendBuffer) {
      const i = this.transmits.findIndex((t) => t.kind === 'datagram');
      if (i < 0) break;
      const [old] = this.transmits.splice(i, 1);
      if (old !== undefined && old.kind === 'datagram') this.datagramsQueued -= old.data.length;
      this.counters.datagramsDropped++;
    }
    this.datagramsQueued += d.length;
    this.transmits.push({ kind: 'datagram', data: d });
  }

  private close(code: number, reason: string): void {
    this.closeWith(code, reason, { kind: 'Closed', by: 'Local', code, reason });
  }

  private closeWith(code: number, reason: string, why: DisconnectReason): void {
    if (this.state === 'Closed') return;
    this.transmits.push({ kind: 'close', code, reason });
    this.finishClosed(why);
  }

  private finishClosed(reason: DisconnectReason): void {
    this.state = 'Closed';
    this.deadline = null;
    this.heartbeatAt = null;
    this.outStreams.length = 0;
    this.unordered.length = 0;
    this.backlog = 0;
    this.packer.flush();
    this.closedReason = reason;
    this.events.push({ kind: 'Disconnected', reason });
  }

  /** Closes the connection for breaking the wire rules (code 2). */
  private violation(what: string): void {
    this.close(CloseCode.ProtocolViolation, what);
  }
}

export { closeCodeName, putVarint, KIND_UNRELIABLE };
