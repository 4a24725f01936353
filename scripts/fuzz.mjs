#!/usr/bin/env node
// `npm run fuzz` / `npm run fuzz:ci`: schemathesis (pinned, scripts/fuzz/requirements.txt, in the
// venv .tools/schemathesis) over every operation of generated/<api>/openapi.3.1.yaml against the
// real server (scripts/fuzz/server.ts) on a fresh embedded store in a temporary DATA_DIR, or on
// DATABASE_URL when set, with a seeded workspace: valid credentials for every security scheme
// and real ids for the path parameters. All checks on. Exits 1 on any failure.
//   --ci            bounded for CI (a few minutes on 2 cores); the default runs longer
//   --api=<name>    only one API (account, connect, login, messaging); repeatable
//   --examples=<n>  max examples per operation and phase (overrides the mode's default)
// docs/fuzzing.md lists the excluded operations and why.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { unframedLines } from './lib/ci-log.mjs';
import { labelProblems, parseExposition } from './lib/metrics-labels.mjs';
import { runOrExit } from './lib/tools.mjs';

const root = new URL('..', import.meta.url).pathname;
const venv = join(root, '.tools', 'schemathesis');
const st = join(venv, 'bin', 'st');
const requirements = join(root, 'scripts', 'fuzz', 'requirements.txt');
const args = process.argv.slice(2);
const ci = args.includes('--ci');
const only = args.filter((a) => a.startsWith('--api=')).map((a) => a.slice(6));
const examplesArg = args.find((a) => a.startsWith('--examples='));
const maxExamples = examplesArg ? Number(examplesArg.slice(11)) : ci ? 10 : 100;
const APIS = only.length ? only : ['account', 'connect', 'login', 'messaging'];

/** Operations that cannot be fuzzed meaningfully, with the reason (docs/fuzzing.md repeats them). */
const EXCLUDED = {
  createOidcToken:
    'its codes are single-use, live 60 s and exist only after a chat message on the sign-in page: every generated case is a refusal; its refusals are tested in test/security/o-oidc.test.ts (O4-O6), its answers by openid-client and Authlib (test/e2e/login-oidc, test/smoke/authlib)',
  deleteRegisteredClient:
    "deletes the client whose registration access token is the run's only credential for the RFC 7592 operations; tested in test/unit/connect/oauth/options.test.ts and test/security/o-oidc.test.ts (O9)",
  streamLoginSessionEvents:
    'a server-sent event stream that stays open until the session ends (minutes): every case would hit the request timeout; its refusals are tested in test/security/d-login.test.ts (D1)',
};

// ---- the pinned tool -------------------------------------------------------------------------
if (!existsSync(join(venv, 'bin', 'python'))) {
  console.log('creating the venv .tools/schemathesis');
  execFileSync(process.env.PYTHON ?? 'python3', ['-m', 'venv', venv], { stdio: 'inherit' });
}
const pins = readFileSync(requirements, 'utf8');
const stamp = join(venv, '.requirements');
if (!existsSync(st) || !existsSync(stamp) || readFileSync(stamp, 'utf8') !== pins) {
  runOrExit(join(venv, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', '-r', requirements], { cwd: root });
  writeFileSync(stamp, pins);
}

// ---- the server ------------------------------------------------------------------------------
const work = mkdtempSync(join(tmpdir(), 'fuzz-'));
const serverLog = join(work, 'server.log');
const tally = join(work, 'tally.log');
let tallyOffset = 0; // where the next API's lines start (printReach)
// Metrics on a port of their own: after the run, every label value must still be from a fixed set.
const metricsPort = await new Promise((resolve) => {
  const probe = createNetServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address();
    probe.close(() => resolve(port));
  });
});
const server = spawn(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'fuzz', 'server.ts')], {
  cwd: root,
  env: {
    ...process.env,
    METRICS_PORT: String(metricsPort),
    DATA_DIR: join(work, 'data'),
    FUZZ_TALLY: tally,
    FUZZ_REFUSALS: join(work, 'refusals.log'),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'error',
    // Rate limits are tested in test/security/k-rate-limits.test.ts; here they would turn most cases into 429.
    RATE_LIMIT_PER_MINUTE: '1000000',
    RATE_LIMIT_IP_PER_MINUTE: '1000000',
  },
  stdio: ['ignore', 'pipe', 'pipe'],
});
let logText = '';
server.stderr.on('data', (chunk) => {
  logText += chunk;
});
const stop = () => {
  if (server.exitCode === null) server.kill('SIGTERM');
};
process.on('exit', () => {
  stop();
  // The app logs to stdout: kept in the server log, all but the line with the credentials.
  writeFileSync(
    serverLog,
    `${logText}${out
      .split('\n')
      .filter((l) => !l.startsWith('FUZZ_READY '))
      .join('\n')}`,
  );
});
let out = '';
const seeded = await new Promise((resolve, reject) => {
  server.stdout.on('data', (chunk) => {
    out += chunk;
    const line = out.split('\n').find((l) => l.startsWith('FUZZ_READY '));
    if (line) resolve(JSON.parse(line.slice('FUZZ_READY '.length)));
  });
  server.once('exit', (code) => reject(new Error(`the fuzz server exited (${code}) before it was ready:\n${logText}`)));
}).catch((error) => {
  console.error(error.message);
  process.exit(1);
});
for (const line of logText.split('\n').filter((l) => l.startsWith('seed:'))) console.warn(line);

