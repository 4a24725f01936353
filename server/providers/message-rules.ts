// The Cloud API's rules for the free-form kinds whose limits a JSON schema cannot state alone:
// interactive messages (buttons, lists, call-to-action URLs, Flows, location requests),
// reactions and contact cards. Checked on the very object the provider receives, wherever it
// comes from: the send API (after its schema), automation (after placeholders were expanded)
// and the sandbox provider (which refuses what Meta refuses, with Meta's code 131009).
// Each violation names the field by its path in the provider's payload (`/interactive/…`).
import type { ContactCard, Interactive, OutboundMessage } from './types.js';

export interface RuleViolation {
  /** JSON pointer into the provider's message body (without the envelope). */
  path: string;
  detail: string;
}

/** Meta counts characters, not UTF-16 units. */
const chars = (s: string) => Array.from(s).length;

export const LIMITS = {
  headerText: 60,
  footer: 60,
  body: 1024,
  listBody: 4096,
  buttons: 3,
  buttonTitle: 20,
  buttonId: 256,
  listButton: 20,
  sections: 10,
  rows: 10,
  sectionTitle: 24,
  rowId: 200,
  rowTitle: 24,
  rowDescription: 72,
  ctaText: 20,
  flowCta: 20,
} as const;

/** One emoji (a single grapheme holding a pictograph, with its modifiers and joiners), or none. */
export function isReactionEmoji(emoji: string): boolean {
  if (emoji === '') return true;
  const graphemes = [...new Intl.Segmenter('en', { granularity: 'grapheme' }).segment(emoji)];
  return graphemes.length === 1 && /\p{Extended_Pictographic}|\p{Regional_Indicator}/u.test(emoji);
}

const EMOJI = /\p{Extended_Pictographic}/u;

/** The violations of a message's provider rules; empty when it may be sent. */
export function messageViolations(message: OutboundMessage): RuleViolation[] {
  const out: RuleViolation[] = [];
  const max = (path: string, value: string | undefined, limit: number, what: string) => {
    if (value !== undefined && chars(value) > limit) out.push({ path, detail: `${what} is longer than ${limit} characters (${chars(value)}).` });
  };
  const required = (path: string, value: string | undefined, what: string) => {
    if (!value?.trim()) out.push({ path, detail: `${what} is required.` });
  };
  if (message.type === 'interactive') interactiveRules(message.interactive, max, required, out);
  else if (message.type === 'reaction') {
    if (!isReactionEmoji(message.reaction.emoji)) out.push({ path: '/reaction/emoji', detail: 'A reaction is one emoji, or "" to remove it.' });
    required('/reaction/message_id', message.reaction.message_id, 'The message reacted to');
  } else if (message.type === 'contacts') message.contacts.forEach((c, i) => contactRules(c, `/contacts/${i}`, out));
  return out;
}

type Max = (path: string, value: string | undefined, limit: number, what: string) => void;
type Required = (path: string, value: string | undefined, what: string) => void;

