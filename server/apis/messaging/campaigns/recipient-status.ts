// Delivery progress of campaign recipients: a provider status for a campaign's message moves its
// recipient forward. It runs in the transaction of the status delivery (provider-webhook.ts), so
// no notification stands between the status and the recipient.
import type { Kysely, Transaction } from 'kysely';
import type { Platform } from '#server/platform.js';
import type { Database } from '#server/store/schema.js';
import type { RecipientState } from '#server/store/schema/campaigns.js';

/** The recipient states a provider status may follow (forward only; `read` is final). */
const FROM: Record<string, RecipientState[]> = {
  delivered: ['sent'],
  read: ['sent', 'delivered'],
  failed: ['sent', 'delivered'],
};

export async function applyMessageStatus(
  db: Transaction<Database> | Kysely<Database>,
  platform: Platform,
  data: { messageId?: unknown; status?: unknown; errorCode?: unknown },
): Promise<void> {
  const { messageId, status } = data;
  if (typeof messageId !== 'string' || typeof status !== 'string' || !FROM[status]) return;
  const error =
    status === 'failed'
      ? JSON.stringify({ code: typeof data.errorCode === 'number' ? data.errorCode : 'failed', title: 'The provider reported the message failed.' })
      : undefined;
  await db
    .updateTable('campaign_recipients')
    .set({ state: status as RecipientState, updated_at: platform.now(), ...(error ? { error } : {}) })
    .where('message_id', '=', messageId)
    .where('state', 'in', FROM[status])
    .execute();
}

/**
 * applyMessageStatus for the statuses of a batch, in the order they were applied: one statement
 * per state (delivered, then read; failed ones each, for their error). A message's applied
 * statuses only move forward, with `failed` last, so taking the states in that order leaves each
 * recipient as applying them one by one would.
 */
export async function applyMessageStatuses(
  db: Transaction<Database> | Kysely<Database>,
  platform: Platform,
  statuses: { messageId: string; status: string; errorCode?: number }[],
): Promise<void> {
  for (const status of ['delivered', 'read'] as const) {
    const ids = statuses.filter((s) => s.status === status).map((s) => s.messageId);
    if (!ids.length) continue;
    await db
      .updateTable('campaign_recipients')
      .set({ state: status, updated_at: platform.now() })
      .where('message_id', 'in', ids)
      .where('state', 'in', FROM[status]!)
      .execute();
  }
  for (const failed of statuses.filter((s) => s.status === 'failed')) await applyMessageStatus(db, platform, failed);
}
