// Contact counts of tags and segments that stay cheap at any workspace size. Each count is made
// with a limit: up to LIVE_COUNT_LIMIT it is exact and live (what a small workspace always
// sees); above it, the row's stored count (migration 037c) is answered while it is younger than
// COUNT_TTL_MS, and an older one is answered too while a full count runs after the answer and
// replaces it. Only a large count never made before is counted within the request.
import { sql, type Kysely, type SqlBool } from 'kysely';
import type { Database } from '#server/store/schema.js';

export const LIVE_COUNT_LIMIT = 10_000;
export const COUNT_TTL_MS = 10 * 60_000;

export interface CountedRow {
  id: string;
  contact_count: number | null;
  counted_at: Date | null;
}

/** Rows being counted after an answer (one full count per row at a time, per instance). */
const refreshing = new Set<string>();

/**
 * The count of each row: `bounded(id)` counts at most LIVE_COUNT_LIMIT + 1 contacts, `full(id)`
 * all of them; `table` keeps the large ones.
 */
export async function contactCounts(
  db: Kysely<Database>,
  table: 'tags' | 'segments',
  rows: CountedRow[],
  bounded: (id: string) => Promise<number>,
  full: (id: string) => Promise<number>,
  now: Date,
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
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
    await (async () => {
      const live = await bounded(r.id);
      if (live <= LIVE_COUNT_LIMIT) return void out.set(r.id, live);
      if (r.contact_count !== null && r.counted_at !== null) {
        out.set(r.id, r.contact_count);
        if (now.getTime() - new Date(r.counted_at).getTime() >= COUNT_TTL_MS && !refreshing.has(r.id)) {
          refreshing.add(r.id);
          // After the answer; a store closed meanwhile (shutdown) just leaves the old count.
          void full(r.id)
            .then((n) => store(r.id, n, new Date()))
            .catch(() => {})
            .finally(() => refreshing.delete(r.id));
        }
        return;
      }
      const n = await full(r.id);
      out.set(r.id, n);
      await store(r.id, n, now);
    })();
  }
  return out;
}
