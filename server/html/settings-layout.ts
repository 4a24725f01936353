// The one layout of the owner's settings pages: a nav to every settings page, who is signed in
// and a sign-out button, then the page. The stylesheet is allowed by its hash (no inline script,
// no 'unsafe-inline'), and the headers are the sign-in page's (no framing, no-store, no referrer).
import type { FastifyReply } from 'fastify';
import { SIGN_OUT_PATH, type SignedInOwner } from '../auth/owner-session.js';
import type { HttpProblem } from '../lib/problems.js';
import { readFileSync } from 'node:fs';
import { ICON_LINK, MARK, PAGE_CSS, PRODUCT_NAME } from './form-layout.js';
import { csrfField } from './forms.js';
import { html, htmlDocument, trustedHtml, type Html } from './html.js';
import { formPageCsp, pageHeaders, styleElement } from './page-headers.js';

export const NAV: { path: string; label: string }[] = [
  { path: '/account', label: 'Overview' },
  { path: '/account/api-keys', label: 'API keys' },
  { path: '/account/connect-clients', label: 'Connect clients' },
  { path: '/account/webhooks', label: 'Webhooks' },
  { path: '/account/login-apps', label: 'Login apps' },
  { path: '/account/numbers', label: 'Numbers' },
  { path: '/account/usage', label: 'Usage' },
];

/**
 * The sign-in and consent pages' stylesheet (./assets/page.css: colours, fields with their label
 * above, buttons), and what the settings add to it (./assets/settings.css: the header, wider
 * cards, small action buttons, tables that stack into one card a row on a phone).
 */
const CSS = `${PAGE_CSS}\n${readFileSync(new URL('./assets/settings.css', import.meta.url), 'utf8')}`;

const CSP = formPageCsp(CSS);

export interface LayoutParts {
  title: string;
  owner: SignedInOwner;
  csrf: string;
  /** The nav entry to mark as the current page. */
  section: string;
  body: Html;
}

export function sendSettingsPage(reply: FastifyReply, status: number, parts: LayoutParts): FastifyReply {
  const { title, owner, csrf, section, body } = parts;
  const nav = NAV.map((n) => html`<a href="${n.path}"${n.path === section ? html` aria-current="page"` : ''}>${n.label}</a>`);
  return reply
    .code(status)
    .headers(pageHeaders(CSP))
    .send(
      htmlDocument(
        `${title} · Settings`,
        html`${ICON_LINK}${styleElement(CSS)}`,
        html`<header class="settings"><a class="brand" href="/">${MARK}<span>${PRODUCT_NAME}</span></a><nav aria-label="Settings">${nav}</nav>
<div class="who"><span>${owner.name} (${owner.email})</span> <form method="post" action="${SIGN_OUT_PATH}">${csrfField(csrf)}<button type="submit" class="secondary">Sign out</button></form></div></header>
<main class="settings"><h1>${title}</h1>
${body}</main>
<footer><a href="/">Home</a> · <a href="/docs">API documentation</a></footer>`,
      ),
    );
}

/**
 * A table in a box that scrolls sideways when the table is wider than the page. A table with a
 * header row also stacks on a phone: each row one card, each cell under its column's name
 * (`data-label`, from the header), its actions at the bottom, so nothing is out of view.
 */
export const scrollingTable = (table: Html): Html => {
  const markup = table.toString();
  const head = /<thead>([\s\S]*?)<\/thead>/.exec(markup)?.[1];
  if (!head) return html`<div class="scroll">${table}</div>`;
  const labels = [...head.matchAll(/<th[^>]*>([\s\S]*?)<\/th>/g)].map((m) => m[1]!.replace(/<[^>]*>/g, '').trim());
  const body = markup.replace(/<tbody>([\s\S]*)<\/tbody>/, (_whole, rows: string) => {
    const labelled = rows.replace(/<tr([^>]*)>([\s\S]*?)<\/tr>/g, (_row, attributes: string, cells: string) => {
      let column = 0;
      // The labels are our own header texts (already escaped markup): attribute-safe once quotes are escaped.
      const withLabels = cells.replace(/<td(?=[\s>])/g, () => `<td data-label="${(labels[column++] ?? '').replace(/"/g, '&quot;')}"`);
      return `<tr${attributes}>${withLabels}</tr>`;
    });
    return `<tbody>${labelled}</tbody>`;
  });
  return html`<div class="scroll stack">${trustedHtml(body)}</div>`;
};

/** Shown once, in the answer to the POST that made it; never stored for a later page. */
export function secretsNotice(title: string, entries: [string, string][], note = 'Copy now: this is the only time it is shown.'): Html {
  return html`<section role="status"><h2>${title}</h2><p>${note}</p>${entries.map(([label, value]) => html`<p>${label}: <code>${value}</code></p>`)}</section>`;
}

/** An API problem as one readable sentence: its detail and the fields at fault. */
export const problemMessage = (error: HttpProblem) =>
  [error.problem.detail, ...(error.problem.errors ?? []).map((e) => `${e.pointer.replace(/^\/(body|path|query)\//, '')}: ${e.detail}`)]
    .filter(Boolean)
    .join(' ');

/** A one-field form posting to `action`, with the CSRF token (a button and optional inputs). */
export function actionForm(action: string, csrf: string, label: string, extra: Html | string = '', inline = true): Html {
  return html`<form${inline ? html` class="inline"` : ''} method="post" action="${action}">${csrfField(csrf)}${extra}<button type="submit">${label}</button></form>`;
}

export const when = (date: string | null | undefined) => (date ? date.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '—');
