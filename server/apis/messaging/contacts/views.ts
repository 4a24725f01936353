// The contract's Contact for stored rows: tag names (sorted) loaded for a whole page at once,
// and the 24-hour customer-service window derived from the last inbound message.
import { WINDOW_MS } from '#server/apis/messaging/outbound/service-window.js';
import { sql, type Kysely, type Selectable } from 'kysely';
import type { components } from '#generated/messaging/types.js';
import type { ContactsTable, Database } from '#server/store/schema.js';

type Contact = components['schemas']['Contact'];
export type ContactRow = Pick<
  Selectable<ContactsTable>,
  'id' | 'phone' | 'name' | 'email' | 'custom_fields' | 'last_inbound_at' | 'opted_out_at' | 'opt_out_source' | 'created_at' | 'updated_at'
>;

export const CONTACT_COLUMNS = [
  'id',
  'phone',
  'name',
  'email',
  'custom_fields',
  'last_inbound_at',
  'opted_out_at',
  'opt_out_source',
  'created_at',
  'updated_at',
] as const;

/**
 * A page's tag names, in the page's own query (one round trip instead of two, which is what a list
 * costs on PGlite): select it as `tags` and pass the rows to contactViews.
 */
export const TAG_NAMES = sql<
  string[]
>`(select coalesce(array_agg(t.name), '{}') from contact_tags ct join tags t on t.id = ct.tag_id where ct.contact_id = contacts.id)`;

/**
 * `tagless`: the rows are known to have no tags (just created without any), so none are loaded.
 * Rows that carry `tags` (selected with TAG_NAMES) are not looked up either.
 */
export async function contactViews(db: Kysely<Database>, rows: (ContactRow & { tags?: string[] })[], now: Date, { tagless = false } = {}): Promise<Contact[]> {
  const tags = new Map<string, string[]>(rows.map((r) => [r.id, r.tags ? [...r.tags] : []]));
  if (rows.length && !tagless && !rows.every((r) => Array.isArray(r.tags))) {
    const links = await db
      .selectFrom('contact_tags')
      .innerJoin('tags', 'tags.id', 'contact_tags.tag_id')
      .select(['contact_tags.contact_id', 'tags.name'])
      .where(
        'contact_tags.contact_id',
        'in',
        rows.map((r) => r.id),
      )
      .execute();
    for (const l of links) tags.get(l.contact_id)?.push(l.name);
  }
  return rows.map((r) => {
    const closes = r.last_inbound_at ? new Date(r.last_inbound_at.getTime() + WINDOW_MS) : null;
    return {
      id: r.id,
      contact_no: r.phone,
      name: r.name,
      email: r.email,
      tags: (tags.get(r.id) ?? []).sort((a, b) => a.localeCompare(b, 'en', { sensitivity: 'base' }) || (a < b ? -1 : 1)),
      // The generator reads the schema's `unevaluatedProperties` as "no properties".
      custom_fields: r.custom_fields as unknown as Contact['custom_fields'],
      last_inbound_at: r.last_inbound_at?.toISOString() ?? null,
      window_expires_at: closes && closes > now ? closes.toISOString() : null,
      opted_out: r.opted_out_at !== null,
      opted_out_at: r.opted_out_at ? new Date(r.opted_out_at).toISOString() : null,
      opt_out_source: r.opted_out_at ? r.opt_out_source : null,
      created_at: r.created_at.toISOString(),
      updated_at: r.updated_at.toISOString(),
    };
  });
}
