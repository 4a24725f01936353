// Campaign state changes that the API and the workers share: fixing the recipients when sending
// starts, finishing (completed, failed) with their webhook events, and the contract view with
// progress counted from the recipient rows.
import { sql, type Kysely, type Selectable, type SqlBool, type Transaction } from 'kysely';
import type { components } from '#generated/messaging/types.js';
import type { Database } from '#server/store/schema.js';
import type { CampaignsTable } from '#server/store/schema/campaigns.js';
import { emitEvent } from '#server/apis/webhooks/emit.js';
import { countRecipients, recipientsQuery, type CampaignAudience } from './audience.js';

type Campaign = components['schemas']['Campaign'];
type Progress = components['schemas']['CampaignProgress'];
export type CampaignRow = Selectable<CampaignsTable>;
type Db = Kysely<Database> | Transaction<Database>;

/** Wakes the workers of every instance (they also poll). */
export const WAKE_CHANNEL = 'campaigns_due';
/** Bus event telling workers that a campaign was paused, resumed, cancelled or failed. */
export const STATE_EVENT = 'campaign.state';

const EMPTY: Progress = { total: 0, queued: 0, sent: 0, delivered: 0, read: 0, failed: 0, skipped: 0 };

/**
 * Progress of each campaign, from its recipients (`sending` counts as queued). Recipients who
 * opted out before their turn are in no column (they count in `opted_out_skipped`, and `total`
 * leaves them out); other skipped ones are `skipped`. The rows outlive the contact's erasure
 * (contact and number set null), so the counts never change afterwards.
 */
