#!/usr/bin/env node
// `npm run mock:examples -- <api> [filter]`: the example names a mock can answer with, per
// operation and status, for `Prefer: example=<name>` (filter: part of an operationId or path).
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { API_ORDER } from './mocks.mjs';

const [api, filter = ''] = process.argv.slice(2);
if (!API_ORDER.includes(api)) {
  console.error(`usage: npm run mock:examples -- <${API_ORDER.join('|')}> [operationId or path part]`);
  process.exit(2);
}
const doc = parse(readFileSync(new URL(`../generated/${api}/openapi.3.1.yaml`, import.meta.url), 'utf8'));
for (const [path, item] of Object.entries(doc.paths ?? {})) {
  for (const [method, op] of Object.entries(item)) {
    if (!op?.operationId || !`${op.operationId} ${path}`.toLowerCase().includes(filter.toLowerCase())) continue;
    console.log(`${method.toUpperCase()} ${path}  (${op.operationId})`);
    for (const [status, response] of Object.entries(op.responses ?? {})) {
      const names = Object.values(response.content ?? {}).flatMap((m) => Object.keys(m.examples ?? {}));
      if (names.length) console.log(`  ${status}: ${names.join(', ')}`);
    }
  }
}
