// Finding a workspace's template by id or by name and language (sending, campaigns, order webhooks).
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '#server/store/schema.js';
import type { MessageTemplatesTable } from '#server/store/schema/messaging-inbox.js';

export type TemplateRow = Selectable<MessageTemplatesTable>;

export type TemplateKey = { id: string } | { name: string; language: string; businessAccountId?: string };

/**
 * The template, or null when the workspace has none matching (another workspace's id included).
 * By name and language, a workspace with several business accounts may hold one per account:
 * pass `businessAccountId` (the sender number's account) to pick the right one; without it the
 * newest match is returned.
 */
export async function findTemplate(db: Kysely<Database>, workspaceId: string, key: TemplateKey): Promise<TemplateRow | null> {
  let query = db.selectFrom('message_templates').selectAll().where('workspace_id', '=', workspaceId);
  if ('id' in key) query = query.where('id', '=', key.id);
  else {
    query = query.where('name', '=', key.name).where('language', '=', key.language);
    if (key.businessAccountId) query = query.where('business_account_id', '=', key.businessAccountId);
  }
  const row = await query.orderBy('created_at', 'desc').limit(1).executeTakeFirst();
  return row ?? null;
}
