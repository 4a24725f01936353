// The server of `npm run bench:scale`: the whole app on a database filled by `npm run seed:scale`
// (DATABASE_URL, sealed with SCALE_SECRET_KEY). It signs in as the seeded workspace's owner
// (SCALE_EMAIL), makes a Messaging key and a Connect bearer, and prints one JSON line when ready.
// Its Graph API points nowhere (the seeded number is a sandbox one): nothing leaves 127.0.0.1.
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { connectBearer } from '#test/support/connect.js';
import { SCALE_PASSWORD, SCALE_SECRET_KEY } from '../seed-scale.js';

const env = process.env;
const app = await buildApp(
  loadConfig({
    ...env,
    PORT: '0',
    SECRET_KEY: SCALE_SECRET_KEY,
    LOG_LEVEL: env.LOG_LEVEL ?? 'silent',
    DEMO: 'false',
    GRAPH_API_URL: 'http://127.0.0.1:9/',
    RATE_LIMIT_PER_MINUTE: '1000000',
    AUTH_FAILURES_PER_IP: '1000000',
    RATE_LIMIT_IP_PER_MINUTE: '1000000',
    CAMPAIGN_MAX_RECIPIENTS: env.CAMPAIGN_MAX_RECIPIENTS ?? '200000',
  }),
);
const url = await app.listen({ port: 0, host: '127.0.0.1' });
const session = await app.inject({ method: 'POST', url: '/api/account/sessions', payload: { email: env.SCALE_EMAIL, password: SCALE_PASSWORD } });
if (session.statusCode !== 201) throw new Error(`sign-in failed: ${session.statusCode} ${session.body}`);
const { access_token: token } = session.json();
const key = await app.inject({
  method: 'POST',
  url: '/api/account/api-keys',
  headers: { authorization: `Bearer ${token}` },
  payload: { name: `scale ${Date.now()}` },
});
if (key.statusCode !== 201) throw new Error(`key failed: ${key.statusCode} ${key.body}`);
const me = await app.inject({ method: 'GET', url: '/api/account/me', headers: { authorization: `Bearer ${token}` } });
const workspaceId = me.json().workspace?.id ?? me.json().workspaces?.[0]?.id;
const bearer = await connectBearer(app, workspaceId);
console.log(JSON.stringify({ url, pid: process.pid, key: key.json().secret, bearer }));
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
