/**
 * The delta and quantized conformance vectors (assets/conformance/delta.txt
 * and quantized.txt, written by the Rust tests/conformance.rs): this client
 * reproduces every byte and every decoded value.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DeltaReceiver,
  ackDatagram,
  angleFromRadians,
  angleToRadians,
  dequantize,
  fieldBytes,
  getQAngle,
  getQF32,
  getQQuat,
  getQVector,
  putQAngle,
  putQF32,
  putQQuat,
  putQVector,
  qquatFromXyzw,
  qquatToXyzw,
  qrange,
  quantize,
  splitDatagram,
  splitMessage,
  varintLen,
} from '../src/index.js';
import { EntitySnapshot, EntitySnapshotDelta } from '../web/protocol.js';
import { assetText, hex, toHex } from './helpers.js';

const F32 = new DataView(new ArrayBuffer(4));
function f32(bits: string): number {
  F32.setUint32(0, parseInt(bits, 16));
  return F32.getFloat32(0);
}
function bitsOf(v: number): string {
  F32.setFloat32(0, v);
  return F32.getUint32(0).toString(16).padStart(8, '0');
}
const plain = (b: Uint8Array): string => toHex(b).replace(/ /g, '');

function lines(name: string): string[][] {
  return assetText('conformance', name)
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => l.split(' '));
}

test('delta.txt: every datagram applies, each world is the one the server sent, each ack byte for byte', () => {
  const rx = new DeltaReceiver(EntitySnapshotDelta);
  let datagrams = 0;
  let worlds = 0;
  let complete = false;
  for (const [kind, value] of lines('delta.txt')) {
    const bytes = hex(value!);
    if (kind === 'datagram') {
      const parsed = splitDatagram(bytes);
      assert.equal(parsed.kind, 'delta');
      if (parsed.kind !== 'delta') continue;
      const message = bytes.subarray(parsed.message.start, parsed.message.end);
      const [id] = splitMessage(message, 0, message.length);
      assert.equal(id, EntitySnapshot.ID);
      const r = rx.handleChunk({ header: parsed.header, id, message, bodyStart: varintLen(id) });
      assert.ok(r.ok, `chunk ${parsed.header.chunk} of ${parsed.header.seq}: ${r.ok ? '' : r.error.message}`);
      if (r.ok) complete = r.applied.complete;
      datagrams++;
    } else if (kind === 'world') {
      assert.ok(complete, 'the snapshot is whole before its world line');
      const latest = rx.latest();
      assert.ok(latest !== null);
      const mine = new Uint8Array(EntitySnapshot.messageLen(latest.snapshot));
      EntitySnapshot.encodeMessage(latest.snapshot, mine, 0);
      assert.equal(plain(mine), value, `world ${worlds}`);
      worlds++;
    } else {
      assert.equal(kind, 'ack');
      assert.equal(plain(ackDatagram([rx.ack()])), value);
    }
  }
  assert.ok(worlds === 5 && datagrams > worlds, `${datagrams} datagrams, ${worlds} worlds`);
});

test('quantized.txt: every value quantizes to the same bytes and decodes to the same float bits', () => {
  let n = 0;
  for (const [kind, ...f] of lines('quantized.txt')) {
    const buf = new Uint8Array(32);
    switch (kind) {
      case 'qf32': {
        const [min, max, per, input, bytes, out] = f as [string, string, string, string, string, string];
        const range = qrange(Number(min), Number(max), Number(per));
        putQF32(range, buf, 0, quantize(range, f32(input)));
        const len = fieldBytes(range.bits);
        assert.equal(plain(buf.subarray(0, len)), bytes, `qf32 ${f.join(' ')}`);
        assert.equal(bitsOf(dequantize(range, getQF32(range, hex(bytes), 0))), out, `qf32 ${f.join(' ')}`);
        break;
      }
      case 'qvec3': {
        const [min, max, per, x, y, z, bytes, ox, oy, oz] = f as string[];
        const range = qrange(Number(min), Number(max), Number(per));
        putQVector(range, 3, buf, 0, [x!, y!, z!].map((c) => quantize(range, f32(c))));
        assert.equal(plain(buf.subarray(0, fieldBytes(3 * range.bits))), bytes, `qvec3 ${f.join(' ')}`);
        const back = getQVector(range, 3, hex(bytes!), 0).map((s) => bitsOf(dequantize(range, s)));
        assert.deepEqual(back, [ox, oy, oz], `qvec3 ${f.join(' ')}`);
        break;
      }
      case 'qangle': {
        const [b, input, bytes, out] = f as [string, string, string, string];
        const bits = Number(b);
        putQAngle(bits, buf, 0, angleFromRadians(bits, f32(input)));
        assert.equal(plain(buf.subarray(0, fieldBytes(bits))), bytes, `qangle ${f.join(' ')}`);
        assert.equal(bitsOf(angleToRadians(bits, getQAngle(bits, hex(bytes), 0))), out, `qangle ${f.join(' ')}`);
        break;
      }
      case 'qquat': {
        const [b, x, y, z, w, bytes, ...out] = f as string[];
        const bits = Number(b);
        putQQuat(bits, buf, 0, qquatFromXyzw(bits, [f32(x!), f32(y!), f32(z!), f32(w!)]));
        assert.equal(plain(buf.subarray(0, fieldBytes(2 + 3 * bits))), bytes, `qquat ${f.join(' ')}`);
        assert.deepEqual(qquatToXyzw(bits, getQQuat(bits, hex(bytes!), 0)).map(bitsOf), out, `qquat ${f.join(' ')}`);
        break;
      }
      default:
        assert.fail(`unknown line kind ${kind}`);
    }
    n++;
  }
  assert.ok(n > 100, `${n} vectors`);
});
