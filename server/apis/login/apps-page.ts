// The Login apps settings page (/account/login-apps): the signed-in owner's apps, a create form,
// rotation of each credential, delete, the provider-webhook status with a retry button, and the
// receipts of the hosted webhook. It calls the same functions as the owner API, so the rules
// (URL checks, numbers of this workspace only) are the API's. A new key or secret is shown in
// the answer to the POST that made it, once, and never again (no-store, nothing in a URL).
// Sign-in, CSRF and origin checks, errors and the layout are the settings pages' own
// (server/html/settings-routes.ts, settings-layout.ts); every value goes through `html`, which escapes it.
import { RESOURCE_ID } from '#server/lib/ids.js';
import type { FastifyInstance } from 'fastify';
import type { components } from '#generated/login/types.js';
import { csrfField, formField } from '#server/html/forms.js';
import { html, type Html } from '#server/html/html.js';
import { secretsNotice } from '#server/html/settings-layout.js';
import { formError, registerSettingsPage, seeOther, type Extras, type PageContext } from '#server/html/settings-routes.js';
import { createApp, deleteApp, listApps, listReceipts, retrySetup, rotateApiKey, rotateWebhookSecret, updateApp } from './apps.js';

type S = components['schemas'];
type Page = Html;

export const LOGIN_APPS_PATH = '/account/login-apps';
const APP_ID = /^app_[0-9A-Za-z]{8,48}$/;
const DESTINATIONS: S['LoginWebhookDestination'][] = ['none', 'production', 'staging', 'hosted'];
const OVERLAPS = [0, 3600, 86400];

/** The create form as the API's body; the API's own checks run after this. */
function createBody(body: unknown): S['LoginAppCreate'] {
  const name = formField(body, 'name');
  if (name.length < 1 || name.length > 100) throw formError('Enter a name of 1 to 100 characters.');
  const destination = formField(body, 'webhook_destination') || 'none';
  if (!DESTINATIONS.includes(destination as S['LoginWebhookDestination'])) throw formError('Choose a webhook destination from the list.');
  const phoneNumberId = formField(body, 'phone_number_id');
  if (phoneNumberId && !RESOURCE_ID.test(phoneNumberId)) throw formError('Choose a phone number from the list.');
  const url = (name: string) => {
    const value = formField(body, name).trim();
    if (value.length > 2048) throw formError('Webhook URLs are at most 2,048 characters.');
    return value || null;
  };
  return {
    name,
    use_service_phone: formField(body, 'phone_source') !== 'own',
    phone_number_id: phoneNumberId || null,
    webhook_destination: destination as S['LoginWebhookDestination'],
    production_webhook_url: url('production_webhook_url'),
    staging_webhook_url: url('staging_webhook_url'),
    ...oidcFields(body),
  };
}

/** The OpenID Connect fields of a form: redirect URIs one per line, the client type. */
function oidcFields(body: unknown): Pick<S['LoginAppUpdate'], 'oidc_redirect_uris' | 'oidc_client_type'> {
  const uris = formField(body, 'oidc_redirect_uris')
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter(Boolean);
  if (uris.length > 10 || uris.some((u) => u.length > 2048)) throw formError('At most 10 redirect URIs of at most 2,048 characters each.');
  const type = formField(body, 'oidc_client_type') || 'confidential';
  if (type !== 'confidential' && type !== 'public') throw formError('Choose a client type from the list.');
  return { oidc_redirect_uris: uris, oidc_client_type: type };
}

function oidcInputs(uris: string, type: string) {
  return html`<label>OpenID Connect redirect URIs (one per line; none: sign-in by OIDC off) <textarea name="oidc_redirect_uris" rows="3" maxlength="21000">${uris}</textarea></label>
<label>OpenID Connect client type <select name="oidc_client_type"><option value="confidential">Confidential (server, API key as client secret)</option><option value="public"${type === 'public' ? html` selected` : ''}>Public (browser or mobile app, PKCE only)</option></select></label>`;
}

// ---- Views ----------------------------------------------------------------------------------

function createForm(csrf: string, numbers: { id: string; display_phone_number: string }[], form: Record<string, unknown>) {
  const value = (name: string) => formField(form, name);
  const selected = (name: string, option: string) => (value(name) === option ? html` selected` : '');
  return html`<h2>New Login app</h2>
<form method="post" action="${LOGIN_APPS_PATH}">
${csrfField(csrf)}
<label>Name <input name="name" maxlength="100" required value="${value('name')}"></label>
<label>Phone source <select name="phone_source"><option value="service">Shared service number</option><option value="own"${selected('phone_source', 'own')}>Own number</option></select></label>
<label>Own number <select name="phone_number_id"><option value="">Primary cloud-API number</option>${numbers.map((n) => html`<option value="${n.id}"${selected('phone_number_id', n.id)}>${n.display_phone_number}</option>`)}</select></label>
<label>Webhook destination <select name="webhook_destination">${DESTINATIONS.map((d) => html`<option value="${d}"${selected('webhook_destination', d)}>${d}</option>`)}</select></label>
<label>Production webhook URL <input type="url" name="production_webhook_url" maxlength="2048" value="${value('production_webhook_url')}"></label>
<label>Staging webhook URL <input type="url" name="staging_webhook_url" maxlength="2048" value="${value('staging_webhook_url')}"></label>
${oidcInputs(value('oidc_redirect_uris'), value('oidc_client_type'))}
<button type="submit">Create</button>
</form>`;
}

