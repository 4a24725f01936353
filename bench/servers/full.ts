// The subject: our whole server (contract validation, auth, error handler, response
// serialisation) on a fresh embedded store, with a workspace to call as its owner.
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { benchDataDir } from '../lib/data-dir.js';

const app = await buildApp(
  loadConfig({
    PORT: '0',
    DATA_DIR: benchDataDir('bench-full-'),
    LOG_LEVEL: 'silent',
    DEMO: 'false',
    RATE_LIMIT_PER_MINUTE: '1000000',
    AUTH_FAILURES_PER_IP: '1000000',
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
console.log(JSON.stringify({ url, token, apiKey: key.json().secret }));
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
