// The provider-inbox benchmark's server (bench/lib/provider-inbox.ts): a workspace with a sandbox
// number, a Login app on it and MESSAGES outbound messages (a campaign's: a contact and a chat
// each, a wamid `wamid.inboxbench.<n>`), printed as its ready line. Commands on stdin, one a line:
// - `backlog <status>`: hands one status delivery (`sent`, `delivered` or `read`) per message to
//   the inbox as the webhook does under a burst and prints `{"backlog":n,"storedMs":ms}` once all
//   are stored (or already processed);
// - `count <status>`: prints `{"pending":p,"failed":f,"applied":a}`: deliveries not yet processed,
//   kept as poison, and messages now at that status.
import { createInterface } from 'node:readline';
import { sql } from 'kysely';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { createSandboxAccount } from '#server/providers/sandbox.js';
import { metaStatusDelivery } from '#test/fakes/meta-webhook-examples.js';
import { benchDataDir } from '../lib/data-dir.js';

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

// When the LOGIN's message was stored (its notification read), after the backlog, and how many
// deliveries the inbox had processed by then: tells a LOGIN processed late from one announced late.
let backlogAt = 0;
let received: { ms: number; processed: number } | undefined;
app.platform.bus.subscribe('message.received', () => {
  received = { ms: performance.now() - backlogAt, processed: app.providerInbox.stats.processed };
});

createInterface({ input: process.stdin }).on('line', (line) =>
  answer(line).catch((error) => {
    console.error(error);
    process.exit(1);
  }),
);
async function answer(line: string) {
  const [command, status] = line.split(' ');
  if (command === 'backlog') {
    // Meta's status delivery (test/fakes/meta-webhook-examples.ts), one status of one message each,
    // handed to the inbox as the webhook hands a burst over once validated: stored in multi-row
    // INSERTs, each resolved once committed.
    backlogAt = performance.now();
    received = undefined;
    const target = { providerPnId: pn.provider_phone_number_id, number: pn.display_phone_number };
    await Promise.all(
      Array.from({ length: messages }, (_, i) =>
        app.providerInbox.receive(metaStatusDelivery(target, `wamid.inboxbench.${i + 1}`, status as 'sent') as never, app.log),
      ),
    );
    console.log(JSON.stringify({ backlog: messages, storedMs: performance.now() - backlogAt }));
  } else if (command === 'count') {
    const { rows } = await sql<{ pending: number; failed: number; applied: number }>`select
        (select count(*) from provider_deliveries where failed_at is null)::int as pending,
        (select count(*) from provider_deliveries where failed_at is not null)::int as failed,
        (select count(*) from messages where workspace_id = ${workspace.id} and direction = 'outbound' and status = ${status})::int as applied`.execute(db);
    // What this instance's inbox did (inline, stored, processed, ...), for the figures.
    console.log(JSON.stringify({ ...rows[0], inbox: app.providerInbox.stats, received }));
  }
}
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
