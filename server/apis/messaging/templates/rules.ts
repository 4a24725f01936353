// A new template checked the way the provider checks it at submission, so a rejection comes back
// at once with the rule and the field (422) instead of days later as REJECTED. The schema has
// already checked shapes, lengths and enums (400); these are the rules across fields.
import type { components } from '#generated/messaging/types.js';
import { HttpProblem } from '#server/lib/problems.js';

type S = components['schemas'];
type Component = Record<string, any>;

/** Meta's template languages (the language codes its template API accepts). */
export const TEMPLATE_LANGUAGES = new Set(
  (
    'af sq ar ar_EG ar_AE ar_LB ar_MA ar_QA az be_BY bn bn_IN bg ca zh_CN zh_HK zh_TW hr cs da prs_AF nl nl_BE en en_GB en_US en_AE en_AU en_CA en_GH en_IE en_IN en_JM en_MY en_NZ en_QA en_SG en_UG en_ZA ' +
    'et fil fi fr fr_BE fr_CA fr_CH fr_CI fr_MA ka de de_AT de_CH el gu ha he hi hu id ga it ja kn kk rw_RW ko ky_KG lo lv lt mk ms ml mr nb ps_AF fa pl pt_BR pt_PT pa ro ru sr si_LK sk sl ' +
    'es es_AR es_CL es_CO es_CR es_DO es_EC es_HN es_MX es_PA es_PE es_ES es_UY sw sv ta te th tr uk ur uz vi zu'
  ).split(' '),
);

export class RuleViolation extends HttpProblem {
  constructor(rule: string, pointer: string, detail: string) {
    super(422, 'unprocessable', `${detail} (rule: ${rule})`, { errors: [{ pointer, detail: `${rule}: ${detail}` }] });
  }
}

const fail = (rule: string, pointer: string, detail: string): never => {
  throw new RuleViolation(rule, pointer, detail);
};

const VARIABLE = /\{\{\s*([^}]*?)\s*\}\}/g;

/** Numbered variables `{{1}}`…`{{n}}` without gaps; returns n. */
function checkVariables(text: string, pointer: string): number {
  const found = [...text.matchAll(VARIABLE)].map((m) => m[1]);
  const named = found.find((v) => !/^\d+$/.test(v));
  if (named !== undefined) fail('numbered-variables', pointer, `Variables are numbered: {{1}}, {{2}}, …; "{{${named}}}" is not.`);
  const numbers = [...new Set(found.map(Number))].sort((x, y) => x - y);
  numbers.forEach((n, i) => {
    if (n !== i + 1) fail('variables-without-gaps', pointer, `Variables must be numbered from {{1}} without gaps; {{${i + 1}}} is missing.`);
  });
  return numbers.length;
}

function checkBody(c: Component, pointer: string, auth: boolean, maxText = 1024): void {
  if (auth) {
    if (c.text !== undefined) fail('authentication-body', `${pointer}/text`, 'AUTHENTICATION bodies have no text: the provider writes it around the code.');
    return;
  }
  if (c.add_security_recommendation !== undefined)
    fail('authentication-only', `${pointer}/add_security_recommendation`, 'Only AUTHENTICATION templates have a security recommendation.');
  if (typeof c.text !== 'string') {
    fail('body-text-required', `${pointer}/text`, 'The body needs text.');
    return;
  }
  if (c.text.length > maxText) fail('body-length', `${pointer}/text`, `The text is longer than ${maxText} characters.`);
  const n = checkVariables(c.text, `${pointer}/text`);
  if (n === 0) return;
  const trimmed = c.text.trim();
  if (/^\{\{\s*\d+\s*\}\}/.test(trimmed) || /\{\{\s*\d+\s*\}\}$/.test(trimmed)) {
    fail('variable-at-edge', `${pointer}/text`, 'The text cannot start or end with a variable.');
  }
  const example = c.example?.body_text?.[0];
  if (!Array.isArray(example)) {
    fail('variable-examples', `${pointer}/example`, `The text has ${n} variable(s): give example.body_text with one sample each.`);
    return;
  }
  if (example.length !== n)
    fail('variable-examples', `${pointer}/example/body_text/0`, `The text has ${n} variable(s); ${example.length} sample(s) were given.`);
}

