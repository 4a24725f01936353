// The simulated phone of the sandbox: a person types as a customer and the message reaches the
// workspace through the provider's path (signed webhook, dedupe, contact, event), as a real one would.
import type { FastifyInstance } from 'fastify';
import { HttpProblem } from '#server/lib/problems.js';
import { SandboxProvider } from '#server/providers/sandbox.js';

export interface SandboxPhoneMessage {
  /** Our number id (`pn_…`) or the provider's. */
  phoneNumberId: string;
  /** The customer's number, E.164. */
  from: string;
  /** The customer's profile name. */
  name?: string;
  text: string;
  /** When given, the number must belong to this workspace (callers acting for one workspace). */
  workspaceId?: string;
}

const E164 = /^\+?[1-9]\d{7,14}$/;
/** The provider's limit for a text message body. */
const MAX_TEXT = 4096;

export async function sendFromSandboxPhone(app: FastifyInstance, input: SandboxPhoneMessage) {
  const sandbox = app.platform.provider('sandbox');
  if (!(sandbox instanceof SandboxProvider)) throw new Error('the sandbox provider is not configured');
  const from = input.from.trim();
  const errors = [
    ...(E164.test(from) ? [] : [{ pointer: '/body/from', detail: 'must be a phone number in E.164 (+15550100123)' }]),
    ...(input.text.length > 0 && input.text.length <= MAX_TEXT ? [] : [{ pointer: '/body/text', detail: `must have 1 to ${MAX_TEXT} characters` }]),
  ];
  if (errors.length) throw new HttpProblem(400, 'validation', 'One or more inputs are invalid; see errors.', { errors });

  const db = app.platform.store.db;
  let query = db
    .selectFrom('phone_numbers')
    .innerJoin('business_accounts', 'business_accounts.id', 'phone_numbers.business_account_id')
    .select(['phone_numbers.id', 'phone_numbers.provider_phone_number_id'])
    .where('business_accounts.kind', '=', 'sandbox')
    .where((eb) => eb.or([eb('phone_numbers.id', '=', input.phoneNumberId), eb('phone_numbers.provider_phone_number_id', '=', input.phoneNumberId)]));
  if (input.workspaceId) query = query.where('phone_numbers.workspace_id', '=', input.workspaceId);
  const pn = await query.executeTakeFirst();
  if (!pn) throw new HttpProblem(404, 'not-found', 'No such sandbox number.');

  // simulateInbound resolves after the signed POST was handled, so the row exists now.
  const { providerMessageId } = await sandbox.simulateInbound({
    phoneNumberId: pn.provider_phone_number_id,
    from,
    name: input.name,
    message: { type: 'text', text: { body: input.text } },
  });
  const row = await db.selectFrom('messages').select(['id', 'contact_id']).where('provider_message_id', '=', providerMessageId).executeTakeFirstOrThrow();
  return { messageId: row.id, contactId: row.contact_id, phoneNumberId: pn.id, providerMessageId };
}
