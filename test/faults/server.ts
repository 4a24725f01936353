// A real server process for the fault tests: the app of server/server.ts with its signal
// handling, on DATABASE_URL, printing one JSON line `{"url":…,"pid":…}` when it listens
// (bench/lib/child.ts waits for it). With SEED=1 it also creates a workspace, a sandbox number and
// a Login app (its webhook to WEBHOOK_URL when set) and a Connect bearer, and prints their credentials.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { exitOnSignals } from '#server/shutdown.js';
import { createSandboxAccount } from '#server/providers/sandbox.js';
import { connectBearer } from '../support/connect.js';

const app = await buildApp(
  loadConfig({
    DATA_DIR: mkdtempSync(join(tmpdir(), 'faults-')),
    LOG_LEVEL: 'warn',
    DEMO: 'false',
    RATE_LIMIT_PER_MINUTE: '100000',
    RATE_LIMIT_IP_PER_MINUTE: '100000',
    AUTH_FAILURES_PER_IP: '100000',
    ...process.env,
    PORT: '0',
  }),
);
exitOnSignals(app);
// LISTEN_PORT: a port of its own that a restart takes again (the fleet test's HAProxy names it).
const url = await app.listen({ port: Number(process.env.LISTEN_PORT ?? 0), host: '127.0.0.1' });
let seed: Record<string, unknown> = {};
if (process.env.SEED === '1') {
  const created = await app.inject({
    method: 'POST',
    url: '/api/account/workspaces',
    payload: { email: 'faults@faults.example', password: 'faults-password-123', name: 'Faults', workspace_name: 'Faults', workspace_slug: 'faults' },
  });
  if (created.statusCode !== 201) throw new Error(`seeding failed: ${created.body}`);
  const { workspace, session } = created.json();
  await app.platform.store.db.updateTable('workspaces').set({ login_session_cap: 10_000_000 }).where('id', '=', workspace.id).execute();
  const { numbers } = await createSandboxAccount(app.platform.store.db, workspace.id, { name: 'Faults' });
  const hook = process.env.WEBHOOK_URL;
  const appRes = await app.inject({
    method: 'POST',
    url: '/api/login/apps',
    headers: { authorization: `Bearer ${session.access_token}` },
    payload: {
      name: 'Faults',
      use_service_phone: false,
      phone_number_id: numbers[0].id,
      ...(hook ? { webhook_destination: 'production', production_webhook_url: hook } : { webhook_destination: 'none' }),
    },
  });
  if (appRes.statusCode !== 201) throw new Error(`login app failed: ${appRes.statusCode} ${appRes.body}`);
  seed = {
    owner: `Bearer ${session.access_token}`,
    connect: `Bearer ${await connectBearer(app, workspace.id)}`,
    appId: appRes.json().id,
    apiKey: appRes.json().api_key,
    providerPhoneNumberId: numbers[0].provider_phone_number_id,
    displayPhoneNumber: numbers[0].display_phone_number,
  };
}
console.log(JSON.stringify({ url, pid: process.pid, ...seed }));
