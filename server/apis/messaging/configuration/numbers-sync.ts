// Stores what the provider says about an account's numbers: new ones added, changed ones updated,
// missing ones marked DISCONNECTED (never deleted: messages refer to them). Provider values
// outside the contract's enums are mapped onto them, so every stored value can be listed.
import type { Kysely } from 'kysely';
import { newId } from '#server/lib/ids.js';
import { toE164 } from '#server/lib/phone.js';
import type { ProviderPhoneNumber } from '#server/providers/types.js';
import type { Database } from '#server/store/schema.js';

const STATUSES = new Set(['CONNECTED', 'PENDING', 'FLAGGED', 'RESTRICTED', 'DISCONNECTED']);
const GONE = new Set(['BANNED', 'DELETED']);
const QUALITIES = new Set(['GREEN', 'YELLOW', 'RED', 'UNKNOWN']);
const TIERS = new Set(['TIER_250', 'TIER_1K', 'TIER_10K', 'TIER_100K', 'TIER_UNLIMITED']);

/** The stored form of a provider number (Meta also reports MIGRATED, UNVERIFIED, BANNED, …). */
export function normaliseNumber(n: ProviderPhoneNumber) {
  return {
    display_phone_number: toE164(n.displayPhoneNumber) ?? `+${n.displayPhoneNumber.replace(/\D/g, '')}`,
    verified_name: n.verifiedName,
    status: STATUSES.has(n.status) ? n.status : GONE.has(n.status) ? 'DISCONNECTED' : 'PENDING',
    quality_rating: QUALITIES.has(n.qualityRating) ? n.qualityRating : 'UNKNOWN',
    messaging_limit_tier: n.messagingLimitTier && TIERS.has(n.messagingLimitTier) ? n.messagingLimitTier : null,
  };
}

export interface NumbersChange {
  added: number;
  updated: number;
  removed: number;
}

/**
 * Applies the provider's list to the account's stored numbers (run it in a transaction). A
 * number already stored under another account (another workspace connected it first) is skipped.
 */
export async function applyNumbers(
  db: Kysely<Database>,
  account: { id: string; workspace_id: string },
  numbers: ProviderPhoneNumber[],
  now: Date,
): Promise<NumbersChange> {
  const stored = await db.selectFrom('phone_numbers').selectAll().where('business_account_id', '=', account.id).execute();
  const byProviderId = new Map(stored.map((s) => [s.provider_phone_number_id, s]));
  const change: NumbersChange = { added: 0, updated: 0, removed: 0 };
  const seen = new Set<string>();
  for (const n of numbers) {
    seen.add(n.phoneNumberId);
    const values = normaliseNumber(n);
    const current = byProviderId.get(n.phoneNumberId);
    if (!current) {
      const inserted = await db
        .insertInto('phone_numbers')
        .values({
          id: newId('pn'),
          workspace_id: account.workspace_id,
          business_account_id: account.id,
          provider_phone_number_id: n.phoneNumberId,
          ...values,
          created_at: now,
          updated_at: now,
        })
        .onConflict((oc) => oc.column('provider_phone_number_id').doNothing())
        .returning('id')
        .executeTakeFirst();
      if (inserted) change.added++;
      continue;
    }
    const differs = (Object.keys(values) as (keyof typeof values)[]).some((k) => current[k] !== values[k]);
    if (differs) {
      await db
        .updateTable('phone_numbers')
        .set({ ...values, updated_at: now })
        .where('id', '=', current.id)
        .execute();
      change.updated++;
    }
  }
  for (const s of stored) {
    if (seen.has(s.provider_phone_number_id) || s.status === 'DISCONNECTED') continue;
    await db.updateTable('phone_numbers').set({ status: 'DISCONNECTED', updated_at: now }).where('id', '=', s.id).execute();
    change.removed++;
  }
  return change;
}
