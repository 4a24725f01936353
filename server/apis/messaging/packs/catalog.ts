// The industry packs: data files in ./data, read and checked once when first used. A pack that
// breaks a rule (a template the provider would reject, a flow node with bad parameters, a
// reference to an item the pack lacks, a placeholder nobody fills) stops the server with the
// pack, item and rule named, instead of failing for a user at apply time.
import { readdirSync, readFileSync } from 'node:fs';
import type { components } from '#generated/messaging/types.js';
import { checkGraph } from '../automation/validate.js';
import { checkTemplate } from '../templates/rules.js';
import { localise, type PackOverlay } from './languages.js';
import { contractSchema, schemaErrors } from './schemas.js';

type S = components['schemas'];

export interface PackVariable {
  name: string;
  label: string;
  required: boolean;
  example: string;
  /** Used when an optional variable has no value. */
  default?: string;
}

export interface PackTemplate {
  key: string;
  name: string;
  category: 'MARKETING' | 'UTILITY';
  header_text: string | null;
  body: string;
  /** One sample per numbered variable of the body, as the provider's review needs them. */
  body_examples: string[];
  footer: string | null;
  buttons: S['IndustryPackTemplateButton'][];
}

export interface PackFlow {
  key: string;
  name: string;
  description: string;
  /** Trigger priority of the flow created (packFlowPriority when absent). */
  priority?: number;
  triggers: S['FlowTrigger'][];
  nodes: S['FlowNode'][];
  connections: S['FlowConnection'][];
}

export interface PackData {
  slug: string;
  name: string;
  industry: string;
  description: string;
  language: string;
  version: string;
  variables: PackVariable[];
  templates: PackTemplate[];
  tags: S['IndustryPackTagPreview'][];
  custom_fields: S['IndustryPackCustomFieldPreview'][];
  quick_replies: { shortcut: string; title: string | null; text: string }[];
  flows: PackFlow[];
  funnels: S['IndustryPackFunnelPreview'][];
  /** Every language its texts exist in, the base's first (set when loaded). */
  languages?: string[];
}

/** The variables the preview operation takes as query parameters; packs use only these. */
export const PREVIEW_VARIABLES = ['company_name', 'city', 'address', 'phone', 'website', 'opening_hours'] as const;

/** The parameters schema and output ports of each node type packs may use. */
export const NODE_TYPES: Record<string, { schema: string; kind: 'trigger' | 'node'; ports: string[] }> = {
  message_received: { schema: 'FlowMessageReceivedParameters', kind: 'trigger', ports: ['out'] },
  keyword: { schema: 'FlowKeywordParameters', kind: 'trigger', ports: ['out'] },
  send_text: { schema: 'FlowSendTextParameters', kind: 'node', ports: ['out'] },
  send_template: { schema: 'FlowSendTemplateParameters', kind: 'node', ports: ['out'] },
  add_tag: { schema: 'FlowTagParameters', kind: 'node', ports: ['out'] },
  ask: { schema: 'FlowAskParameters', kind: 'node', ports: ['reply', 'invalid', 'timeout'] },
  end: { schema: 'FlowEndParameters', kind: 'node', ports: [] },
};

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;
/** Placeholders the flow engine expands when a node runs (never the pack's). */
const RUNTIME = /^(contact\.(name|phone|email|fields\.[a-z][a-z0-9_]*)|vars\.[a-z][a-z0-9_]*|trigger\.text)$/;
const PACK_REF = /^pack:(tag|template)\/([a-z][a-z0-9_]*)$/;

/**
 * `text` with the pack's variables replaced in one pass: a value is inserted literally and
 * never looked at again, and other placeholders (`{{1}}`, `{{contact.name}}`) are kept.
 */
export function fill(text: string, values: Record<string, string>): string {
  return text.replace(PLACEHOLDER, (whole, name: string) => (Object.hasOwn(values, name) ? values[name] : whole));
}

/** Every string inside `value` filled (flow node parameters). */
export function fillDeep<T>(value: T, values: Record<string, string>): T {
  if (typeof value === 'string') return fill(value, values) as T;
  if (Array.isArray(value)) return value.map((v) => fillDeep(v, values)) as T;
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fillDeep(v, values)])) as T;
  return value;
}

/** The pack variables a text uses. */
export function variablesIn(text: string, pack: PackData): string[] {
  const names = new Set(pack.variables.map((v) => v.name));
  return [...new Set([...text.matchAll(PLACEHOLDER)].map((m) => m[1]).filter((n) => names.has(n)))];
}

