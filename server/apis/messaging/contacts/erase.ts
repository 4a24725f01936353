// Erasure of a contact (a GDPR erasure request), in one transaction. Deleting the contact row
// cascades (foreign keys, migrations 009–014) to its messages, chats (and kanban placements),
// automation executions (and steps), sequence enrolments, form submissions, message-bot replies,
// tags and campaign recipient rows. What holds the contact's data without a foreign key is erased
// here: webhook events still in the outbox (with their attempts and redeliveries), replayable
// send answers, order-webhook customers, Login sessions of the number (sent from or bound to it)
// and Connect links to it, undeliverable provider deliveries from the number to the workspace's
// numbers, and the files the customer sent (the sandbox's bytes; after the commit, the inbound
// media cache's copies). The erasure is logged with counts only: no number, name or text.
// History stays true: aggregates do not change. Campaign recipient rows are kept without their
// contact and number (the campaign's totals, read counts included, stay as they were; a
// recipient not yet sent becomes `skipped`), and the messages the provider accepted for the
// contact are tallied per billing month (message_usage_erased) so the month's usage stays.
import { sql, type Transaction } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { decodeKeyset, keysetPage } from '#server/lib/cursor.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Database } from '#server/store/schema.js';
import { ERASED_ERROR } from '../campaigns/lifecycle.js';
import type { ContactErasuresTable } from '#server/store/schema/messaging-crm.js';
import type { Selectable } from 'kysely';

type Erasure = components['schemas']['ContactErasure'];
type Counts = Erasure['counts'];

const view = (r: Selectable<ContactErasuresTable>): Erasure => ({
  id: r.id,
  contact_id: r.contact_id,
  erased_by: r.erased_by,
  counts: r.counts as Counts,
  erased_at: new Date(r.erased_at).toISOString(),
});