function checkHeader(c: Component, pointer: string): void {
  const media = ['IMAGE', 'VIDEO', 'DOCUMENT'].includes(c.format);
  if (c.format === 'TEXT') {
    if (typeof c.text !== 'string') fail('header-text-required', `${pointer}/text`, 'A TEXT header needs text.');
    if (c.header_url !== undefined) fail('header-format', `${pointer}/header_url`, 'A TEXT header has no header_url.');
    const n = checkVariables(c.text, `${pointer}/text`);
    if (n > 1) fail('header-one-variable', `${pointer}/text`, 'A header has at most one variable, {{1}}.');
    if (n === 1 && !c.example?.header_text?.length) fail('variable-examples', `${pointer}/example`, 'The header has a variable: give example.header_text.');
    if (n === 0 && c.example !== undefined) fail('variable-examples', `${pointer}/example`, 'The header has no variable to give a sample for.');
  } else if (media) {
    if (!c.header_url) fail('media-header-sample', `${pointer}/header_url`, `A ${c.format} header needs header_url, a public sample file.`);
    if (c.text !== undefined || c.example !== undefined) fail('header-format', `${pointer}/text`, `A ${c.format} header has no text.`);
  } else if (c.text !== undefined || c.header_url !== undefined || c.example !== undefined) {
    fail('header-format', pointer, 'A LOCATION header has no text or sample; the location is given per message.');
  }
}

function checkButtons(buttons: Component[], pointer: string, category: S['TemplateCategory'], inCard: boolean): void {
  const count = (type: string) => buttons.filter((b) => b.type === type).length;
  if (inCard) {
    if (buttons.length > 2) fail('card-buttons', pointer, 'A carousel card has 1 or 2 buttons.');
    buttons.forEach((b, i) => {
      if (!['QUICK_REPLY', 'URL', 'PHONE_NUMBER'].includes(b.type))
        fail('card-button-kinds', `${pointer}/${i}/type`, 'Carousel card buttons are QUICK_REPLY, URL or PHONE_NUMBER.');
    });
  }
  if (count('URL') > 2) fail('button-counts', pointer, 'At most 2 URL buttons.');
  if (count('PHONE_NUMBER') > 1) fail('button-counts', pointer, 'At most 1 PHONE_NUMBER button.');
  if (count('COPY_CODE') > 1) fail('button-counts', pointer, 'At most 1 COPY_CODE button.');
  if (count('VOICE_CALL') > 1 || count('CATALOG') > 1 || count('MPM') > 1 || count('FLOW') > 1)
    fail('button-counts', pointer, 'At most one CATALOG, MPM, VOICE_CALL and FLOW button each.');
  // Quick replies sit together, before or after the other buttons, never between them.
  const kinds = buttons.map((b) => b.type === 'QUICK_REPLY');
  const switches = kinds.slice(1).filter((k, i) => k !== kinds[i]).length;
  if (switches > 1) fail('quick-replies-grouped', pointer, 'Quick-reply buttons must be grouped together.');
  buttons.forEach((b, i) => {
    const p = `${pointer}/${i}`;
    if (b.type === 'OTP' && category !== 'AUTHENTICATION') fail('otp-authentication-only', `${p}/type`, 'OTP buttons belong to AUTHENTICATION templates.');
    if ((b.type === 'CATALOG' || b.type === 'MPM') && category !== 'MARKETING')
      fail('catalog-marketing-only', `${p}/type`, `${b.type} buttons belong to MARKETING templates.`);
    if (b.type === 'URL') {
      const vars = [...String(b.url).matchAll(VARIABLE)];
      if (vars.length > 1 || (vars.length === 1 && !/\{\{1\}\}$/.test(b.url)))
        fail('url-button-variable', `${p}/url`, 'A URL button has at most one variable, {{1}}, at the end of the URL.');
      if (vars.length === 1 && !b.example) fail('variable-examples', `${p}/example`, 'The URL has a variable: give one full sample URL in example.');
      if (vars.length === 0 && b.example) fail('variable-examples', `${p}/example`, 'The URL has no variable to give a sample for.');
    }
    if (b.type === 'OTP') {
      const tap = b.otp_type === 'ONE_TAP' || b.otp_type === 'ZERO_TAP';
      if (tap && !b.supported_apps?.length) fail('otp-apps', `${p}/supported_apps`, `${b.otp_type} needs supported_apps.`);
      if (!tap && (b.supported_apps || b.autofill_text || b.zero_tap_terms_accepted !== undefined))
        fail('otp-apps', `${p}/otp_type`, 'COPY_CODE codes take no apps, autofill text or zero-tap terms.');
      if (b.otp_type === 'ZERO_TAP' && b.zero_tap_terms_accepted !== true)
        fail('zero-tap-terms', `${p}/zero_tap_terms_accepted`, 'ZERO_TAP needs zero_tap_terms_accepted: true.');
    }
  });
}