// ---- one schemathesis run per API ------------------------------------------------------------
/** The seeded id for a path parameter of an operation; undefined leaves it to schemathesis. */
function pathValue(api, path, method, name) {
  const { ids, spares } = seeded.workspaces[api];
  // Deletes get spares: deleting the seeded resource (schemathesis reuses the ids it saw in
  // answers) would turn every later case on it into a 404. Others run on generated ids.
  if (method === 'delete') return Object.entries(spares).find(([prefix]) => path.startsWith(prefix))?.[1];
  if (name === 'id') {
    const byPrefix = {
      '/api/chatbots/': ids.chatbotId,
      '/api/contacts/imports/': ids.importId, // before /api/contacts/: the first prefix that matches wins
      '/api/contacts/': ids.contactId,
      '/api/ecommerce-webhook/': ids.orderWebhookId,
      '/api/forms/': ids.formId,
    };
    return Object.entries(byPrefix).find(([prefix]) => path.startsWith(prefix))?.[1];
  }
  if (name === 'appId' && path.startsWith('/api/chatapp-auth/webhook/')) return ids.hostedAppId; // the app must have a hosted webhook
  if (name === 'appId' && path.startsWith('/login/oidc/')) return ids.oidcAppId; // an app with a registered callback and a sign-in
  if (name === 'clientId' && path.startsWith('/api/oauth/register/')) return ids.registeredClientId; // the client of the registration token
  // Account and Login: rotate on a key of its own, the code operations on code-mode sessions (seedAccountLogin).
  if (name === 'keyId' && path.endsWith('/rotate')) return ids.rotateKeyId;
  if (name === 'sessionId' && path.startsWith('/v1/auth/chatapp/resend/')) return ids.resendSessionId;
  if (name === 'sessionId' && path.startsWith('/v1/auth/chatapp/check/')) return ids.checkSessionId;
  if (name === 'wabaId' && path.endsWith('/webhooks/setup')) return ids.cloudWabaId; // a sandbox account needs no provider webhook
  if (name === 'endpointId' && api === 'messaging') return ids.messagingEndpointId;
  if (name === 'deliveryId' && api === 'messaging') return ids.messagingDeliveryId;
  if (name === 'deliveryId' && path.startsWith('/api/connect/client/')) return ids.clientDeliveryId;
  const byName = { waba_id: ids.wabaId, catalog_id: ids.catalogId };
  return byName[name] ?? ids[name];
}

const authFor = (api, cred = seeded.workspaces[api].credentials) =>
  ({
    account: { OwnerBearer: { bearer: cred.owner.slice(7) } },
    connect: {
      OwnerBearer: { bearer: cred.owner.slice(7) },
      ConnectOAuth: { bearer: cred.connect.slice(7) },
      OAuthClientBasic: { username: cred.clientId, password: cred.clientSecret },
      RegistrationInitialToken: { bearer: cred.initialToken },
      RegistrationAccessToken: { bearer: cred.registrationToken },
    },
    login: {
      OidcClientBasic: { username: cred.oidcAppId, password: cred.oidcSecret },
      OidcAccessToken: { bearer: cred.oidcAccessToken },
      OwnerBearer: { bearer: cred.owner.slice(7) },
      ApiKeyHeader: { api_key: cred.loginKey },
      SubscribeToken: { api_key: cred.subscribeToken },
    },
    messaging: {
      OwnerBearer: { bearer: cred.owner.slice(7) },
      ApiKeyHeader: { api_key: cred.messagingKey },
    },
  })[api];

/**
 * Operations that can revoke or delete the very credential of their run when the stateful phase
 * links them to a listing (the bearer's grant from GET /api/connect/grants, the Login app of the
 * key, the Basic client): no stateful phase for them. They still run in the other phases, on the
 * spares the seed made.
 */
