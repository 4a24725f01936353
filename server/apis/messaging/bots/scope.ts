// Lookups shared by bots and forms: the business account a bot belongs to, a sender number of
// that account, and an agent to hand chats to. Another workspace's ids answer the same 404 as
// unknown ones (bad-inputs B2).
import type { Kysely } from 'kysely';
import { HttpProblem } from '#server/lib/problems.js';
import type { Database } from '#server/store/schema.js';
import { findAccount, type AccountRow } from '../configuration/accounts.js';

export { findAccount, type AccountRow };

/** A number of `account` (our `pn_…` id or the provider's), 404 naming the field otherwise. */
export async function findAccountNumber(db: Kysely<Database>, account: AccountRow, ref: string, pointer: string): Promise<string> {
  const row = await db
    .selectFrom('phone_numbers')
    .select('id')
    .where('workspace_id', '=', account.workspace_id)
    .where('business_account_id', '=', account.id)
    .where((eb) => eb.or([eb('id', '=', ref), eb('provider_phone_number_id', '=', ref)]))
    .executeTakeFirst();
  if (!row)
    throw new HttpProblem(404, 'not-found', `No phone number ${ref} in business account ${account.id}.`, {
      errors: [{ pointer, detail: 'is not a number of this business account' }],
    });
  return row.id;
}

/**
 * An agent of the workspace. Agents are the workspace's members (`owners` rows), the same ones
 * `POST /api/chatapp/assign-chat` accepts, so a bot hands chats to exactly who an agent could.
 */
export async function findAgent(db: Kysely<Database>, workspaceId: string, agentId: string, pointer: string): Promise<string> {
  const row = await db.selectFrom('owners').select('id').where('id', '=', agentId).where('workspace_id', '=', workspaceId).executeTakeFirst();
  if (!row) throw new HttpProblem(404, 'not-found', `No agent ${agentId} in this workspace.`, { errors: [{ pointer, detail: 'unknown agent' }] });
  return row.id;
}

/** 404 for a list or create naming a business account of no (or another) workspace, with the pointer. */
export async function accountFor(db: Kysely<Database>, workspaceId: string, ref: string, pointer: string): Promise<AccountRow> {
  try {
    return await findAccount(db, workspaceId, ref);
  } catch (error) {
    if (error instanceof HttpProblem)
      throw new HttpProblem(404, 'not-found', `No business account ${ref} in this workspace.`, { errors: [{ pointer, detail: 'unknown business account' }] });
    throw error;
  }
}
