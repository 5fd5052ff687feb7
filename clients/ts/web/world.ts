/**
 * The web demo's world, as the Rust server computes it
 * (`zao_messages::demo_world(tick, entities)`), and the check that an
 * applied delta snapshot holds exactly that world.
 *
 * Entity `i` (0-based) has key `i + 1` and, at tick `t`:
 *   x = ((37·i + t) mod 400) / 4 − 50   y = i mod 16   z = ((11·i + 2·t) mod 400) / 4 − 50   (metres)
 *   heading = ((i + t) mod 64) / 64 of a turn
 * Every value is exact in f32. The comparison is made on the wire's steps:
 * `Position` is a `QVec3<-4096, 4096, 1000>` (1 mm steps from −4096 m) and
 * `Heading` a `QAngle<12>` (4096 steps a turn, so `((i + t) mod 64) · 64`).
 */
import { angleFromRadians, dequantize, qrange, quantize, type QRange } from '../src/index.js';
import type { EntitySnapshot, EntityState } from './protocol.js';

/** `Position`'s range: `QVec3<-4096, 4096, 1000>`. */
export const POSITION: QRange = qrange(-4096, 4096, 1000);
/** `Heading`'s bits: `QAngle<12>`. */
export const HEADING_BITS = 12;

/** Entity `i`'s position at tick `t`, in metres. */
export function worldPosition(i: number, t: number): { x: number; y: number; z: number } {
  return {
    x: ((37 * i + t) % 400) / 4 - 50,
    y: i % 16,
    z: ((11 * i + 2 * t) % 400) / 4 - 50,
  };
}

/** Entity `i`'s heading at tick `t`, in radians (what the server quantizes). */
export function worldHeadingRadians(i: number, t: number): number {
  return (((i + t) % 64) / 64) * 2 * Math.PI;
}

/** Entity `i` (key `i + 1`) at tick `t`, as the codec holds it (steps). */
export function worldEntity(i: number, t: number): EntityState {
  const p = worldPosition(i, t);
  return {
    entity: i + 1,
    position: [quantize(POSITION, p.x), quantize(POSITION, p.y), quantize(POSITION, p.z)],
    heading: ((i + t) % 64) * 64,
  };
}

/** `demo_world(tick, entities)`. */
export function demoWorld(tick: number, entities: number): EntitySnapshot {
  return { tick, entities: Array.from({ length: entities }, (_, i) => worldEntity(i, tick)) };
}

/** The heading step the server's `QAngle::from_radians` gives (it must be `worldEntity`'s). */
export function headingStepFromRadians(i: number, t: number): number {
  return angleFromRadians(HEADING_BITS, worldHeadingRadians(i, t));
}

/** An entity's position in metres, from its steps. */
export function metres(e: EntityState): { x: number; y: number; z: number } {
  return { x: dequantize(POSITION, e.position[0]!), y: dequantize(POSITION, e.position[1]!), z: dequantize(POSITION, e.position[2]!) };
}

/**
 * The first item of a chunk of tick `tick` that is not the world's, as
 * text, or null when every item is exactly the world's. Keys are 1-based;
 * key 0 or a key past `entities` (when known) is a mismatch too.
 */
export function firstMismatch(tick: number, items: readonly EntityState[], entities: number | null): string | null {
  for (const item of items) {
    const i = item.entity - 1;
    if (i < 0 || (entities !== null && i >= entities)) return `tick ${tick}: key ${item.entity} outside 1..${entities ?? '?'}`;
    const want = worldEntity(i, tick);
    const p = item.position;
    const q = want.position;
    if (p.length !== 3 || p[0] !== q[0] || p[1] !== q[1] || p[2] !== q[2] || item.heading !== want.heading) {
      return `tick ${tick}: entity ${item.entity} is ${JSON.stringify({ position: p, heading: item.heading })}, the world has ${JSON.stringify({ position: q, heading: want.heading })}`;
    }
  }
  return null;
}

/** Counts the items of a chunk that are not the world's. */
export function countMismatches(tick: number, items: readonly EntityState[], entities: number | null): number {
  let n = 0;
  for (const item of items) if (firstMismatch(tick, [item], entities) !== null) n++;
  return n;
}
