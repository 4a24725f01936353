// The send API's interactive, reaction, sticker, contact-card and location-request kinds as the
// provider's message parts. The builders of buttons and lists are shared with automation
// (automation/engine.ts), so a flow's buttons and the API's are the same object; the provider's
// rules (providers/message-rules.ts) are checked on what is built, and a violation answers 422
// naming the field of the request.
import type { components } from '#generated/messaging/types.js';
import { HttpProblem } from '#server/lib/problems.js';
import { messageViolations, type RuleViolation } from '#server/providers/message-rules.js';
import type { Interactive, InteractiveButtons, InteractiveHeader, InteractiveList, OutboundMessage } from '#server/providers/types.js';
import type { Part } from './record-and-send.js';
import type { MediaUrl } from './template-fit.js';

type S = components['schemas'];
type HeaderInput = { type: 'text'; text: string } | { type: 'image' | 'video'; mediaUrl: string } | { type: 'document'; mediaUrl: string; filename?: string };
type Frame = { body: string; header?: InteractiveHeader; footer?: string };

function frame(f: Frame) {
  return { ...(f.header ? { header: f.header } : {}), body: { text: f.body }, ...(f.footer ? { footer: { text: f.footer } } : {}) };
}

/** Reply buttons, for the send API and automation's `send_buttons`. */
export function buttonsInteractive(f: Frame & { buttons: { id: string; title: string }[] }): InteractiveButtons {
  return { type: 'button', ...frame(f), action: { buttons: f.buttons.map((b) => ({ type: 'reply', reply: { id: b.id, title: b.title } })) } };
}

/** A list, for the send API and automation's `send_list`. */
export function listInteractive(
  f: Frame & { button: string; sections: { title?: string; rows: { id: string; title: string; description?: string }[] }[] },
): InteractiveList {
  const sections = f.sections.map((s) => ({
    ...(s.title ? { title: s.title } : {}),
    rows: s.rows.map((r) => ({ id: r.id, title: r.title, ...(r.description ? { description: r.description } : {}) })),
  }));
  return { type: 'list', ...frame(f), action: { button: f.button, sections } };
}

function header(h: HeaderInput | undefined, urls: MediaUrl[]): InteractiveHeader | undefined {
  if (!h) return undefined;
  if (h.type === 'text') return { type: 'text', text: h.text };
  urls.push({ url: h.mediaUrl, pointer: '/body/header/mediaUrl' });
  if (h.type === 'document') return { type: 'document', document: { link: h.mediaUrl, ...(h.filename ? { filename: h.filename } : {}) } };
  return h.type === 'image' ? { type: 'image', image: { link: h.mediaUrl } } : { type: 'video', video: { link: h.mediaUrl } };
}

// Provider payload paths → the request's pointers (the shapes map field for field).
const POINTERS: [RegExp, string][] = [
  [/^\/interactive\/body\/text$/, '/body/message'],
  [/^\/interactive\/header\/(.*)$/, '/body/header/$1'],
  [/^\/interactive\/footer\/text$/, '/body/footer'],
  [/^\/interactive\/action\/buttons\/(\d+)\/reply\/(\w+)$/, '/body/buttons/$1/$2'],
  [/^\/interactive\/action\/buttons$/, '/body/buttons'],
  [/^\/interactive\/action\/button$/, '/body/button_text'],
  [/^\/interactive\/action\/sections(.*)$/, '/body/sections$1'],
  [/^\/interactive\/action\/parameters\/display_text$/, '/body/button_text'],
  [/^\/interactive\/action\/parameters\/(.*)$/, '/body/$1'],
  [/^\/reaction\/(\w+)$/, '/body/$1'],
  [/^\/contacts\/(.*)$/, '/body/contacts/$1'],
];

export function requestPointer(path: string): string {
  for (const [re, to] of POINTERS) if (re.test(path)) return path.replace(re, to);
  return `/body${path}`;
}

/** The first violation as a problem: 422 naming the field (`pointer` maps the provider's path). */
export function violationProblem(violations: RuleViolation[], pointer: (path: string) => string = requestPointer): HttpProblem {
  const errors = violations.map((v) => ({ pointer: pointer(v.path), detail: v.detail }));
  return new HttpProblem(422, 'unprocessable', violations[0]!.detail, { errors });
}

/** Refuses a message the provider would refuse (422 naming the field). */
export function checkProviderRules(message: OutboundMessage, pointer?: (path: string) => string): void {
  const violations = messageViolations(message);
  if (violations.length) throw violationProblem(violations, pointer);
}

type Kinds = S['SendButtonsMessage'] | S['SendListMessage'] | S['SendCtaUrlMessage'] | S['SendFlowMessage'] | S['SendLocationRequestMessage'];

/** An interactive kind of the send API as its part; media header URLs are added to `urls` for the caller to check. */
export function interactivePart(body: Kinds, urls: MediaUrl[]): Part {
  const h = 'header' in body ? header(body.header as HeaderInput | undefined, urls) : undefined;
  const f: Frame = { body: body.message, ...(h ? { header: h } : {}), ...('footer' in body && body.footer ? { footer: body.footer } : {}) };
  let interactive: Interactive;
  switch (body.messageType) {
    case 'buttons':
      interactive = buttonsInteractive({ ...f, buttons: body.buttons });
      break;
    case 'list':
      interactive = listInteractive({ ...f, button: body.button_text, sections: body.sections });
      break;
    case 'cta_url':
      interactive = { type: 'cta_url', ...frame(f), action: { name: 'cta_url', parameters: { display_text: body.button_text, url: body.url } } };
      break;
    case 'flow': {
      const parameters = {
        flow_message_version: '3' as const,
        ...(body.flow_id !== undefined ? { flow_id: body.flow_id } : {}),
        ...(body.flow_name !== undefined ? { flow_name: body.flow_name } : {}),
        flow_cta: body.flow_cta,
        ...(body.flow_token !== undefined ? { flow_token: body.flow_token } : {}),
        flow_action: body.flow_action ?? 'navigate',
        ...(body.flow_action_payload ? { flow_action_payload: body.flow_action_payload as { screen: string; data?: Record<string, unknown> } } : {}),
        ...(body.mode ? { mode: body.mode } : {}),
      };
      interactive = { type: 'flow', ...frame(f), action: { name: 'flow', parameters } };
      break;
    }
    case 'location_request':
      interactive = { type: 'location_request_message', body: { text: body.message }, action: { name: 'send_location' } };
      break;
  }
  const message: OutboundMessage = { type: 'interactive', interactive };
  checkProviderRules(message);
  return { type: 'interactive', message, content: { text: body.message, interactive } };
}

/** Contact cards, as given (the contract's card is Graph's). */
export function contactsPart(body: S['SendContactsMessage']): Part {
  const message: OutboundMessage = { type: 'contacts', contacts: body.contacts as never };
  checkProviderRules(message);
  return { type: 'contacts', message, content: { contacts: body.contacts } };
}

/** A reaction to the message whose provider id is `wamid` (our id kept in the content). */
export function reactionPart(body: S['SendReactionMessage'], wamid: string): Part {
  const message: OutboundMessage = { type: 'reaction', reaction: { message_id: wamid, emoji: body.emoji } };
  checkProviderRules(message);
  return { type: 'reaction', message, content: { reaction: { emoji: body.emoji, message_id: body.message_id } } };
}

/** A sticker by URL. */
export function stickerPart(url: string): Part {
  return {
    type: 'sticker',
    message: { type: 'sticker', sticker: { link: url } },
    content: { media: { url, mime_type: 'image/webp', filename: null, size_bytes: null } },
  };
}
