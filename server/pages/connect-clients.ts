// The Connect clients settings page (/account/connect-clients): the signed-in owner's clients
// (id, secret prefix, redirect URIs), a create form, rename and redirect-URI edits, secret
// rotation, delete, and the workspace's grants with a revoke button. It calls the functions the
// owner API uses, so the rules are the API's. A new secret is shown once, in the answer to the
// POST that made it (no-store, never in a URL). Forms carry the CSRF token and are refused from
// other origins; every value goes through `html`.
//
// The routes are added to the root instance by the OAuth area's setup, before the cookie and
// CSRF plugins are registered: `csrfProtection` is therefore looked up when a request arrives.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify';
import type { components } from '../../generated/connect/types.js';
import { createClient, deleteClient, listClients, rotateClientSecret, updateClient } from '../apis/connect/oauth/clients.js';
import { listGrants, revokeGrant } from '../apis/connect/oauth/grants.js';
import { HttpProblem } from '../lib/problems.js';
import { SIGN_IN_PATH, currentOwner, html, sameOriginPost, sendPage, type SignedInOwner } from './sign-in.js';

type S = components['schemas'];
type Page = ReturnType<typeof html>;

export const CONNECT_CLIENTS_PATH = '/account/connect-clients';
const CLIENT_ID = /^cli_[0-9A-Za-z]{8,48}$/;
const GRANT_ID = /^grt_[0-9A-Za-z]{8,48}$/;

function field(body: unknown, name: string): string {
  const value = body && typeof body === 'object' ? (body as Record<string, unknown>)[name] : undefined;
  return typeof value === 'string' ? value : '';
}

const formError = (detail: string) => new HttpProblem(400, 'validation', detail);

function nameField(body: unknown): string {
  const name = field(body, 'name').trim();
  if (name.length < 1 || name.length > 100) throw formError('Enter a name of 1 to 100 characters.');
  return name;
}

/** One redirect URI a line, 1 to 10; the API checks each. */
function urisField(body: unknown): string[] {
  const uris = field(body, 'redirect_uris').split(/\r?\n/).map((u) => u.trim()).filter(Boolean);
  if (uris.length < 1 || uris.length > 10) throw formError('Enter 1 to 10 redirect URIs, one a line.');
  if (uris.some((u) => u.length > 2048)) throw formError('Redirect URIs are at most 2,048 characters.');
  return uris;
}

// ---- Views ----------------------------------------------------------------------------------

function clientSection(client: S['ConnectClient'], csrf: string) {
  const action = (path: string, label: string, extra: Page | string = '') =>
    html`<form method="post" action="${CONNECT_CLIENTS_PATH}/${client.client_id}/${path}"><input type="hidden" name="_csrf" value="${csrf}">${extra}<button type="submit">${label}</button></form>`;
  return html`<section>
<h2>${client.name}</h2>
<p>Client id <code>${client.client_id}</code> · ${client.client_type}${client.secret_prefix ? html` · secret <code>${client.secret_prefix}…</code>` : ''}</p>
${action(
  'update',
  'Save',
  html`<label>Name <input name="name" value="${client.name}" maxlength="100" required></label><label>Redirect URIs (one a line) <textarea name="redirect_uris" rows="3" required>${client.redirect_uris.join('\n')}</textarea></label>`,
)}
${client.client_type === 'confidential' ? action('rotate-secret', 'Rotate secret') : ''}
${action('delete', 'Delete client (revokes its grants and tokens)')}
</section>`;
}

function grantsSection(grants: S['Grant'][], csrf: string) {
  if (!grants.length) return html`<h2>Grants</h2><p>No app has been granted access to this workspace yet.</p>`;
  return html`<h2>Grants</h2><ul>${grants.map(
    (g) =>
      html`<li>${g.client_name} (<code>${g.client_id}</code>): ${g.scopes.join(', ')} · ${g.status}${
        g.status === 'active'
          ? html`<form method="post" action="${CONNECT_CLIENTS_PATH}/grants/${g.id}/revoke"><input type="hidden" name="_csrf" value="${csrf}"><button type="submit">Revoke</button></form>`
          : ''
      }</li>`,
  )}</ul>`;
}

function createForm(csrf: string) {
  return html`<h2>New Connect client</h2>
<form method="post" action="${CONNECT_CLIENTS_PATH}">
<input type="hidden" name="_csrf" value="${csrf}">
<label>Name <input name="name" maxlength="100" required></label>
<label>Type <select name="client_type"><option value="confidential">Confidential (server-side, with a secret)</option><option value="public">Public (no secret, PKCE)</option></select></label>
<label>Redirect URIs (one a line) <textarea name="redirect_uris" rows="3" required></textarea></label>
<button type="submit">Create</button>
</form>`;
}

interface Extras {
  notice?: Page;
  error?: string;
}

async function renderPage(request: FastifyRequest, reply: FastifyReply, owner: SignedInOwner, status: number, extras: Extras = {}): Promise<FastifyReply> {
  const platform = request.server.platform;
  const csrf = reply.generateCsrf({ path: '/', httpOnly: true, sameSite: 'lax', secure: platform.config.production, signed: true });
  const clients = await listClients(platform, owner.workspaceId, { limit: 50 });
  const grants = await listGrants(platform, owner.workspaceId, { limit: 50 });
  return sendPage(
    reply,
    status,
    'Connect clients',
    html`<h1>Connect clients</h1>
<p>Signed in as ${owner.name} (${owner.email}). Enter a client's id, secret and one of its redirect URIs into the app you connect (a CRM, say).</p>
${extras.error ? html`<p role="alert">${extras.error}</p>` : ''}
${extras.notice ?? ''}
${clients.data.map((c) => clientSection(c, csrf))}
${createForm(csrf)}
${grantsSection(grants.data, csrf)}`,
  );
}

