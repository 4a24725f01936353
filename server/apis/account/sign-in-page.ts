// The browser's sign-in page: GET shows the form (or who is signed in), POST checks the
// password like the API does (same throttle, same answer for unknown emails) and sets the owner's
// session cookie (server/auth/owner-session.ts). Forms carry a CSRF token (@fastify/csrf-protection,
// registered by server/plugins/browser.ts) and are refused when sent from another origin. `next`
// may only name a same-origin path. Every value is HTML-escaped.
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import type {} from '@fastify/cookie';
import type {} from '@fastify/csrf-protection';
import { issueOwnerToken } from '#server/auth/owner-jwt.js';
import { SIGN_IN_PATH, SIGN_OUT_PATH, currentOwner, sessionCookieName, type SignedInOwner } from '#server/auth/owner-session.js';
import { HttpProblem } from '#server/lib/problems.js';
import { sendFormPage } from '#server/html/form-layout.js';
import { csrfField, formField, refuseCrossSitePost } from '#server/html/forms.js';
import { html } from '#server/html/html.js';
import { authenticateOwner } from './sessions.js';

// ---- Redirects ------------------------------------------------------------------------------

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

// ---- Cookies --------------------------------------------------------------------------------

function cookieOptions(request: FastifyRequest) {
  return { path: '/', httpOnly: true, sameSite: 'lax' as const, secure: request.server.config.production, signed: true };
}

// ---- Views ----------------------------------------------------------------------------------

function signInForm(csrf: string, next: string, email = '', error?: string) {
  return html`<h1>Sign in</h1>
<p class="muted">${next ? 'Sign in with your workspace owner account to continue.' : "Your workspace's settings: API keys, apps, webhooks and numbers."}</p>
${error ? html`<p role="alert">${error}</p>` : ''}
<form method="post" action="${SIGN_IN_PATH}">
${csrfField(csrf)}
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
${csrfField(csrf)}
<button type="submit" class="secondary">Sign out</button>
</form>`;
}

// ---- Routes ---------------------------------------------------------------------------------

export default async function signInPages(app: FastifyInstance): Promise<void> {
  // Pages answer errors as pages (CSRF 403, rate-limit 429, body errors), never as JSON.
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status = error instanceof HttpProblem ? error.status : error.statusCode && error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode : 500;
    if (status >= 500) request.log.error({ err: error }, 'page failed');
    if (error instanceof HttpProblem) reply.headers(error.headers);
    const message =
      status === 403
        ? 'This form has expired or was not sent from this site. Go back, reload the page and try again.'
        : status === 429
          ? 'Too many attempts. Wait a little and try again.'
          : status >= 500
            ? 'Something went wrong on our side. Try again in a moment.'
            : 'The request could not be understood.';
    return sendFormPage(reply, status, 'Sign in', html`<h1>Sign in</h1><p role="alert">${message}</p><p><a href="${SIGN_IN_PATH}">Back to sign-in</a></p>`);
  });

  app.get(SIGN_IN_PATH, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const next = safeNext(query.next, '');
    const csrf = reply.generateCsrf(cookieOptions(request));
    const owner = await currentOwner(request);
    if (owner) return sendFormPage(reply, 200, 'Signed in', signedIn(owner, csrf, next || undefined));
    return sendFormPage(reply, 200, 'Sign in', signInForm(csrf, next));
  });

  app.post(SIGN_IN_PATH, { preHandler: [refuseCrossSitePost, app.csrfProtection] }, async (request, reply) => {
    const email = formField(request.body, 'email');
    const password = formField(request.body, 'password');
    const next = safeNext(formField(request.body, 'next'), '');
    const csrf = reply.generateCsrf(cookieOptions(request));
    if (!email || !password || email.length > 254 || password.length > 128) {
      return sendFormPage(reply, 400, 'Sign in', signInForm(csrf, next, email.slice(0, 254), 'Enter your email and password.'));
    }
    try {
      const platform = request.server.platform;
      const owner = await authenticateOwner(platform, email, password, request.ip);
      const session = await issueOwnerToken(platform, { ownerId: owner.id, workspaceId: owner.workspace_id }, 'owner-browser');
      reply.setCookie(sessionCookieName(platform.config.production), session.token, { ...cookieOptions(request), maxAge: session.expiresIn });
      return reply
        .code(303)
        .header('cache-control', 'no-store')
        .redirect(next || SIGN_IN_PATH, 303);
    } catch (error) {
      if (!(error instanceof HttpProblem) || (error.status !== 401 && error.status !== 429)) throw error;
      reply.headers(error.status === 429 ? { 'retry-after': error.headers['retry-after'] ?? '60' } : {});
      const message = error.status === 429 ? 'Too many failed attempts. Wait a little and try again.' : 'The email or password is incorrect.';
      return sendFormPage(reply, error.status, 'Sign in', signInForm(csrf, next, email, message));
    }
  });

  app.post(SIGN_OUT_PATH, { preHandler: [refuseCrossSitePost, app.csrfProtection] }, async (request, reply) => {
    reply.clearCookie(sessionCookieName(request.server.config.production), { path: '/' });
    return reply.header('cache-control', 'no-store').redirect(SIGN_IN_PATH, 303);
  });
}
