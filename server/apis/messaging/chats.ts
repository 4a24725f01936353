// The `chats` table: one row per business number and customer, touched in the transaction of
// every message, so the inbox lists with one indexed query instead of grouping `messages`.
import { sql, type Kysely, type Transaction } from 'kysely';
import { newId } from '#server/lib/ids.js';
import type { Database } from '#server/store/schema.js';

type Db = Transaction<Database> | Kysely<Database>;

export interface ChatTouch {
  workspaceId: string;
  phoneNumberId: string;
  contactId: string;
  messageId: string;
  at: Date;
  /** Inbound messages count as unread until the chat is marked read. */
  inbound: boolean;
}

/** Creates the chat if needed and makes `messageId` its newest message (unless a newer one is there). Returns the chat id. */
export async function touchChat(db: Db, t: ChatTouch): Promise<string> {
  const row = await db
    .insertInto('chats')
    .values({
      id: newId('chat'),
      workspace_id: t.workspaceId,
      phone_number_id: t.phoneNumberId,
      contact_id: t.contactId,
      last_message_id: t.messageId,
      last_message_at: t.at,
      unread_count: t.inbound ? 1 : 0,
      created_at: t.at,
    })
    .onConflict((oc) =>
      oc.columns(['phone_number_id', 'contact_id']).doUpdateSet({
        // A late redelivery of an older message must not become the chat's newest.
        last_message_id: sql`case when excluded.last_message_at >= chats.last_message_at then excluded.last_message_id else chats.last_message_id end`,
        last_message_at: sql`greatest(chats.last_message_at, excluded.last_message_at)`,
        unread_count: sql`chats.unread_count + excluded.unread_count`,
      }),
    )
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/** The chat of a number and contact, created without messages when absent (a send before its message row). */
export async function ensureChat(db: Db, workspaceId: string, phoneNumberId: string, contactId: string, at: Date): Promise<string> {
  const chats = await ensureChats(db, [{ workspaceId, phoneNumberId, contactId }], at);
  return chats.get(chatKey(phoneNumberId, contactId))!;
}

/**
 * `ensureChat` for many messages at once (a campaign's flush): the chat of each (number, contact)
 * pair, by `chatKey`, made where none exists. Two statements per number, whatever the count.
 */
export async function ensureChats(db: Db, pairs: { workspaceId: string; phoneNumberId: string; contactId: string }[], at: Date): Promise<Map<string, string>> {
  const chats = new Map<string, string>();
  const byNumber = new Map<string, Map<string, string>>();
  for (const p of pairs) {
    const contacts = byNumber.get(p.phoneNumberId) ?? byNumber.set(p.phoneNumberId, new Map()).get(p.phoneNumberId)!;
    contacts.set(p.contactId, p.workspaceId);
  }
  for (const [phoneNumberId, contacts] of byNumber) {
    const existing = await db
      .selectFrom('chats')
      .select(['id', 'contact_id'])
      .where('phone_number_id', '=', phoneNumberId)
      .where('contact_id', 'in', [...contacts.keys()])
      .execute();
    for (const c of existing) chats.set(chatKey(phoneNumberId, c.contact_id), c.id);
    const missing = [...contacts].filter(([contactId]) => !chats.has(chatKey(phoneNumberId, contactId)));
    if (!missing.length) continue;
    const made = await db
      .insertInto('chats')
      .values(
        missing.map(([contactId, workspaceId]) => ({
          id: newId('chat'),
          workspace_id: workspaceId,
          phone_number_id: phoneNumberId,
          contact_id: contactId,
          last_message_at: at,
          created_at: at,
        })),
      )
      .onConflict((oc) => oc.columns(['phone_number_id', 'contact_id']).doUpdateSet({ workspace_id: sql`chats.workspace_id` }))
      .returning(['id', 'contact_id'])
      .execute();
    for (const c of made) chats.set(chatKey(phoneNumberId, c.contact_id), c.id);
  }
  return chats;
}

export const chatKey = (phoneNumberId: string, contactId: string): string => `${phoneNumberId} ${contactId}`;
