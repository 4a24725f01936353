// Message bots: keyword and schedule-based auto-replies, created and listed per business
// account. Everything a reply needs is checked at creation (template approved and without
// variables, media URL public), so a bot never fails at the moment it should answer.
import type { Selectable } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { decodeKeyset, keysetPage } from '#server/lib/cursor.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import type { MessageBotReplyRow, MessageBotScheduleRow, MessageBotsTable } from '#server/store/schema/bots.js';
import { checkMediaUrl } from '../outbound/media-url.js';
import { accountFor, findAccountNumber, type AccountRow } from './scope.js';
import { isTimeZone } from './schedule.js';
import { words } from './text-match.js';

type S = components['schemas'];
type Row = Selectable<MessageBotsTable>;

const invalid = (pointer: string, detail: string) => new HttpProblem(400, 'validation', 'One or more fields are invalid.', { errors: [{ pointer, detail }] });

function view(row: Row): S['MessageBot'] {
  return {
    id: row.id,
    name: row.name,
    waba_id: row.business_account_id,
    phone_number_id: row.phone_number_id,
    kind: row.kind,
    status: row.status,
    keywords: row.keywords,
    match: row.match,
    schedule: row.schedule as S['MessageBotSchedule'] | null,
    reply: row.reply as S['MessageBotReply'],
    cooldown_minutes: row.cooldown_minutes,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

function checkSchedule(schedule: S['MessageBotSchedule']): MessageBotScheduleRow {
  if (!isTimeZone(schedule.timezone)) throw invalid('/body/schedule/timezone', 'is not an IANA time zone (e.g. Europe/Berlin)');
  schedule.windows.forEach((w, i) => {
    if (w.start === w.end) throw invalid(`/body/schedule/windows/${i}/end`, 'equals start: the window would be empty');
    if (new Set(w.days).size !== w.days.length) throw invalid(`/body/schedule/windows/${i}/days`, 'names a day twice');
  });
  return { timezone: schedule.timezone, windows: schedule.windows.map((w) => ({ days: w.days, start: w.start, end: w.end })), reply_when: schedule.reply_when };
}

/** The reply with only the fields of its type; 400/404/422 naming the field at fault. */
async function checkReply(platform: Platform, account: AccountRow, reply: S['MessageBotReplyCreate']): Promise<MessageBotReplyRow> {
  // The contract's union by `type` (validated before this runs) gives each type its own fields.
  if (reply.type === 'text') return { type: 'text', text: reply.text };
  if (reply.type === 'media') {
    if (reply.media_type === 'audio' && reply.caption) throw invalid('/body/reply/caption', 'audio has no caption');
    await checkMediaUrl(platform, reply.media_url, '/body/reply/media_url');
    return { type: 'media', media_type: reply.media_type, media_url: reply.media_url, ...(reply.caption ? { caption: reply.caption } : {}) };
  }
  const db = platform.store.db;
  let query = db
    .selectFrom('message_templates')
    .select(['id', 'name', 'language', 'status', 'components'])
    .where('id', '=', reply.template_id)
    .where('workspace_id', '=', account.workspace_id)
    .where('business_account_id', '=', account.id);
  if (reply.language) query = query.where('language', '=', reply.language);
  const template = await query.executeTakeFirst();
  const pointer = '/body/reply/template_id';
  if (!template)
    throw new HttpProblem(
      404,
      'not-found',
      `No template ${reply.template_id}${reply.language ? ` (${reply.language})` : ''} in business account ${account.id}.`,
      { errors: [{ pointer, detail: 'unknown template' }] },
    );
  if (template.status !== 'APPROVED')
    throw new HttpProblem(422, 'unprocessable', `Template ${template.name} is ${template.status}; only APPROVED templates can be sent.`, {
      errors: [{ pointer, detail: 'template not approved' }],
    });
  // A bot sends the template as it is: variables or a media header would need values per message.
  const text = JSON.stringify(template.components);
  if (/\{\{[^}]*\}\}/.test(text) || /"format":"(IMAGE|VIDEO|DOCUMENT|LOCATION)"/i.test(text)) {
    throw new HttpProblem(422, 'unprocessable', `Template ${template.name} has variables or a media header; a message bot sends templates without values.`, {
      errors: [{ pointer, detail: 'template needs values' }],
    });
  }
  return { type: 'template', template_id: template.id, language: template.language };
}

export const createMessageBot: Handler<operations['createMessageBot']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const body = request.body;
  let keywords: string[] = [];
  let schedule: MessageBotScheduleRow | null = null;
  // The contract's union by `kind` (validated before this runs) gives each kind its own fields.
  if (body.kind === 'keyword') {
    body.keywords.forEach((k, i) => {
      if (!words(k).length) throw invalid(`/body/keywords/${i}`, 'has no letters or digits');
    });
    keywords = [...new Set(body.keywords.map((k) => k.trim()))];
  } else {
    schedule = checkSchedule(body.schedule);
  }
  const account = await accountFor(db, workspaceId, body.waba_id, '/body/waba_id');
  const phoneNumberId = body.phone_number_id ? await findAccountNumber(db, account, body.phone_number_id, '/body/phone_number_id') : null;
  // openapi-typescript types a union nested in a discriminated branch without its own
  // discriminator (Omit<…, 'type'>); the validated body has it.
  const replyRow = await checkReply(platform, account, body.reply as S['MessageBotReplyCreate']);
  const now = platform.now();
  const row = await db
    .insertInto('message_bots')
    .values({
      id: newId('mbot'),
      workspace_id: workspaceId,
      business_account_id: account.id,
      phone_number_id: phoneNumberId,
      name: body.name,
      kind: body.kind,
      status: body.status ?? 'active',
      keywords: JSON.stringify(keywords),
      match: body.kind === 'keyword' ? (body.match ?? 'exact') : null,
      schedule: schedule ? JSON.stringify(schedule) : null,
      reply: JSON.stringify(replyRow),
      cooldown_minutes: body.cooldown_minutes ?? 0,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  reply.code(201);
  return view(row);
};

export const listMessageBots: Handler<operations['listMessageBots']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const { waba_id: wabaRef, limit = 20, cursor } = request.query;
  const scope = { workspaceId, operation: 'listMessageBots' };
  const after = decodeKeyset(platform.secrets, scope, cursor);
  const account = await accountFor(platform.store.db, workspaceId, wabaRef, '/query/waba_id');
  let query = platform.store.db.selectFrom('message_bots').selectAll().where('workspace_id', '=', workspaceId).where('business_account_id', '=', account.id);
  if (after) query = query.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  return keysetPage(platform.secrets, scope, rows, limit, view);
};
