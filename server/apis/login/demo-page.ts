// The Login demo, `/demo/login`: a page that behaves like a client website's "sign in with your
// chat app". Its own small backend (`/demo/login/api/…`) holds the demo Login app's API key and
// calls our Login API in process (`app.inject` with `X-API-Key`), exactly as a client's server
// would over HTTPS: start → the page shows the QR code, the link and the code and listens on
// the session's event stream; on `verified` the page asks its backend to complete, which reads
// the verification token (status) and redeems it (verify-token). The browser only ever sees what
// a client's browser would: the session id, its subscribe token and what it shows.
//
// The page is plain HTML with one external script and stylesheet served from `/demo/assets/`
// (CSP `script-src 'self'`, nothing inline, no other host). The session being signed in and the
// signed-in user live in signed httpOnly cookies of this browser, not in the page.
//
// Also here: the shared assets of the demo pages and `sendDemoPage`, used by /sandbox/phone.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type {} from '@fastify/cookie';
import type {} from '@fastify/csrf-protection';
import { demoLoginApp, type DemoLoginApp } from '../../demo.js';
import { csrfField, sameOriginPost } from '../../html/forms.js';
import { html, htmlDocument, type Html } from '../../html/html.js';
import { pageHeaders } from '../../html/page-headers.js';
import { HttpProblem } from '../../lib/problems.js';

export const DEMO_LOGIN_PATH = '/demo/login';
export const DEMO_ASSETS_PATH = '/demo/assets';
export const SANDBOX_PHONE_PATH = '/sandbox/phone';

// ---- Pages and assets ----------------------------------------------------------------------------

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

/** Sends a demo page: the shared stylesheet, an optional script, and the headers of every page. */
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

const CSS = `
:root{color-scheme:light;--ink:#1d2329;--muted:#5b6670;--line:#d9dee3;--accent:#0b7a53;--bg:#f6f7f8}
*{box-sizing:border-box}
[hidden]{display:none!important}
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg);margin:0}
main{max-width:34rem;margin:2.5rem auto;padding:0 1rem}
.card{background:#fff;border:1px solid var(--line);border-radius:12px;padding:1.5rem;margin:0 0 1rem}
.card>h2:first-child{margin-top:0}
summary{cursor:pointer;font-weight:600}
.brand{font-weight:700;letter-spacing:.02em;margin:0 0 1rem}
.brand small{font-weight:400;color:var(--muted);margin-left:.4rem}
h1{font-size:1.4rem;margin:0 0 .75rem}
h2{font-size:1.05rem;margin:1.25rem 0 .5rem}
p{margin:.5rem 0}
.muted,small{color:var(--muted)}
.qr{width:232px;height:232px;margin:1rem auto;padding:8px;background:#fff;border:1px solid var(--line);border-radius:8px}
.qr svg{display:block;width:100%;height:100%}
.code{font:700 1.6rem/1.2 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;letter-spacing:.12em;text-align:center;margin:.5rem 0}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#eef1f3;border-radius:4px;padding:.05rem .3rem}
a{color:var(--accent)}
.link{word-break:break-all;font-size:.9rem}
.button,button{display:inline-block;font:inherit;font-weight:600;color:#fff;background:var(--accent);border:0;border-radius:8px;padding:.6rem 1.1rem;cursor:pointer;text-decoration:none}
.button.secondary,button.secondary{background:#e7ecef;color:var(--ink)}
.note{background:#fff8e1;border:1px solid #f1d58a;border-radius:8px;padding:.6rem .8rem;font-size:.92rem}
.ok{color:var(--accent);font-weight:600}
[role=alert]{color:#a00}
label{display:block;font-weight:600;margin:.75rem 0 .25rem}
input,select,textarea{display:block;width:100%;font:inherit;padding:.5rem .6rem;border:1px solid var(--line);border-radius:8px;background:#fff}
textarea{min-height:4.5rem;resize:vertical}
form button{margin-top:1rem}
.numbers{list-style:none;padding:0;margin:.5rem 0}
.numbers li{padding:.35rem 0;border-bottom:1px solid var(--line)}
.numbers li:last-child{border-bottom:0}
.chat{list-style:none;padding:0;margin:.5rem 0;display:flex;flex-direction:column;gap:.4rem}
.chat li{max-width:85%;padding:.45rem .7rem;border-radius:10px;background:#eef1f3;word-wrap:break-word}
.chat li.in{align-self:flex-end;background:#d9f4e6}
.chat li small{display:block;font-size:.75rem}
.spin{display:inline-block;width:.8rem;height:.8rem;border:2px solid var(--line);border-top-color:var(--accent);border-radius:50%;animation:spin 1s linear infinite;vertical-align:-.05rem;margin-right:.35rem}
@keyframes spin{to{transform:rotate(360deg)}}
`;

