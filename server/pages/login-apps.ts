// The Login apps settings page (/account/login-apps): the signed-in owner's apps, a create form,
// rotation of each credential, delete, the provider-webhook status with a retry button, and the
// receipts of the hosted webhook. It calls the same functions as the owner API, so the rules
// (URL checks, numbers of this workspace only) are the API's. A new key or secret is shown in
// the answer to the POST that made it, once, and never again (no-store, nothing in a URL).
// Forms carry the CSRF token and are refused from other origins, as on the sign-in page; every
// value goes through `html`, which escapes it.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { components } from '../../generated/login/types.js';
import { createApp, deleteApp, listApps, listReceipts, retrySetup, rotateApiKey, rotateWebhookSecret } from '../apis/login/apps.js';
import { HttpProblem } from '../lib/problems.js';
import { SIGN_IN_PATH, currentOwner, html, sameOriginPost, sendPage, type SignedInOwner } from './sign-in.js';

type S = components['schemas'];
type Page = ReturnType<typeof html>;

export const LOGIN_APPS_PATH = '/account/login-apps';
const APP_ID = /^app_[0-9A-Za-z]{8,48}$/;
const RESOURCE_ID = /^[a-z]{2,6}_[0-9A-Za-z]{8,48}$/;
const DESTINATIONS: S['LoginWebhookDestination'][] = ['none', 'production', 'staging', 'hosted'];
const OVERLAPS = [0, 3600, 86400];

function field(body: unknown, name: string): string {
  const value = body && typeof body === 'object' ? (body as Record<string, unknown>)[name] : undefined;
  return typeof value === 'string' ? value : '';
}

const formError = (detail: string) => new HttpProblem(400, 'validation', detail);

/** The create form as the API's body; the API's own checks run after this. */
function createBody(body: unknown): S['LoginAppCreate'] {
  const name = field(body, 'name');
  if (name.length < 1 || name.length > 100) throw formError('Enter a name of 1 to 100 characters.');
  const destination = field(body, 'webhook_destination') || 'none';
  if (!DESTINATIONS.includes(destination as S['LoginWebhookDestination'])) throw formError('Choose a webhook destination from the list.');
  const phoneNumberId = field(body, 'phone_number_id');
  if (phoneNumberId && !RESOURCE_ID.test(phoneNumberId)) throw formError('Choose a phone number from the list.');
  const url = (name: string) => {
    const value = field(body, name).trim();
    if (value.length > 2048) throw formError('Webhook URLs are at most 2,048 characters.');
    return value || null;
  };
  return {
    name,
    use_service_phone: field(body, 'phone_source') !== 'own',
    phone_number_id: phoneNumberId || null,
    webhook_destination: destination as S['LoginWebhookDestination'],
    production_webhook_url: url('production_webhook_url'),
    staging_webhook_url: url('staging_webhook_url'),
  };
}

// ---- Views ----------------------------------------------------------------------------------

function createForm(csrf: string, numbers: { id: string; display_phone_number: string }[]) {
  return html`<h2>New Login app</h2>
<form method="post" action="${LOGIN_APPS_PATH}">
<input type="hidden" name="_csrf" value="${csrf}">
<label>Name <input name="name" maxlength="100" required></label>
<label>Phone source <select name="phone_source"><option value="service">Shared service number</option><option value="own">Own number</option></select></label>
<label>Own number <select name="phone_number_id"><option value="">Primary cloud-API number</option>${numbers.map((n) => html`<option value="${n.id}">${n.display_phone_number}</option>`)}</select></label>
<label>Webhook destination <select name="webhook_destination">${DESTINATIONS.map((d) => html`<option value="${d}">${d}</option>`)}</select></label>
<label>Production webhook URL <input type="url" name="production_webhook_url" maxlength="2048"></label>
<label>Staging webhook URL <input type="url" name="staging_webhook_url" maxlength="2048"></label>
<button type="submit">Create</button>
</form>`;
}

