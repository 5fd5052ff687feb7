/**
 * The generator: the checked-in generated files are what it writes today
 * (so a change to it shows up as a diff), and the parameters of quantized
 * customs are found from their fingerprints.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generate } from '../src/codegen/generate.js';
import { findQuantParams, parseQuantParams } from '../src/codegen/quant-search.js';
import { parseProtocolJson, qangleFingerprint, qquatFingerprint, rangeFingerprint } from '../src/index.js';
import { kitchenJson } from '../scripts/kitchen.js';
import { assetText, pkgText } from './helpers.js';

test('src/generated/reference.ts is what zao-codegen writes for assets/conformance/protocol.json', () => {
  const schema = parseProtocolJson(assetText('conformance', 'protocol.json'));
  const text = generate(schema, { runtime: '../index.js', source: 'protocol.json' });
  assert.equal(text, pkgText('src', 'generated', 'reference.ts'), 'regenerate with `npm run codegen`');
});

test('test/fixtures/kitchen.json and test/generated/kitchen.ts are what the script and the generator write', () => {
  assert.equal(kitchenJson(), pkgText('test', 'fixtures', 'kitchen.json'), 'regenerate with `npm run fixtures`');
  const schema = parseProtocolJson(kitchenJson());
  const text = generate(schema, { runtime: '../../src/index.js', source: 'kitchen.json' });
  assert.equal(text, pkgText('test', 'generated', 'kitchen.ts'), 'regenerate with `npm run codegen`');
});

test('quantized parameters are found from the fingerprint (the JSON does not carry them)', () => {
  assert.deepEqual(findQuantParams('QAngle', 2, qangleFingerprint(12)), { kind: 'qangle', bits: 12 });
  assert.deepEqual(findQuantParams('QQuat', 4, qquatFingerprint(9)), { kind: 'qquat', bits: 9 });
  assert.deepEqual(findQuantParams('QF32', 3, rangeFingerprint('qf32', -8000, 8000, 1000, 1)), { kind: 'qf32', min: -8000, max: 8000, perUnit: 1000 });
  assert.deepEqual(findQuantParams('QVector', 9, rangeFingerprint('qvector', -4096, 4096, 1000, 3)), { kind: 'qvector', n: 3, min: -4096, max: 4096, perUnit: 1000 });
  assert.deepEqual(findQuantParams('QVector', 5, rangeFingerprint('qvector', -4096, 4096, 100, 2)), { kind: 'qvector', n: 2, min: -4096, max: 4096, perUnit: 100 });
  assert.equal(findQuantParams('QF32', 3, 0x1234n), null);
  assert.deepEqual(parseQuantParams('qvector:3:-4096:4096:1000'), { kind: 'qvector', n: 3, min: -4096, max: 4096, perUnit: 1000 });
  assert.equal(parseQuantParams('qf32:1:2'), null);
});

test('a message known only by its fingerprint, or with an unknown custom shape, still generates', () => {
  const doc = JSON.parse(assetText('conformance', 'protocol.json')) as { messages: { shape: unknown }[] };
  doc.messages[0]!.shape = null;
  const text = generate(parseProtocolJson(JSON.stringify(doc)));
  assert.match(text, /PlayerMoved \(id 1\): known only by its fingerprint; no codec/);
  assert.match(text, /export const PlayerInput: \$MessageCodec<PlayerInput>/);
});
