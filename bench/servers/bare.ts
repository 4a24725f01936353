// The baseline: bare Fastify serving the same handler work (the same queries on the same kind of
// store, the same JSON) with no contract validation, no auth and default serialisation:
// GET /api/account/me (owner and workspace), POST /api/contacts (duplicate check, insert) and
// GET /api/contacts?limit=N (the first page with its tags, newest first). The store is embedded,
// or PostgreSQL when DATABASE_URL names a database of its own.
import Fastify from 'fastify';
import { benchDataDir } from '../lib/data-dir.js';
import { fromDist } from './dist.js';
import { seedContacts } from './seed-contacts.js';

// The server's own store and views, compiled as the subject's are (./dist.ts).
const { openStore } = await fromDist<typeof import('#server/store/db.js')>('server/store/db.js');
const { ownerView, workspaceView } = await fromDist<typeof import('#server/apis/account/workspaces.js')>('server/apis/account/workspaces.js');
const { CONTACT_COLUMNS, TAG_NAMES, contactViews } = await fromDist<typeof import('#server/apis/messaging/contacts/views.js')>(
  'server/apis/messaging/contacts/views.js',
);
const { newId } = await fromDist<typeof import('#server/lib/ids.js')>('server/lib/ids.js');

const databaseUrl = process.env.DATABASE_URL;
const store = await openStore(databaseUrl ? { databaseUrl } : { dataDir: benchDataDir('bench-bare-') });
await store.db.insertInto('workspaces').values({ id: 'ws_bench00000001', name: 'Bench', slug: 'bench' }).execute();
await store.db
  .insertInto('owners')
  .values({ id: 'usr_bench0000001', workspace_id: 'ws_bench00000001', email: 'bench@bench.example', name: 'Bench', password_hash: 'x' })
  .execute();

await seedContacts(store.db, 'ws_bench00000001', Number(process.env.SEED_CONTACTS ?? 0), newId);

const app = Fastify({ logger: false });
app.get('/api/account/me', async () => {
  const owner = await store.db
    .selectFrom('owners')
    .selectAll()
    .where('id', '=', 'usr_bench0000001')
    .where('workspace_id', '=', 'ws_bench00000001')
    .executeTakeFirstOrThrow();
  const workspace = await store.db.selectFrom('workspaces').selectAll().where('id', '=', 'ws_bench00000001').executeTakeFirstOrThrow();
  return { owner: ownerView(owner), workspace: workspaceView(workspace) };
});
app.post('/api/contacts', async (request, reply) => {
  const body = request.body as { contact_no: string; name?: string };
  const taken = await store.db
    .selectFrom('contacts')
    .select('id')
    .where('workspace_id', '=', 'ws_bench00000001')
    .where('phone', '=', body.contact_no)
    .executeTakeFirst();
  if (taken) return reply.code(409).send({ title: 'taken' });
  const at = new Date();
  const row = await store.db
    .insertInto('contacts')
    .values({
      id: newId('ct'),
      workspace_id: 'ws_bench00000001',
      phone: body.contact_no,
      name: body.name ?? null,
      email: null,
      custom_fields: '{}',
      created_at: at,
      updated_at: at,
    })
    .returning(CONTACT_COLUMNS)
    .executeTakeFirstOrThrow();
  reply.code(201);
  return (await contactViews(store.db, [row], at, { tagless: true }))[0];
});
app.get('/api/contacts', async (request) => {
  const limit = Number((request.query as { limit?: string }).limit ?? 20);
  const rows = await store.db
    .selectFrom('contacts')
    .select([...CONTACT_COLUMNS.map((c) => `contacts.${c}` as const), 'contacts.created_at as sort_key', TAG_NAMES.as('tags')])
    .where('contacts.workspace_id', '=', 'ws_bench00000001')
    .orderBy('contacts.created_at', 'desc')
    .orderBy('contacts.id', 'desc')
    .limit(limit + 1)
    .execute();
  return { data: await contactViews(store.db, rows.slice(0, limit), new Date()), has_more: rows.length > limit };
});
const url = await app.listen({ port: 0, host: '127.0.0.1' });
// Credentials of the subject's shape, for a bare server profiled on its own (bench/profile.ts);
// the figures send the subject's own (bench/lib/http-figures.ts).
console.log(JSON.stringify({ url, token: `eyJ${'a'.repeat(290)}`, apiKey: `mk_${'a'.repeat(40)}` }));
process.once('SIGTERM', () =>
  app
    .close()
    .then(() => store.close())
    .then(() => process.exit(0)),
);
