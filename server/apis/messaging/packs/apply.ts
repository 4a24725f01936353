// Applying an industry pack. Templates missing on the account are submitted to the provider
// first (a provider call cannot sit inside a database transaction); then every row is written
// in ONE transaction, under a lock on the business account so concurrent applies take turns.
// A provider refusal stops before anything is written (502). Templates the provider accepted
// before a refusal are not lost: the next apply finds them at the provider and adopts them.
// Each item is matched before it is created (templates by name and language on the account,
// tags by name, custom fields by key, quick replies by shortcut, flows and funnels by pack key),
// so applying again creates nothing and lists the existing items as `already_present`.
import { sql, type Kysely, type Selectable, type SqlBool, type Transaction } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import { ProviderError, type ProviderKind, type TemplateCreated, type TemplateDefinitionComponent } from '#server/providers/types.js';
import type { BusinessAccountsTable, Database } from '#server/store/schema.js';
import type { PackItemKind } from '#server/store/schema/packs.js';
import { workspaceWritingLocale } from '../configuration/messaging-settings.js';
import {
  componentTexts,
  fill,
  fillDeep,
  industryPackIn,
  industryPacks,
  packFlowPriority,
  templateCreate,
  templateProblem,
  variablesIn,
  type PackData,
  type PackFlow,
} from './catalog.js';
import { languageFor, sameLanguage } from './languages.js';
import { holdsPlaceholder, packValues, placeholderProblem, unknownPack } from './values.js';

type S = components['schemas'];
type Item = S['IndustryPackAppliedItem'];
type Account = Selectable<BusinessAccountsTable>;
type Kind = keyof S['IndustryPackAppliedItems'];

const KIND: Record<Kind, PackItemKind> = {
  templates: 'template',
  tags: 'tag',
  custom_fields: 'custom_field',
  quick_replies: 'quick_reply',
  flows: 'flow',
  funnels: 'funnel',
};

const empty = (): S['IndustryPackAppliedItems'] => ({ templates: [], tags: [], custom_fields: [], quick_replies: [], flows: [], funnels: [] });

async function accountOf(db: Kysely<Database>, workspaceId: string, ref: string): Promise<Account> {
  const account = await db
    .selectFrom('business_accounts')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('disconnected_at', 'is', null)
    .where((eb) => eb.or([eb('id', '=', ref), eb('provider_waba_id', '=', ref)]))
    .executeTakeFirst();
  if (!account)
    throw new HttpProblem(404, 'not-found', `No business account ${ref} in this workspace.`, {
      errors: [{ pointer: '/body/waba_id', detail: 'unknown business account' }],
    });
  return account;
}

/** The values to fill in, or a 400 naming every variable that is unknown, missing or unusable. */
function checkVariables(pack: PackData, given: Record<string, string>): Record<string, string> {
  const errors: { pointer: string; detail: string }[] = [];
  const names = new Set(pack.variables.map((v) => v.name));
  for (const name of Object.keys(given))
    if (!names.has(name)) errors.push({ pointer: `/body/variables/${name}`, detail: `is not a variable of pack ${pack.slug}` });
  const placeholders = Object.entries(given)
    .filter(([k, v]) => names.has(k) && holdsPlaceholder(v))
    .map(([k]) => `/body/variables/${k}`);
  if (placeholders.length) throw placeholderProblem(placeholders);
  const { values, missing } = packValues(pack, given);
  for (const name of missing) errors.push({ pointer: `/body/variables/${name}`, detail: `required by pack ${pack.slug}` });
  const blank = Object.entries(given).filter(([k, v]) => names.has(k) && v.trim() === '');
  for (const [name] of blank) errors.push({ pointer: `/body/variables/${name}`, detail: 'must not be blank' });
  if (errors.length)
    throw new HttpProblem(400, 'validation', 'The pack needs a value for every required variable, and only for its own variables.', { errors });
  // A long value can push a template over the provider's limits: named here, not as a 502 later.
  for (const t of pack.templates) {
    const problem = templateProblem(templateCreate(pack, t, values));
    if (problem) {
      const texts = componentTexts(t);
      const culprits = variablesIn(problem.component !== null && texts[problem.component] !== undefined ? texts[problem.component] : texts.join('\n'), pack);
      throw new HttpProblem(400, 'validation', `With these values the template ${t.name} would be refused: ${problem.message}`, {
        errors: culprits.map((name) => ({ pointer: `/body/variables/${name}`, detail: `makes template ${t.name} invalid` })),
      });
    }
  }
  return values;
}

