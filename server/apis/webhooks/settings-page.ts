// /account/webhooks: the webhook endpoints of Connect and of Messaging, each through its API's
// handlers (create, enable/disable, rotate, delete, test event, redeliver). The delivery log reads
// the functions both APIs' log operations are built on (server/apis/webhooks/deliveries.ts),
// scoped the same way. A signing secret appears once, in the answer to the create or rotate POST.
import type { FastifyInstance } from 'fastify';
import type { components as C, operations as ConnectOps } from '#generated/connect/types.js';
import type { components as M, operations as MessagingOps } from '#generated/messaging/types.js';
import { csrfField, formField, formFields } from '#server/html/forms.js';
import { html, type Html } from '#server/html/html.js';
import { actionForm, scrollingTable, secretsNotice, when } from '#server/html/settings-layout.js';
import { callApi, formError, registerSettingsPage, seeOther, type Extras, type Ok, type PageContext } from '#server/html/settings-routes.js';
import { connectWebhookHandlers as connect } from './connect-handlers.js';
import { getDelivery, listDeliveries } from './deliveries.js';
import { EVENT_TYPES, type WebhookApi as AnyApi } from './emit.js';
import { findEndpoint } from './endpoints.js';
import { messagingWebhookHandlers as messaging } from './messaging-handlers.js';

/** The workspace's own endpoints; a Connect client manages its client-level ones through the API. */
type WebhookApi = Exclude<AnyApi, 'connect_client'>;

export const WEBHOOKS_PATH = '/account/webhooks';
const API = /^(connect|messaging)$/;
const ENDPOINT_ID = /^whe_[0-9A-Za-z]{8,48}$/;
const DELIVERY_ID = /^dlv_[0-9A-Za-z]{8,48}$/;
const OVERLAPS = [0, 3600, 86400];
const LABEL: Record<WebhookApi, string> = { connect: 'Connect', messaging: 'Messaging' };
/** The contracts' caps: enabled_events maxItems, description maxLength. */
const LIMITS: Record<WebhookApi, { events: number; description: number }> = {
  connect: { events: 7, description: 500 },
  messaging: { events: 5, description: 200 },
};

type ConnectEndpoint = C['schemas']['WebhookEndpoint'];
type MessagingEndpoint = M['schemas']['MessagingWebhookEndpoint'];
type Delivery = C['schemas']['WebhookDeliveryDetail'];

const logPath = (api: WebhookApi, id: string) => `${WEBHOOKS_PATH}/${api}/${id}`;
const apiOf = (ctx: PageContext) => ctx.params.api as WebhookApi;

// ---- The list -------------------------------------------------------------------------------

function createForm(api: WebhookApi, ctx: PageContext, extras: Extras) {
  const mine = extras.form && formField(extras.form, 'api') === api ? extras.form : {};
  const chosen = formFields(mine, 'enabled_events');
  const choices = api === 'connect' ? ['*', ...EVENT_TYPES.connect] : EVENT_TYPES.messaging;
  return html`<h3>New ${LABEL[api]} endpoint</h3>
<form method="post" action="${WEBHOOKS_PATH}/${api}">
${csrfField(ctx.csrf)}<input type="hidden" name="api" value="${api}">
<label>URL (https) <input type="url" name="url" maxlength="2048" required value="${formField(mine, 'url')}"></label>
<fieldset><legend>Events</legend>${choices.map((e) => html`<label><input type="checkbox" name="enabled_events" value="${e}"${chosen.includes(e) ? html` checked` : ''}> ${e === '*' ? '* (every event)' : e}</label>`)}</fieldset>
<label>Description (optional) <input name="description" maxlength="${LIMITS[api].description}" value="${formField(mine, 'description')}"></label>
<button type="submit">Create endpoint</button>
</form>`;
}

function endpointRow(
  api: WebhookApi,
  ctx: PageContext,
  e: { id: string; url: string; description: string | null; enabled_events: string[]; created_at: string },
  secret: string,
  status: string | null,
) {
  const base = logPath(api, e.id);
  const overlap = html`<select name="overlap_seconds" aria-label="Old secret keeps signing for">${OVERLAPS.map((s) => html`<option value="${s}"${s === 86400 ? html` selected` : ''}>old secret valid ${s === 0 ? 'no longer' : `${s / 3600} h more`}</option>`)}</select>`;
  return html`<tr><td><code>${e.url}</code>${e.description ? html`<br>${e.description}` : ''}</td><td>${e.enabled_events.join(', ')}</td><td>${status ?? 'enabled'}</td><td><code>${secret}…</code></td><td>${when(e.created_at)}</td>
<td><a href="${base}">Deliveries</a>
${actionForm(`${base}/test`, ctx.csrf, 'Send test event')}
${actionForm(`${base}/${status === 'disabled' ? 'enable' : 'disable'}`, ctx.csrf, status === 'disabled' ? 'Enable' : 'Disable')}
${actionForm(`${base}/rotate-secret`, ctx.csrf, 'Rotate secret', api === 'connect' ? overlap : '')}
${actionForm(`${base}/delete`, ctx.csrf, 'Delete…')}</td></tr>`;
}

