// Contact counts of tags and segments that stay cheap at any workspace size. In a workspace of
// up to LIVE_COUNT_LIMIT contacts every count is made at every read, exact and live (it reads at
// most that many contacts). In a larger one the count stored on the row (migration 037c) is
// answered while it is younger than COUNT_TTL_MS, and an older one is answered too while a full
// count runs after the answer and replaces it: a list of tags or segments of a million contacts
// does not count them all again. Only a count never made before is made within the request.
import { sql, type Kysely, type SqlBool } from 'kysely';
import type { Database } from '#server/store/schema.js';
import { onIndexes } from './on-indexes.js';

export const LIVE_COUNT_LIMIT = 10_000;
export const COUNT_TTL_MS = 10 * 60_000;

export interface CountedRow {
  id: string;
  contact_count: number | null;
  counted_at: Date | null;
}

/** Rows being counted after an answer (one full count per row at a time, per instance). */
const refreshing = new Set<string>();

/** Whether the workspace has at most LIVE_COUNT_LIMIT contacts (an index-only read of at most that many). */
export async function smallWorkspace(db: Kysely<Database>, workspaceId: string): Promise<boolean> {
  const { n } = await onIndexes(db, (trx) =>
    trx
      .selectFrom((eb) =>
        eb
          .selectFrom('contacts')
          .select('id')
          .where('workspace_id', '=', workspaceId)
          .limit(LIVE_COUNT_LIMIT + 1)
          .as('c'),
      )
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow(),
  );
  return Number(n) <= LIVE_COUNT_LIMIT;
}

/** The count of each row of workspace `workspaceId`: `count(id)` counts its contacts now; `table` keeps the counts of a large workspace. */
export async function contactCounts(
  db: Kysely<Database>,
  table: 'tags' | 'segments',
  workspaceId: string,
  rows: CountedRow[],
  count: (id: string) => Promise<number>,
  now: Date,
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (!rows.length) return out;
  const live = await smallWorkspace(db, workspaceId);
  const store = async (id: string, n: number, at: Date) => {
    await db
      .updateTable(table)
      .set({ contact_count: n, counted_at: at })
      .where('id', '=', id)
      .where(sql<SqlBool>`counted_at is null or counted_at < ${at}`)
      .execute();
  };
  // One count at a time: a page of counts at once would take every connection of the pool.
  for (const r of rows) {
    if (live) {
      out.set(r.id, await count(r.id));
      continue;
    }
    if (r.contact_count !== null && r.counted_at !== null) {
      out.set(r.id, r.contact_count);
      if (now.getTime() - new Date(r.counted_at).getTime() >= COUNT_TTL_MS && !refreshing.has(r.id)) {
        refreshing.add(r.id);
        // After the answer; a store closed meanwhile (shutdown) just leaves the old count.
        void count(r.id)
          .then((n) => store(r.id, n, new Date()))
          .catch(() => {})
          .finally(() => refreshing.delete(r.id));
      }
      continue;
    }
    const n = await count(r.id);
    out.set(r.id, n);
    await store(r.id, n, now);
  }
  return out;
}
