// The provider's marketing messages onboarding status, fetched and stored for one account
// (on connect, workspace sync and sync-status).
import type { Platform } from '#server/platform.js';
import { withProvider, type AccountRow } from './accounts.js';
import { upsertMarketing, type OnboardingStatus } from './marketing.js';

export async function refreshOnboarding(platform: Platform, account: AccountRow): Promise<OnboardingStatus> {
  const status = await withProvider(platform, account, ({ provider, account: a }) => provider.getMarketingMessagesStatus(a));
  const now = platform.now();
  await upsertMarketing(platform.store.db, account, { onboarding_status: status, onboarding_checked_at: now }, now);
  return status;
}
