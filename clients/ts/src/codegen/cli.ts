/**
 * `zao-codegen protocol.json [--runtime MODULE] [--quant 0xFP=SPEC]...
 * [--snapshot NAME:items=F,key=F,tick=F]... > protocol.ts`
 */
import { readFileSync } from 'node:fs';
import { parseProtocolJson, ProtocolJsonError } from '../codec/protocol-json.js';
import { generate, type SnapshotHint } from './generate.js';
import { parseQuantParams, type QuantParams } from './quant-search.js';

const USAGE = `usage: zao-codegen PROTOCOL.json [options] > protocol.ts

Reads a zao protocol document (docs/INSPECT.md §4, Protocol::to_json) and
writes a TypeScript module: a type and a codec for every message, the
protocol for the hello, decodeAny, and delta codecs for snapshot messages.

options:
  --runtime MODULE        import the runtime from MODULE (default: zao-client)
  --quant 0xFP=SPEC       parameters of a quantized custom type by fingerprint:
                          qf32:MIN:MAX:PER_UNIT, qvector:N:MIN:MAX:PER_UNIT,
                          qangle:B or qquat:B (the JSON does not carry them)
  --snapshot NAME:items=FIELD,key=FIELD,tick=FIELD
                          the delta layout of snapshot message NAME
  --source TEXT           the source named in the header comment (default: the file name)
`;

export function main(argv: readonly string[]): number {
  let file: string | null = null;
  let runtime = 'zao-client';
  let source: string | null = null;
  const quant = new Map<string, QuantParams>();
  const snapshots = new Map<string, SnapshotHint>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--help' || a === '-h') {
      process.stdout.write(USAGE);
      return 0;
    } else if (a === '--runtime') {
      runtime = next();
    } else if (a === '--source') {
      source = next();
    } else if (a === '--quant') {
      const [fp, spec] = next().split('=');
      const params = spec === undefined ? null : parseQuantParams(spec);
      if (fp === undefined || params === null) throw new Error(`bad --quant value`);
      quant.set('0x' + BigInt(fp).toString(16).padStart(16, '0'), params);
    } else if (a === '--snapshot') {
      const v = next();
      const colon = v.indexOf(':');
      const hint: { items?: string; key?: string; tick?: string } = {};
      for (const kv of v.slice(colon + 1).split(',')) {
        const [k, val] = kv.split('=');
        if ((k === 'items' || k === 'key' || k === 'tick') && val !== undefined) hint[k] = val;
      }
      snapshots.set(v.slice(0, colon), hint);
    } else if (file === null) {
      file = a;
    } else {
      throw new Error(`unexpected argument ${a}`);
    }
  }
  if (file === null) {
    process.stderr.write(USAGE);
    return 2;
  }
  try {
    const schema = parseProtocolJson(readFileSync(file, 'utf8'));
    const name = source ?? file.split('/').pop() ?? file;
    process.stdout.write(generate(schema, { runtime, source: name, quant, snapshots }));
    return 0;
  } catch (e) {
    if (e instanceof ProtocolJsonError) {
      process.stderr.write(`zao-codegen: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
}
