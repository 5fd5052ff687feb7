/**
 * Sequenced and snapshot chunks on receipt (docs/WIRE.md §12.6,
 * src/proto/snapshot.rs): per message id and chunk index, newest wins.
 */
import type { SnapshotHeader } from './datagram.js';

/** Most chunks one snapshot may be split into. */
export const MAX_CHUNKS = 4096;

export type SnapshotVerdict = 'Deliver' | 'Stale' | 'Duplicate';

interface Latest {
  chunks: number;
  newest: number;
  floor: number;
  delivered: number[];
}

/**
 * Per message id: the chunk count of the layout it follows, the newest
 * `seq` delivered under any layout, the floor (the newest when the layout
 * last changed) and per chunk index the `seq` last delivered there.
 */
export class SnapshotReceiver {
  private readonly latest = new Map<number, Latest>();

  handleChunk(id: number, header: SnapshotHeader): SnapshotVerdict {
    if (header.chunks > MAX_CHUNKS || header.chunk >= header.chunks) return 'Duplicate';
    let l = this.latest.get(id);
    if (l === undefined) {
      l = { chunks: 0, newest: 0, floor: 0, delivered: [] };
      this.latest.set(id, l);
    }
    if (header.chunks !== l.chunks) {
      if (l.delivered.length > 0 && header.seq <= l.newest) return 'Stale';
      l.floor = l.newest;
      l.chunks = header.chunks;
      l.delivered = new Array<number>(header.chunks).fill(0);
    }
    if (header.seq <= l.floor) return 'Stale';
    const at = l.delivered[header.chunk];
    if (at === undefined) return 'Duplicate';
    if (header.seq > at) {
      l.delivered[header.chunk] = header.seq;
      l.newest = Math.max(l.newest, header.seq);
      return 'Deliver';
    }
    return header.seq === at ? 'Duplicate' : 'Stale';
  }
}