const NOT_STATEFUL = [
  'revokeGrant',
  'deleteConnectClient',
  'rotateConnectClientSecret',
  'deleteLoginApp',
  'rotateLoginAppApiKey',
  'deleteConnection',
  'deleteRegisteredClient',
];

const toml = (value) => JSON.stringify(String(value));

function configFor(api, doc) {
  const lines = [
    `base-url = ${toml(seeded.url)}`,
    'request-timeout = 20',
    '',
    // A body over the server's size limit (1 MB of JSON) is refused before it is validated: 413,
    // documented where generated bodies reach it, is a rejection of invalid data too.
    '[checks.negative_data_rejection]',
    `expected-statuses = ${JSON.stringify(['400', '401', '403', '404', '405', '406', '409', '413', '415', '422', '428', '429', '5xx'])}`,
    '',
  ];
  for (const [scheme, values] of Object.entries(authFor(api))) {
    if (!doc.components?.securitySchemes?.[scheme]) continue;
    const set = Object.entries(values).filter(([, v]) => v !== undefined);
    if (!set.length) continue;
    lines.push(`[auth.openapi.${scheme}]`, ...set.map(([k, v]) => `${k} = ${toml(v)}`), '');
  }
  for (const [path, item] of Object.entries(doc.paths)) {
    const shared = item.parameters ?? [];
    for (const [method, op] of Object.entries(item)) {
      if (!op?.operationId) continue;
      const params = [...shared, ...(op.parameters ?? [])].filter((p) => p.in === 'path');
      const set = params.map((p) => [p.name, pathValue(api, path, method, p.name)]).filter(([, v]) => v);
      const stateless = NOT_STATEFUL.includes(op.operationId);
      if (!set.length && !stateless) continue;
      lines.push('[[operations]]', `include-operation-id = ${toml(op.operationId)}`);
      if (set.length) lines.push(`parameters = { ${set.map(([k, v]) => `${toml(`path.${k}`)} = ${toml(v)}`).join(', ')} }`);
      if (stateless) lines.push('phases = { stateful = { enabled = false } }');
      lines.push('');
    }
  }
  return lines.join('\n');
}

const results = [];
for (const api of APIS) {
  const document = join(root, 'generated', api, 'openapi.3.1.yaml');
  const doc = parse(readFileSync(document, 'utf8'));
  const config = join(work, `${api}.toml`);
  writeFileSync(config, configFor(api, doc));
  const report = join(work, `${api}.ndjson`);
  const excluded = Object.keys(EXCLUDED).filter((id) => Object.values(doc.paths).some((item) => Object.values(item).some((op) => op?.operationId === id)));
  const stArgs = [
    '--config-file',
    config,
    'run',
    document,
    '--checks',
    'all',
    // Replaced by positive_data_refused_for_a_reason (scripts/fuzz/hooks.py; docs/fuzzing.md says why).
    '--exclude-checks',
    'positive_data_acceptance',
    '--max-examples',
    String(maxExamples),
    '--seed',
    process.env.FUZZ_SEED ?? '20261123',
    '--workers',
    '1', // more workers trip a thread-safety bug of CPython 3.11's ast in hypothesis ("AST constructor recursion depth mismatch")
    '--continue-on-failure',
    '--report-ndjson-path',
    report,
    '--no-color',
    ...excluded.flatMap((id) => ['--exclude-operation-id', id]),
  ];
  console.log(`\n== ${api}: st ${stArgs.join(' ')}`);
  const started = Date.now();
  let output = '';
  const code = await new Promise((resolve) => {
    // cwd: the temporary directory, where schemathesis keeps its example database (.schemathesis/).
    const child = spawn(st, stArgs, {
      cwd: work,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: {
        ...process.env,
        SCHEMATHESIS_HOOKS: join(root, 'scripts', 'fuzz', 'hooks.py'),
        FUZZ_FIELDS: JSON.stringify(seeded.workspaces[api].fields),
        // The owner's email and password, the Login code and hosted-webhook secret (hooks.py's Account and Login block).
        FUZZ_ACCOUNT_LOGIN: JSON.stringify(seeded.workspaces[api].accountLogin),
        FUZZ_CONNECT: JSON.stringify(api === 'connect' ? seeded.workspaces[api].connect : {}),
        FUZZ_SIGNING: JSON.stringify(seeded.workspaces[api].signing),
      },
    });
    const echo = unframedLines();
    child.stdout.on('data', (chunk) => {
      output += chunk;
      echo.write(chunk);
    });
    child.on('exit', (c) => {
      echo.end();
      resolve(c ?? 1);
    });
  });
  results.push({ api, code, seconds: Math.round((Date.now() - started) / 1000), ...summarise(output), excluded: excluded.length });
  printReach(api, doc);
}

