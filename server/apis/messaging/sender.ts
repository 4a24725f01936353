// The sender of an outbound message: a number of one of the workspace's connected accounts, by
// our id (`pn_…`) or the provider's phone-number id. Another workspace's number, or an unknown
// one, answers 404 naming the field, before any provider call.
import type { Platform } from '#server/platform.js';
import { toE164 } from '#server/lib/phone.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { ChatProvider, ProviderKind, ProviderNumber } from '#server/providers/types.js';
import type { Database } from '#server/store/schema.js';
import type { Selectable } from 'kysely';

export interface Sender {
  number: Selectable<Database['phone_numbers']>;
  account: Selectable<Database['business_accounts']>;
  kind: ProviderKind;
  provider: ChatProvider;
  /** What the adapter needs for the call (the token decrypted for this call only). */
  providerNumber: ProviderNumber;
}

export async function resolveSender(platform: Platform, workspaceId: string, phoneNumberId: string, pointer = '/body/phoneNumberId'): Promise<Sender> {
  const number = await platform.store.db
    .selectFrom('phone_numbers')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where((eb) => eb.or([eb('id', '=', phoneNumberId), eb('provider_phone_number_id', '=', phoneNumberId)]))
    .executeTakeFirst();
  if (!number) throw notFound(pointer);
  const account = await platform.store.db.selectFrom('business_accounts').selectAll().where('id', '=', number.business_account_id).executeTakeFirstOrThrow();
  // A disconnected account's numbers stay listed for history, but nothing is sent from them.
  if (account.disconnected_at) throw notFound(pointer);
  const kind = account.kind as ProviderKind;
  return {
    number,
    account,
    kind,
    provider: platform.provider(kind),
    providerNumber: {
      wabaId: account.provider_waba_id,
      phoneNumberId: number.provider_phone_number_id,
      accessToken: account.access_token_enc ? platform.secrets.decrypt(account.access_token_enc) : null,
    },
  };
}

/** The sender of a send or an upload by its number (E.164 in any layout), our `pn_…` id or the provider's id. */
export async function senderOf(platform: Platform, workspaceId: string, given: string): Promise<Sender> {
  const pointer = '/body/chatapp_phone_number';
  const e164 = toE164(given);
  const row = e164
    ? await platform.store.db
        .selectFrom('phone_numbers')
        .select('id')
        .where('workspace_id', '=', workspaceId)
        .where('display_phone_number', '=', e164)
        .executeTakeFirst()
    : undefined;
  try {
    return await resolveSender(platform, workspaceId, row?.id ?? given, pointer);
  } catch (error) {
    if (error instanceof HttpProblem && error.status === 404) {
      throw new HttpProblem(404, 'not-found', `${e164 ?? 'This number'} is not a number of a connected account of this workspace.`, {
        errors: [{ pointer, detail: 'unknown sender number' }],
      });
    }
    throw error;
  }
}

function notFound(pointer: string): HttpProblem {
  return new HttpProblem(404, 'not-found', 'No such phone number in this workspace.', {
    errors: [{ pointer, detail: 'is not a number of a connected account of this workspace' }],
  });
}