const FAVICON = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="4" fill="#0b7a53"/><path d="M4 11l1-3a4 4 0 1 1 2 2z" fill="#fff"/></svg>';

// The page's script. Plain ES2017 for any browser; no build step. It draws the QR code by copying
// the SVG's shapes into new SVG elements (never innerHTML), listens on the stream, and falls back
// to asking the backend every 2 s when EventSource is missing or fails.
const SCRIPT = String.raw`(function () {
  'use strict';
  var root = document.getElementById('demo-login');
  if (!root) return;
  var meta = document.querySelector('meta[name="csrf-token"]');
  var csrf = meta ? meta.getAttribute('content') : '';
  var session = null, source = null, pollTimer = null, tickTimer = null, finished = true, completing = false;

  function $(id) { return document.getElementById(id); }
  function show(view) {
    var views = root.querySelectorAll('[data-view]');
    for (var i = 0; i < views.length; i++) views[i].hidden = views[i].getAttribute('data-view') !== view;
    root.setAttribute('data-state', view);
  }
  function post(path) {
    return fetch(path, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
      body: '{}'
    }).then(function (res) {
      return res.json().catch(function () { return {}; }).then(function (data) {
        if (!res.ok) throw new Error(data.error || ('The server answered ' + res.status + '.'));
        return data;
      });
    });
  }
  function stop() {
    finished = true;
    if (source) { source.close(); source = null; }
    if (pollTimer) { clearInterval(pollTimer); pollTimer = null; }
    if (tickTimer) { clearInterval(tickTimer); tickTimer = null; }
  }
  function fail(error) {
    stop();
    $('error-text').textContent = (error && error.message) || 'Something went wrong.';
    show('error');
  }
  function transport(text) { $('transport').textContent = text; }

  function start() {
    stop();
    finished = false;
    completing = false;
    session = null;
    show('loading');
    post('/demo/login/api/start').then(function (s) {
      session = s;
      render(s);
      listen(s);
    }).catch(fail);
  }

  function render(s) {
    drawQr($('qr'), s.qrCodeSvg);
    $('code').textContent = s.loginCode;
    $('message').textContent = s.messageText;
    $('number').textContent = s.displayPhoneNumber;
    $('app-name').textContent = s.authAppName;
    var link = $('wa-link');
    link.href = s.waLink;
    link.textContent = s.waLink;
    $('wa-link-button').href = s.waLink;
    if (s.sandboxPhoneUrl) {
      $('sandbox-link').href = s.sandboxPhoneUrl;
      $('sandbox').hidden = false;
      $('chat-app').hidden = true;
    } else {
      $('sandbox').hidden = true;
      $('chat-app').hidden = false;
    }
    tick();
    tickTimer = setInterval(tick, 1000);
    show('pending');
  }

  function tick() {
    if (!session) return;
    var left = Math.max(0, Math.round((Date.parse(session.expiresAt) - Date.now()) / 1000));
    $('countdown').textContent = Math.floor(left / 60) + ':' + ('0' + (left % 60)).slice(-2);
    // The stream says "expired" itself; if it cannot, the backend will.
    if (left === 0) startPolling();
  }

  function listen(s) {
    if (typeof window.EventSource !== 'function') return startPolling();
    transport('Waiting for the push (Server-Sent Events)…');
    var url = '/v1/auth/chatapp/events/' + encodeURIComponent(s.sessionId) + '?token=' + encodeURIComponent(s.subscribeToken);
    var es = new EventSource(url);
    source = es;
    es.addEventListener('verified', function () {
      es.close();
      source = null;
      complete(true);
    });
    es.addEventListener('expired', function () {
      es.close();
      source = null;
      expired();
    });
    es.onerror = function () {
      if (finished || source !== es) return;
      if (es.readyState === EventSource.CLOSED) source = null;
      startPolling();
    };
  }

  function startPolling() {
    if (pollTimer || finished) return;
    transport('Checking every 2 seconds…');
    pollTimer = setInterval(function () { complete(false); }, 2000);
  }

  function complete(pushed) {
    if (completing || finished) return;
    completing = true;
    post('/demo/login/api/complete').then(function (r) {
      completing = false;
      if (finished) return;
      if (r.status === 'success') signedIn(r);
      else if (r.status === 'expired') expired();
      else if (pushed) startPolling();
    }, function (error) {
      completing = false;
      if (!finished) fail(error);
    });
  }

  function expired() { stop(); show('expired'); }

  function signedIn(r) {
    stop();
    $('user-phone').textContent = r.phone;
    $('user-name').textContent = r.name ? ' (' + r.name + ')' : '';
    show('signed-in');
  }

  var SVG = 'http://www.w3.org/2000/svg';
  var ELEMENTS = { svg: true, g: true, path: true, rect: true };
  var ATTRIBUTES = { viewBox: true, width: true, height: true, d: true, x: true, y: true, fill: true, stroke: true, 'stroke-width': true, 'shape-rendering': true, transform: true };
  function copy(node) {
    if (node.namespaceURI !== SVG || !ELEMENTS[node.localName]) return null;
    var out = document.createElementNS(SVG, node.localName);
    for (var i = 0; i < node.attributes.length; i++) {
      var a = node.attributes[i];
      if (!a.namespaceURI && ATTRIBUTES[a.name] && !/url\(|javascript:/i.test(a.value)) out.setAttribute(a.name, a.value);
    }
    for (var c = node.firstElementChild; c; c = c.nextElementSibling) {
      var child = copy(c);
      if (child) out.appendChild(child);
    }
    return out;
  }
  function drawQr(target, text) {
    target.textContent = '';
    var doc = new DOMParser().parseFromString(text || '', 'image/svg+xml');
    var svg = doc.documentElement ? copy(doc.documentElement) : null;
    if (!svg) return;
    svg.setAttribute('aria-hidden', 'true');
    target.appendChild(svg);
  }

  $('restart').addEventListener('click', start);
  $('retry').addEventListener('click', start);
  if (root.getAttribute('data-state') === 'loading') start();
})();
`;

