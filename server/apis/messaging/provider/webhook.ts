// The chat provider's inbound webhook in Meta's format: the subscription check (GET) and the
// deliveries (POST) of inbound messages and statuses, from the Cloud API and, signed the same way,
// from the sandbox (inbound-sink.ts). The signature is checked before the body is parsed
// (provider-signature.ts). Once it passes we answer 200 even for parts we ignore, because any
// other answer makes the provider retry the whole batch for days.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { sql, type Transaction } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { problem, sendProblem } from '#server/lib/problems.js';
import { verifySha256Header } from '#server/lib/signatures.js';
import { cleanUnstorable, hasUnstorableText } from '#server/lib/storable.js';
import type { Platform } from '#server/platform.js';
import { retryConflicts } from '#server/store/retry-conflicts.js';
import type { Database } from '#server/store/schema.js';
import { prepareInboundSteps, runInboundSteps } from '#server/events/inbound-steps.js';
import { type EndpointCache, emitEvent } from '../../webhooks/emit.js';
import type {} from './inbox.js';
import { SIGNATURE_CHALLENGE } from './signature.js';
import { applyMessageStatus, applyMessageStatuses } from '../campaigns/recipient-status.js';
import { ensureChat, touchChat } from '../chats.js';
import { eventContent } from '../inbox/views.js';
import { inboundContent } from '../inbound/content.js';
import { applyNumberChange, billingOf } from '../inbound/notices.js';
import { WINDOW_MS } from '../outbound/service-window.js';
import { WA_ID } from '#server/lib/phone.js';

type S = components['schemas'];
type Ctx = {
  trx: Transaction<Database>;
  platform: Platform;
  log: FastifyBaseLogger;
  pn: { id: string; workspace_id: string; display_phone_number: string; business_account_id: string | null };
};

/** Outbound states in order; `failed` can follow any of them and nothing follows it. */
const RANK = new Map([
  ['pending', 0],
  ['accepted', 1],
  ['unknown', 1],
  ['sent', 2],
  ['delivered', 3],
  ['read', 4],
]);
/** Texts longer than this are left out of the event (NOTIFY payloads are capped); subscribers read the row. */
const EVENT_TEXT_BYTES = 2048;

/** Equal-length digests, so neither the comparison time nor an early exit tells how much matched. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

export const verifyProviderWebhook: Handler<operations['verifyProviderWebhook']> = async (request, reply) => {
  const { 'hub.mode': mode, 'hub.verify_token': token, 'hub.challenge': challenge } = request.query;
  // bad-inputs E9: no echo unless verified, so the endpoint cannot be used to reflect content.
  if (mode !== 'subscribe' || !sameSecret(token, request.server.platform.providerVerifyToken)) {
    return sendProblem(reply, problem(403, 'forbidden', 'The verify token does not match.'));
  }
  return reply.type('text/plain; charset=utf-8').send(challenge);
};

export const receiveProviderWebhook: Handler<operations['receiveProviderWebhook']> = async (request, reply) => {
  const { platform } = request.server;
  const header = request.headers['x-hub-signature-256'];
  // The route's gate verified the raw bytes before parsing them; checked again only if it could not.
  const signed =
    request.providerSigned ||
    (request.rawBody !== undefined && verifySha256Header(typeof header === 'string' ? header : undefined, platform.providerAppSecret, request.rawBody));
  if (!signed) {
    return sendProblem(reply, problem(401, 'invalid-signature', 'X-Hub-Signature-256 is missing or does not match the raw body.'), SIGNATURE_CHALLENGE);
  }
  // NUL and lone surrogates cannot be stored; the provider's text is kept with U+FFFD in their place (bad-inputs H8).
  const payload = hasUnstorableText(request.body) ? cleanUnstorable(request.body) : request.body;
  // Processed now, or under a burst stored durably and processed from the inbox (provider-inbox.ts):
  // either way the 200 leaves only once the delivery is safe.
  await request.server.providerInbox.receive(payload, request.log);
  return { received: true as const };
};

/**
 * Applies one delivery in one transaction, events included (published at commit). On PostgreSQL
 * two deliveries at once can lock the same rows: statuses take their messages' locks in one order
 * (by wamid), and a deadlock among other rows (two customers' contacts in opposite order) runs the
 * transaction again. Any other database failure propagates and the provider retries; dedupe and
 * forward-only statuses make that safe.
 */
