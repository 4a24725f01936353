// The Connect clients settings page (/account/connect-clients): the signed-in owner's clients
// (id, secret prefix, redirect URIs), a create form, rename and redirect-URI edits, secret
// rotation, delete, and the workspace's grants with a revoke button. It calls the functions the
// owner API uses, so the rules are the API's. A new secret is shown once, in the answer to the
// POST that made it (no-store, never in a URL). Sign-in, CSRF and origin checks, errors and the
// layout are the settings pages' own (server/html/settings-routes.ts, settings-layout.ts).
//
// The routes are added to the root instance by the OAuth area's setup, before the cookie and
// CSRF plugins are registered; the settings routing looks `csrfProtection` up per request.
import type { FastifyInstance } from 'fastify';
import type { components } from '#generated/connect/types.js';
import { csrfField, formField } from '#server/html/forms.js';
import { html, type Html } from '#server/html/html.js';
import { formError, registerSettingsPage, seeOther, type Extras, type PageContext } from '#server/html/settings-routes.js';
import { createClient, deleteClient, listClients, rotateClientSecret, updateClient } from './clients.js';
import { listGrants, revokeGrant } from './grants.js';

type S = components['schemas'];
type Page = Html;

export const CONNECT_CLIENTS_PATH = '/account/connect-clients';
const CLIENT_ID = /^cli_[0-9A-Za-z]{8,48}$/;
const GRANT_ID = /^grt_[0-9A-Za-z]{8,48}$/;

function nameField(body: unknown): string {
  const name = formField(body, 'name').trim();
  if (name.length < 1 || name.length > 100) throw formError('Enter a name of 1 to 100 characters.');
  return name;
}

/** One redirect URI a line, 1 to 10; the API checks each. */
function urisField(body: unknown): string[] {
  const uris = formField(body, 'redirect_uris')
    .split(/\r?\n/)
    .map((u) => u.trim())
    .filter(Boolean);
  if (uris.length < 1 || uris.length > 10) throw formError('Enter 1 to 10 redirect URIs, one a line.');
  if (uris.some((u) => u.length > 2048)) throw formError('Redirect URIs are at most 2,048 characters.');
  return uris;
}

/** The token lifetimes and skip_consent of a form; the API checks the bounds. */
function optionsFields(body: unknown): Pick<S['ConnectClientUpdate'], 'access_token_ttl_seconds' | 'refresh_token_ttl_seconds' | 'skip_consent'> {
  const seconds = (name: string) => {
    const text = formField(body, name).trim();
    if (!text) return undefined;
    if (!/^\d{1,8}$/.test(text)) throw formError('Token lifetimes are whole numbers of seconds.');
    return Number(text);
  };
  return {
    access_token_ttl_seconds: seconds('access_token_ttl_seconds'),
    refresh_token_ttl_seconds: seconds('refresh_token_ttl_seconds'),
    skip_consent: formField(body, 'skip_consent') === 'on',
  };
}

function optionsInputs(values: { access?: number; refresh?: number; skip?: boolean; dynamic?: boolean }) {
  return html`<label>Access token lifetime, seconds (300–86,400) <input name="access_token_ttl_seconds" inputmode="numeric" value="${values.access ?? ''}" placeholder="3600"></label>
<label>Refresh token lifetime, seconds (3,600–7,776,000) <input name="refresh_token_ttl_seconds" inputmode="numeric" value="${values.refresh ?? ''}" placeholder="2592000"></label>
${values.dynamic ? '' : html`<label><input type="checkbox" name="skip_consent"${values.skip ? html` checked` : ''}> First-party app of this workspace: its owner skips the consent page</label>`}`;
}

// ---- Views ----------------------------------------------------------------------------------

function clientSection(client: S['ConnectClient'], csrf: string) {
  const action = (path: string, label: string, extra: Page | string = '') =>
    html`<form method="post" action="${CONNECT_CLIENTS_PATH}/${client.client_id}/${path}">${csrfField(csrf)}${extra}<button type="submit">${label}</button></form>`;
  return html`<section>
<h2>${client.name}</h2>
<p>Client id <code>${client.client_id}</code> · ${client.client_type}${client.secret_prefix ? html` · secret <code>${client.secret_prefix}…</code>` : ''}</p>
${action(
  'update',
  'Save',
  html`<label>Name <input name="name" value="${client.name}" maxlength="100" required></label><label>Redirect URIs (one a line) <textarea name="redirect_uris" rows="3" required>${client.redirect_uris.join('\n')}</textarea></label>${optionsInputs({ access: client.access_token_ttl_seconds, refresh: client.refresh_token_ttl_seconds, skip: client.skip_consent, dynamic: client.dynamically_registered })}`,
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
          ? html`<form method="post" action="${CONNECT_CLIENTS_PATH}/grants/${g.id}/revoke">${csrfField(csrf)}<button type="submit">Revoke</button></form>`
          : ''
      }</li>`,
  )}</ul>`;
}

function createForm(csrf: string, form: Record<string, unknown>) {
  return html`<h2>New Connect client</h2>
