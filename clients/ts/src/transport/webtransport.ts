/**
 * The browser adapter: drives a `ClientSession` over the browser's
 * `WebTransport` (HTTP/3). It only moves bytes: the control stream is the
 * first bidirectional stream, each reliable channel one outgoing
 * unidirectional stream, everything else a datagram (docs/WIRE.md §12.1).
 * Every decision (what to send, when, and how to close) is the session's.
 */
import { ClientSession, type ClientConfig, type ClientEvent, type OutStream } from '../session/client.js';
import type { DisconnectReason } from '../session/close.js';

export interface WebTransportClientOptions extends ClientConfig {
  /**
   * The server certificate's SHA-256 as 64 hex digits (colons allowed),
   * pinned through `serverCertificateHashes` (an ECDSA certificate valid
   * for at most 14 days, as browsers require).
   */
  readonly certHash?: string;
  /**
   * More hashes to pin beside `certHash` (a server that rotates its
   * certificate publishes the current and the next); any one may match.
   */
  readonly certHashes?: readonly string[];
  /** Called with each event (connected, messages, disconnected). */
  readonly onEvent?: (event: ClientEvent, client: WebTransportClient) => void;
  /** Called when delta snapshot chunks are waiting: drain them with `client.session.pollSnapshot()`. */
  readonly onSnapshot?: (client: WebTransportClient) => void;
  /** The datagram size to assume if the browser does not report one. */
  readonly assumedMaxDatagram?: number;
  /** The clock (milliseconds); `performance.now` by default. */
  readonly now?: () => number;
}

