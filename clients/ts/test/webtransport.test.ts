/**
 * The WebTransport adapter against a scripted in-memory `WebTransport` (Node
 * has web streams but no WebTransport): the hello on the first bidirectional
 * stream, the reply, a server stream and datagrams in, the client's reliable
 * stream and datagrams out, the pinned certificate hash, and a close.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as ref from '../src/generated/reference.js';
import { encodeHelloReply, frame, parseCertHash, WebTransportClient, type ClientEvent } from '../src/index.js';
import { asset, concat, toHex } from './helpers.js';
import { reference } from './samples.js';

/** A controllable readable stream. */
function source<T>(): { stream: ReadableStream<T>; push(x: T): void; end(): void } {
  let c!: ReadableStreamDefaultController<T>;
  const stream = new ReadableStream<T>({ start: (ctl) => void (c = ctl) });
  return { stream, push: (x) => c.enqueue(x), end: () => c.close() };
}

/** A writable stream that records what is written and whether it was closed. */
function sink(): { stream: WritableStream<Uint8Array>; chunks: Uint8Array[]; closed: () => boolean } {
  const chunks: Uint8Array[] = [];
  let closed = false;
  const stream = new WritableStream<Uint8Array>({
    write: (c) => void chunks.push(c),
    close: () => void (closed = true),
  });
  return { stream, chunks, closed: () => closed };
}

class FakeWebTransport {
  static last: FakeWebTransport | null = null;
  readonly url: string;
  readonly init: WebTransportOptions | undefined;
  readonly ready: Promise<void>;
  readonly closed: Promise<WebTransportCloseInfo>;
  private closeWith!: (info: WebTransportCloseInfo) => void;
  readonly controlIn = source<Uint8Array>();
  readonly controlOut = sink();
  readonly dgIn = source<Uint8Array>();
  readonly dgOut = sink();
  readonly uniIn = source<ReadableStream<Uint8Array>>();
  readonly uniOut: { order: number | undefined; sink: ReturnType<typeof sink> }[] = [];
  readonly datagrams: { readable: ReadableStream<Uint8Array>; writable: WritableStream<Uint8Array>; maxDatagramSize: number };
  readonly incomingUnidirectionalStreams: ReadableStream<ReadableStream<Uint8Array>>;
  closedBy: WebTransportCloseInfo | null = null;

  constructor(url: string, init?: WebTransportOptions) {
    this.url = url;
    this.init = init;
    this.ready = Promise.resolve();
    this.closed = new Promise((resolve) => (this.closeWith = resolve));
    this.datagrams = { readable: this.dgIn.stream, writable: this.dgOut.stream, maxDatagramSize: 1200 };
    this.incomingUnidirectionalStreams = this.uniIn.stream;
    FakeWebTransport.last = this;
  }

  async createBidirectionalStream(): Promise<{ readable: ReadableStream<Uint8Array>; writable: WritableStream<Uint8Array> }> {
    return { readable: this.controlIn.stream, writable: this.controlOut.stream };
  }

  async createUnidirectionalStream(opts?: { sendOrder?: number }): Promise<WritableStream<Uint8Array>> {
    const s = sink();
    this.uniOut.push({ order: opts?.sendOrder, sink: s });
    return s.stream;
  }

  close(info?: WebTransportCloseInfo): void {
    this.closedBy = info ?? {};
    this.closeWith(info ?? {});
  }

  /** The server closes the session. */
  serverClose(code: number, reason: string): void {
    this.closeWith({ closeCode: code, reason });
  }
}

const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 5));

test('the adapter says hello, connects, moves streams and datagrams both ways, and closes', async () => {
  (globalThis as unknown as { WebTransport: unknown }).WebTransport = FakeWebTransport;
  const events: ClientEvent[] = [];
  const hash = '5e:3b:' + 'ab'.repeat(30);
  const client = await WebTransportClient.connect('https://127.0.0.1:4433/', {
    protocol: ref.protocol,
    certHash: hash,
    onEvent: (e) => void events.push(e),
  });
  const t = FakeWebTransport.last!;
  assert.equal(t.url, 'https://127.0.0.1:4433/');
  const pinned = t.init?.serverCertificateHashes?.[0];
  assert.equal(pinned?.algorithm, 'sha-256');
  assert.equal(toHex(new Uint8Array(pinned!.value as ArrayBuffer)), toHex(parseCertHash(hash)));
  await tick();
  // The hello, byte for byte, then the control stream finished.
  assert.equal(toHex(concat(...t.controlOut.chunks)), toHex(asset('conformance', 'hello.bin')));
  assert.ok(t.controlOut.closed());
  // Welcome.
  t.controlIn.push(frame(encodeHelloReply({ tag: 'Welcome', clientId: 3n })));
  await tick();
  assert.deepEqual(events[0], { kind: 'Connected', clientId: 3n });
  // A server stream (reliable, channel 0) and a snapshot datagram.
  const server = source<Uint8Array>();
  t.uniIn.push(server.stream);
  const spawn = new Uint8Array(ref.SpawnEntity.messageLen(reference.spawnEntity()));
  ref.SpawnEntity.encodeMessage(reference.spawnEntity(), spawn);
  server.push(concat([0], frame(spawn).subarray(0, 10)));
  server.push(frame(spawn).subarray(10));
  t.dgIn.push(concat(Uint8Array.of(2, 1, 0, 1), asset('golden', 'world_snapshot.bin')));
  await tick();
  const messages = events.filter((e) => e.kind === 'Message');
  assert.equal(messages.length, 2);
  const ids = messages.map((m) => (m.kind === 'Message' ? m.id : -1)).sort();
  assert.deepEqual(ids, [3, 4]);
  // The client sends on its reliable stream (opened on first use) and packs an unreliable datagram.
  client.session.sendMessage(ref.Inventory, reference.inventory(2));
  client.session.sendMessage(ref.PlayerMoved, reference.playerMoved());
  client.flush();
  await tick();
  assert.equal(t.uniOut.length, 1);
  const out = concat(...t.uniOut[0]!.sink.chunks);
  assert.equal(out[0], 0, 'the channel header');
  assert.equal(out[1], ref.Inventory.messageLen(reference.inventory(2)));
  assert.equal(t.dgOut.chunks.length, 1);
  assert.equal(t.dgOut.chunks[0]![0], 1, 'an unreliable datagram');
  // The server closes with a code: Disconnected with it.
  t.serverClose(4, 'kicked for testing');
  await tick();
  const last = events[events.length - 1];
  assert.deepEqual(last, { kind: 'Disconnected', reason: { kind: 'Closed', by: 'Peer', code: 4, reason: 'kicked for testing' } });
  assert.ok(client.session.isClosed());
});

test('a refusal through the adapter closes the transport with code 1 and the reason', async () => {
  (globalThis as unknown as { WebTransport: unknown }).WebTransport = FakeWebTransport;
  const events: ClientEvent[] = [];
  await WebTransportClient.connect('https://127.0.0.1:1/', { protocol: ref.protocol, onEvent: (e) => void events.push(e) });
  const t = FakeWebTransport.last!;
  await tick();
  t.controlIn.push(frame(encodeHelloReply({ tag: 'Refused', reason: { tag: 'ProtocolMismatch', detail: 'protocol hash differs' } })));
  await tick();
  assert.deepEqual(t.closedBy, { closeCode: 1, reason: 'protocol mismatch: protocol hash differs' });
  assert.equal(events[0]?.kind, 'Disconnected');
});
