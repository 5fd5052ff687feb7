/**
 * A snapshot's items as the delta codec sees them (src/proto/delta/table.rs):
 * keys ascending, each item's lanes in one row of a flat array.
 */
export class Table {
  keys: number[] = [];
  lanes: number[] = [];
  /** Lanes a row. */
  readonly width: number;

  constructor(width: number) {
    this.width = width;
  }

  get length(): number {
    return this.keys.length;
  }

  /** Row `i`'s lane `l`. */
  at(i: number, l: number): number {
    return this.lanes[i * this.width + l]!;
  }

  row(i: number): number[] {
    return this.lanes.slice(i * this.width, (i + 1) * this.width);
  }

  push(key: number, row: readonly number[]): void {
    this.keys.push(key);
    for (let l = 0; l < this.width; l++) this.lanes.push(row[l]!);
  }

  pushFrom(other: Table, i: number): void {
    this.keys.push(other.keys[i]!);
    const w = this.width;
    for (let l = 0; l < w; l++) this.lanes.push(other.lanes[i * w + l]!);
  }

  extend(other: Table): void {
    for (let i = 0; i < other.length; i++) this.pushFrom(other, i);
  }

  /** The rows whose keys are in `lo..hi` (`hi` null: no bound), as row indexes `[start, end)`. */
  range(lo: number, hi: number | null): [number, number] {
    const start = partition(this.keys, lo);
    const end = hi === null ? this.keys.length : partition(this.keys, hi);
    return [start, Math.max(end, start)];
  }

  rowsEqual(i: number, other: Table, j: number): boolean {
    const w = this.width;
    for (let l = 0; l < w; l++) if (this.lanes[i * w + l] !== other.lanes[j * w + l]) return false;
    return true;
  }
}

/** The first index whose key is not below `k`. */
function partition(keys: readonly number[], k: number): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid]! < k) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
