// The Connect consent pages: the consent form (client, workspace, scopes, Approve / Deny), the
// sign-up form of the same step (prefilled from `org_name`, `slug`, `email`, `name`), and the
// error page for an unknown client or unregistered redirect URI. Every value is HTML-escaped
// (`html`); there is no script at all. The policy forbids framing (`frame-ancestors 'none'`,
// X-Frame-Options) and allows forms to post here and to be redirected on to the client's
// redirect URI only: browsers apply `form-action` to the redirect after a form post too.
import type { FastifyReply } from 'fastify';
import { PAGE_STYLE, PRODUCT_NAME, trustedPageDocument } from '#server/html/form-layout.js';
import { hiddenFields } from '#server/html/forms.js';
import { html, type Html } from '#server/html/html.js';
import { pageHeaders } from '#server/html/page-headers.js';
import type { Scope } from './tokens.js';

export const AUTHORIZE_PATH = '/connect/authorize';
/**
 * Where the consent and sign-up forms post: a page route beside the contract's GET authorize, so
 * that `/connect/authorize` serves exactly the methods its document declares (GET, HEAD).
 */
export const DECISION_PATH = '/connect/authorize/decision';

/** What each scope lets the app do, in the words of the person approving it. */
const SCOPE_TEXT: Record<Scope, string> = {
  'documents:write': 'Upload documents to this workspace, and list, read and delete them.',
  'links:write': 'Create share links to your documents, and list, read and revoke them.',
  'analytics:read': 'See when your links and documents were opened and how they were read.',
  'webhooks:write': 'Have events of this workspace sent to its own servers (webhook endpoints and their deliveries).',
};

/** The origin a form on the page may end up at after our redirect (a CSP source expression). */
function originOf(uri: string | undefined): string {
  if (!uri) return '';
  try {
    return ` ${new URL(uri).origin}`;
  } catch {
    return '';
  }
}

/** Where the browser goes after the decision, as the person should read it: the site, or an app's scheme. */
function destination(uri: string): string {
  try {
    const url = new URL(uri);
    return url.origin === 'null' ? url.protocol : url.origin;
  } catch {
    return uri;
  }
}

export function consentCsp(redirectUri?: string): string {
  return [
    "default-src 'none'",
    `style-src ${PAGE_STYLE}`,
    "img-src 'self'",
    `form-action 'self'${originOf(redirectUri)}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

export function sendConsentPage(reply: FastifyReply, status: number, title: string, body: Html, redirectUri?: string): FastifyReply {
  return reply
    .code(status)
    .headers(pageHeaders(consentCsp(redirectUri)))
    .send(trustedPageDocument({ title, body }));
}

export function consentView(input: {
  clientName: string;
  workspaceName: string;
  ownerEmail: string;
  scopes: string[];
  redirectUri: string;
  hidden: Html;
  csrfToken: string;
}): Html {
  return html`<h1>${input.clientName} wants to access ${input.workspaceName}</h1>
<p class="muted">Signed in as ${input.ownerEmail}.</p>
<p>If you approve, ${input.clientName} will be able to:</p>
<ul class="scopes">${input.scopes.map((s) => html`<li>${SCOPE_TEXT[s as Scope] ?? s}</li>`)}</ul>
<p class="muted">You can withdraw this access at any time in your settings, under <a href="/account/connect-clients">Connect clients</a>.</p>
<details><summary>Details for developers</summary>
<p>Scopes: ${input.scopes.map((s, i) => html`${i ? ', ' : ''}<code>${s}</code>`)}</p>
<p>After your decision you go back to <code>${destination(input.redirectUri)}</code>.</p>
</details>
<form method="post" action="${DECISION_PATH}">
${input.hidden}
${hiddenFields({ csrf_token: input.csrfToken })}
<div class="actions">
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</div>
</form>`;
}

export function signUpView(input: {
  clientName: string;
  prefill: { org_name?: string; slug?: string; email?: string; name?: string };
  hidden: Html;
  signupToken: string;
  signInUrl: string;
  error?: string;
  /** SIGNUP=invite: the form asks for the operator's invite code. */
  invite?: { code?: string };
}): Html {
  const p = input.prefill;
  return html`<h1>Create a workspace to connect ${input.clientName}</h1>
<p class="muted">${input.clientName} works with ${PRODUCT_NAME}. Create your workspace; you then choose what ${input.clientName} may do in it.</p>
${input.error ? html`<p role="alert">${input.error}</p>` : ''}
<form method="post" action="${DECISION_PATH}">
${input.hidden}
<input type="hidden" name="signup_token" value="${input.signupToken}">
<input type="hidden" name="action" value="signup">
<label>Workspace name <input name="org_name" value="${p.org_name ?? ''}" maxlength="100" required></label>
<label>Workspace handle <input name="slug" value="${p.slug ?? ''}" maxlength="40" required></label>
<label>Your name <input name="name" value="${p.name ?? ''}" maxlength="100" required></label>
<label>Email <input type="email" name="email" value="${p.email ?? ''}" maxlength="254" autocomplete="username" required></label>
<label>Password <input type="password" name="password" maxlength="128" autocomplete="new-password" required></label>
${input.invite ? html`<label>Invite code <input name="invite_code" value="${input.invite.code ?? ''}" maxlength="52" autocomplete="off" required></label>` : ''}
<button type="submit">Create workspace and continue</button>
</form>
<p>Already have an account? <a href="${input.signInUrl}">Sign in</a>.</p>`;
}

/** SIGNUP=closed: no form, and where to go instead. */
export function signUpClosedView(input: { clientName: string; signInUrl: string }): Html {
  return html`<h1>Sign-up is closed</h1>
<p role="alert">This server does not take new workspaces, so you cannot create one to connect ${input.clientName}. Ask the server's operator for an account.</p>
<p>Already have an account? <a href="${input.signInUrl}">Sign in</a>.</p>`;
}

export function errorView(message: string): Html {
  return html`<h1>This link is not valid</h1><p role="alert">${message}</p><p>Go back to the app you came from and try again.</p>`;
}