async function count(
  trx: Transaction<Database>,
  table: 'messages' | 'chats' | 'automation_executions' | 'automation_sequence_enrolments' | 'form_submissions' | 'campaign_recipients',
  contactId: string,
): Promise<number> {
  const row = await trx
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('contact_id', '=', contactId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Erases what refers to the contact without a foreign key; answers how many rows. */
async function eraseLooseTraces(trx: Transaction<Database>, workspaceId: string, contact: { id: string; phone: string }) {
  const quotedId = `%"${contact.id}"%`;
  const digits = contact.phone.replace(/^\+/, '');
  // Event payloads name the contact by id and number (messages, statuses, forms, campaigns).
  const events = await trx
    .deleteFrom('outbox')
    .where('workspace_id', '=', workspaceId)
    .where((eb) => eb.or([eb('payload', 'like', quotedId), eb('payload', 'like', `%"${contact.phone}"%`)]))
    .executeTakeFirst();
  const idempotency = await trx
    .deleteFrom('send_idempotency')
    .where('workspace_id', '=', workspaceId)
    .where(sql`response::text`, 'like', quotedId)
    .executeTakeFirst();
  const orders = await trx
    .updateTable('order_webhook_receipts')
    .set({ customer: null })
    .where('workspace_id', '=', workspaceId)
    .where(sql`customer::text`, 'like', `%${contact.phone}%`)
    .executeTakeFirst();
  const logins = await trx
    .updateTable('login_sessions')
    .set({ phone: null, profile_name: null })
    .where('workspace_id', '=', workspaceId)
    .where('phone', '=', contact.phone)
    .executeTakeFirst();
  const boundLogins = await trx
    .updateTable('login_sessions')
    .set({ bound_phone: null })
    .where('workspace_id', '=', workspaceId)
    .where('bound_phone', '=', contact.phone)
    .executeTakeFirst();
  // Media the customer sent: the sandbox keeps its bytes by provider media id.
  const media = await trx
    .selectFrom('messages')
    .select(['id', sql<string | null>`content->'media'->>'provider_media_id'`.as('media_id')])
    .where('contact_id', '=', contact.id)
    .where('direction', '=', 'inbound')
    .where(sql`content->'media'`, 'is not', null)
    .execute();
  const mediaIds = media.flatMap((m) => (m.media_id ? [m.media_id] : []));
  const files = mediaIds.length ? await trx.deleteFrom('sandbox_media').where('provider_media_id', 'in', mediaIds).executeTakeFirst() : undefined;
  const links = await trx
    .updateTable('links')
    .set({ recipient_phone: null })
    .where('workspace_id', '=', workspaceId)
    .where('recipient_phone', '=', contact.phone)
    .executeTakeFirst();
  // Deliveries kept because they could not be applied (poison), sent by this number to one of ours.
  const deliveries = await sql`delete from provider_deliveries d
      where d.failed_at is not null and d.payload like ${`%"${digits}"%`}
        and exists (select 1 from phone_numbers pn where pn.workspace_id = ${workspaceId}
                    and d.payload like '%"' || pn.provider_phone_number_id || '"%')`.execute(trx);
  const n = (r: { numUpdatedRows?: bigint; numDeletedRows?: bigint } | undefined) => Number(r?.numUpdatedRows ?? r?.numDeletedRows ?? 0);
  return {
    webhook_events: n(events),
    other: n(idempotency) + n(orders) + n(logins) + n(boundLogins) + n(links) + n(files) + Number(deliveries.numAffectedRows ?? 0),
    mediaMessageIds: media.map((m) => m.id),
  };
}

/**
 * What erasing the contact must not change: usage (its accepted outbound messages, added to the
 * month's erased tally) and campaign counts (its recipient rows lose contact and number; the
 * foreign key sets contact_id null when the contact row goes).
 */
async function keepAggregates(trx: Transaction<Database>, workspaceId: string, contactId: string, now: Date): Promise<void> {
  // The same rows and months as usage counts (operations/usage.ts: accepted, by UTC calendar month).
  await sql`insert into message_usage_erased (workspace_id, period_start, messages)
      select ${workspaceId}, date_trunc('month', created_at at time zone 'UTC') at time zone 'UTC', count(*)
        from messages
       where contact_id = ${contactId} and direction = 'outbound' and provider_message_id is not null
       group by 2
      on conflict (workspace_id, period_start) do update set messages = message_usage_erased.messages + excluded.messages`.execute(trx);
  await trx
    .updateTable('campaign_recipients')
    .set({ state: 'skipped', error: ERASED_ERROR, updated_at: now })
    .where('contact_id', '=', contactId)
    .where('state', '=', 'queued')
    .execute();
  await trx.updateTable('campaign_recipients').set({ phone: null }).where('contact_id', '=', contactId).execute();
}

export const deleteContact: Handler<operations['deleteContact']> = async (request) => {
  const auth = authOf(request);
  const { store, now } = request.server.platform;
  const { id } = request.params;
  let cachedMedia: string[] = [];
  const row = await store.db.transaction().execute(async (trx) => {
    const contact = await trx
      .selectFrom('contacts')
      .select(['id', 'phone'])
      .where('workspace_id', '=', auth.workspaceId)
      .where('id', '=', id)
      .forUpdate()
      .executeTakeFirst();
    if (!contact) throw new HttpProblem(404, 'not-found', `No contact ${id} in this workspace.`);
    const executions = (await count(trx, 'automation_executions', id)) + (await count(trx, 'automation_sequence_enrolments', id));
    const { mediaMessageIds, ...loose } = await eraseLooseTraces(trx, auth.workspaceId, contact);
    const counts: Counts = {
      messages: await count(trx, 'messages', id),
      chats: await count(trx, 'chats', id),
      executions,
      form_submissions: await count(trx, 'form_submissions', id),
      campaign_recipients: await count(trx, 'campaign_recipients', id),
      ...loose,
    };
    cachedMedia = mediaMessageIds.map((messageId) => `${auth.workspaceId}/${messageId}`);
    await keepAggregates(trx, auth.workspaceId, id, now());
    await trx.deleteFrom('contacts').where('id', '=', id).execute();
    return trx
      .insertInto('contact_erasures')
      .values({
        id: newId('era'),
        workspace_id: auth.workspaceId,
        contact_id: id,
        erased_by: auth.keyId ?? auth.ownerId ?? auth.kind,
        counts: JSON.stringify(counts),
        erased_at: now(),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  });
  // The media area's cache (getMessageMedia, decorated on the app) keys its copies by workspace and message.
  for (const key of cachedMedia) await request.server.inboundMediaCache.remove(key);
  request.log.info({ erasureId: row.id, contactId: id }, 'contact erased');
  return view(row);
};

export const listContactErasures: Handler<operations['listContactErasures']> = async (request) => {
  const { workspaceId } = authOf(request);
  const { secrets, store } = request.server.platform;
  const { limit = 20, cursor }: NonNullable<operations['listContactErasures']['parameters']['query']> = request.query ?? {};
  const scope = { workspaceId, operation: 'listContactErasures' };
  const after = decodeKeyset(secrets, scope, cursor);
  let query = store.db.selectFrom('contact_erasures').selectAll().where('workspace_id', '=', workspaceId);
  if (after) query = query.where((eb) => eb(eb.refTuple('erased_at', 'id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = await query
    .orderBy('erased_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  return keysetPage(
    secrets,
    scope,
    rows.map((r) => ({ ...r, created_at: r.erased_at })),
    limit,
    view,
  );
};
