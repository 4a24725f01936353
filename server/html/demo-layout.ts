// The look of the demo pages, /demo/login (the Login area) and /sandbox/phone (Messaging): their
// shared stylesheet and icon under /demo/assets/, their CSP, and `sendDemoPage`. Served when the
// demo is on or outside production (server/plugins/browser.ts), like the sandbox phone.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { readAssets, serveAssets } from './assets.js';
import { html, htmlDocument, type Html } from './html.js';
import { pageHeaders } from './page-headers.js';

export const DEMO_LOGIN_PATH = '/demo/login';
export const SANDBOX_PHONE_PATH = '/sandbox/phone';
export const DEMO_ASSETS_PATH = '/demo/assets';
type DemoSettings = { demo: boolean; production: boolean };
/** Whether /demo/login is served: with the demo workspace only. */
export const demoLoginServed = ({ demo }: DemoSettings) => demo;
/** Whether /sandbox/phone and the demo assets are served: with the demo on, or outside production. */
export const sandboxPhoneServed = ({ demo, production }: DemoSettings) => demo || !production;

/** How long browsers may keep the demo pages' scripts and styles. */
export const DEMO_ASSETS_CACHE = 'public, max-age=300';

/** The CSP of the demo pages: scripts, styles and images from this origin only, fetch/SSE to it. */
export function demoCsp(options: { script: boolean }): string {
  return [
    "default-src 'none'",
    ...(options.script ? ["script-src 'self'", "connect-src 'self'"] : []),
    "style-src 'self'",
    "img-src 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

/** Sends a demo page: the shared stylesheet, an optional script (a name under /demo/assets/), and the headers of every page. */
export function sendDemoPage(reply: FastifyReply, status: number, page: { title: string; body: Html; script?: string; head?: Html }): FastifyReply {
  return reply
    .code(status)
    .headers(pageHeaders(demoCsp({ script: Boolean(page.script) })))
    .send(
      htmlDocument(
        page.title,
        html`
<link rel="icon" href="${DEMO_ASSETS_PATH}/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${DEMO_ASSETS_PATH}/demo.css">
${page.head ?? ''}${page.script ? html`<script src="${DEMO_ASSETS_PATH}/${page.script}" defer></script>` : ''}
`,
        page.body,
      ),
    );
}

const ASSETS = readAssets(new URL('./assets/', import.meta.url), ['demo.css', 'favicon.svg']);

/** /demo/assets/demo.css and /demo/assets/favicon.svg (each page serves its own script beside them). */
export async function demoLayoutAssets(app: FastifyInstance): Promise<void> {
  if (sandboxPhoneServed(app.config)) serveAssets(app, DEMO_ASSETS_PATH, ASSETS, DEMO_ASSETS_CACHE);
}
