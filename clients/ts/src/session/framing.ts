/**
 * Stream framing (docs/WIRE.md §12.5, src/proto/framing.rs): a reliable
 * stream is its channel's index (a varint), then frames, each a varint
 * length and that many bytes. Memory is bounded: a frame's length is checked
 * as soon as its prefix is complete, before any of its body is buffered.
 */
import { DecodeError } from '../codec/errors.js';
import { Reader } from '../codec/reader.js';
import { MAX_VARINT_LEN, putVarint, varintLen } from '../codec/varint.js';

/** Why a stream stopped making sense. */
export class FrameError extends Error {
  readonly kind: 'TooLarge' | 'BadLength';
  readonly claimed: number | undefined;
  readonly max: number | undefined;
  readonly cause2: DecodeError | undefined;

  constructor(kind: 'TooLarge' | 'BadLength', detail: { claimed?: number; max?: number; error?: DecodeError }) {
    super(
      kind === 'TooLarge'
        ? `frame of ${detail.claimed} bytes is over the ${detail.max}-byte limit`
        : `bad frame length: ${detail.error?.message ?? ''}`,
    );
    this.name = 'FrameError';
    this.kind = kind;
    this.claimed = detail.claimed;
    this.max = detail.max;
    this.cause2 = detail.error;
  }
}

/** The varint length prefix of a frame of `len` bytes followed by the payload. */
export function frame(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(varintLen(payload.length) + payload.length);
  const p = putVarint(out, 0, payload.length);
  out.set(payload, p);
  return out;
}

/** A reliable stream's header: the channel's index as a varint. */
export function streamHeader(channel: number): Uint8Array {
  const out = new Uint8Array(varintLen(channel));
  putVarint(out, 0, channel);
  return out;
}

/** Reassembles frames from a byte stream split at arbitrary points. */
export class FrameDecoder {
  private chunks: Uint8Array[] = [];
  private buffered_ = 0;
  private readonly maxFrame: number;
  /** The frame being assembled, once its prefix is read. */
  private pending: number | null = null;

  constructor(maxFrame: number) {
    this.maxFrame = maxFrame;
  }

  /** Appends bytes read from the stream (kept by reference: pass a copy if the caller reuses its buffer). */
  handleBytes(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.buffered_ += chunk.length;
  }

  /** Bytes buffered and not yet returned as frames. */
  buffered(): number {
    return this.buffered_;
  }

  /** The first `n` buffered bytes as one array (copied only when split). */
  private peek(n: number): Uint8Array {
    const first = this.chunks[0]!;
    if (first.length >= n) return first.subarray(0, n);
    const out = new Uint8Array(n);
    let at = 0;
    for (const c of this.chunks) {
      const take = Math.min(c.length, n - at);
      out.set(c.subarray(0, take), at);
      at += take;
      if (at === n) break;
    }
    return out;
  }

  private advance(n: number): void {
    this.buffered_ -= n;
    while (n > 0) {
      const first = this.chunks[0]!;
      if (first.length <= n) {
        n -= first.length;
        this.chunks.shift();
      } else {
        this.chunks[0] = first.subarray(n);
        n = 0;
      }
    }
  }

  /** Reads a varint from the front; `null` if more bytes are needed. */
  private varint(): { value: number; len: number } | null {
    if (this.buffered_ === 0) return null;
    const head = this.peek(Math.min(this.buffered_, MAX_VARINT_LEN));
    const r = new Reader(head);
    try {
      const value = r.varint();
      return { value, len: r.pos };
    } catch (e) {
      if (e instanceof DecodeError && e.kind === 'UnexpectedEnd' && this.buffered_ < MAX_VARINT_LEN) return null;
      if (e instanceof DecodeError) throw new FrameError('BadLength', { error: e });
      throw e;
    }
  }

  /** A bare varint from the front of the stream (its header); `null` if more bytes are needed. */
  pollHeader(): number | null {
    const v = this.varint();
    if (v === null) return null;
    this.advance(v.len);
    return v.value;
  }

  /** The next complete frame, or `null`; throws `FrameError` when the stream breaks the rules. */
  pollFrame(): Uint8Array | null {
    let len = this.pending;
    if (len === null) {
      const v = this.varint();
      if (v === null) return null;
      if (v.value > this.maxFrame) throw new FrameError('TooLarge', { claimed: v.value, max: this.maxFrame });
      this.advance(v.len);
      this.pending = v.value;
      len = v.value;
    }
    if (this.buffered_ < len) return null;
    this.pending = null;
    if (len === 0) return new Uint8Array(0);
    const out = this.peek(len).slice();
    this.advance(len);
    return out;
  }
}