export async function progressOf(db: Db, campaigns: { id: string; total: number }[]): Promise<Map<string, Progress>> {
  const out = new Map(campaigns.map((c) => [c.id, { ...EMPTY, total: c.total }]));
  if (!campaigns.length) return out;
  const rows = await db
    .selectFrom('campaign_recipients')
    .select(['campaign_id', 'state', sql<boolean>`coalesce(error->>'code' = 'opted-out', false)`.as('opted_out'), (eb) => eb.fn.countAll<string>().as('n')])
    .where(
      'campaign_id',
      'in',
      campaigns.map((c) => c.id),
    )
    .groupBy(['campaign_id', 'state', sql`3`])
    .execute();
  for (const r of rows) {
    const p = out.get(r.campaign_id)!;
    const n = Number(r.n);
    if (r.state === 'skipped' && r.opted_out) continue;
    if (r.state === 'queued' || r.state === 'sending') p.queued += n;
    else if (r.state === 'sent' || r.state === 'delivered' || r.state === 'read' || r.state === 'failed' || r.state === 'skipped') p[r.state] += n;
  }
  return out;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

export function campaignView(row: CampaignRow, progress: Progress): Campaign {
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    chatapp_phone_number: row.chatapp_phone_number,
    waba_id: row.waba_id,
    audience: row.audience as Campaign['audience'],
    template: row.template as Campaign['template'],
    scheduled_at: iso(row.scheduled_at),
    rate_per_second: row.rate_per_second,
    progress,
    opted_out_skipped: row.opted_out_skipped,
    // Every contact the audience matched is either a recipient or left out for its opt-out.
    audience_size: row.started_at ? row.total + row.opted_out_skipped : 0,
    failure_reason: row.failure_reason,
    audience_count: row.audience_count,
    started_at: iso(row.started_at),
    finished_at: iso(row.finished_at),
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}

export class TooManyRecipients extends Error {
  constructor(
    readonly count: number,
    readonly cap: number,
  ) {
    super(`The audience has more than ${cap} contacts.`);
  }
}

/**
 * Fixes the recipients and moves the campaign to `sending`. The caller holds the campaign's row
 * lock. Throws TooManyRecipients, rolling back. An audience of at most `inRequest` contacts is
 * inserted here (one `insert … select`, each contact once); a larger one moves the campaign to
 * `preparing` at once, and the worker inserts it in chunks (prepareChunk), so no request holds
 * the insert of a whole audience.
 */
export async function startSending(
  trx: Transaction<Database>,
  c: CampaignRow,
  now: Date,
  cap: number,
  inRequest = Number.POSITIVE_INFINITY,
  counted?: number,
): Promise<CampaignRow> {
  // Counted first (stopping past the cap), so a huge audience never gets inserted at all; a
  // count the caller just made (createCampaign) is not made again.
  const count = counted ?? (await countRecipients(trx, c.workspace_id, c.audience as CampaignAudience, cap));
  if (count > cap) throw new TooManyRecipients(count, cap);
  if (count > inRequest) {
    const row = await trx
      .updateTable('campaigns')
      .set({ status: 'preparing', audience_count: count, prepared_through: null, total: 0, updated_at: now })
      .where('id', '=', c.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    await sql`select pg_notify(${WAKE_CHANNEL}, '')`.execute(trx);
    return row;
  }
  const audience = await recipientsQuery(trx, c.workspace_id, c.audience as CampaignAudience);
  // Opted-out contacts are left out and counted (server/apis/messaging/contacts/opt-out.ts).
  const optedOut = await trx
    .selectFrom(audience.where('contacts.opted_out_at', 'is not', null).as('o'))
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  const source = audience.where('contacts.opted_out_at', 'is', null).select(sql<string>`${c.id}`.as('campaign_id'));
  await trx
    .insertInto('campaign_recipients')
    .columns(['contact_id', 'phone', 'campaign_id'])
    .expression(source)
    .onConflict((oc) => oc.columns(['campaign_id', 'contact_id']).doNothing())
    .execute();
  return beginSending(trx, c, now, Number(optedOut.n), count);
}

/** `sending` with the recipients now in the table; an empty audience completes at once. */
async function beginSending(trx: Transaction<Database>, c: CampaignRow, now: Date, optedOut: number, audienceCount: number): Promise<CampaignRow> {
  const counted = await trx
    .selectFrom('campaign_recipients')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('campaign_id', '=', c.id)
    .executeTakeFirstOrThrow();
  const total = Number(counted.n);
  const row = await trx
    .updateTable('campaigns')
    .set({ status: 'sending', total, opted_out_skipped: optedOut, audience_count: audienceCount, prepared_through: null, started_at: now, updated_at: now })
    .where('id', '=', c.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  await sql`select pg_notify(${WAKE_CHANNEL}, '')`.execute(trx);
  // An empty audience has nothing to wait for.
  return total === 0 ? ((await completeIfDone(trx, c.id, now)) ?? row) : row;
}

/** Recipients inserted per chunk of a `preparing` campaign: one short transaction each. */
export const PREPARE_CHUNK = 5_000;

/**
 * Inserts the next chunk of a `preparing` campaign's recipients (contacts in id order after
 * `prepared_through`, opted-out ones left out) and, after the last, starts sending. The campaign's
 * row is locked for the chunk only: a cancel waits at most one chunk. Answers the campaign after
 * the chunk, or null when it is no longer `preparing` (cancelled, or another worker holds it).
 */
export async function prepareChunk(trx: Transaction<Database>, campaignId: string, now: Date, cap: number, chunk = PREPARE_CHUNK): Promise<CampaignRow | null> {
  const c = await trx
    .selectFrom('campaigns')
    .selectAll()
    .where('id', '=', campaignId)
    .where('status', '=', 'preparing')
    .forUpdate()
    .skipLocked()
    .executeTakeFirst();
  if (!c) return null;
  const audience = await recipientsQuery(trx, c.workspace_id, c.audience as CampaignAudience);
  // Contacts added while it prepares may join it, never past the cap.
  const room = Math.max(0, Math.min(chunk, cap - c.total));
  let source = audience.where('contacts.opted_out_at', 'is', null);
  if (c.prepared_through !== null) source = source.where('contacts.id', '>', c.prepared_through);
  const inserted = room
    ? await trx
        .insertInto('campaign_recipients')
        .columns(['contact_id', 'phone', 'campaign_id'])
        .expression(source.select(sql<string>`${c.id}`.as('campaign_id')).orderBy('contacts.id').limit(room))
        .onConflict((oc) => oc.columns(['campaign_id', 'contact_id']).doNothing())
        .returning('contact_id')
        .execute()
    : [];
  if (inserted.length === room && room > 0 && c.total + inserted.length < cap) {
    const last = await trx
      .selectFrom('campaign_recipients')
      .select((eb) => eb.fn.max('contact_id').as('id'))
      .where('campaign_id', '=', c.id)
      .executeTakeFirstOrThrow();
    return trx
      .updateTable('campaigns')
      .set({ total: c.total + inserted.length, prepared_through: last.id, updated_at: now })
      .where('id', '=', c.id)
      .returningAll()
      .executeTakeFirstOrThrow();
  }
  const optedOut = await trx
    .selectFrom(audience.where('contacts.opted_out_at', 'is not', null).as('o'))
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return beginSending(trx, c, now, Number(optedOut.n), c.audience_count ?? c.total + inserted.length);
}

/** Completes a `sending` campaign with no recipient left to send, once across instances. */
export async function completeIfDone(trx: Transaction<Database>, campaignId: string, now: Date): Promise<CampaignRow | null> {
  const row = await trx
    .updateTable('campaigns')
    .set({ status: 'completed', finished_at: now, updated_at: now })
    .where('id', '=', campaignId)
    .where('status', '=', 'sending')
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('campaign_recipients').select('id').where('campaign_id', '=', campaignId).where('state', 'in', ['queued', 'sending']))),
    )
    .returningAll()
    .executeTakeFirst();
  if (!row) return null;
  const progress = (await progressOf(trx, [row])).get(row.id)!;
  await emitEvent(trx, {
    workspaceId: row.workspace_id,
    api: 'messaging',
    type: 'campaign.completed',
    at: now,
    data: { campaign_id: row.id, name: row.name, status: 'completed', progress, started_at: iso(row.started_at) ?? iso(now), finished_at: now.toISOString() },
  });
  return row;
}