export async function processProviderPayload(
  platform: Platform,
  payload: S['ProviderWebhookPayload'],
  log: FastifyBaseLogger,
  claim?: DeliveryClaim,
): Promise<void> {
  const relevant = payload.object === 'whatsapp_business_account';
  if (!relevant) log.info({ object: payload.object }, 'provider webhook: object ignored');
  if (!relevant && !claim) return;
  if (relevant) {
    const texts = payload.entry.flatMap((e) =>
      e.changes.flatMap((c) => (c.value.messages ?? []).flatMap((m) => (m.type === 'text' && m.text ? [m.text.body] : []))),
    );
    await prepareInboundSteps(platform, texts);
  }
  await retryConflicts(() =>
    platform.store.db.transaction().execute(async (trx) => {
      if (claim && !(await claim(trx))) return;
      if (relevant) await applyChanges(trx, platform, payload, log);
    }),
  );
}

/**
 * Applies stored deliveries together in one transaction (the inbox's batches, inbox.ts): `claim`
 * runs first in it and answers the keys of the deliveries still to apply (their rows deleted
 * there), which are then applied in the order given; it answers those keys once committed. A
 * failure of any delivery rolls the whole batch back and propagates: the caller applies the
 * deliveries one by one to find which one fails.
 */
export async function processProviderPayloads(
  platform: Platform,
  deliveries: { key: string; payload: S['ProviderWebhookPayload'] }[],
  log: FastifyBaseLogger,
  claim: (trx: Transaction<Database>) => Promise<Set<string>>,
): Promise<Set<string>> {
  const relevant = (p: S['ProviderWebhookPayload']) => p.object === 'whatsapp_business_account';
  for (const { payload } of deliveries) if (!relevant(payload)) log.info({ object: payload.object }, 'provider webhook: object ignored');
  const texts = deliveries.flatMap(({ payload }) =>
    relevant(payload)
      ? payload.entry.flatMap((e) => e.changes.flatMap((c) => (c.value.messages ?? []).flatMap((m) => (m.type === 'text' && m.text ? [m.text.body] : []))))
      : [],
  );
  if (texts.length) await prepareInboundSteps(platform, texts);
  return retryConflicts(() =>
    platform.store.db.transaction().execute(async (trx) => {
      const claimed = await claim(trx);
      const numbers = new Map<string, Ctx['pn'] | undefined>();
      const applied = deliveries.filter(({ key, payload }) => claimed.has(key) && relevant(payload)).map((d) => d.payload);
      // Statuses alone (a campaign's): read, decided and written for the whole batch at once.
      if (applied.every(statusesOnly)) await applyStatusBatch(trx, platform, applied, log, numbers);
      else for (const payload of applied) await applyChanges(trx, platform, payload, log, numbers);
      return claimed;
    }),
  );
}

/**
 * Runs first in the delivery's transaction when it comes from the inbox (provider-inbox.ts): it
 * removes the delivery's row there, so the row goes if and only if the effects commit; false
 * (another worker already did it) skips the delivery.
 */
export type DeliveryClaim = (trx: Transaction<Database>) => Promise<boolean>;