function appSection(app: S['LoginApp'], receipts: S['HostedWebhookReceipt'][], csrf: string) {
  const action = (path: string, label: string, extra: Page | string = '') =>
    html`<form method="post" action="${LOGIN_APPS_PATH}/${app.id}/${path}">${csrfField(csrf)}${extra}<button type="submit">${label}</button></form>`;
  const webhook = app.provider_webhook;
  return html`<section>
<h2>${app.name}</h2>
<p>Id <code>${app.id}</code> · API key <code>${app.api_key_prefix}…</code> · webhook secret <code>${app.webhook_secret_prefix}…</code></p>
<p>Number: ${app.use_service_phone ? 'shared service number' : 'own number'} ${app.display_phone_number ?? '(none usable)'}</p>
<p>Webhook destination: ${app.webhook_destination}${app.production_webhook_url ? html`<br>Production: ${app.production_webhook_url}` : ''}${app.staging_webhook_url ? html`<br>Staging: ${app.staging_webhook_url}` : ''}<br>Hosted: ${app.hosted_webhook_url}</p>
<p>Provider webhook: <strong>${webhook.status}</strong>${webhook.last_error ? html` — ${webhook.last_error}${webhook.provider_code !== null ? ` (code ${webhook.provider_code})` : ''}` : ''}</p>
<p>OpenID Connect: issuer <code>${app.oidc_issuer}</code>, client id <code>${app.id}</code>, ${app.oidc_client_type} client${app.oidc_client_type === 'confidential' ? ' (client secret: the API key)' : ''}.</p>
${action('oidc', 'Save OpenID Connect settings', oidcInputs(app.oidc_redirect_uris.join('\n'), app.oidc_client_type))}
${webhook.status === 'failed' || webhook.status === 'pending' ? action('retry-webhook', 'Retry webhook set-up') : ''}
${action('rotate-api-key', 'Rotate API key')}
${action('rotate-webhook-secret', 'Rotate webhook secret', html`<label>Previous secret keeps signing for <select name="previous_secret_valid_for">${OVERLAPS.map((s) => html`<option value="${s}">${s === 0 ? 'no time' : `${s / 3600} h`}</option>`)}</select></label>`)}
${action('delete', 'Delete app')}
<h3>Hosted webhook receipts</h3>
${receipts.length ? html`<ul>${receipts.map((r) => html`<li><code>${r.event_id}</code> at ${r.received_at}: ${r.payload.phone} (${r.payload.profile_name ?? 'no name'}), session <code>${r.payload.session_id}</code></li>`)}</ul>` : html`<p>None yet.</p>`}
</section>`;
}

async function render(ctx: PageContext, extras: Extras): Promise<Page> {
  const platform = ctx.request.server.platform;
  const { owner, csrf } = ctx;
  // One page of the newest apps is plenty for a settings page; the API pages through all.
  const apps = await listApps(ctx.request.server, owner.workspaceId, { limit: 50 });
  const receipts = await Promise.all(apps.data.map(async (a) => (await listReceipts(platform, owner.workspaceId, a.id, { limit: 5 })).data));
  const numbers = await platform.store.db
    .selectFrom('phone_numbers')
    .select(['id', 'display_phone_number'])
    .where('workspace_id', '=', owner.workspaceId)
    .orderBy('created_at')
    .execute();
  return html`${extras.error ? html`<p role="alert">${extras.error}</p>` : ''}
${extras.notice ?? ''}
${apps.data.map((app, i) => appSection(app, receipts[i]!, csrf))}
${createForm(csrf, numbers, extras.form ?? {})}`;
}

// ---- Routes ---------------------------------------------------------------------------------

export default async function loginAppsPages(app: FastifyInstance): Promise<void> {
  const page = registerSettingsPage(app, { path: LOGIN_APPS_PATH, title: 'Login apps', render });
  const ids = { appId: APP_ID };
  const appIdOf = (ctx: PageContext) => ctx.params.appId!;

  page.post('', async ({ request, owner }) => {
    const created = await createApp(request.server, owner.workspaceId, createBody(request.body), request.log);
    return {
      notice: secretsNotice(`Created ${created.app.name}`, [
        ['API key', created.apiKey],
        ['Webhook secret', created.webhookSecret],
      ]),
    };
  });

  page.post(
    '/:appId/rotate-api-key',
    async (ctx) => {
      const rotated = await rotateApiKey(ctx.request.server, ctx.owner.workspaceId, appIdOf(ctx));
      return { notice: secretsNotice('New API key', [['API key', rotated.api_key]]) };
    },
    ids,
  );

  page.post(
    '/:appId/rotate-webhook-secret',
    async (ctx) => {
      const overlap = Number(formField(ctx.request.body, 'previous_secret_valid_for') || 0);
      if (!OVERLAPS.includes(overlap)) throw formError('Choose an overlap from the list.');
      const rotated = await rotateWebhookSecret(ctx.request.server.platform, ctx.owner.workspaceId, appIdOf(ctx), overlap);
      return { notice: secretsNotice('New webhook secret', [['Webhook secret', rotated.webhook_secret]]) };
    },
    ids,
  );

  page.post(
    '/:appId/oidc',
    async (ctx) => {
      await updateApp(ctx.request.server, ctx.owner.workspaceId, appIdOf(ctx), oidcFields(ctx.request.body), ctx.request.log);
      return seeOther(ctx.reply, LOGIN_APPS_PATH);
    },
    ids,
  );

  page.post(
    '/:appId/retry-webhook',
    async (ctx) => {
      await retrySetup(ctx.request.server, ctx.owner.workspaceId, appIdOf(ctx), ctx.request.log);
      return seeOther(ctx.reply, LOGIN_APPS_PATH);
    },
    ids,
  );

  page.post(
    '/:appId/delete',
    async (ctx) => {
      await deleteApp(ctx.request.server, ctx.owner.workspaceId, appIdOf(ctx));
      return seeOther(ctx.reply, LOGIN_APPS_PATH);
    },
    ids,
  );
}
