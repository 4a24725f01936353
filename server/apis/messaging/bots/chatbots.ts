// Chatbots: create, list (per business account), get with pairs, train. Training is checked as
// a whole before anything changes (empty questions, duplicates, the 1,000-pair limit: 422
// naming the pair), then applied in one transaction that locks the chatbot, so two trainings
// cannot interleave.
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { decodeKeyset, keysetPage } from '#server/lib/cursor.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Database } from '#server/store/schema.js';
import type { ChatbotFallbackRow, ChatbotsTable } from '#server/store/schema/bots.js';
import { accountFor, findAccountNumber, findAgent } from './scope.js';
import { questionKey } from './text-match.js';

type S = components['schemas'];
type ChatbotRow = Selectable<ChatbotsTable>;

/** The most pairs a chatbot knows (the contract's limit). */
export const MAX_PAIRS = 1000;

const notFound = (id: string) => new HttpProblem(404, 'not-found', `No chatbot ${id} in this workspace.`);

function view(row: ChatbotRow, qaCount: number): S['Chatbot'] {
  return {
    id: row.id,
    name: row.name,
    waba_id: row.business_account_id,
    phone_number_id: row.phone_number_id,
    status: row.status,
    match_threshold: row.match_threshold,
    fallback: row.fallback as S['ChatbotFallback'],
    qa_count: qaCount,
    trained_at: row.trained_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export const createChatbot: Handler<operations['createChatbot']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const body = request.body;
  const fallback: ChatbotFallbackRow = body.fallback ?? { action: 'none' };
  const bad = (pointer: string, detail: string) => new HttpProblem(400, 'validation', 'One or more fields are invalid.', { errors: [{ pointer, detail }] });
  if (fallback.action === 'reply' && !fallback.text) throw bad('/body/fallback/text', 'required when fallback.action is reply');
  if (fallback.action !== 'reply' && fallback.text !== undefined) throw bad('/body/fallback/text', 'only allowed when fallback.action is reply');
  if (fallback.action !== 'assign_agent' && fallback.agent_id !== undefined)
    throw bad('/body/fallback/agent_id', 'only allowed when fallback.action is assign_agent');
  const account = await accountFor(db, workspaceId, body.waba_id, '/body/waba_id');
  const phoneNumberId = body.phone_number_id ? await findAccountNumber(db, account, body.phone_number_id, '/body/phone_number_id') : null;
  if (fallback.agent_id) await findAgent(db, workspaceId, fallback.agent_id, '/body/fallback/agent_id');
  const now = platform.now();
  const row = await db
    .insertInto('chatbots')
    .values({
      id: newId('bot'),
      workspace_id: workspaceId,
      business_account_id: account.id,
      phone_number_id: phoneNumberId,
      name: body.name,
      status: body.status ?? 'active',
      match_threshold: body.match_threshold ?? 0.6,
      fallback: JSON.stringify(fallback),
      trained_at: null,
      last_assigned_owner_id: null,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  reply.code(201);
  return view(row, 0);
};

async function pairCounts(db: Kysely<Database>, ids: string[]) {
  if (!ids.length) return new Map<string, number>();
  const rows = await db
    .selectFrom('chatbot_qa_pairs')
    .select(['chatbot_id', (eb) => eb.fn.countAll<string>().as('n')])
    .where('chatbot_id', 'in', ids)
    .groupBy('chatbot_id')
    .execute();
  return new Map(rows.map((r) => [r.chatbot_id, Number(r.n)]));
}

export const listChatbots: Handler<operations['listChatbots']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const { waba_id: wabaRef, limit = 20, cursor } = request.query;
  const scope = { workspaceId, operation: 'listChatbots' };
  const after = decodeKeyset(platform.secrets, scope, cursor);
  const account = await accountFor(platform.store.db, workspaceId, wabaRef, '/query/waba_id');
  let query = platform.store.db.selectFrom('chatbots').selectAll().where('workspace_id', '=', workspaceId).where('business_account_id', '=', account.id);
  if (after) query = query.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const counts = await pairCounts(
    platform.store.db,
    rows.slice(0, limit).map((r) => r.id),
  );
  return keysetPage(platform.secrets, scope, rows, limit, (row) => view(row, counts.get(row.id) ?? 0));
};

export const getChatbot: Handler<operations['getChatbot']> = async (request) => {
  const { workspaceId } = authOf(request);
  const db = request.server.platform.store.db;
  const row = await db.selectFrom('chatbots').selectAll().where('id', '=', request.params.id).where('workspace_id', '=', workspaceId).executeTakeFirst();
  if (!row) throw notFound(request.params.id);
  const pairs = await db.selectFrom('chatbot_qa_pairs').selectAll().where('chatbot_id', '=', row.id).orderBy('position').execute();
  return {
    ...view(row, pairs.length),
    qa_pairs: pairs.map((p) => ({ question: p.question, ...(p.alternatives.length ? { alternatives: p.alternatives } : {}), answer: p.answer })),
  };
};

type Pair = S['ChatbotQaPair'];

/** The request's pairs keyed by normalised question; 422 naming a pair that is empty once normalised or repeats another. */
function checkedPairs(pairs: Pair[]): Map<string, Pair> {
  const byKey = new Map<string, Pair>();
  const errors: { pointer: string; detail: string }[] = [];
  pairs.forEach((pair, i) => {
    const key = questionKey(pair.question);
    if (!key) errors.push({ pointer: `/body/pairs/${i}/question`, detail: 'has no words once punctuation is removed' });
    else if (!pair.answer.trim()) errors.push({ pointer: `/body/pairs/${i}/answer`, detail: 'is blank' });
    else if (byKey.has(key)) {
      const first = pairs.indexOf(byKey.get(key)!);
      errors.push({ pointer: `/body/pairs/${i}/question`, detail: `repeats the question of pair ${first} ("${pairs[first]!.question}")` });
    } else byKey.set(key, pair);
    (pair.alternatives ?? []).forEach((alt, j) => {
      if (!questionKey(alt)) errors.push({ pointer: `/body/pairs/${i}/alternatives/${j}`, detail: 'has no words once punctuation is removed' });
    });
  });
  if (errors.length) {
    throw new HttpProblem(
      422,
      'unprocessable',
      errors.length === 1
        ? `Pair ${errors[0]!.pointer.split('/')[3]}: ${errors[0]!.detail}. Nothing was changed.`
        : `${errors.length} pairs are invalid. Nothing was changed.`,
      { errors },
    );
  }
  return byKey;
}

const sameList = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

export const trainChatbot: Handler<operations['trainChatbot']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const { id } = request.params;
  const mode = request.body.mode ?? 'append';
  const incoming = checkedPairs(request.body.pairs);
  const now = platform.now();
  return platform.store.db.transaction().execute(async (trx) => {
    const bot = await trx.selectFrom('chatbots').select('id').where('id', '=', id).where('workspace_id', '=', workspaceId).forUpdate().executeTakeFirst();
    if (!bot) throw notFound(id);
    const known = await trx.selectFrom('chatbot_qa_pairs').selectAll().where('chatbot_id', '=', id).orderBy('position').execute();
    const knownByKey = new Map(known.map((p) => [p.question_key, p]));
    let added = 0;
    let updated = 0;
    let removed = 0;
    if (mode === 'replace') {
      removed = known.length;
      if (incoming.size > MAX_PAIRS) throw tooMany(0, incoming.size, mode);
      await trx.deleteFrom('chatbot_qa_pairs').where('chatbot_id', '=', id).execute();
      let position = 0;
      for (const [key, pair] of incoming) {
        await insertPair(trx, id, position++, key, pair);
        added++;
      }
    } else {
      const fresh = [...incoming.keys()].filter((k) => !knownByKey.has(k)).length;
      if (known.length + fresh > MAX_PAIRS) throw tooMany(known.length, fresh, mode);
      let position = known.length ? Math.max(...known.map((p) => p.position)) + 1 : 0;
      for (const [key, pair] of incoming) {
        const existing = knownByKey.get(key);
        if (!existing) {
          await insertPair(trx, id, position++, key, pair);
          added++;
          continue;
        }
        const alternatives = pair.alternatives ?? [];
        if (existing.answer === pair.answer && existing.question === pair.question && sameList(existing.alternatives, alternatives)) continue;
        await trx
          .updateTable('chatbot_qa_pairs')
          .set({ question: pair.question, answer: pair.answer, alternatives: JSON.stringify(alternatives) })
          .where('chatbot_id', '=', id)
          .where('question_key', '=', key)
          .execute();
        updated++;
      }
    }
    await trx.updateTable('chatbots').set({ trained_at: now, updated_at: now }).where('id', '=', id).execute();
    const total = Number(
      (
        await trx
          .selectFrom('chatbot_qa_pairs')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('chatbot_id', '=', id)
          .executeTakeFirstOrThrow()
      ).n,
    );
    return { chatbot_id: id, mode, added, updated, removed: mode === 'replace' ? removed : 0, total, trained_at: now.toISOString() };
  });
};

function tooMany(known: number, adding: number, mode: string): HttpProblem {
  const detail =
    mode === 'replace'
      ? `Replacing with ${adding} pairs would exceed the limit of ${MAX_PAIRS}. Nothing was changed.`
      : `The chatbot knows ${known} pairs; appending ${adding} would exceed the limit of ${MAX_PAIRS}. Nothing was changed.`;
  return new HttpProblem(422, 'unprocessable', detail, {
    title: 'Too many pairs',
    errors: [{ pointer: '/body/pairs', detail: `at most ${MAX_PAIRS} pairs in total` }],
  });
}

async function insertPair(trx: Transaction<Database>, chatbotId: string, position: number, key: string, pair: Pair) {
  await trx
    .insertInto('chatbot_qa_pairs')
    .values({
      chatbot_id: chatbotId,
      position,
      question_key: key,
      question: pair.question,
      alternatives: JSON.stringify(pair.alternatives ?? []),
      answer: pair.answer,
    })
    .execute();
}
