// Messaging campaigns: create, list, get, start, pause, resume, cancel. Everything a campaign
// needs is checked before anything is stored; state changes lock the campaign's row, so two
// concurrent calls cannot both move it, and tell every instance's worker through the bus.
import { sql, type Transaction } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { decodeKeyset, keysetPage } from '#server/lib/cursor.js';
import type { Handler, Handlers } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { requireE164 } from '#server/lib/phone.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import type { Database } from '#server/store/schema.js';
import type { CampaignStatusValue } from '#server/store/schema/campaigns.js';
import { resolveSender } from '../sender.js';
import { findTemplate } from '../templates/lookup.js';
import type { TemplateValues } from '../outbound/template-components.js';
import { checkCampaignAudience, countRecipients, type CampaignAudience } from './audience.js';
import { campaignView, progressOf, skipUnsent, startSending, STATE_EVENT, TooManyRecipients, WAKE_CHANNEL, type CampaignRow } from './lifecycle.js';
import { checkMedia, checkTemplateValues } from './validate.js';

type ListQuery = NonNullable<operations['listCampaigns']['parameters']['query']>;
type Campaign = components['schemas']['Campaign'];

const notFound = (id: string) => new HttpProblem(404, 'not-found', `No campaign ${id} in this workspace.`);

async function view(platform: Platform, row: CampaignRow): Promise<Campaign> {
  return campaignView(row, (await progressOf(platform.store.db, [row])).get(row.id)!);
}

/** The sender: a number of the workspace in any layout, or our `pn_…` id of it (as sends and uploads take it). */
async function senderNumber(platform: Platform, workspaceId: string, given: string) {
  const pointer = '/body/chatapp_phone_number';
  const byId = given.startsWith('pn_');
  const e164 = byId ? null : requireE164(given, pointer);
  const number = await platform.store.db
    .selectFrom('phone_numbers')
    .select(['id', 'display_phone_number'])
    .where('workspace_id', '=', workspaceId)
    .where(byId ? 'id' : 'display_phone_number', '=', byId ? given : e164!)
    .executeTakeFirst();
  if (!number)
    throw new HttpProblem(404, 'not-found', 'No such phone number in this workspace.', {
      errors: [{ pointer, detail: 'is not a number of a connected account of this workspace' }],
    });
  const sender = await resolveSender(platform, workspaceId, number.id, pointer);
  if (sender.account.disconnected_at) {
    throw new HttpProblem(422, 'unprocessable', 'The number belongs to a disconnected business account.', {
      errors: [{ pointer, detail: 'account disconnected' }],
    });
  }
  return { ...sender, e164: e164 ?? number.display_phone_number };
}

const tooMany = (count: number, status: 400 | 422, cap: number) =>
  new HttpProblem(
    status,
    status === 400 ? 'validation' : 'unprocessable',
    `The audience has ${count > cap ? `more than ${cap}` : count} contacts; a campaign takes at most ${cap}.`,
    {
      errors: [{ pointer: '/body/audience', detail: `matches more than ${cap} contacts` }],
    },
  );

const createCampaign: Handler<operations['createCampaign']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const body = request.body;
  const now = platform.now();
  const sender = await senderNumber(platform, workspaceId, body.chatapp_phone_number);
  const values = body.template as TemplateValues;
  const audience = body.audience as CampaignAudience;
  const template = await findTemplate(db, workspaceId, { name: values.name, language: values.language, businessAccountId: sender.account.id });
  if (!template) {
    throw new HttpProblem(404, 'not-found', `No template ${values.name} (${values.language}) for this number's business account.`, {
      errors: [{ pointer: '/body/template/name', detail: 'unknown template' }],
    });
  }
  if (template.status !== 'APPROVED') {
    throw new HttpProblem(422, 'unprocessable', `Template ${values.name} (${values.language}) is ${template.status}; only APPROVED templates can be sent.`, {
      errors: [{ pointer: '/body/template/name', detail: 'template not approved' }],
    });
  }
  checkTemplateValues(template, values, now);
  await checkMedia(platform, db, workspaceId, values, { phoneNumberId: sender.number.id });
  const scheduledAt = body.scheduled_at !== undefined ? new Date(body.scheduled_at) : null;
  if (scheduledAt && scheduledAt.getTime() <= now.getTime()) {
    throw new HttpProblem(422, 'unprocessable', 'scheduled_at is in the past.', {
      errors: [{ pointer: '/body/scheduled_at', detail: 'must be in the future' }],
    });
  }
  await checkCampaignAudience(db, workspaceId, audience);
  const cap = platform.config.campaignMaxRecipients;
  const count = await countRecipients(db, workspaceId, audience, cap);
  if (count > cap) throw tooMany(count, 400, cap); // bad-inputs K8: refused before any row or job exists

  const status: CampaignStatusValue = body.draft ? 'draft' : scheduledAt ? 'scheduled' : 'sending';
  const row = await db.transaction().execute(async (trx) => {
    const created = await trx
      .insertInto('campaigns')
      .values({
        id: newId('cmp'),
        workspace_id: workspaceId,
        name: body.name,
        status: status === 'sending' ? 'draft' : status,
        phone_number_id: sender.number.id,
        chatapp_phone_number: sender.e164,
        waba_id: sender.account.id,
        audience: JSON.stringify(body.audience),
        template: JSON.stringify(values),
        template_id: template.id,
        // At most the number's own rate; the worker holds the lower of the two.
        rate_per_second: Math.min(body.rate_per_second ?? 80, sender.number.messages_per_second),
        scheduled_at: scheduledAt,
        failure_reason: null,
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    // The workers sleep until the earliest scheduled_at they know of: this one may be earlier.
    if (status === 'scheduled') await sql`select pg_notify(${WAKE_CHANNEL}, '')`.execute(trx);
    return status === 'sending' ? startSending(trx, created, now, cap, platform.config.campaignPrepareInRequest, count) : created;
  });
  // A large audience is inserted by the worker after this answer (docs/scale.md): 202, `preparing`.
  reply.code(row.status === 'preparing' ? 202 : 201);
  return view(platform, row);
};

const listCampaigns: Handler<operations['listCampaigns']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const { status, limit = 20, cursor } = (request.query ?? {}) as ListQuery;
  const scope = { workspaceId, operation: 'listCampaigns' };
  const after = decodeKeyset(platform.secrets, scope, cursor);
  let query = platform.store.db.selectFrom('campaigns').selectAll().where('workspace_id', '=', workspaceId);
  if (status) query = query.where('status', '=', status);
  if (after) query = query.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const progress = await progressOf(platform.store.db, rows.slice(0, limit));
  return keysetPage(platform.secrets, scope, rows, limit, (row) => campaignView(row, progress.get(row.id)!));
};

