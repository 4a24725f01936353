// What a run knows while it runs: the contact (attributes, custom fields, tags), the flow's
// variables, the trigger and the last reply. Placeholders are expanded from it once when a node
// runs (an expanded value is never expanded again), and conditions are evaluated against it.

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

/** `text` with its placeholders filled in; an unknown or empty one becomes an empty string. */
export function expand(text: string, state: RunState): string {
  return text.replace(/\{\{\s*([a-z][a-z0-9_.]{0,200})\s*\}\}/gi, (_, path: string) => {
    const value = lookup(state, path);
    if (value === undefined || value === null) return '';
    return typeof value === 'object' ? JSON.stringify(value) : String(value);
  });
}

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
