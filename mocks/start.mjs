#!/usr/bin/env node
// `npm run mock` (add `-- --dynamic` for generated data): a Prism mock per API on fixed ports.
import { startMocks } from './mocks.mjs';

const dynamic = process.argv.includes('--dynamic');
const mocks = await startMocks({ dynamic, log: (line) => process.stdout.write(line) });
console.log('\nPrism mocks are up (Prefer: code=404 or Prefer: example=<name> picks a response):');
for (const [api, url] of Object.entries(mocks.urls)) console.log(`  ${api.padEnd(10)} ${url}`);
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => mocks.stop().then(() => process.exit(0)));
