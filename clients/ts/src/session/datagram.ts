/**
 * Datagram payloads (docs/WIRE.md §12.6, src/proto/datagram.rs).
 *
 * ```text
 * unreliable: 01 ( len:varint  message:len )+
 * snapshot:   02 seq:varint chunk:varint chunks:varint message
 * delta:      03 seq:varint baseline:varint chunk:varint chunks:varint message
 * acks:       04 ( id:varint newest:varint held:u64 )+
 * ```
 */
import { DecodeError } from '../codec/errors.js';
import { Reader } from '../codec/reader.js';
import { putVarint, varintLen } from '../codec/varint.js';

export const KIND_UNRELIABLE = 0x01;
export const KIND_SNAPSHOT = 0x02;
export const KIND_DELTA = 0x03;
export const KIND_ACK = 0x04;

/** Most acks one ack datagram carries. */
export const MAX_ACKS = 16;

/**
 * The smallest datagram a client must be able to send: an ack datagram of
 * `MAX_ACKS` acks (kind, then id and newest as 5-byte varints and a 64-bit
 * mask each). A browser's `maxDatagramSize` is what it sends, and Chromium
 * reports 1024 whatever the path takes; what the server sends down is
 * QUIC's business (the browser's `max_datagram_frame_size`), not this.
 */
export const MIN_UP_DATAGRAM = 1 + MAX_ACKS * (5 + 5 + 8);

/** Where a sequenced or snapshot chunk belongs. */
export interface SnapshotHeader {
  readonly seq: number;
  readonly chunk: number;
  readonly chunks: number;
}

/** Where a delta snapshot chunk belongs. */
export interface DeltaHeader {
  readonly seq: number;
  /** 0: a keyframe; else below `seq`. */
  readonly baseline: number;
  readonly chunk: number;
  readonly chunks: number;
}

/** What a client holds of one snapshot type: the newest whole snapshot and, bit `i` of `held`, `newest − 1 − i`. */
export interface SnapshotAck {
  readonly id: number;
  readonly newest: number;
  readonly held: bigint;
}

/** Whether an ack says `seq` is held. */
export function ackHolds(ack: SnapshotAck, seq: number): boolean {
  if (seq === 0 || seq > ack.newest) return false;
  const back = ack.newest - seq;
  return back === 0 || (back <= 64 && (ack.held & (1n << BigInt(back - 1))) !== 0n);
}

/** A message inside a datagram: `bytes[start, end)` is `id + body`. */
export interface MessageSlice {
  readonly bytes: Uint8Array;
  readonly start: number;
  readonly end: number;
}

export type ParsedDatagram =
  | { readonly kind: 'unreliable'; readonly messages: MessageSlice[] }
  | { readonly kind: 'snapshot'; readonly header: SnapshotHeader; readonly message: MessageSlice }
  | { readonly kind: 'delta'; readonly header: DeltaHeader; readonly message: MessageSlice }
  | { readonly kind: 'acks'; readonly acks: SnapshotAck[] };

/** Why a datagram is malformed. */
export class DatagramError extends Error {
  readonly kind: 'Empty' | 'UnknownKind' | 'Malformed';
  readonly decodeError: DecodeError | undefined;

  constructor(kind: 'Empty' | 'UnknownKind' | 'Malformed', detail?: { byte?: number; error?: DecodeError }) {
    super(
      kind === 'Empty'
        ? 'empty datagram'
        : kind === 'UnknownKind'
          ? `unknown datagram kind 0x${(detail?.byte ?? 0).toString(16).padStart(2, '0')}`
          : `malformed datagram: ${detail?.error?.message ?? ''}`,
    );
    this.name = 'DatagramError';
    this.kind = kind;
    this.decodeError = detail?.error;
  }
}

function malformed(kind: ConstructorParameters<typeof DecodeError>[0]): never {
  throw new DatagramError('Malformed', { error: new DecodeError(kind) });
}