const ASSETS: Record<string, { type: string; body: string }> = {
  'demo.css': { type: 'text/css; charset=utf-8', body: CSS },
  'demo-login.js': { type: 'text/javascript; charset=utf-8', body: SCRIPT },
  'favicon.svg': { type: 'image/svg+xml', body: FAVICON },
};

/** The demo pages' stylesheet, script and icon (for /demo/login and /sandbox/phone). */
export async function demoAssets(app: FastifyInstance): Promise<void> {
  app.get<{ Params: { name: string } }>(`${DEMO_ASSETS_PATH}/:name`, async (request, reply) => {
    const asset = Object.hasOwn(ASSETS, request.params.name) ? ASSETS[request.params.name] : undefined;
    if (!asset) return reply.callNotFound();
    return reply.headers({ 'content-type': asset.type, 'cache-control': 'public, max-age=300' }).send(asset.body);
  });
}

// ---- Cookies ----------------------------------------------------------------------------------

/** The session this browser is signing in with (its id; the demo's server holds the rest). */
const pendingCookie = (production: boolean) => (production ? '__Secure-demo_login' : 'demo_login');
/** Who this browser signed in as, after verify-token: `{phone, name}`. */
const userCookie = (production: boolean) => (production ? '__Secure-demo_user' : 'demo_user');

function cookieOptions(request: FastifyRequest, maxAge?: number) {
  return { path: DEMO_LOGIN_PATH, httpOnly: true, sameSite: 'lax' as const, secure: request.server.config.production, signed: true, ...(maxAge ? { maxAge } : {}) };
}

function readCookie(request: FastifyRequest, name: string): string | null {
  const raw = request.cookies?.[name];
  if (!raw) return null;
  const unsigned = request.unsignCookie(raw);
  return unsigned.valid && unsigned.value ? unsigned.value : null;
}

interface DemoUser {
  phone: string;
  name: string | null;
}

function signedInUser(request: FastifyRequest): DemoUser | null {
  const value = readCookie(request, userCookie(request.server.config.production));
  if (!value) return null;
  try {
    const user = JSON.parse(value) as DemoUser;
    return typeof user.phone === 'string' ? { phone: user.phone, name: typeof user.name === 'string' ? user.name : null } : null;
  } catch {
    return null;
  }
}

