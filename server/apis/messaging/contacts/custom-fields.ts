// Custom fields: typed fields added to every contact. A `choice` field needs its choices; the
// other types take none. Keys are unique per workspace and never change, so stored values keep
// the type they were checked against.
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import { afterCursor, orderBy, sortedPage, sortKeySelection, type SortKey } from './keyset.js';
import { isUniqueViolation } from './storable.js';

type CustomField = components['schemas']['CustomField'];

const MAX_CHOICE_LENGTH = 100;

function checkChoices(type: string, choices: string[] | undefined): void {
  const fail = (detail: string) => new HttpProblem(422, 'unprocessable', `choices: ${detail}.`, { errors: [{ pointer: '/body/choices', detail }] });
  if (type !== 'choice') {
    if (choices !== undefined) throw fail(`only a choice field takes choices, not a ${type} field`);
    return;
  }
  if (!choices) throw fail('a choice field needs its choices');
  if (new Set(choices).size !== choices.length) throw fail('each choice must appear once');
  if (choices.some((c) => c.trim() === '' || c.length > MAX_CHOICE_LENGTH)) throw fail(`each choice must be 1–${MAX_CHOICE_LENGTH} characters and not blank`);
}

const view = (r: { id: string; key: string; label: string; type: CustomField['type']; options: string[] | null; created_at: Date }): CustomField => ({
  id: r.id,
  key: r.key,
  label: r.label,
  type: r.type,
  choices: r.options,
  created_at: r.created_at.toISOString(),
});

/** Oldest first: the order the fields were added in, as a form shows them. */
const OLDEST: SortKey = { name: 'created_at', column: 'custom_fields.created_at', type: 'time', dir: 'asc', id: 'custom_fields.id' };

export const listCustomFields: Handler<operations['listCustomFields']> = async (request) => {
  const { workspaceId } = authOf(request);
  const { secrets, store } = request.server.platform;
  const { limit = 20, cursor }: NonNullable<operations['listCustomFields']['parameters']['query']> = request.query ?? {};
  const scope = { workspaceId, operation: 'listCustomFields' };
  const after = afterCursor(secrets, scope, OLDEST, cursor);
  let query = store.db.selectFrom('custom_fields').selectAll().select(sortKeySelection(OLDEST)).where('workspace_id', '=', workspaceId);
  if (after) query = query.where(after);
  const rows = await query
    .orderBy(orderBy(OLDEST))
    .limit(limit + 1)
    .execute();
  return sortedPage(secrets, scope, OLDEST, rows, limit, (items) => items.map(view));
};

export const createCustomField: Handler<operations['createCustomField']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const { store, now } = request.server.platform;
  const body = request.body;
  checkChoices(body.type, body.choices);
  const duplicate = () =>
    new HttpProblem(409, 'conflict', `Custom field ${body.key} already exists.`, {
      errors: [{ pointer: '/body/key', detail: 'is the key of another custom field' }],
    });
  const existing = await store.db
    .selectFrom('custom_fields')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('key', '=', body.key)
    .executeTakeFirst();
  if (existing) throw duplicate();
  try {
    const row = await store.db
      .insertInto('custom_fields')
      .values({
        id: newId('cf'),
        workspace_id: workspaceId,
        key: body.key,
        label: body.label,
        type: body.type,
        options: body.choices ? JSON.stringify(body.choices) : null,
        created_at: now(),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    reply.code(201);
    return view(row);
  } catch (error) {
    if (isUniqueViolation(error)) throw duplicate();
    throw error;
  }
};
