// Interactive messages (reply buttons, lists, forms) from a flow, built by the same builders as
// the send API's (outbound/interactive.ts). The flow's node holds them, not a SendMessageRequest,
// so this checks the sender of the workspace, the provider's rules on the expanded message (a
// placeholder may have made a title too long) and the 24-hour window itself, then records and
// sends through the same `recordAndSend` as deliver (row `pending` before the provider call,
// chat touched, row settled).
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import type { OutboundMessage } from '#server/providers/types.js';
import { checkProviderRules } from '../outbound/interactive.js';
import { recordAndSend } from '../outbound/record-and-send.js';
import { windowOpen } from '../outbound/service-window.js';
import { resolveSender } from '../sender.js';

export async function sendInteractive(
  platform: Platform,
  workspaceId: string,
  phoneNumberId: string,
  contactId: string,
  message: OutboundMessage,
  text: string,
): Promise<string> {
  const db = platform.store.db;
  const now = platform.now();
  // The node's fields after expansion, named by their place in the provider's message.
  checkProviderRules(message, (path) => `message${path.replaceAll('/', '.')}`);
  const sender = await resolveSender(platform, workspaceId, phoneNumberId);
  const contact = await db
    .selectFrom('contacts')
    .select(['id', 'phone', 'last_inbound_at'])
    .where('id', '=', contactId)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirstOrThrow();
  if (!windowOpen(contact.last_inbound_at, now)) {
    throw new HttpProblem(422, 'outside-window', 'The customer has not written in the last 24 hours: only an approved template can be sent.');
  }
  const content = { text, ...(message.type === 'interactive' ? { interactive: message.interactive } : {}) };
  const { results } = await recordAndSend(platform, {
    workspaceId,
    sender,
    to: contact.phone,
    contactId: contact.id,
    parts: [{ type: message.type, message, content }],
    options: {},
  });
  return results[0]!.id;
}
