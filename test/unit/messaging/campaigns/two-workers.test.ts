// Two server instances on one PostgreSQL database (bad-inputs F-11): their workers share the campaign's
// recipients through FOR UPDATE SKIP LOCKED and the number's send slots, so no recipient is sent
// twice and the number's rate holds across both. PGlite has one connection, where the race cannot
// happen at all, so this runs on PostgreSQL only (npm run test:pg, or DATABASE_URL set).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { openStore, type Store } from '#server/store/db.js';
import { onPostgres, openTestStore } from '#test/support/store.js';
import { MAX_DRIFT_MS } from '#server/apis/messaging/campaigns/worker.js';
import { addContacts, call, maxInWindow, recordSends, until, workspace } from './support.js';

describe.skipIf(!onPostgres)('two instances on one PostgreSQL (skipped on PGlite: one connection cannot race)', () => {
  let storeA: Store & { url?: string };
  let storeB: Store;
  let a: FastifyInstance;
  let b: FastifyInstance;

  beforeAll(async () => {
    storeA = await openTestStore();
    storeB = await openStore({ databaseUrl: storeA.url! });
    const env = { SECRET_KEY: 'two-instances-share-this-secret-key-0123456789', RATE_LIMIT_IP_PER_MINUTE: '1000' };
    a = await buildShared({ env, overrides: { store: storeA } });
    b = await buildShared({ env, overrides: { store: storeB } });
  });
  afterAll(async () => {
    // The apps close after the file (buildShared); their stores are ours to close after them.
    await a?.close();
    await b?.close();
    await storeB?.close();
    await storeA?.close();
  });

  it('F-11 each of 400 recipients is sent exactly once, by either instance, and the number rate holds across both', async () => {
    const w = await workspace(a);
    const db = a.platform.store.db;
    await db.updateTable('phone_numbers').set({ messages_per_second: 100 }).where('id', '=', w.numberId).execute();
    await addContacts(db, w.workspaceId, 400);
    const recA = recordSends(a.platform.provider('sandbox'));
    const recB = recordSends(b.platform.provider('sandbox'));
    try {
      const c = (
        await call(a, w.key)('POST', '/api/campaigns', {
          name: 'Two',
          chatapp_phone_number: w.phone,
          audience: { type: 'all_contacts' },
          template: { name: 'welcome_offer', language: 'en_US' },
        })
      ).json();
      await until(async () => (await call(a, w.key)('GET', `/api/campaigns/${c.id}`)).json().status === 'completed', 60_000, 'completion');
      const all = [...recA.sends, ...recB.sends];
      expect(all).toHaveLength(400);
      expect(new Set(all.map((s) => s.to)).size).toBe(400);
      expect(recA.sends.length).toBeGreaterThan(0);
      expect(recB.sends.length).toBeGreaterThan(0);
      // Slots are shared through the database and each instance holds its own sends to the rate;
      // a second can also hold the other instance's sends made late for their slots, at most
      // MAX_DRIFT_MS late (docs/messaging-campaigns.md, "Rate").
      expect(
        maxInWindow(
          all.map((s) => s.at),
          1000,
        ),
      ).toBeLessThanOrEqual(Math.floor(100 * (1 + MAX_DRIFT_MS / 1000)) + 1);
      const row = await db.selectFrom('campaigns').select('resent').where('id', '=', c.id).executeTakeFirstOrThrow();
      expect(row.resent).toBe(0);
    } finally {
      recA.restore();
      recB.restore();
    }
  }, 90_000);

  it('F-11 a scheduled campaign starts once across instances', async () => {
    const w = await workspace(a);
    await addContacts(a.platform.store.db, w.workspaceId, 10);
    const at = new Date(Date.now() + 1000).toISOString();
    const c = (
      await call(a, w.key)('POST', '/api/campaigns', {
        name: 'Sched',
        chatapp_phone_number: w.phone,
        audience: { type: 'all_contacts' },
        template: { name: 'welcome_offer', language: 'en_US' },
        scheduled_at: at,
      })
    ).json();
    await until(async () => (await call(b, w.key)('GET', `/api/campaigns/${c.id}`)).json().status === 'completed', 20_000, 'completion');
    const recipients = await a.platform.store.db.selectFrom('campaign_recipients').select('contact_id').where('campaign_id', '=', c.id).execute();
    expect(recipients).toHaveLength(10);
    const messages = await a.platform.store.db.selectFrom('messages').select('contact_id').where('workspace_id', '=', w.workspaceId).execute();
    expect(messages).toHaveLength(10);
  }, 60_000);
});
