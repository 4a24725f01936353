// The browser's sign-in page: GET shows the form (or who is signed in), POST checks the
// password like the API does (same throttle, same answer for unknown emails) and sets a signed,
// httpOnly, SameSite=Lax cookie holding a short-lived owner JWT. Forms carry a CSRF token
// (@fastify/csrf-protection, registered by server/plugins/pages.ts) and are refused when sent
// from another origin. `next` may only name a same-origin path. Every value is HTML-escaped.
//
// The Connect consent page reuses `currentOwner`, `html`, `sendPage`, `safeNext` and
// `sameOriginPost` from here.
import { createHash } from 'node:crypto';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type {} from '@fastify/cookie';
import type {} from '@fastify/csrf-protection';
import { issueOwnerToken, verifyOwnerToken } from '../../auth/owner-jwt.js';
import { HttpProblem } from '../../lib/problems.js';
import { authenticateOwner } from './sessions.js';

export const SIGN_IN_PATH = '/account/sign-in';
export const SIGN_OUT_PATH = '/account/sign-out';

/** `__Host-` in production: the browser then insists on Secure, path=/ and no Domain. */
export const sessionCookieName = (production: boolean) => (production ? '__Host-owner_session' : 'owner_session');

// ---- HTML -----------------------------------------------------------------------------------

class Html {
  constructor(readonly value: string) {}
  toString() {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** A template whose interpolations are escaped unless they are themselves `html` (or lists of it). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  const part = (v: unknown): string =>
    v instanceof Html ? v.value : Array.isArray(v) ? v.map(part).join('') : v === undefined || v === null || v === false ? '' : escapeHtml(String(v));
  return new Html(strings.reduce((out, s, i) => out + s + (i < values.length ? part(values[i]) : ''), ''));
}

/** A CSP source allowing exactly this stylesheet (the page must carry it byte-exact). */
export const styleHash = (css: string) => `'sha256-${createHash('sha256').update(css).digest('base64')}'`;

/** The policy of our form pages: no script at all, one stylesheet by its hash (not 'unsafe-inline'), forms to this origin only. */
export function formPageCsp(css: string): string {
  return ["default-src 'none'", `style-src ${styleHash(css)}`, "form-action 'self'", "frame-ancestors 'none'", "base-uri 'none'"].join('; ');
}

const CSS = 'body{font:16px/1.5 system-ui,sans-serif;max-width:24rem;margin:4rem auto;padding:0 1rem}label,input,button{display:block;width:100%;margin:.25rem 0 1rem}[role=alert]{color:#a00}';
const CSP = formPageCsp(CSS);

/** Sends an HTML page with the headers every page needs: no framing, no caching, no referrer. */
/** Headers of every HTML page: its CSP, never framed, never cached, no Referer leaves it. */
export function pageHeaders(csp: string): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': csp,
    'x-frame-options': 'DENY',
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
  };
}

