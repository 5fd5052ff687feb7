/**
 * The protocol: channels, registered messages and the hash both sides
 * compare at connect time (docs/WIRE.md §12.3, §12.4; src/proto/protocol.rs).
 */
import { leaf, mixStr, mixU64 } from '../codec/shape.js';

/** How a channel delivers (§12.3 `ChannelKind`, tags 0–4). */
export type ChannelKind = 'ReliableOrdered' | 'ReliableUnordered' | 'Unreliable' | 'Sequenced' | 'Snapshot';

export const CHANNEL_KINDS: readonly ChannelKind[] = [
  'ReliableOrdered',
  'ReliableUnordered',
  'Unreliable',
  'Sequenced',
  'Snapshot',
];

/** Who sends a message type (§12.3 `Direction`, tags 0–2). */
export type Direction = 'ClientToServer' | 'ServerToClient' | 'Both';

export const DIRECTIONS: readonly Direction[] = ['ClientToServer', 'ServerToClient', 'Both'];

/** A channel as the protocol declares it. */
export interface ChannelDef {
  readonly name: string;
  readonly kind: ChannelKind;
  readonly priority: number;
}

/** One registered message type, as a Hello carries it. */
export interface ProtocolEntry {
  readonly id: number;
  readonly name: string;
  readonly fingerprint: bigint;
  /** The channel's index in the protocol's channel table. */
  readonly channel: number;
  readonly direction: Direction;
}

/** What a session needs of a protocol: its channel table, entries and hash. */
export interface ProtocolInfo {
  readonly hash: bigint;
  readonly channels: readonly ChannelDef[];
  /** Sorted by id. */
  readonly entries: readonly ProtocolEntry[];
}

/** The three channels every protocol starts with (index 0, 1, 2). */
export const DEFAULT_CHANNELS: readonly ChannelDef[] = Object.freeze([
  { name: 'reliable', kind: 'ReliableOrdered', priority: 0 },
  { name: 'unreliable', kind: 'Unreliable', priority: 0 },
  { name: 'snapshot', kind: 'Snapshot', priority: 0 },
]);

/** The reliable channel (index 0), the unreliable one (1) and the snapshot one (2). */
export const Channel = Object.freeze({ RELIABLE: 0, UNRELIABLE: 1, SNAPSHOT: 2 });

export function channelKindTag(kind: ChannelKind): number {
  return CHANNEL_KINDS.indexOf(kind);
}

export function directionTag(direction: Direction): number {
  return DIRECTIONS.indexOf(direction);
}

export function isReliable(kind: ChannelKind): boolean {
  return kind === 'ReliableOrdered' || kind === 'ReliableUnordered';
}

export function isSequenced(kind: ChannelKind): boolean {
  return kind === 'Sequenced' || kind === 'Snapshot';
}

/** Whether the server may send a message of this direction. */
export function serverSends(direction: Direction): boolean {
  return direction === 'ServerToClient' || direction === 'Both';
}

/** Whether a client may send a message of this direction. */
export function clientSends(direction: Direction): boolean {
  return direction === 'ClientToServer' || direction === 'Both';
}

/**
 * `Protocol::hash` (§12.4): the declared channels beyond the three
 * defaults, then every entry by ascending id.
 */
export function protocolHash(channels: readonly ChannelDef[], entries: readonly ProtocolEntry[]): bigint {
  let h = leaf('zao-protocol');
  for (let i = 3; i < channels.length; i++) {
    const c = channels[i]!;
    h = mixU64(h, BigInt(i));
    h = mixStr(h, c.name);
    h = mixU64(h, BigInt(channelKindTag(c.kind)));
    h = mixU64(h, BigInt(c.priority >>> 0));
  }
  const sorted = [...entries].sort((a, b) => a.id - b.id);
  for (const e of sorted) {
    h = mixU64(h, BigInt(e.id));
    h = mixU64(h, e.fingerprint);
    h = mixU64(h, (BigInt(e.channel) << 8n) | BigInt(directionTag(e.direction)));
  }
  return h;
}

/** A protocol from its channel table and entries, the hash computed. */
export function makeProtocol(channels: readonly ChannelDef[], entries: readonly ProtocolEntry[]): ProtocolInfo {
  const sorted = [...entries].sort((a, b) => a.id - b.id);
  return { hash: protocolHash(channels, sorted), channels, entries: sorted };
}
