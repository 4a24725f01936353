// The published docs pages: /docs (the four APIs, their documents, mocks and clients),
// /docs/<api> (the API reference, rendered in the browser by Scalar from /openapi/<api>.3.1.yaml)
// /docs/<api>/getting-started (a guide from docs/getting-started/<api>.md, with this server's
// address) and /docs/repo/<name> (the repository documents the guides name: docs/*.md, README).
// Every page links the rest of the product (home, settings, the demo pages served); code blocks
// of guides and documents get a copy button (./assets/copy.js, the one script outside Scalar's).
//
// Nothing leaves this server: Scalar's script is served from here by @scalar/fastify-api-reference,
// its default fonts, telemetry, request proxy, AI agent and MCP features are switched off, and each
// page's CSP allows this origin only. No inline script anywhere: Scalar reads its configuration
// from the data attributes of a non-executable <script id="api-reference"> element.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import scalarReference from '@scalar/fastify-api-reference';
import type { ApiName } from '../contract.js';
import { readAssets, serveAssets } from '../html/assets.js';
import { DEMO_LOGIN_PATH, SANDBOX_PHONE_PATH, demoLoginServed, sandboxPhoneServed } from '../html/demo-layout.js';
import { html, htmlDocument, trustedHtml, type Html } from '../html/html.js';
import { pageHeaders } from '../html/page-headers.js';
import { HOME_PATH, SETTINGS_PATH } from './home-page.js';
import {
  APIS,
  DOCS_ASSETS_PATH,
  DOCS_PATH,
  dereferencedUrl,
  documentUrl,
  guideUrl,
  isApiName,
  loadGuides,
  loadRepoDocs,
  REPO_DOCS_PATH,
  referenceUrl,
  repoDocUrl,
  type ApiEntry,
} from './docs-catalogue.js';

const SCALAR_PREFIX = `${DOCS_ASSETS_PATH}/scalar` as const;
export const SCALAR_SCRIPT = `${SCALAR_PREFIX}/js/scalar.js`;
const CSS_URL = `${DOCS_ASSETS_PATH}/docs.css`;
const FAVICON_URL = `${DOCS_ASSETS_PATH}/favicon.svg`;
/** The pages' stylesheet (in the look of the demo pages) and icon, read once: ./assets/. */
const ASSETS_DIR = new URL('./assets/', import.meta.url);
const STYLESHEET = readAssets(ASSETS_DIR, ['docs.css', 'copy.js']);
const COPY_SCRIPT = `${DOCS_ASSETS_PATH}/copy.js`;
const ICON = readAssets(ASSETS_DIR, ['favicon.svg']);

/** Landing page: this origin's stylesheet and links, nothing else. */
const PAGE_CSP = ["default-src 'none'", "style-src 'self'", "img-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'none'"].join('; ');
/** Guides and repository documents: the same, and the copy buttons' script from this origin. */
const ARTICLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

/**
 * The reference page. Scripts: this origin only, no inline script, no eval. Styles need
 * 'unsafe-inline': Scalar (1.46) adds <style> elements of its own (theme, head manager) without
 * the nonce it reads from the `csp-nonce` meta tag, and renders style="…" attributes, neither of
 * which a nonce can allow. Styles cannot run script, and img/connect stay on this origin, so the
 * risk left is limited to restyling. It fetches the document and, from "Test Request", calls this
 * server (connect-src 'self'); its icons are data: URIs.
 */
const REFERENCE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

/** Scalar's configuration: everything that would call a third party is off. */
function scalarConfiguration(api: ApiName, publicUrl: string) {
  return {
    // The dereferenced document: Scalar 1.46 (the last release whose dependencies install on
    // Node 20) warns "document validation errors" on every schema that is a $ref.
    url: dereferencedUrl(api),
    withDefaultFonts: false, // else @font-face rules load from fonts.scalar.com
    telemetry: false,
    agent: { disabled: true }, // "Ask AI" talks to Scalar's servers
    mcp: { disabled: true },
    showDeveloperTools: 'never',
    hideClientButton: true, // the full API client offers Scalar's cloud workspace
    // "Test Request" goes straight to this server (no proxy.scalar.com), which the document's
    // `servers` (127.0.0.1:3000) may not be: offer this server's public URL.
    servers: [{ url: publicUrl, description: 'This server' }],
    documentDownloadType: 'direct',
    defaultOpenAllTags: false,
    expandAllResponses: false,
    theme: 'default',
    layout: 'modern',
  };
}