/** The document shell every server-rendered page shares: charset, viewport, title, then the page's own head and body. */
export function htmlDocument(title: string, head: Html | string, body: Html): string {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>${head}</head>
<body>${body}</body></html>
`.value;
}

export function sendPage(reply: FastifyReply, status: number, title: string, body: Html): FastifyReply {
  return reply
    .code(status)
    .headers(pageHeaders(CSP))
    .send(htmlDocument(title, html`<style>${new Html(CSS)}</style>`, html`<main>${body}</main>`));
}

// ---- Redirects and origins ------------------------------------------------------------------

/** `value` if it is a same-origin path (`/x?y#z`), else `fallback`: never an open redirect. */
export function safeNext(value: unknown, fallback = SIGN_IN_PATH): string {
  if (typeof value !== 'string' || !value.startsWith('/') || value.length > 2048) return fallback;
  // `//host`, `/\host` (browsers read `\` as `/`) and control characters (stripped by URL
  // parsers, so `/\t/host` becomes `//host`) are all ways out of the origin.
  if (value.startsWith('//') || /[\\\u0000-\u001f\u007f]/.test(value)) return fallback;
  try {
    const base = 'http://same-origin.invalid';
    const url = new URL(value, base);
    return url.origin === base ? url.pathname + url.search + url.hash : fallback;
  } catch {
    return fallback;
  }
}

/** Whether a form post comes from this site: Sec-Fetch-Site and Origin, when the browser sends them. */
export function sameOriginPost(request: FastifyRequest): boolean {
  // Fetch metadata decides where the browser sends it: with `Referrer-Policy: no-referrer`
  // Chromium sends `Origin: null` even on same-origin posts, so Origin is only the fallback.
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin';
  const origin = request.headers.origin;
  if (origin === undefined) return true; // older browsers: the CSRF token still decides
  const own = [new URL(request.server.config.publicUrl).origin, `${request.protocol}://${request.host}`];
  return own.includes(origin);
}

async function checkOrigin(request: FastifyRequest): Promise<void> {
  if (!sameOriginPost(request)) throw new HttpProblem(403, 'forbidden', 'This form was not sent from this site.');
}

// ---- Session cookie ---------------------------------------------------------------------------

export interface SignedInOwner {
  ownerId: string;
  workspaceId: string;
  email: string;
  name: string;
}

/** The owner the request's session cookie proves, or null (no cookie, bad signature, expired, owner gone). */
export async function currentOwner(request: FastifyRequest): Promise<SignedInOwner | null> {
  const platform = request.server.platform;
  const cookie = request.cookies?.[sessionCookieName(platform.config.production)];
  if (!cookie) return null;
  const unsigned = request.unsignCookie(cookie);
  if (!unsigned.valid || !unsigned.value) return null;
  const claims = await verifyOwnerToken(platform, unsigned.value, 'owner-browser');
  if (!claims) return null;
  const owner = await platform.store.db
    .selectFrom('owners')
    .select(['id', 'workspace_id', 'email', 'name'])
    .where('id', '=', claims.ownerId)
    .where('workspace_id', '=', claims.workspaceId)
    .executeTakeFirst();
  return owner ? { ownerId: owner.id, workspaceId: owner.workspace_id, email: owner.email, name: owner.name } : null;
}

function cookieOptions(request: FastifyRequest) {
  return { path: '/', httpOnly: true, sameSite: 'lax' as const, secure: request.server.config.production, signed: true };
}

// ---- Views ----------------------------------------------------------------------------------

function signInForm(csrf: string, next: string, email = '', error?: string) {
  return html`<h1>Sign in</h1>
${error ? html`<p role="alert">${error}</p>` : ''}
<form method="post" action="${SIGN_IN_PATH}">
<input type="hidden" name="_csrf" value="${csrf}">
<input type="hidden" name="next" value="${next}">
<label>Email <input type="email" name="email" value="${email}" autocomplete="username" maxlength="254" required></label>
<label>Password <input type="password" name="password" autocomplete="current-password" maxlength="128" required></label>
<button type="submit">Sign in</button>
</form>`;
}

function signedIn(owner: SignedInOwner, csrf: string, next: string | undefined) {
  return html`<h1>Signed in</h1>
<p>You are signed in as ${owner.name} (${owner.email}).</p>
${next ? html`<p><a href="${next}">Continue</a></p>` : html`<p><a href="/account">Settings</a> · <a href="/docs">API docs</a></p>`}
<form method="post" action="${SIGN_OUT_PATH}">
<input type="hidden" name="_csrf" value="${csrf}">
<button type="submit">Sign out</button>
</form>`;
}

function field(body: unknown, name: string): string | undefined {
  const value = body && typeof body === 'object' ? (body as Record<string, unknown>)[name] : undefined;
  return typeof value === 'string' ? value : undefined;
}

// ---- Routes ---------------------------------------------------------------------------------

export default async function signInPages(app: FastifyInstance): Promise<void> {
  // Pages answer errors as pages (CSRF 403, rate-limit 429, body errors), never as JSON.
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status = error instanceof HttpProblem ? error.status : error.statusCode && error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode : 500;
    if (status >= 500) request.log.error({ err: error }, 'page failed');
    if (error instanceof HttpProblem) reply.headers(error.headers);
    const message =
      status === 403 ? 'This form has expired or was not sent from this site. Go back, reload the page and try again.'
      : status === 429 ? 'Too many attempts. Wait a little and try again.'
      : status >= 500 ? 'Something went wrong on our side. Try again in a moment.'
      : 'The request could not be understood.';
    return sendPage(reply, status, 'Sign in', html`<h1>Sign in</h1><p role="alert">${message}</p><p><a href="${SIGN_IN_PATH}">Back to sign-in</a></p>`);
  });

  app.get(SIGN_IN_PATH, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const next = safeNext(query.next, '');
    const csrf = reply.generateCsrf(cookieOptions(request));
    const owner = await currentOwner(request);
    if (owner) return sendPage(reply, 200, 'Signed in', signedIn(owner, csrf, next || undefined));
    return sendPage(reply, 200, 'Sign in', signInForm(csrf, next));
  });

  app.post(SIGN_IN_PATH, { preHandler: [checkOrigin, app.csrfProtection] }, async (request, reply) => {
    const email = field(request.body, 'email') ?? '';
    const password = field(request.body, 'password') ?? '';
    const next = safeNext(field(request.body, 'next'), '');
    const csrf = reply.generateCsrf(cookieOptions(request));
    if (!email || !password || email.length > 254 || password.length > 128) {
      return sendPage(reply, 400, 'Sign in', signInForm(csrf, next, email.slice(0, 254), 'Enter your email and password.'));
    }
    try {
      const platform = request.server.platform;
      const owner = await authenticateOwner(platform, email, password, request.ip);
      const session = await issueOwnerToken(platform, { ownerId: owner.id, workspaceId: owner.workspace_id }, 'owner-browser');
      reply.setCookie(sessionCookieName(platform.config.production), session.token, { ...cookieOptions(request), maxAge: session.expiresIn });
      return reply.code(303).header('cache-control', 'no-store').redirect(next || SIGN_IN_PATH, 303);
    } catch (error) {
      if (!(error instanceof HttpProblem) || (error.status !== 401 && error.status !== 429)) throw error;
      reply.headers(error.status === 429 ? { 'retry-after': error.headers['retry-after'] ?? '60' } : {});
      const message = error.status === 429 ? 'Too many failed attempts. Wait a little and try again.' : 'The email or password is incorrect.';
      return sendPage(reply, error.status, 'Sign in', signInForm(csrf, next, email, message));
    }
  });

  app.post(SIGN_OUT_PATH, { preHandler: [checkOrigin, app.csrfProtection] }, async (request, reply) => {
    reply.clearCookie(sessionCookieName(request.server.config.production), { path: '/' });
    return reply.header('cache-control', 'no-store').redirect(SIGN_IN_PATH, 303);
  });
}