/** Every rule; throws a RuleViolation (422) naming the first one broken. */
export function checkTemplate(t: S['TemplateCreate']): void {
  if (!TEMPLATE_LANGUAGES.has(t.language)) fail('language', '/body/language', `${t.language} is not a template language of the provider.`);
  const comps = t.components as Component[];
  const at = (type: string) => comps.findIndex((c) => c.type === type);
  for (const type of ['HEADER', 'BODY', 'FOOTER', 'BUTTONS', 'CAROUSEL', 'LIMITED_TIME_OFFER', 'CALL_PERMISSION_REQUEST']) {
    const all = comps.map((c, i) => [c, i] as const).filter(([c]) => c.type === type);
    if (all.length > 1) fail('one-of-each', `/body/components/${all[1][1]}`, `At most one ${type} component.`);
  }
  if (at('BODY') < 0) fail('body-required', '/body/components', 'A template has exactly one BODY.');
  const auth = t.category === 'AUTHENTICATION';
  const p = (type: string) => `/body/components/${at(type)}`;

  if (auth) {
    const other = comps.findIndex((c) => !['BODY', 'FOOTER', 'BUTTONS'].includes(c.type));
    if (other >= 0)
      fail('authentication-components', `/body/components/${other}/type`, 'AUTHENTICATION templates have a body, an optional footer and an OTP button only.');
    const buttons = (comps[at('BUTTONS')]?.buttons ?? []) as Component[];
    if (buttons.length !== 1 || buttons[0].type !== 'OTP')
      fail(
        'authentication-otp-button',
        at('BUTTONS') >= 0 ? `${p('BUTTONS')}/buttons` : '/body/components',
        'AUTHENTICATION templates have exactly one OTP button.',
      );
  } else {
    const otp = comps.findIndex((c) => c.type === 'BUTTONS' && (c.buttons as Component[]).some((b) => b.type === 'OTP'));
    if (otp >= 0) fail('otp-authentication-only', `/body/components/${otp}/buttons`, 'A template with an OTP button must have category AUTHENTICATION.');
  }

  if (at('HEADER') >= 0) checkHeader(comps[at('HEADER')], p('HEADER'));
  checkBody(comps[at('BODY')], p('BODY'), auth);
  if (at('FOOTER') >= 0) {
    const f = comps[at('FOOTER')];
    if (auth && f.text !== undefined) fail('authentication-footer', `${p('FOOTER')}/text`, 'AUTHENTICATION footers have code_expiration_minutes, no text.');
    if (!auth && f.code_expiration_minutes !== undefined)
      fail('authentication-only', `${p('FOOTER')}/code_expiration_minutes`, 'Only AUTHENTICATION footers show a code expiry.');
    if (!auth && typeof f.text !== 'string') fail('footer-text-required', `${p('FOOTER')}/text`, 'The footer needs text.');
    if (typeof f.text === 'string' && [...f.text.matchAll(VARIABLE)].length) fail('footer-no-variables', `${p('FOOTER')}/text`, 'Footers have no variables.');
  }
  if (at('BUTTONS') >= 0) checkButtons(comps[at('BUTTONS')].buttons, `${p('BUTTONS')}/buttons`, t.category, false);

  if (at('CAROUSEL') >= 0) {
    if (auth) fail('authentication-components', p('CAROUSEL'), 'AUTHENTICATION templates have no carousel.');
    if (at('HEADER') >= 0 || at('FOOTER') >= 0 || at('BUTTONS') >= 0)
      fail('carousel-components', p('CAROUSEL'), 'A carousel template has a body and the cards only: no header, footer or buttons.');
    const cards = comps[at('CAROUSEL')].cards as { components: Component[] }[];
    let format: string | undefined;
    let buttonKinds: string | undefined;
    cards.forEach((card, i) => {
      const cp = `${p('CAROUSEL')}/cards/${i}/components`;
      const find = (type: string) => card.components.findIndex((c) => c.type === type);
      const h = find('HEADER');
      if (h < 0 || !['IMAGE', 'VIDEO'].includes(card.components[h].format)) return fail('card-header', cp, 'Each card has an IMAGE or VIDEO header.');
      checkHeader(card.components[h], `${cp}/${h}`);
      format ??= card.components[h].format;
      if (card.components[h].format !== format) fail('cards-alike', `${cp}/${h}/format`, 'Every card has the same header format.');
      const b = find('BODY');
      if (b < 0) fail('card-body', cp, 'Each card has a body.');
      checkBody(card.components[b], `${cp}/${b}`, false, 160);
      const bt = find('BUTTONS');
      if (bt < 0) return fail('card-buttons', cp, 'Each card has 1 or 2 buttons.');
      checkButtons(card.components[bt].buttons, `${cp}/${bt}/buttons`, t.category, true);
      const kinds = (card.components[bt].buttons as Component[]).map((x) => x.type).join(',');
      buttonKinds ??= kinds;
      if (kinds !== buttonKinds) fail('cards-alike', `${cp}/${bt}/buttons`, 'Every card has the same kinds of buttons, in the same order.');
    });
  }

  if (at('LIMITED_TIME_OFFER') >= 0) {
    if (t.category !== 'MARKETING') fail('offer-marketing-only', p('LIMITED_TIME_OFFER'), 'Limited-time offers belong to MARKETING templates.');
    if (at('FOOTER') >= 0) fail('offer-no-footer', p('FOOTER'), 'Limited-time offer templates have no footer.');
    const header = comps[at('HEADER')];
    if (header && !['IMAGE', 'VIDEO'].includes(header.format))
      fail('offer-header', `${p('HEADER')}/format`, 'A limited-time offer header is an IMAGE or VIDEO.');
    const buttons = (comps[at('BUTTONS')]?.buttons ?? []) as Component[];
    if (!buttons.some((b) => b.type === 'URL'))
      fail(
        'offer-buttons',
        at('BUTTONS') >= 0 ? `${p('BUTTONS')}/buttons` : '/body/components',
        'A limited-time offer needs a URL button (and usually a COPY_CODE button).',
      );
  }
  if (at('CALL_PERMISSION_REQUEST') >= 0 && auth)
    fail('authentication-components', p('CALL_PERMISSION_REQUEST'), 'AUTHENTICATION templates cannot ask for call permission.');
}

/** The media headers of a template (the main header and carousel cards' headers), with their pointers. */
export function mediaHeaders(t: S['TemplateCreate']): { url: string; format: string; pointer: string }[] {
  const out: { url: string; format: string; pointer: string }[] = [];
  (t.components as Component[]).forEach((c, i) => {
    if (c.type === 'HEADER' && c.header_url) out.push({ url: c.header_url, format: c.format, pointer: `/body/components/${i}/header_url` });
    if (c.type === 'CAROUSEL') {
      (c.cards as { components: Component[] }[]).forEach((card, j) =>
        card.components.forEach((cc, k) => {
          if (cc.type === 'HEADER' && cc.header_url)
            out.push({ url: cc.header_url, format: cc.format, pointer: `/body/components/${i}/cards/${j}/components/${k}/header_url` });
        }),
      );
    }
  });
  return out;
}
