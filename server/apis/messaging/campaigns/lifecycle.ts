// Campaign state changes that the API and the workers share: fixing the recipients when sending
// starts, finishing (completed, failed) with their webhook events, and the contract view with
// progress counted from the recipient rows.
import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
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
 * Fixes the recipients (one `insert … select`, each contact once) and moves the campaign to
 * `sending`. The caller holds the campaign's row lock. Throws TooManyRecipients, rolling back.
 */
export async function startSending(trx: Transaction<Database>, c: CampaignRow, now: Date, cap: number): Promise<CampaignRow> {
  // Counted first (stopping past the cap), so a huge audience never gets inserted at all.
  const count = await countRecipients(trx, c.workspace_id, c.audience as CampaignAudience, cap);
  if (count > cap) throw new TooManyRecipients(count, cap);
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
  const counted = await trx
    .selectFrom('campaign_recipients')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('campaign_id', '=', c.id)
    .executeTakeFirstOrThrow();
  const total = Number(counted.n);
  const row = await trx
    .updateTable('campaigns')
    .set({ status: 'sending', total, opted_out_skipped: Number(optedOut.n), started_at: now, updated_at: now })
    .where('id', '=', c.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  await sql`select pg_notify(${WAKE_CHANNEL}, '')`.execute(trx);
  // An empty audience has nothing to wait for.
  return total === 0 ? ((await completeIfDone(trx, c.id, now)) ?? row) : row;
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

/** Queued recipients (not those leased: their worker settles them) become `skipped`. */
export async function skipUnsent(trx: Db, campaignId: string, reason: string): Promise<void> {
  await trx
    .updateTable('campaign_recipients')
    .set({ state: 'skipped', error: JSON.stringify({ code: 'skipped', title: reason }), updated_at: new Date() })
    .where('campaign_id', '=', campaignId)
    .where('state', '=', 'queued')
    .execute();
}

/** The error of a recipient whose contact was erased before its turn. */
export const ERASED_ERROR = JSON.stringify({ code: 'erased', title: 'The contact was erased' });

/** Recipients (`ids`) whose contact was erased before their turn: `skipped`, still counted in `total`. */
export async function skipErased(trx: Db, ids: string[], now: Date): Promise<void> {
  await trx.updateTable('campaign_recipients').set({ state: 'skipped', error: ERASED_ERROR, updated_at: now }).where('id', 'in', ids).execute();
}
