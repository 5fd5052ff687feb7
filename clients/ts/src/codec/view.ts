/**
 * DataViews over caller buffers, cached: constructing a `DataView` costs
 * more than the few reads or writes of a small message, and encode-reuse
 * and decode loops meet the same buffer again and again.
 */
let lastBuf: Uint8Array | null = null;
let lastView: DataView | null = null;
let prevBuf: Uint8Array | null = null;
let prevView: DataView | null = null;

/** A little-endian view of `buf` (the same object while `buf` is). */
export function viewOf(buf: Uint8Array): DataView {
  // The length compare catches a view over a resizable buffer that grew.
  if (buf === lastBuf && lastView!.byteLength === buf.byteLength) return lastView!;
  if (buf === prevBuf && prevView!.byteLength === buf.byteLength) {
    // Two buffers in turn (an encode buffer and a decode input): swap.
    const b = lastBuf;
    const v = lastView;
    lastBuf = prevBuf;
    lastView = prevView;
    prevBuf = b;
    prevView = v;
    return lastView!;
  }
  prevBuf = lastBuf;
  prevView = lastView;
  lastBuf = buf;
  lastView = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  return lastView;
}
