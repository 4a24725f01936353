// Audiences for campaigns and other bulk work: which contacts of a workspace a selection means.
// `checkAudience` refuses unknown or other-workspace ids naming the field (404); `audienceQuery`
// gives a Kysely select of the matching contacts, to `insert … select` recipients in one statement.
//
// The selectors narrow one another (AND): `contactIds` keeps those contacts, tags keep contacts
// with any (default) or all of the tags, `segmentId` keeps the segment's members evaluated now.
// `all: true` alone means every contact of the workspace; an empty selection selects nobody.
import { sql, type Kysely, type SelectQueryBuilder, type SqlBool } from 'kysely';
import { HttpProblem } from '#server/lib/problems.js';
import type { Database } from '#server/store/schema.js';
import { segmentCondition, segmentContext } from './segment-filter.js';
import { tagIdsByName } from './tags.js';

export interface Audience {
  all?: boolean;
  contactIds?: string[];
  /** Tag ids (`tag_…`). */
  tagIds?: string[];
  /** Tag names, case-insensitive (what `POST /api/campaigns` takes). */
  tagNames?: string[];
  /** How several tags combine; default `any`. */
  tagMatch?: 'any' | 'all';
  segmentId?: string;
}

export interface AudiencePointers {
  contactIds?: string;
  tagIds?: string;
  tagNames?: string;
  segmentId?: string;
}

export interface AudienceContact {
  id: string;
  phone: string;
  name: string | null;
  last_inbound_at: Date | null;
}

const DEFAULT_POINTERS: Required<AudiencePointers> = {
  contactIds: '/body/audience/contact_ids',
  tagIds: '/body/audience/tag_ids',
  tagNames: '/body/audience/tags',
  segmentId: '/body/audience/segment_id',
};

/** 404 `not-found` naming the field when an id or tag name is not the workspace's (another workspace's looks unknown). */
export async function checkAudience(db: Kysely<Database>, workspaceId: string, audience: Audience, pointers: AudiencePointers = {}): Promise<void> {
  const at = { ...DEFAULT_POINTERS, ...pointers };
  const contactIds = unique(audience.contactIds);
  if (contactIds.length) {
    const found = new Set<string>();
    // Chunks keep the bind-parameter count far below PostgreSQL's 65,535 limit.
    for (let i = 0; i < contactIds.length; i += 5000) {
      const rows = await db
        .selectFrom('contacts')
        .select('id')
        .where('workspace_id', '=', workspaceId)
        .where('id', 'in', contactIds.slice(i, i + 5000))
        .execute();
      for (const r of rows) found.add(r.id);
    }
    const missing = contactIds.filter((id) => !found.has(id));
    if (missing.length) throw notFound(at.contactIds, 'contact', missing);
  }
  const tagIds = unique(audience.tagIds);
  if (tagIds.length) {
    const rows = await db.selectFrom('tags').select('id').where('workspace_id', '=', workspaceId).where('id', 'in', tagIds).execute();
    const found = new Set(rows.map((r) => r.id));
    const missing = tagIds.filter((id) => !found.has(id));
    if (missing.length) throw notFound(at.tagIds, 'tag', missing);
  }
  const tagNames = unique(audience.tagNames);
  if (tagNames.length) {
    const found = await tagIdsByName(db, workspaceId, tagNames);
    const missing = tagNames.filter((n) => !found.has(n.toLowerCase()));
    if (missing.length) throw notFound(at.tagNames, 'tag', missing);
  }
  if (audience.segmentId !== undefined) {
    const row = await db.selectFrom('segments').select('id').where('workspace_id', '=', workspaceId).where('id', '=', audience.segmentId).executeTakeFirst();
    if (!row) throw notFound(at.segmentId, 'segment', [audience.segmentId]);
  }
}

/**
 * The workspace's contacts in the audience (`id`, `phone`, `name`, `last_inbound_at`), ordered by
 * nothing: add an order or use it as the source of an `insert … select`. Async because a segment's
 * saved filter is read first. Unknown ids select nobody: call `checkAudience` to refuse them.
 */
export async function audienceQuery(
  db: Kysely<Database>,
  workspaceId: string,
  audience: Audience,
): Promise<SelectQueryBuilder<Database, 'contacts', AudienceContact>> {
  let query = db
    .selectFrom('contacts')
    .select(['contacts.id', 'contacts.phone', 'contacts.name', 'contacts.last_inbound_at'])
    .where('contacts.workspace_id', '=', workspaceId);
  const contactIds = unique(audience.contactIds);
  const tagIds = unique(audience.tagIds);
  const tagNames = unique(audience.tagNames);
  const narrowed = audience.contactIds !== undefined || audience.tagIds !== undefined || audience.tagNames !== undefined || audience.segmentId !== undefined;
  if (!narrowed && !audience.all) return query.where(sql<SqlBool>`false`);
  if (audience.contactIds !== undefined) query = contactIds.length ? query.where('contacts.id', 'in', contactIds) : query.where(sql<SqlBool>`false`);
  if (audience.tagIds !== undefined || audience.tagNames !== undefined) {
    // The tags first (a small read), then their contacts on (tag, contact): no per-contact lookup.
    const names = tagNames.map((n) => n.toLowerCase());
    const found =
      tagIds.length || names.length
        ? await db
            .selectFrom('tags')
            .select(['id', 'name'])
            .where('workspace_id', '=', workspaceId)
            .where((eb) => eb.or([...(tagIds.length ? [eb('id', 'in', tagIds)] : []), ...(names.length ? [eb(sql`lower(name)`, 'in', names)] : [])]))
            .execute()
        : [];
    const ids = found.map((t) => t.id);
    const everyFound = tagIds.every((id) => ids.includes(id)) && names.every((n) => found.some((t) => t.name.toLowerCase() === n));
    if (!ids.length || (audience.tagMatch === 'all' && !everyFound)) query = query.where(sql<SqlBool>`false`);
    else if (audience.tagMatch === 'all') {
      query = query.where('contacts.id', 'in', (eb) =>
        eb
          .selectFrom('contact_tags')
          .select('contact_id')
          .where('tag_id', 'in', ids)
          .groupBy('contact_id')
          .having((h) => h.fn.countAll(), '=', ids.length),
      );
    } else query = query.where('contacts.id', 'in', (eb) => eb.selectFrom('contact_tags').select('contact_id').where('tag_id', 'in', ids));
  }
  if (audience.segmentId !== undefined) {
    const segment = await db
      .selectFrom('segments')
      .select('filter')
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', audience.segmentId)
      .executeTakeFirst();
    if (!segment) return query.where(sql<SqlBool>`false`);
    query = query.where(segmentCondition(segment.filter, await segmentContext(db, workspaceId, [segment.filter])));
  }
  return query;
}

function unique(values: string[] | undefined): string[] {
  return [...new Set(values ?? [])];
}

function notFound(pointer: string, what: string, missing: string[]): HttpProblem {
  const shown = missing.slice(0, 5).join(', ') + (missing.length > 5 ? ` and ${missing.length - 5} more` : '');
  return new HttpProblem(404, 'not-found', `No ${what} ${shown} in this workspace.`, {
    errors: [{ pointer, detail: `${missing.length === 1 ? `is not a ${what}` : `${missing.length} are not ${what}s`} of this workspace` }],
  });
}
