// The baseline: bare Fastify serving the same handler work (the same two queries on the same
// kind of store, the same JSON) with no contract validation, no auth and default serialisation.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { openStore } from '../../server/store/db.js';
import { ownerView, workspaceView } from '../../server/apis/account/workspaces.js';

const store = await openStore({ dataDir: mkdtempSync(join(tmpdir(), 'bench-bare-')) });
await store.db.insertInto('workspaces').values({ id: 'ws_bench00000001', name: 'Bench', slug: 'bench' }).execute();
await store.db
  .insertInto('owners')
  .values({ id: 'usr_bench0000001', workspace_id: 'ws_bench00000001', email: 'bench@bench.example', name: 'Bench', password_hash: 'x' })
  .execute();

const app = Fastify({ logger: false });
app.get('/api/account/me', async () => {
  const owner = await store.db.selectFrom('owners').selectAll().where('id', '=', 'usr_bench0000001').where('workspace_id', '=', 'ws_bench00000001').executeTakeFirstOrThrow();
  const workspace = await store.db.selectFrom('workspaces').selectAll().where('id', '=', 'ws_bench00000001').executeTakeFirstOrThrow();
  return { owner: ownerView(owner), workspace: workspaceView(workspace) };
});
const url = await app.listen({ port: 0, host: '127.0.0.1' });
console.log(JSON.stringify({ url, token: '' }));
process.once('SIGTERM', () => app.close().then(() => store.close()).then(() => process.exit(0)));
