// Kanban funnels: stages of a business account's chats. Funnels come from industry packs (no
// create operation in the contract yet). A chat enters the first stage of each funnel of its
// account when the contact writes in: in the transaction that stores the message (an inbound
// step, events/inbound-steps.ts), so no notification can be lost on the way; the placement's
// primary key keeps one row per chat and funnel.
import { sql, type Kysely, type Transaction } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { StoredInbound } from '#server/events/inbound-steps.js';
import { decodeKeyset, keysetPage } from '#server/lib/cursor.js';
import type { Handler } from '#server/lib/handler-types.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import type { Database } from '#server/store/schema.js';

type S = components['schemas'];

async function accountId(db: Kysely<Database>, workspaceId: string, ref: string): Promise<string> {
  const row = await db
    .selectFrom('business_accounts')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('disconnected_at', 'is', null)
    .where((eb) => eb.or([eb('id', '=', ref), eb('provider_waba_id', '=', ref)]))
    .executeTakeFirst();
  if (!row)
    throw new HttpProblem(404, 'not-found', `No business account ${ref} in this workspace.`, {
      errors: [{ pointer: '/query/waba_id', detail: 'unknown business account' }],
    });
  return row.id;
}

export const listKanbanFunnels: Handler<operations['listKanbanFunnels']> = async (request) => {
  const { workspaceId } = authOf(request);
  const { secrets, store } = request.server.platform;
  const db = store.db;
  const {
    limit = 20,
    cursor,
    waba_id: wabaRef,
    chats_per_stage: perStage = 20,
  }: NonNullable<operations['listKanbanFunnels']['parameters']['query']> = request.query ?? {};
  const scope = { workspaceId, operation: 'listKanbanFunnels' };
  const after = decodeKeyset(secrets, scope, cursor);
  let query = db.selectFrom('kanban_funnels').selectAll().where('workspace_id', '=', workspaceId);
  if (wabaRef !== undefined) query = query.where('business_account_id', '=', await accountId(db, workspaceId, wabaRef));
  if (after)
    query = query.where((eb) => eb.or([eb('created_at', '<', after.createdAt), eb.and([eb('created_at', '=', after.createdAt), eb('id', '<', after.id)])]));
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const funnelIds = rows.slice(0, limit).map((r) => r.id);
  if (!funnelIds.length) return { data: [], has_more: false, next_cursor: null };

  const stages = await db.selectFrom('kanban_stages').selectAll().where('funnel_id', 'in', funnelIds).orderBy('position').execute();
  const counts = await db
    .selectFrom('kanban_placements')
    .select(['funnel_id', 'stage_key', (eb) => eb.fn.countAll<string>().as('n')])
    .where('workspace_id', '=', workspaceId)
    .where('funnel_id', 'in', funnelIds)
    .groupBy(['funnel_id', 'stage_key'])
    .execute();
  // The most recently moved-in chats of each stage: ranked per stage, cut at chats_per_stage.
  const chats =
    perStage === 0
      ? []
      : await db
          .selectFrom((eb) =>
            eb
              .selectFrom('kanban_placements as p')
              .innerJoin('chats as c', 'c.id', 'p.chat_id')
              .innerJoin('contacts as ct', 'ct.id', 'c.contact_id')
              .select([
                'p.funnel_id',
                'p.stage_key',
                'p.entered_at',
                'c.id as chat_id',
                'c.contact_id',
                'c.assigned_owner_id',
                'c.last_message_at',
                'ct.name as contact_name',
                'ct.phone as contact_no',
                sql<number>`row_number() over (partition by p.funnel_id, p.stage_key order by p.entered_at desc, p.chat_id desc)`.as('rank'),
              ])
              .where('p.workspace_id', '=', workspaceId)
              .where('p.funnel_id', 'in', funnelIds)
              .as('ranked'),
          )
          .selectAll()
          .where('rank', '<=', perStage)
          .orderBy('entered_at', 'desc')
          .execute();

  return keysetPage(secrets, scope, rows, limit, (funnel): S['KanbanFunnel'] => ({
    id: funnel.id,
    name: funnel.name,
    waba_id: funnel.business_account_id,
    stages: stages
      .filter((s) => s.funnel_id === funnel.id)
      .map((s) => ({
        id: s.key,
        name: s.name,
        position: s.position,
        color: s.color,
        chat_count: Number(counts.find((c) => c.funnel_id === funnel.id && c.stage_key === s.key)?.n ?? 0),
        chats: chats
          .filter((c) => c.funnel_id === funnel.id && c.stage_key === s.key)
          .map((c) => ({
            chat_id: c.chat_id,
            contact_id: c.contact_id,
            contact_name: c.contact_name,
            contact_no: c.contact_no,
            assigned_agent_id: c.assigned_owner_id,
            last_message_at: c.last_message_at ? new Date(c.last_message_at).toISOString() : null,
            entered_stage_at: new Date(c.entered_at).toISOString(),
          })),
      })),
    created_at: funnel.created_at.toISOString(),
    updated_at: funnel.updated_at.toISOString(),
  }));
};

/** Puts the chat of an inbound message into the first stage of its account's funnels it is not in yet. */
export async function placeInboundChat(trx: Transaction<Database>, platform: Platform, message: StoredInbound): Promise<void> {
  const firstStages = await trx
    .selectFrom('kanban_funnels as f')
    .innerJoin('kanban_stages as s', 's.funnel_id', 'f.id')
    .select(['f.id as funnel_id', 's.key'])
    .where('f.workspace_id', '=', message.workspaceId)
    .where((eb) => eb.or([eb('f.business_account_id', '=', message.businessAccountId), eb('f.business_account_id', 'is', null)]))
    .where('s.position', '=', (eb) =>
      eb
        .selectFrom('kanban_stages as s2')
        .select((e) => e.fn.min('s2.position').as('p'))
        .whereRef('s2.funnel_id', '=', 'f.id'),
    )
    .execute();
  if (!firstStages.length) return;
  const now = platform.now();
  await trx
    .insertInto('kanban_placements')
    .values(firstStages.map((s) => ({ funnel_id: s.funnel_id, chat_id: message.chatId, workspace_id: message.workspaceId, stage_key: s.key, entered_at: now })))
    .onConflict((oc) => oc.columns(['funnel_id', 'chat_id']).doNothing())
    .execute();
}