/** `numbers`: the numbers already looked up in this transaction, by the provider's id (a batch's statuses are mostly of one). */
async function applyChanges(
  trx: Transaction<Database>,
  platform: Platform,
  payload: S['ProviderWebhookPayload'],
  log: FastifyBaseLogger,
  numbers = new Map<string, Ctx['pn'] | undefined>(),
) {
  for (const change of payload.entry.flatMap((e) => e.changes)) {
    if (change.field !== 'messages') {
      log.info({ field: change.field }, 'provider webhook: change field ignored');
      continue;
    }
    const value = change.value;
    const providerId = value.metadata?.phone_number_id;
    const pn = await numberOf(trx, providerId, numbers, log);
    if (!pn) continue;
    if (value.errors?.length) log.warn({ phoneNumberId: pn.id, codes: value.errors.map((e) => e.code) }, 'provider webhook: number-level errors');
    const ctx: Ctx = { trx, platform, log, pn };
    const names = new Map((value.contacts ?? []).map((c) => [c.wa_id, c.profile.name]));
    for (const message of value.messages ?? []) await receiveMessage(ctx, message, names.get(message.from));
    for (const status of byWamid(value.statuses ?? [])) await applyStatus(ctx, status);
  }
}

/** A delivery of statuses only: no inbound message in any of its changes. */
function statusesOnly(payload: S['ProviderWebhookPayload']): boolean {
  return payload.entry.every((e) => e.changes.every((c) => !c.value.messages?.length));
}

/** A status's effect on its message row: what applyStatus writes, and the event's error. */
function statusChange(message: { sent_at: Date | null; delivered_at: Date | null }, s: S['ProviderStatus'], now: Date) {
  const first = s.errors?.[0];
  const error =
    s.status === 'failed' && first
      ? { code: first.code, title: first.title ?? first.message ?? 'Failed', detail: first.error_data?.details ?? first.message ?? null }
      : null;
  const at = providerTime(s.timestamp, now);
  const billing = billingOf(s);
  // A later state implies the earlier ones: `read` without `delivered` still fills delivered_at.
  const times: { sent_at?: Date; delivered_at?: Date; read_at?: Date; failed_at?: Date } =
    s.status === 'failed'
      ? { failed_at: at }
      : {
          sent_at: message.sent_at ?? at,
          ...(s.status !== 'sent' ? { delivered_at: message.delivered_at ?? at } : {}),
          ...(s.status === 'read' ? { read_at: at } : {}),
        };
  return { error, at, billing, times };
}

type StatusData = {
  messageId: string;
  contactId: string;
  phoneNumberId: string;
  status: string;
  previousStatus: string;
  errorCode?: number;
  bizOpaqueCallbackData?: string;
};

/** The `message.status_updated` event of an applied status; answers the bus event's data. */
async function announceStatus(
  trx: Transaction<Database>,
  pn: Ctx['pn'],
  s: S['ProviderStatus'],
  message: { id: string; status: string; contact_id: string },
  chatId: string,
  contactPhone: string,
  change: ReturnType<typeof statusChange>,
  endpoints?: EndpointCache,
): Promise<StatusData> {
  const { error, at, billing } = change;
  await emitEvent(
    trx,
    {
      workspaceId: pn.workspace_id,
      api: 'messaging',
      type: 'message.status_updated',
      at,
      data: {
        message_id: message.id,
        wamid: s.id,
        chat_id: chatId,
        contact_id: message.contact_id,
        contact_no: contactPhone,
        chatapp_phone_number: pn.display_phone_number,
        status: s.status,
        // The contract's states: a message still `pending` or `unknown` to us was at least accepted.
        previous_status: message.status === 'pending' || message.status === 'unknown' ? 'accepted' : message.status,
        error,
        campaign_id: null,
        occurred_at: at.toISOString(),
        ...billing,
      },
    },
    endpoints,
  );
  return {
    messageId: message.id,
    contactId: message.contact_id,
    phoneNumberId: pn.id,
    status: s.status,
    previousStatus: message.status,
    ...(error ? { errorCode: error.code } : {}),
    ...(s.biz_opaque_callback_data ? { bizOpaqueCallbackData: s.biz_opaque_callback_data.slice(0, 512) } : {}),
  };
}

