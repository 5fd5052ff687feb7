/**
 * The two codec errors (src/wire/error.rs): encoding can only run out of
 * buffer; decoding can meet any hostile byte string and says which rule it
 * broke. Decoders never let another exception type escape: a `RangeError`
 * from a typed array or a `TypeError` from `TextDecoder` would be a bug.
 */

/** The only way encoding fails: the caller's buffer is too small. */
export class EncodeError extends Error {
  /** Bytes the value needs. */
  readonly needed: number;
  /** Bytes the buffer had left (from the offset given). */
  readonly available: number;

  constructor(needed: number, available: number) {
    super(`buffer too small: the value needs ${needed} bytes, ${available} are available`);
    this.name = 'EncodeError';
    this.needed = needed;
    this.available = available;
  }
}

/**
 * The rule a byte string broke: the variants of the Rust `DecodeError`
 * (docs/WIRE.md §1), by name.
 */
export type DecodeErrorKind =
  /** The input ended before the value did. */
  | 'UnexpectedEnd'
  /** A length or count prefix claims more bytes than remain in the input. */
  | 'LengthExceedsRemaining'
  /** A length, count or allocation total is over a `DecodeLimits` limit. */
  | 'OverLimit'
  /** The whole input is longer than `DecodeLimits.maxMessage`. */
  | 'MessageTooLarge'
  /** Nesting went deeper than `DecodeLimits.maxDepth`. */
  | 'DepthExceeded'
  /** A varint is longer than ten bytes or does not fit its target type. */
  | 'VarintOverflow'
  /** A varint uses more bytes than needed (for example `80 00` for 0). */
  | 'NonCanonicalVarint'
  /** A string is not valid UTF-8. */
  | 'InvalidUtf8'
  /** An enum, `bool` or `Option` tag has no matching variant. */
  | 'InvalidTag'
  /** A value breaks its type's invariant (a zero `NonZero*`, a surrogate `char`, a flag bit, a quantized step). */
  | 'InvalidValue'
  /** A map holds the same key twice, or a sorted map's keys are out of order. */
  | 'DuplicateKey'
  /** `decode` was given bytes after one whole value. */
  | 'TrailingBytes'
  /** A message id that this side does not know (`id` holds it). */
  | 'UnknownMessage'
  /** A message id other than the one the caller asked for (`expected`, `found`). */
  | 'UnexpectedMessage';

const MESSAGES: Record<DecodeErrorKind, string> = {
  UnexpectedEnd: 'input ended before the value did',
  LengthExceedsRemaining: 'a length prefix claims more bytes than remain',
  OverLimit: 'a length, count or allocation is over its limit',
  MessageTooLarge: 'message is longer than the message limit',
  DepthExceeded: 'nesting is deeper than the depth limit',
  VarintOverflow: 'varint does not fit its type',
  NonCanonicalVarint: 'varint is not in its shortest form',
  InvalidUtf8: 'string is not valid UTF-8',
  InvalidTag: 'tag matches no variant',
  InvalidValue: "value breaks its type's invariant",
  DuplicateKey: 'map key repeated or out of order',
  TrailingBytes: 'bytes remain after the value',
  UnknownMessage: 'unknown message id',
  UnexpectedMessage: 'unexpected message id',
};

/** Why bytes did not decode. `kind` names the rule, as the Rust enum does. */
export class DecodeError extends Error {
  readonly kind: DecodeErrorKind;
  /** `UnknownMessage`: the id on the wire. */
  readonly id: number | undefined;
  /** `UnexpectedMessage`: the id the caller asked for. */
  readonly expected: number | undefined;
  /** `UnexpectedMessage`: the id on the wire. */
  readonly found: number | undefined;

  constructor(kind: DecodeErrorKind, detail?: { id?: number; expected?: number; found?: number }) {
    let message = MESSAGES[kind];
    if (kind === 'UnknownMessage' && detail?.id !== undefined) {
      message = `unknown message id ${detail.id}`;
    } else if (kind === 'UnexpectedMessage' && detail !== undefined) {
      message = `expected message id ${detail.expected}, found ${detail.found}`;
    }
    super(message);
    this.name = 'DecodeError';
    this.kind = kind;
    this.id = detail?.id;
    this.expected = detail?.expected;
    this.found = detail?.found;
  }
}

/** Whether `e` is a `DecodeError` (of `kind`, if given). */
export function isDecodeError(e: unknown, kind?: DecodeErrorKind): e is DecodeError {
  return e instanceof DecodeError && (kind === undefined || e.kind === kind);
}

/** Throws a `DecodeError` of `kind`. Out of line, so hot paths stay small. */
export function fail(kind: DecodeErrorKind): never {
  throw new DecodeError(kind);
}
