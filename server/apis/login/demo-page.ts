// The Login demo, `/demo/login`: a page that behaves like a client website's "sign in with your
// chat app". Its own small backend (`/demo/login/api/…`) holds the demo Login app's API key and
// calls our Login API in process (`app.inject` with `X-API-Key`), exactly as a client's server
// would over HTTPS: start → the page shows the QR code, the link and the code and listens on
// the session's event stream; on `verified` the page asks its backend to complete, which reads
// the verification token (status) and redeems it (verify-token). The browser only ever sees what
// a client's browser would: the session id, its subscribe token and what it shows.
//
// The page is plain HTML with one external script, ./assets/demo-login.js served as
// /demo/assets/demo-login.js, and the demo pages' stylesheet (server/html/demo-layout.ts): CSP
// `script-src 'self'`, nothing inline, no other host. The session being signed in and the
// signed-in user live in signed httpOnly cookies of this browser, not in the page.
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import type {} from '@fastify/cookie';
import type {} from '@fastify/csrf-protection';
import { demoLoginApp, type DemoLoginApp } from '#server/demo.js';
import { readAssets, serveAssets } from '#server/html/assets.js';
import { DEMO_ASSETS_CACHE, DEMO_ASSETS_PATH, DEMO_LOGIN_PATH, SANDBOX_PHONE_PATH, demoLoginServed, sendDemoPage } from '#server/html/demo-layout.js';
import { csrfField, sameOriginPost } from '#server/html/forms.js';
import { html } from '#server/html/html.js';
import { HttpProblem } from '#server/lib/problems.js';

/** The page's script, read once: ./assets/demo-login.js. */
const SCRIPTS = readAssets(new URL('./assets/', import.meta.url), ['demo-login.js']);

// ---- Cookies ----------------------------------------------------------------------------------

/** The session this browser is signing in with (its id; the demo's server holds the rest). */
const pendingCookie = (production: boolean) => (production ? '__Secure-demo_login' : 'demo_login');
/** Who this browser signed in as, after verify-token: `{phone, name}`. */
const userCookie = (production: boolean) => (production ? '__Secure-demo_user' : 'demo_user');