/** The rest of the product, beside the docs: the home page, the settings and the demo pages this server serves. */
function siteLinks(settings: { demo: boolean; production: boolean }): Html {
  const links: [string, string][] = [
    [HOME_PATH, 'Home'],
    [SETTINGS_PATH, 'Settings'],
    ...(demoLoginServed(settings) ? [[DEMO_LOGIN_PATH, 'Login demo'] as [string, string]] : []),
    ...(sandboxPhoneServed(settings) ? [[SANDBOX_PHONE_PATH, 'Sandbox phone'] as [string, string]] : []),
  ];
  return html`<span class="site">${links.map(([href, label]) => html`<a href="${href}">${label}</a>`)}</span>`;
}

function layout(reply: FastifyReply, status: number, page: { title: string; body: Html; current?: ApiName; csp?: string; site: Html; script?: string }) {
  const nav = html`<nav class="docs-nav" aria-label="Documentation">
<a class="brand" href="${DOCS_PATH}">API docs</a>
${APIS.map((api) => html`<a href="${referenceUrl(api.name)}"${api.name === page.current ? html` aria-current="page"` : ''}>${api.title.replace(/ API$/, '')}</a>`)}
${page.site}
</nav>`;
  return reply
    .code(status)
    .headers({ ...pageHeaders(page.csp ?? PAGE_CSP), 'cache-control': 'no-cache' })
    .send(
      htmlDocument(
        page.title,
        html`
<link rel="icon" href="${FAVICON_URL}" type="image/svg+xml">
<link rel="stylesheet" href="${CSS_URL}">
${page.script ? html`<script src="${page.script}" defer></script>` : ''}
`,
        html`${nav}
${page.body}`,
      ),
    );
}

function apiCard(api: ApiEntry, hasGuide: boolean) {
  return html`<section class="card" id="${api.name}">
<h2><a href="${referenceUrl(api.name)}">${api.title}</a></h2>
<p>${api.summary}</p>
<ul class="links">
<li><a href="${referenceUrl(api.name)}">Reference</a></li>
${hasGuide ? html`<li><a href="${guideUrl(api.name)}">Getting started</a></li>` : ''}
<li>OpenAPI <a href="${documentUrl(api.name, '3.1')}">3.1</a> · <a href="${documentUrl(api.name, '3.0')}">3.0</a>  · <a href="${dereferencedUrl(api.name)}">3.1 dereferenced</a></li>
<li>Mock (<code>npm run mock</code>): port <code>${api.mockPort}</code></li>
<li>TypeScript: <code>${api.client}()</code></li>
</ul>
</section>`;
}

