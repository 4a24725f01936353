// POST /api/chatapp/send: every checked before the provider is called (sender, recipient, reply,
// template, media URLs, a device file's bytes, the 24-hour window), then a device file is
// uploaded, the message row is written `pending`, the provider called, and the row settled:
// `accepted` with its wamid, `unknown` after a timeout (never re-sent blindly: a status webhook
// settles it), `failed` with the provider's error.
import type { components, operations } from '../../../../generated/messaging/types.js';
import { authOf } from '../../../auth/authenticate.js';
import type { Handler } from '../../../lib/handler-types.js';
import { requireE164, toE164 } from '../../../lib/phone.js';
import { HttpProblem } from '../../../lib/problems.js';
import { FetchFailedError, UnsafeUrlError } from '../../../lib/safe-fetch.js';
import type { Platform } from '../../../platform.js';
import type { SendOptions } from '../../../providers/types.js';
import { marketingSettings } from '../configuration/marketing.js';
import { resolveSender, type Sender } from '../sender.js';
import { findTemplate } from '../templates/lookup.js';
import { resolveUploadedMedia, uploadRefs } from '../templates/uploaded-media.js';
import { beginIdempotent, finishIdempotent, type IdempotencyClaim } from './idempotency.js';
import { buildTemplateMessage, type RecipientFields } from './template-message.js';
import { recordAndSend, type Part } from './outbound.js';
import { WINDOW_MS } from './views.js';
import { deviceFile, formFields, uploadAndRecord, UploadTimeoutProblem, type DeviceFile, type UploadRow } from '../media/uploads.js';
import type { MediaKind } from '../media/rules.js';

type S = components['schemas'];
type Body = S['SendMessageRequest'];
type Result = S['SendMessageResult'];

/** A `multipart/form-data` send: the form's text parts and the checked file, not yet uploaded. */
interface DeviceSend {
  contact_no: string;
  chatapp_phone_number: string;
  messageType: MediaKind;
  message?: string;
  filename?: string;
  reply_to?: string;
  file: DeviceFile;
}

const field = (pointer: string, detail: string, status: 400 | 404 | 422 = 400) =>
  new HttpProblem(status, status === 400 ? 'validation' : status === 404 ? 'not-found' : 'unprocessable', detail, { errors: [{ pointer, detail }] });

/** The sender by its number (E.164 in any layout), our `pn_…` id or the provider's id. */
export async function senderOf(platform: Platform, workspaceId: string, given: string): Promise<Sender> {
  const pointer = '/body/chatapp_phone_number';
  const e164 = toE164(given);
  const row = e164
    ? await platform.store.db.selectFrom('phone_numbers').select('id').where('workspace_id', '=', workspaceId).where('display_phone_number', '=', e164).executeTakeFirst()
    : undefined;
  try {
    return await resolveSender(platform, workspaceId, row?.id ?? given, pointer);
  } catch (error) {
    if (error instanceof HttpProblem && error.status === 404) {
      throw new HttpProblem(404, 'not-found', `${e164 ?? 'This number'} is not a number of a connected account of this workspace.`, { errors: [{ pointer, detail: 'unknown sender number' }] });
    }
    throw error;
  }
}

/** A media URL as the provider will fetch it: syntax and policy now (400/422 naming the field); the target is the provider's to reach. */
export async function checkMediaUrl(platform: Platform, url: string, pointer: string): Promise<void> {
  try {
    await platform.mediaFetch.check(url);
  } catch (error) {
    if (error instanceof UnsafeUrlError) {
      if (error.status === 400) throw field(pointer, `not an acceptable media URL: ${error.reason}`);
      throw new HttpProblem(422, 'unsafe-url', `The media URL is not a public target: ${error.reason}.`, { errors: [{ pointer, detail: error.reason }] });
    }
    // A name that does not resolve from here may still resolve for the provider.
    if (!(error instanceof FetchFailedError)) throw error;
  }
}

/** A medium by URL, or by a file uploaded to the provider (sent by its media id). */
type MediaSource = { link: string } | { upload: UploadRow };