/**
 * Per operation, the share of the fuzzer's requests the server answered 2xx (from the server's
 * tally, scripts/fuzz/server.ts): how much of the run got past validation to the handler.
 */
function printReach(api, doc) {
  const text = existsSync(tally) ? readFileSync(tally, 'utf8') : '';
  const lines = text.slice(tallyOffset).split('\n').filter(Boolean);
  tallyOffset = text.length;
  const routes = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([, op]) => op?.operationId)
      .map(([method, op]) => ({ method: method.toUpperCase(), id: op.operationId, re: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`) })),
  );
  const counts = new Map(routes.map((r) => [r.id, { total: 0, ok: 0 }]));
  for (const line of lines) {
    const [method, path, status] = line.split(' ');
    const route = routes.find((r) => r.method === method && r.re.test(path));
    if (!route) continue;
    const c = counts.get(route.id);
    c.total++;
    if (status.startsWith('2')) c.ok++;
  }
  const rows = [...counts].sort(([, a], [, b]) => a.ok / (a.total || 1) - b.ok / (b.total || 1));
  console.log(`\n${api}: share of requests answered 2xx, per operation (lowest first)`);
  for (const [id, { total, ok }] of rows)
    console.log(`  ${String(total ? Math.round((100 * ok) / total) : 0).padStart(3)}%  ${String(ok).padStart(5)}/${String(total).padEnd(5)}  ${id}`);
}

/** Operations tested, cases generated and failures, from schemathesis's summary. */
function summarise(text) {
  const number = (re) => Number(re.exec(text)?.[1] ?? 0);
  return {
    operations: number(/^\s*Tested: (\d+)/m),
    cases: number(/^\s*(\d+) generated/m),
    failures: number(/(\d+) unique failures?/m) + number(/(\d+) errors?[, ]/m),
    // schemathesis's closing warnings (missing auth, missing test data, validation mismatch, …), one line each
    warnings: ((text.split(/^\s*Warnings:\s*$/m)[1] ?? '').split(/\n\s*\n/)[0] ?? '')
      .split('\n')
      .filter((l) => l.includes('⚠️'))
      .map((l) => l.replace('⚠️', '').trim()),
  };
}

// Bounded cardinality after the fuzz run's traffic (scripts/lib/metrics-labels.mjs).
const scrape = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.text());
const series = parseExposition(scrape);
const operationIds = ['account', 'connect', 'login', 'messaging'].flatMap((api) =>
  Object.values(parse(readFileSync(join(root, 'generated', api, 'openapi.3.1.yaml'), 'utf8')).paths).flatMap((item) =>
    Object.values(item)
      .map((op) => op?.operationId)
      .filter(Boolean),
  ),
);
const labelIssues = labelProblems(series, operationIds);
const requestSeries = series.filter((s) => s.name === 'http_request_duration_seconds_count').length;
console.log(`\nmetrics after the run: ${series.length} series, ${requestSeries} request series, ${labelIssues.length} label values outside their fixed sets`);
for (const issue of labelIssues.slice(0, 20)) console.log(`  ${issue}`);
stop();
console.log('\nschemathesis summary (per API: operations tested, cases generated, failures and errors, exit code):');
for (const r of results)
  console.log(
    `  ${r.api.padEnd(10)} operations ${String(r.operations).padStart(3)}  cases ${String(r.cases).padStart(6)}  failures ${r.failures}  warnings ${r.warnings.length}  excluded ${r.excluded}  exit ${r.code}  ${r.seconds}s`,
  );
for (const r of results) for (const w of r.warnings) console.log(`  ${r.api.padEnd(10)} warning: ${w}`);
// A warning fails the run too: an operation whose generated data never gets past validation, or
// whose ids never resolve, is one the fuzzing does not reach, however clean its result looks.
const failed = results.filter((r) => r.code !== 0 || r.warnings.length);
console.log(`server log: ${serverLog}`);
if (labelIssues.length) {
  console.error('metrics: label values outside their fixed sets (server/ops/metrics.ts)');
  process.exit(1);
}
if (failed.length) {
  console.error(`schemathesis failed or warned on: ${failed.map((r) => r.api).join(', ')}`);
  process.exit(1);
}
rmSync(join(work, 'data'), { recursive: true, force: true });
