// Shared steps of the sending, inbox and template tests: a workspace with a Messaging key and a
// sandbox number (or the fake Cloud API's number), customers writing in through the sandbox
// phone, templates stored as the provider reviewed them, and row counts for no-change checks.
import type { FastifyInstance } from 'fastify';
import { newId } from '#server/lib/ids.js';
import { createSandboxAccount, SandboxProvider } from '#server/providers/sandbox.js';
import { FAKE_PHONE_NUMBER_ID, FAKE_TOKEN, FAKE_WABA_ID } from '#test/fakes/fake-provider.js';
import { newApiKeySecret } from '#server/auth/api-keys.js';
import { elapse } from '#test/support/eventually.js';

export const PROBLEMS = 'https://chatapp.example/problems/';

export interface Tenant {
  workspaceId: string;
  ownerId: string;
  key: string;
  headers: Record<string, string>;
  /** The sender number, E.164. */
  number: string;
  pnId: string;
  providerPnId: string;
  wabaId: string;
}

/**
 * A workspace with its owner and a Messaging key, written directly: signing up hashes a password
 * with scrypt at 128 MiB, seconds per tenant on a busy machine, and is not what these tests check.
 */
async function workspace(app: FastifyInstance) {
  const db = app.platform.store.db;
  const id = newId('ws');
  const now = new Date();
  await db.insertInto('workspaces').values({ id, name: 'Acme', slug: id.toLowerCase(), created_at: now }).execute();
  const owner = { id: newId('usr'), workspace_id: id, email: `${id.toLowerCase()}@example.test`, name: 'Owner', password_hash: 'x', created_at: now };
  await db.insertInto('owners').values(owner).execute();
  const { secret, prefix, digest } = newApiKeySecret(app.platform.secrets);
  await db
    .insertInto('api_keys')
    .values({
      id: newId('key'),
      workspace_id: id,
      name: 'messaging',
      kind: 'messaging',
      scopes: ['messaging:read', 'messaging:write'],
      prefix,
      digest,
      created_at: now,
    })
    .execute();
  return { workspace: { id }, owner, key: { secret } };
}

export async function tenant(app: FastifyInstance): Promise<Tenant> {
  const s = await workspace(app);
  const key = s.key;
  const { account, numbers } = await createSandboxAccount(app.platform.store.db, s.workspace.id, { name: 'Acme' });
  const pn = numbers[0];
  return {
    workspaceId: s.workspace.id,
    ownerId: s.owner.id,
    key: key.secret,
    headers: { 'x-api-key': key.secret },
    number: pn.display_phone_number,
    pnId: pn.id,
    providerPnId: pn.provider_phone_number_id,
    wabaId: account.id,
  };
}

/** A workspace whose number is the fake Cloud API's (one per app: the provider's ids are unique). */
export async function cloudTenant(app: FastifyInstance): Promise<Tenant> {
  const s = await workspace(app);
  const key = s.key;
  const db = app.platform.store.db;
  const account = await db
    .insertInto('business_accounts')
    .values({
      id: newId('waba'),
      workspace_id: s.workspace.id,
      kind: 'cloud_api',
      provider_waba_id: FAKE_WABA_ID,
      name: 'Acme',
      access_token_enc: app.platform.secrets.encrypt(FAKE_TOKEN),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  const pn = await db
    .insertInto('phone_numbers')
    .values({
      id: newId('pn'),
      workspace_id: s.workspace.id,
      business_account_id: account.id,
      provider_phone_number_id: FAKE_PHONE_NUMBER_ID,
      display_phone_number: '+15550100100',
      verified_name: 'Acme',
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return {
    workspaceId: s.workspace.id,
    ownerId: s.owner.id,
    key: key.secret,
    headers: { 'x-api-key': key.secret },
    number: pn.display_phone_number,
    pnId: pn.id,
    providerPnId: pn.provider_phone_number_id,
    wabaId: account.id,
  };
}

export function sandbox(app: FastifyInstance): SandboxProvider {
  const p = app.platform.provider('sandbox');
  if (!(p instanceof SandboxProvider)) throw new Error('no sandbox');
  return p;
}

/** The customer `from` writes to the tenant's sandbox number, `agoMs` ago. */
export async function customerWrites(app: FastifyInstance, t: Tenant, from: string, text = 'Hello', agoMs = 0) {
  const at = new Date(app.platform.now().getTime() - agoMs);
  return sandbox(app).simulateInbound({ phoneNumberId: t.providerPnId, from, name: 'Lena', message: { type: 'text', text: { body: text } }, at });
}

/** For Cloud API tenants: an inbound message stored as the webhook would (opens the window). */
export async function cloudCustomerWrote(app: FastifyInstance, t: Tenant, phone: string, agoMs = 0) {
  const at = new Date(app.platform.now().getTime() - agoMs);
  await app.platform.store.db
    .insertInto('contacts')
    .values({ id: newId('ct'), workspace_id: t.workspaceId, phone, name: 'Lena', last_inbound_at: at })
    .onConflict((oc) => oc.columns(['workspace_id', 'phone']).doUpdateSet({ last_inbound_at: at }))
    .execute();
}

// Strictly increasing creation times, so "newest first" does not depend on two inserts landing in different milliseconds.
let lastTemplateAt = 0;

export async function storeTemplate(
  app: FastifyInstance,
  t: Tenant,
  values: {
    name: string;
    language?: string;
    category?: 'MARKETING' | 'UTILITY' | 'AUTHENTICATION';
    status?: 'APPROVED' | 'PENDING' | 'REJECTED';
    components: unknown[];
  },
) {
  lastTemplateAt = Math.max(Date.now(), lastTemplateAt + 1);
  const now = new Date(lastTemplateAt);
  return app.platform.store.db
    .insertInto('message_templates')
    .values({
      id: newId('tpl'),
      workspace_id: t.workspaceId,
      business_account_id: t.wabaId,
      provider_template_id: '9000000000001',
      name: values.name,
      language: values.language ?? 'en_US',
      category: values.category ?? 'UTILITY',
      status: values.status ?? 'APPROVED',
      components: JSON.stringify(values.components),
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

const TABLES = ['contacts', 'messages', 'chats', 'message_templates', 'outbox', 'send_idempotency'] as const;

export async function counts(app: FastifyInstance): Promise<Record<string, number>> {
  const db = app.platform.store.db;
  const out: Record<string, number> = {};
  for (const table of TABLES)
    out[table] = Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return out;
}

/** The sandbox's delivery of a send runs after its answer: lets it end before rows are counted. */
export const settle = (ms = 50) => elapse(ms, 'the sandbox delivers after the answer, with no event to wait on');
