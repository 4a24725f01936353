// A pack's texts in other languages: `data/<slug>.<language>.json` holds only the texts, by the
// keys of the pack's items (templates, tags, fields, quick replies, flows and their nodes,
// funnels and stages); the structure (ids, types, ports, references) stays the base pack's. An
// overlay must translate every text of the base, so no English sentence reaches a German
// customer; a missing one stops the server naming the pack, language and item.
import type { PackData, PackTemplate } from './catalog.js';

type Texts<T> = Partial<Record<string, T>>;

export interface PackOverlay {
  language: string;
  name: string;
  description: string;
  variables?: Texts<{ label?: string; example?: string; default?: string }>;
  templates: Texts<Partial<Pick<PackTemplate, 'header_text' | 'body' | 'body_examples' | 'footer' | 'buttons'>>>;
  tags: Texts<string>;
  custom_fields: Texts<string>;
  quick_replies: Texts<{ title?: string | null; text: string }>;
  flows: Texts<{
    name: string;
    description: string;
    /** Trigger parameters (keywords) by trigger id. */
    triggers?: Texts<Record<string, unknown>>;
    /** Node parameters holding text, by node id. */
    nodes?: Texts<Record<string, unknown>>;
  }>;
  funnels: Texts<{ name: string; stages: Texts<string> }>;
}

/** Node parameters that hold text a customer reads. */
const TEXT_PARAMETERS = ['text', 'question', 'retry_text', 'body', 'header_text', 'footer', 'caption', 'button_text'];

/** The base pack with the overlay's texts; throws naming what the overlay lacks. */
export function localise(base: PackData, overlay: PackOverlay, file: string): PackData {
  const missing = (where: string): never => {
    throw new Error(`industry pack ${file}: ${where}: no text in ${overlay.language}`);
  };
  const need = <T>(texts: Texts<T> | undefined, key: string, where: string): T => texts?.[key] ?? missing(where);
  return {
    ...base,
    language: overlay.language,
    name: overlay.name,
    description: overlay.description,
    variables: base.variables.map((v) => ({ ...v, ...(overlay.variables?.[v.name] ?? {}) })),
    templates: base.templates.map((t) => ({ ...t, ...need(overlay.templates, t.key, `templates/${t.key}`) })),
    tags: base.tags.map((t) => ({ ...t, name: need(overlay.tags, t.key, `tags/${t.key}`) })),
    custom_fields: base.custom_fields.map((c) => ({ ...c, name: need(overlay.custom_fields, c.key, `custom_fields/${c.key}`) })),
    quick_replies: base.quick_replies.map((q) => ({ ...q, ...need(overlay.quick_replies, q.shortcut, `quick_replies/${q.shortcut}`) })),
    flows: base.flows.map((f) => {
      const texts = need(overlay.flows, f.key, `flows/${f.key}`);
      return {
        ...f,
        name: texts.name,
        description: texts.description,
        triggers: f.triggers.map((t) => {
          const p = t.parameters as Record<string, unknown>;
          if (!('keywords' in p)) return t;
          return { ...t, parameters: { ...p, ...need(texts.triggers, t.id, `flows/${f.key}/${t.id}`) } } as typeof t;
        }),
        nodes: f.nodes.map((n) => {
          const p = n.parameters as Record<string, unknown>;
          if (!TEXT_PARAMETERS.some((k) => typeof p[k] === 'string')) return n;
          return { ...n, parameters: { ...p, ...need(texts.nodes, n.id, `flows/${f.key}/${n.id}`) } } as typeof n;
        }),
      };
    }),
    funnels: base.funnels.map((f) => {
      const texts = need(overlay.funnels, f.key, `funnels/${f.key}`);
      return { ...f, name: texts.name, stages: f.stages.map((s) => ({ ...s, name: need(texts.stages, s.key, `funnels/${f.key}/${s.key}`) })) };
    }),
  };
}

/** A pack language (`pt_BR`, `de`) as a BCP 47 tag's parts: language and region. */
function partsOf(language: string): { language: string; region: string | null } {
  const [lang = '', region = null] = language.split(/[_-]/);
  return { language: lang.toLowerCase(), region: region ? region.toUpperCase() : null };
}

/**
 * The pack language for a BCP 47 locale (`pt-BR` → `pt_BR`, `de-AT` → `de`, `pt-PT` → `pt_BR`
 * when that is the only Portuguese), or null when the pack has none in its language.
 */
export function languageFor(locale: string, languages: string[]): string | null {
  const wanted = partsOf(locale);
  const same = languages.filter((l) => partsOf(l).language === wanted.language);
  return same.find((l) => partsOf(l).region === wanted.region) ?? same.find((l) => partsOf(l).region === null) ?? same[0] ?? null;
}

/** Whether a pack language is written in a locale's language (`pt_BR` and `pt-PT` are). */
export function sameLanguage(packLanguage: string, locale: string): boolean {
  return partsOf(packLanguage).language === partsOf(locale).language;
}