const getCampaign: Handler<operations['getCampaign']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const row = await platform.store.db
    .selectFrom('campaigns')
    .selectAll()
    .where('id', '=', request.params.campaignId)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  if (!row) throw notFound(request.params.campaignId);
  return view(platform, row);
};

/**
 * Runs `change` on the locked campaign row; 404 for another workspace's or an unknown id. The
 * new status is announced to every instance's worker after the commit.
 */
async function transition(
  platform: Platform,
  workspaceId: string,
  id: string,
  change: (trx: Transaction<Database>, row: CampaignRow, now: Date) => Promise<CampaignRow>,
): Promise<Campaign> {
  const now = platform.now();
  const row = await platform.store.db.transaction().execute(async (trx) => {
    const current = await trx.selectFrom('campaigns').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).forUpdate().executeTakeFirst();
    if (!current) throw notFound(id);
    const next = await change(trx, current, now);
    await platform.bus.publish({ type: STATE_EVENT, workspaceId, data: { campaignId: id, status: next.status } }, trx);
    // The workers of every instance: one sending now, or one to sleep until its scheduled_at.
    if (next.status === 'sending' || next.status === 'scheduled') await sql`select pg_notify(${WAKE_CHANNEL}, '')`.execute(trx);
    return next;
  });
  return view(platform, row);
}

const conflict = (row: CampaignRow, action: string) => new HttpProblem(409, 'conflict', `Campaign ${row.id} is ${row.status} and cannot be ${action}.`);

async function setStatus(trx: Transaction<Database>, row: CampaignRow, status: CampaignStatusValue, now: Date, extra: { finished_at?: Date } = {}) {
  return trx
    .updateTable('campaigns')
    .set({ status, updated_at: now, ...extra })
    .where('id', '=', row.id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Starts sending now, or waits for a future `scheduled_at`; the audience is checked against the cap again. */
async function begin(trx: Transaction<Database>, row: CampaignRow, now: Date, cap: number, inRequest: number): Promise<CampaignRow> {
  if (row.scheduled_at && new Date(row.scheduled_at).getTime() > now.getTime()) return setStatus(trx, row, 'scheduled', now);
  try {
    return await startSending(trx, row, now, cap, inRequest);
  } catch (error) {
    if (error instanceof TooManyRecipients) throw tooMany(error.count, 422, error.cap);
    throw error;
  }
}

const startCampaign: Handler<operations['startCampaign']> = async (request) =>
  transition(request.server.platform, authOf(request).workspaceId, request.params.campaignId, async (trx, row, now) => {
    if (row.status !== 'draft') throw new HttpProblem(409, 'conflict', `Campaign ${row.id} is ${row.status}; only a draft can be started.`);
    const { config } = request.server.platform;
    return begin(trx, row, now, config.campaignMaxRecipients, config.campaignPrepareInRequest);
  });

const pauseCampaign: Handler<operations['pauseCampaign']> = async (request) =>
  transition(request.server.platform, authOf(request).workspaceId, request.params.campaignId, async (trx, row, now) => {
    if (row.status !== 'sending' && row.status !== 'scheduled') throw conflict(row, 'paused');
    return setStatus(trx, row, 'paused', now);
  });

const resumeCampaign: Handler<operations['resumeCampaign']> = async (request) =>
  transition(request.server.platform, authOf(request).workspaceId, request.params.campaignId, async (trx, row, now) => {
    if (row.status !== 'paused') throw new HttpProblem(409, 'conflict', `Campaign ${row.id} is ${row.status}, not paused.`);
    // Paused while scheduled: recipients are not fixed yet.
    const { config } = request.server.platform;
    return row.started_at ? setStatus(trx, row, 'sending', now) : begin(trx, row, now, config.campaignMaxRecipients, config.campaignPrepareInRequest);
  });

const cancelCampaign: Handler<operations['cancelCampaign']> = async (request) =>
  transition(request.server.platform, authOf(request).workspaceId, request.params.campaignId, async (trx, row, now) => {
    if (!['draft', 'scheduled', 'preparing', 'sending', 'paused'].includes(row.status)) throw conflict(row, 'cancelled');
    // Cheap at any size: a small campaign's queued recipients are skipped here, a large one's by
    // the worker in chunks after the answer (it never sends to a cancelled campaign's).
    await skipUnsent(trx, row.id, 'Campaign cancelled.', request.server.platform.config.campaignPrepareInRequest);
    return setStatus(trx, row, 'cancelled', now, { finished_at: now });
  });

export const campaignHandlers: Handlers<operations> = {
  listCampaigns,
  createCampaign,
  getCampaign,
  startCampaign,
  pauseCampaign,
  resumeCampaign,
  cancelCampaign,
};
