// Business accounts of a workspace: lookup by either id, the provider handle for one account
// (token decrypted for the call only), and the contract's Connection and PhoneNumber views.
import type { Kysely, Selectable } from 'kysely';
import type { components } from '#generated/messaging/types.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import { ProviderError, type ChatProvider, type ProviderAccount } from '#server/providers/types.js';
import type { BusinessAccountsTable, Database, PhoneNumbersTable } from '#server/store/schema.js';

type S = components['schemas'];
export type AccountRow = Selectable<BusinessAccountsTable>;
export type NumberRow = Selectable<PhoneNumbersTable>;

export const accountNotFound = (ref: string) => new HttpProblem(404, 'not-found', `No business account ${ref} in this workspace.`);

/** A connected account of the workspace by our id (`waba_…`) or the provider's; 404 otherwise (another workspace's too). */
export async function findAccount(db: Kysely<Database>, workspaceId: string, ref: string): Promise<AccountRow> {
  const row = await db
    .selectFrom('business_accounts')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('disconnected_at', 'is', null)
    .where((eb) => (ref.startsWith('waba_') ? eb('id', '=', ref) : eb('provider_waba_id', '=', ref)))
    .executeTakeFirst();
  if (!row) throw accountNotFound(ref);
  return row;
}

export interface AccountHandle {
  provider: ChatProvider;
  account: ProviderAccount;
}

export function providerFor(platform: Platform, row: AccountRow): AccountHandle {
  return {
    provider: platform.provider(row.kind),
    account: { wabaId: row.provider_waba_id, accessToken: row.access_token_enc ? platform.secrets.decrypt(row.access_token_enc) : null },
  };
}

/**
 * Runs a provider call for a stored account. A refused token (190) marks the account
 * `token_invalid` before the error goes on; a success marks it `active` again.
 */
export async function withProvider<T>(platform: Platform, row: AccountRow, work: (h: AccountHandle) => Promise<T>): Promise<T> {
  const db = platform.store.db;
  try {
    const result = await work(providerFor(platform, row));
    if (row.status === 'token_invalid') await db.updateTable('business_accounts').set({ status: 'active' }).where('id', '=', row.id).execute();
    return result;
  } catch (error) {
    if (error instanceof ProviderError && error.code === 190) {
      await db.updateTable('business_accounts').set({ status: 'token_invalid' }).where('id', '=', row.id).execute();
    }
    throw error;
  }
}

/** The provider's error as our problem; anything else goes on unchanged (a 500 without internals). */
export function providerProblem(error: unknown): unknown {
  return error instanceof ProviderError ? error.toProblem() : error;
}

export function connectionView(row: AccountRow, numbers: number): S['Connection'] {
  return {
    id: row.id,
    kind: row.kind,
    name: row.name,
    provider_waba_id: row.provider_waba_id,
    status: row.status,
    webhooks_subscribed: row.kind === 'sandbox' || row.webhooks_subscribed_at !== null,
    phone_numbers_count: numbers,
    created_at: row.created_at.toISOString(),
    last_synced_at: row.last_synced_at?.toISOString() ?? null,
  };
}

export function numberView(row: NumberRow, kind: AccountRow['kind']): S['PhoneNumber'] {
  return {
    id: row.id,
    waba_id: row.business_account_id,
    provider_phone_number_id: row.provider_phone_number_id,
    display_phone_number: row.display_phone_number,
    verified_name: row.verified_name,
    status: row.status as S['PhoneNumberStatus'],
    quality_rating: row.quality_rating as S['QualityRating'],
    messaging_limit_tier: row.messaging_limit_tier as S['MessagingLimitTier'] | null,
    rate_per_second: row.messages_per_second,
    is_sandbox: kind === 'sandbox',
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