/** Parses a received datagram; message slices share its bytes. Throws `DatagramError`. */
export function splitDatagram(d: Uint8Array): ParsedDatagram {
  if (d.length === 0) throw new DatagramError('Empty');
  const kind = d[0]!;
  const r = new Reader(d, undefined, 1);
  try {
    switch (kind) {
      case KIND_UNRELIABLE: {
        const messages: MessageSlice[] = [];
        while (r.pos < r.end) {
          const len = r.byteLen(false);
          if (len === 0) malformed('InvalidValue');
          const start = r.take(len);
          messages.push({ bytes: d, start, end: start + len });
        }
        if (messages.length === 0) malformed('UnexpectedEnd');
        return { kind: 'unreliable', messages };
      }
      case KIND_SNAPSHOT: {
        const seq = r.varint();
        const chunk = r.varintU32();
        const chunks = r.varintU32();
        if (chunk >= chunks || r.pos >= r.end) malformed('InvalidValue');
        return { kind: 'snapshot', header: { seq, chunk, chunks }, message: { bytes: d, start: r.pos, end: d.length } };
      }
      case KIND_DELTA: {
        const seq = r.varint();
        const baseline = r.varint();
        const chunk = r.varintU32();
        const chunks = r.varintU32();
        if (chunk >= chunks || r.pos >= r.end || seq === 0 || baseline >= seq) malformed('InvalidValue');
        return { kind: 'delta', header: { seq, baseline, chunk, chunks }, message: { bytes: d, start: r.pos, end: d.length } };
      }
      case KIND_ACK: {
        const acks: SnapshotAck[] = [];
        while (r.pos < r.end) {
          if (acks.length === MAX_ACKS) malformed('OverLimit');
          acks.push({ id: r.varintU32(), newest: r.varint(), held: r.u64() });
        }
        if (acks.length === 0) malformed('UnexpectedEnd');
        return { kind: 'acks', acks };
      }
      default:
        throw new DatagramError('UnknownKind', { byte: kind });
    }
  } catch (e) {
    if (e instanceof DecodeError) throw new DatagramError('Malformed', { error: e });
    throw e;
  }
}

/** An ack datagram holding `acks` (at most `MAX_ACKS`; more are left out). */
export function ackDatagram(acks: readonly SnapshotAck[]): Uint8Array {
  const list = acks.slice(0, MAX_ACKS);
  const len = 1 + list.reduce((n, a) => n + varintLen(a.id) + varintLen(a.newest) + 8, 0);
  const out = new Uint8Array(len);
  const dv = new DataView(out.buffer);
  out[0] = KIND_ACK;
  let p = 1;
  for (const a of list) {
    p = putVarint(out, p, a.id);
    p = putVarint(out, p, a.newest);
    dv.setBigUint64(p, BigInt.asUintN(64, a.held), true);
    p += 8;
  }
  return out;
}

/** A snapshot (or sequenced) datagram: the header, then `message` (`id + body`). */
export function snapshotDatagram(header: SnapshotHeader, message: Uint8Array): Uint8Array {
  const out = new Uint8Array(1 + varintLen(header.seq) + varintLen(header.chunk) + varintLen(header.chunks) + message.length);
  out[0] = KIND_SNAPSHOT;
  let p = putVarint(out, 1, header.seq);
  p = putVarint(out, p, header.chunk);
  p = putVarint(out, p, header.chunks);
  out.set(message, p);
  return out;
}

/** A delta datagram: the header, then `message` (`id + delta body`). */
export function deltaDatagram(header: DeltaHeader, message: Uint8Array): Uint8Array {
  const out = new Uint8Array(
    1 + varintLen(header.seq) + varintLen(header.baseline) + varintLen(header.chunk) + varintLen(header.chunks) + message.length,
  );
  out[0] = KIND_DELTA;
  let p = putVarint(out, 1, header.seq);
  p = putVarint(out, p, header.baseline);
  p = putVarint(out, p, header.chunk);
  p = putVarint(out, p, header.chunks);
  out.set(message, p);
  return out;
}

/**
 * Packs small unreliable messages (already framed: `len + id + body`) into
 * datagrams of at most `max` bytes.
 */
export class UnreliablePacker {
  private parts: Uint8Array[] = [];
  private size = 0;

  /** Adds one frame; returns the packed datagram to send first if it would not fit beside it. */
  pushFrame(frame: Uint8Array, max: number): Uint8Array | null {
    const flushed = this.size > 0 && this.size + frame.length > max ? this.flush() : null;
    if (this.size === 0) this.size = 1;
    this.parts.push(frame);
    this.size += frame.length;
    return flushed;
  }

  isEmpty(): boolean {
    return this.size === 0;
  }

  /** Takes what is packed as one datagram. */
  flush(): Uint8Array | null {
    if (this.size === 0) return null;
    const out = new Uint8Array(this.size);
    out[0] = KIND_UNRELIABLE;
    let p = 1;
    for (const part of this.parts) {
      out.set(part, p);
      p += part.length;
    }
    this.parts = [];
    this.size = 0;
    return out;
  }
}