function interactiveRules(m: Interactive, max: Max, required: Required, out: RuleViolation[]): void {
  const p = '/interactive';
  required(`${p}/body/text`, m.body?.text, 'The body text');
  max(`${p}/body/text`, m.body?.text, m.type === 'list' ? LIMITS.listBody : LIMITS.body, 'The body text');
  if ('header' in m && m.header) {
    if (m.type === 'list' && m.header.type !== 'text') out.push({ path: `${p}/header/type`, detail: 'A list takes a text header only.' });
    if (m.header.type === 'text') {
      required(`${p}/header/text`, m.header.text, 'The header text');
      max(`${p}/header/text`, m.header.text, LIMITS.headerText, 'The header text');
    }
  }
  if ('footer' in m && m.footer) max(`${p}/footer/text`, m.footer.text, LIMITS.footer, 'The footer');
  switch (m.type) {
    case 'button': {
      const buttons = m.action.buttons;
      if (buttons.length < 1 || buttons.length > LIMITS.buttons)
        out.push({ path: `${p}/action/buttons`, detail: `A message has 1 to ${LIMITS.buttons} reply buttons (${buttons.length} given).` });
      const ids = new Set<string>();
      const titles = new Set<string>();
      buttons.forEach((b, i) => {
        const bp = `${p}/action/buttons/${i}/reply`;
        required(`${bp}/id`, b.reply.id, 'A button id');
        required(`${bp}/title`, b.reply.title, 'A button title');
        max(`${bp}/id`, b.reply.id, LIMITS.buttonId, 'A button id');
        max(`${bp}/title`, b.reply.title, LIMITS.buttonTitle, 'A button title');
        if (ids.has(b.reply.id)) out.push({ path: `${bp}/id`, detail: `Button ids must be unique: ${b.reply.id} is used twice.` });
        if (titles.has(b.reply.title)) out.push({ path: `${bp}/title`, detail: `Button titles must be unique: ${b.reply.title} is used twice.` });
        ids.add(b.reply.id);
        titles.add(b.reply.title);
      });
      break;
    }
    case 'list': {
      const sections = m.action.sections;
      required(`${p}/action/button`, m.action.button, 'The list button text');
      max(`${p}/action/button`, m.action.button, LIMITS.listButton, 'The list button text');
      if (sections.length < 1 || sections.length > LIMITS.sections)
        out.push({ path: `${p}/action/sections`, detail: `A list has 1 to ${LIMITS.sections} sections (${sections.length} given).` });
      const total = sections.reduce((n, s) => n + s.rows.length, 0);
      if (total > LIMITS.rows) out.push({ path: `${p}/action/sections`, detail: `A list has at most ${LIMITS.rows} rows in all sections (${total} given).` });
      const ids = new Set<string>();
      sections.forEach((s, i) => {
        const sp = `${p}/action/sections/${i}`;
        if (sections.length > 1 && !s.title) out.push({ path: `${sp}/title`, detail: 'Each section needs a title when a list has several.' });
        max(`${sp}/title`, s.title, LIMITS.sectionTitle, 'A section title');
        if (!s.rows.length) out.push({ path: `${sp}/rows`, detail: 'A section has at least one row.' });
        s.rows.forEach((r, j) => {
          const rp = `${sp}/rows/${j}`;
          required(`${rp}/id`, r.id, 'A row id');
          required(`${rp}/title`, r.title, 'A row title');
          max(`${rp}/id`, r.id, LIMITS.rowId, 'A row id');
          max(`${rp}/title`, r.title, LIMITS.rowTitle, 'A row title');
          max(`${rp}/description`, r.description, LIMITS.rowDescription, 'A row description');
          if (ids.has(r.id)) out.push({ path: `${rp}/id`, detail: `Row ids must be unique: ${r.id} is used twice.` });
          ids.add(r.id);
        });
      });
      break;
    }
    case 'cta_url': {
      const a = m.action.parameters;
      required(`${p}/action/parameters/display_text`, a.display_text, 'The button text');
      max(`${p}/action/parameters/display_text`, a.display_text, LIMITS.ctaText, 'The button text');
      if (!/^https?:\/\//i.test(a.url)) out.push({ path: `${p}/action/parameters/url`, detail: 'The button URL must be an http(s) URL.' });
      break;
    }
    case 'flow': {
      const a = m.action.parameters;
      const pp = `${p}/action/parameters`;
      if ((a.flow_id === undefined) === (a.flow_name === undefined)) out.push({ path: `${pp}/flow_id`, detail: 'Give exactly one of flow_id and flow_name.' });
      required(`${pp}/flow_cta`, a.flow_cta, 'The Flow button text');
      max(`${pp}/flow_cta`, a.flow_cta, LIMITS.flowCta, 'The Flow button text');
      if (EMOJI.test(a.flow_cta)) out.push({ path: `${pp}/flow_cta`, detail: 'The Flow button text cannot hold emoji.' });
      const action = a.flow_action ?? 'navigate';
      if (action === 'navigate' && !a.flow_action_payload?.screen)
        out.push({ path: `${pp}/flow_action_payload/screen`, detail: 'A Flow opened with navigate needs flow_action_payload.screen.' });
      if (action === 'data_exchange' && a.flow_action_payload)
        out.push({ path: `${pp}/flow_action_payload`, detail: 'A Flow opened with data_exchange takes no flow_action_payload.' });
      const data = a.flow_action_payload?.data;
      if (data !== undefined && Object.keys(data).length === 0)
        out.push({ path: `${pp}/flow_action_payload/data`, detail: 'flow_action_payload.data, when given, is not empty.' });
      break;
    }
    case 'location_request_message':
      break;
  }
}

function contactRules(c: ContactCard, p: string, out: RuleViolation[]): void {
  const n = c.name;
  if (!n.formatted_name?.trim()) out.push({ path: `${p}/name/formatted_name`, detail: 'A contact card needs name.formatted_name.' });
  if (![n.first_name, n.last_name, n.middle_name, n.prefix, n.suffix].some((v) => v?.trim()))
    out.push({ path: `${p}/name`, detail: 'A contact card name needs at least one of first_name, last_name, middle_name, prefix and suffix.' });
  if (c.birthday && !validDay(c.birthday)) out.push({ path: `${p}/birthday`, detail: 'The birthday is not a date (YYYY-MM-DD).' });
}

function validDay(day: string): boolean {
  const d = new Date(`${day}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === day;
}
