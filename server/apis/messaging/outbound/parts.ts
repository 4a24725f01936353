// What a send sends: the contract's SendMessageRequest as the provider's message parts (one, or
// one per item of a media group), with what the inbox stores of each, the route (a marketing
// template may go as a marketing message) and every media URL checked against the URL policy.
// Refusals throw HttpProblem (400/404/422 naming the field) before anything is stored or sent.
// A device file's part is built apart (devicePart), after the 24-hour rule: its upload is a
// provider call.
import type { components } from '#generated/messaging/types.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import type { SendOptions } from '#server/providers/types.js';
import { marketingSettings } from '../configuration/marketing.js';
import type { MediaKind } from '../media/rules.js';
import { uploadAndRecord, type DeviceFile, type UploadRow } from '../media/uploads.js';
import type { Sender } from '../sender.js';
import { findTemplate } from '../templates/lookup.js';
import { resolveUploadedMedia, uploadRefs } from '../templates/uploaded-media.js';
import { contactsPart, interactivePart, reactionPart, stickerPart } from './interactive.js';
import { checkMediaUrl } from './media-url.js';
import type { Part } from './record-and-send.js';
import { recipientFields, templateContent } from './template-components.js';
import { buildTemplateMessage, type MediaUrl } from './template-fit.js';

type S = components['schemas'];
type Body = S['SendMessageRequest'];

/** A `multipart/form-data` send: the form's text parts and the checked file, not yet uploaded. */
export interface DeviceSend {
  contact_no: string;
  chatapp_phone_number: string;
  messageType: MediaKind;
  message?: string;
  filename?: string;
  reply_to?: string;
  file: DeviceFile;
}

export interface SendParts {
  parts: Part[];
  /** The route and its options (a marketing template's); the caller adds the quoted message. */
  options: SendOptions;
  route: S['SendRoute'];
  templateId: string | null;
  /** The media URLs to check (`checkMediaUrls`) once the cheaper rules have passed: a check may wait on DNS. */
  mediaUrls: MediaUrl[];
}

/** The send's recipient as the parts need it: the number, and its contact row when there is one. */
export interface Recipient {
  to: string;
  contact?: { id?: string; name: string | null; email: string | null; custom_fields?: unknown };
}

const field = (pointer: string, detail: string, status: 400 | 404 | 422 = 400) =>
  new HttpProblem(status, status === 400 ? 'validation' : status === 404 ? 'not-found' : 'unprocessable', detail, { errors: [{ pointer, detail }] });

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
  if (type === 'document')
    return { type, message: { type: 'document', document: { ...ref, ...(caption ? { caption } : {}), ...(filename ? { filename } : {}) } }, content };
  return {
    type,
    message: type === 'image' ? { type, image: { ...ref, ...(caption ? { caption } : {}) } } : { type, video: { ...ref, ...(caption ? { caption } : {}) } },
    content,
  };
}

/** The parts of a send (none yet for a device file); its media URLs are listed, not checked yet. */
export async function sendParts(
  platform: Platform,
  workspaceId: string,
  sender: Sender,
  recipient: Recipient,
  body: Body | DeviceSend,
  now: Date,
): Promise<SendParts> {
  const urls: MediaUrl[] = [];
  const out: SendParts = { parts: [], options: {}, route: 'cloud_api', templateId: null, mediaUrls: urls };
  const parts = out.parts;
  if (!('file' in body))
    switch (body.messageType) {
      case 'text':
        parts.push({
          type: 'text',
          message: { type: 'text', text: { body: body.message, ...(body.preview_url ? { preview_url: true } : {}) } },
          content: { text: body.message },
        });
        break;
      case 'image':
      case 'video': {
        const source = await mediaSource(platform, workspaceId, sender, body.messageType, body, urls);
        parts.push(mediaPart(body.messageType, source, body.message));
        break;
      }
      case 'document': {
        const source = await mediaSource(platform, workspaceId, sender, 'document', body, urls);
        const name = body.filename ?? ('link' in source ? fileNameOf(source.link) : (source.upload.filename ?? undefined));
        parts.push(mediaPart('document', source, body.message, name));
        break;
      }
      case 'audio':
        parts.push(mediaPart('audio', await mediaSource(platform, workspaceId, sender, 'audio', body, urls)));
        break;
      case 'location':
        parts.push({ type: 'location', message: { type: 'location', location: body.location }, content: { location: body.location } });
        break;
      case 'media_group':
        body.media.forEach((m, i) => {
          urls.push({ url: m.mediaUrl, pointer: `/body/media/${i}/mediaUrl` });
          if (m.type === 'audio' && m.caption) throw field(`/body/media/${i}/caption`, 'Audio has no caption.');
          parts.push(mediaPart(m.type, { link: m.mediaUrl }, m.caption, m.type === 'document' ? (m.filename ?? fileNameOf(m.mediaUrl)) : undefined));
        });
        break;
      case 'buttons':
      case 'list':
      case 'cta_url':
      case 'flow':
      case 'location_request':
        parts.push(interactivePart(body, urls));
        break;
      case 'reaction':
        parts.push(reactionPart(body, await reactedWamid(platform, workspaceId, sender, recipient, body.message_id)));
        break;
      case 'sticker':
        urls.push({ url: body.mediaUrl, pointer: '/body/mediaUrl' });
        parts.push(stickerPart(body.mediaUrl));
        break;
      case 'contacts':
        parts.push(contactsPart(body));
        break;
      case 'template': {
        const db = platform.store.db;
        const values = body.template as S['TemplateSendParameters'];
        const template = await findTemplate(db, workspaceId, { name: values.name, language: values.language, businessAccountId: sender.account.id });
        if (!template) throw field('/body/template/name', `No template ${values.name} (${values.language}) for this sender's account.`, 404);
        if (template.status !== 'APPROVED') {
          throw field('/body/template/name', `The template is ${template.status}; only APPROVED templates can be sent.`, 422);
        }
        // Uploads are the sender number's and unexpired (422), the workspace's (404), before anything is stored.
        const uploads = await resolveUploadedMedia(platform, workspaceId, sender.number.id, uploadRefs(values));
        const built = buildTemplateMessage(
          template,
          values,
          recipientFields(recipient.contact, recipient.to),
          { mediaUrl: body.mediaUrl, filename: body.filename },
          now,
          uploads,
        );
        urls.push(...built.mediaUrls);
        out.templateId = template.id;
        parts.push({ type: 'template', message: { type: 'template', template: built.message }, content: templateContent(template, built.text) });
        if (template.category === 'MARKETING') {
          const settings = await marketingSettings(db, sender.account.id);
          if (settings.enabled) {
            if (settings.onboarding_status === 'ONBOARDED') {
              out.route = 'marketing_messages';
              out.options = { route: out.route, productPolicy: settings.product_policy, activitySharing: settings.activity_sharing };
            } else if (settings.product_policy === 'STRICT') {
              throw new HttpProblem(
                422,
                'unprocessable',
                'Marketing messages are enabled with product_policy STRICT, but the account is not onboarded to them; the message was not sent.',
              );
            }
          }
        }
        break;
      }
    }
  return out;
}

