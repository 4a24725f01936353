// /account: the workspace at a glance (name, slug, plan, how many of each thing it has) with
// links to every settings page. Counts are read scoped to the signed-in owner's workspace.
import type { FastifyInstance } from 'fastify';
import type { operations as AccountOps } from '#generated/account/types.js';
import type { operations as MessagingOps } from '#generated/messaging/types.js';
import { html } from '#server/html/html.js';
import { NAV, scrollingTable, when } from '#server/html/settings-layout.js';
import { callApi, registerSettingsPage, type Ok, type PageContext } from '#server/html/settings-routes.js';
import { getUsage } from '../messaging/operations/usage.js';
import { getAccount } from './workspaces.js';

export const OVERVIEW_PATH = '/account';

type Table = 'api_keys' | 'connect_clients' | 'webhook_endpoints' | 'login_apps' | 'business_accounts' | 'phone_numbers';

async function counts(ctx: PageContext): Promise<Record<Table, number>> {
  const db = ctx.request.server.platform.store.db;
  const workspaceId = ctx.owner.workspaceId;
  const count = async (table: Table, live?: 'revoked_at' | 'disconnected_at') => {
    let query = db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('workspace_id', '=', workspaceId);
    if (live) query = query.where(live, 'is', null);
    return Number((await query.executeTakeFirstOrThrow()).n);
  };
  const [apiKeys, clients, endpoints, loginApps, accounts] = await Promise.all([
    count('api_keys', 'revoked_at'),
    count('connect_clients'),
    count('webhook_endpoints'),
    count('login_apps'),
    count('business_accounts', 'disconnected_at'),
  ]);
  const numbers = await db
    .selectFrom('phone_numbers')
    .innerJoin('business_accounts', 'business_accounts.id', 'phone_numbers.business_account_id')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('phone_numbers.workspace_id', '=', workspaceId)
    .where('business_accounts.disconnected_at', 'is', null)
    .executeTakeFirstOrThrow();
  return {
    api_keys: apiKeys,
    connect_clients: clients,
    webhook_endpoints: endpoints,
    login_apps: loginApps,
    business_accounts: accounts,
    phone_numbers: Number(numbers.n),
  };
}

async function render(ctx: PageContext) {
  const account = await callApi<Ok<AccountOps['getAccount']>>(getAccount, ctx);
  const [usage, n] = await Promise.all([callApi<Ok<MessagingOps['getUsage']>>(getUsage, ctx), counts(ctx)]);
  const figures: [string, string, number][] = [
    ['/account/api-keys', 'API keys (not revoked)', n.api_keys],
    ['/account/connect-clients', 'Connect clients', n.connect_clients],
    ['/account/webhooks', 'Webhook endpoints', n.webhook_endpoints],
    ['/account/login-apps', 'Login apps', n.login_apps],
    ['/account/numbers', 'Connected accounts', n.business_accounts],
    ['/account/numbers', 'Phone numbers', n.phone_numbers],
  ];
  return html`<section><h2>${account.workspace.name}</h2>
<p>Slug <code>${account.workspace.slug}</code> · id <code>${account.workspace.id}</code> · created ${when(account.workspace.created_at)}</p>
<p>Plan <strong>${usage.plan.name}</strong>: ${usage.counters.messages.used} of ${usage.counters.messages.limit ?? 'unlimited'} messages this month · <a href="/account/usage">Usage</a></p></section>
${scrollingTable(html`<table><tbody>${figures.map(([path, label, value]) => html`<tr><td><a href="${path}">${label}</a></td><td>${value}</td></tr>`)}</tbody></table>`)}
<h2>Settings</h2><ul>${NAV.slice(1).map((item) => html`<li><a href="${item.path}">${item.label}</a></li>`)}</ul>
<p><a href="/docs">API documentation</a></p>`;
}

export default async function overviewPages(app: FastifyInstance): Promise<void> {
  registerSettingsPage(app, { path: OVERVIEW_PATH, title: 'Overview', render });
}
