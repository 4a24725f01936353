// The one layout of the owner's settings pages: a nav to every settings page, who is signed in
// and a sign-out button, then the page. The stylesheet is allowed by its hash (no inline script,
// no 'unsafe-inline'), and the headers are the sign-in page's (no framing, no-store, no referrer).
import type { FastifyReply } from 'fastify';
import { SIGN_OUT_PATH, type SignedInOwner } from '../auth/owner-session.js';
import type { HttpProblem } from '../lib/problems.js';
import { ICON_LINK } from './form-layout.js';
import { csrfField } from './forms.js';
import { html, htmlDocument, type Html } from './html.js';
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

const CSS = [
  'body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1b1b1b}',
  'header{display:flex;flex-wrap:wrap;gap:1rem;align-items:center;justify-content:space-between;padding:.5rem 1.5rem;background:#f3f4f6;border-bottom:1px solid #ddd}',
  'nav a{display:inline-block;margin-right:1rem;white-space:nowrap}nav a[aria-current=page]{font-weight:bold}',
  'main{max-width:60rem;margin:1.5rem auto;padding:0 1.5rem}',
  'section{border:1px solid #ddd;border-radius:6px;padding:.5rem 1rem;margin:1rem 0}',
  'form{margin:.5rem 0}form.inline{display:inline-block;margin:0 .5rem 0 0}',
  'label{display:block;margin:.25rem 0}input,select,textarea{font:inherit;margin:.1rem 0 .5rem;max-width:100%}',
  'input[type=text],input[type=url],input:not([type]),textarea{width:30rem}',
  'table{border-collapse:collapse;width:100%}th,td{text-align:left;border-bottom:1px solid #eee;padding:.25rem .5rem;vertical-align:top}',
  '.scroll{overflow-x:auto;max-width:100%}.scroll th{white-space:nowrap}.scroll table:has(thead){min-width:40rem}',
  'code{overflow-wrap:anywhere}[role=alert]{color:#a00;font-weight:bold}[role=status]{background:#eefbe7;border-color:#9c6}',
  '.who{font-size:.9rem}.who form{display:inline}',
  '@media (max-width:40rem){header{padding:.5rem 1rem}main{padding:0 1rem}section{padding:.5rem .75rem}}',
].join('');

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
        html`<header><nav aria-label="Settings">${nav}</nav>
<div class="who">${owner.name} (${owner.email}) <form method="post" action="${SIGN_OUT_PATH}">${csrfField(csrf)}<button type="submit">Sign out</button></form></div></header>
<main><h1>${title}</h1>
${body}</main>`,
      ),
    );
}

/** A table in a box that scrolls sideways when the table is wider than the page (a phone). */
export const scrollingTable = (table: Html): Html => html`<div class="scroll">${table}</div>`;

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