/** Stops a campaign that cannot go on: recipients not yet sent are skipped; campaign.failed. */
export async function failCampaign(trx: Transaction<Database>, campaignId: string, reason: string, now: Date): Promise<CampaignRow | null> {
  const row = await trx
    .updateTable('campaigns')
    .set({ status: 'failed', failure_reason: reason, finished_at: now, updated_at: now })
    .where('id', '=', campaignId)
    .where('status', 'in', ['scheduled', 'sending', 'paused'])
    .returningAll()
    .executeTakeFirst();
  if (!row) return null;
  await skipUnsent(trx, campaignId, reason);
  const progress = (await progressOf(trx, [row])).get(row.id)!;
  await emitEvent(trx, {
    workspaceId: row.workspace_id,
    api: 'messaging',
    type: 'campaign.failed',
    at: now,
    data: {
      campaign_id: row.id,
      name: row.name,
      status: 'failed',
      failure_reason: reason,
      progress,
      started_at: iso(row.started_at),
      finished_at: now.toISOString(),
    },
  });
  return row;
}

/**
 * Recipients (`ids`, claimed by the caller) whose contact opted out since sending started:
 * `skipped` (error `opted-out`), counted in `opted_out_skipped` and taken out of `total`, so
 * `total + opted_out_skipped` stays the audience and no contact counts twice.
 */
export async function skipOptedOut(trx: Transaction<Database>, campaignId: string, ids: string[], now: Date): Promise<void> {
  await trx
    .updateTable('campaign_recipients')
    .set({ state: 'skipped', error: JSON.stringify({ code: 'opted-out', title: 'The contact opted out' }), updated_at: now })
    .where('id', 'in', ids)
    .execute();
  await trx
    .updateTable('campaigns')
    .set((eb) => ({ opted_out_skipped: eb('opted_out_skipped', '+', ids.length), total: eb('total', '-', ids.length) }))
    .where('id', '=', campaignId)
    .execute();
}

/**
 * Queued recipients (not those leased: their worker settles them) become `skipped`; with `limit`,
 * at most that many (a cancel skips a small campaign's at once and leaves a large one's to the
 * worker, in chunks): answers how many.
 */
export async function skipUnsent(trx: Db, campaignId: string, reason: string, limit?: number): Promise<number> {
  const set = { state: 'skipped' as const, error: JSON.stringify({ code: 'skipped', title: reason }), updated_at: new Date() };
  if (limit === undefined) {
    const result = await trx.updateTable('campaign_recipients').set(set).where('campaign_id', '=', campaignId).where('state', '=', 'queued').executeTakeFirst();
    return Number(result.numUpdatedRows);
  }
  // The ids are chosen first and updated by primary key alone: with the campaign in the same
  // statement, PostgreSQL reads every queued row of a large campaign and compares each with the
  // chosen ids (0.3 s for 100,000 queued).
  const chosen = await trx
    .selectFrom('campaign_recipients')
    .select('id')
    .where('campaign_id', '=', campaignId)
    .where('state', '=', 'queued')
    .orderBy('id')
    .limit(limit)
    .execute();
  if (!chosen.length) return 0;
  const result = await trx
    .updateTable('campaign_recipients')
    .set(set)
    .where(sql<SqlBool>`id = any(${chosen.map((r) => r.id)}::bigint[])`)
    .where('state', '=', 'queued')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** The error of a recipient whose contact was erased before its turn. */
export const ERASED_ERROR = JSON.stringify({ code: 'erased', title: 'The contact was erased' });

/** Recipients (`ids`) whose contact was erased before their turn: `skipped`, still counted in `total`. */
export async function skipErased(trx: Db, ids: string[], now: Date): Promise<void> {
  await trx.updateTable('campaign_recipients').set({ state: 'skipped', error: ERASED_ERROR, updated_at: now }).where('id', 'in', ids).execute();
}
