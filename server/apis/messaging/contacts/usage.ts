// What still uses a tag, segment, custom field or template: deleting one of them while a campaign,
// a segment or an automation refers to it would break that user later (a campaign sending to
// nobody, a flow node failing), so the delete answers 409 naming the first user found. Ids are
// random and unique, so "refers to" is their quoted form inside the user's stored JSON; names and
// keys are looked up where they are stored by name (segment filters, campaign audiences).
import { sql, type Kysely, type SqlBool } from 'kysely';
import { HttpProblem } from '#server/lib/problems.js';
import type { Database } from '#server/store/schema.js';
import type { SegmentFilterRow } from '#server/store/schema/messaging-crm.js';

/** Campaigns that may still send. */
const UNFINISHED = ['draft', 'scheduled', 'sending', 'paused'] as const;

type Db = Kysely<Database>;

/** `what` is used by `user`: 409. */
export function inUse(what: string, user: string): HttpProblem {
  return new HttpProblem(409, 'conflict', `${what} is used by ${user}; change or ${user.startsWith('campaign') ? 'finish' : 'delete'} it first.`);
}

const quoted = (value: string) => `%${JSON.stringify(value)}%`;

/** The first automation flow (current version), sequence or message bot whose stored JSON has one of `patterns`. */
export async function automationUser(db: Db, workspaceId: string, patterns: string[]): Promise<string | null> {
  const like = (column: ReturnType<typeof sql>) =>
    sql<SqlBool>`(${sql.join(
      patterns.map((p) => sql`${column} like ${p}`),
      sql` or `,
    )})`;
  const flow = await db
    .selectFrom('automation_flows as f')
    .innerJoin('automation_flow_versions as v', (j) => j.onRef('v.flow_id', '=', 'f.id').onRef('v.version', '=', 'f.version'))
    .select('f.id')
    .where('f.workspace_id', '=', workspaceId)
    .where(like(sql`v.graph::text`))
    .executeTakeFirst();
  if (flow) return `automation flow ${flow.id}`;
  const sequence = await db
    .selectFrom('automation_sequences')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where(like(sql`(trigger::text || steps::text)`))
    .executeTakeFirst();
  if (sequence) return `sequence ${sequence.id}`;
  const bot = await db.selectFrom('message_bots').select('id').where('workspace_id', '=', workspaceId).where(like(sql`reply::text`)).executeTakeFirst();
  if (bot) return `message bot ${bot.id}`;
  return null;
}

async function segments(db: Db, workspaceId: string) {
  return db.selectFrom('segments').select(['id', 'filter']).where('workspace_id', '=', workspaceId).orderBy('created_at').execute();
}

const conditions = (filter: unknown) => ((filter as SegmentFilterRow | null)?.conditions ?? []).filter((c) => c && typeof c === 'object');

async function campaignWhere(db: Db, workspaceId: string, condition: ReturnType<typeof sql<SqlBool>>): Promise<string | null> {
  const row = await db
    .selectFrom('campaigns')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('status', 'in', UNFINISHED)
    .where(condition)
    .orderBy('created_at')
    .executeTakeFirst();
  return row ? `campaign ${row.id}` : null;
}

export async function tagUser(db: Db, workspaceId: string, tag: { id: string; name: string }): Promise<string | null> {
  const lower = tag.name.toLowerCase();
  for (const s of await segments(db, workspaceId)) {
    if (conditions(s.filter).some((c) => c.field === 'tag' && typeof c.value === 'string' && c.value.toLowerCase() === lower)) return `segment ${s.id}`;
  }
  // Audiences name tags (`tags`, `exclude_tags`); names are case-insensitive.
  const campaign = await campaignWhere(
    db,
    workspaceId,
    sql<SqlBool>`exists (select 1 from jsonb_array_elements_text(coalesce(audience->'tags', '[]'::jsonb) || coalesce(audience->'exclude_tags', '[]'::jsonb)) t
      where lower(t) = ${lower})`,
  );
  return campaign ?? automationUser(db, workspaceId, [quoted(tag.id)]);
}

export async function segmentUser(db: Db, workspaceId: string, segmentId: string): Promise<string | null> {
  const campaign = await campaignWhere(db, workspaceId, sql<SqlBool>`audience->>'segment_id' = ${segmentId}`);
  return campaign ?? automationUser(db, workspaceId, [quoted(segmentId)]);
}

export async function customFieldUser(db: Db, workspaceId: string, key: string): Promise<string | null> {
  for (const s of await segments(db, workspaceId)) {
    if (conditions(s.filter).some((c) => c.field === `custom_fields.${key}`)) return `segment ${s.id}`;
  }
  // Template variables of a campaign filled from the field.
  const campaign = await campaignWhere(db, workspaceId, sql<SqlBool>`template::text like ${quoted(`custom_fields.${key}`)}`);
  if (campaign) return campaign;
  // Flow nodes: `field` / `save_to_field` (jsonb text puts a space after the colon), placeholders.
  return automationUser(db, workspaceId, [`%"field": ${JSON.stringify(key)}%`, `%"save_to_field": ${JSON.stringify(key)}%`, `%{{contact.fields.${key}}}%`]);
}

export async function templateUser(db: Db, workspaceId: string, templateId: string): Promise<string | null> {
  const campaign = await campaignWhere(db, workspaceId, sql<SqlBool>`template_id = ${templateId}`);
  if (campaign) return campaign;
  const mapping = await db
    .selectFrom('order_webhook_mappings as m')
    .innerJoin('order_webhooks as w', 'w.id', 'm.order_webhook_id')
    .select('w.id')
    .where('w.workspace_id', '=', workspaceId)
    .where('m.template_id', '=', templateId)
    .executeTakeFirst();
  if (mapping) return `order webhook ${mapping.id}`;
  return automationUser(db, workspaceId, [quoted(templateId)]);
}
