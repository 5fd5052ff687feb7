/**
 * `npm run bench [-- OUT.md] [--runs N] [--write-benchmarks [PATH]]`: the reference messages encoded into a reused
 * buffer and decoded, by the generated Zao codec, msgpackr (shared record
 * structures, a reused buffer), protobufjs (reflection codecs from
 * messages.proto, a reused Writer) and JSON (stringify into a reused buffer,
 * parse from bytes). Prints a markdown section (`## TypeScript codec
 * (Node)`), or writes it to OUT.md.
 *
 * Each time is the median ns/op of 11 batches of at least 50 ms, measured
 * after a warm-up, all in one process; with `--runs N` the whole bench runs
 * in N processes and each figure is the median of the N (`npm run
 * bench:write` runs 3 and writes the section into ../../BENCHMARKS.md
 * between `<!-- typescript:start -->` and `<!-- typescript:end -->`). Zao's wire sizes are asserted equal
 * to the Rust codec's (the golden files and docs/WIRE.md §11).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Packr, isNativeAccelerationEnabled } from 'msgpackr';
import protobuf from 'protobufjs';
import type { MessageCodec } from '../src/index.js';
import { replaceSection } from './markers.js';
import {
  Inventory,
  PlayerInput,
  PlayerMoved,
  SpawnEntity,
  WorldSnapshot,
  type ItemStack,
  type PlayerState,
} from '../src/generated/reference.js';

const here = dirname(fileURLToPath(import.meta.url));
const pkg = join(here, '..', '..');
const assets = join(pkg, '..', '..', 'assets');

// ---------------------------------------------------------------- values (zao_messages::samples)

const samples = {
  playerMoved: () => ({ entity: 7, position: { x: 1.5, y: -2.0, z: 3.25 } }),
  playerInput: () => ({ tick: 1000, buttons: 0x1 | 0x4, aim: { x: 0.5, y: -1.0 }, stance: 'Crouching' as const }),
  spawnEntity: () => ({ entity: 42, prefab: 3, position: { x: 10, y: 0, z: -4 }, rotation: { x: 0, y: 0, z: 0, w: 1 }, name: 'Goblin' }),
  worldSnapshot: (n: number) => ({
    tick: 500,
    players: Array.from({ length: n }, (_, i): PlayerState => ({ entity: 100 + i, position: { x: i, y: 0.5, z: -i } })),
  }),
  inventory: (n: number) => ({
    owner: 9,
    slots: new Map(
      Array.from({ length: n }, (_, i): [number, ItemStack] => [i, { item: 1000 + i, count: i + 1, durability: 100 - (i % 100), flags: i % 4 }]),
    ),
  }),
};

// ---------------------------------------------------------------- timing

let sink = 0;

/** Median ns/op over `batches` batches of at least `batchMs` each, after a warm-up. */
function measure(fn: () => number, batchMs = 50, batches = 11): number {
  const now = (): number => Number(process.hrtime.bigint()) / 1e6;
  // Warm up (lets the JIT optimise) and find a batch size.
  let n = 1;
  const warmEnd = now() + 200;
  while (now() < warmEnd) for (let i = 0; i < n; i++) sink += fn();
  for (;;) {
    const t0 = now();
    for (let i = 0; i < n; i++) sink += fn();
    const dt = now() - t0;
    if (dt >= batchMs) break;
    n = Math.ceil(n * Math.min(10, Math.max(2, (batchMs * 1.2) / Math.max(dt, 0.01))));
  }
  const times: number[] = [];
  for (let b = 0; b < batches; b++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) sink += fn();
    const t1 = process.hrtime.bigint();
    times.push(Number(t1 - t0) / n);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

// ---------------------------------------------------------------- libraries

interface Row {
  lib: string;
  bytes: number;
  encode: number;
  decode: number;
  note?: string;
}

function assert(cond: boolean, what: string): void {
  if (!cond) throw new Error(`benchmark check failed: ${what}`);
}

function asObjects(_k: string, v: unknown): unknown {
  return v instanceof Map ? Object.fromEntries(v) : v;
}

function deepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(a, replacer) === JSON.stringify(b, replacer);
}