function cookieOptions(request: FastifyRequest, maxAge?: number) {
  return {
    path: DEMO_LOGIN_PATH,
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: request.server.config.production,
    signed: true,
    ...(maxAge ? { maxAge } : {}),
  };
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

/**
 * The simulated phone's URL when the session's number is a sandbox number (a real chat app cannot
 * reach it): with `text` to send LOGIN, with `from` to read the code sent to that number.
 */
async function sandboxPhoneUrl(app: FastifyInstance, displayPhoneNumber: string, fill: { text: string } | { from: string }): Promise<string | null> {
  const digits = displayPhoneNumber.replace(/\D/g, '');
  const rows = await app.platform.store.db
    .selectFrom('phone_numbers')
    .innerJoin('business_accounts', 'business_accounts.id', 'phone_numbers.business_account_id')
    .select(['phone_numbers.display_phone_number'])
    .where('business_accounts.kind', '=', 'sandbox')
    .execute();
  const sandbox = rows.some((row) => row.display_phone_number.replace(/\D/g, '') === digits);
  return sandbox ? `${SANDBOX_PHONE_PATH}?${new URLSearchParams({ to: `+${digits}`, ...fill })}` : null;
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
<form id="phone-form" class="note">
<p>Or <strong>receive a code</strong> in your chat app instead:</p>
<label for="phone-input">Your phone number</label>
<input id="phone-input" name="phone" type="tel" autocomplete="tel" placeholder="+15550100123" maxlength="32" required>
<button type="submit" class="secondary" id="phone-submit">Send me a code</button>
</form>
</section>

<section data-view="code" hidden>
<h1>Enter your code</h1>
<p>A 6-digit code was sent to <strong id="code-phone"></strong> in your chat app.</p>
<div id="code-sandbox" class="note" hidden>
<p>This is a <strong>sandbox number</strong>: the code went to the simulated phone.</p>
<p><a class="button" id="code-sandbox-link" href="${SANDBOX_PHONE_PATH}" target="_blank" rel="noopener">Open the sandbox phone</a></p>
</div>
<form id="code-form">
<label for="code-input">Code</label>
<input id="code-input" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required>
<button type="submit" id="code-submit">Verify</button>
</form>
<p role="alert" id="code-error" hidden></p>
<p><button type="button" class="secondary" id="code-resend">Send a new code</button>
<button type="button" class="secondary" id="code-back">Send a message instead</button></p>
</section>

<section data-view="signed-in"${state === 'signed-in' ? '' : html` hidden`}>
<h1>Welcome</h1>
<p class="ok" id="signed-in-as">Signed in as <span id="user-phone">${user?.phone ?? ''}</span><span id="user-name">${user?.name ? ` (${user.name})` : ''}</span></p>
<p class="muted">The phone number was proven by the message it sent, or by the code it received; this site’s server redeemed the single-use verification token before trusting it.</p>
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
<p>The other direction: with your number the server calls start with <code>{"phone": …, "mode": "code"}</code>, a code reaches your chat app, and the code you type goes to <code>POST /v1/auth/chatapp/check/{sessionId}</code>, which answers the same verification token.</p>
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
  const { production } = app.config;
  if (!demoLoginServed(app.config)) return;
  serveAssets(app, DEMO_ASSETS_PATH, SCRIPTS, DEMO_ASSETS_CACHE);

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status =
      error instanceof DemoError || error instanceof HttpProblem
        ? error.status
        : error.statusCode && error.statusCode >= 400 && error.statusCode < 600
          ? error.statusCode
          : 500;
    if (status >= 500 && !(error instanceof DemoError)) request.log.error({ err: error }, 'demo page failed');
    const message =
      error instanceof DemoError
        ? error.message
        : status === 403
          ? 'This page has expired or the request was not sent from this site. Reload the page and try again.'
          : status === 429
            ? 'Too many requests. Wait a little and try again.'
            : status >= 500
              ? 'Something went wrong on our side. Try again in a moment.'
              : 'The request could not be understood.';
    if (request.url.startsWith(`${DEMO_LOGIN_PATH}/api/`)) return reply.code(status).header('cache-control', 'no-store').send({ error: message });
    return sendDemoPage(reply, status, {
      title: 'Demo sign-in',
      body: html`<main><div class="card"><h1>Sign in</h1><p role="alert">${message}</p><p><a href="${DEMO_LOGIN_PATH}">Back</a></p></div></main>`,
    });
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
      sandboxPhoneUrl: await sandboxPhoneUrl(app, s.displayPhoneNumber, { text: messageText }),
    });
  });

  /** A string field of the page's JSON body, or a 400. */
  const field = (request: FastifyRequest, name: string, max: number): string => {
    const value = (request.body as Record<string, unknown> | null)?.[name];
    if (typeof value !== 'string' || !value.trim() || value.length > max) throw new DemoError(400, `Enter your ${name}.`);
    return value.trim();
  };
  const refusal = (answer: ApiAnswer, fallback: string) =>
    answer.status >= 400 && answer.status < 500 && typeof answer.body?.detail === 'string'
      ? new DemoError(answer.status === 429 ? 429 : 400, answer.body.detail)
      : loginApiError(fallback, answer);

  // The other direction: a code sent to the number the person types, checked by this backend.
  app.post(`${DEMO_LOGIN_PATH}/api/start-code`, { preHandler: [checkOrigin, app.csrfProtection] }, async (request, reply) => {
    const phone = field(request, 'phone', 32);
    const demoApp = await requireDemoApp(app);
    const started = await callLoginApi(app, demoApp, 'POST', '/v1/auth/chatapp/start', { phone, mode: 'code' });
    if (started.status !== 201) throw refusal(started, 'to send a code');
    const s = started.body as {
      sessionId: string;
      subscribeToken: string;
      boundPhone: string;
      displayPhoneNumber: string;
      expiresAt: string;
      resendAvailableAt: string;
    };
    reply.setCookie(pendingCookie(production), s.sessionId, cookieOptions(request, 15 * 60));
    reply.clearCookie(userCookie(production), { path: DEMO_LOGIN_PATH });
    return reply.header('cache-control', 'no-store').send({
      sessionId: s.sessionId,
      subscribeToken: s.subscribeToken,
      boundPhone: s.boundPhone,
      expiresAt: s.expiresAt,
      resendAvailableAt: s.resendAvailableAt,
      sandboxPhoneUrl: await sandboxPhoneUrl(app, s.displayPhoneNumber, { from: s.boundPhone }),
    });
  });

  app.post(`${DEMO_LOGIN_PATH}/api/resend-code`, { preHandler: [checkOrigin, app.csrfProtection] }, async (request, reply) => {
    const sessionId = readCookie(request, pendingCookie(production));
    if (!sessionId) throw new DemoError(409, 'No sign-in is in progress in this browser; start again.');
    const answer = await callLoginApi(app, await requireDemoApp(app), 'POST', `/v1/auth/chatapp/resend/${encodeURIComponent(sessionId)}`);
    if (answer.status !== 202) throw refusal(answer, 'to send a new code');
    return reply.header('cache-control', 'no-store').send({ resendAvailableAt: answer.body.resendAvailableAt });
  });

  app.post(`${DEMO_LOGIN_PATH}/api/check-code`, { preHandler: [checkOrigin, app.csrfProtection] }, async (request, reply) => {
    const code = field(request, 'code', 16);
    const sessionId = readCookie(request, pendingCookie(production));
    if (!sessionId) throw new DemoError(409, 'No sign-in is in progress in this browser; start again.');
    const answer = await callLoginApi(app, await requireDemoApp(app), 'POST', `/v1/auth/chatapp/check/${encodeURIComponent(sessionId)}`, { code });
    reply.header('cache-control', 'no-store');
    if (answer.status === 422 || answer.status === 400) return { status: 'wrong', error: String(answer.body?.detail ?? 'That is not the code.') };
    if (answer.status === 410) return { status: 'expired' };
    if (answer.status !== 200) throw refusal(answer, 'the code');
    return { status: 'verified' }; // the page then completes, as after the stream's push
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