/**
 * The statuses of a batch of deliveries (statuses only) applied as applyStatus applies each, in
 * a few statements for the batch: their messages read FOR UPDATE in one statement (in id order,
 * the lock order of every batch), each status decided in order against the row as the earlier
 * ones left it, the rows written in one UPDATE, campaign recipients in one per state, and the
 * notifications in one. A status whose message is not found by its wamid (the callback-data
 * match, or an unknown message) goes through applyStatus itself.
 */
async function applyStatusBatch(
  trx: Transaction<Database>,
  platform: Platform,
  payloads: S['ProviderWebhookPayload'][],
  log: FastifyBaseLogger,
  numbers: Map<string, Ctx['pn'] | undefined>,
) {
  const items: { pn: Ctx['pn']; s: S['ProviderStatus'] }[] = [];
  for (const payload of payloads)
    for (const change of payload.entry.flatMap((e) => e.changes)) {
      if (change.field !== 'messages') {
        log.info({ field: change.field }, 'provider webhook: change field ignored');
        continue;
      }
      const pn = await numberOf(trx, change.value.metadata?.phone_number_id, numbers, log);
      if (!pn) continue;
      if (change.value.errors?.length)
        log.warn({ phoneNumberId: pn.id, codes: change.value.errors.map((e) => e.code) }, 'provider webhook: number-level errors');
      for (const s of byWamid(change.value.statuses ?? [])) items.push({ pn, s });
    }
  if (!items.length) return;
  const rows = await trx
    .selectFrom('messages')
    .select([
      'id',
      'status',
      'contact_id',
      'chat_id',
      'sent_at',
      'delivered_at',
      'read_at',
      'failed_at',
      'error',
      'billing',
      'status_at',
      'phone_number_id',
      'provider_message_id',
    ])
    .select((eb) => eb.selectFrom('contacts').select('phone').whereRef('contacts.id', '=', 'messages.contact_id').as('contact_phone'))
    .where('provider_message_id', 'in', [...new Set(items.map((i) => i.s.id))])
    .where('direction', '=', 'outbound')
    .orderBy('id')
    .forUpdate()
    .execute();
  const byKey = new Map(rows.map((r) => [`${r.phone_number_id} ${r.provider_message_id}`, { ...r, changed: false }]));
  const endpoints: EndpointCache = new Map();
  const announced: StatusData[] = [];
  for (const { pn, s } of items) {
    if (s.status !== 'failed' && !RANK.has(s.status)) {
      log.info({ status: s.status }, 'provider webhook: status value ignored');
      continue;
    }
    const message = byKey.get(`${pn.id} ${s.id}`);
    if (!message) {
      await applyStatus({ trx, platform, log, pn }, s);
      continue;
    }
    if (!advances(message.status, s.status)) continue; // bad-inputs E7: forward only
    const change = statusChange(message, s, platform.now());
    if (!message.chat_id) message.chat_id = await ensureChat(trx, pn.workspace_id, pn.id, message.contact_id, change.at);
    const data = await announceStatus(trx, pn, s, message, message.chat_id, message.contact_phone ?? '', change, endpoints);
    Object.assign(message, change.times, { status: s.status, status_at: change.at, changed: true });
    if (change.error) message.error = change.error as never;
    if (change.billing) message.billing = { ...(message.billing ?? {}), ...change.billing } as never;
    announced.push(data);
  }
  const changed = [...byKey.values()].filter((m) => m.changed);
  if (!changed.length) return;
  const iso = (d: Date | string | null) => (d ? new Date(d).toISOString() : null);
  const values = changed.map((m) => ({
    id: m.id,
    status: m.status,
    status_at: iso(m.status_at),
    sent_at: iso(m.sent_at),
    delivered_at: iso(m.delivered_at),
    read_at: iso(m.read_at),
    failed_at: iso(m.failed_at),
    error: m.error ?? null,
    billing: m.billing ?? null,
    chat_id: m.chat_id,
  }));
  await sql`update messages m set status = v.status, status_at = v.status_at, sent_at = v.sent_at, delivered_at = v.delivered_at,
      read_at = v.read_at, failed_at = v.failed_at, error = v.error, billing = v.billing, chat_id = v.chat_id
    from jsonb_to_recordset(${JSON.stringify(values)}::jsonb) as v(id text, status text, status_at timestamptz, sent_at timestamptz,
      delivered_at timestamptz, read_at timestamptz, failed_at timestamptz, error jsonb, billing jsonb, chat_id text)
    where m.id = v.id`.execute(trx);
  // Campaign progress with the statuses; the events are only for whoever listens now.
  await applyMessageStatuses(trx, platform, announced);
  await platform.bus.publishAll(
    announced.map((data) => ({ type: 'message.status', workspaceId: byPn(items, data.phoneNumberId), data })),
    trx,
  );
}