interface Submitted {
  key: string;
  created: TemplateCreated;
  /** Why the provider rejected it at once (its statuses say), as `POST /api/template/create` stores it. */
  reason: string | null;
}

/**
 * The provider's refusal as a problem this operation declares: rate limiting stays 429 (retry
 * later); anything else about a pack template is the provider's doing, not the caller's (502).
 */
function refusal(error: ProviderError, name: string): HttpProblem {
  const problem = error.toProblem();
  if (problem.status === 429) return problem;
  const extra = error.code !== null ? { provider_code: error.code } : {};
  return new HttpProblem(
    502,
    'provider-error',
    `The chat provider refused template ${name}; nothing was created. ${problem.problem.detail ?? ''}`.trim(),
    extra,
  );
}

/** Submits the missing templates; adopts one the provider already holds (an earlier apply cut short). */
async function submitTemplates(
  platform: Platform,
  account: Account,
  pack: PackData,
  missing: PackData['templates'],
  values: Record<string, string>,
): Promise<Submitted[]> {
  const provider = platform.provider(account.kind as ProviderKind);
  const ref = { wabaId: account.provider_waba_id, accessToken: account.access_token_enc ? platform.secrets.decrypt(account.access_token_enc) : null };
  const out: Submitted[] = [];
  for (const t of missing) {
    const body = templateCreate(pack, t, values);
    let created: TemplateCreated;
    try {
      created = await provider.createTemplate(ref, {
        name: body.name,
        language: body.language,
        category: body.category,
        allowCategoryChange: false,
        components: body.components as unknown as TemplateDefinitionComponent[],
      });
    } catch (error) {
      if (!(error instanceof ProviderError)) throw error;
      const known = await provider.getTemplateStatuses(ref, [{ name: t.name, language: pack.language, category: t.category }]).catch(() => []);
      const found = known.find((k) => k.name === t.name && k.language === pack.language);
      if (!found) throw refusal(error, t.name);
      out.push({ key: t.key, created: { id: found.id, status: found.status, category: found.category }, reason: found.rejectedReason });
      continue;
    }
    let reason: string | null = null;
    if (created.status === 'REJECTED') {
      const info = await provider
        .getTemplateStatuses(ref, [{ id: created.id, name: t.name, language: pack.language, category: created.category }])
        .catch(() => []);
      reason = info[0]?.rejectedReason ?? null;
    }
    out.push({ key: t.key, created, reason });
  }
  return out;
}

async function existingTemplates(db: Kysely<Database>, account: Account, pack: PackData) {
  if (!pack.templates.length) return new Map<string, { id: string; name: string }>();
  const rows = await db
    .selectFrom('message_templates')
    .select(['id', 'name'])
    .where('business_account_id', '=', account.id)
    .where('language', '=', pack.language)
    .where(
      'name',
      'in',
      pack.templates.map((t) => t.name),
    )
    .execute();
  return new Map(rows.map((r) => [r.name, r]));
}

/** The id recorded for a flow or funnel of this pack on this account, if the resource still exists. */
async function recorded(
  trx: Transaction<Database>,
  workspaceId: string,
  account: Account,
  slug: string,
  kind: 'flow' | 'funnel',
): Promise<Map<string, string>> {
  const items = await trx
    .selectFrom('industry_pack_items')
    .select(['key', 'resource_id'])
    .where('workspace_id', '=', workspaceId)
    .where('business_account_id', '=', account.id)
    .where('slug', '=', slug)
    .where('kind', '=', kind)
    .execute();
  if (!items.length) return new Map();
  const ids = items.map((i) => i.resource_id);
  // A flow or funnel deleted since is created again.
  const alive =
    kind === 'flow'
      ? await trx.selectFrom('automation_flows').select('id').where('workspace_id', '=', workspaceId).where('id', 'in', ids).execute()
      : await trx.selectFrom('kanban_funnels').select('id').where('workspace_id', '=', workspaceId).where('id', 'in', ids).execute();
  const exists = new Set(alive.map((r) => r.id));
  return new Map(items.filter((i) => exists.has(i.resource_id)).map((i) => [i.key, i.resource_id]));
}

/** Replaces `pack:tag/<key>` and `pack:template/<key>` with the workspace's ids. */
function resolveRefs<T>(value: T, ids: { tag: Map<string, string>; template: Map<string, string> }): T {
  return JSON.parse(JSON.stringify(value), (_k, v) => {
    const ref = typeof v === 'string' ? /^pack:(tag|template)\/([a-z][a-z0-9_]*)$/.exec(v) : null;
    return ref ? ids[ref[1] as 'tag' | 'template'].get(ref[2]) : v;
  });
}

