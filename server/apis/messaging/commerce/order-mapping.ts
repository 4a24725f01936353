// A template mapped to an order event: which of its variables need a value (`header.1`,
// `body.N`, `button.I`), the check that every one is mapped (422 naming the variable), and the
// send parameters filled from an order. Values are literal text, never expanded again.
import type { components } from '#generated/messaging/types.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { VariableMapping } from '#server/store/schema/commerce.js';
import { variablesOf } from '../outbound/template-components.js';
import type { TemplateRow } from '../templates/lookup.js';
import type { OrderFields } from './order-fields.js';

type S = components['schemas'];
type Stored = Record<string, any>;

const unfit = (detail: string, pointer: string, why: string) => new HttpProblem(422, 'unprocessable', detail, { errors: [{ pointer, detail: why }] });

/** The variables of a template an order webhook must fill, in send order; 422 for templates it cannot send. */
export function templateTargets(template: TemplateRow): string[] {
  const stored = (Array.isArray(template.components) ? template.components : []) as Stored[];
  const find = (type: string) => stored.find((c) => c.type === type);
  const cannot = (why: string) => unfit(`Template ${template.id} cannot be sent from an order webhook: ${why}.`, '/body/template_id', why);
  if (template.category === 'AUTHENTICATION') throw cannot('authentication templates carry one-time codes');
  if (find('CAROUSEL')) throw cannot('carousel cards need per-message media');
  if (find('LIMITED_TIME_OFFER')?.limited_time_offer?.has_expiration) throw cannot('the offer expiry is set per message');
  const targets: string[] = [];
  const header = find('HEADER');
  const format = String(header?.format ?? '').toUpperCase();
  if (format === 'LOCATION') throw cannot('location headers are set per message');
  if (['IMAGE', 'VIDEO', 'DOCUMENT'].includes(format) && !header?.header_url) throw cannot(`the ${format.toLowerCase()} header has no sample file to send`);
  if (format === 'TEXT' && variablesOf(header?.text).length) targets.push('header.1');
  variablesOf(find('BODY')?.text).forEach((_, i) => targets.push(`body.${i + 1}`));
  ((find('BUTTONS')?.buttons ?? []) as Stored[]).forEach((b, i) => {
    if (b.type === 'COPY_CODE') throw cannot('copy-code buttons need a code per message');
    if (b.type === 'URL' && variablesOf(b.url).length) targets.push(`button.${i}`);
  });
  return targets;
}

/** Every variable of the template mapped once, and nothing else (422 naming the variable). */
export function checkVariables(template: TemplateRow, variables: VariableMapping[]): void {
  const targets = templateTargets(template);
  const seen = new Set<string>();
  variables.forEach((v, i) => {
    const pointer = `/body/variables/${i}/target`;
    if (seen.has(v.target))
      throw new HttpProblem(400, 'validation', `${v.target} is mapped twice.`, { errors: [{ pointer, detail: 'each variable at most once' }] });
    seen.add(v.target);
    if (!targets.includes(v.target)) throw unfit(`Template ${template.id} has no variable ${v.target}.`, pointer, `the template has no variable ${v.target}`);
  });
  const missing = targets.filter((t) => !seen.has(t));
  if (missing.length) {
    const kind = missing[0]!.split('.')[0];
    const total = targets.filter((t) => t.startsWith(`${kind}.`)).length;
    const mapped = [...seen].filter((t) => t.startsWith(`${kind}.`)).length;
    throw unfit(
      `Template ${template.id} has ${total} ${kind} variable${total === 1 ? '' : 's'}; ${mapped} ${mapped === 1 ? 'is' : 'are'} mapped.`,
      '/body/variables',
      `no mapping for ${missing[0]}`,
    );
  }
}

export type Filled = { template: S['TemplateSendParameters'] } | { missing: string };

/** The send parameters for one order; the first variable with neither a value nor a fallback otherwise. */
export function fillTemplate(template: { name: string; language: string }, variables: VariableMapping[], fields: OrderFields): Filled {
  const value = new Map<string, string>();
  for (const v of variables) {
    const got = fields[v.source as keyof OrderFields] ?? v.fallback;
    if (got === undefined || got === '') return { missing: v.target };
    value.set(v.target, got);
  }
  const targets = [...value.keys()];
  const body = targets.filter((t) => t.startsWith('body.')).sort((a, b) => Number(a.slice(5)) - Number(b.slice(5)));
  const buttons = targets.filter((t) => t.startsWith('button.'));
  return {
    template: {
      name: template.name,
      language: template.language,
      ...(value.has('header.1') ? { header: { type: 'text' as const, text: value.get('header.1')! } } : {}),
      ...(body.length ? { body: body.map((t) => value.get(t)!) } : {}),
      ...(buttons.length ? { buttons: buttons.map((t) => ({ type: 'url' as const, index: Number(t.slice(7)), text: value.get(t)! })) } : {}),
    } as S['TemplateSendParameters'],
  };
}