// ---- The client backend: calls to the Login API ---------------------------------------------

interface ApiAnswer {
  status: number;
  body: any;
}

async function callLoginApi(app: FastifyInstance, demo: DemoLoginApp, method: 'GET' | 'POST', url: string, payload?: unknown): Promise<ApiAnswer> {
  const res = await app.inject({
    method,
    url,
    headers: { 'x-api-key': demo.apiKey, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
  });
  let body: any = null;
  try {
    body = res.body ? JSON.parse(res.body) : null;
  } catch {
    body = null;
  }
  return { status: res.statusCode, body };
}

/** An error of the demo's backend, answered as `{error}` JSON (a client site's own API shape). */
class DemoError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function loginApiError(step: string, answer: ApiAnswer): DemoError {
  const detail = answer.body && typeof answer.body.detail === 'string' ? ` ${answer.body.detail}` : '';
  const status = answer.status === 429 ? 429 : answer.status === 402 ? 402 : 502;
  return new DemoError(status, `The Login API refused ${step} (HTTP ${answer.status}).${detail}`);
}

async function requireDemoApp(app: FastifyInstance): Promise<DemoLoginApp> {
  let demo: DemoLoginApp | null;
  try {
    demo = await demoLoginApp(app);
  } catch (error) {
    app.log.warn({ err: error }, 'demo Login app unavailable');
    throw new DemoError(503, 'The demo Login app could not be set up; see the server log.');
  }
  if (!demo) throw new DemoError(503, 'There is no demo workspace: start the server once with an empty DATA_DIR and DEMO on.');
  return demo;
}

/** The simulated phone's URL when the session's number is a sandbox number (a real chat app cannot reach it). */
async function sandboxPhoneUrl(app: FastifyInstance, displayPhoneNumber: string, text: string): Promise<string | null> {
  const digits = displayPhoneNumber.replace(/\D/g, '');
  const rows = await app.platform.store.db
    .selectFrom('phone_numbers')
    .innerJoin('business_accounts', 'business_accounts.id', 'phone_numbers.business_account_id')
    .select(['phone_numbers.display_phone_number'])
    .where('business_accounts.kind', '=', 'sandbox')
    .execute();
  const sandbox = rows.some((row) => row.display_phone_number.replace(/\D/g, '') === digits);
  return sandbox ? `${SANDBOX_PHONE_PATH}?${new URLSearchParams({ to: `+${digits}`, text })}` : null;
}

// ---- Views -------------------------------------------------------------------------------------

function demoView(csrf: string, user: DemoUser | null, unavailable: string | null) {
  const state = user ? 'signed-in' : unavailable ? 'error' : 'loading';
  return html`<main id="demo-login" data-state="${state}">
<p class="brand">Demo shop <small>an example client website</small></p>
<div class="card">
<section data-view="loading"${state === 'loading' ? '' : html` hidden`}>
<h1>Sign in</h1>
<p><span class="spin" aria-hidden="true"></span>Preparing your sign-in code…</p>
<noscript><p role="alert">This demo needs JavaScript.</p></noscript>
</section>

<section data-view="pending" hidden>
<h1>Sign in with your chat app</h1>
<p class="muted">Signing in to <strong id="app-name"></strong>.</p>
<p>Scan the code with your phone’s camera, or open the link, and send the message that appears.</p>
<div class="qr" id="qr"></div>
<p class="code" id="code" aria-label="Login code"></p>
<p>Send <code id="message"></code> to <strong id="number"></strong>.</p>
<p id="chat-app"><a class="button" id="wa-link-button" href="#">Open the chat app</a></p>
<div id="sandbox" class="note" hidden>
<p>This is a <strong>sandbox number</strong>: no real phone can reach it. Send the message from the simulated phone instead.</p>
<p><a class="button" id="sandbox-link" href="${SANDBOX_PHONE_PATH}" target="_blank" rel="noopener">Open the sandbox phone</a></p>
</div>
<p class="link muted">Chat link: <a id="wa-link" href="#" rel="noopener noreferrer"></a></p>
<p class="muted"><span class="spin" aria-hidden="true"></span><span id="transport">Waiting for your message…</span> Expires in <span id="countdown"></span>.</p>
</section>

<section data-view="signed-in"${state === 'signed-in' ? '' : html` hidden`}>
<h1>Welcome</h1>
<p class="ok" id="signed-in-as">Signed in as <span id="user-phone">${user?.phone ?? ''}</span><span id="user-name">${user?.name ? ` (${user.name})` : ''}</span></p>
<p class="muted">The phone number was proven by the message it sent; this site’s server redeemed the single-use verification token before trusting it.</p>
<form method="post" action="${DEMO_LOGIN_PATH}/sign-out">
${csrfField(csrf)}
<button type="submit" class="secondary">Sign out</button>
</form>
</section>

<section data-view="expired" hidden>
<h1>The code expired</h1>
<p>No message arrived before the code expired. Codes are valid for a few minutes only.</p>
<button type="button" id="restart">Get a new code</button>
</section>

<section data-view="error"${state === 'error' ? '' : html` hidden`}>
<h1>Sign in</h1>
<p role="alert" id="error-text">${unavailable ?? ''}</p>
<button type="button" id="retry">Try again</button>
</section>
</div>
<details class="card">
<summary>How this page works</summary>
<p>This page’s own server holds the Login app’s API key. It calls <code>POST /v1/auth/chatapp/start</code> and hands the browser only the QR code, the link, the code, the session id and its subscribe token.</p>
<p>The browser listens on <code>/v1/auth/chatapp/events/{sessionId}</code> (Server-Sent Events). On <code>verified</code> it asks its server to finish: the server reads the verification token with <code>GET /v1/auth/chatapp/status/{sessionId}</code> and redeems it with <code>POST /v1/auth/verify-token</code>, which says who signed in, once.</p>
</details>
</main>`;
}

// ---- Routes ------------------------------------------------------------------------------------

/**
 * Whether a POST comes from this site. Browsers send `Sec-Fetch-Site`, which a page cannot
 * forge: only `same-origin` passes. They send `Origin: null` on pages with
 * `Referrer-Policy: no-referrer` (ours), so Origin decides only without Fetch metadata, and
 * must then be ours; with neither, the CSRF token alone decides.
 */
/** JSON posts from this page only: from this site and with the CSRF token header. */
async function checkOrigin(request: FastifyRequest): Promise<void> {
  if (!sameOriginPost(request)) throw new DemoError(403, 'This request was not sent from this site.');
}

export default async function demoLoginPages(app: FastifyInstance): Promise<void> {
  const { demo, production } = app.config;
  if (demo || !production) await app.register(demoAssets);
  if (!demo) return;

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status =
      error instanceof DemoError || error instanceof HttpProblem ? error.status
      : error.statusCode && error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode
      : 500;
    if (status >= 500 && !(error instanceof DemoError)) request.log.error({ err: error }, 'demo page failed');
    const message =
      error instanceof DemoError ? error.message
      : status === 403 ? 'This page has expired or the request was not sent from this site. Reload the page and try again.'
      : status === 429 ? 'Too many requests. Wait a little and try again.'
      : status >= 500 ? 'Something went wrong on our side. Try again in a moment.'
      : 'The request could not be understood.';
    if (request.url.startsWith(`${DEMO_LOGIN_PATH}/api/`)) return reply.code(status).header('cache-control', 'no-store').send({ error: message });
    return sendDemoPage(reply, status, { title: 'Demo sign-in', body: html`<main><div class="card"><h1>Sign in</h1><p role="alert">${message}</p><p><a href="${DEMO_LOGIN_PATH}">Back</a></p></div></main>` });
  });

  app.get(DEMO_LOGIN_PATH, async (request, reply) => {
    const csrf = reply.generateCsrf({ path: '/', httpOnly: true, sameSite: 'lax', secure: production, signed: true });
    const user = signedInUser(request);
    let unavailable: string | null = null;
    if (!user) {
      try {
        await requireDemoApp(app);
      } catch (error) {
        unavailable = error instanceof DemoError ? error.message : 'The demo is not available.';
      }
    }
    return sendDemoPage(reply, unavailable ? 503 : 200, {
      title: user ? 'Signed in — Demo shop' : 'Sign in — Demo shop',
      head: html`<meta name="csrf-token" content="${csrf}">`,
      script: 'demo-login.js',
      body: demoView(csrf, user, unavailable),
    });
  });

  app.post(`${DEMO_LOGIN_PATH}/api/start`, { preHandler: [checkOrigin, app.csrfProtection] }, async (request, reply) => {
    const demoApp = await requireDemoApp(app);
    const started = await callLoginApi(app, demoApp, 'POST', '/v1/auth/chatapp/start', {});
    if (started.status !== 201) throw loginApiError('to start a session', started);
    const s = started.body as {
      sessionId: string;
      loginCode: string;
      waLink: string;
      subscribeToken: string;
      displayPhoneNumber: string;
      authAppName: string;
      expiresAt: string;
      qrCodeSvg: string;
    };
    const messageText = new URL(s.waLink).searchParams.get('text') ?? `LOGIN ${s.loginCode}`;
    reply.setCookie(pendingCookie(production), s.sessionId, cookieOptions(request, 15 * 60));
    reply.clearCookie(userCookie(production), { path: DEMO_LOGIN_PATH });
    return reply.header('cache-control', 'no-store').send({
      sessionId: s.sessionId,
      subscribeToken: s.subscribeToken,
      loginCode: s.loginCode,
      messageText,
      waLink: s.waLink,
      qrCodeSvg: s.qrCodeSvg,
      displayPhoneNumber: s.displayPhoneNumber,
      authAppName: s.authAppName,
      expiresAt: s.expiresAt,
      sandboxPhoneUrl: await sandboxPhoneUrl(app, s.displayPhoneNumber, messageText),
    });
  });

  // The stream's `verified` and the 2-second fallback both land here; one status + verify-token
  // per session at a time, so the two cannot race each other for the single-use token.
  const completing = new Map<string, Promise<CompleteResult>>();

  app.post(`${DEMO_LOGIN_PATH}/api/complete`, { preHandler: [checkOrigin, app.csrfProtection] }, async (request, reply) => {
    const sessionId = readCookie(request, pendingCookie(production));
    if (!sessionId) throw new DemoError(409, 'No sign-in is in progress in this browser; start again.');
    let work = completing.get(sessionId);
    if (!work) {
      work = complete(app, sessionId).finally(() => completing.delete(sessionId));
      completing.set(sessionId, work);
    }
    const result = await work;
    reply.header('cache-control', 'no-store');
    if (result.status === 'success') {
      reply.setCookie(userCookie(production), JSON.stringify(result.user), cookieOptions(request, 24 * 60 * 60));
      reply.clearCookie(pendingCookie(production), { path: DEMO_LOGIN_PATH });
      return { status: 'success', phone: result.user.phone, name: result.user.name };
    }
    if (result.status === 'expired') reply.clearCookie(pendingCookie(production), { path: DEMO_LOGIN_PATH });
    return { status: result.status };
  });

  app.post(`${DEMO_LOGIN_PATH}/sign-out`, { preHandler: [checkOrigin, app.csrfProtection] }, async (_request, reply) => {
    reply.clearCookie(userCookie(production), { path: DEMO_LOGIN_PATH });
    reply.clearCookie(pendingCookie(production), { path: DEMO_LOGIN_PATH });
    return reply.header('cache-control', 'no-store').redirect(DEMO_LOGIN_PATH, 303);
  });
}