function replacer(_k: string, v: unknown): unknown {
  return v instanceof Map ? [...v.entries()] : v;
}

function zaoRows<T>(codec: MessageCodec<T>, value: T, expectedBytes: number): Row[] {
  const buf = new Uint8Array(codec.encodedLen(value) + 64);
  const n = codec.encode(value, buf, 0);
  assert(n === expectedBytes, `${codec.NAME}: zao writes ${n} bytes, the Rust codec ${expectedBytes}`);
  const bytes = buf.slice(0, n);
  assert(deepEqual(codec.decode(bytes), value), `${codec.NAME}: zao round trip`);
  const encode = measure(() => codec.encode(value, buf, 0));
  const decode = measure(() => {
    const v = codec.decode(bytes);
    return v === null ? 0 : 1;
  });
  let warm = codec.decode(bytes);
  const inPlace = measure(() => {
    warm = codec.decodeInPlace(warm, bytes);
    return 1;
  });
  return [
    { lib: 'zao', bytes: n, encode, decode },
    { lib: 'zao decodeInPlace', bytes: n, encode: NaN, decode: inPlace, note: 'decode into a warmed value' },
  ];
}

/**
 * msgpackr in three configurations, each op timed in each, the fastest
 * kept: shared record structures (the schema both ends know), records
 * without shared structures, and plain maps.
 */
function msgpackrRows(name: string, value: unknown, back: (v: unknown) => unknown): Row {
  const configs: [string, () => Packr][] = [
    ['shared structures', () => new Packr({ structures: [] })],
    ['records', () => new Packr()],
    ['plain maps', () => new Packr({ useRecords: false })],
  ];
  let best: Row | null = null;
  let encodeBy = '';
  let decodeBy = '';
  for (const [label, make] of configs) {
    const packr = make();
    const bytes = new Uint8Array(packr.pack(value));
    const decoded = back(packr.unpack(bytes));
    // Plain maps decode every map as an object.
    const comparable = label === 'plain maps' ? JSON.stringify(decoded, asObjects) : decoded;
    const expected = label === 'plain maps' ? JSON.stringify(value, asObjects) : value;
    assert(deepEqual(comparable, expected), `${name}: msgpackr (${label}) round trip`);
    // msgpackr wants 2 KiB of headroom past what it writes, or it allocates.
    const buf = new Uint8Array(bytes.length * 2 + 65536);
    const encodeReuse = measure(() => {
      packr.useBuffer(buf);
      return packr.pack(value).length;
    });
    const encodeOwn = measure(() => packr.pack(value).length);
    const encode = Math.min(encodeReuse, encodeOwn);
    const decode = measure(() => {
      const v = packr.unpack(bytes) as unknown;
      return v === null ? 0 : 1;
    });
    if (best === null || encode < best.encode) {
      encodeBy = `${label}${encodeReuse <= encodeOwn ? ', useBuffer' : ''}`;
    }
    if (best === null || decode < best.decode) decodeBy = label;
    best = {
      lib: 'msgpackr',
      bytes: best === null || label === 'shared structures' ? bytes.length : best.bytes,
      encode: best === null ? encode : Math.min(best.encode, encode),
      decode: best === null ? decode : Math.min(best.decode, decode),
    };
  }
  return { ...best!, note: `encode: ${encodeBy}; decode: ${decodeBy}` };
}

const proto = protobuf.parse(readFileSync(join(pkg, 'bench', 'messages.proto'), 'utf8')).root;

