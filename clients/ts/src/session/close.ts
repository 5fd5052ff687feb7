/**
 * How connections end (docs/WIRE.md §12.9, src/proto/close.rs): close
 * codes with reasons, disconnect reasons, send errors.
 */
import { MIN_UP_DATAGRAM } from './datagram.js';
import { refuseReasonText, type RefuseReason } from './handshake.js';

/** zao's application close codes, carried in the transport's close frame. */
export const CloseCode = Object.freeze({
  /** 0: a deliberate, ordinary close. */
  Normal: 0,
  /** 1: the handshake was refused; the reason travelled on the control stream. */
  Refused: 1,
  /** 2: the peer broke the wire rules. */
  ProtocolViolation: 2,
  /** 3: the handshake did not finish within its deadline. */
  HandshakeTimeout: 3,
  /** 4: the server disconnected the client on purpose. */
  Kicked: 4,
  /** 5: the peer could not keep up with a reliable broadcast. */
  TooSlow: 5,
  /** 6: over the receive rate. */
  Flooding: 6,
  /** 7: nothing, not even a heartbeat, within the silence timeout. */
  Silent: 7,
  /** 8: the same identity connected again and replaced this connection. */
  Replaced: 8,
});

export type CloseCodeName = keyof typeof CloseCode;

/** The name of a close code, or `code N` for one this version does not know. */
export function closeCodeName(code: number): string {
  for (const [name, value] of Object.entries(CloseCode)) if (value === code) return name;
  return `code ${code}`;
}

/** Why a connection ended (or never started). */
export type DisconnectReason =
  /** Closed deliberately, with the closer's code and reason. */
  | { readonly kind: 'Closed'; readonly by: 'Local' | 'Peer'; readonly code: number; readonly reason: string }
  /** The server refused the handshake. */
  | { readonly kind: 'Refused'; readonly reason: RefuseReason }
  /** The handshake did not finish within its deadline. */
  | { readonly kind: 'HandshakeTimedOut' }
  /** The transport sends no datagrams, or smaller ones than `MIN_UP_DATAGRAM`. */
  | { readonly kind: 'DatagramsUnsupported'; readonly max: number | null }
  /** The transport failed (WebTransport/QUIC/TLS: a certificate hash mismatch, a reset, a timeout). */
  | { readonly kind: 'Transport'; readonly message: string };

export function disconnectText(r: DisconnectReason): string {
  switch (r.kind) {
    case 'Closed':
      return `closed ${r.by === 'Local' ? 'locally' : 'by the peer'} (${closeCodeName(r.code)}): ${r.reason}`;
    case 'Refused':
      return `refused: ${refuseReasonText(r.reason)}`;
    case 'HandshakeTimedOut':
      return 'the handshake timed out';
    case 'DatagramsUnsupported':
      return r.max === null ? 'the peer does not take datagrams' : `the transport sends datagrams of ${r.max} bytes, zao needs ${MIN_UP_DATAGRAM}`;
    case 'Transport':
      return `transport: ${r.message}`;
  }
}

/** Why a send failed (src/proto/close.rs `SendError`). */
export class SendError extends Error {
  readonly kind: 'NotConnected' | 'TooLarge' | 'NotRegistered' | 'QueueFull' | 'TooManyAcks';
  /** `TooLarge`: the message's size; `TooManyAcks`: the acks given. */
  readonly size: number | undefined;
  /** `TooLarge`, `TooManyAcks`: the limit. */
  readonly max: number | undefined;
  /** `NotRegistered`: the message id. */
  readonly id: number | undefined;

  constructor(kind: 'NotConnected' | 'TooLarge' | 'NotRegistered' | 'QueueFull' | 'TooManyAcks', detail?: { size?: number; max?: number; id?: number }) {
    super(
      kind === 'TooLarge'
        ? `message of ${detail?.size} bytes over the ${detail?.max}-byte limit`
        : kind === 'NotRegistered'
          ? `message id ${detail?.id} is not registered for this channel and side`
          : kind === 'QueueFull'
            ? 'reliable backlog full'
            : kind === 'TooManyAcks'
              ? `${detail?.size} snapshot acks, one datagram carries ${detail?.max}`
              : 'not connected',
    );
    this.name = 'SendError';
    this.kind = kind;
    this.size = detail?.size;
    this.max = detail?.max;
    this.id = detail?.id;
  }
}
