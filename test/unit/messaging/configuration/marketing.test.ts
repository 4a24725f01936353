// Marketing messages settings: the seed's defaults, PUT replacing them (omitted fields back to
// defaults), sync-status from the provider, marketingSettings() for senders, and bad-inputs H1–H4 on the body.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { marketingSettings } from '#server/apis/messaging/configuration/marketing.js';
import { createSandboxAccount } from '#server/providers/sandbox.js';
import { PROBLEM, tenant, type Tenant } from '../contacts/support.js';

let app: FastifyInstance;
let a: Tenant;
beforeAll(async () => {
  app = await buildShared();
  a = await tenant(app);
});

async function account() {
  return (await createSandboxAccount(app.platform.store.db, a.workspaceId)).account;
}

describe('marketing messages settings', () => {
  it('defaults before any write: enabled, CLOUD_API_FALLBACK, activity_sharing null, not onboarded', async () => {
    const acc = await account();
    const res = await a.call('GET', `/api/chatapp/${acc.id}/marketing-messages`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      waba_id: acc.id,
      enabled: true,
      product_policy: 'CLOUD_API_FALLBACK',
      activity_sharing: null,
      onboarding_status: 'NOT_STARTED',
      onboarding_checked_at: null,
      updated_at: acc.created_at.toISOString(),
    });
    expect(await marketingSettings(app.platform.store.db, acc.id)).toEqual({
      enabled: true,
      product_policy: 'CLOUD_API_FALLBACK',
      activity_sharing: null,
      onboarding_status: 'NOT_STARTED',
    });
  });

  it('PUT replaces the settings; omitted fields return to their defaults; the provider id works too', async () => {
    const acc = await account();
    const put = await a.call('PUT', `/api/chatapp/${acc.provider_waba_id}/marketing-messages`, {
      enabled: false,
      product_policy: 'STRICT',
      activity_sharing: true,
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ waba_id: acc.id, enabled: false, product_policy: 'STRICT', activity_sharing: true });
    expect(await marketingSettings(app.platform.store.db, acc.id)).toMatchObject({ enabled: false, product_policy: 'STRICT', activity_sharing: true });
    const reset = await a.call('PUT', `/api/chatapp/${acc.id}/marketing-messages`, { activity_sharing: false });
    expect(reset.body).toMatchObject({ enabled: true, product_policy: 'CLOUD_API_FALLBACK', activity_sharing: false });
    const nulled = await a.call('PUT', `/api/chatapp/${acc.id}/marketing-messages`, { activity_sharing: null });
    expect(nulled.body.activity_sharing).toBeNull();
  });

  it("sync-status stores the provider's onboarding status and when it was checked; settings stay", async () => {
    const acc = await account();
    await a.call('PUT', `/api/chatapp/${acc.id}/marketing-messages`, { product_policy: 'STRICT' });
    const res = await a.call('POST', `/api/chatapp/${acc.id}/marketing-messages/sync-status`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ onboarding_status: 'ONBOARDED', product_policy: 'STRICT' });
    expect(Date.parse(res.body.onboarding_checked_at)).toBeGreaterThan(Date.now() - 60_000);
    expect((await marketingSettings(app.platform.store.db, acc.id)).onboarding_status).toBe('ONBOARDED');
  });

  it('H1 enabled: "true" (a string): 400 pointing at it, not coerced; nothing changes', async () => {
    const acc = await account();
    const res = await a.call('PUT', `/api/chatapp/${acc.id}/marketing-messages`, { enabled: 'true' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: `${PROBLEM}validation`, errors: [{ pointer: '/body/enabled' }] });
    expect(await app.platform.store.db.selectFrom('marketing_messages_settings').selectAll().where('business_account_id', '=', acc.id).execute()).toEqual([]);
  });

  it('H3 unknown property (isAdmin): 400 naming it', async () => {
    const acc = await account();
    const res = await a.call('PUT', `/api/chatapp/${acc.id}/marketing-messages`, { enabled: true, isAdmin: true });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { pointer: string }) => e.pointer)).toContain('/body/isAdmin');
  });

  it('H4 product_policy "strict" (off the list): 400 listing the allowed values', async () => {
    const acc = await account();
    const res = await a.call('PUT', `/api/chatapp/${acc.id}/marketing-messages`, { product_policy: 'strict' });
    expect(res.status).toBe(400);
    const error = res.body.errors.find((e: { pointer: string }) => e.pointer === '/body/product_policy');
    expect(error.detail).toContain('CLOUD_API_FALLBACK');
    expect(error.detail).toContain('STRICT');
  });

  it('an unknown account: 404', async () => {
    expect((await a.call('GET', '/api/chatapp/waba_00000000000000000000/marketing-messages')).status).toBe(404);
    expect((await a.call('GET', '/api/chatapp/abc/marketing-messages')).status).toBe(400);
  });
});
