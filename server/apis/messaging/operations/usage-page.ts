// /account/usage: the plan, its limits and this month's usage, exactly as the Messaging API's
// usage operation computes them (its `upgrade_url` points here).
import type { FastifyInstance } from 'fastify';
import type { operations } from '#generated/messaging/types.js';
import { html } from '#server/html/html.js';
import { scrollingTable, when } from '#server/html/settings-layout.js';
import { callApi, registerSettingsPage, type Ok, type PageContext } from '#server/html/settings-routes.js';
import { PLANS } from './plans.js';
import { getUsage } from './usage.js';

export const USAGE_PATH = '/account/usage';

type Usage = Ok<operations['getUsage']>;
type Counter = Usage['counters']['messages'];

const number = (n: number | null) => (n === null ? 'unlimited' : n.toLocaleString('en-US'));
const percent = (c: Counter) => (c.limit ? Math.min(100, Math.round((c.used / c.limit) * 100)) : 0);

async function usageOf(ctx: PageContext): Promise<Usage> {
  return callApi<Usage>(getUsage, ctx);
}

async function render(ctx: PageContext) {
  const usage = await usageOf(ctx);
  const row = (label: string, c: Counter) =>
    html`<tr><td>${label}</td><td>${number(c.used)}</td><td>${number(c.limit)}</td><td>${number(c.remaining)}</td><td>${c.limit === null ? '—' : html`<meter min="0" max="100" value="${percent(c)}">${percent(c)}%</meter> ${percent(c)}%`}</td></tr>`;
  return html`<p>Plan <strong>${usage.plan.name}</strong> (<code>${usage.plan.code}</code>) · period ${when(usage.period.start)} to ${when(usage.period.end)} · as of ${when(usage.as_of)}</p>
${scrollingTable(html`<table><thead><tr><th>Counter</th><th>Used</th><th>Limit</th><th>Remaining</th><th></th></tr></thead><tbody>
${row('Messages sent this month', usage.counters.messages)}${row('Contacts stored', usage.counters.contacts)}${row('Login sessions this month', usage.counters.login_sessions)}
</tbody></table>`)}
<h2>Plans</h2>
${scrollingTable(
  html`<table><thead><tr><th>Plan</th><th>Messages a month</th><th>Contacts</th></tr></thead><tbody>${Object.values(PLANS).map(
    (p) =>
      html`<tr><td>${p.name}${p.code === usage.plan.code ? ' (current)' : ''}</td><td>${number(p.messagesPerMonth)}</td><td>${number(p.contacts)}</td></tr>`,
  )}</tbody></table>`,
)}
<p>To change plan, contact us; a request over a limit answers <code>402 plan-limit</code> with a link to this page.</p>`;
}

export default async function usagePages(app: FastifyInstance): Promise<void> {
  registerSettingsPage(app, { path: USAGE_PATH, title: 'Usage', render });
}
