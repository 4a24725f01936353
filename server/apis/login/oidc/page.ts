// The hosted sign-in page of an app's OpenID provider, and its own calls (routes outside the
// contract, under `{issuer}/authorize/…`): complete once the session is verified, or switch to a
// code sent to the user's phone and check it. The page shows the QR code, the chat link and the
// LOGIN code drawn on the server, and its script (./assets/oidc-sign-in.js, `script-src 'self'`,
// nothing inline) follows the session's event stream, then sends the browser back to the client.
//
// Every call carries the request id and this browser's cookie; the request row keeps the cookie's
// keyed digest, so another browser cannot complete (or read the code of) someone else's request
// (bad-inputs O7).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import { redirectTo } from '#server/apis/connect/oauth/authorize.js';
import { PAGE_STYLE, trustedPageDocument } from '#server/html/form-layout.js';
import { readAssets, serveAssets } from '#server/html/assets.js';
import { SANDBOX_PHONE_PATH, sandboxPhoneServed } from '#server/html/demo-layout.js';
import { sameOriginPost } from '#server/html/forms.js';
import { html, trustedHtml, type Html } from '#server/html/html.js';
import { pageHeaders } from '#server/html/page-headers.js';
import { base62 } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import { requireE164 } from '#server/lib/phone.js';
import { checkCode, resendCode } from '../codes.js';
import { createLoginSession, expiredNow } from '../sessions.js';
import { browserNonceOf } from './authorize.js';
import { AMR_CHANNEL, CODE_TTL_SECONDS, OIDC_BASE_PATH, findOidcApp, oidcIssuer, type OidcApp } from './provider.js';

const ASSETS_PATH = `${OIDC_BASE_PATH}/assets`;
const SCRIPTS = readAssets(new URL('./assets/', import.meta.url), ['oidc-sign-in.js']);

function pageCsp(): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "connect-src 'self'",
    `style-src ${PAGE_STYLE}`,
    "img-src 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

export function sendSignInPage(reply: FastifyReply, appName: string, body: Html): FastifyReply {
  const page = trustedPageDocument({ title: `Sign in to ${appName}`, body: html`${body}<script src="${ASSETS_PATH}/oidc-sign-in.js" defer></script>` });
  return reply.code(200).headers(pageHeaders(pageCsp())).send(page);
}

export function sendOidcErrorPage(reply: FastifyReply, status: number, message: string): FastifyReply {
  const body = html`<h1>This sign-in link is not valid</h1><p role="alert">${message}</p><p>Go back to the app you came from and try again.</p>`;
  return reply
    .code(status)
    .headers(pageHeaders(pageCsp()))
    .send(trustedPageDocument({ title: 'Cannot sign in', body }));
}

interface Started {
  sessionId: string;
  subscribeToken: string;
  loginCode: string;
  waLink: string;
  displayPhoneNumber: string;
  expiresAt: string;
  qrCodeSvg: string;
}

/** The simulated phone's URL when the number is a sandbox one and the sandbox phone is served. */
async function sandboxPhoneUrl(server: FastifyInstance, displayPhoneNumber: string, fill: Record<string, string>): Promise<string | null> {
  if (!sandboxPhoneServed(server.config)) return null;
  const digits = displayPhoneNumber.replace(/\D/g, '');
  const rows = await server.platform.store.db
    .selectFrom('phone_numbers')
    .innerJoin('business_accounts', 'business_accounts.id', 'phone_numbers.business_account_id')
    .select('phone_numbers.display_phone_number')
    .where('business_accounts.kind', '=', 'sandbox')
    .execute();
  return rows.some((r) => r.display_phone_number.replace(/\D/g, '') === digits)
    ? `${SANDBOX_PHONE_PATH}?${new URLSearchParams({ to: `+${digits}`, ...fill })}`
    : null;
}