function byPn(items: { pn: Ctx['pn'] }[], phoneNumberId: string): string {
  return items.find((i) => i.pn.id === phoneNumberId)!.pn.workspace_id;
}

/** The workspace's number the provider's id names, looked up once per batch (null: none, logged). */
async function numberOf(
  trx: Transaction<Database>,
  providerId: string | undefined,
  numbers: Map<string, Ctx['pn'] | undefined>,
  log: FastifyBaseLogger,
): Promise<Ctx['pn'] | undefined> {
  let pn = providerId ? numbers.get(providerId) : undefined;
  if (providerId && !numbers.has(providerId)) {
    pn = await trx
      .selectFrom('phone_numbers')
      .select(['id', 'workspace_id', 'display_phone_number', 'business_account_id'])
      .where('provider_phone_number_id', '=', providerId)
      .executeTakeFirst();
    numbers.set(providerId, pn);
  }
  if (!pn) log.warn({ phoneNumberId: providerId }, 'provider webhook: number of no workspace, ignored'); // bad-inputs E8
  return pn;
}

/** Statuses in one lock order; the sort is stable, and forward-only statuses make their order moot. */
function byWamid(statuses: S['ProviderStatus'][]): S['ProviderStatus'][] {
  return statuses.length < 2 ? statuses : [...statuses].sort((a, b) => compareIds(a.id, b.id));
}

/** Code-unit order of ids: the one lock order of statuses and of the wamid locks below. */
const compareIds = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Transaction-scoped locks on wamids, taken in the order byWamid gives statuses (so a delivery and
 * a recorder never wait on each other in a circle): a status that finds no message and the
 * recorder of that message serialize on it.
 */
async function lockWamids(trx: Transaction<Database>, wamids: string[]): Promise<void> {
  const sorted = [...new Set(wamids)].sort(compareIds);
  await sql`select pg_advisory_xact_lock(hashtextextended(w, 0)) from unnest(${sorted}::text[]) with ordinality as t(w, n) order by n`.execute(trx);
}

/**
 * Applies the statuses that arrived before these messages were recorded (kept by applyStatus), in
 * the recorder's transaction, after its rows are written: the campaign worker calls it for each
 * batch. Costs one lock statement and one indexed delete when none waited.
 */
export async function applyEarlyStatuses(
  trx: Transaction<Database>,
  platform: Platform,
  log: FastifyBaseLogger,
  recorded: { phoneNumberId: string; wamid: string }[],
): Promise<void> {
  if (!recorded.length) return;
  await lockWamids(
    trx,
    recorded.map((r) => r.wamid),
  );
  const pairs = recorded.map((r) => sql`(${r.phoneNumberId}, ${r.wamid})`);
  const early = await trx
    .deleteFrom('provider_early_statuses')
    .where(sql<boolean>`(phone_number_id, wamid) in (${sql.join(pairs)})`)
    .returning(['phone_number_id', 'payload'])
    .execute();
  if (!early.length) return;
  const numbers = await trx
    .selectFrom('phone_numbers')
    .select(['id', 'workspace_id', 'display_phone_number', 'business_account_id'])
    .where('id', 'in', [...new Set(early.map((e) => e.phone_number_id))])
    .execute();
  // `failed` (not ranked) last, after any state it may follow.
  const rank = (s: S['ProviderStatus']) => RANK.get(s.status) ?? RANK.size;
  const statuses = early
    .map((e) => ({ pn: numbers.find((n) => n.id === e.phone_number_id)!, s: e.payload as S['ProviderStatus'] }))
    // Each message's statuses in their order, so every step is recorded and announced.
    .sort((a, b) => compareIds(a.s.id, b.s.id) || rank(a.s) - rank(b.s));
  for (const { pn, s } of statuses) await applyStatus({ trx, platform, log, pn }, s);
}

