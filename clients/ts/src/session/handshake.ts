/**
 * The handshake on the control stream (docs/WIRE.md §12.2–§12.4,
 * src/proto/handshake.rs): the client says `Hello`, the server answers
 * `HelloReply`. Both are framed like stream messages but carry no id.
 */
import { fail } from '../codec/errors.js';
import { DEFAULT_LIMITS, type DecodeLimits } from '../codec/limits.js';
import { Reader } from '../codec/reader.js';
import { varintLen } from '../codec/varint.js';
import { strLen, Writer } from '../codec/writer.js';
import {
  CHANNEL_KINDS,
  DIRECTIONS,
  channelKindTag,
  directionTag,
  type ChannelDef,
  type ProtocolEntry,
  type ProtocolInfo,
} from './protocol.js';

/** First field of every `Hello`: "ZAO1" read big-endian (`31 4f 41 5a` on the wire). */
export const PROTOCOL_MAGIC = 0x5a414f31;

/** The zao version whose wire format this client implements (§13). */
export const WIRE_VERSION = '0.1.0';

/** Message id 0 with an empty body is the heartbeat (§12.7). */
export const HEARTBEAT_ID = 0;

/** The heartbeat as a frame on a reliable stream: length 1, id 0. */
export const HEARTBEAT_FRAME: Uint8Array = Uint8Array.of(0x01, 0x00);

/** The largest hello a server reads, and the largest reply a client reads. */
export const MAX_HANDSHAKE_FRAME = 64 * 1024;

/** The client's opening message. */
export interface Hello {
  readonly magic: number;
  readonly version: string;
  readonly protocolHash: bigint;
  /** Sorted by id. */
  readonly messages: readonly ProtocolEntry[];
  /** The channels beyond the three defaults (index 3, 4, …). */
  readonly channels: readonly ChannelDef[];
  readonly token: Uint8Array | null;
}

/** The hello a client of `protocol` sends. */
export function makeHello(protocol: ProtocolInfo, token: Uint8Array | null = null, version = WIRE_VERSION): Hello {
  return {
    magic: PROTOCOL_MAGIC,
    version,
    protocolHash: protocol.hash,
    messages: [...protocol.entries].sort((a, b) => a.id - b.id),
    channels: protocol.channels.slice(3),
    token,
  };
}

/** The bare encoding of a `Hello` (no frame). */
export function encodeHello(h: Hello): Uint8Array {
  let n = 4 + strLen(h.version) + 8 + varintLen(h.messages.length);
  for (const e of h.messages) n += 4 + strLen(e.name) + 8 + 1 + 1;
  n += varintLen(h.channels.length);
  for (const c of h.channels) n += strLen(c.name) + 1 + 4;
  n += h.token === null ? 1 : 1 + varintLen(h.token.length) + h.token.length;
  const w = new Writer(new Uint8Array(n));
  w.u32(h.magic).str(h.version).u64(h.protocolHash).varint(h.messages.length);
  for (const e of h.messages) w.u32(e.id).str(e.name).u64(e.fingerprint).u8(e.channel).u8(directionTag(e.direction));
  w.varint(h.channels.length);
  for (const c of h.channels) w.str(c.name).u8(channelKindTag(c.kind)).i32(c.priority);
  if (h.token === null) w.u8(0);
  else w.u8(1).byteString(h.token);
  return w.buf;
}

