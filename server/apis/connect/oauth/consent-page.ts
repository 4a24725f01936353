// The Connect consent pages: the consent form (client, workspace, scopes, Approve / Deny), the
// sign-up form of the same step (prefilled from `org_name`, `slug`, `email`, `name`), and the
// error page for an unknown client or unregistered redirect URI. Every value is HTML-escaped
// (`html`); there is no script at all. The policy forbids framing (`frame-ancestors 'none'`,
// X-Frame-Options) and allows forms to post here and to be redirected on to the client's
// redirect URI only: browsers apply `form-action` to the redirect after a form post too.
import type { FastifyReply } from 'fastify';
import { hiddenFields } from '#server/html/forms.js';
import { html, htmlDocument, type Html } from '#server/html/html.js';
import { pageHeaders, styleElement, styleHash } from '#server/html/page-headers.js';

export const AUTHORIZE_PATH = '/connect/authorize';
/**
 * Where the consent and sign-up forms post: a page route beside the contract's GET authorize, so
 * that `/connect/authorize` serves exactly the methods its document declares (GET, HEAD).
 */
export const DECISION_PATH = '/connect/authorize/decision';

// No character `html` escapes, so the stylesheet reaches the page byte-exact for its hash.
const CSS =
  'body{font:16px/1.5 system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem}label,input{display:block;width:100%;margin:.25rem 0 1rem}button{margin:.5rem .5rem 0 0}[role=alert]{color:#a00}';
const STYLE_HASH = styleHash(CSS);

const SCOPE_TEXT: Record<string, string> = {
  'documents:write': 'Upload, list, read and delete documents',
  'links:write': 'Create, list, read and revoke share links',
  'analytics:read': 'Read link and document analytics and reader sessions',
  'webhooks:write': 'Manage webhook endpoints and their deliveries',
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

export function consentCsp(redirectUri?: string): string {
  return ["default-src 'none'", `style-src ${STYLE_HASH}`, `form-action 'self'${originOf(redirectUri)}`, "frame-ancestors 'none'", "base-uri 'none'"].join(
    '; ',
  );
}

export function sendConsentPage(reply: FastifyReply, status: number, title: string, body: Html, redirectUri?: string): FastifyReply {
  return reply
    .code(status)
    .headers(pageHeaders(consentCsp(redirectUri)))
    .send(htmlDocument(title, styleElement(CSS), html`<main>${body}</main>`));
}

export function consentView(input: { clientName: string; workspaceName: string; ownerEmail: string; scopes: string[]; hidden: Html; csrfToken: string }): Html {
  return html`<h1>${input.clientName} wants to access ${input.workspaceName}</h1>
<p>Signed in as ${input.ownerEmail}.</p>
<p>If you approve, ${input.clientName} will be able to:</p>
<ul>${input.scopes.map((s) => html`<li>${SCOPE_TEXT[s] ?? s} <code>${s}</code></li>`)}</ul>
<form method="post" action="${DECISION_PATH}">
${input.hidden}
${hiddenFields({ csrf_token: input.csrfToken })}
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>`;
}

export function signUpView(input: {
  clientName: string;
  prefill: { org_name?: string; slug?: string; email?: string; name?: string };
  hidden: Html;
  signupToken: string;
  signInUrl: string;
  error?: string;
}): Html {
  const p = input.prefill;
  return html`<h1>Create a workspace to connect ${input.clientName}</h1>
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
<button type="submit">Create workspace and continue</button>
</form>
<p>Already have an account? <a href="${input.signInUrl}">Sign in</a>.</p>`;
}

export function errorView(message: string): Html {
  return html`<h1>This link is not valid</h1><p role="alert">${message}</p><p>Go back to the app you came from and try again.</p>`;
}
