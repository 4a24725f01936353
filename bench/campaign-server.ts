// A server for the campaign benchmark and the crash test: the whole app as a child process on
// DATA_DIR (or DATABASE_URL), its Cloud API pointed at a fake provider (GRAPH_API_URL). With
// SEED=1 it first creates a workspace, a Messaging key, the fake's account and number at RATE
// messages per second, an approved template and CONTACTS contacts. It prints one JSON line when
// ready; started again on the same store (SEED unset) it resumes whatever campaigns were running.
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { newId } from '#server/lib/ids.js';

const env = process.env;
const app = await buildApp(
  loadConfig({
    ...env,
    PORT: '0',
    LOG_LEVEL: env.LOG_LEVEL ?? 'silent',
    DEMO: 'false',
    RATE_LIMIT_PER_MINUTE: '1000000',
    AUTH_FAILURES_PER_IP: '1000000',
    RATE_LIMIT_IP_PER_MINUTE: '1000000',
  }),
);
const url = await app.listen({ port: 0, host: '127.0.0.1' });
let seeded = {};
if (env.SEED === '1') seeded = await seed(Number(env.CONTACTS ?? 1000), Number(env.RATE ?? 80));
console.log(JSON.stringify({ url, pid: process.pid, ...seeded }));
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));

async function seed(contacts: number, rate: number) {
  const signUp = await app.inject({
    method: 'POST',
    url: '/api/account/workspaces',
    payload: { email: 'bench@bench.example', password: 'bench-password-123', name: 'Bench', workspace_name: 'Bench', workspace_slug: 'bench' },
  });
  if (signUp.statusCode !== 201) throw new Error(`sign-up failed: ${signUp.statusCode} ${signUp.body}`);
  const { workspace, session } = signUp.json();
  const key = await app.inject({
    method: 'POST',
    url: '/api/account/api-keys',
    headers: { authorization: `Bearer ${session.access_token}` },
    payload: { name: 'bench' },
  });
  if (key.statusCode !== 201) throw new Error(`key failed: ${key.statusCode} ${key.body}`);
  const db = app.platform.store.db;
  const accountId = newId('waba');
  await db
    .insertInto('business_accounts')
    .values({
      id: accountId,
      workspace_id: workspace.id,
      kind: 'cloud_api',
      provider_waba_id: env.FAKE_WABA_ID!,
      name: 'Bench',
      access_token_enc: app.platform.secrets.encrypt(env.FAKE_TOKEN!),
    })
    .execute();
  const phone = '+15550100100';
  await db
    .insertInto('phone_numbers')
    .values({
      id: newId('pn'),
      workspace_id: workspace.id,
      business_account_id: accountId,
      provider_phone_number_id: env.FAKE_PHONE_NUMBER_ID!,
      display_phone_number: phone,
      verified_name: 'Bench',
      messages_per_second: rate,
    })
    .execute();
  await db
    .insertInto('message_templates')
    .values({
      id: newId('tpl'),
      workspace_id: workspace.id,
      business_account_id: accountId,
      name: 'bench_offer',
      language: 'en_US',
      category: 'UTILITY',
      status: 'APPROVED',
      components: JSON.stringify([{ type: 'BODY', text: 'Hi {{1}}, our offer.' }]),
    })
    .execute();
  for (let start = 0; start < contacts; start += 5000) {
    const rows = Array.from({ length: Math.min(5000, contacts - start) }, (_, i) => ({
      id: newId('ct'),
      workspace_id: workspace.id,
      phone: `+4915${String(start + i + 1).padStart(9, '0')}`,
      name: `Contact ${start + i + 1}`,
    }));
    await db.insertInto('contacts').values(rows).execute();
  }
  return { key: key.json().secret, phone, workspaceId: workspace.id };
}