export const applyIndustryPack: Handler<operations['applyIndustryPack']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const body = request.body;
  const base = industryPacks().get(body.slug);
  if (!base) throw unknownPack(body.slug, '/body/slug');
  const { pack, warnings } = await packForWorkspace(db, workspaceId, base, body.language);
  const values = checkVariables(pack, body.variables ?? {});
  const account = await accountOf(db, workspaceId, body.waba_id);

  const before = await existingTemplates(db, account, pack);
  const submitted = await submitTemplates(
    platform,
    account,
    pack,
    pack.templates.filter((t) => !before.has(t.name)),
    values,
  );

  const now = platform.now();
  const created = empty();
  const present = empty();
  const note = (kind: Kind, isNew: boolean, item: Item) => (isNew ? created : present)[kind].push(item);

  await db.transaction().execute(async (trx) => {
    await trx.selectFrom('business_accounts').select('id').where('id', '=', account.id).forUpdate().execute();
    const ids = { tag: new Map<string, string>(), template: new Map<string, string>() };

    const templates = await existingTemplates(trx, account, pack);
    for (const t of pack.templates) {
      const have = templates.get(t.name);
      const sub = submitted.find((s) => s.key === t.key);
      if (have || !sub) {
        // Present already (or created by a concurrent apply since the check above).
        const row = have ?? (await existingTemplates(trx, account, pack)).get(t.name);
        if (!row) throw new Error(`template ${t.name} was neither found nor submitted`);
        ids.template.set(t.key, row.id);
        note('templates', false, { key: t.key, id: row.id, name: t.name });
        continue;
      }
      const id = newId('tpl');
      const components = templateCreate(pack, t, values).components;
      await trx
        .insertInto('message_templates')
        .values({
          id,
          workspace_id: workspaceId,
          business_account_id: account.id,
          provider_template_id: sub.created.id,
          name: t.name,
          language: pack.language,
          category: sub.created.category,
          status: sub.created.status,
          rejected_reason: sub.reason,
          components: JSON.stringify(components),
          created_at: now,
          updated_at: now,
        })
        .execute();
      ids.template.set(t.key, id);
      note('templates', true, { key: t.key, id, name: t.name });
    }

    for (const tag of pack.tags) {
      const row = await trx
        .insertInto('tags')
        .values({ id: newId('tag'), workspace_id: workspaceId, name: tag.name, color: tag.color, created_at: now })
        .onConflict((oc) => oc.doNothing())
        .returning('id')
        .executeTakeFirst();
      const id =
        row?.id ??
        (
          await trx
            .selectFrom('tags')
            .select('id')
            .where('workspace_id', '=', workspaceId)
            .where(sql<SqlBool>`lower(name) = lower(${tag.name})`)
            .executeTakeFirstOrThrow()
        ).id;
      ids.tag.set(tag.key, id);
      note('tags', !!row, { key: tag.key, id, name: tag.name });
    }

    for (const field of pack.custom_fields) {
      const row = await trx
        .insertInto('custom_fields')
        .values({ id: newId('cf'), workspace_id: workspaceId, key: field.key, label: field.name, type: field.type, options: null, created_at: now })
        .onConflict((oc) => oc.doNothing())
        .returning('id')
        .executeTakeFirst();
      const id =
        row?.id ??
        (await trx.selectFrom('custom_fields').select('id').where('workspace_id', '=', workspaceId).where('key', '=', field.key).executeTakeFirstOrThrow()).id;
      note('custom_fields', !!row, { key: field.key, id, name: field.name });
    }

    for (const q of pack.quick_replies) {
      const text = fill(q.text, values);
      const row = await trx
        .insertInto('quick_replies')
        .values({ id: newId('qr'), workspace_id: workspaceId, shortcut: q.shortcut, title: q.title, text, created_at: now, updated_at: now })
        .onConflict((oc) => oc.doNothing())
        .returning('id')
        .executeTakeFirst();
      const id =
        row?.id ??
        (
          await trx
            .selectFrom('quick_replies')
            .select('id')
            .where('workspace_id', '=', workspaceId)
            .where('shortcut', '=', q.shortcut)
            .executeTakeFirstOrThrow()
        ).id;
      note('quick_replies', !!row, { key: q.shortcut, id, name: q.shortcut });
    }

    const flows = await recorded(trx, workspaceId, account, pack.slug, 'flow');
    for (const [index, flow] of pack.flows.entries()) {
      const id = flows.get(flow.key) ?? (await insertFlow(trx, workspaceId, account, flow, packFlowPriority(flow, index), values, ids, now));
      note('flows', !flows.has(flow.key), { key: flow.key, id, name: flow.name });
    }

    const funnels = await recorded(trx, workspaceId, account, pack.slug, 'funnel');
    for (const funnel of pack.funnels) {
      let id = funnels.get(funnel.key);
      if (!id) {
        id = newId('fnl');
        await trx
          .insertInto('kanban_funnels')
          .values({ id, workspace_id: workspaceId, business_account_id: account.id, name: funnel.name, created_at: now, updated_at: now })
          .execute();
        await trx
          .insertInto('kanban_stages')
          .values(funnel.stages.map((s, position) => ({ funnel_id: id!, key: s.key, name: s.name, color: s.color, position })))
          .execute();
      }
      note('funnels', !funnels.has(funnel.key), { key: funnel.key, id, name: funnel.name });
    }

    const items = (Object.keys(KIND) as Kind[]).flatMap((kind) => [...created[kind], ...present[kind]].map((item) => ({ kind: KIND[kind], item })));
    await trx
      .insertInto('industry_pack_items')
      .values(
        items.map(({ kind, item }) => ({
          workspace_id: workspaceId,
          business_account_id: account.id,
          slug: pack.slug,
          kind,
          key: item.key,
          resource_id: item.id,
          created_at: now,
        })),
      )
      .onConflict((oc) =>
        oc.columns(['workspace_id', 'business_account_id', 'slug', 'kind', 'key']).doUpdateSet((eb) => ({ resource_id: eb.ref('excluded.resource_id') })),
      )
      .execute();
    await trx
      .insertInto('industry_pack_applications')
      .values({
        workspace_id: workspaceId,
        business_account_id: account.id,
        slug: pack.slug,
        version: pack.version,
        first_applied_at: now,
        last_applied_at: now,
      })
      .onConflict((oc) => oc.columns(['workspace_id', 'business_account_id', 'slug']).doUpdateSet({ version: pack.version, last_applied_at: now }))
      .execute();
  });
  return { slug: pack.slug, version: pack.version, waba_id: account.id, created, already_present: present, language: pack.language, warnings };
};

