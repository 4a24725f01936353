// The one writer of outbound messages: every row of `messages` with direction `outbound` is
// written here, and every message goes to the provider adapter's sendMessage from here. Two ways:
//
// - recordAndSend (POST /api/chatapp/send, automation, bots, order webhooks): the parts are
//   recorded `pending` in the contact's chat, then sent in order, each row settled `accepted`
//   with its wamid; the first refusal settles its row (`unknown` after a timeout, never re-sent
//   blindly; `failed` otherwise) and the parts after it, and throws the provider's problem.
// - sendOutbound then recordAccepted (the campaign worker): the call is made at the recipient's
//   send slot, and the accepted messages are recorded afterwards in batches, in the worker's
//   transaction that also settles the recipients. These rows join no chat.
import type { Kysely, Transaction } from 'kysely';
import type { components } from '#generated/messaging/types.js';
import { newId } from '#server/lib/ids.js';
import type { Platform } from '#server/platform.js';
import { ProviderError, type OutboundMessage, type SendOptions, type SendResult } from '#server/providers/types.js';
import type { Database } from '#server/store/schema.js';
import { chatKey, ensureChat, ensureChats, touchChat } from '../chats.js';
import type { Sender } from '../sender.js';

type S = components['schemas'];
type Db = Transaction<Database> | Kysely<Database>;

export interface Part {
  type: string;
  message: OutboundMessage;
  content: Record<string, unknown>;
}

export interface Outbound {
  workspaceId: string;
  sender: Sender;
  /** E.164 of the recipient. */
  to: string;
  /** The contact, when known; otherwise the contact of `to`, created if new. */
  contactId?: string;
  parts: Part[];
  options: SendOptions;
  templateId?: string | null;
  /** Our id of the message the first part quotes. */
  replyToId?: string | null;
}

/** A message the provider accepted before it was recorded (a campaign's). */
export interface AcceptedMessage {
  id: string;
  workspaceId: string;
  phoneNumberId: string;
  contactId: string;
  type: string;
  content: Record<string, unknown>;
  providerMessageId: string;
  templateId: string | null;
  /** The campaign that sent it. */
  campaignId: string;
  at: Date;
}

interface OutboundRow {
  id: string;
  workspaceId: string;
  phoneNumberId: string;
  contactId: string;
  chatId: string | null;
  type: string;
  content: Record<string, unknown>;
  status: 'pending' | 'accepted';
  providerMessageId: string | null;
  templateId: string | null;
  replyToId: string | null;
  campaignId?: string | null;
  at: Date;
}

/** The `messages` row of an outbound message. */
function messageRow(r: OutboundRow) {
  return {
    id: r.id,
    workspace_id: r.workspaceId,
    phone_number_id: r.phoneNumberId,
    contact_id: r.contactId,
    chat_id: r.chatId,
    direction: 'outbound' as const,
    type: r.type,
    content: JSON.stringify(r.content),
    provider_message_id: r.providerMessageId,
    status: r.status,
    error: null,
    template_id: r.templateId,
    reply_to_id: r.replyToId,
    campaign_id: r.campaignId ?? null,
    created_at: r.at,
    status_at: r.at,
  };
}

/** The provider call of an outbound message, made for every sender through here. */
export function sendOutbound(sender: Sender, to: string, message: OutboundMessage, options: SendOptions): Promise<SendResult> {
  return sender.provider.sendMessage(sender.providerNumber, to, message, options);
}

/**
 * Records messages the provider has accepted, in the caller's transaction, each in its chat (made
 * where the customer has none yet: a message is always listed with its chat's id).
 */
export async function recordAccepted(db: Db, sent: AcceptedMessage[]): Promise<void> {
  if (!sent.length) return;
  const chats = await ensureChats(db, sent, sent[0]!.at);
  await db
    .insertInto('messages')
    .values(sent.map((m) => messageRow({ ...m, chatId: chats.get(chatKey(m.phoneNumberId, m.contactId)) ?? null, status: 'accepted', replyToId: null })))
    .execute();
}