function mediaPart(type: 'image' | 'video' | 'document' | 'audio', source: MediaSource, caption?: string, filename?: string): Part {
  const ref = 'link' in source ? { link: source.link } : { id: source.upload.provider_media_id };
  // The stored content keeps the upload's ids and digest; the message view shows the contract's fields.
  const media =
    'link' in source
      ? { url: source.link, mime_type: type === 'document' ? 'application/octet-stream' : `${type}/*`, filename: filename ?? null, size_bytes: null }
      : {
          url: null,
          mime_type: source.upload.mime_type,
          filename: filename ?? source.upload.filename,
          size_bytes: Number(source.upload.size_bytes),
          sha256: source.upload.sha256,
          media_id: source.upload.id,
          provider_media_id: source.upload.provider_media_id,
        };
  const content = { ...(caption ? { caption } : {}), media };
  if (type === 'audio') return { type, message: { type: 'audio', audio: ref }, content: { media } };
  if (type === 'document') return { type, message: { type: 'document', document: { ...ref, ...(caption ? { caption } : {}), ...(filename ? { filename } : {}) } }, content };
  return { type, message: type === 'image' ? { type, image: { ...ref, ...(caption ? { caption } : {}) } } : { type, video: { ...ref, ...(caption ? { caption } : {}) } }, content };
}

export const sendMessage: Handler<operations['sendMessage']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  let body: Body | DeviceSend;
  let digestOf: Buffer;
  if (request.isMultipart()) {
    // The form and the file's bytes are checked here; the upload waits for the 24-hour rule.
    const fields = formFields(request, ['contact_no', 'chatapp_phone_number', 'messageType', 'message', 'filename', 'reply_to']);
    const kind = fields.messageType as MediaKind;
    if (kind === 'audio' && fields.message !== undefined) throw field('/body/message', 'Audio has no caption.');
    if (kind !== 'document' && fields.filename !== undefined) throw field('/body/filename', 'Only documents have a file name.');
    const file = await deviceFile(request, kind);
    body = { ...(fields as Omit<DeviceSend, 'file' | 'messageType'>), messageType: kind, file };
    // The same form with the same bytes is the same request.
    digestOf = Buffer.from(JSON.stringify({ ...fields, file_sha256: file.sha256 }));
  } else {
    body = request.body as Body;
    digestOf = request.rawBody ?? Buffer.from(JSON.stringify(body));
  }
  const key = request.headers['idempotency-key'];
  let claim: IdempotencyClaim | null = null;
  if (typeof key === 'string' && key !== '') {
    const begun = await beginIdempotent(platform, workspaceId, key, digestOf);
    if ('replay' in begun) {
      reply.code(begun.replay.status).header('idempotent-replayed', 'true');
      if (begun.replay.status >= 400) reply.type('application/problem+json');
      return reply.send(begun.replay.body);
    }
    claim = begun.claim;
  }
  try {
    const result = await deliverAny(platform, workspaceId, body);
    if (claim) await finishIdempotent(platform, claim, 201, result);
    reply.code(201);
    return result;
  } catch (error) {
    // A settled provider failure is replayed like a success (a retry must not send again);
    // refusals before the provider call and rate limits leave the key free for a retry.
    if (claim) {
      const settled = error instanceof HttpProblem && error.problem.provider_code !== undefined && error.status !== 429;
      const timedOut = error instanceof HttpProblem && error.status === 504 && !(error instanceof UploadTimeoutProblem);
      await finishIdempotent(platform, claim, settled || timedOut ? (error as HttpProblem).status : null, settled || timedOut ? (error as HttpProblem).problem : null);
    }
    throw error;
  }
};

/**
 * One send of the contract's SendMessageRequest for a workspace, every rule applied: what
 * `POST /api/chatapp/send` does after authentication. Automation, bots and order webhooks send
 * through here so the 24-hour window, storage and the inbox cannot differ from the API's.
 * `chatapp_phone_number` may be our `pn_…` id. Refusals throw HttpProblem.
 */
export async function deliver(platform: Platform, workspaceId: string, body: Body): Promise<Result> {
  return deliverAny(platform, workspaceId, body);
}

