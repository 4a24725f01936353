// What a run knows while it runs: the contact (attributes, custom fields, tags), the flow's
// variables, the trigger and the last reply. Placeholders are expanded from it once when a node
// runs (an expanded value is never expanded again), and conditions are evaluated against it.
import type { CountryCode } from 'libphonenumber-js/min';

/** Contact attributes a flow may read and set besides custom fields. */
export const CONTACT_ATTRIBUTES = ['name', 'email'] as const;

export interface ContactState {
  id: string | null;
  name: string | null;
  phone: string | null;
  email: string | null;
  fields: Record<string, string | number>;
  tags: Set<string>;
}

export interface ReplyState {
  /** The text of the reply, or the title of the button/row clicked. */
  text: string | null;
  /** The button or row id (or template button payload) clicked. */
  id: string | null;
}

export interface RunState {
  contact: ContactState;
  vars: Record<string, unknown>;
  trigger: { text: string | null };
  reply: ReplyState | null;
  /** The workspace's locale for reading answers (Messaging settings), or null. */
  locale: string | null;
  /** The workspace's country national phone numbers are read in (Messaging settings, else its first number's), or null. */
  country?: CountryCode | null;
  /** The locale values go back to the contact in (the workspace's, else the contact's country's); unset: raw values. */
  writeLocale?: string;
}

function lookup(state: RunState, path: string): unknown {
  const [head, ...rest] = path.split('.');
  let value: unknown;
  if (head === 'contact') {
    const [key, ...sub] = rest;
    if (key === 'name') value = state.contact.name;
    else if (key === 'phone') value = state.contact.phone;
    else if (key === 'email') value = state.contact.email;
    else if (key === 'fields' && sub.length === 1) return Object.hasOwn(state.contact.fields, sub[0]!) ? state.contact.fields[sub[0]!] : undefined;
    return rest.length === 1 ? value : undefined;
  }
  if (head === 'trigger') return rest.length === 1 && rest[0] === 'text' ? state.trigger.text : undefined;
  if (head === 'vars' && rest.length >= 1) {
    // Variables may hold an HTTP response: `{{vars.order.status}}` walks into it (own keys only).
    value = state.vars;
    for (const key of rest) {
      if (!value || typeof value !== 'object' || !Object.hasOwn(value, key)) return undefined;
      value = (value as Record<string, unknown>)[key];
    }
    return value;
  }
  return undefined;
}

/** Where a run keeps what each saved answer was (hidden from placeholders: `$` is no name). */
export const KINDS_KEY = '$kinds';

/** What a saved answer was, so it goes back to the customer formatted: an amount (with its currency) or a date. */
export type AnswerKind = { type: 'number'; currency?: string } | { type: 'date' };

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** What a custom field value is, for writing it back: a number field holds a number, a date field an ISO date. */
export function fieldKind(value: unknown): AnswerKind | undefined {
  if (typeof value === 'number') return { type: 'number' };
  if (typeof value === 'string' && ISO_DATE.test(value)) return { type: 'date' };
  return undefined;
}