/** The provider's create body of a pack template (the `POST /api/template/create` shape). */
export function templateCreate(pack: PackData, t: PackTemplate, values: Record<string, string>, wabaId?: string): S['TemplateCreate'] {
  const components: Record<string, unknown>[] = [];
  if (t.header_text !== null) components.push({ type: 'HEADER', format: 'TEXT', text: fill(t.header_text, values) });
  components.push({ type: 'BODY', text: fill(t.body, values), ...(t.body_examples.length ? { example: { body_text: [t.body_examples] } } : {}) });
  if (t.footer !== null) components.push({ type: 'FOOTER', text: fill(t.footer, values) });
  if (t.buttons.length) components.push({ type: 'BUTTONS', buttons: t.buttons });
  return { ...(wabaId ? { waba_id: wabaId } : {}), name: t.name, language: pack.language, category: t.category, components } as S['TemplateCreate'];
}

/** A problem with a filled template (schema or provider rule) and the component it is in, or null when it is valid. */
export function templateProblem(create: S['TemplateCreate']): { message: string; component: number | null } | null {
  const at = (pointer: string | undefined) => {
    const m = /\/components\/(\d+)/.exec(pointer ?? '');
    return m ? Number(m[1]) : null;
  };
  const validate = contractSchema('TemplateCreate');
  if (!validate(create)) return { message: schemaErrors(validate), component: at(validate.errors?.[0]?.instancePath) };
  try {
    checkTemplate(create);
  } catch (error) {
    const pointer = (error as { problem?: { errors?: { pointer: string }[] } }).problem?.errors?.[0]?.pointer;
    return { message: error instanceof Error ? error.message : String(error), component: at(pointer) };
  }
  return null;
}

/** The pack texts of a template, in the order of its components (header, body, footer, buttons). */
export function componentTexts(t: PackTemplate): string[] {
  return [...(t.header_text !== null ? [t.header_text] : []), t.body, ...(t.footer !== null ? [t.footer] : []), ...(t.buttons.length ? [''] : [])];
}

/** The values of a pack's variables: given ones, else the examples (for checks and samples). */
export function exampleValues(pack: PackData): Record<string, string> {
  return Object.fromEntries(pack.variables.map((v) => [v.name, v.example]));
}

export function checkPack(pack: PackData, file: string): void {
  const fail = (where: string, detail: string): never => {
    throw new Error(`industry pack ${file}: ${where}: ${detail}`);
  };
  const unique = (kind: string, keys: string[]) => keys.forEach((k, i) => keys.indexOf(k) !== i && fail(kind, `"${k}" appears twice`));
  const names = pack.variables.map((v) => v.name);
  unique('variables', names);
  for (const v of pack.variables) {
    if (!(PREVIEW_VARIABLES as readonly string[]).includes(v.name)) fail(`variables/${v.name}`, `not one of ${PREVIEW_VARIABLES.join(', ')}`);
    if (!v.required && v.default === undefined) fail(`variables/${v.name}`, 'an optional variable needs a default');
  }
  unique(
    'templates',
    pack.templates.map((t) => t.key),
  );
  unique(
    'template names',
    pack.templates.map((t) => t.name),
  );
  unique(
    'tags',
    pack.tags.map((t) => t.key),
  );
  unique(
    'tag names',
    pack.tags.map((t) => t.name.toLowerCase()),
  );
  unique(
    'custom_fields',
    pack.custom_fields.map((c) => c.key),
  );
  unique(
    'quick_replies',
    pack.quick_replies.map((q) => q.shortcut),
  );
  unique(
    'flows',
    pack.flows.map((f) => f.key),
  );
  unique(
    'funnels',
    pack.funnels.map((f) => f.key),
  );

  // Placeholders: templates take numbered ones and pack variables; texts sent by flows and
  // quick replies also the ones the engine expands at run time.
  const placeholders = (text: string, where: string, runtime: boolean) => {
    for (const [, name] of text.matchAll(PLACEHOLDER)) {
      if (names.includes(name) || /^\d+$/.test(name) || (runtime && RUNTIME.test(name))) continue;
      fail(where, `placeholder {{${name}}} is neither a pack variable nor expanded at run time`);
    }
  };
  const values = exampleValues(pack);
  for (const t of pack.templates) {
    for (const text of [t.header_text, t.body, t.footer]) if (text) placeholders(text, `templates/${t.key}`, false);
    const problem = templateProblem(templateCreate(pack, t, values));
    if (problem) fail(`templates/${t.key}`, problem.message);
  }
  for (const q of pack.quick_replies) {
    if (!/^[a-z][a-z0-9_]{0,31}$/.test(q.shortcut)) fail(`quick_replies/${q.shortcut}`, 'a shortcut is lowercase letters, digits and _');
    placeholders(q.text, `quick_replies/${q.shortcut}`, true);
  }
  const fields = new Set(pack.custom_fields.map((c) => c.key));
  for (const flow of pack.flows) checkFlow(pack, flow, fields, (where, detail) => fail(`flows/${flow.key}/${where}`, detail), placeholders);
  for (const f of pack.funnels) {
    if (!f.stages.length) fail(`funnels/${f.key}`, 'a funnel needs a stage');
    unique(
      `funnels/${f.key}/stages`,
      f.stages.map((s) => s.key),
    );
  }
  // The preview and listing must fit the contract (with the examples filled in).
  for (const [name, value] of [
    ['IndustryPack', listing(pack)],
    ['IndustryPackPreview', preview(pack, values)],
  ] as const) {
    const validate = contractSchema(name);
    if (!validate(value)) fail(name, schemaErrors(validate));
  }
}

