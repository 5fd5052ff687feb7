/**
 * Caps on what a decoder will believe (src/wire/limits.rs, docs/WIRE.md
 * §10). Every length prefix is checked against the bytes that remain and
 * against these limits before anything is allocated.
 */
export interface DecodeLimits {
  /** Longest whole input accepted by `decode`, in bytes (1 MiB). */
  readonly maxMessage: number;
  /** Most elements in one collection: `Vec`, map, slice (65 536). */
  readonly maxCollection: number;
  /** Longest string or byte string, in bytes (65 536). */
  readonly maxString: number;
  /** Deepest nesting of collections (`Vec`, maps) and boxes (32). */
  readonly maxDepth: number;
  /**
   * Most bytes of memory one decoded value may hold (8 MiB), charged before
   * allocating. The TypeScript decoder charges an estimate of the Rust
   * value's size (see SPEC-NOTES.md), which bounds amplification the same way.
   */
  readonly maxAlloc: number;
}

/** `DecodeLimits::DEFAULT`. */
export const DEFAULT_LIMITS: DecodeLimits = Object.freeze({
  maxMessage: 1 << 20,
  maxCollection: 1 << 16,
  maxString: 1 << 16,
  maxDepth: 32,
  maxAlloc: 8 << 20,
});

/**
 * `DecodeLimits::DANGEROUS_UNLIMITED`: no limit beyond the input itself.
 * For trusted input only. (Rust sets each field to its type's maximum; here
 * `Infinity`, so that even a `u64::MAX` claim is compared as Rust compares it.)
 */
export const DANGEROUS_UNLIMITED: DecodeLimits = Object.freeze({
  maxMessage: Infinity,
  maxCollection: Infinity,
  maxString: Infinity,
  maxDepth: Infinity,
  maxAlloc: Infinity,
});