export async function signInView(server: FastifyInstance, input: { app: OidcApp; requestId: string; session: Started; loginHint?: string }): Promise<Html> {
  const { app, requestId, session } = input;
  const message = `LOGIN ${session.loginCode}`;
  const sandbox = await sandboxPhoneUrl(server, session.displayPhoneNumber, { text: message });
  // The SVG is the qrcode package's drawing of our own link: markup we made, sized for the card.
  const qr = trustedHtml(session.qrCodeSvg.replace('<svg ', '<svg width="200" height="200" role="img" aria-label="QR code of the chat link" '));
  return html`<div id="oidc-sign-in" data-state="pending" data-base="${OIDC_BASE_PATH}/${app.id}/authorize" data-request="${requestId}" data-session="${session.sessionId}" data-subscribe-token="${session.subscribeToken}" data-expires-at="${session.expiresAt}">
<section data-view="pending">
<h1>Sign in to ${app.name}</h1>
<p>Scan the code with your phone’s camera, or open the link, and send the message that appears.</p>
<p class="qr" id="qr">${qr}</p>
<p>Send <code id="message">${message}</code> to <strong id="number">${session.displayPhoneNumber}</strong>.</p>
<p><a class="button" id="wa-link" href="${session.waLink}" rel="noopener noreferrer">Open the chat app</a></p>
${sandbox ? html`<p class="muted" id="sandbox">This is a sandbox number: send the message from the <a id="sandbox-link" href="${sandbox}" target="_blank" rel="noopener">sandbox phone</a>.</p>` : ''}
<p class="muted" role="status" id="transport">Waiting for your message…</p>
<form id="phone-form">
<p>Or receive a code in your chat app instead:</p>
<label>Your phone number <input id="phone-input" name="phone" type="tel" autocomplete="tel" placeholder="+15550100123" maxlength="32" value="${input.loginHint ?? ''}" required></label>
<button type="submit" class="secondary" id="phone-submit">Send me a code</button>
</form>
</section>
<section data-view="code" hidden>
<h1>Enter your code</h1>
<p>A 6-digit code was sent to <strong id="code-phone"></strong> in your chat app.</p>
<form id="code-form">
<label>Code <input id="code-input" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required></label>
<button type="submit" id="code-submit">Verify</button>
</form>
<div class="actions"><button type="button" class="secondary" id="code-resend">Send a new code</button>
<button type="button" class="secondary" id="restart-message">Send a message instead</button></div>
</section>
<section data-view="done" hidden>
<h1>Signed in</h1>
<p role="status">Returning to ${app.name}…</p>
</section>
<section data-view="expired" hidden>
<h1>The code expired</h1>
<p>No message arrived in time.</p>
<button type="button" id="restart">Get a new code</button>
</section>
<p role="alert" id="error-text" hidden></p>
</div>
<details><summary>How this works</summary>
<p>${app.name} uses this service to confirm your phone number: the message you send, or the code you receive, proves it. ${app.name} learns your number only if it asked for it.</p>
</details>`;
}

// ---- The page's calls -----------------------------------------------------------------------------

const field = (request: FastifyRequest, name: string, max: number): string => {
  const value = (request.body as Record<string, unknown> | null)?.[name];
  if (typeof value !== 'string' || !value.trim() || value.length > max) {
    throw new HttpProblem(400, 'validation', `${name} is required.`, { errors: [{ pointer: `/body/${name}`, detail: 'is required' }] });
  }
  return value.trim();
};

const requestGone = () => new HttpProblem(404, 'not-found', 'This sign-in is not known in this browser; go back to the app and start again.');

/** The request of a page call: this app's, this browser's, not expired. */
async function ownRequest(request: FastifyRequest, appId: string) {
  if (!sameOriginPost(request)) throw new HttpProblem(403, 'forbidden', 'This request was not sent from this site.');
  const requestId = field(request, 'request', 64);
  const nonce = browserNonceOf(request);
  const { platform } = request.server;
  const row = await platform.store.db.selectFrom('login_oidc_requests').selectAll().where('id', '=', requestId).where('app_id', '=', appId).executeTakeFirst();
  if (!row || !nonce || !platform.secrets.matches(`login-oidc-browser\0${nonce}`, row.browser_digest)) throw requestGone();
  if (row.expires_at.getTime() <= platform.now().getTime() || row.code_used_at) throw requestGone();
  const app = await findOidcApp(platform, appId);
  if (!app) throw requestGone();
  return { row, app };
}

type Completion = { status: 'pending' | 'expired' } | { status: 'success'; redirect: string };