/** Unix seconds as the provider sends them; never in the future (that would stretch the 24-hour window). */
function providerTime(timestamp: string, now: Date): Date {
  const seconds = Number(timestamp);
  return Number.isFinite(seconds) && seconds > 0 ? new Date(Math.min(seconds * 1000, now.getTime())) : now;
}

/** A location a phone can share: finite degrees within ±90 latitude and ±180 longitude. */
function locationInRange(location: { latitude: unknown; longitude: unknown }): boolean {
  const { latitude, longitude } = location;
  return typeof latitude === 'number' && typeof longitude === 'number' && Math.abs(latitude) <= 90 && Math.abs(longitude) <= 180;
}

async function receiveMessage({ trx, platform, log, pn }: Ctx, m: S['ProviderInboundMessage'], profileName: string | undefined) {
  if (!WA_ID.test(m.from)) return log.warn({ phoneNumberId: pn.id }, 'provider webhook: sender is not a phone number, ignored');
  // bad-inputs E15: a place no phone can be at is refused, never stored as something else (no
  // clamping, no 0); the delivery is still acknowledged, so the provider does not retry it.
  if (m.type === 'location' && m.location && !locationInRange(m.location)) {
    return log.warn(
      { phoneNumberId: pn.id, wamid: `${m.id.slice(0, 16)}…`, latitude: m.location.latitude, longitude: m.location.longitude },
      'provider webhook: location out of range (latitude within ±90, longitude within ±180 degrees), message refused',
    );
  }
  // bad-inputs E6: a redelivery, or the same id twice in one batch (the earlier insert is visible here).
  if (await trx.selectFrom('messages').select('id').where('provider_message_id', '=', m.id).executeTakeFirst()) return;
  const at = providerTime(m.timestamp, platform.now());
  // A notice from the provider is not the customer writing: it opens no 24-hour window.
  const notice = m.type === 'system';
  const inserted = await trx
    .insertInto('contacts')
    .values({ id: newId('ct'), workspace_id: pn.workspace_id, phone: `+${m.from}`, name: profileName ?? null, last_inbound_at: notice ? null : at })
    .onConflict((oc) =>
      oc.columns(['workspace_id', 'phone']).doUpdateSet({
        // A name the business gave the contact wins over the customer's profile name.
        name: sql`coalesce(contacts.name, excluded.name)`,
        last_inbound_at: sql`greatest(contacts.last_inbound_at, excluded.last_inbound_at)`,
        updated_at: platform.now(),
      }),
    )
    .returning(['id', 'name', 'phone', 'last_inbound_at'])
    .executeTakeFirstOrThrow();
  const contact = notice && m.system ? await applyNumberChange(trx, log, inserted, m.system, at) : inserted;
  const { type, content } = await inboundContent(trx, pn.workspace_id, m);
  const replyTo = m.context?.id
    ? await trx
        .selectFrom('messages')
        .select('id')
        .where('provider_message_id', '=', m.context.id)
        .where('workspace_id', '=', pn.workspace_id)
        .executeTakeFirst()
    : undefined;
  const messageId = newId('msg');
  if (type === 'unsupported') log.info({ type: m.type }, 'provider webhook: message type stored as unsupported');
  const row = await trx
    .insertInto('messages')
    .values({
      id: messageId,
      workspace_id: pn.workspace_id,
      phone_number_id: pn.id,
      contact_id: contact.id,
      reply_to_id: replyTo?.id ?? null,
      direction: 'inbound',
      type,
      content: JSON.stringify(content),
      provider_message_id: m.id,
      status: 'received',
      error: null,
      created_at: at,
      status_at: at,
    })
    // A concurrent delivery of the same id (another instance) waits on the unique index, then skips.
    .onConflict((oc) => oc.column('provider_message_id').where('provider_message_id', 'is not', null).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!row) return;
  const chatId = await touchChat(trx, { workspaceId: pn.workspace_id, phoneNumberId: pn.id, contactId: contact.id, messageId: row.id, at, inbound: true });
  await trx.updateTable('messages').set({ chat_id: chatId }).where('id', '=', row.id).execute();
  // A notice leaves the window as the customer's last message set it (closed, if they never wrote).
  const lastInbound = contact.last_inbound_at ? new Date(contact.last_inbound_at) : notice ? new Date(at.getTime() - WINDOW_MS) : at;
  await emitEvent(trx, {
    workspaceId: pn.workspace_id,
    api: 'messaging',
    type: 'message.received',
    at,
    data: {
      message: {
        id: row.id,
        wamid: m.id,
        chat_id: chatId,
        chatapp_phone_number: pn.display_phone_number,
        type,
        content: eventContent(content, platform.config.publicUrl, row.id),
        reply_to: replyTo?.id ?? null,
        created_at: at.toISOString(),
      },
      contact: { id: contact.id, contact_no: contact.phone, name: contact.name, profile_name: profileName ?? null },
      window_expires_at: new Date(lastInbound.getTime() + WINDOW_MS).toISOString(),
    },
  });
  if (notice) return; // nothing for bots, flows or LOGIN to answer
  const fullText = type === 'text' && typeof content.text === 'string' ? content.text : undefined;
  // LOGIN verification, kanban placement, the automation's due record: committed with the message.
  await runInboundSteps(trx, platform, {
    workspaceId: pn.workspace_id,
    messageId: row.id,
    contactId: contact.id,
    phoneNumberId: pn.id,
    businessAccountId: pn.business_account_id,
    chatId,
    from: `+${m.from}`,
    type,
    ...(fullText !== undefined ? { text: fullText } : {}),
  });
  const text = typeof content.text === 'string' && Buffer.byteLength(content.text) <= EVENT_TEXT_BYTES ? content.text : undefined;
  // A wake-up for what runs after the commit (automation dispatch); losing it only delays that.
  await platform.bus.publish(
    {
      type: 'message.received',
      workspaceId: pn.workspace_id,
      data: { messageId: row.id, contactId: contact.id, phoneNumberId: pn.id, from: `+${m.from}`, type, ...(text !== undefined ? { text } : {}) },
    },
    trx,
  );
}