function protobufRow(typeName: string, value: object): Row {
  const T = proto.lookupType(`bench.${typeName}`);
  // A reused Writer slows protobufjs down by orders of magnitude (its
  // `finish()` does not reset it for reuse): a fresh one per encode.
  const bytes = T.encode(value).finish().slice();
  const back = T.toObject(T.decode(bytes), { defaults: true, enums: Number });
  assert(deepEqual(back, T.toObject(T.fromObject(value), { defaults: true, enums: Number })), `${typeName}: protobufjs round trip`);
  const encode = measure(() => T.encode(value).finish().length);
  const decode = measure(() => {
    const v = T.decode(bytes);
    return v === null ? 0 : 1;
  });
  return { lib: 'protobufjs', bytes: bytes.length, encode, decode };
}

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

function jsonRow(name: string, value: unknown): Row {
  const text = JSON.stringify(value);
  const bytes = textEncoder.encode(text);
  assert(deepEqual(JSON.parse(textDecoder.decode(bytes)), JSON.parse(text)), `${name}: JSON round trip`);
  const buf = new Uint8Array(bytes.length * 3 + 64);
  const encode = measure(() => textEncoder.encodeInto(JSON.stringify(value), buf).written);
  const decode = measure(() => {
    const v = JSON.parse(textDecoder.decode(bytes)) as unknown;
    return v === null ? 0 : 1;
  });
  return { lib: 'JSON', bytes: bytes.length, encode, decode };
}

// ---------------------------------------------------------------- cases

interface Case {
  name: string;
  rows: Row[];
}

function golden(file: string): number {
  // A golden file is framed: one byte of id, then the body.
  return readFileSync(join(assets, 'golden', file)).length - 1;
}

function cases(only: string | null): Case[] {
  const out: Case[] = [];
  const add = (name: string, make: () => Row[]): void => {
    if (only !== null && !name.toLowerCase().includes(only.toLowerCase())) return;
    process.stderr.write(`bench: ${name}\n`);
    out.push({ name, rows: make() });
  };
  const id = (v: unknown): unknown => v;
  add('PlayerMoved', () => {
    const v = samples.playerMoved();
    return [...zaoRows(PlayerMoved, v, golden('player_moved.bin')), msgpackrRows('PlayerMoved', v, id), protobufRow('PlayerMoved', v), jsonRow('PlayerMoved', v)];
  });
  add('PlayerInput', () => {
    const v = samples.playerInput();
    const pb = { ...v, stance: 1 };
    return [...zaoRows(PlayerInput, v, golden('player_input.bin')), msgpackrRows('PlayerInput', v, id), protobufRow('PlayerInput', pb), jsonRow('PlayerInput', v)];
  });
  add('SpawnEntity', () => {
    const v = samples.spawnEntity();
    return [...zaoRows(SpawnEntity, v, golden('spawn_entity.bin')), msgpackrRows('SpawnEntity', v, id), protobufRow('SpawnEntity', v), jsonRow('SpawnEntity', v)];
  });
  // The golden file's 3 players pin the layout: 4 + 4 + 16·n.
  assert(golden('world_snapshot.bin') === 4 + 4 + 16 * 3, 'world_snapshot.bin is 4 + 4 + 16·3 bytes');
  assert(golden('inventory.bin') === 4 + 1 + 13 * 3, 'inventory.bin is 4 + 1 + 13·3 bytes');
  for (const n of [32, 1024]) {
    add(`WorldSnapshot(${n})`, () => {
      const v = samples.worldSnapshot(n);
      // 520 and 16 392 bytes in the Rust benchmark (BENCHMARKS.md, docs/WIRE.md §11).
      return [...zaoRows(WorldSnapshot, v, 4 + 4 + 16 * n), msgpackrRows(`WorldSnapshot(${n})`, v, id), protobufRow('WorldSnapshot', v), jsonRow(`WorldSnapshot(${n})`, v)];
    });
  }
  add('Inventory(128)', () => {
    const v = samples.inventory(128);
    // 1 670 bytes in the Rust benchmark: 4 + varint(128) + 13·128.
    const asObject = { owner: v.owner, slots: Object.fromEntries(v.slots) };
    return [...zaoRows(Inventory, v, 4 + 2 + 13 * 128), msgpackrRows('Inventory(128)', v, id), protobufRow('Inventory', asObject), jsonRow('Inventory(128)', asObject)];
  });
  return out;
}

