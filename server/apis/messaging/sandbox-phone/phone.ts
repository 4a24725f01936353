// The simulated phone of the sandbox: a person types as a customer and the message reaches the
// workspace through the provider's path (signed webhook, dedupe, contact, event), as a real one would.
import type { FastifyInstance } from 'fastify';
import { HttpProblem } from '#server/lib/problems.js';
import { WA_ID } from '#server/lib/phone.js';
import { SandboxProvider } from '#server/providers/sandbox.js';
import type { InboundContent } from '#server/providers/types.js';
import { checkMedia, displayName, type MediaKind } from '../media/rules.js';

export interface SandboxPhoneMessage {
  /** Our number id (`pn_…`) or the provider's. */
  phoneNumberId: string;
  /** The customer's number, E.164. */
  from: string;
  /** The customer's profile name. */
  name?: string;
  /** The text, or with a file its caption (may then be empty). */
  text: string;
  /** A file the customer sends: an image, a document, audio or a video, told from its bytes. */
  file?: { bytes: Buffer; filename: string; declaredType: string };
  /** When given, the number must belong to this workspace (callers acting for one workspace). */
  workspaceId?: string;
}

/** The provider's limit for a text message body. */
const MAX_TEXT = 4096;

export async function sendFromSandboxPhone(app: FastifyInstance, input: SandboxPhoneMessage) {
  const sandbox = app.platform.provider('sandbox');
  if (!(sandbox instanceof SandboxProvider)) throw new Error('the sandbox provider is not configured');
  const from = input.from.trim();
  const errors = [
    ...(WA_ID.test(from.replace(/^\+/, '')) ? [] : [{ pointer: '/body/from', detail: 'must be a phone number in E.164 (+15550100123)' }]),
    ...((input.text.length > 0 || input.file) && input.text.length <= MAX_TEXT
      ? []
      : [{ pointer: '/body/text', detail: `must have ${input.file ? 0 : 1} to ${MAX_TEXT} characters` }]),
  ];
  if (errors.length) throw new HttpProblem(400, 'validation', 'One or more inputs are invalid; see errors.', { errors });
  const message = input.file ? await fileMessage(input.file, input.text) : ({ type: 'text', text: { body: input.text } } as const);

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
    message,
  });
  const row = await db
    .selectFrom('messages')
    .select(['id', 'contact_id', 'type', 'content'])
    .where('provider_message_id', '=', providerMessageId)
    .executeTakeFirstOrThrow();
  if (input.file) await recordFileFacts(app, row, input.file);
  return { messageId: row.id, contactId: row.contact_id, phoneNumberId: pn.id, providerMessageId };
}

/** The customer's file as the provider delivers it: the kind and type from its bytes (400, 413, 415 as for uploads), the caption, a document's name. */
async function fileMessage(file: NonNullable<SandboxPhoneMessage['file']>, caption: string): Promise<InboundContent> {
  const { kind, mimeType } = await checkMedia(file.bytes, file.declaredType || 'application/octet-stream');
  const captioned = caption && kind !== 'audio' ? { caption } : {};
  const named = kind === 'document' ? { filename: displayName(file.filename, mimeType, kind) } : {};
  return { type: kind, media: { mime_type: mimeType, ...captioned, ...named }, bytes: file.bytes };
}

/**
 * The file's size and name on the stored message: the provider's webhook carries neither (a
 * real client learns the size on download), but the sandbox phone sent the file itself, so the
 * API answers `size_bytes` and `filename` (the device's name, for a photo too) rather than null.
 */
async function recordFileFacts(app: FastifyInstance, row: { id: string; type: string; content: unknown }, file: NonNullable<SandboxPhoneMessage['file']>) {
  const content = (typeof row.content === 'string' ? JSON.parse(row.content) : row.content) as { media?: Record<string, unknown> } | null;
  if (!content?.media) return;
  const media = {
    ...content.media,
    size_bytes: file.bytes.length,
    filename: content.media.filename ?? (file.filename ? displayName(file.filename, String(content.media.mime_type ?? ''), row.type as MediaKind) : null),
  };
  await app.platform.store.db
    .updateTable('messages')
    .set({ content: JSON.stringify({ ...content, media }) })
    .where('id', '=', row.id)
    .execute();
}