/** Each media URL of a send is a public target (422 `unsafe-url`, 400 for one that is no URL). */
export async function checkMediaUrls(platform: Platform, urls: MediaUrl[]): Promise<void> {
  for (const u of urls) await checkMediaUrl(platform, u.url, u.pointer);
}

/**
 * A JSON send's medium: its `mediaUrl` (checked with the others, in `urls`) or its `media_id`, an
 * upload of this workspace for the sender's number, of the message's kind and unexpired (404/422
 * naming the field). Exactly one of the two (400 otherwise).
 */
async function mediaSource(
  platform: Platform,
  workspaceId: string,
  sender: Sender,
  kind: MediaKind,
  body: { mediaUrl?: string; media_id?: string },
  urls: MediaUrl[],
): Promise<MediaSource> {
  if ((body.mediaUrl === undefined) === (body.media_id === undefined)) {
    throw field(body.mediaUrl === undefined ? '/body/mediaUrl' : '/body/media_id', 'Give exactly one of mediaUrl and media_id.');
  }
  if (body.mediaUrl !== undefined) {
    urls.push({ url: body.mediaUrl, pointer: '/body/mediaUrl' });
    return { link: body.mediaUrl };
  }
  const id = body.media_id as string;
  await resolveUploadedMedia(platform, workspaceId, sender.number.id, [{ id, kind, pointer: '/body/media_id' }]);
  const upload = await platform.store.db
    .selectFrom('uploaded_media')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  return { upload };
}

/** A device file's part: the file uploaded for the sender's number, then sent by its media id. */
export async function devicePart(platform: Platform, workspaceId: string, sender: Sender, body: DeviceSend): Promise<Part> {
  const upload = await uploadAndRecord(platform, workspaceId, sender, body.file);
  const name = body.messageType === 'document' ? (body.filename ?? upload.filename ?? undefined) : undefined;
  return mediaPart(body.messageType, { upload }, body.message, name);
}

/** The provider id of the message a reaction is for: a message of this chat (404 naming the field otherwise). */
async function reactedWamid(platform: Platform, workspaceId: string, sender: Sender, recipient: Recipient, messageId: string): Promise<string> {
  const row = recipient.contact?.id
    ? await platform.store.db
        .selectFrom('messages')
        .select('provider_message_id')
        .where('id', '=', messageId)
        .where('workspace_id', '=', workspaceId)
        .where('contact_id', '=', recipient.contact.id)
        .where('phone_number_id', '=', sender.number.id)
        .executeTakeFirst()
    : undefined;
  if (!row?.provider_message_id) throw field('/body/message_id', 'No message with this id in this chat.', 404);
  return row.provider_message_id;
}

function fileNameOf(url: string): string | undefined {
  try {
    const name = decodeURIComponent(new URL(url).pathname.split('/').pop() ?? '');
    return name ? name.slice(0, 240) : undefined;
  } catch {
    return undefined;
  }
}
