/**
 * The page self-test's stand-in for the network: a `WebTransport` class
 * installed before the page's own module runs (the test's static server
 * adds this module to index.html), behind which `FakeDemoServer` plays the
 * Rust `web_demo`. It pins certificates like the browser does: the hash
 * must be one `/zao/certificate` lists, or the opening handshake fails.
 *
 * `window.zaoFake.kill()` makes every server so far fall silent (a killed
 * process); the next connection meets a fresh one, as after a restart. A
 * server also falls silent when `/zao/certificate` stops answering or stops
 * listing its hash (the process behind the page was restarted).
 */
import { FakeDemoServer } from './fake-server.js';

interface Controlled<T> {
  stream: ReadableStream<T>;
  push(x: T): void;
  end(): void;
}

function controlled<T>(): Controlled<T> {
  let c!: ReadableStreamDefaultController<T>;
  let open = true;
  const stream = new ReadableStream<T>({ start: (ctl) => void (c = ctl) }, { highWaterMark: 1 << 20 });
  return {
    stream,
    push: (x) => {
      if (open) c.enqueue(x);
    },
    end: () => {
      if (open) c.close();
      open = false;
    },
  };
}

function hex(b: BufferSource): string {
  const u: Uint8Array = ArrayBuffer.isView(b) ? new Uint8Array(b.buffer, b.byteOffset, b.byteLength) : new Uint8Array(b);
  return Array.from(u, (x) => x.toString(16).padStart(2, '0')).join('');
}

const params = new URLSearchParams(location.search);
const ENTITIES = Number(params.get('entities') ?? 256);
const HZ = Number(params.get('hz') ?? 60);

let nextClient = 1n;
const servers = new Set<FakeDemoServer>();

class FakeWebTransport {
  readonly ready: Promise<void>;
  readonly closed: Promise<WebTransportCloseInfo>;
  readonly datagrams: { readable: ReadableStream<Uint8Array>; writable: WritableStream<Uint8Array>; maxDatagramSize: number; incomingHighWaterMark: number };
  readonly incomingUnidirectionalStreams: ReadableStream<ReadableStream<Uint8Array>>;
  private readonly dgIn = controlled<Uint8Array>();
  private readonly uniIn = controlled<ReadableStream<Uint8Array>>();
  private readonly controlIn = controlled<Uint8Array>();
  private reliableIn: Controlled<Uint8Array> | null = null;
  private server: FakeDemoServer | null = null;
  private timer: ReturnType<typeof setInterval> | null = null;
  private watch: ReturnType<typeof setInterval> | null = null;
  private nextStream = 0;
  private settle!: (info: WebTransportCloseInfo) => void;
  private fail!: (e: Error) => void;
  private done = false;

  constructor(url: string, init?: WebTransportOptions) {
    this.closed = new Promise((ok, fail) => {
      this.settle = ok;
      this.fail = fail;
    });
    this.datagrams = {
      readable: this.dgIn.stream,
      writable: new WritableStream<Uint8Array>({ write: (d) => this.server?.handleDatagram(d.slice()) }),
      maxDatagramSize: 1211,
      incomingHighWaterMark: 1,
    };
    this.incomingUnidirectionalStreams = this.uniIn.stream;
    this.ready = this.open(url, init);
    this.ready.catch((e: Error) => this.end(e));
  }

  private async open(url: string, init: WebTransportOptions | undefined): Promise<void> {
    const r = await fetch('/zao/certificate', { cache: 'no-store' });
    const cert = (await r.json()) as { hashes: string[] };
    const offered = (init?.serverCertificateHashes ?? []).map((h) => hex(h.value!));
    await new Promise((ok) => setTimeout(ok, 5));
    if (!offered.some((h) => cert.hashes.includes(h))) {
      console.error(`Failed to establish a connection to ${url}: net::ERR_QUIC_PROTOCOL_ERROR.QUIC_TLS_CERTIFICATE_UNKNOWN (fake WebTransport)`);
      const e = new Error('Opening handshake failed.');
      e.name = 'WebTransportError';
      throw e;
    }
    const server = new FakeDemoServer(
      {
        control: (b) => this.controlIn.push(b),
        reliable: (b) => {
          if (this.reliableIn === null) {
            this.reliableIn = controlled<Uint8Array>();
            this.uniIn.push(this.reliableIn.stream);
          }
          this.reliableIn.push(b);
        },
        datagram: (b) => this.dgIn.push(b),
      },
      { entities: ENTITIES, clientId: nextClient++ },
    );
    this.server = server;
    servers.add(server);
    this.timer = setInterval(() => server.tick(), 1000 / HZ);
    const pinned = offered.filter((h) => cert.hashes.includes(h));
    this.watch = setInterval(() => {
      void fetch('/zao/certificate', { cache: 'no-store' })
        .then(async (x) => ((await x.json()) as { hashes: string[] }).hashes)
        .then(
          (hashes) => {
            if (!pinned.some((h) => hashes.includes(h))) server.dead = true;
          },
          () => void (server.dead = true),
        );
    }, 250);
  }

  async createBidirectionalStream(): Promise<{ readable: ReadableStream<Uint8Array>; writable: WritableStream<Uint8Array> }> {
    return { readable: this.controlIn.stream, writable: new WritableStream<Uint8Array>({ write: (b) => this.server?.handleControl(b.slice()) }) };
  }

  async createUnidirectionalStream(): Promise<WritableStream<Uint8Array>> {
    const id = this.nextStream++;
    return new WritableStream<Uint8Array>({ write: (b) => this.server?.handleStream(id, b.slice()) });
  }

  close(info?: WebTransportCloseInfo): void {
    this.end(null, info);
  }

  private end(error: Error | null, info?: WebTransportCloseInfo): void {
    if (this.done) return;
    this.done = true;
    if (this.timer !== null) clearInterval(this.timer);
    if (this.watch !== null) clearInterval(this.watch);
    if (this.server !== null) servers.delete(this.server);
    this.server = null;
    for (const c of [this.dgIn, this.uniIn, this.controlIn, this.reliableIn]) c?.end();
    if (error !== null) this.fail(error);
    else this.settle({ closeCode: info?.closeCode ?? 0, reason: info?.reason ?? '' });
  }
}

(globalThis as unknown as { WebTransport: unknown }).WebTransport = FakeWebTransport;
(globalThis as unknown as { zaoFake: unknown }).zaoFake = {
  /** Every server so far falls silent, as a killed process does. */
  kill(): number {
    for (const s of servers) s.dead = true;
    return servers.size;
  },
};
console.log('[fake] WebTransport replaced by the in-page fake web_demo');
