// The home page, `/`: the first address a person opens. Links to the docs, the settings, the
// demo pages where this server serves them (server/html/demo-layout.ts), the health endpoint and
// the OpenAPI documents. No script; the stylesheet of the sign-in and consent pages.
import type { FastifyInstance } from 'fastify';
import { DEMO_LOGIN_PATH, SANDBOX_PHONE_PATH, demoLoginServed, sandboxPhoneServed } from '../html/demo-layout.js';
import { PAGE_STYLE, PRODUCT_NAME, trustedPageDocument } from '../html/form-layout.js';
import { html, type Html } from '../html/html.js';
import { pageHeaders } from '../html/page-headers.js';
import { APIS, DOCS_PATH, documentUrl } from './docs-catalogue.js';

export const HOME_PATH = '/';
const HEALTH_PATH = '/healthz';
export const SETTINGS_PATH = '/account';

const CSP = ["default-src 'none'", `style-src ${PAGE_STYLE}`, "img-src 'self'", "form-action 'none'", "frame-ancestors 'none'", "base-uri 'none'"].join('; ');

const link = (href: string, label: string, text: Html | string) => html`<li><a href="${href}">${label}</a><span>${text}</span></li>`;

export function homeView(settings: { demo: boolean; production: boolean }): Html {
  const tryIt = [
    demoLoginServed(settings) ? link(DEMO_LOGIN_PATH, 'Login demo', 'An example website that signs its users in with a message from their chat app.') : '',
    sandboxPhoneServed(settings)
      ? link(SANDBOX_PHONE_PATH, 'Sandbox phone', 'A simulated phone for the sandbox numbers: send the LOGIN message, or any message, without a real phone.')
      : '',
  ].filter(Boolean);
  return html`<h1>Connect, Login and Messaging APIs</h1>
<p class="muted lead">This server runs the three APIs and the Account API that manages them, all described by one contract.</p>
<section class="card"><h2>Start here</h2><ul class="links">
${link(DOCS_PATH, 'API documentation', 'The reference of each API and a getting-started guide for each.')}
${link(SETTINGS_PATH, 'Settings', html`Your workspace: API keys, Connect clients, webhooks, Login apps, numbers and usage.${settings.demo ? html` Sign in with the demo owner that <code>npm start</code> printed.` : ''}`)}
</ul></section>
${tryIt.length ? html`<section class="card"><h2>Try it in the browser</h2><ul class="links">${tryIt}</ul></section>` : ''}
<section class="card"><h2>For programs</h2><ul class="links">
${link(HEALTH_PATH, 'Health', html`<code>GET ${HEALTH_PATH}</code> answers 200 while the server and its database answer.`)}
<li>OpenAPI 3.1 documents<span class="docs">${APIS.map((api) => html`<a href="${documentUrl(api.name, '3.1')}">${api.name}</a>`)}</span></li>
</ul></section>`;
}

export default async function homePage(app: FastifyInstance) {
  const page = trustedPageDocument({ title: PRODUCT_NAME, body: homeView(app.config), card: false, wide: true });
  app.get(HOME_PATH, async (_request, reply) => reply.headers(pageHeaders(CSP)).send(page));
}