function fmt(ns: number): string {
  if (Number.isNaN(ns)) return '–';
  if (ns >= 10000) return ns.toFixed(0);
  if (ns >= 100) return ns.toFixed(1);
  return ns.toFixed(2);
}

function version(name: string): string {
  try {
    return (JSON.parse(readFileSync(join(pkg, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '?';
  }
}

function report(all: Case[], runs: number): string {
  const lines: string[] = [];
  lines.push('## TypeScript codec (Node)');
  lines.push('');
  const how = runs > 1 ? `${runs} runs in separate processes, \`npm run bench:write\`` : 'one process, `npm run bench`';
  lines.push(
    `Run on ${new Date().toISOString().slice(0, 10)} with Node ${process.version} (V8 ${process.versions.v8}) on ${cpus()[0]?.model ?? 'unknown CPU'}, ${how} in \`clients/ts\`; ` +
      `msgpackr ${version('msgpackr')} (native string acceleration ${isNativeAccelerationEnabled ? 'on' : 'off'}), protobufjs ${version('protobufjs')}. ` +
      'Times are ns per operation, the median of 11 batches of at least 50 ms after a 200 ms warm-up' +
      (runs > 1 ? `, then the median of the ${runs} runs' figures` : '') +
      '; ratios are to Zao in the same column. ' +
      'Encode-reuse writes into a buffer allocated once (msgpackr: `useBuffer` or its own reused buffer, whichever was faster; protobufjs: a new `Writer` per encode, ' +
      'since reusing one made it orders of magnitude slower; JSON: `JSON.stringify` then `TextEncoder.encodeInto` a reused buffer). Decode builds a new value from bytes (msgpackr: each op timed with shared record ' +
      'structures, with records and with plain maps, the fastest kept; protobufjs reflection codecs from `bench/messages.proto`, the .proto of the Rust benchmark; JSON via `TextDecoder` and `JSON.parse`). ' +
      'Zao\'s wire bytes are asserted equal to the Rust codec\'s (golden files, docs/WIRE.md §11). msgpackr writes floats as float64 by default; protobufjs and JSON get the ' +
      'inventory\'s slots as an object keyed by slot, their natural form.',
  );
  const misses: string[] = [];
  for (const c of all) {
    lines.push('');
    lines.push(`### ${c.name}`);
    lines.push('');
    lines.push('| library | wire bytes | encode-reuse ns | ratio | decode ns | ratio |');
    lines.push('|---|--:|--:|--:|--:|--:|');
    const zao = c.rows.find((r) => r.lib === 'zao')!;
    for (const r of c.rows) {
      const re = Number.isNaN(r.encode) ? '–' : `${(r.encode / zao.encode).toFixed(2)}×`;
      const rd = `${(r.decode / zao.decode).toFixed(2)}×`;
      const name = r.lib === 'zao' ? '**zao**' : r.lib.startsWith('zao ') ? `*${r.lib}*` : r.lib;
      lines.push(`| ${name} | ${r.bytes} | ${fmt(r.encode)} | ${re} | ${fmt(r.decode)} | ${rd} |`);
    }
    const note = c.rows.find((r) => r.lib === 'msgpackr')?.note;
    if (note !== undefined) {
      lines.push('');
      lines.push(`msgpackr's best configuration here: ${note} (its wire bytes are those of shared structures).`);
    }
    const mp = c.rows.find((r) => r.lib === 'msgpackr')!;
    if (!(zao.encode < mp.encode)) misses.push(`${c.name} encode-reuse (${fmt(zao.encode)} vs msgpackr ${fmt(mp.encode)} ns)`);
    if (!(zao.decode < mp.decode)) misses.push(`${c.name} decode (${fmt(zao.decode)} vs msgpackr ${fmt(mp.decode)} ns)`);
  }
  lines.push('');
  lines.push(
    misses.length === 0
      ? 'Target (Zao faster than msgpackr on encode-reuse and on decode of every reference message, sizes equal to the Rust codec\'s): **holds** in this run.'
      : `Target (Zao faster than msgpackr on encode-reuse and on decode of every reference message): **misses** ${misses.join('; ')}.`,
  );
  lines.push('');
  return lines.join('\n');
}

const args = process.argv.slice(2);
const valueOf = (flag: string): string | null => {
  const at = args.indexOf(flag);
  const v = at >= 0 ? args[at + 1] : undefined;
  return v !== undefined && !v.startsWith('--') ? v : null;
};
const only = valueOf('--only');
const runs = Math.max(1, Math.floor(Number(valueOf('--runs') ?? '1')) || 1);
const writeBenchmarks = args.includes('--write-benchmarks') ? valueOf('--write-benchmarks') ?? join(pkg, '..', '..', 'BENCHMARKS.md') : null;
const consumed = new Set(['--only', '--runs', '--write-benchmarks'].map((f) => args.indexOf(f) + 1).filter((i) => i > 0 && args[i] !== undefined && !args[i]!.startsWith('--')));
const outFile = args.find((a, i) => !a.startsWith('--') && !consumed.has(i)) ?? null;

/** Each figure the median of the runs' (NaN where a run has none). */
function medianCases(runsOut: Case[][]): Case[] {
  const mid = (xs: number[]): number => {
    const v = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
    return v.length === 0 ? NaN : v.length % 2 === 1 ? v[v.length >> 1]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
  };
  return runsOut[0]!.map((c, ci) => ({
    name: c.name,
    rows: c.rows.map((r, ri) => {
      const all = runsOut.map((run) => run[ci]!.rows[ri]!);
      for (const x of all) assert(x.lib === r.lib && x.bytes === r.bytes, `runs agree on ${c.name} ${r.lib}`);
      return { ...r, encode: mid(all.map((x) => x.encode)), decode: mid(all.map((x) => x.decode)) };
    }),
  }));
}

if (args.includes('--json')) {
  // One run for a parent `--runs N`: NaN travels as null.
  process.stdout.write(JSON.stringify(cases(only)));
} else {
  const load = loadavg()[0] ?? 0;
  let all: Case[];
  if (runs > 1) {
    const results: Case[][] = [];
    for (let i = 0; i < runs; i++) {
      process.stderr.write(`bench: run ${i + 1} of ${runs}\n`);
      const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--json', ...(only !== null ? ['--only', only] : [])], {
        stdio: ['ignore', 'pipe', 'inherit'],
        maxBuffer: 64 << 20,
        encoding: 'utf8',
      });
      const parsed = JSON.parse(out) as Case[];
      for (const c of parsed) for (const r of c.rows) for (const k of ['encode', 'decode'] as const) if (r[k] === null) r[k] = NaN;
      results.push(parsed);
    }
    all = medianCases(results);
  } else {
    all = cases(only);
  }
  const text = report(all, runs).replace(/, (one process|\d+ runs in separate processes),/, (m) => `${m.slice(0, -1)} (load average ${load.toFixed(2)} on ${cpus().length} cores when it started),`);
  if (writeBenchmarks !== null) {
    let doc = '';
    try {
      doc = readFileSync(writeBenchmarks, 'utf8');
    } catch {
      // A new file.
    }
    writeFileSync(writeBenchmarks, replaceSection(doc, text));
    process.stderr.write(`bench: wrote the TypeScript section of ${writeBenchmarks}\n`);
  }
  if (outFile !== null) writeFileSync(outFile, text);
  else if (writeBenchmarks === null) process.stdout.write(text);
}
if (sink === 0.5) process.stderr.write('');
