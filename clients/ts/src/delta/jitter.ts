/**
 * The jitter buffer (src/proto/delta/jitter.rs): snapshots ordered by tick,
 * rendered a measured delay behind their arrival so late ones still land
 * in time, and read back as pairs of states to interpolate between.
 *
 * Time: `now` is in milliseconds (any monotonic clock, `performance.now()`);
 * the server's tick `t` happens at `t × tickInterval` on its clock.
 */

export interface JitterConfig {
  /** The server's time from one tick to the next, in milliseconds. */
  readonly tickIntervalMs: number;
  /** Arrivals the delay is measured over (the newest ones). */
  readonly window: number;
  /** The share of arrivals the delay waits for. */
  readonly quantile: number;
  /** Added to the measured delay, in milliseconds. */
  readonly marginMs: number;
}

/** Defaults for a server ticking every `tickIntervalMs`: the 99th percentile of the last 256 arrivals, plus a millisecond. */
export function jitterConfig(tickIntervalMs: number): JitterConfig {
  return { tickIntervalMs, window: 256, quantile: 0.99, marginMs: 1 };
}

/** The defaults for a server ticking `hz` times a second; a rate that is not a positive number is taken as 60. */
export function jitterConfigFromHz(hz: number): JitterConfig {
  return jitterConfig(1000 / (Number.isFinite(hz) && hz > 0 ? hz : 60));
}

export interface JitterStats {
  chunksOnTime: number;
  chunksLate: number;
  ticksOnTime: number;
  ticksLate: number;
}

interface Frame<T> {
  items: T[];
  chunks: number;
  received: number;
  late: boolean;
}

/** One entity's states on either side of the render time. */
export interface Pair<T> {
  readonly key: number;
  readonly from: T;
  readonly to: T;
  readonly alpha: number;
}

/** The state to draw at one moment. */
export interface Sample<T> {
  /** The render time, in ticks (fractional). */
  readonly renderTick: number;
  /** The newest tick at or before the render time, and its items. */
  readonly from: { readonly tick: number; readonly items: readonly T[] } | null;
  /** The oldest tick after it. */
  readonly to: { readonly tick: number; readonly items: readonly T[] } | null;
  /** How far from `from` to `to`, 0 to 1. */
  readonly alpha: number;
}

/**
 * Every entity of either tick with its two states, by ascending key: one
 * only the earlier tick has holds still, one only the later has appears.
 */
export function pairs<T>(sample: Sample<T>, key: (item: T) => number): Pair<T>[] {
  const from = sample.from?.items ?? [];
  const to = sample.to?.items ?? [];
  const out: Pair<T>[] = [];
  let i = 0;
  let j = 0;
  while (i < from.length || j < to.length) {
    const a = from[i];
    const b = to[j];
    if (a !== undefined && b !== undefined && key(a) === key(b)) {
      out.push({ key: key(a), from: a, to: b, alpha: sample.alpha });
      i++;
      j++;
    } else if (a !== undefined && (b === undefined || key(a) < key(b))) {
      out.push({ key: key(a), from: a, to: a, alpha: 0 });
      i++;
    } else if (b !== undefined) {
      out.push({ key: key(b), from: b, to: b, alpha: 1 });
      j++;
    }
  }
  return out;
}

/** Every entity's state at the render time, by ascending key. */
export function interpolated<T>(sample: Sample<T>, codec: { key(item: T): number; interpolate(a: T, b: T, t: number): T }): T[] {
  return pairs(sample, (x) => codec.key(x)).map((p) => codec.interpolate(p.from, p.to, p.alpha));
}

export class JitterBuffer<T> {
  private readonly config: JitterConfig;
  private readonly key: (item: T) => number;
  private epoch: number | null = null;
  private readonly frames = new Map<number, Frame<T>>();
  /** The ticks of `frames`, ascending. */
  private ticks: number[] = [];
  private readonly offsets: number[] = [];
  private base = 0;
  private delaySec: number;
  private rttMs: number | null = null;
  private readonly counters: JitterStats = { chunksOnTime: 0, chunksLate: 0, ticksOnTime: 0, ticksLate: 0 };

  constructor(config: JitterConfig, key: (item: T) => number) {
    this.config = config;
    this.key = key;
    this.delaySec = (2 * config.tickIntervalMs) / 1000;
  }

  private dt(): number {
    return Math.max(this.config.tickIntervalMs / 1000, 1e-6);
  }

  /** Seconds since the epoch, which the first chunk sets. */
  private clock(now: number): number {
    if (this.epoch === null) this.epoch = now;
    return this.clockAt(now);
  }

