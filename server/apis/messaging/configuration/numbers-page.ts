// /account/numbers: the workspace's connected business accounts and their phone numbers (status,
// quality, limits), connecting a sandbox account, the provider-webhook status of cloud accounts
// with the API's set-up call as "re-check", and disconnecting behind a confirmation step. Each
// action runs the Messaging API's own handler. Cloud accounts are connected through the API (a
// system-user token is not something to paste into a settings form we keep no record of).
import type { FastifyInstance } from 'fastify';
import type { operations } from '#generated/messaging/types.js';
import { csrfField, formField } from '#server/html/forms.js';
import { html } from '#server/html/html.js';
import { actionForm, scrollingTable, when } from '#server/html/settings-layout.js';
import { callApi, formError, registerSettingsPage, seeOther, type Extras, type Ok, type PageContext } from '#server/html/settings-routes.js';
import { findAccount } from './accounts.js';
import { createConnection, deleteConnection, listConnections } from './connections.js';
import { listPhoneNumbers } from './numbers.js';
import { setupProviderWebhooks } from './provider-setup.js';

export const NUMBERS_PATH = '/account/numbers';
const WABA_ID = /^waba_[0-9A-Za-z]{8,48}$/;

type Connection = Ok<operations['listConnections']>['data'][number];

function connectionSection(ctx: PageContext, c: Connection) {
  const base = `${NUMBERS_PATH}/${c.id}`;
  return html`<tr><td>${c.name}<br><code>${c.id}</code></td><td>${c.kind}</td><td>${c.status}</td><td>${c.phone_numbers_count}</td>
<td>${c.kind === 'sandbox' ? 'not needed (sandbox)' : c.webhooks_subscribed ? 'subscribed' : html`<strong>not subscribed</strong>`}${c.kind === 'sandbox' ? '' : actionForm(`${base}/webhooks`, ctx.csrf, c.webhooks_subscribed ? 'Re-check' : 'Subscribe again')}</td>
<td>${when(c.last_synced_at)}</td><td>${actionForm(`${base}/disconnect`, ctx.csrf, 'Disconnect…')}</td></tr>`;
}

async function render(ctx: PageContext, extras: Extras) {
  const connections = await callApi<Ok<operations['listConnections']>>(listConnections, ctx, { query: { limit: 100 } });
  const numbers = await callApi<Ok<operations['listPhoneNumbers']>>(listPhoneNumbers, ctx, { query: { limit: 100 } });
  return html`${extras.error ? html`<p role="alert">${extras.error}</p>` : ''}
${extras.notice ?? ''}
<h2>Connected accounts</h2>
${
  connections.data.length
    ? scrollingTable(
        html`<table><thead><tr><th>Account</th><th>Kind</th><th>Status</th><th>Numbers</th><th>Provider webhook</th><th>Last synced</th><th></th></tr></thead><tbody>${connections.data.map((c) => connectionSection(ctx, c))}</tbody></table>`,
      )
    : html`<p>No account connected yet.</p>`
}
<h2>Phone numbers</h2>
${
  numbers.data.length
    ? scrollingTable(
        html`<table><thead><tr><th>Number</th><th>Name</th><th>Status</th><th>Quality</th><th>Tier</th><th>Messages/s</th><th>Account</th></tr></thead><tbody>${numbers.data.map(
          (n) =>
            html`<tr><td>${n.display_phone_number}${n.is_sandbox ? ' (sandbox)' : ''}</td><td>${n.verified_name}</td><td>${n.status}</td><td>${n.quality_rating}</td><td>${n.messaging_limit_tier ?? '—'}</td><td>${n.rate_per_second}</td><td><code>${n.waba_id}</code></td></tr>`,
        )}</tbody></table>`,
      )
    : html`<p>No phone numbers yet.</p>`
}
<section><h2>Connect a sandbox account</h2><p>A sandbox number that stays on this server: messages to it appear on the sandbox phone.</p>
<form method="post" action="${NUMBERS_PATH}/sandbox">${csrfField(ctx.csrf)}
<label>Name <input name="name" maxlength="200" value="${extras.form ? formField(extras.form, 'name') : 'Sandbox'}" required></label>
<button type="submit">Connect sandbox</button></form>
<p>A cloud API account is connected with <code>POST /api/chatapp/connections</code> (its system-user token goes to the API, never through a page).</p></section>`;
}

export default async function numbersPages(app: FastifyInstance): Promise<void> {
  const page = registerSettingsPage(app, { path: NUMBERS_PATH, title: 'Numbers', render });
  const ids = { wabaId: WABA_ID };

  page.post('/sandbox', async (ctx) => {
    const name = formField(ctx.request.body, 'name').trim();
    if (name.length < 1 || name.length > 200) throw formError('Enter a name of 1 to 200 characters.');
    const created = await callApi<Ok<operations['createConnection']>>(createConnection, ctx, { body: { kind: 'sandbox', name } });
    return { notice: html`<p role="status">Connected ${created.name} with ${created.phone_numbers_count} number(s).</p>` };
  });

  page.post(
    '/:wabaId/webhooks',
    async (ctx) => {
      const result = await callApi<Ok<operations['setupProviderWebhooks']>>(setupProviderWebhooks, ctx, { params: { wabaId: ctx.params.wabaId! } });
      return {
        notice: html`<p role="status">${result.subscribed ? `Subscribed: the provider posts ${result.fields.join(', ')} to ${result.callback_url}.` : 'The provider did not confirm the subscription; try again later.'}</p>`,
      };
    },
    ids,
  );

  page.post(
    '/:wabaId/disconnect',
    async (ctx) => {
      const wabaId = ctx.params.wabaId!;
      if (formField(ctx.request.body, 'confirm') !== 'yes') {
        const account = await findAccount(ctx.request.server.platform.store.db, ctx.owner.workspaceId, wabaId); // 404 for another workspace's
        const yes = actionForm(`${NUMBERS_PATH}/${account.id}/disconnect`, ctx.csrf, 'Yes, disconnect', html`<input type="hidden" name="confirm" value="yes">`);
        return {
          notice: html`<section role="alert"><h2>Disconnect ${account.name}?</h2><p>Its numbers stop sending and receiving; messages stay. Connecting the same account again revives them.</p>${yes}<a href="${NUMBERS_PATH}">Cancel</a></section>`,
        };
      }
      await callApi(deleteConnection, ctx, { params: { wabaId } });
      return seeOther(ctx.reply, NUMBERS_PATH);
    },
    ids,
  );
}
