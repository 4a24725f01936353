// Markup for server-rendered pages: a template tag that escapes every value it is given unless
// that value is itself markup, and the document shell every page shares.

/** Markup: a string `html` inserts as is. Made only by `html` and `trustedHtml`. */
class Markup {
  constructor(readonly value: string) {}
  toString() {
    return this.value;
  }
}

export type Html = Markup;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** A template whose interpolations are escaped unless they are themselves `html` (or lists of it). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  const part = (v: unknown): string =>
    v instanceof Markup ? v.value : Array.isArray(v) ? v.map(part).join('') : v === undefined || v === null || v === false ? '' : escapeHtml(String(v));
  return new Markup(strings.reduce((out, s, i) => out + s + (i < values.length ? part(values[i]) : ''), ''));
}

/** Markup we wrote ourselves (a constant stylesheet, a rendered guide), inserted unescaped. Never for a value. */
export const trustedHtml = (markup: string): Html => new Markup(markup);

/** The document shell every server-rendered page shares: charset, viewport, title, then the page's own head and body. */
export function htmlDocument(title: string, head: Html | string, body: Html): string {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>${head}</head>
<body>${body}</body></html>
`.value;
}