/** Parses 64 hex digits (colons allowed between bytes) into 32 bytes. */
export function parseCertHash(text: string): Uint8Array<ArrayBuffer> {
  const hex = text.replace(/:/g, '');
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new Error('not a SHA-256 hash: expected 64 hex digits');
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export class WebTransportClient {
  readonly session: ClientSession;
  readonly transport: WebTransport;
  private readonly options: WebTransportClientOptions;
  private readonly now: () => number;
  private control: WritableStreamDefaultWriter<Uint8Array> | null = null;
  private readonly writers = new Map<OutStream, Promise<WritableStreamDefaultWriter<Uint8Array>>>();
  private datagrams: WritableStreamDefaultWriter<Uint8Array> | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private nextStream = 1;
  private pumping = false;
  private again = false;

  private constructor(url: string, options: WebTransportClientOptions) {
    this.options = options;
    this.now = options.now ?? (() => performance.now());
    this.session = new ClientSession(options, this.now());
    const init: WebTransportOptions = { requireUnreliable: true };
    const hashes = [...(options.certHash !== undefined ? [options.certHash] : []), ...(options.certHashes ?? [])];
    if (hashes.length > 0) {
      init.serverCertificateHashes = hashes.map((h) => ({ algorithm: 'sha-256', value: parseCertHash(h) }));
    }
    this.transport = new WebTransport(url, init);
  }

  /**
   * Connects to `url` (`https://127.0.0.1:PORT/`); resolves once the
   * transport is up and the hello is on its way. `Connected` (or
   * `Disconnected` with the reason) arrives through `onEvent`.
   */
  static async connect(url: string, options: WebTransportClientOptions): Promise<WebTransportClient> {
    const c = new WebTransportClient(url, options);
    await c.start();
    return c;
  }

  private async start(): Promise<void> {
    const t = this.transport;
    t.closed.then(
      (info) => this.lost({ kind: 'Closed', by: 'Peer', code: info.closeCode ?? 0, reason: info.reason ?? '' }),
      (e: unknown) => this.lost({ kind: 'Transport', message: e instanceof Error ? e.message : String(e) }),
    );
    try {
      await t.ready;
    } catch (e) {
      this.lost({ kind: 'Transport', message: e instanceof Error ? e.message : String(e) });
      return;
    }
    // Chromium keeps one unread datagram by default and drops older ones
    // when several arrive between two reads (a snapshot of many chunks).
    try {
      t.datagrams.incomingHighWaterMark = 256;
    } catch {
      // Not settable here: the default stays.
    }
    const bidi = await t.createBidirectionalStream();
    this.control = bidi.writable.getWriter();
    this.datagrams = t.datagrams.writable.getWriter();
    void this.read(bidi.readable, (bytes) => this.session.handleControlBytes(this.now(), bytes), () => {});
    void this.acceptStreams();
    void this.read(t.datagrams.readable, (bytes) => this.session.handleDatagram(this.now(), bytes), () => {});
    const max = t.datagrams.maxDatagramSize ?? this.options.assumedMaxDatagram ?? null;
    this.session.handleConnected(this.now(), max);
    this.pump();
  }

  private async acceptStreams(): Promise<void> {
    const reader = this.transport.incomingUnidirectionalStreams.getReader();
    for (;;) {
      let next;
      try {
        next = await reader.read();
      } catch {
        return;
      }
      if (next.done) return;
      const id = this.nextStream++;
      void this.read(
        next.value,
        (bytes) => this.session.handleStreamBytes(this.now(), id, bytes),
        () => this.session.handleStreamFinished(this.now(), id),
      );
    }
  }

  private async read(stream: ReadableStream<Uint8Array>, onBytes: (b: Uint8Array) => void, onEnd: () => void): Promise<void> {
    const reader = stream.getReader();
    for (;;) {
      let r;
      try {
        r = await reader.read();
      } catch {
        return;
      }
      if (r.done) {
        onEnd();
        this.pump();
        return;
      }
      onBytes(r.value);
      this.pump();
    }
  }

  private lost(reason: DisconnectReason): void {
    this.session.handleConnectionLost(this.now(), reason);
    this.pump();
  }

  /** Sends a message (`id + body`) on `channel`; throws `SendError`. */
  send(channel: number, message: Uint8Array): void {
    this.session.send(channel, message);
    this.pump();
  }

  /** Sends what the application queued (unreliable messages are packed until here). */
  flush(): void {
    this.session.flush();
    this.pump();
  }

  disconnect(reason: string): void {
    this.session.disconnect(reason);
    this.pump();
  }

  /**
   * Hands events to the application, then moves everything the session has
   * to say to the transport (what the callbacks sent included), then sets
   * the timer for the session's next deadline.
   */
  pump(): void {
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    try {
      // Callbacks that send ask for another round; a bounded number, so a
      // callback that sends on every call cannot hold the page.
      let rounds = 0;
      do {
        this.again = false;
        this.session.handleTimeout(this.now());
        for (let e = this.session.pollEvent(); e !== null; e = this.session.pollEvent()) this.options.onEvent?.(e, this);
        if (this.session.hasSnapshots()) this.options.onSnapshot?.(this);
        this.transmit();
      } while (this.again && ++rounds < 16);
      if (this.timer !== null) clearTimeout(this.timer);
      const at = this.session.pollTimeout();
      this.timer = at === null ? null : setTimeout(() => this.pump(), Math.max(0, at - this.now()));
    } finally {
      this.pumping = false;
    }
  }

  private transmit(): void {
    for (const s of this.session.writableStreams()) {
      for (let w = this.session.pollStream(s); w !== null; w = this.session.pollStream(s)) {
        const write = w;
        // Each stream's writes are chained on its writer: they keep their order.
        void this.writer(s)
          .then((x) => (write.kind === 'data' ? x.write(write.data) : x.close()))
          .catch(() => {});
      }
    }
    for (let u = this.session.pollUnordered(); u !== null; u = this.session.pollUnordered()) {
      const data = u.data;
      void this.transport
        .createUnidirectionalStream({ sendOrder: u.priority })
        .then(async (st) => {
          const x = st.getWriter();
          await x.write(data);
          await x.close();
        })
        .catch(() => {});
    }
    for (let t = this.session.pollTransmit(); t !== null; t = this.session.pollTransmit()) {
      if (t.kind === 'datagram') void this.datagrams?.write(t.data).catch(() => {});
      else this.transport.close({ closeCode: t.code, reason: t.reason });
    }
  }

  private writer(s: OutStream): Promise<WritableStreamDefaultWriter<Uint8Array>> {
    if (s === 'control') return Promise.resolve(this.control!);
    let w = this.writers.get(s);
    if (w === undefined) {
      w = this.transport.createUnidirectionalStream({ sendOrder: this.session.streamPriority(s) }).then((x) => x.getWriter());
      this.writers.set(s, w);
    }
    return w;
  }
}
