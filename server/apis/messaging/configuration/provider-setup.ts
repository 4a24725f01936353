// Provider webhook subscription (cloud API accounts) and the workspace refresh from the provider.
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { HttpProblem } from '#server/lib/problems.js';
import { ProviderError } from '#server/providers/types.js';
import type { Platform } from '#server/platform.js';
import { findAccount, providerProblem, withProvider, type AccountRow } from './accounts.js';
import { refreshOnboarding } from './marketing-sync.js';
import { marketingSettings } from './marketing.js';
import { applyNumbers } from './numbers-sync.js';

type S = components['schemas'];

export const setupProviderWebhooks: Handler<operations['setupProviderWebhooks']> = async (request) => {
  const platform = request.server.platform;
  const account = await findAccount(platform.store.db, authOf(request).workspaceId, request.params.wabaId);
  if (account.kind === 'sandbox') {
    throw new HttpProblem(422, 'unprocessable', `${account.id} is a sandbox account; its events need no provider webhook.`, {
      errors: [{ pointer: '/path/wabaId', detail: 'sandbox account' }],
    });
  }
  let result: { subscribed: boolean; fields: string[] };
  try {
    result = await withProvider(platform, account, ({ provider, account: a }) => provider.subscribeWebhooks(a));
  } catch (error) {
    throw providerProblem(error);
  }
  const now = platform.now();
  await platform.store.db
    .updateTable('business_accounts')
    .set({ webhooks_subscribed_at: result.subscribed ? now : null })
    .where('id', '=', account.id)
    .execute();
  return {
    waba_id: account.id,
    subscribed: result.subscribed,
    callback_url: `${platform.config.publicUrl}/api/webhook/chatapp`,
    fields: result.fields,
    subscribed_at: now.toISOString(),
  };
};

type Outcome = { result: S['AccountSyncResult']; failure?: ProviderError };

async function syncAccount(platform: Platform, account: AccountRow): Promise<Outcome> {
  const db = platform.store.db;
  try {
    const numbers = await withProvider(platform, account, ({ provider, account: a }) => provider.listPhoneNumbers(a));
    const now = platform.now();
    const change = await db.transaction().execute(async (trx) => {
      const c = await applyNumbers(trx, account, numbers, now);
      await trx.updateTable('business_accounts').set({ last_synced_at: now }).where('id', '=', account.id).execute();
      return c;
    });
    const onboarding = await refreshOnboarding(platform, account);
    return {
      result: {
        waba_id: account.id,
        phone_numbers_added: change.added,
        phone_numbers_updated: change.updated,
        phone_numbers_removed: change.removed,
        marketing_messages_onboarding: onboarding,
        error: null,
      },
    };
  } catch (error) {
    if (!(error instanceof ProviderError)) throw error;
    const problem = error.toProblem().problem;
    return {
      failure: error,
      result: {
        waba_id: account.id,
        phone_numbers_added: 0,
        phone_numbers_updated: 0,
        phone_numbers_removed: 0,
        marketing_messages_onboarding: (await marketingSettings(db, account.id)).onboarding_status,
        error: { provider_code: error.code ?? 0, detail: problem.detail ?? 'The provider failed.' },
      },
    };
  }
}

export const syncWorkspace: Handler<operations['syncWorkspace']> = async (request) => {
  const platform = request.server.platform;
  const accounts = await platform.store.db
    .selectFrom('business_accounts')
    .selectAll()
    .where('workspace_id', '=', authOf(request).workspaceId)
    .where('disconnected_at', 'is', null)
    .orderBy('created_at')
    .execute();
  // One account at a time: a workspace has a handful, and the provider rate-limits per app.
  const outcomes: Outcome[] = [];
  for (const account of accounts) outcomes.push(await syncAccount(platform, account));
  // Nothing could be refreshed: that is the provider failing, not a partial result.
  const first = outcomes[0]?.failure;
  if (first && outcomes.every((o) => o.failure)) throw first.toProblem();
  return { synced_at: platform.now().toISOString(), accounts: outcomes.map((o) => o.result) };
};
