#!/usr/bin/env node
// Gate: openapi-spec-validator (PyPI, pinned below, in the venv .tools/gates-spec-validator) over
// the eight documents generated/<api>/openapi.3.{0,1}.yaml. Any error fails the gate.
//
//   node scripts/gates/spec-validator.mjs
import { join } from 'node:path';
import { DOCUMENTS, run, venv } from './lib.mjs';

const PINS = ['openapi-spec-validator==0.9.0'];
const bin = venv('gates-spec-validator', PINS);
let errors = 0;
console.log(`== ${PINS.join(' ')}`);
for (const document of DOCUMENTS) {
  const res = run(join(bin, 'openapi-spec-validator'), ['--subschema-errors', 'all', document]);
  const ok = res.status === 0 && res.output.includes(`${document}: OK`);
  // The validator names each error "<file>: Validation Error: …" (it stops at the first).
  const count = ok ? 0 : Math.max(1, (res.output.match(/Validation Error/g) ?? []).length);
  errors += count;
  console.log(`${document.padEnd(38)} ${ok ? 'OK' : `${count} error(s)`}`);
  if (!ok) process.stderr.write(res.output);
}
if (errors) {
  console.error(`FAIL openapi-spec-validator: ${errors} error(s)`);
  process.exit(1);
}
console.log('openapi-spec-validator gate: 0 errors in 8 documents');