function secretNotice(title: string, clientId: string, secret: string | null) {
  return html`<section role="status"><h2>${title}</h2><p>Client id: <code>${clientId}</code></p>${
    secret ? html`<p>Copy the secret now: this is the only time it is shown.</p><p>Client secret: <code>${secret}</code></p>` : html`<p>Public client: no secret; the app must use PKCE.</p>`
  }</section>`;
}

const problemMessage = (error: HttpProblem) =>
  [error.problem.detail, ...(error.problem.errors ?? []).map((e) => `${e.pointer.replace('/body/', '')}: ${e.detail}`)].filter(Boolean).join(' ');

function pageError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const status = error instanceof HttpProblem ? error.status : error.statusCode && error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode : 500;
  if (status >= 500) request.log.error({ err: error }, 'page failed');
  const message =
    status === 403 ? 'This form has expired or was not sent from this site. Go back, reload the page and try again.'
    : status === 429 ? 'Too many requests. Wait a little and try again.'
    : status >= 500 ? 'Something went wrong on our side. Try again in a moment.'
    : 'The request could not be understood.';
  return sendPage(reply, status, 'Connect clients', html`<h1>Connect clients</h1><p role="alert">${message}</p><p><a href="${CONNECT_CLIENTS_PATH}">Back to Connect clients</a></p>`);
}

// ---- Routes ---------------------------------------------------------------------------------

export function registerClientPages(app: FastifyInstance): void {
  const toSignIn = (reply: FastifyReply) => reply.header('cache-control', 'no-store').redirect(`${SIGN_IN_PATH}?next=${encodeURIComponent(CONNECT_CLIENTS_PATH)}`, 303);
  const checkOrigin: preHandlerHookHandler = (request, _reply, done) => done(sameOriginPost(request) ? undefined : new HttpProblem(403, 'forbidden', 'This form was not sent from this site.'));
  const checkCsrf: preHandlerHookHandler = function (request, reply, done) {
    request.server.csrfProtection.call(this, request, reply, done);
  };
  const post = (path: string, run: (owner: SignedInOwner, request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | Extras>) =>
    app.post(path, {
      errorHandler: pageError,
      preHandler: [checkOrigin, checkCsrf],
      handler: async (request, reply) => {
        const owner = await currentOwner(request);
        if (!owner) return toSignIn(reply);
        const params = request.params as { clientId?: string; grantId?: string };
        try {
          if (params.clientId !== undefined && !CLIENT_ID.test(params.clientId)) throw new HttpProblem(404, 'not-found', 'No such Connect client in this workspace.');
          if (params.grantId !== undefined && !GRANT_ID.test(params.grantId)) throw new HttpProblem(404, 'not-found', 'No such grant in this workspace.');
          const outcome = await run(owner, request, reply);
          return 'statusCode' in outcome ? outcome : renderPage(request, reply, owner, 200, outcome);
        } catch (error) {
          if (!(error instanceof HttpProblem) || error.status >= 500) throw error;
          return renderPage(request, reply, owner, error.status, { error: problemMessage(error) });
        }
      },
    });
  const clientIdOf = (request: FastifyRequest) => (request.params as { clientId: string }).clientId;
  const backToList = (reply: FastifyReply) => reply.header('cache-control', 'no-store').redirect(CONNECT_CLIENTS_PATH, 303);

  app.get(CONNECT_CLIENTS_PATH, { errorHandler: pageError }, async (request, reply) => {
    const owner = await currentOwner(request);
    if (!owner) return toSignIn(reply);
    return renderPage(request, reply, owner, 200);
  });

  post(CONNECT_CLIENTS_PATH, async (owner, request) => {
    const type = field(request.body, 'client_type') === 'public' ? 'public' : 'confidential';
    const created = await createClient(request.server.platform, owner.workspaceId, { name: nameField(request.body), client_type: type, redirect_uris: urisField(request.body) });
    return { notice: secretNotice(`Created ${created.name}`, created.client_id, created.client_secret) };
  });

  post(`${CONNECT_CLIENTS_PATH}/:clientId/update`, async (owner, request) => {
    await updateClient(request.server.platform, owner.workspaceId, clientIdOf(request), { name: nameField(request.body), redirect_uris: urisField(request.body) });
    return { notice: html`<p role="status">Saved.</p>` };
  });

  post(`${CONNECT_CLIENTS_PATH}/:clientId/rotate-secret`, async (owner, request) => {
    const rotated = await rotateClientSecret(request.server.platform, owner.workspaceId, clientIdOf(request));
    return { notice: secretNotice(`New secret for ${rotated.name}`, rotated.client_id, rotated.client_secret) };
  });

  post(`${CONNECT_CLIENTS_PATH}/:clientId/delete`, async (owner, request, reply) => {
    await deleteClient(request.server.platform, owner.workspaceId, clientIdOf(request));
    return backToList(reply);
  });

  post(`${CONNECT_CLIENTS_PATH}/grants/:grantId/revoke`, async (owner, request, reply) => {
    await revokeGrant(request.server.platform, owner.workspaceId, (request.params as { grantId: string }).grantId);
    return backToList(reply);
  });
}
