// One send of the contract's SendMessageRequest for a workspace, every rule applied: what
// `POST /api/chatapp/send` does after authentication. Automation, bots and order webhooks send
// through here so the 24-hour window, storage and the inbox cannot differ from the API's.
// In order: the sender, the recipient and the quoted message; the parts (parts.ts: template,
// uploads); the 24-hour rule (service-window.ts) and the opt-out; the media URLs (last of the
// checks: one may wait on DNS); a device file's upload; then the parts are recorded and sent
// (record-and-send.ts). Refusals throw HttpProblem.
import type { components } from '#generated/messaging/types.js';
import { requireE164, requirePhone } from '#server/lib/phone.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import { requireNotOptedOut } from '../contacts/opt-out.js';
import { senderOf } from '../sender.js';
import { checkMediaUrls, devicePart, sendParts, type DeviceSend } from './parts.js';
import { workspaceCountry } from '../configuration/messaging-settings.js';
import { recordAndSend } from './record-and-send.js';
import { requireOpenWindow } from './service-window.js';

type S = components['schemas'];
type Body = S['SendMessageRequest'];
type Result = S['SendMessageResult'];

/** Exceptions the server's own sends may claim (never a client's). */
export interface DeliverRules {
  /** The automatic opt-out (or opt-in) confirmation: allowed while the keyword is the customer's latest message. */
  optOutConfirmation?: boolean;
}

/** `chatapp_phone_number` may be our `pn_…` id. A DeviceSend is the API's multipart form. */
export async function deliver(platform: Platform, workspaceId: string, body: Body | DeviceSend, rules: DeliverRules = {}): Promise<Result> {
  const db = platform.store.db;
  const now = platform.now();
  const sender = await senderOf(platform, workspaceId, body.chatapp_phone_number);
  // Written with +, as the contract's E.164 (stored contacts come so); without, a national number
  // of the workspace's country, taken only when valid (`617 555 9008` is never +6175559008).
  const to = body.contact_no.trim().startsWith('+')
    ? requireE164(body.contact_no, '/body/contact_no')
    : requirePhone(body.contact_no, await workspaceCountry(db, workspaceId), '/body/contact_no');
  const contact = await db.selectFrom('contacts').selectAll().where('workspace_id', '=', workspaceId).where('phone', '=', to).executeTakeFirst();

  let replyTo: string | undefined;
  if (body.reply_to) {
    const quoted = contact
      ? await db
          .selectFrom('messages')
          .select('provider_message_id')
          .where('id', '=', body.reply_to)
          .where('workspace_id', '=', workspaceId)
          .where('contact_id', '=', contact.id)
          .where('phone_number_id', '=', sender.number.id)
          .executeTakeFirst()
      : undefined;
    if (!quoted?.provider_message_id) {
      const detail = 'No message with this id in this chat.';
      throw new HttpProblem(404, 'not-found', detail, { errors: [{ pointer: '/body/reply_to', detail }] });
    }
    replyTo = quoted.provider_message_id;
  }

  const { parts, options, route, templateId, mediaUrls } = await sendParts(platform, workspaceId, sender, { to, contact }, body, now);
  requireOpenWindow(body.messageType, contact?.last_inbound_at, now);
  await requireNotOptedOut(db, contact, templateId, rules.optOutConfirmation === true);
  await checkMediaUrls(platform, mediaUrls); // last: a URL's check may wait on DNS
  if ('file' in body) parts.push(await devicePart(platform, workspaceId, sender, body));

  const { contactId, chatId, results } = await recordAndSend(platform, {
    workspaceId,
    sender,
    to,
    parts,
    options: { ...(replyTo ? { replyTo } : {}), ...options },
    templateId,
    replyToId: body.reply_to ?? null,
  });

  const first = results[0];
  return {
    id: first.id,
    wamid: first.wamid,
    status: first.status,
    messageType: body.messageType,
    contact_id: contactId,
    chat_id: chatId,
    contact_no: to,
    chatapp_phone_number: sender.number.display_phone_number,
    route,
    ...(body.messageType === 'media_group' ? { parts: results } : {}),
    created_at: now.toISOString(),
  };
}

/** The opt-out responder's confirmation (contacts/opt-out.ts), a free-form text through the one send path. */
export async function sendOptOutConfirmation(platform: Platform, workspaceId: string, phoneNumberId: string, to: string, text: string): Promise<Result> {
  return deliver(
    platform,
    workspaceId,
    { contact_no: to, chatapp_phone_number: phoneNumberId, messageType: 'text', message: text, preview_url: false },
    { optOutConfirmation: true },
  );
}
