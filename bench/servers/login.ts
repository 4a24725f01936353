// A server for the login benchmarks. With SEED=1 it also creates a workspace, a sandbox number
// and a Login app on it, and prints their credentials; a second instance (SEED unset) shares the
// same PostgreSQL database and SECRET_KEY and only listens.
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { createSandboxAccount } from '#server/providers/sandbox.js';
import { benchDataDir, removedOnExit } from '../lib/data-dir.js';

const app = await buildApp(
  loadConfig({
    ...process.env,
    PORT: '0',
    DATA_DIR: benchDataDir('bench-login-'),
    LOG_LEVEL: 'silent',
    DEMO: 'false',
    RATE_LIMIT_PER_MINUTE: '1000000',
    RATE_LIMIT_IP_PER_MINUTE: '1000000',
    AUTH_FAILURES_PER_IP: '1000000',
  }),
);
const url = await app.listen({ port: 0, host: '127.0.0.1' });
// SIGUSR2 collects garbage, so that the stream-memory figure compares live memory before and
// after the streams open instead of whatever earlier work left for the collector, and writes
// process.memoryUsage() to bench-memory-<pid>.json in the temporary directory (bench/lib/sse-memory.ts).
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const memoryFile = removedOnExit(join(tmpdir(), `bench-memory-${process.pid}.json`));
process.on('SIGUSR2', () => {
  gc();
  writeFileSync(memoryFile, JSON.stringify(process.memoryUsage()));
});
let seed: Record<string, unknown> = {};
if (process.env.SEED === '1') {
  const created = await app.inject({
    method: 'POST',
    url: '/api/account/workspaces',
    payload: { email: 'login@bench.example', password: 'bench-password-123', name: 'Bench', workspace_name: 'Bench', workspace_slug: 'bench-login' },
  });
  if (created.statusCode !== 201) throw new Error(`seeding failed: ${created.body}`);
  const { workspace, session } = created.json();
  await app.platform.store.db.updateTable('workspaces').set({ login_session_cap: 10_000_000 }).where('id', '=', workspace.id).execute();
  const { numbers } = await createSandboxAccount(app.platform.store.db, workspace.id, { name: 'Bench' });
  const appRes = await app.inject({
    method: 'POST',
    url: '/api/login/apps',
    headers: { authorization: `Bearer ${session.access_token}` },
    payload: { name: 'Bench', use_service_phone: false, phone_number_id: numbers[0].id, webhook_destination: 'none' },
  });
  if (appRes.statusCode !== 201) throw new Error(`login app failed: ${appRes.statusCode} ${appRes.body}`);
  seed = {
    apiKey: appRes.json().api_key,
    providerPhoneNumberId: numbers[0].provider_phone_number_id,
    displayPhoneNumber: numbers[0].display_phone_number,
  };
}
console.log(JSON.stringify({ url, pid: process.pid, ...seed }));
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