function checkFlow(
  pack: PackData,
  flow: PackFlow,
  fields: Set<string>,
  fail: (where: string, detail: string) => never,
  placeholders: (text: string, where: string, runtime: boolean) => void,
): void {
  const ids = [...flow.triggers, ...flow.nodes].map((n) => n.id);
  ids.forEach((id, i) => ids.indexOf(id) !== i && fail(id, 'the id appears twice'));
  const entries = [...flow.triggers.map((n) => ['trigger', n] as const), ...flow.nodes.map((n) => ['node', n] as const)];
  for (const [kind, node] of entries) {
    const type = NODE_TYPES[node.type];
    if (!type || type.kind !== kind) fail(node.id, `${node.type} is not a ${kind} type packs may use`);
    // References to the pack's own items are resolved at apply time; checked here against the pack.
    const resolved = JSON.parse(JSON.stringify(node.parameters), (_k, v) => {
      if (typeof v !== 'string') return v;
      const ref = PACK_REF.exec(v);
      if (!ref) return v;
      const list = ref[1] === 'tag' ? pack.tags : pack.templates;
      if (!list.some((item) => item.key === ref[2])) fail(node.id, `${v} names no ${ref[1]} of the pack`);
      return `${ref[1] === 'tag' ? 'tag' : 'tpl'}_PackReference00`;
    });
    const validate = contractSchema(type.schema);
    if (!validate(resolved)) fail(node.id, schemaErrors(validate));
    const p = node.parameters as Record<string, unknown>;
    if (typeof p.save_to_field === 'string' && !fields.has(p.save_to_field)) fail(node.id, `save_to_field ${p.save_to_field} is no custom field of the pack`);
    for (const text of Object.values(p)) if (typeof text === 'string') placeholders(text, `${flow.key}/${node.id}`, true);
  }
  // The automation's own checks of a graph (node types, parameters, ports, reachability), with
  // the pack's references standing in as well-formed ids.
  const stand = (v: unknown) =>
    JSON.parse(JSON.stringify(v), (_k, x) =>
      typeof x === 'string' && PACK_REF.test(x) ? (x.startsWith('pack:tag/') ? 'tag_PackReference00' : 'tpl_PackReference00') : x,
    );
  for (const finding of checkGraph({ triggers: stand(flow.triggers), nodes: stand(flow.nodes), connections: flow.connections }))
    fail(finding.pointer, finding.detail);
  for (const c of flow.connections) {
    const from = [...flow.triggers, ...flow.nodes].find((n) => n.id === c.from_node);
    if (!from) fail(c.from_node, 'a connection leaves a node the flow lacks');
    if (!NODE_TYPES[from.type].ports.includes(c.from_port ?? 'out')) fail(c.from_node, `${from.type} has no port ${c.from_port}`);
    if (!flow.nodes.some((n) => n.id === c.to_node)) fail(c.to_node, 'a connection enters a node the flow lacks');
  }
}

