// The layout of the pages people trust: the home page, sign-in, and the Connect consent and
// sign-up pages (which third-party apps' users see), and the error page of a settings page that
// knows no owner yet. In the look of the demo pages: the product's name, a card, a docs link.
// The stylesheet (./assets/page.css) is inlined and allowed by its hash; no script at all.
import { readFileSync } from 'node:fs';
import type { FastifyReply } from 'fastify';
import { html, htmlDocument, trustedHtml, type Html } from './html.js';
import { formPageCsp, pageHeaders, styleElement, styleHash } from './page-headers.js';

export const PRODUCT_NAME = 'Chat platform';
/** The icon of every server (served by server/site/docs-page.ts, not only in development). */
const ICON_PATH = '/docs/assets/favicon.svg';
/** The <link> of that icon: without one, browsers ask for /favicon.ico, which answers 404. */
export const ICON_LINK = html`<link rel="icon" href="${ICON_PATH}" type="image/svg+xml">`;
/** The same icon drawn inline beside the product's name: no request, nothing for the CSP to allow. */
export const MARK = trustedHtml(
  '<svg viewBox="0 0 32 32" aria-hidden="true"><rect width="32" height="32" rx="7" fill="#0b7a53"/><path d="M9 9h9a5 5 0 0 1 0 10h-5v4H9z" fill="#fff"/></svg>',
);

/** The stylesheet of these pages, which the settings pages build on (./settings-layout.ts). */
export const PAGE_CSS = readFileSync(new URL('./assets/page.css', import.meta.url), 'utf8');
const CSS = PAGE_CSS;
/** The CSP source allowing the stylesheet, for pages that set a policy of their own. */
export const PAGE_STYLE = styleHash(CSS);
const CSP = formPageCsp(CSS);

export interface PageParts {
  title: string;
  /** The page's content; `card` puts it in one card under the product's name. */
  body: Html;
  card?: boolean;
  /** Wider than a form (the home page). */
  wide?: boolean;
  /** Shown beside the product's name. */
  tagline?: string;
}

/** The whole document: icon, stylesheet, product name, the page, and links to the home page and the docs. */
export function trustedPageDocument(parts: PageParts): string {
  const { title, body, card = true, wide = false, tagline } = parts;
  return htmlDocument(
    title,
    html`${ICON_LINK}${styleElement(CSS)}`,
    html`<main${wide ? html` class="wide"` : ''}>
<p class="brand">${MARK}<span>${PRODUCT_NAME}</span>${tagline ? html`<small>${tagline}</small>` : ''}</p>
${card ? html`<div class="card">${body}</div>` : body}
<footer><a href="/">Home</a> · <a href="/docs">API documentation</a></footer>
</main>`,
  );
}

export function sendFormPage(reply: FastifyReply, status: number, title: string, body: Html): FastifyReply {
  return reply.code(status).headers(pageHeaders(CSP)).send(trustedPageDocument({ title, body }));
}
