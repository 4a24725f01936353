// Every reference to a row that requests delete one at a time, from a table that grows with the
// workspace, is on an index that leads with the referencing columns (migration 045). Without one,
// the foreign key's own trigger reads the whole referencing table for each row deleted: erasing a
// contact read every message of every workspace.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import type { Store } from '#server/store/db.js';
import { openTestStore } from '#test/support/store.js';

/** Tables whose rows a request deletes one by one (a contact, a chat with it, a form, a document…). */
const DELETED_ONE_BY_ONE = [
  'contacts',
  'chats',
  'messages',
  'campaigns',
  'campaign_recipients',
  'forms',
  'documents',
  'document_versions',
  'links',
  'reader_sessions',
  'tags',
  'segments',
];

let store: Store;
beforeAll(async () => {
  store = await openTestStore();
}, 60_000);
afterAll(async () => store?.close());

describe(`foreign keys to rows deleted one by one (${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`, () => {
  it('each lead an index of the referencing table', async () => {
    const { rows } = await sql<{ referencing: string; referenced: string; columns: string[]; indexed: boolean }>`
      select c.conrelid::regclass::text as referencing, c.confrelid::regclass::text as referenced,
        array(select a.attname::text from unnest(c.conkey) with ordinality k(n, i)
              join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.n order by k.i) as columns,
        exists (select 1 from pg_index x
                 where x.indrelid = c.conrelid and x.indpred is null
                   and (x.indkey::int2[])[0:cardinality(c.conkey) - 1] @> c.conkey
                   and (x.indkey::int2[])[0:cardinality(c.conkey) - 1] <@ c.conkey) as indexed
        from pg_constraint c
       where c.contype = 'f' and c.confrelid::regclass::text = any(${DELETED_ONE_BY_ONE}::text[])
       order by 1, 2`.execute(store.db);
    expect(rows.length).toBeGreaterThan(15);
    const missing = rows.filter((r) => !r.indexed).map((r) => `${r.referencing}(${r.columns.join(', ')}) → ${r.referenced}`);
    expect(missing).toEqual([]);
  });
});