function appSection(app: S['LoginApp'], receipts: S['HostedWebhookReceipt'][], csrf: string) {
  const action = (path: string, label: string, extra: Page | string = '') =>
    html`<form method="post" action="${LOGIN_APPS_PATH}/${app.id}/${path}"><input type="hidden" name="_csrf" value="${csrf}">${extra}<button type="submit">${label}</button></form>`;
  const webhook = app.provider_webhook;
  return html`<section>
<h2>${app.name}</h2>
<p>Id <code>${app.id}</code> · API key <code>${app.api_key_prefix}…</code> · webhook secret <code>${app.webhook_secret_prefix}…</code></p>
<p>Number: ${app.use_service_phone ? 'shared service number' : 'own number'} ${app.display_phone_number ?? '(none usable)'}</p>
<p>Webhook destination: ${app.webhook_destination}${app.production_webhook_url ? html`<br>Production: ${app.production_webhook_url}` : ''}${app.staging_webhook_url ? html`<br>Staging: ${app.staging_webhook_url}` : ''}<br>Hosted: ${app.hosted_webhook_url}</p>
<p>Provider webhook: <strong>${webhook.status}</strong>${webhook.last_error ? html` — ${webhook.last_error}${webhook.provider_code !== null ? ` (code ${webhook.provider_code})` : ''}` : ''}</p>
${webhook.status === 'failed' || webhook.status === 'pending' ? action('retry-webhook', 'Retry webhook set-up') : ''}
${action('rotate-api-key', 'Rotate API key')}
${action('rotate-webhook-secret', 'Rotate webhook secret', html`<label>Previous secret keeps signing for <select name="previous_secret_valid_for">${OVERLAPS.map((s) => html`<option value="${s}">${s === 0 ? 'no time' : `${s / 3600} h`}</option>`)}</select></label>`)}
${action('delete', 'Delete app')}
<h3>Hosted webhook receipts</h3>
${receipts.length ? html`<ul>${receipts.map((r) => html`<li><code>${r.event_id}</code> at ${r.received_at}: ${r.payload.phone} (${r.payload.profile_name ?? 'no name'}), session <code>${r.payload.session_id}</code></li>`)}</ul>` : html`<p>None yet.</p>`}
</section>`;
}

interface Extras {
  notice?: Page;
  error?: string;
}

async function renderPage(request: FastifyRequest, reply: FastifyReply, owner: SignedInOwner, status: number, extras: Extras = {}): Promise<FastifyReply> {
  const platform = request.server.platform;
  const csrf = reply.generateCsrf({ path: '/', httpOnly: true, sameSite: 'lax', secure: platform.config.production, signed: true });
  // One page of the newest apps is plenty for a settings page; the API pages through all.
  const apps = await listApps(platform, owner.workspaceId, { limit: 50 });
  const receipts = await Promise.all(apps.data.map(async (a) => (await listReceipts(platform, owner.workspaceId, a.id, { limit: 5 })).data));
  const numbers = await platform.store.db.selectFrom('phone_numbers').select(['id', 'display_phone_number']).where('workspace_id', '=', owner.workspaceId).orderBy('created_at').execute();
  return sendPage(
    reply,
    status,
    'Login apps',
    html`<h1>Login apps</h1>
<p>Signed in as ${owner.name} (${owner.email}).</p>
${extras.error ? html`<p role="alert">${extras.error}</p>` : ''}
${extras.notice ?? ''}
${apps.data.map((app, i) => appSection(app, receipts[i]!, csrf))}
${createForm(csrf, numbers)}`,
  );
}

/** Shown once, in the answer to the POST that created it. */
function secretsNotice(title: string, entries: [string, string][]) {
  return html`<section role="status"><h2>${title}</h2><p>Copy now: this is the only time it is shown.</p>${entries.map(([label, value]) => html`<p>${label}: <code>${value}</code></p>`)}</section>`;
}

// ---- Routes ---------------------------------------------------------------------------------

const problemMessage = (error: HttpProblem) => [error.problem.detail, ...(error.problem.errors ?? []).map((e) => `${e.pointer.replace('/body/', '')}: ${e.detail}`)].filter(Boolean).join(' ');