export async function recordAndSend(platform: Platform, out: Outbound): Promise<{ contactId: string; chatId: string; results: S['SentMessagePart'][] }> {
  const db = platform.store.db;
  const now = platform.now();
  const { workspaceId, sender } = out;
  const rows = out.parts.map((p) => ({ ...p, id: newId('msg') }));
  const { contactId, chatId } = await db.transaction().execute(async (trx) => {
    const contactId =
      out.contactId ??
      (
        await trx
          .insertInto('contacts')
          .values({ id: newId('ct'), workspace_id: workspaceId, phone: out.to, created_at: now, updated_at: now })
          .onConflict((oc) => oc.columns(['workspace_id', 'phone']).doUpdateSet({ updated_at: now }))
          .returning('id')
          .executeTakeFirstOrThrow()
      ).id;
    const chatId = await ensureChat(trx, workspaceId, sender.number.id, contactId, now);
    for (const [i, p] of rows.entries()) {
      // Parts of a group get increasing times so they list in send order.
      const at = new Date(now.getTime() + i);
      await trx
        .insertInto('messages')
        .values(
          messageRow({
            id: p.id,
            workspaceId,
            phoneNumberId: sender.number.id,
            contactId,
            chatId,
            type: p.type,
            content: p.content,
            status: 'pending',
            providerMessageId: null,
            templateId: out.templateId ?? null,
            replyToId: i === 0 ? (out.replyToId ?? null) : null,
            at,
          }),
        )
        .execute();
      await touchChat(trx, { workspaceId, phoneNumberId: sender.number.id, contactId, messageId: p.id, at, inbound: false });
    }
    return { contactId, chatId };
  });

  const results: S['SentMessagePart'][] = [];
  for (const [i, p] of rows.entries()) {
    try {
      // Our id rides along in the callback data: a status can settle the row even when the call timed out.
      const partOptions = { ...out.options, ...(i === 0 ? {} : { replyTo: undefined }), bizOpaqueCallbackData: p.id };
      const sent = await sendOutbound(sender, out.to, p.message, partOptions);
      await db
        .updateTable('messages')
        .set({ provider_message_id: sent.providerMessageId, status: 'accepted', status_at: platform.now() })
        .where('id', '=', p.id)
        .where('status', '=', 'pending')
        .execute();
      results.push({ id: p.id, wamid: sent.providerMessageId, status: 'accepted', type: p.type as S['MediaGroupItemType'] });
    } catch (error) {
      await settleFailure(
        platform,
        p.id,
        rows.slice(i + 1).map((r) => r.id),
        error,
      );
      throw error instanceof ProviderError ? error.toProblem() : error;
    }
  }
  return { contactId, chatId, results };
}

/** The failed part's row, and the parts after it that will not be sent. A timeout leaves the part `unknown`. */
async function settleFailure(platform: Platform, id: string, rest: string[], error: unknown): Promise<void> {
  const db = platform.store.db;
  const now = platform.now();
  const timeout = error instanceof ProviderError && error.kind === 'timeout';
  const providerError =
    error instanceof ProviderError
      ? { code: error.code ?? 0, title: error.message, detail: error.details }
      : { code: 0, title: 'Internal error', detail: null };
  await db.transaction().execute(async (trx) => {
    await trx
      .updateTable('messages')
      .set(timeout ? { status: 'unknown', status_at: now } : { status: 'failed', status_at: now, failed_at: now, error: JSON.stringify(providerError) })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .execute();
    if (rest.length) {
      await trx
        .updateTable('messages')
        .set({
          status: 'failed',
          status_at: now,
          failed_at: now,
          error: JSON.stringify({ code: 0, title: 'Not sent', detail: 'An earlier message of the media group was not accepted.' }),
        })
        .where('id', 'in', rest)
        .where('status', '=', 'pending')
        .execute();
    }
  });
}
