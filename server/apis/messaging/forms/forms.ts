// Forms: create (the provider Flow is created at once, as a DRAFT, with the Flow JSON built from
// the fields), list per business account, publish. The provider's Flow id is the form's
// `flow.flow_id`, what automations and sends reference; the `form_…` id is for this API only.
import type { Selectable } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { decodeKeyset, keysetPage } from '#server/lib/cursor.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import { ProviderError } from '#server/providers/types.js';
import type { FormsTable } from '#server/store/schema/forms.js';
import { withProvider } from '../configuration/accounts.js';
import { accountFor } from '../bots/scope.js';
import { checkFields } from './fields.js';
import { buildFlowJson } from './flow-json.js';

type S = components['schemas'];
type FormRow = Selectable<FormsTable>;

export function formView(row: FormRow): S['Form'] {
  return {
    id: row.id,
    name: row.name,
    waba_id: row.business_account_id,
    category: row.category as S['FormCategory'],
    title: row.title,
    submit_label: row.submit_label,
    fields: row.fields as S['FormField'][],
    flow: { flow_id: row.provider_flow_id, status: row.flow_status },
    submission_count: row.submission_count,
    published_at: row.published_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

const nameTaken = (name: string) =>
  new HttpProblem(409, 'conflict', `A form named '${name}' already exists in this business account.`, {
    errors: [{ pointer: '/body/name', detail: 'already used in this business account' }],
  });

/** Creating a Flow: a refusal is the provider's (502, nothing stored); rate limits keep their 429, a refused token says to reconnect. */
function createProblem(error: unknown): unknown {
  if (!(error instanceof ProviderError)) return error;
  if (error.rateLimited || error.code === 190) return error.toProblem();
  const extra = error.code !== null ? { provider_code: error.code } : {};
  if (error.kind === 'timeout') {
    // The create may have happened: say so rather than claim a refusal.
    return new HttpProblem(
      502,
      'provider-error',
      'The chat provider did not answer in time. Nothing was stored; a draft Flow may remain at the provider.',
      extra,
    );
  }
  return new HttpProblem(502, 'provider-error', `The chat provider refused the Flow${error.details ? `: ${error.details}` : '.'} Nothing was stored.`, extra);
}

export const createForm: Handler<operations['createForm']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const body = request.body;
  const fields = await checkFields(db, workspaceId, body.fields);
  const account = await accountFor(db, workspaceId, body.waba_id, '/body/waba_id');
  const taken = await db.selectFrom('forms').select('id').where('business_account_id', '=', account.id).where('name', '=', body.name).executeTakeFirst();
  if (taken) throw nameTaken(body.name); // before the provider call: no Flow is made for a duplicate
  const id = newId('form');
  const title = body.title ?? body.name.slice(0, 30);
  const submitLabel = body.submit_label ?? 'Submit';
  const category = body.category ?? 'OTHER';
  const flowJson = buildFlowJson({ id, title, submit_label: submitLabel, fields });
  let flowId: string;
  try {
    ({ id: flowId } = await withProvider(platform, account, ({ provider, account: a }) =>
      provider.createFlow(a, { name: body.name, categories: [category], flowJson }),
    ));
  } catch (error) {
    throw createProblem(error);
  }
  const now = platform.now();
  const row = await db
    .insertInto('forms')
    .values({
      id,
      workspace_id: workspaceId,
      business_account_id: account.id,
      name: body.name,
      category,
      title,
      submit_label: submitLabel,
      fields: JSON.stringify(fields),
      provider_flow_id: flowId,
      flow_status: 'DRAFT',
      published_at: null,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.columns(['business_account_id', 'name']).doNothing())
    .returningAll()
    .executeTakeFirst();
  if (!row) throw nameTaken(body.name); // a concurrent create of the same name won
  reply.code(201);
  return formView(row);
};

export const listForms: Handler<operations['listForms']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const { waba_id: wabaRef, limit = 20, cursor } = request.query;
  const scope = { workspaceId, operation: 'listForms' };
  const after = decodeKeyset(platform.secrets, scope, cursor);
  const account = await accountFor(platform.store.db, workspaceId, wabaRef, '/query/waba_id');
  let query = platform.store.db.selectFrom('forms').selectAll().where('workspace_id', '=', workspaceId).where('business_account_id', '=', account.id);
  if (after) query = query.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  return keysetPage(platform.secrets, scope, rows, limit, formView);
};

const alreadyPublished = (row: FormRow) => new HttpProblem(409, 'conflict', `Form ${row.id} is already published (flow ${row.provider_flow_id}).`);

/** Publishing: the Flow's own errors are the caller's to fix (422 with provider_code); the provider's failures stay 502. */
function publishProblem(error: unknown, row: FormRow): unknown {
  if (!(error instanceof ProviderError)) return error;
  if (error.code === 139002) return alreadyPublished(row);
  const code = error.code ?? undefined;
  if (code !== undefined && (code === 100 || (code >= 139000 && code < 140000)) && (error.httpStatus ?? 0) < 500) {
    return new HttpProblem(422, 'unprocessable', `The chat provider refused to publish the Flow: ${error.details ?? error.message}`, { provider_code: code });
  }
  if (error.rateLimited || error.code === 190) return error.toProblem();
  return new HttpProblem(
    502,
    'provider-error',
    'The chat provider failed to publish the Flow; the form is still a draft.',
    code !== undefined ? { provider_code: code } : {},
  );
}

export const publishForm: Handler<operations['publishForm']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const { id } = request.params;
  const row = await db.selectFrom('forms').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
  if (!row) throw new HttpProblem(404, 'not-found', `No form ${id} in this workspace.`);
  if (row.flow_status === 'PUBLISHED') throw alreadyPublished(row);
  if (row.flow_status !== 'DRAFT') throw new HttpProblem(409, 'conflict', `Form ${row.id} is ${row.flow_status} at the provider and cannot be published.`);
  const account = await db.selectFrom('business_accounts').selectAll().where('id', '=', row.business_account_id).executeTakeFirstOrThrow();
  try {
    await withProvider(platform, account, ({ provider, account: a }) => provider.publishFlow(a, row.provider_flow_id));
  } catch (error) {
    throw publishProblem(error, row);
  }
  const now = platform.now();
  const updated = await db
    .updateTable('forms')
    .set({ flow_status: 'PUBLISHED', published_at: now, updated_at: now })
    .where('id', '=', row.id)
    .where('flow_status', '=', 'DRAFT')
    .returningAll()
    .executeTakeFirst();
  // A concurrent publish already stored it; the provider accepted ours too, so the outcome is the same.
  return formView(updated ?? (await db.selectFrom('forms').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow()));
};
