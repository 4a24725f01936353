// /account/api-keys: the workspace's Messaging API keys (prefix, scopes, last use), a create form
// (the key shown once, in that answer), rotation (the new key shown once) and revocation behind
// a confirmation step. Every change runs the account API's own handler.
import type { FastifyInstance } from 'fastify';
import type { components, operations } from '#generated/account/types.js';
import { csrfField, formField, formFields } from '#server/html/forms.js';
import { html } from '#server/html/html.js';
import { actionForm, scrollingTable, secretsNotice, when } from '#server/html/settings-layout.js';
import { callApi, type Ok, formError, registerSettingsPage, seeOther, type Extras, type PageContext } from '#server/html/settings-routes.js';
import { createApiKey, getApiKey, listApiKeys, revokeApiKey, rotateApiKey } from './api-keys.js';

type S = components['schemas'];
type Scope = S['ApiKeyScope'];

export const API_KEYS_PATH = '/account/api-keys';
const KEY_ID = /^key_[0-9A-Za-z]{8,48}$/;
const SCOPES: Scope[] = ['messaging:read', 'messaging:write'];

function createForm(ctx: PageContext, extras: Extras) {
  const form = extras.form ?? {};
  const chosen = form.scopes === undefined ? SCOPES : formFields(form, 'scopes');
  return html`<section><h2>New API key</h2>
<form method="post" action="${API_KEYS_PATH}">
${csrfField(ctx.csrf)}
<label>Name <input name="name" maxlength="100" required value="${formField(form, 'name')}"></label>
<fieldset><legend>Scopes</legend>${SCOPES.map((s) => html`<label><input type="checkbox" name="scopes" value="${s}"${chosen.includes(s) ? html` checked` : ''}> ${s}</label>`)}</fieldset>
<label>Expires (optional, UTC) <input type="datetime-local" name="expires_at" value="${formField(form, 'expires_at')}"></label>
<button type="submit">Create key</button>
</form></section>`;
}

function confirmRevoke(ctx: PageContext, key: components['schemas']['ApiKey']) {
  return html`<section role="alert"><h2>Revoke ${key.name}?</h2><p>Requests with the key <code>${key.prefix}…</code> are refused at once. This cannot be undone.</p>
${actionForm(`${API_KEYS_PATH}/${key.id}/revoke`, ctx.csrf, 'Yes, revoke it', html`<input type="hidden" name="confirm" value="yes">`)}<a href="${API_KEYS_PATH}">Cancel</a></section>`;
}

async function render(ctx: PageContext, extras: Extras) {
  const page = await callApi<Ok<operations['listApiKeys']>>(listApiKeys, ctx, { query: { limit: 100 } });
  const keys = page.data;
  const rows = keys.map(
    (
      k,
    ) => html`<tr><td>${k.name}</td><td><code>${k.prefix}…</code></td><td>${k.scopes.join(', ')}</td><td>${k.status}</td><td>${when(k.last_used_at)}</td><td>${when(k.created_at)}</td><td>${when(k.expires_at)}</td>
<td>${k.status === 'active' ? html`${actionForm(`${API_KEYS_PATH}/${k.id}/rotate`, ctx.csrf, 'Rotate')}${actionForm(`${API_KEYS_PATH}/${k.id}/revoke`, ctx.csrf, 'Revoke…')}` : ''}</td></tr>`,
  );
  return html`<p>Keys for the Messaging API (<code>X-API-Key: mk_…</code>, or <code>Authorization: ApiKey mk_…</code>). A key is shown once, when it is created or rotated; the list shows its prefix.</p>
${extras.error ? html`<p role="alert">${extras.error}</p>` : ''}
${extras.notice ?? ''}
${keys.length ? scrollingTable(html`<table><thead><tr><th>Name</th><th>Prefix</th><th>Scopes</th><th>Status</th><th>Last used</th><th>Created</th><th>Expires</th><th></th></tr></thead><tbody>${rows}</tbody></table>`) : html`<p>No API keys yet.</p>`}
${createForm(ctx, extras)}`;
}

/** The form as the API's create body; the API's own checks (future expiry) run after this. */
function createBody(body: unknown) {
  const name = formField(body, 'name').trim();
  if (name.length < 1 || name.length > 100) throw formError('Enter a name of 1 to 100 characters.');
  const scopes = formFields(body, 'scopes');
  if (!scopes.length || scopes.some((s) => !SCOPES.includes(s as Scope)) || new Set(scopes).size !== scopes.length)
    throw formError('Choose at least one scope from the list.');
  const expires = formField(body, 'expires_at');
  let expiresAt: string | undefined;
  if (expires) {
    // datetime-local has no zone; the form says UTC.
    const date = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(expires) ? new Date(`${expires}Z`) : new Date(NaN);
    if (Number.isNaN(date.getTime())) throw formError('Enter the expiry as a date and time.');
    expiresAt = date.toISOString();
  }
  return { name, kind: 'messaging' as const, scopes: scopes as Scope[], ...(expiresAt ? { expires_at: expiresAt } : {}) };
}

export default async function apiKeysPages(app: FastifyInstance): Promise<void> {
  const page = registerSettingsPage(app, { path: API_KEYS_PATH, title: 'API keys', render });
  const ids = { keyId: KEY_ID };

  page.post('', async (ctx) => {
    const key = await callApi<S['ApiKeyWithSecret']>(createApiKey, ctx, { body: createBody(ctx.request.body) });
    return { notice: secretsNotice(`Created ${key.name}`, [['API key', key.secret]]) };
  });

  page.post(
    '/:keyId/rotate',
    async (ctx) => {
      const key = await callApi<S['ApiKeyWithSecret']>(rotateApiKey, ctx, { params: { keyId: ctx.params.keyId! } });
      return {
        notice: secretsNotice(
          `New key for ${key.name}`,
          [['API key', key.secret]],
          'The old key is refused from now on. Copy the new one now: this is the only time it is shown.',
        ),
      };
    },
    ids,
  );

  page.post(
    '/:keyId/revoke',
    async (ctx) => {
      const keyId = ctx.params.keyId!;
      if (formField(ctx.request.body, 'confirm') !== 'yes') {
        const key = await callApi<S['ApiKey']>(getApiKey, ctx, { params: { keyId } }); // 404 for another workspace's key
        return { notice: confirmRevoke(ctx, key) };
      }
      await callApi(revokeApiKey, ctx, { params: { keyId } });
      return seeOther(ctx.reply, API_KEYS_PATH);
    },
    ids,
  );
}
