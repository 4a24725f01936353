// Fixtures of the campaign tests: a workspace with a Messaging key, a sandbox number (or the fake
// Cloud API account), approved templates and contacts written straight into the store.
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { newId } from '#server/lib/ids.js';
import { createSandboxAccount } from '#server/providers/sandbox.js';
import type { Database } from '#server/store/schema.js';
import type { Kysely } from 'kysely';
import { createKey, signUp } from '#test/unit/account/support.js';
import { eventually } from '#test/support/eventually.js';

export interface Workspace {
  workspaceId: string;
  key: string;
  accountId: string;
  numberId: string;
  phone: string;
}

type TemplateSpec = { name: string; status?: string; category?: string; components?: unknown[]; language?: string };

export const TEMPLATES: TemplateSpec[] = [
  { name: 'welcome_offer', components: [{ type: 'BODY', text: 'Welcome! Our new store is open.' }] },
  {
    name: 'order_shipped',
    components: [
      { type: 'HEADER', format: 'TEXT', text: 'Order {{1}}' },
      { type: 'BODY', text: 'Hi {{1}}, {{2}} ships {{3}}.' },
    ],
  },
  {
    name: 'invoice_ready',
    components: [
      { type: 'HEADER', format: 'DOCUMENT' },
      { type: 'BODY', text: 'Hi {{1}}, invoice {{2}} is ready.' },
    ],
  },
  {
    name: 'flash_sale',
    category: 'MARKETING',
    components: [
      { type: 'HEADER', format: 'IMAGE' },
      { type: 'BODY', text: 'Hi {{1}}, 30% off today.' },
    ],
  },
  {
    name: 'new_arrivals',
    category: 'MARKETING',
    components: [
      { type: 'BODY', text: 'Hi {{1}}, new arrivals.' },
      { type: 'CAROUSEL', cards: [] },
    ],
  },
  { name: 'black_friday_coupon', category: 'MARKETING', components: [{ type: 'BODY', text: 'Hi {{1}}, take {{2}} off.' }] },
  { name: 'spring_rejected', status: 'REJECTED', components: [{ type: 'BODY', text: 'Spring.' }] },
];

export async function addTemplates(db: Kysely<Database>, w: { workspaceId: string; accountId: string }, specs: TemplateSpec[] = TEMPLATES) {
  for (const t of specs) {
    await db
      .insertInto('message_templates')
      .values({
        id: newId('tpl'),
        workspace_id: w.workspaceId,
        business_account_id: w.accountId,
        name: t.name,
        language: t.language ?? 'en_US',
        category: (t.category ?? 'UTILITY') as 'UTILITY',
        status: (t.status ?? 'APPROVED') as 'APPROVED',
        components: JSON.stringify(t.components ?? []),
      })
      .execute();
  }
}

export async function workspace(app: FastifyInstance): Promise<Workspace> {
  const owner = await signUp(app);
  const key = await createKey(app, owner.token, { name: 'campaigns' });
  const db = app.platform.store.db;
  const { account, numbers } = await createSandboxAccount(db, owner.workspace.id, { name: 'Acme' });
  const w = { workspaceId: owner.workspace.id, key: key.secret, accountId: account.id, numberId: numbers[0]!.id, phone: numbers[0]!.display_phone_number };
  await addTemplates(db, w);
  return w;
}

/** `n` contacts with numbers `+4915100<seq>`; `unreachable` ones end in 0000 (the sandbox fails them). */
export async function addContacts(db: Kysely<Database>, workspaceId: string, n: number, prefix = '+49151'): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < n; start += 5000) {
    const rows = Array.from({ length: Math.min(5000, n - start) }, (_, i) => ({
      id: newId('ct'),
      workspace_id: workspaceId,
      phone: `${prefix}${String(start + i + 1).padStart(7, '0')}`,
      name: `Contact ${start + i + 1}`,
    }));
    await db.insertInto('contacts').values(rows).execute();
    ids.push(...rows.map((r) => r.id));
  }
  return ids;
}

