// Messaging templates: create (checked as the provider checks, media samples fetched through the
// SSRF guard and, on the Cloud API, uploaded for their header handles), list, validate a media
// URL (stores nothing), sync review statuses from the provider.
import type { Kysely } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { decodeKeyset, keysetPage } from '#server/lib/cursor.js';
import type { Handler, Handlers } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import { UnsafeUrlError } from '#server/lib/safe-fetch.js';
import type { Platform } from '#server/platform.js';
import { ProviderError, type ProviderKind, type TemplateDefinitionComponent } from '#server/providers/types.js';
import type { Database } from '#server/store/schema.js';
import { emitEvent } from '#server/apis/webhooks/emit.js';
import { deleteTemplate } from './delete.js';
import type { TemplateRow } from './lookup.js';
import { probeMedia, unsafeProblem } from './media.js';
import { fetchSample, withHeaderHandles } from './samples.js';
import { checkTemplate, mediaHeaders } from './rules.js';

type S = components['schemas'];
const QUALITY = new Set(['GREEN', 'YELLOW', 'RED', 'UNKNOWN']);

export function templateView(row: TemplateRow): S['Template'] {
  return {
    id: row.id,
    waba_id: row.business_account_id,
    provider_template_id: row.provider_template_id,
    name: row.name,
    language: row.language,
    category: row.category,
    status: row.status,
    rejected_reason: row.rejected_reason,
    quality_rating: row.quality_rating && QUALITY.has(row.quality_rating) ? (row.quality_rating as S['QualityRating']) : null,
    components: row.components as S['TemplateComponent'][],
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}

/** The workspace's business account by our id or the provider's; without one, the only account (422 when several). */
async function accountOf(db: Kysely<Database>, workspaceId: string, ref: string | undefined, pointer: string) {
  let query = db.selectFrom('business_accounts').selectAll().where('workspace_id', '=', workspaceId).where('disconnected_at', 'is', null);
  if (ref !== undefined) query = query.where((eb) => eb.or([eb('id', '=', ref), eb('provider_waba_id', '=', ref)]));
  const rows = await query.limit(2).execute();
  if (ref !== undefined && rows.length === 0)
    throw new HttpProblem(404, 'not-found', 'No such business account in this workspace.', { errors: [{ pointer, detail: 'unknown business account' }] });
  if (rows.length === 0)
    throw new HttpProblem(422, 'unprocessable', 'The workspace has no connected business account.', {
      errors: [{ pointer, detail: 'connect an account first' }],
    });
  if (rows.length > 1)
    throw new HttpProblem(422, 'unprocessable', 'The workspace has several business accounts: give waba_id.', {
      errors: [{ pointer, detail: 'required when the workspace has more than one account' }],
    });
  return rows[0];
}

function providerAccount(platform: Platform, account: { kind: string; provider_waba_id: string; access_token_enc: string | null }) {
  return {
    provider: platform.provider(account.kind as ProviderKind),
    ref: { wabaId: account.provider_waba_id, accessToken: account.access_token_enc ? platform.secrets.decrypt(account.access_token_enc) : null },
  };
}

const createTemplate: Handler<operations['createTemplate']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const body = request.body;
  const account = await accountOf(db, workspaceId, body.waba_id, '/body/waba_id');
  checkTemplate(body);
  const exists = await db
    .selectFrom('message_templates')
    .select('id')
    .where('business_account_id', '=', account.id)
    .where('name', '=', body.name)
    .where('language', '=', body.language)
    .executeTakeFirst();
  if (exists)
    throw new HttpProblem(409, 'conflict', `The account already has a template ${body.name} in ${body.language}.`, {
      errors: [{ pointer: '/body/name', detail: 'name and language are taken' }],
    });

  const media = mediaHeaders(body);
  const cloud = account.kind !== 'sandbox';
  if (media.length && cloud && !platform.config.providerAppId) {
    // Checked before the samples are fetched: without the app id there is nowhere to upload them.
    throw new HttpProblem(
      422,
      'unprocessable',
      'Media samples for Cloud API templates need the Meta app id (PROVIDER_APP_ID), which this server does not have; use a TEXT header or none.',
      {
        errors: [{ pointer: media[0].pointer, detail: 'the server has no PROVIDER_APP_ID to upload the sample with' }],
      },
    );
  }
  // The samples must be usable now: the sandbox's provider fetches them during review, the Cloud API gets their bytes.
  const samples = [];
  for (const m of media) samples.push(await fetchSample(platform, m));

  const { provider, ref } = providerAccount(platform, account);
  const components =
    cloud && samples.length ? await withHeaderHandles(provider, ref, body.components, samples) : (body.components as unknown as TemplateDefinitionComponent[]);
  let created;
  try {
    created = await provider.createTemplate(ref, {
      name: body.name,
      language: body.language,
      category: body.category,
      allowCategoryChange: body.allow_category_change ?? false,
      components,
    });
  } catch (error) {
    throw error instanceof ProviderError ? error.toProblem() : error;
  }
  // A template rejected at once: its reason comes with the statuses.
  let reason: string | null = null;
  if (created.status === 'REJECTED') {
    const info = await provider
      .getTemplateStatuses(ref, [{ id: created.id, name: body.name, language: body.language, category: created.category }])
      .catch(() => []);
    reason = info[0]?.rejectedReason ?? null;
  }
  const now = platform.now();
  let row: TemplateRow;
  try {
    row = await db
      .insertInto('message_templates')
      .values({
        id: newId('tpl'),
        workspace_id: workspaceId,
        business_account_id: account.id,
        provider_template_id: created.id,
        name: body.name,
        language: body.language,
        category: created.category,
        status: created.status,
        components: JSON.stringify(body.components),
        rejected_reason: reason,
        allow_category_change: body.allow_category_change ?? false,
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  } catch (error) {
    // A concurrent create of the same name and language won the unique index.
    if ((error as { code?: string }).code === '23505')
      throw new HttpProblem(409, 'conflict', `The account already has a template ${body.name} in ${body.language}.`);
    throw error;
  }
  reply.code(201);
  return templateView(row);
};

const listTemplates: Handler<operations['listTemplates']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const q = (request.query ?? {}) as NonNullable<operations['listTemplates']['parameters']['query']>;
  const limit = q.limit ?? 20;
  const scope = { workspaceId, operation: 'listTemplates' };
  const after = decodeKeyset(platform.secrets, scope, q.cursor);
  let query = db.selectFrom('message_templates').selectAll().where('workspace_id', '=', workspaceId);
  if (q.waba_id !== undefined) query = query.where('business_account_id', '=', (await accountOf(db, workspaceId, q.waba_id, '/query/waba_id')).id);
  if (q.status) query = query.where('status', '=', q.status);
  if (q.category) query = query.where('category', '=', q.category);
  if (q.name) query = query.where('name', '=', q.name);
  if (after)
    query = query.where((eb) => eb.or([eb('created_at', '<', after.createdAt), eb.and([eb('created_at', '=', after.createdAt), eb('id', '<', after.id)])]));
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  return keysetPage(platform.secrets, scope, rows, limit, templateView);
};

const validateMediaUrl: Handler<operations['validateMediaUrl']> = async (request) => {
  authOf(request);
  const platform = request.server.platform;
  try {
    return await probeMedia(platform, request.body.url, request.body.kind);
  } catch (error) {
    if (error instanceof UnsafeUrlError) throw unsafeProblem(error, '/body/url');
    throw error;
  }
};

const syncTemplateStatus: Handler<operations['syncTemplateStatus']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const wabaRef = (request.query as { waba_id?: string } | undefined)?.waba_id;
  let accounts = await db.selectFrom('business_accounts').selectAll().where('workspace_id', '=', workspaceId).where('disconnected_at', 'is', null).execute();
  if (wabaRef !== undefined) {
    accounts = accounts.filter((a) => a.id === wabaRef || a.provider_waba_id === wabaRef);
    if (!accounts.length)
      throw new HttpProblem(404, 'not-found', 'No such business account in this workspace.', {
        errors: [{ pointer: '/query/waba_id', detail: 'unknown business account' }],
      });
  }
  let checked = 0;
  const changed: S['Template'][] = [];
  for (const account of accounts) {
    const templates = await db
      .selectFrom('message_templates')
      .selectAll()
      .where('business_account_id', '=', account.id)
      .where('workspace_id', '=', workspaceId)
      .execute();
    if (!templates.length) continue;
    const { provider, ref } = providerAccount(platform, account);
    let infos;
    try {
      infos = await provider.getTemplateStatuses(
        ref,
        templates.map((t) => ({ id: t.provider_template_id, name: t.name, language: t.language, category: t.category })),
      );
    } catch (error) {
      throw error instanceof ProviderError ? error.toProblem() : error;
    }
    checked += templates.length;
    for (const t of templates) {
      const info = infos.find((i) => (t.provider_template_id && i.id === t.provider_template_id) || (i.name === t.name && i.language === t.language));
      if (!info) continue;
      const quality = info.qualityScore && QUALITY.has(info.qualityScore) ? info.qualityScore : t.quality_rating;
      const reason = info.status === 'APPROVED' || info.status === 'PENDING' ? null : (info.rejectedReason ?? t.rejected_reason);
      if (info.status === t.status && info.category === t.category && quality === t.quality_rating && reason === t.rejected_reason) continue;
      const now = platform.now();
      const row = await db.transaction().execute(async (trx) => {
        const updated = await trx
          .updateTable('message_templates')
          .set({
            status: info.status,
            category: info.category,
            quality_rating: quality,
            rejected_reason: reason,
            provider_template_id: info.id,
            updated_at: now,
          })
          .where('id', '=', t.id)
          .returningAll()
          .executeTakeFirstOrThrow();
        if (info.status !== t.status) {
          await emitEvent(trx, {
            workspaceId,
            api: 'messaging',
            type: 'template.status_updated',
            at: now,
            data: {
              template_id: t.id,
              waba_id: account.id,
              name: t.name,
              language: t.language,
              category: info.category,
              status: info.status,
              previous_status: t.status,
              reason,
            },
          });
        }
        return updated;
      });
      changed.push(templateView(row));
    }
  }
  return { synced_at: platform.now().toISOString(), checked, changed };
};

export const templateHandlers: Handlers<operations> = { createTemplate, listTemplates, validateMediaUrl, syncTemplateStatus, deleteTemplate };
