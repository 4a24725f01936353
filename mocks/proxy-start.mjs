#!/usr/bin/env node
// `npm run mock:proxy`: a Prism validating proxy per API in front of the running server
// (UPSTREAM_URL, default http://127.0.0.1:3000). Point the frontend at the proxies instead of the
// server: answers are the server's, and every request or response that breaks the contract is
// printed as one line and written to PROXY_REPORT (default .tmp/proxy-violations.json).
import { resolve } from 'node:path';
import { portsFrom } from './mocks.mjs';
import { PROXY_PORTS, startProxies } from './proxy.mjs';
import { formatViolation, summarise, writeReport } from './violations.mjs';

const upstream = process.env.UPSTREAM_URL ?? 'http://127.0.0.1:3000';
const report = resolve(process.env.PROXY_REPORT ?? '.tmp/proxy-violations.json');
const ports = process.env.PROXY_PORT_BASE ? portsFrom(process.env.PROXY_PORT_BASE) : PROXY_PORTS;
const verbose = process.argv.includes('--verbose');

const violations = [];
const proxies = await startProxies({
  upstream,
  ports,
  log: verbose ? (line) => process.stdout.write(line) : () => {},
  onViolation: (v) => {
    violations.push(v);
    console.log(formatViolation(v));
    writeReport(report, violations, { upstream });
  },
  onBypass: (b) => verbose && console.log(`not validated (${b.reason}): ${b.api} ${b.method} ${b.path}`),
});
writeReport(report, violations, { upstream });
console.log(`Validating proxies in front of ${upstream} (every violation is printed here and written to ${report}):`);
for (const [api, url] of Object.entries(proxies.urls)) console.log(`  ${api.padEnd(10)} ${url}`);
console.log('Ctrl-C stops them and prints the totals.');
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, async () => {
    await proxies.stop();
    const s = summarise(violations);
    console.log(`\n${s.response} response and ${s.request} request violation(s); report: ${report}`);
    process.exit(s.response ? 1 : 0);
  });
}
