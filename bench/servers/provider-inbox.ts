// The provider-inbox benchmark's server (bench/lib/provider-inbox.ts): a workspace with a sandbox
// number, a Login app on it and MESSAGES outbound messages (a campaign's: a contact and a chat
// each, a wamid `wamid.inboxbench.<n>`), printed as its ready line. Commands on stdin, one a line:
// - `backlog <status>`: stores one status delivery (`sent`, `delivered` or `read`) per message in
//   the inbox in one INSERT, as if the webhook had stored them under a burst, wakes the worker and
//   prints `{"backlog":n}` once they are committed;
// - `count <status>`: prints `{"pending":p,"failed":f,"applied":a}`: deliveries not yet processed,
//   kept as poison, and messages now at that status.
import { createInterface } from 'node:readline';
import { sql } from 'kysely';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { createSandboxAccount } from '#server/providers/sandbox.js';
import { metaStatusDelivery } from '#test/fakes/meta-webhook-examples.js';
import { benchDataDir } from '../lib/data-dir.js';

const WAMID = '__WAMID__';

const messages = Number(process.env.MESSAGES ?? 20_000);
const app = await buildApp(
  loadConfig({
    ...process.env,
    PORT: '0',
    DATA_DIR: benchDataDir('bench-inbox-'),
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'silent',
    DEMO: 'false',
    RATE_LIMIT_PER_MINUTE: '1000000',
    RATE_LIMIT_IP_PER_MINUTE: '1000000',
    AUTH_FAILURES_PER_IP: '1000000',
  }),
);
const url = await app.listen({ port: 0, host: '127.0.0.1' });
const db = app.platform.store.db;
const created = await app.inject({
  method: 'POST',
  url: '/api/account/workspaces',
  payload: { email: 'inbox@bench.example', password: 'bench-password-123', name: 'Bench', workspace_name: 'Bench', workspace_slug: 'bench-inbox' },
});
if (created.statusCode !== 201) throw new Error(`seeding failed: ${created.body}`);
const { workspace, session } = created.json();
await db.updateTable('workspaces').set({ login_session_cap: 10_000_000 }).where('id', '=', workspace.id).execute();
const { numbers } = await createSandboxAccount(db, workspace.id, { name: 'Bench' });
const pn = numbers[0];
const appRes = await app.inject({
  method: 'POST',
  url: '/api/login/apps',
  headers: { authorization: `Bearer ${session.access_token}` },
  payload: { name: 'Bench', use_service_phone: false, phone_number_id: pn.id, webhook_destination: 'none' },
});
if (appRes.statusCode !== 201) throw new Error(`login app failed: ${appRes.statusCode} ${appRes.body}`);

// The campaign's messages, as the send path leaves them: accepted, with the provider's wamid.
const id = (prefix: string) => sql.raw(`'${prefix}_Ibx' || lpad(i::text, 17, '0')`);
await sql`insert into contacts (id, workspace_id, phone, name)
  select ${id('ct')}, ${workspace.id}, '+4917' || lpad(i::text, 9, '0'), 'Reader ' || i from generate_series(1, ${messages}::int) i`.execute(db);
await sql`insert into chats (id, workspace_id, phone_number_id, contact_id, last_message_at, created_at)
  select ${id('chat')}, ${workspace.id}, ${pn.id}, ${id('ct')}, now(), now() from generate_series(1, ${messages}::int) i`.execute(db);
await sql`insert into messages (id, workspace_id, phone_number_id, contact_id, chat_id, direction, type, content, provider_message_id, status, created_at, status_at)
  select ${id('msg')}, ${workspace.id}, ${pn.id}, ${id('ct')}, ${id('chat')}, 'outbound', 'text', '{"text":"Our offer"}'::jsonb,
    'wamid.inboxbench.' || i, 'accepted', now(), now()
  from generate_series(1, ${messages}::int) i`.execute(db);

console.log(
  JSON.stringify({
    url,
    pid: process.pid,
    messages,
    apiKey: appRes.json().api_key,
    providerPhoneNumberId: pn.provider_phone_number_id,
    displayPhoneNumber: pn.display_phone_number,
  }),
);

createInterface({ input: process.stdin }).on('line', (line) =>
  answer(line).catch((error) => {
    console.error(error);
    process.exit(1);
  }),
);
async function answer(line: string) {
  const [command, status] = line.split(' ');
  if (command === 'backlog') {
    // Meta's status delivery (test/fakes/meta-webhook-examples.ts), one status of one message each.
    const template = JSON.stringify(
      metaStatusDelivery({ providerPnId: pn.provider_phone_number_id, number: pn.display_phone_number }, WAMID, status as 'sent'),
    );
    const { rows } = await sql<{ n: number }>`with stored as (
        insert into provider_deliveries (id, payload, received_at)
        select 'pdl_Ibx' || ${status}::text || lpad(i::text, 12, '0'), replace(${template}::text, ${WAMID}::text, 'wamid.inboxbench.' || i), now() from generate_series(1, ${messages}::int) i
        returning 1)
      select count(*)::int as n from stored`.execute(db);
    app.providerInbox.signal();
    console.log(JSON.stringify({ backlog: rows[0]!.n }));
  } else if (command === 'count') {
    const { rows } = await sql<{ pending: number; failed: number; applied: number }>`select
        (select count(*) from provider_deliveries where failed_at is null)::int as pending,
        (select count(*) from provider_deliveries where failed_at is not null)::int as failed,
        (select count(*) from messages where workspace_id = ${workspace.id} and direction = 'outbound' and status = ${status})::int as applied`.execute(db);
    console.log(JSON.stringify(rows[0]));
  }
}
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
