// Phone numbers of the workspace's connected accounts (all, or one account's), newest first.
// Numbers of disconnected accounts are not listed.
import type { operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import type { Platform } from '#server/platform.js';
import { afterCursor, orderBy, sortedPage, sortKeySelection, type SortKey } from '../contacts/keyset.js';
import { findAccount, numberView } from './accounts.js';

const NEWEST: SortKey = { name: '-created_at', column: 'phone_numbers.created_at', type: 'time', dir: 'desc', id: 'phone_numbers.id' };

async function listNumbers(platform: Platform, workspaceId: string, operation: string, query: { limit?: number; cursor?: string }, accountId?: string) {
  const { limit = 20, cursor } = query;
  const scope = { workspaceId, operation };
  const after = afterCursor(platform.secrets, scope, NEWEST, cursor);
  let select = platform.store.db
    .selectFrom('phone_numbers')
    .innerJoin('business_accounts', 'business_accounts.id', 'phone_numbers.business_account_id')
    .selectAll('phone_numbers')
    .select(['business_accounts.kind', sortKeySelection(NEWEST)])
    .where('phone_numbers.workspace_id', '=', workspaceId)
    .where('business_accounts.disconnected_at', 'is', null);
  if (accountId) select = select.where('phone_numbers.business_account_id', '=', accountId);
  if (after) select = select.where(after);
  const rows = await select
    .orderBy(orderBy(NEWEST))
    .limit(limit + 1)
    .execute();
  return sortedPage(platform.secrets, scope, NEWEST, rows, limit, (items) => items.map((r) => numberView(r, r.kind)));
}

export const listPhoneNumbers: Handler<operations['listPhoneNumbers']> = async (request) =>
  listNumbers(request.server.platform, authOf(request).workspaceId, 'listPhoneNumbers', request.query ?? {});

export const listAccountPhoneNumbers: Handler<operations['listAccountPhoneNumbers']> = async (request) => {
  const platform = request.server.platform;
  const { workspaceId } = authOf(request);
  const account = await findAccount(platform.store.db, workspaceId, request.params.wabaId);
  // The cursor is bound to the account, so it cannot continue another account's listing.
  return listNumbers(platform, workspaceId, `listAccountPhoneNumbers:${account.id}`, request.query ?? {}, account.id);
};