const table = (rows: Html[]) =>
  rows.length
    ? scrollingTable(
        html`<table><thead><tr><th>URL</th><th>Events</th><th>Status</th><th>Secret</th><th>Created</th><th></th></tr></thead><tbody>${rows}</tbody></table>`,
      )
    : html`<p>No endpoints yet.</p>`;

async function renderList(ctx: PageContext, extras: Extras) {
  const connectList = await callApi<Ok<ConnectOps['listWebhookEndpoints']>>(connect.listWebhookEndpoints, ctx, { query: { limit: 100 } });
  const messagingList = await callApi<Ok<MessagingOps['listMessagingWebhookEndpoints']>>(messaging.listMessagingWebhookEndpoints, ctx, {
    query: { limit: 100 },
  });
  const connectRows = connectList.data.map((e: ConnectEndpoint) => endpointRow('connect', ctx, e, e.secret_prefix, e.status));
  const messagingRows = messagingList.data.map((e: MessagingEndpoint) => endpointRow('messaging', ctx, e, e.secret_hint, e.status));
  return html`<p>Events are posted to your URLs, signed with the endpoint's secret (<code>X-Connect-Signature</code> or <code>X-Messaging-Signature</code>: <code>t=…,v1=HMAC-SHA256</code>).</p>
${extras.error ? html`<p role="alert">${extras.error}</p>` : ''}
${extras.notice ?? ''}
<section><h2>Connect</h2>${table(connectRows)}${createForm('connect', ctx, extras)}</section>
<section><h2>Messaging</h2>${table(messagingRows)}${createForm('messaging', ctx, extras)}</section>`;
}

/** The create form as the API's body; the API then checks the URL (SSRF policy) and the events. */
function createBody(api: WebhookApi, body: unknown) {
  const url = formField(body, 'url').trim();
  if (!url || url.length > 2048) throw formError('Enter the endpoint URL (at most 2,048 characters).');
  const events = formFields(body, 'enabled_events');
  if (events.length < 1 || events.length > LIMITS[api].events) throw formError(`Choose 1 to ${LIMITS[api].events} events.`);
  const description = formField(body, 'description').trim();
  if (description.length > LIMITS[api].description) throw formError(`The description is at most ${LIMITS[api].description} characters.`);
  return { url, enabled_events: events, ...(description ? { description } : {}) };
}

// ---- The delivery log of one endpoint ---------------------------------------------------------

function attemptsTable(d: Delivery) {
  if (!d.attempts.length) return html`<p>No attempt yet${d.next_retry_at ? html` (due ${when(d.next_retry_at)})` : ''}.</p>`;
  return scrollingTable(
    html`<table><thead><tr><th>#</th><th>Started</th><th>Response</th><th>Duration</th><th>Answer (first bytes)</th></tr></thead><tbody>${d.attempts.map(
      (a) =>
        html`<tr><td>${a.attempt}</td><td>${when(a.started_at)}</td><td>${a.response_status ?? a.failure_reason ?? '—'}</td><td>${a.duration_ms} ms</td><td><code>${a.response_body ?? ''}</code></td></tr>`,
    )}</tbody></table>`,
  );
}

async function renderLog(ctx: PageContext, extras: Extras) {
  const api = apiOf(ctx);
  const platform = ctx.request.server.platform;
  const endpoint = await findEndpoint(platform.store.db, ctx.owner.workspaceId, api, ctx.params.endpointId!); // 404 for another workspace's
  const page = await listDeliveries(platform, endpoint, { limit: 20 });
  const details = await Promise.all(page.slice(0, 20).map((row) => getDelivery(platform, endpoint, row.id)));
  const base = logPath(api, endpoint.id);
  return html`<p><a href="${WEBHOOKS_PATH}">All endpoints</a> · ${LABEL[api]} endpoint <code>${endpoint.url}</code> (${endpoint.status})</p>
${extras.error ? html`<p role="alert">${extras.error}</p>` : ''}
${extras.notice ?? ''}
${actionForm(`${base}/test`, ctx.csrf, 'Send test event')}
<h2>Latest deliveries</h2>
${
  details.length
    ? details.map(
        (d) => html`<section><h3><code>${d.event_type}</code> · ${d.status}</h3>
<p>Delivery <code>${d.id}</code> · event <code>${d.event_id}</code> · created ${when(d.created_at)}${d.redelivery_of ? html` · redelivery of <code>${d.redelivery_of}</code>` : ''}</p>
${attemptsTable(d)}
${d.status === 'pending' || d.status === 'retrying' ? '' : actionForm(`${base}/deliveries/${d.id}/redeliver`, ctx.csrf, 'Redeliver')}</section>`,
      )
    : html`<p>No deliveries yet.</p>`
}`;
}

// ---- Routes ---------------------------------------------------------------------------------

