// The subject: our whole server as built (dist/: contract validation, auth, error handler,
// response serialisation) on a fresh store (embedded, or PostgreSQL when DATABASE_URL names a database of
// its own; with REDIS_URL, its limits in Redis), with a workspace to call as its owner and SEED_CONTACTS contacts for the list figure.
import { benchDataDir } from '../lib/data-dir.js';
import { fromDist } from './dist.js';
import { seedContacts } from './seed-contacts.js';

// Tracing when the bench asks for it (OTEL_* in this process's environment), before the app loads.
const { startTracing } = await fromDist<typeof import('#server/ops/tracing.js')>('server/ops/tracing.js');
await startTracing();
const { buildApp } = await fromDist<typeof import('#server/app.js')>('server/app.js');
const { loadConfig } = await fromDist<typeof import('#server/config.js')>('server/config.js');
const { newId } = await fromDist<typeof import('#server/lib/ids.js')>('server/lib/ids.js');

const app = await buildApp(
  loadConfig({
    PORT: '0',
    ...(process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : { DATA_DIR: benchDataDir('bench-full-') }),
    // The `_redis` figures: the limits in Redis, one round trip per request (bench/run.ts).
    ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
    LOG_LEVEL: 'silent',
    DEMO: 'false',
    RATE_LIMIT_PER_MINUTE: '1000000',
    AUTH_FAILURES_PER_IP: '1000000',
    // The operations settings a figure varies (metrics on, overload limits).
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => /^(METRICS_PORT|OVERLOAD_)/.test(name)) as [string, string][]),
  }),
);
const url = await app.listen({ port: 0, host: '127.0.0.1' });
const res = await app.inject({
  method: 'POST',
  url: '/api/account/workspaces',
  payload: { email: 'bench@bench.example', password: 'bench-password-123', name: 'Bench', workspace_name: 'Bench', workspace_slug: 'bench' },
});
if (res.statusCode !== 201) throw new Error(`seeding failed: ${res.statusCode} ${res.body}`);
const token = res.json().session.access_token;
const key = await app.inject({ method: 'POST', url: '/api/account/api-keys', headers: { authorization: `Bearer ${token}` }, payload: { name: 'bench' } });
if (key.statusCode !== 201) throw new Error(`key failed: ${key.statusCode} ${key.body}`);
await seedContacts(app.platform.store.db, res.json().workspace.id, Number(process.env.SEED_CONTACTS ?? 0), newId);
console.log(JSON.stringify({ url, token, apiKey: key.json().secret }));
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