/**
 * The pack in the language asked for, else in the workspace's (its locale, else its country's
 * language), else in its base language; with a warning when the texts set up are not in the
 * workspace's language, so nobody applies English replies to a German business unknowingly.
 */
async function packForWorkspace(db: Kysely<Database>, workspaceId: string, base: PackData, asked: string | undefined) {
  const languages = base.languages ?? [base.language];
  if (asked !== undefined && !languages.includes(asked))
    throw new HttpProblem(400, 'validation', `Pack ${base.slug} has no texts in ${asked}; it has ${languages.join(', ')}.`, {
      errors: [{ pointer: '/body/language', detail: `is not one of the pack's languages (${languages.join(', ')})` }],
    });
  const locale = await workspaceWritingLocale(db, workspaceId);
  const chosen = asked ?? (locale ? languageFor(locale, languages) : null) ?? base.language;
  const pack = industryPackIn(base.slug, chosen) ?? base;
  const warnings: S['IndustryPackWarning'][] = [];
  if (locale && !sameLanguage(pack.language, locale))
    warnings.push({
      code: 'language_mismatch',
      message: languageFor(locale, languages)
        ? `The workspace writes ${locale}; pack ${base.slug}'s ${pack.language} texts were set up as asked.`
        : `The workspace writes ${locale}; pack ${base.slug} has no texts in it (only ${languages.join(', ')}), so its ${pack.language} texts were set up.`,
    });
  return { pack, warnings };
}

/** A flow of the pack, inactive, its references and variables resolved; its first version stored. */
async function insertFlow(
  trx: Transaction<Database>,
  workspaceId: string,
  account: Account,
  flow: PackFlow,
  priority: number,
  values: Record<string, string>,
  ids: { tag: Map<string, string>; template: Map<string, string> },
  now: Date,
): Promise<string> {
  const id = newId('flow');
  const graph = resolveRefs({ triggers: flow.triggers, nodes: fillDeep(flow.nodes, values), connections: flow.connections }, ids);
  await trx
    .insertInto('automation_flows')
    .values({
      id,
      workspace_id: workspaceId,
      business_account_id: account.id,
      phone_number_id: null,
      name: flow.name,
      description: flow.description,
      status: 'inactive',
      priority,
      version: 1,
      created_at: now,
      updated_at: now,
    })
    .execute();
  await trx
    .insertInto('automation_flow_versions')
    .values({ flow_id: id, version: 1, graph: JSON.stringify(graph), created_at: now })
    .execute();
  return id;
}