export default async function webhooksPages(app: FastifyInstance): Promise<void> {
  const list = registerSettingsPage(app, { path: WEBHOOKS_PATH, title: 'Webhooks', render: renderList });
  const log = registerSettingsPage(app, {
    path: `${WEBHOOKS_PATH}/:api/:endpointId`,
    section: WEBHOOKS_PATH,
    title: 'Webhook deliveries',
    ids: { api: API, endpointId: ENDPOINT_ID },
    render: renderLog,
  });

  list.post(
    '/:api',
    async (ctx) => {
      const api = apiOf(ctx);
      const body = createBody(api, ctx.request.body);
      const created =
        api === 'connect'
          ? await callApi<Ok<ConnectOps['createWebhookEndpoint']>>(connect.createWebhookEndpoint, ctx, { body: body as C['schemas']['WebhookEndpointCreate'] })
          : await callApi<Ok<MessagingOps['createMessagingWebhookEndpoint']>>(messaging.createMessagingWebhookEndpoint, ctx, {
              body: body as M['schemas']['MessagingWebhookEndpointCreate'],
            });
      return { notice: secretsNotice(`Created ${LABEL[api]} endpoint ${created.id}`, [['Signing secret', created.secret]]) };
    },
    { api: API },
  );

  // The actions below sit on the log page's path, but answer with the list (or the log) as fits.
  const onEndpoint = { api: API, endpointId: ENDPOINT_ID };
  const endpointParams = (ctx: PageContext) => ({ endpointId: ctx.params.endpointId! });

  log.post(
    '/rotate-secret',
    async (ctx) => {
      const api = apiOf(ctx);
      if (api === 'connect') {
        const overlap = Number(formField(ctx.request.body, 'overlap_seconds') || 86400);
        if (!OVERLAPS.includes(overlap)) throw formError('Choose how long the old secret keeps signing from the list.');
        const rotated = await callApi<Ok<ConnectOps['rotateWebhookEndpointSecret']>>(connect.rotateWebhookEndpointSecret, ctx, {
          params: endpointParams(ctx),
          body: { overlap_seconds: overlap },
        });
        return { notice: secretsNotice(`New signing secret for ${rotated.id}`, [['Signing secret', rotated.secret]]) };
      }
      const rotated = await callApi<Ok<MessagingOps['rotateMessagingWebhookEndpointSecret']>>(messaging.rotateMessagingWebhookEndpointSecret, ctx, {
        params: endpointParams(ctx),
      });
      return {
        notice: secretsNotice(
          `New signing secret for ${rotated.endpoint_id}`,
          [['Signing secret', rotated.secret]],
          `The old secret signs too until ${when(rotated.previous_secret_expires_at)}. Copy the new one now: this is the only time it is shown.`,
        ),
      };
    },
    onEndpoint,
  );

  for (const status of ['enable', 'disable'] as const) {
    log.post(
      `/${status}`,
      async (ctx) => {
        const body = { status: status === 'enable' ? ('enabled' as const) : ('disabled' as const) };
        await callApi(apiOf(ctx) === 'connect' ? connect.updateWebhookEndpoint : messaging.updateMessagingWebhookEndpoint, ctx, {
          params: endpointParams(ctx),
          body,
        });
        return seeOther(ctx.reply, WEBHOOKS_PATH);
      },
      onEndpoint,
    );
  }

  log.post(
    '/delete',
    async (ctx) => {
      const api = apiOf(ctx);
      const platform = ctx.request.server.platform;
      if (formField(ctx.request.body, 'confirm') !== 'yes') {
        const endpoint = await findEndpoint(platform.store.db, ctx.owner.workspaceId, api, ctx.params.endpointId!); // 404 for another workspace's
        const confirm = actionForm(`${logPath(api, endpoint.id)}/delete`, ctx.csrf, 'Yes, delete it', html`<input type="hidden" name="confirm" value="yes">`);
        return {
          notice: html`<section role="alert"><h2>Delete this endpoint?</h2><p><code>${endpoint.url}</code> stops receiving events; deliveries waiting for it are cancelled.</p>${confirm}<a href="${WEBHOOKS_PATH}">Cancel</a></section>`,
        };
      }
      await callApi(api === 'connect' ? connect.deleteWebhookEndpoint : messaging.deleteMessagingWebhookEndpoint, ctx, { params: endpointParams(ctx) });
      return seeOther(ctx.reply, WEBHOOKS_PATH);
    },
    onEndpoint,
  );

  log.post(
    '/test',
    async (ctx) => {
      const api = apiOf(ctx);
      await callApi(api === 'connect' ? connect.sendWebhookTestEvent : messaging.sendMessagingWebhookTestEvent, ctx, { params: endpointParams(ctx) });
      return seeOther(ctx.reply, logPath(api, ctx.params.endpointId!));
    },
    onEndpoint,
  );

  log.post(
    '/deliveries/:deliveryId/redeliver',
    async (ctx) => {
      const api = apiOf(ctx);
      const params = { endpointId: ctx.params.endpointId!, deliveryId: ctx.params.deliveryId! };
      await callApi(api === 'connect' ? connect.redeliverWebhookDelivery : messaging.redeliverMessagingWebhookDelivery, ctx, { params });
      return seeOther(ctx.reply, logPath(api, params.endpointId));
    },
    { ...onEndpoint, deliveryId: DELIVERY_ID },
  );
}
