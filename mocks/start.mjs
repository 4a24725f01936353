#!/usr/bin/env node
// `npm run mock` (add `-- --dynamic` for generated data): a Prism mock per API, for a frontend
// that is built before (or without) the server. Ports from MOCK_PORT_BASE (default 4010: account,
// connect, login, messaging in order); MOCK_HOST (default 127.0.0.1) to listen elsewhere.
// `--verbose` shows Prism's own log (every request, every validation message).
import { API_ORDER, MOCK_PORTS, portsFrom, startMocks } from './mocks.mjs';

const dynamic = process.argv.includes('--dynamic');
const verbose = process.argv.includes('--verbose');
const ports = process.env.MOCK_PORT_BASE ? portsFrom(process.env.MOCK_PORT_BASE) : MOCK_PORTS;
const host = process.env.MOCK_HOST ?? '127.0.0.1';

console.log(`Starting ${API_ORDER.length} Prism mocks (${dynamic ? 'dynamic data generated from the schemas' : 'the examples of the spec'})…`);
const mocks = await startMocks({ ports, host, dynamic, log: verbose ? (line) => process.stdout.write(line) : () => {} });
console.log(`
Prism mocks are up (documents: generated/<api>/openapi.3.1.yaml):`);
for (const [api, url] of Object.entries(mocks.urls)) console.log(`  ${api.padEnd(10)} ${url}`);
console.log(`
Pick an answer with the Prefer header (CORS is open: a browser app on any origin may call them):
  Prefer: code=404                    the 404 answer of that operation
  Prefer: example=<name>              a named example of the spec (the names are in the documents)
  Prefer: code=422, example=<name>    both
  Prefer: dynamic=true                generated data for this request${dynamic ? ' (already the default: --dynamic)' : ''}
  e.g. curl -H 'Prefer: code=404' ${mocks.urls.messaging}/api/contacts/ct_unknown
Requests are validated: one that breaks the contract answers 422 (or 401 without credentials).
Ctrl-C stops all of them.`);
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => mocks.stop().then(() => process.exit(0)));
