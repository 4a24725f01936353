// The webhook-delivery benchmark's server: a workspace with one Connect endpoint at RECEIVER_URL
// (printed with its signing secret). A line `emit <n>` on stdin enqueues n `link.opened` events
// in one transaction, as a burst of real events would, and prints `{"emitted":n}` once committed;
// the outbox workers then deliver them, signed, as in production.
import { createInterface } from 'node:readline';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { emitEvent } from '#server/apis/webhooks/emit.js';
import { newId } from '#server/lib/ids.js';
import { connectBearer } from '#test/support/connect.js';
import { benchDataDir } from '../lib/data-dir.js';

const app = await buildApp(
  loadConfig({ ...process.env, PORT: '0', DATA_DIR: benchDataDir('bench-webhooks-'), LOG_LEVEL: 'silent', DEMO: 'false', ALLOW_PRIVATE_URLS: 'true' }),
);
const url = await app.listen({ port: 0, host: '127.0.0.1' });
const workspaceId = newId('ws');
await app.platform.store.db.insertInto('workspaces').values({ id: workspaceId, name: 'Bench', slug: 'bench-webhooks' }).execute();
const endpoint = await app.inject({
  method: 'POST',
  url: '/api/connect/webhook-endpoints',
  headers: { authorization: `Bearer ${await connectBearer(app, workspaceId)}` },
  payload: { url: process.env.RECEIVER_URL, enabled_events: ['link.opened'] },
});
if (endpoint.statusCode !== 201) throw new Error(`endpoint failed: ${endpoint.statusCode} ${endpoint.body}`);
console.log(JSON.stringify({ url, pid: process.pid, secret: endpoint.json().secret }));

createInterface({ input: process.stdin }).on('line', async (line) => {
  const n = Number(/^emit (\d+)$/.exec(line)?.[1]);
  if (!n) return;
  await app.platform.store.db.transaction().execute(async (tx) => {
    for (let i = 0; i < n; i++) {
      await emitEvent(tx, {
        workspaceId,
        api: 'connect',
        type: 'link.opened',
        data: { link_id: `lnk_bench${i}`, document_id: 'doc_bench', opened_at: new Date().toISOString() },
      });
    }
  });
  console.log(JSON.stringify({ emitted: n }));
});
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
