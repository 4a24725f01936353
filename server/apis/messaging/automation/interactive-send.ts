// Interactive messages (reply buttons, lists, forms) from a flow. `deliver` (inbox/send.ts) has
// no interactive kind because the contract's SendMessageRequest has none, so this applies the same
// rules with the same exported pieces: the sender of the workspace, the 24-hour window, the
// message row written `pending` before the provider call, the chat touched, the row settled.
import { newId } from '../../../lib/ids.js';
import { HttpProblem } from '../../../lib/problems.js';
import type { Platform } from '../../../platform.js';
import { ProviderError, type OutboundMessage } from '../../../providers/types.js';
import { resolveSender } from '../sender.js';
import { ensureChat, touchChat } from '../inbox/chats.js';
import { WINDOW_MS } from '../inbox/views.js';

export async function sendInteractive(platform: Platform, workspaceId: string, phoneNumberId: string, contactId: string, message: OutboundMessage, text: string): Promise<string> {
  const db = platform.store.db;
  const now = platform.now();
  const sender = await resolveSender(platform, workspaceId, phoneNumberId);
  const contact = await db.selectFrom('contacts').select(['id', 'phone', 'last_inbound_at']).where('id', '=', contactId).where('workspace_id', '=', workspaceId).executeTakeFirstOrThrow();
  const last = contact.last_inbound_at ? new Date(contact.last_inbound_at).getTime() : null;
  if (last === null || now.getTime() - last >= WINDOW_MS) {
    throw new HttpProblem(422, 'outside-window', 'The customer has not written in the last 24 hours: only an approved template can be sent.');
  }
  const id = newId('msg');
  const content = { text, ...(message.type === 'interactive' ? { interactive: message.interactive } : {}) };
  await db.transaction().execute(async (trx) => {
    const chatId = await ensureChat(trx, workspaceId, sender.number.id, contact.id, now);
    await trx
      .insertInto('messages')
      .values({ id, workspace_id: workspaceId, phone_number_id: sender.number.id, contact_id: contact.id, chat_id: chatId, direction: 'outbound', type: message.type, content: JSON.stringify(content), status: 'pending', error: null, created_at: now, status_at: now })
      .execute();
    await touchChat(trx, { workspaceId, phoneNumberId: sender.number.id, contactId: contact.id, messageId: id, at: now, inbound: false });
  });
  try {
    const sent = await sender.provider.sendMessage(sender.providerNumber, contact.phone, message, { bizOpaqueCallbackData: id });
    await db.updateTable('messages').set({ provider_message_id: sent.providerMessageId, status: 'accepted', status_at: platform.now() }).where('id', '=', id).where('status', '=', 'pending').execute();
    return id;
  } catch (error) {
    const timeout = error instanceof ProviderError && error.kind === 'timeout';
    const detail = error instanceof ProviderError ? { code: error.code ?? 0, title: error.message, detail: error.details } : { code: 0, title: 'Internal error', detail: null };
    const at = platform.now();
    await db
      .updateTable('messages')
      .set(timeout ? { status: 'unknown', status_at: at } : { status: 'failed', status_at: at, failed_at: at, error: JSON.stringify(detail) })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .execute();
    throw error instanceof ProviderError ? error.toProblem() : error;
  }
}