  /** Seconds since the epoch at `now` (0 before the first chunk set it). */
  private clockAt(now: number): number {
    return this.epoch === null ? 0 : Math.max(0, now - this.epoch) / 1000;
  }

  private renderTime(now: number): number {
    return this.clockAt(now) - this.base - this.delaySec;
  }

  /**
   * Takes one applied chunk's items (in key order) of `tick`, one of
   * `chunks`, arrived at `now`. Returns whether it came in time.
   */
  insert(now: number, tick: number, chunks: number, items: T[]): boolean {
    const dt = this.dt();
    const first = this.offsets.length === 0;
    const render = this.renderTime(now);
    const needed = (tick - 1) * dt;
    const onTime = first || render <= needed;
    const offset = this.clock(now) - tick * dt;
    this.measure(offset, first);
    if (onTime) this.counters.chunksOnTime++;
    else this.counters.chunksLate++;
    const oldest = this.ticks[0];
    if (!onTime && oldest !== undefined && tick < oldest) {
      if (chunks === 1) this.counters.ticksLate++;
      return false;
    }
    let frame = this.frames.get(tick);
    if (frame === undefined) {
      frame = { items: [], chunks, received: 0, late: false };
      this.frames.set(tick, frame);
      this.ticks.push(tick);
      this.ticks.sort((a, b) => a - b);
    }
    frame.received++;
    frame.late ||= !onTime;
    const lastItem = frame.items[frame.items.length - 1];
    const sortedAfter = lastItem === undefined || items[0] === undefined || this.key(lastItem) < this.key(items[0]);
    frame.items.push(...items);
    if (!sortedAfter) frame.items.sort((a, b) => this.key(a) - this.key(b));
    if (frame.received === frame.chunks) {
      if (frame.late) this.counters.ticksLate++;
      else this.counters.ticksOnTime++;
    }
    this.prune(now);
    return onTime;
  }

  private measure(offset: number, first: boolean): void {
    this.offsets.push(offset);
    while (this.offsets.length > Math.max(this.config.window, 1)) this.offsets.shift();
    const sorted = [...this.offsets].sort((a, b) => a - b);
    const base = sorted[0] ?? offset;
    const q = Math.min(Math.max(this.config.quantile, 0), 1);
    const at = Math.round((sorted.length - 1) * q);
    const spread = (sorted[at] ?? base) - base;
    const dt = this.dt();
    const target = spread + dt + this.config.marginMs / 1000;
    this.base = base;
    if (first) {
      this.delaySec = Math.max(target, this.delaySec);
      return;
    }
    // The delay grows at once and shrinks by at most 5 % of a tick per arrival.
    this.delaySec = target > this.delaySec ? target : Math.max(this.delaySec - 0.05 * dt, target);
  }

  /** Drops ticks rendering has passed, keeping the one it is leaving. */
  private prune(now: number): void {
    const renderTick = Math.floor(this.renderTime(now) / this.dt());
    let before = 0;
    while (before < this.ticks.length && this.ticks[before]! <= renderTick) before++;
    if (before > 1) {
      for (const t of this.ticks.slice(0, before - 1)) this.frames.delete(t);
      this.ticks = this.ticks.slice(before - 1);
    }
  }

  /** The state to draw at `now`. */
  sample(now: number): Sample<T> {
    const renderTick = this.renderTime(now) / this.dt();
    let from: { tick: number; items: T[] } | null = null;
    let to: { tick: number; items: T[] } | null = null;
    for (const t of this.ticks) {
      if (t <= renderTick) from = { tick: t, items: this.frames.get(t)!.items };
      else if (to === null) to = { tick: t, items: this.frames.get(t)!.items };
    }
    let alpha = 0;
    if (from !== null && to !== null) alpha = Math.min(Math.max((renderTick - from.tick) / (to.tick - from.tick), 0), 1);
    else if (from === null && to !== null) alpha = 1;
    return { renderTick, from, to, alpha: Math.fround(alpha) };
  }

  /** The connection's round-trip time, for `latency()`. */
  setRtt(rttMs: number): void {
    this.rttMs = rttMs;
  }

  /** The render delay, in milliseconds. */
  delayMs(): number {
    return Math.max(this.delaySec, 0) * 1000;
  }

  /** How far behind the server entities are drawn: half the RTT plus the delay, in milliseconds. */
  latencyMs(): number {
    return (this.rttMs ?? 0) / 2 + this.delayMs();
  }

  get length(): number {
    return this.ticks.length;
  }

  stats(): Readonly<JitterStats> {
    return { ...this.counters };
  }
}
