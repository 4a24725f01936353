// Marketing messages settings of a business account. An account without a row has the seed's
// defaults: enabled, CLOUD_API_FALLBACK, activity sharing left to the provider, not onboarded.
import type { Kysely } from 'kysely';
import type { Database } from '#server/store/schema.js';

export type ProductPolicy = 'CLOUD_API_FALLBACK' | 'STRICT';
export type OnboardingStatus = 'NOT_STARTED' | 'PENDING' | 'ONBOARDED' | 'INELIGIBLE';

export interface MarketingSettings {
  enabled: boolean;
  product_policy: ProductPolicy;
  activity_sharing: boolean | null;
  onboarding_status: OnboardingStatus;
}

export const MARKETING_DEFAULTS: MarketingSettings = {
  enabled: true,
  product_policy: 'CLOUD_API_FALLBACK',
  activity_sharing: null,
  onboarding_status: 'NOT_STARTED',
};

/** The settings row, or undefined when the account still has the defaults. */
export async function marketingRow(db: Kysely<Database>, businessAccountId: string) {
  return db.selectFrom('marketing_messages_settings').selectAll().where('business_account_id', '=', businessAccountId).executeTakeFirst();
}

/** What a send needs to route a marketing template (`businessAccountId` is our `waba_…` id). */
export async function marketingSettings(db: Kysely<Database>, businessAccountId: string): Promise<MarketingSettings> {
  const row = await marketingRow(db, businessAccountId);
  if (!row) return { ...MARKETING_DEFAULTS };
  return {
    enabled: row.enabled,
    product_policy: row.product_policy as ProductPolicy,
    activity_sharing: row.activity_sharing,
    onboarding_status: row.onboarding_status as OnboardingStatus,
  };
}

type Writable = {
  enabled?: boolean;
  product_policy?: ProductPolicy;
  activity_sharing?: boolean | null;
  onboarding_status?: OnboardingStatus;
  onboarding_checked_at?: Date;
};

/**
 * Writes some columns, creating the row with defaults for the rest. `updated_at` is when the
 * settings changed: an onboarding refresh alone leaves it as it was.
 */
export async function upsertMarketing(db: Kysely<Database>, account: { id: string; workspace_id: string }, values: Writable, now: Date) {
  const settingsChanged = 'enabled' in values || 'product_policy' in values || 'activity_sharing' in values;
  return db
    .insertInto('marketing_messages_settings')
    .values({ business_account_id: account.id, workspace_id: account.workspace_id, activity_sharing: null, ...values, updated_at: now })
    .onConflict((oc) => oc.column('business_account_id').doUpdateSet(settingsChanged ? { ...values, updated_at: now } : values))
    .returningAll()
    .executeTakeFirstOrThrow();
}
