import { startChild } from './lib/child.js';
import { load } from './lib/load.js';
const full = await startChild<{ url: string; token: string; apiKey: string }>('full.ts');
const which = process.argv[2] ?? 'get';
const opts = which === 'get'
  ? { url: `${full.info.url}/api/account/me`, headers: { authorization: `Bearer ${full.info.token}` }, connections: 10, durationSec: 8 }
  : which === 'list'
  ? { url: `${full.info.url}/api/contacts?limit=20`, headers: { 'x-api-key': full.info.apiKey }, connections: 10, durationSec: 8 }
  : { url: `${full.info.url}/api/contacts`, method: 'POST' as const, headers: { 'content-type': 'application/json', 'x-api-key': full.info.apiKey }, body: (() => { let n = 20000000; return () => ({ contact_no: `+49151${n++}`, name: 'B' }); })(), connections: 10, durationSec: 8 };
if (which === 'list') { for (let i = 0; i < 300; i++) await fetch(`${full.info.url}/api/contacts`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': full.info.apiKey }, body: JSON.stringify({ contact_no: `+49152${10000000 + i}`, name: 'C' }) }); }
console.log(which, JSON.stringify(await load(opts)));
await full.stop();