export async function tag(db: Kysely<Database>, workspaceId: string, name: string, contactIds: string[]): Promise<string> {
  const id = newId('tag');
  await db.insertInto('tags').values({ id, workspace_id: workspaceId, name }).execute();
  if (contactIds.length)
    await db
      .insertInto('contact_tags')
      .values(contactIds.map((contact_id) => ({ contact_id, tag_id: id })))
      .execute();
  return id;
}

export function call(app: FastifyInstance, key: string) {
  return (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) =>
    app.inject({ method, url, headers: { 'x-api-key': key }, ...(payload !== undefined ? { payload: payload as object } : {}) });
}

/**
 * Waits until `check` holds (test/support/eventually.ts). Checked every 100 ms: checks that call
 * the API count against the key's rate limit, which a faster pace would exhaust.
 */
export function until<T>(check: () => Promise<T | false | null | undefined>, ms = 10_000, what = 'condition'): Promise<T> {
  return eventually(check, { within: ms, what, every: 100 }) as Promise<T>;
}

export async function recipientStates(db: Kysely<Database>, campaignId: string): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('campaign_recipients')
    .select(['state', sql<string>`count(*)`.as('n')])
    .where('campaign_id', '=', campaignId)
    .groupBy('state')
    .execute();
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
}

export async function tableCounts(db: Kysely<Database>) {
  const n = async (t: 'campaigns' | 'campaign_recipients' | 'outbox' | 'messages') =>
    Number((await db.selectFrom(t).select(sql<string>`count(*)`.as('n')).executeTakeFirstOrThrow()).n);
  return { campaigns: await n('campaigns'), recipients: await n('campaign_recipients'), outbox: await n('outbox'), messages: await n('messages') };
}

/** Connects the fake Cloud API's account and number to `w` (the app must use the fake's GRAPH_API_URL). */
export async function connectFakeCloud(app: FastifyInstance, w: Workspace, fake: { phoneNumberId: string; wabaId: string; token: string; display: string }) {
  const db = app.platform.store.db;
  const accountId = newId('waba');
  await db
    .insertInto('business_accounts')
    .values({
      id: accountId,
      workspace_id: w.workspaceId,
      kind: 'cloud_api',
      provider_waba_id: fake.wabaId,
      name: 'Acme Cloud',
      access_token_enc: app.platform.secrets.encrypt(fake.token),
    })
    .execute();
  const numberId = newId('pn');
  await db
    .insertInto('phone_numbers')
    .values({
      id: numberId,
      workspace_id: w.workspaceId,
      business_account_id: accountId,
      provider_phone_number_id: fake.phoneNumberId,
      display_phone_number: fake.display,
      verified_name: 'Acme',
    })
    .execute();
  await addTemplates(db, { workspaceId: w.workspaceId, accountId });
  return { ...w, accountId, numberId, phone: fake.display };
}

/** Records when each send of `provider` started, then sends. */
/**
 * Records each send as the provider is called; with `arrival`, the call first waits for it (the
 * nth call gets n), as a request the event loop holds back, and is recorded as it arrives.
 */
export function recordSends(provider: { sendMessage: (...args: any[]) => Promise<unknown> }, arrival?: (call: number) => Promise<void> | void) {
  const sends: { at: number; to: string }[] = [];
  const original = provider.sendMessage.bind(provider);
  let calls = 0;
  provider.sendMessage = async (...args: any[]) => {
    await arrival?.(calls++);
    sends.push({ at: Date.now(), to: String(args[1]) });
    return original(...args);
  };
  return { sends, restore: () => void (provider.sendMessage = original) };
}

/**
 * How far a recorded send time may trail the limiter's own clock read: the recorder stamps a send
 * when the provider is called, a few statements after the worker logged it, and a process
 * preempted on a loaded machine (or a GC pause) in between moves one stamp by tens of
 * milliseconds. The limiter spaces the (n+rate)th send ≥ 1002 ms after the nth by its own stamps.
 */
export const STAMP_JITTER_MS = 25;

export { maxInWindow } from '#test/support/max-in-window.js';