async function deliverAny(platform: Platform, workspaceId: string, body: Body | DeviceSend): Promise<Result> {
  const db = platform.store.db;
  const now = platform.now();
  const sender = await senderOf(platform, workspaceId, body.chatapp_phone_number);
  const to = requireE164(body.contact_no, '/body/contact_no');
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
    if (!quoted?.provider_message_id) throw field('/body/reply_to', 'No message with this id in this chat.', 404);
    replyTo = quoted.provider_message_id;
  }

  // ---- what to send
  const options: SendOptions = { ...(replyTo ? { replyTo } : {}) };
  let route: S['SendRoute'] = 'cloud_api';
  let templateId: string | null = null;
  const parts: Part[] = [];
  const urls: { url: string; pointer: string }[] = [];
  // A device file's part is built after the 24-hour rule: its upload is a provider call.
  if (!('file' in body)) switch (body.messageType) {
    case 'text':
      parts.push({ type: 'text', message: { type: 'text', text: { body: body.message, ...(body.preview_url ? { preview_url: true } : {}) } }, content: { text: body.message } });
      break;
    case 'image':
    case 'video':
      urls.push({ url: body.mediaUrl, pointer: '/body/mediaUrl' });
      parts.push(mediaPart(body.messageType, { link: body.mediaUrl }, body.message));
      break;
    case 'document':
      urls.push({ url: body.mediaUrl, pointer: '/body/mediaUrl' });
      parts.push(mediaPart('document', { link: body.mediaUrl }, body.message, body.filename ?? fileNameOf(body.mediaUrl)));
      break;
    case 'audio':
      urls.push({ url: body.mediaUrl, pointer: '/body/mediaUrl' });
      parts.push(mediaPart('audio', { link: body.mediaUrl }));
      break;
    case 'location':
      parts.push({ type: 'location', message: { type: 'location', location: body.location }, content: { location: body.location } });
      break;
    case 'media_group':
      body.media.forEach((m, i) => {
        urls.push({ url: m.mediaUrl, pointer: `/body/media/${i}/mediaUrl` });
        if (m.type === 'audio' && m.caption) throw field(`/body/media/${i}/caption`, 'Audio has no caption.');
        parts.push(mediaPart(m.type, { link: m.mediaUrl }, m.caption, m.type === 'document' ? m.filename ?? fileNameOf(m.mediaUrl) : undefined));
      });
      break;
    case 'template': {
      const values = body.template as S['TemplateSendParameters'];
      const template = await findTemplate(db, workspaceId, { name: values.name, language: values.language, businessAccountId: sender.account.id });
      if (!template) throw field('/body/template/name', `No template ${values.name} (${values.language}) for this sender's account.`, 404);
      if (template.status !== 'APPROVED') {
        throw field('/body/template/name', `The template is ${template.status}; only APPROVED templates can be sent.`, 422);
      }
      const fields: RecipientFields = contact
        ? { name: contact.name, phone: contact.phone, email: contact.email, custom_fields: (contact as { custom_fields?: Record<string, unknown> }).custom_fields ?? null }
        : { name: null, phone: to, email: null, custom_fields: null };
      // Uploads are the sender number's and unexpired (422), the workspace's (404), before anything is stored.
      const uploads = await resolveUploadedMedia(platform, workspaceId, sender.number.id, uploadRefs(values));
      const built = buildTemplateMessage(template, values, fields, { mediaUrl: body.mediaUrl, filename: body.filename }, now, uploads);
      urls.push(...built.mediaUrls);
      templateId = template.id;
      parts.push({
        type: 'template',
        message: { type: 'template', template: built.message },
        content: { template: { name: template.name, language: template.language, template_id: template.id }, ...(built.text ? { text: built.text } : {}) },
      });
      if (template.category === 'MARKETING') {
        const settings = await marketingSettings(db, sender.account.id);
        if (settings.enabled) {
          if (settings.onboarding_status === 'ONBOARDED') {
            route = 'marketing_messages';
            Object.assign(options, { route, productPolicy: settings.product_policy, activitySharing: settings.activity_sharing });
          } else if (settings.product_policy === 'STRICT') {
            throw new HttpProblem(422, 'unprocessable', 'Marketing messages are enabled with product_policy STRICT, but the account is not onboarded to them; the message was not sent.');
          }
        }
      }
      break;
    }
  }
  for (const u of urls) await checkMediaUrl(platform, u.url, u.pointer);

  // ---- the 24-hour rule, before any provider call (H15)
  if (body.messageType !== 'template') {
    const last = contact?.last_inbound_at ? new Date(contact.last_inbound_at).getTime() : null;
    if (last === null || now.getTime() - last >= WINDOW_MS) {
      throw new HttpProblem(
        422,
        'outside-window',
        'The customer has not written in the last 24 hours: only an approved template can be sent (messageType "template"; see POST /api/template/create and GET /api/templates).',
        { errors: [{ pointer: '/body/messageType', detail: 'free-form messages need an open 24-hour window; send a template' }] },
      );
    }
  }

  // ---- a device file: uploaded for the sender's number, then sent by its media id
  if ('file' in body) {
    const upload = await uploadAndRecord(platform, workspaceId, sender, body.file);
    const name = body.messageType === 'document' ? body.filename ?? upload.filename ?? undefined : undefined;
    parts.push(mediaPart(body.messageType, { upload }, body.message, name));
  }

  // ---- record, then call the provider part by part
  const { contactId, chatId, results } = await recordAndSend(platform, {
    workspaceId,
    sender,
    to,
    parts,
    options,
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

function fileNameOf(url: string): string | undefined {
  try {
    const name = decodeURIComponent(new URL(url).pathname.split('/').pop() ?? '');
    return name ? name.slice(0, 240) : undefined;
  } catch {
    return undefined;
  }
}
