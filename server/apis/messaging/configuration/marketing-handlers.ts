// GET/PUT /api/chatapp/{wabaId}/marketing-messages and its sync-status: per-account settings of
// the marketing messages route, with the seed's defaults until the first write.
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import type { Platform } from '#server/platform.js';
import { findAccount, providerProblem, type AccountRow } from './accounts.js';
import { MARKETING_DEFAULTS, marketingRow, upsertMarketing } from './marketing.js';
import { refreshOnboarding } from './marketing-sync.js';

type Settings = components['schemas']['MarketingMessagesSettings'];

async function settingsView(platform: Platform, account: AccountRow): Promise<Settings> {
  const row = await marketingRow(platform.store.db, account.id);
  return {
    waba_id: account.id,
    enabled: row?.enabled ?? MARKETING_DEFAULTS.enabled,
    product_policy: (row?.product_policy ?? MARKETING_DEFAULTS.product_policy) as Settings['product_policy'],
    activity_sharing: row ? row.activity_sharing : MARKETING_DEFAULTS.activity_sharing,
    onboarding_status: (row?.onboarding_status ?? MARKETING_DEFAULTS.onboarding_status) as Settings['onboarding_status'],
    onboarding_checked_at: row?.onboarding_checked_at?.toISOString() ?? null,
    // Never written: the defaults have held since the account was connected.
    updated_at: (row?.updated_at ?? account.created_at).toISOString(),
  };
}

export const getMarketingMessagesSettings: Handler<operations['getMarketingMessagesSettings']> = async (request) => {
  const platform = request.server.platform;
  const account = await findAccount(platform.store.db, authOf(request).workspaceId, request.params.wabaId);
  return settingsView(platform, account);
};

export const updateMarketingMessagesSettings: Handler<operations['updateMarketingMessagesSettings']> = async (request) => {
  const platform = request.server.platform;
  const account = await findAccount(platform.store.db, authOf(request).workspaceId, request.params.wabaId);
  // PUT replaces: fields left out take their defaults (the validator fills the spec's defaults too).
  const body = request.body;
  await upsertMarketing(
    platform.store.db,
    account,
    {
      enabled: body.enabled ?? MARKETING_DEFAULTS.enabled,
      product_policy: body.product_policy ?? MARKETING_DEFAULTS.product_policy,
      activity_sharing: body.activity_sharing === undefined ? MARKETING_DEFAULTS.activity_sharing : body.activity_sharing,
    },
    platform.now(),
  );
  return settingsView(platform, account);
};

export const syncMarketingMessagesStatus: Handler<operations['syncMarketingMessagesStatus']> = async (request) => {
  const platform = request.server.platform;
  const account = await findAccount(platform.store.db, authOf(request).workspaceId, request.params.wabaId);
  try {
    await refreshOnboarding(platform, account);
  } catch (error) {
    throw providerProblem(error);
  }
  return settingsView(platform, account);
};
