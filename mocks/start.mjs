#!/usr/bin/env node
// `npm run mock` (add `-- --dynamic` for generated data): a Prism mock per API, for a frontend
// that is built before (or without) the server. Ports from MOCK_PORT_BASE (default 4010: account,
// connect, login, messaging in order); MOCK_HOST (default 127.0.0.1) to listen elsewhere.
// `--verbose` shows Prism's own log (every request, every validation message).
import { banner } from './banner.mjs';
import { API_ORDER, MOCK_PORTS, portsFrom, startMocks } from './mocks.mjs';

const dynamic = process.argv.includes('--dynamic');
const verbose = process.argv.includes('--verbose');
const ports = process.env.MOCK_PORT_BASE ? portsFrom(process.env.MOCK_PORT_BASE) : MOCK_PORTS;
const host = process.env.MOCK_HOST ?? '127.0.0.1';

console.log(`Starting ${API_ORDER.length} Prism mocks (${dynamic ? 'dynamic data generated from the schemas' : 'the examples of the spec'})…`);
const mocks = await startMocks({ ports, host, dynamic, log: verbose ? (line) => process.stdout.write(line) : () => {} });
console.log(banner(mocks.urls, { dynamic }));
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => mocks.stop().then(() => process.exit(0)));