/** Decodes a `Hello` (what a server reads); throws `DecodeError`. */
export function decodeHello(bytes: Uint8Array, limits: DecodeLimits = DEFAULT_LIMITS): Hello {
  if (bytes.length > limits.maxMessage) fail('MessageTooLarge');
  const r = new Reader(bytes, limits);
  const magic = r.u32();
  const version = r.str();
  const protocolHash = r.u64();
  r.enter();
  const count = r.count(1 + 4 + 8 + 1 + 1, 40);
  const messages: ProtocolEntry[] = [];
  for (let i = 0; i < count; i++) {
    if (r.remaining() < 4) fail('UnexpectedEnd');
    const id = r.u32();
    const name = r.str();
    if (r.remaining() < 10) fail('UnexpectedEnd');
    const fingerprint = r.u64();
    const channel = r.u8();
    const d = r.u8();
    const direction = DIRECTIONS[d];
    if (direction === undefined) fail('InvalidTag');
    messages.push({ id, name, fingerprint, channel, direction });
  }
  r.leave();
  r.enter();
  const nch = r.count(1 + 1 + 4, 32);
  const channels: ChannelDef[] = [];
  for (let i = 0; i < nch; i++) {
    const name = r.str();
    if (r.remaining() < 5) fail('UnexpectedEnd');
    const kind = CHANNEL_KINDS[r.u8()];
    if (kind === undefined) fail('InvalidTag');
    channels.push({ name, kind, priority: r.i32() });
  }
  r.leave();
  const tag = r.u8();
  let token: Uint8Array | null = null;
  if (tag === 1) {
    r.enter();
    const n = r.count(1, 1);
    token = r.slice(n).slice();
    r.leave();
  } else if (tag !== 0) {
    fail('InvalidTag');
  }
  r.finish();
  return { magic, version, protocolHash, messages, channels, token };
}

/** Why the server refused a client (§12.3 `RefuseReason`). */
export type RefuseReason =
  | { readonly tag: 'NotZao' }
  | { readonly tag: 'VersionMismatch'; readonly server: string; readonly client: string }
  | { readonly tag: 'ProtocolMismatch'; readonly detail: string }
  | { readonly tag: 'Unauthorized'; readonly detail: string }
  | { readonly tag: 'ServerFull' }
  | { readonly tag: 'DatagramsTooSmall'; readonly max: bigint; readonly required: bigint }
  | { readonly tag: 'AlreadyConnected' }
  | { readonly tag: 'AuthUnavailable'; readonly detail: string }
  | { readonly tag: 'TooManyFromAddress'; readonly max: bigint }
  | { readonly tag: 'Draining' }
  | { readonly tag: 'Busy' }
  | { readonly tag: 'AddressValidationFailed' };

/** The server's answer. */
export type HelloReply = { readonly tag: 'Welcome'; readonly clientId: bigint } | { readonly tag: 'Refused'; readonly reason: RefuseReason };

/** Decodes a `HelloReply`; throws `DecodeError`. */
export function decodeHelloReply(bytes: Uint8Array, limits: DecodeLimits = DEFAULT_LIMITS): HelloReply {
  if (bytes.length > limits.maxMessage) fail('MessageTooLarge');
  const r = new Reader(bytes, limits);
  let reply: HelloReply;
  switch (r.u8()) {
    case 0:
      reply = { tag: 'Welcome', clientId: r.u64() };
      break;
    case 1:
      reply = { tag: 'Refused', reason: refuseReason(r) };
      break;
    default:
      return fail('InvalidTag');
  }
  r.finish();
  return reply;
}

function refuseReason(r: Reader): RefuseReason {
  switch (r.u8()) {
    case 0:
      return { tag: 'NotZao' };
    case 1: {
      const server = r.str();
      return { tag: 'VersionMismatch', server, client: r.str() };
    }
    case 2:
      return { tag: 'ProtocolMismatch', detail: r.str() };
    case 3:
      return { tag: 'Unauthorized', detail: r.str() };
    case 4:
      return { tag: 'ServerFull' };
    case 5: {
      if (r.remaining() < 16) fail('UnexpectedEnd');
      const max = r.u64();
      return { tag: 'DatagramsTooSmall', max, required: r.u64() };
    }
    case 6:
      return { tag: 'AlreadyConnected' };
    case 7:
      return { tag: 'AuthUnavailable', detail: r.str() };
    case 8:
      return { tag: 'TooManyFromAddress', max: r.u64() };
    case 9:
      return { tag: 'Draining' };
    case 10:
      return { tag: 'Busy' };
    case 11:
      return { tag: 'AddressValidationFailed' };
    default:
      return fail('InvalidTag');
  }
}

/**
 * Whether a new attempt soon may succeed (§12.3): the server was busy, full
 * or could not authenticate now, or the address check failed.
 */