function advances(from: string, to: string): boolean {
  if (from === 'failed' || !RANK.has(from)) return false; // terminal, or not an outbound state
  return to === 'failed' || (RANK.get(to) ?? -1) > RANK.get(from)!;
}

async function applyStatus({ trx, platform, log, pn }: Ctx, s: S['ProviderStatus']) {
  if (s.status !== 'failed' && !RANK.has(s.status)) return log.info({ status: s.status }, 'provider webhook: status value ignored');
  // Scoped to the number the change came for: another workspace's message is never touched (bad-inputs E8).
  // Rows are read FOR UPDATE: on PostgreSQL another delivery's status, or the send path storing
  // the provider's answer, can change the row between our read and our write; the lock makes us
  // wait for it and read the row as it then is, so a status is never lost to a concurrent one.
  const columns = ['id', 'status', 'contact_id', 'chat_id', 'sent_at', 'delivered_at', 'provider_message_id'] as const;
  const findByWamid = () =>
    trx
      .selectFrom('messages')
      .select(columns)
      .where('provider_message_id', '=', s.id)
      .where('phone_number_id', '=', pn.id)
      .where('direction', '=', 'outbound')
      .forUpdate()
      .executeTakeFirst();
  let message = await findByWamid();
  // No row has this wamid yet when the call timed out (bad-inputs F-9, row `unknown`) or when the status
  // overtook our write of the provider's answer (row still `pending`): our id came back in the
  // callback data. The send path settles `pending` rows only, so it never undoes this. A row whose
  // answer is being written as we look (locked, wamid not yet committed) is matched once it is.
  const opaque = s.biz_opaque_callback_data;
  if (!message && opaque && /^msg_[0-9A-Za-z]{20}$/.test(opaque)) {
    message = await trx
      .selectFrom('messages')
      .select(columns)
      .where('id', '=', opaque)
      .where('phone_number_id', '=', pn.id)
      .where('direction', '=', 'outbound')
      .where((eb) => eb.or([eb.and([eb('status', 'in', ['unknown', 'pending']), eb('provider_message_id', 'is', null)]), eb('provider_message_id', '=', s.id)]))
      .forUpdate()
      .executeTakeFirst();
    if (message?.provider_message_id === null) await trx.updateTable('messages').set({ provider_message_id: s.id }).where('id', '=', message.id).execute();
  }
  if (!message) {
    // The campaign worker may not have recorded its batch yet (or the message was sent outside
    // this server). Under the wamid's lock, which the recorder takes too, either its row is
    // committed and read now, or the status is kept for the recorder to apply (applyEarlyStatuses).
    await lockWamids(trx, [s.id]);
    message = await findByWamid();
    // Another number's message (bad-inputs E8): not early, not ours; nothing is kept.
    if (!message && (await trx.selectFrom('messages').select('id').where('provider_message_id', '=', s.id).executeTakeFirst())) {
      return log.info({ phoneNumberId: pn.id, status: s.status }, 'provider webhook: status for another number, ignored');
    }
    if (!message) {
      await trx
        .insertInto('provider_early_statuses')
        .values({ phone_number_id: pn.id, wamid: s.id, status: s.status, payload: JSON.stringify(s), received_at: platform.now() })
        .onConflict((oc) => oc.doNothing())
        .execute();
      return log.info({ phoneNumberId: pn.id, status: s.status, wamid: `${s.id.slice(0, 16)}…` }, 'provider webhook: status for an unknown message, kept');
    }
  }
  if (!advances(message.status, s.status)) return; // bad-inputs E7: forward only; the later state and its time stay
  const change = statusChange(message, s, platform.now());
  const { error, at, billing, times } = change;
  const result = await trx
    .updateTable('messages')
    .set({
      status: s.status,
      status_at: at,
      ...times,
      ...(error ? { error: JSON.stringify(error) } : {}),
      // The latest report wins; a status without billing (read) leaves the earlier one.
      ...(billing ? { billing: sql`coalesce(billing, '{}'::jsonb) || ${JSON.stringify(billing)}::jsonb` } : {}),
    })
    .where('id', '=', message.id)
    .where('status', '=', message.status) // compare-and-set against a concurrent delivery
    .executeTakeFirst();
  if (!Number(result.numUpdatedRows)) return;
  const contact = await trx.selectFrom('contacts').select('phone').where('id', '=', message.contact_id).executeTakeFirstOrThrow();
  // Messages written without a chat (by other senders) get theirs now.
  let chatId = message.chat_id;
  if (!chatId) {
    chatId = await ensureChat(trx, pn.workspace_id, pn.id, message.contact_id, at);
    await trx.updateTable('messages').set({ chat_id: chatId }).where('id', '=', message.id).execute();
  }
  const data = await announceStatus(trx, pn, s, message, chatId, contact.phone, change);
  // Campaign progress with the status itself; the event is only for whoever listens now.
  await applyMessageStatus(trx, platform, data);
  await platform.bus.publish({ type: 'message.status', workspaceId: pn.workspace_id, data }, trx);
}