/** Once the request's session is verified: a new single-use code, and where the browser goes with it. */
async function complete(request: FastifyRequest, appId: string): Promise<Completion> {
  const { row, app } = await ownRequest(request, appId);
  const { platform } = request.server;
  if (!row.session_id) return { status: 'pending' };
  const session = await platform.store.db
    .selectFrom('login_sessions')
    .select(['id', 'status', 'expires_at', 'phone', 'profile_name', 'verified_at', 'mode'])
    .where('id', '=', row.session_id)
    .where('app_id', '=', app.id)
    .executeTakeFirst();
  if (!session || (await expiredNow(platform, session))) return { status: 'expired' };
  if (session.status !== 'success' || !session.phone || !session.verified_at) return { status: 'pending' };
  const code = `loc_${base62(32)}`;
  const now = platform.now();
  const issued = await platform.store.db.transaction().execute(async (trx) => {
    // A second completion (a retried call) replaces the code: only the newest one is exchangeable.
    const updated = await trx
      .updateTable('login_oidc_requests')
      .set({
        code_digest: platform.secrets.digest(code),
        code_expires_at: new Date(now.getTime() + CODE_TTL_SECONDS * 1000),
        phone: session.phone,
        name: session.profile_name,
        amr: session.mode === 'code' ? [AMR_CHANNEL, 'otp'] : [AMR_CHANNEL],
        auth_time: session.verified_at,
      })
      .where('id', '=', row.id)
      .where('session_id', '=', session.id)
      .where('code_used_at', 'is', null)
      .returning('id')
      .executeTakeFirst();
    // The session's verification token has served this sign-in: verify-token refuses it from now on.
    if (updated)
      await trx
        .updateTable('login_sessions')
        .set({ token_used_at: sql`coalesce(token_used_at, ${now})` })
        .where('id', '=', session.id)
        .execute();
    return Boolean(updated);
  });
  if (!issued) throw requestGone();
  return { status: 'success', redirect: redirectTo(row.redirect_uri, { code, state: row.state ?? undefined, iss: oidcIssuer(platform, app.id) }) };
}

export async function registerSignInPage(app: FastifyInstance): Promise<void> {
  serveAssets(app, ASSETS_PATH, SCRIPTS, 'public, max-age=300');
  const base = `${OIDC_BASE_PATH}/:appId/authorize`;
  type Params = { Params: { appId: string } };
  const noStore = (reply: FastifyReply) => reply.header('cache-control', 'no-store');

  app.post<Params>(`${base}/complete`, async (request, reply) => {
    noStore(reply);
    return complete(request, request.params.appId);
  });

  // The other direction: a code sent to the number typed, in a new session of the request.
  app.post<Params>(`${base}/start-code`, async (request, reply) => {
    const { row, app: oidcApp } = await ownRequest(request, request.params.appId);
    const phone = requireE164(field(request, 'phone', 32), '/body/phone');
    const started = await createLoginSession(request.server, oidcApp, { phone, mode: 'code' });
    await request.server.platform.store.db.updateTable('login_oidc_requests').set({ session_id: started.sessionId }).where('id', '=', row.id).execute();
    noStore(reply);
    return {
      sessionId: started.sessionId,
      subscribeToken: started.subscribeToken,
      boundPhone: started.boundPhone,
      expiresAt: started.expiresAt,
      resendAvailableAt: started.resendAvailableAt,
      sandboxPhoneUrl: await sandboxPhoneUrl(request.server, started.displayPhoneNumber, { from: phone }),
    };
  });

  app.post<Params>(`${base}/check-code`, async (request, reply) => {
    const { row, app: oidcApp } = await ownRequest(request, request.params.appId);
    const code = field(request, 'code', 16);
    if (!row.session_id) throw requestGone();
    await checkCode(request.server, oidcApp.id, row.session_id, code);
    noStore(reply);
    return complete(request, request.params.appId);
  });

  app.post<Params>(`${base}/resend-code`, async (request, reply) => {
    const { row, app: oidcApp } = await ownRequest(request, request.params.appId);
    if (!row.session_id) throw requestGone();
    const sent = await resendCode(request.server, oidcApp.id, row.session_id);
    noStore(reply);
    return { resendAvailableAt: sent.resendAvailableAt };
  });
}