export function isRetryable(r: RefuseReason): boolean {
  switch (r.tag) {
    case 'ServerFull':
    case 'TooManyFromAddress':
    case 'Busy':
    case 'AddressValidationFailed':
    case 'AuthUnavailable':
      return true;
    default:
      return false;
  }
}

/** Encodes a `HelloReply` (servers and tests). */
export function encodeHelloReply(reply: HelloReply): Uint8Array {
  const parts: ((w: Writer) => void)[] = [];
  let n = 1;
  if (reply.tag === 'Welcome') {
    n += 8;
    parts.push((w) => w.u8(0).u64(reply.clientId));
  } else {
    const reason = reply.reason;
    n += 1;
    const strs: string[] = [];
    let tag = 0;
    switch (reason.tag) {
      case 'NotZao': tag = 0; break;
      case 'VersionMismatch': tag = 1; strs.push(reason.server, reason.client); break;
      case 'ProtocolMismatch': tag = 2; strs.push(reason.detail); break;
      case 'Unauthorized': tag = 3; strs.push(reason.detail); break;
      case 'ServerFull': tag = 4; break;
      case 'DatagramsTooSmall': tag = 5; n += 16; break;
      case 'AlreadyConnected': tag = 6; break;
      case 'AuthUnavailable': tag = 7; strs.push(reason.detail); break;
      case 'TooManyFromAddress': tag = 8; n += 8; break;
      case 'Draining': tag = 9; break;
      case 'Busy': tag = 10; break;
      case 'AddressValidationFailed': tag = 11; break;
    }
    for (const s of strs) n += strLen(s);
    parts.push((w) => {
      w.u8(1).u8(tag);
      for (const s of strs) w.str(s);
      if (reason.tag === 'DatagramsTooSmall') w.u64(reason.max).u64(reason.required);
      if (reason.tag === 'TooManyFromAddress') w.u64(reason.max);
    });
  }
  const w = new Writer(new Uint8Array(n));
  for (const p of parts) p(w);
  return w.buf;
}

/** The refusal as Rust's `Display` prints it: the close reason a refused client sends. */
export function refuseReasonText(r: RefuseReason): string {
  switch (r.tag) {
    case 'NotZao':
      return 'not a zao client';
    case 'VersionMismatch':
      return `zao version mismatch: server ${r.server}, client ${r.client}`;
    case 'ProtocolMismatch':
      return `protocol mismatch: ${r.detail}`;
    case 'Unauthorized':
      return `unauthorized: ${r.detail}`;
    case 'ServerFull':
      return 'server full';
    case 'DatagramsTooSmall':
      return `the client takes datagrams of ${r.max} bytes, the server needs ${r.required}`;
    case 'AlreadyConnected':
      return 'this identity is connected already';
    case 'AuthUnavailable':
      return `authentication unavailable: ${r.detail}`;
    case 'TooManyFromAddress':
      return `${r.max} clients are connected from this address already`;
    case 'Draining':
      return 'the server admits no new clients (draining)';
    case 'Busy':
      return 'the server is busy (too many handshakes pending)';
    case 'AddressValidationFailed':
      return 'address validation failed (the Retry answer was refused)';
  }
}

/**
 * Whether two zao versions can talk (§12.3): the first two parts decimal
 * integers as Rust's `u64::from_str` reads them; equal majors, and for
 * 0.x equal minors.
 */
export function versionsCompatible(a: string, b: string): boolean {
  const key = (v: string): [bigint, bigint] | null => {
    const parts = v.split('.');
    if (parts.length < 2) return null;
    const num = (p: string): bigint | null => {
      if (!/^\+?[0-9]+$/.test(p)) return null;
      const n = BigInt(p.replace('+', ''));
      return n < 2n ** 64n ? n : null;
    };
    const major = num(parts[0]!);
    const minor = num(parts[1]!);
    if (major === null || minor === null) return null;
    return major === 0n ? [0n, minor] : [major, 0n];
  };
  const ka = key(a);
  const kb = key(b);
  return ka !== null && kb !== null && ka[0] === kb[0] && ka[1] === kb[1];
}