export default async function docsPages(app: FastifyInstance) {
  const { publicUrl } = app.config;
  // Written for http://127.0.0.1:3000, served with this server's address.
  // Rendered at the first page that needs them, not at every start: about 30 ms of Markdown an
  // app build that serves no docs page (every test app) does not spend.
  let guidesLoaded: ReturnType<typeof loadGuides> | undefined;
  let repoDocsLoaded: ReturnType<typeof loadRepoDocs> | undefined;
  const guides = () => (guidesLoaded ??= loadGuides(publicUrl));
  const repoDocs = () => (repoDocsLoaded ??= loadRepoDocs(publicUrl));
  const site = siteLinks(app.config);

  // Only the script route of the plugin is used; the reference pages are ours (layout, CSP).
  await app.register(scalarReference, {
    routePrefix: SCALAR_PREFIX,
    configuration: { url: documentUrl('account', '3.1') },
    logLevel: 'warn',
    hooks: {
      onRequest: async (request: FastifyRequest, reply: FastifyReply) => {
        if (request.url.split('?')[0] !== SCALAR_SCRIPT) return reply.callNotFound();
        // The same 4 MB file until the package changes: let browsers keep it for a day.
        reply.header('cache-control', 'public, max-age=86400');
      },
    },
  });

  serveAssets(app, DOCS_ASSETS_PATH, ICON, 'public, max-age=86400');
  serveAssets(app, DOCS_ASSETS_PATH, STYLESHEET, 'public, max-age=3600');

  app.get(DOCS_PATH, async (_request, reply) =>
    layout(reply, 200, {
      site,
      title: 'API documentation',
      body: html`<main class="wide">
<h1>API documentation</h1>
<p class="lead">Three APIs for your product, and the owner's API that manages them. Each is described by an OpenAPI document generated from one TypeSpec contract; the reference pages, mocks and clients all come from those documents.</p>
<div class="grid">${APIS.map((api) => apiCard(api, guides().has(api.name)))}</div>
<section class="card">
<h2>Mock servers for frontend work</h2>
<p><code>npm run mock</code> starts a Prism mock per API answering with the examples of the documents (add <code>-- --dynamic</code> for generated data): ${APIS.map((api, i) => html`${i ? ', ' : ''}${api.name} <code>:${api.mockPort}</code>`)}. <code>npm run mock:proxy</code> puts a validating proxy in front of the running server and reports every request or response that breaks the contract.</p>
</section>
<section class="card" id="guides">
<h2>Guides</h2>
<p>How each part works, in depth (the repository's <code>docs/</code> folder and its README):</p>
<ul class="links columns">${[...repoDocs()].map(([name, doc]) => html`<li><a href="${repoDocUrl(name)}">${doc.title}</a></li>`)}</ul>
</section>
<section class="card">
<h2>Clients</h2>
<ul>
<li><strong>TypeScript</strong>: <code>clients/</code>, typed from the documents (openapi-fetch), with retries, problem errors, webhook verification, login stream and OAuth helpers.</li>
<li><strong>Python</strong>: <code>npm run clients:python</code> generates <code>clients/python/</code> with openapi-python-client.</li>
<li><strong>Go</strong>: <code>npm run clients:go</code> generates <code>clients/go/</code> with oapi-codegen.</li>
</ul>
</section>
</main>`,
    }),
  );

  app.get<{ Params: { api: string } }>(`${DOCS_PATH}/:api`, async (request, reply) => {
    const name = request.params.api;
    if (!isApiName(name)) return notFound(reply);
    const api = APIS.find((entry) => entry.name === name)!;
    return layout(reply, 200, {
      site,
      title: `${api.title} reference`,
      current: name,
      csp: REFERENCE_CSP,
      body: html`<div class="docs-bar"><span>${api.title}</span>
${guides().has(name) ? html`<a href="${guideUrl(name)}">Getting started</a>` : ''}
<a href="${documentUrl(name, '3.1')}">OpenAPI 3.1</a> <a href="${documentUrl(name, '3.0')}">OpenAPI 3.0</a>  <a href="${dereferencedUrl(name)}">3.1 dereferenced</a>
<span class="muted">Mock (npm run mock): port ${api.mockPort}</span></div>
<script id="api-reference" type="application/json" data-configuration="${JSON.stringify(scalarConfiguration(name, publicUrl))}"></script>
<script src="${SCALAR_SCRIPT}"></script>`,
    });
  });

  app.get<{ Params: { api: string } }>(`${DOCS_PATH}/:api/getting-started`, async (request, reply) => {
    const name = request.params.api;
    const guide = isApiName(name) ? guides().get(name) : undefined;
    if (!isApiName(name) || !guide) return notFound(reply);
    return layout(reply, 200, {
      site,
      title: guide.title,
      current: name,
      csp: ARTICLE_CSP,
      script: COPY_SCRIPT,
      body: html`<main class="guide"><p class="crumbs"><a href="${DOCS_PATH}">Docs</a> › <a href="${referenceUrl(name)}">${APIS.find((a) => a.name === name)!.title}</a> › Getting started</p>
<article>${trustedHtml(guide.html)}</article></main>`,
    });
  });

  // The repository's documents the guides point to (docs/*.md, the README), as pages.
  app.get<{ Params: { name: string } }>(`${REPO_DOCS_PATH}/:name`, async (request, reply) => {
    const doc = repoDocs().get(request.params.name);
    if (!doc) return notFound(reply);
    return layout(reply, 200, {
      site,
      title: doc.title,
      csp: ARTICLE_CSP,
      script: COPY_SCRIPT,
      body: html`<main class="guide"><p class="crumbs"><a href="${DOCS_PATH}">Docs</a> › ${request.params.name === 'README' ? 'README.md' : `docs/${request.params.name}.md`}</p>
<article>${trustedHtml(doc.html)}</article></main>`,
    });
  });

  // Any other /docs/… path: an HTML 404 inside the docs layout, as a browser user expects.
  app.get(`${DOCS_PATH}/*`, async (_request, reply) => notFound(reply));

  function notFound(reply: FastifyReply) {
    return layout(reply, 404, {
      site,
      title: 'Not found',
      body: html`<main class="wide"><h1>Not found</h1><p>There is no documentation page here. <a href="${DOCS_PATH}">All APIs</a></p></main>`,
    });
  }
}