type CompleteResult = { status: 'pending' | 'expired' } | { status: 'success'; user: DemoUser };

/** What a client's backend does after the push: status for the token, then verify-token. */
async function complete(app: FastifyInstance, sessionId: string): Promise<CompleteResult> {
  const demoApp = await requireDemoApp(app);
  const status = await callLoginApi(app, demoApp, 'GET', `/v1/auth/chatapp/status/${encodeURIComponent(sessionId)}`);
  if (status.status === 410) return { status: 'expired' };
  if (status.status === 404) throw new DemoError(409, 'This sign-in session is unknown; start again.');
  if (status.status !== 200) throw loginApiError('the status request', status);
  if (status.body?.status !== 'success' || typeof status.body.verificationToken !== 'string') return { status: 'pending' };
  const verdict = await callLoginApi(app, demoApp, 'POST', '/v1/auth/verify-token', { token: status.body.verificationToken });
  if (verdict.status !== 200) throw loginApiError('the verification token', verdict);
  if (verdict.body?.valid !== true) throw new DemoError(409, `The verification token was refused (${String(verdict.body?.reason ?? 'invalid')}); start again.`);
  const user = verdict.body.user as { phone: string; name?: string | null };
  return { status: 'success', user: { phone: user.phone, name: user.name ?? null } };
}
