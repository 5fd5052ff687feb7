#!/usr/bin/env node
// zao-codegen: protocol JSON in, TypeScript out. The generator is written in
// TypeScript and built into dist/ (`npm run build`, run by `npm install`).
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
const cli = join(here, '..', 'dist', 'src', 'codegen', 'cli.js');
if (!existsSync(cli)) {
  process.stderr.write('zao-codegen: dist/ is missing; run `npm run build` in the zao-client package first\n');
  process.exit(2);
}
const { main } = await import(pathToFileURL(cli).href);
process.exit(main(process.argv.slice(2)));