/** `value` as `locale` writes it (numbers with its separators and currency, dates in words), or null when it is not of `kind`. */
export function formatForCustomer(value: unknown, kind: AnswerKind, locale: string): string | null {
  try {
    if (kind.type === 'date') {
      const m = ISO_DATE.exec(String(value));
      if (!m) return null;
      return new Intl.DateTimeFormat(locale, { dateStyle: 'long', timeZone: 'UTC' }).format(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
    }
    const text = String(value);
    if (!/^-?\d+(\.\d+)?$/.test(text)) return null;
    const options: Intl.NumberFormatOptions = kind.currency ? { style: 'currency', currency: kind.currency } : { maximumFractionDigits: 20 };
    // Intl reads a decimal string exactly, without a float.
    return new Intl.NumberFormat(locale, options).format(text as unknown as number);
  } catch {
    return null;
  }
}

/** `value` as the customer's locale writes it, when it is a saved amount or date (or a number or date field). */
function formatted(path: string, value: unknown, state: RunState): string | null {
  const locale = state.writeLocale;
  if (!locale) return null;
  const [head, ...rest] = path.split('.');
  let kind: AnswerKind | undefined;
  if (head === 'vars' && rest.length === 1) kind = (state.vars[KINDS_KEY] as Record<string, AnswerKind> | undefined)?.[rest[0]!];
  else if (head === 'contact' && rest[0] === 'fields') kind = fieldKind(value);
  return kind ? formatForCustomer(value, kind, locale) : null;
}

/**
 * `text` with its placeholders filled in; an unknown or empty one becomes an empty string.
 * `forCustomer`: for a message to the contact, where saved amounts and dates are written as
 * the contact's locale writes them (`1.5` is "1,5" in de-DE, `2026-12-03` "3. Dezember 2026").
 */
export function expand(text: string, state: RunState, forCustomer = false): string {
  return text.replace(/\{\{\s*([a-z][a-z0-9_.]{0,200})\s*\}\}/gi, (_, path: string) => {
    const value = lookup(state, path);
    if (value === undefined || value === null) return '';
    if (forCustomer) {
      const shown = formatted(path, value, state);
      if (shown !== null) return shown;
    }
    return typeof value === 'object' ? JSON.stringify(value) : String(value);
  });
}

/** `expand` for a message the contact reads. */
export const say = (text: string, state: RunState) => expand(text, state, true);

export interface ConditionRule {
  subject: 'contact_field' | 'tag' | 'reply' | 'variable';
  field?: string;
  tag_id?: string;
  variable?: string;
  operator: string;
  value?: string;
}

function subjectValue(rule: ConditionRule, state: RunState): unknown {
  switch (rule.subject) {
    case 'contact_field':
      return rule.field === 'name'
        ? state.contact.name
        : rule.field === 'email'
          ? state.contact.email
          : rule.field === 'phone'
            ? state.contact.phone
            : Object.hasOwn(state.contact.fields, rule.field!)
              ? state.contact.fields[rule.field!]
              : undefined;
    case 'reply':
      return state.reply?.id ?? state.reply?.text ?? undefined;
    case 'variable':
      return Object.hasOwn(state.vars, rule.variable!) ? state.vars[rule.variable!] : undefined;
    default:
      return undefined;
  }
}

const text = (v: unknown) => (v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v)).toLowerCase();

/** One rule; text comparisons ignore case. A reply matches a button by its id or its title. */
export function holds(rule: ConditionRule, state: RunState): boolean {
  if (rule.subject === 'tag') {
    const has = state.contact.tags.has(rule.tag_id!);
    return rule.operator === 'not_has_tag' ? !has : has;
  }
  const candidates = rule.subject === 'reply' && state.reply ? [state.reply.id, state.reply.text].filter((v) => v !== null) : [subjectValue(rule, state)];
  const value = (rule.value ?? '').toLowerCase();
  const test = (v: unknown): boolean => {
    const s = text(v);
    switch (rule.operator) {
      case 'equals':
        return s === value;
      case 'not_equals':
        return s !== value;
      case 'contains':
        return s.includes(value);
      case 'not_contains':
        return !s.includes(value);
      case 'starts_with':
        return s.startsWith(value);
      case 'greater_than':
      case 'less_than': {
        const a = Number(v);
        const b = Number(rule.value);
        if (v === undefined || v === null || v === '' || !Number.isFinite(a) || !Number.isFinite(b)) return false;
        return rule.operator === 'greater_than' ? a > b : a < b;
      }
      case 'is_set':
        return s.trim() !== '';
      case 'is_not_set':
        return s.trim() === '';
      default:
        return false;
    }
  };
  // Negative operators must hold for every candidate (neither the id nor the title equals it).
  if (rule.operator === 'not_equals' || rule.operator === 'not_contains' || rule.operator === 'is_not_set') return candidates.every(test);
  return candidates.some(test);
}

export function evaluate(match: 'all' | 'any', rules: ConditionRule[], state: RunState): boolean {
  return match === 'any' ? rules.some((r) => holds(r, state)) : rules.every((r) => holds(r, state));
}