/** The catalogue entry of a pack. */
export function listing(pack: PackData): S['IndustryPack'] {
  return {
    slug: pack.slug,
    name: pack.name,
    industry: pack.industry,
    description: pack.description,
    language: pack.language,
    languages: pack.languages ?? [pack.language],
    version: pack.version,
    variables: pack.variables.map(({ name, label, required, example }) => ({ name, label, required, example })),
    contents: {
      templates: pack.templates.length,
      tags: pack.tags.length,
      custom_fields: pack.custom_fields.length,
      quick_replies: pack.quick_replies.length,
      flows: pack.flows.length,
      funnels: pack.funnels.length,
    },
  };
}

/** What the pack would create with `values` filled in (keys absent from `values` stay as placeholders). */
export function preview(pack: PackData, values: Record<string, string>, missing: string[] = []): S['IndustryPackPreview'] {
  return {
    slug: pack.slug,
    name: pack.name,
    version: pack.version,
    // The generator types an open string map as Record<string, never>; the schema is a string map.
    variables: values as unknown as S['IndustryPackPreview']['variables'],
    missing_variables: missing,
    templates: pack.templates.map((t) => ({
      key: t.key,
      name: t.name,
      category: t.category,
      language: pack.language,
      header_text: t.header_text === null ? null : fill(t.header_text, values),
      body: fill(t.body, values),
      footer: t.footer === null ? null : fill(t.footer, values),
      buttons: t.buttons,
    })),
    tags: pack.tags,
    custom_fields: pack.custom_fields,
    quick_replies: pack.quick_replies.map((q) => ({ shortcut: q.shortcut, text: fill(q.text, values) })),
    flows: pack.flows.map((f) => ({ ...f, triggers: f.triggers, nodes: fillDeep(f.nodes, values) })),
    funnels: pack.funnels,
  };
}

let packs: Map<string, PackData> | undefined;
let translations: Map<string, Map<string, PackData>> | undefined;

/** Every pack, by slug, in its base language (read and checked on first use). */
export function industryPacks(): Map<string, PackData> {
  if (packs) return packs;
  const dir = new URL('./data/', import.meta.url);
  const loaded = new Map<string, PackData>();
  const languages = new Map<string, Map<string, PackData>>();
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort();
  // `<slug>.json` is a pack; `<slug>.<language>.json` its texts in another language.
  for (const file of files.filter((f) => f.split('.').length === 2)) {
    const pack = JSON.parse(readFileSync(new URL(file, dir), 'utf8')) as PackData;
    if (`${pack.slug}.json` !== file) throw new Error(`industry pack ${file}: the file is named after its slug`);
    checkPack(pack, file);
    loaded.set(pack.slug, pack);
    languages.set(pack.slug, new Map([[pack.language, pack]]));
  }
  for (const file of files.filter((f) => f.split('.').length === 3)) {
    const [slug = '', language = ''] = file.split('.');
    const base = loaded.get(slug);
    if (!base) throw new Error(`industry pack ${file}: no pack ${slug}.json to translate`);
    const overlay = JSON.parse(readFileSync(new URL(file, dir), 'utf8')) as PackOverlay;
    if (overlay.language !== language) throw new Error(`industry pack ${file}: the file is named after its language (${overlay.language})`);
    const translated = localise(base, overlay, file);
    checkPack(translated, file);
    languages.get(slug)!.set(language, translated);
  }
  for (const [slug, byLanguage] of languages) {
    const all = [...byLanguage.keys()];
    for (const pack of byLanguage.values()) pack.languages = all;
    loaded.get(slug)!.languages = all;
  }
  packs = loaded;
  translations = languages;
  return packs;
}

/** A pack in one of its languages, or undefined. */
export function industryPackIn(slug: string, language: string): PackData | undefined {
  industryPacks();
  return translations?.get(slug)?.get(language);
}

/**
 * The trigger priority a pack's flow is created with: its own `priority`, else 100 for a
 * new-contact welcome (a new customer is greeted and tagged before anything else) and 50 for
 * other flows, less the flow's place in the pack, so two flows of one pack that match the same
 * message always answer in the pack's order (never by their random ids).
 */
export function packFlowPriority(flow: PackFlow, index: number): number {
  if (flow.priority !== undefined) return flow.priority;
  const welcome = flow.triggers.some((t) => t.type === 'message_received' && (t.parameters as { new_contacts_only?: boolean }).new_contacts_only === true);
  return (welcome ? 100 : 50) - index;
}