<form method="post" action="${CONNECT_CLIENTS_PATH}">
${csrfField(csrf)}
<label>Name <input name="name" maxlength="100" required value="${formField(form, 'name')}"></label>
<label>Type <select name="client_type"><option value="confidential">Confidential (server-side, with a secret)</option><option value="public"${formField(form, 'client_type') === 'public' ? html` selected` : ''}>Public (no secret, PKCE)</option></select></label>
<label>Redirect URIs (one a line) <textarea name="redirect_uris" rows="3" required>${formField(form, 'redirect_uris')}</textarea></label>
${optionsInputs({})}
<button type="submit">Create</button>
</form>`;
}

async function render(ctx: PageContext, extras: Extras): Promise<Page> {
  const platform = ctx.request.server.platform;
  const clients = await listClients(platform, ctx.owner.workspaceId, { limit: 50 });
  const grants = await listGrants(platform, ctx.owner.workspaceId, { limit: 50 });
  return html`<p>Enter a client's id, secret and one of its redirect URIs into the app you connect (a CRM, say).</p>
${extras.error ? html`<p role="alert">${extras.error}</p>` : ''}
${extras.notice ?? ''}
${clients.data.map((c) => clientSection(c, ctx.csrf))}
${createForm(ctx.csrf, extras.form && 'client_type' in extras.form ? extras.form : {}) /* refilled after a refused create only */}
${grantsSection(grants.data, ctx.csrf)}`;
}

function secretNotice(title: string, clientId: string, secret: string | null) {
  return html`<section role="status"><h2>${title}</h2><p>Client id: <code>${clientId}</code></p>${
    secret
      ? html`<p>Copy the secret now: this is the only time it is shown.</p><p>Client secret: <code>${secret}</code></p>`
      : html`<p>Public client: no secret; the app must use PKCE.</p>`
  }</section>`;
}

// ---- Routes ---------------------------------------------------------------------------------

export function registerClientPages(app: FastifyInstance): void {
  const page = registerSettingsPage(app, { path: CONNECT_CLIENTS_PATH, title: 'Connect clients', render });
  const ids = { clientId: CLIENT_ID };
  const clientIdOf = (ctx: PageContext) => ctx.params.clientId!;

  page.post('', async ({ request, owner }) => {
    const type = formField(request.body, 'client_type') === 'public' ? 'public' : 'confidential';
    const created = await createClient(request.server.platform, owner.workspaceId, {
      name: nameField(request.body),
      client_type: type,
      redirect_uris: urisField(request.body),
      ...optionsFields(request.body),
    });
    return { notice: secretNotice(`Created ${created.name}`, created.client_id, created.client_secret) };
  });

  page.post(
    '/:clientId/update',
    async (ctx) => {
      await updateClient(ctx.request.server.platform, ctx.owner.workspaceId, clientIdOf(ctx), {
        name: nameField(ctx.request.body),
        redirect_uris: urisField(ctx.request.body),
        ...optionsFields(ctx.request.body),
      });
      return { notice: html`<p role="status">Saved.</p>` };
    },
    ids,
  );

  page.post(
    '/:clientId/rotate-secret',
    async (ctx) => {
      const rotated = await rotateClientSecret(ctx.request.server.platform, ctx.owner.workspaceId, clientIdOf(ctx));
      return { notice: secretNotice(`New secret for ${rotated.name}`, rotated.client_id, rotated.client_secret) };
    },
    ids,
  );

  page.post(
    '/:clientId/delete',
    async (ctx) => {
      await deleteClient(ctx.request.server.platform, ctx.owner.workspaceId, clientIdOf(ctx));
      return seeOther(ctx.reply, CONNECT_CLIENTS_PATH);
    },
    ids,
  );

  page.post(
    '/grants/:grantId/revoke',
    async (ctx) => {
      await revokeGrant(ctx.request.server.platform, ctx.owner.workspaceId, ctx.params.grantId!);
      return seeOther(ctx.reply, CONNECT_CLIENTS_PATH);
    },
    { grantId: GRANT_ID },
  );
}
