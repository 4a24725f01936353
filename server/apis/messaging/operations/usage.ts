// Usage against the plan, counted from the rows themselves at request time: messages the
// provider accepted this month (with those of contacts erased since, tallied at their erasure:
// contacts/erase.ts, so erasure never lowers the month's usage), contacts stored now, Login
// sessions started this month.
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { billingPeriod, planOf } from './plans.js';

type Counter = components['schemas']['UsageCounter'];

function counter(used: number, limit: number | null): Counter {
  return { used, limit, remaining: limit === null ? null : Math.max(0, limit - used) };
}

export const getUsage: Handler<operations['getUsage']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const now = platform.now();
  const period = billingPeriod(now);
  const workspace = await db.selectFrom('workspaces').select(['plan', 'login_session_cap']).where('id', '=', workspaceId).executeTakeFirstOrThrow();
  const count = (n: { n: string | number | bigint }) => Number(n.n);
  const [messages, erased, contacts, sessions] = await Promise.all([
    // Sent: accepted by the provider (it gave an id), whether by a direct send, a campaign, a flow or a bot.
    db
      .selectFrom('messages')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('workspace_id', '=', workspaceId)
      .where('direction', '=', 'outbound')
      .where('provider_message_id', 'is not', null)
      .where('created_at', '>=', period.start)
      .where('created_at', '<', period.end)
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('message_usage_erased')
      .select('messages as n')
      .where('workspace_id', '=', workspaceId)
      .where('period_start', '=', period.start)
      .executeTakeFirst(),
    db
      .selectFrom('contacts')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('workspace_id', '=', workspaceId)
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('login_sessions')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('workspace_id', '=', workspaceId)
      .where('created_at', '>=', period.start)
      .where('created_at', '<', period.end)
      .executeTakeFirstOrThrow(),
  ]);
  const plan = planOf(workspace.plan);
  return {
    plan: { code: plan.code, name: plan.name },
    period: { start: period.start.toISOString(), end: period.end.toISOString() },
    counters: {
      messages: counter(count(messages) + (erased ? count(erased) : 0), plan.messagesPerMonth),
      contacts: counter(count(contacts), plan.contacts),
      login_sessions: counter(count(sessions), workspace.login_session_cap),
    },
    upgrade_url: `${platform.config.publicUrl}/account/usage`,
    as_of: now.toISOString(),
  };
};
