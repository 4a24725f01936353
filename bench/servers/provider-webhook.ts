// The provider-webhook benchmark's server: the limits as shipped (120 requests a minute per IP on
// public routes), PROVIDER_APP_SECRET from the environment, and a workspace with one sandbox
// number (printed). A line `count` on stdin prints `{"stored":n,"pending":p,"failed":f}`: the
// inbound messages stored, and the deliveries acknowledged but not yet processed (or kept as poison).
import { createInterface } from 'node:readline';
import { sql } from 'kysely';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { newId } from '#server/lib/ids.js';
import { createSandboxAccount } from '#server/providers/sandbox.js';
import { benchDataDir } from '../lib/data-dir.js';

const app = await buildApp(
  loadConfig({ ...process.env, PORT: '0', DATA_DIR: benchDataDir('bench-provider-'), LOG_LEVEL: 'silent', DEMO: 'false', RATE_LIMIT_IP_PER_MINUTE: '120' }),
);
const url = await app.listen({ port: 0, host: '127.0.0.1' });
const db = app.platform.store.db;
const workspaceId = newId('ws');
await db.insertInto('workspaces').values({ id: workspaceId, name: 'Bench', slug: 'bench-provider' }).execute();
const { numbers } = await createSandboxAccount(db, workspaceId, { name: 'Bench' });
console.log(JSON.stringify({ url, pid: process.pid, providerPnId: numbers[0].provider_phone_number_id, number: numbers[0].display_phone_number }));

createInterface({ input: process.stdin }).on('line', async (line) => {
  if (line !== 'count') return;
  // One statement, one snapshot: counted apart, a delivery processed between the two counts
  // would be in neither (its message not yet counted, its row already gone).
  const { rows } = await sql<{ stored: number; pending: number; failed: number }>`select
      (select count(*) from messages where workspace_id = ${workspaceId} and direction = 'inbound')::int as stored,
      (select count(*) from provider_deliveries where failed_at is null)::int as pending,
      (select count(*) from provider_deliveries where failed_at is not null)::int as failed`.execute(db);
  console.log(JSON.stringify(rows[0]));
});
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
