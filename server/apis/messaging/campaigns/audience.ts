// A campaign's audience in the contract's shape, mapped onto the contacts area's audience query,
// plus what only campaigns have: `exclude_tags` and the recipient cap (bad-inputs K8).
import { sql, type Kysely, type SqlBool, type Transaction } from 'kysely';
import type { components } from '#generated/messaging/types.js';
import type { Database } from '#server/store/schema.js';
import { audienceQuery, checkAudience, type Audience } from '../contacts/audience.js';

export type CampaignAudience = components['schemas']['CampaignAudience'];

function selection(a: CampaignAudience): Audience {
  switch (a.type) {
    case 'all_contacts':
      return { all: true };
    case 'contacts':
      return { contactIds: a.contact_ids };
    case 'tags':
      return { tagNames: a.tags, tagMatch: a.match ?? 'any', ...(a.segment_id !== undefined ? { segmentId: a.segment_id } : {}) };
    case 'segment':
      return { segmentId: a.segment_id };
  }
}

/** 404 naming the field for a contact, tag or segment that is not the workspace's (bad-inputs B3). */
export async function checkCampaignAudience(db: Kysely<Database>, workspaceId: string, a: CampaignAudience): Promise<void> {
  await checkAudience(db, workspaceId, selection(a), {
    contactIds: '/body/audience/contact_ids',
    tagNames: '/body/audience/tags',
    segmentId: '/body/audience/segment_id',
  });
}

/** The recipients now: contacts `id` and `phone`. */
export async function recipientsQuery(db: Kysely<Database> | Transaction<Database>, workspaceId: string, a: CampaignAudience) {
  let query = (await audienceQuery(db as Kysely<Database>, workspaceId, selection(a))).clearSelect().select(['contacts.id', 'contacts.phone']);
  if (a.type === 'all_contacts' && a.exclude_tags?.length) {
    const names = a.exclude_tags.map((n) => n.toLowerCase());
    query = query.where(
      sql<SqlBool>`not exists (select 1 from contact_tags ct join tags t on t.id = ct.tag_id
        where ct.contact_id = contacts.id and t.workspace_id = ${workspaceId} and lower(t.name) in (${sql.join(names)}))`,
    );
  }
  return query;
}

/** How many contacts the audience has now; stops counting past `cap` (config.campaignMaxRecipients). */
export async function countRecipients(db: Kysely<Database> | Transaction<Database>, workspaceId: string, a: CampaignAudience, cap: number): Promise<number> {
  const limited = (await recipientsQuery(db, workspaceId, a)).limit(cap + 1);
  const row = await db
    .selectFrom(limited.as('r'))
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