export default async function loginAppsPages(app: FastifyInstance): Promise<void> {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status = error instanceof HttpProblem ? error.status : error.statusCode && error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode : 500;
    if (status >= 500) request.log.error({ err: error }, 'page failed');
    const message =
      status === 403 ? 'This form has expired or was not sent from this site. Go back, reload the page and try again.'
      : status === 429 ? 'Too many requests. Wait a little and try again.'
      : status >= 500 ? 'Something went wrong on our side. Try again in a moment.'
      : 'The request could not be understood.';
    return sendPage(reply, status, 'Login apps', html`<h1>Login apps</h1><p role="alert">${message}</p><p><a href="${LOGIN_APPS_PATH}">Back to Login apps</a></p>`);
  });

  const toSignIn = (reply: FastifyReply) => reply.header('cache-control', 'no-store').redirect(`${SIGN_IN_PATH}?next=${encodeURIComponent(LOGIN_APPS_PATH)}`, 303);
  const checkOrigin = async (request: FastifyRequest) => {
    if (!sameOriginPost(request)) throw new HttpProblem(403, 'forbidden', 'This form was not sent from this site.');
  };
  const guarded = { preHandler: [checkOrigin, app.csrfProtection] };

  /** Runs a form's action for the signed-in owner; a refusal re-renders the page with its reason. */
  const act = (run: (owner: SignedInOwner, request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | Extras>) =>
    async (request: FastifyRequest, reply: FastifyReply) => {
      const owner = await currentOwner(request);
      if (!owner) return toSignIn(reply);
      const appId = (request.params as { appId?: string }).appId;
      try {
        if (appId !== undefined && !APP_ID.test(appId)) throw new HttpProblem(404, 'not-found', 'No such Login app in this workspace.');
        const outcome = await run(owner, request, reply);
        return 'statusCode' in outcome ? outcome : renderPage(request, reply, owner, 200, outcome);
      } catch (error) {
        if (!(error instanceof HttpProblem) || (error.status >= 500 && error.status !== 502)) throw error; // 502: the provider refused a retry
        return renderPage(request, reply, owner, error.status, { error: problemMessage(error) });
      }
    };
  const appIdOf = (request: FastifyRequest) => (request.params as { appId: string }).appId;
  const backToList = (reply: FastifyReply) => reply.header('cache-control', 'no-store').redirect(LOGIN_APPS_PATH, 303);

  app.get(LOGIN_APPS_PATH, async (request, reply) => {
    const owner = await currentOwner(request);
    if (!owner) return toSignIn(reply);
    return renderPage(request, reply, owner, 200);
  });

  app.post(LOGIN_APPS_PATH, guarded, act(async (owner, request) => {
    const created = await createApp(request.server.platform, owner.workspaceId, createBody(request.body), request.log);
    return { notice: secretsNotice(`Created ${created.app.name}`, [['API key', created.apiKey], ['Webhook secret', created.webhookSecret]]) };
  }));

  app.post(`${LOGIN_APPS_PATH}/:appId/rotate-api-key`, guarded, act(async (owner, request) => {
    const rotated = await rotateApiKey(request.server.platform, owner.workspaceId, appIdOf(request));
    return { notice: secretsNotice('New API key', [['API key', rotated.api_key]]) };
  }));

  app.post(`${LOGIN_APPS_PATH}/:appId/rotate-webhook-secret`, guarded, act(async (owner, request) => {
    const overlap = Number(field(request.body, 'previous_secret_valid_for') || 0);
    if (!OVERLAPS.includes(overlap)) throw formError('Choose an overlap from the list.');
    const rotated = await rotateWebhookSecret(request.server.platform, owner.workspaceId, appIdOf(request), overlap);
    return { notice: secretsNotice('New webhook secret', [['Webhook secret', rotated.webhook_secret]]) };
  }));

  app.post(`${LOGIN_APPS_PATH}/:appId/retry-webhook`, guarded, act(async (owner, request, reply) => {
    await retrySetup(request.server.platform, owner.workspaceId, appIdOf(request), request.log);
    return backToList(reply);
  }));

  app.post(`${LOGIN_APPS_PATH}/:appId/delete`, guarded, act(async (owner, request, reply) => {
    await deleteApp(request.server.platform, owner.workspaceId, appIdOf(request));
    return backToList(reply);
  }));
}
