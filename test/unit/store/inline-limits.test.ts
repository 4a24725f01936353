// server/store/inline-limits.ts: a LIMIT that is a safe integer is written into the SQL text, so
// a page query of one size is one statement text that PostgreSQL's plan cache can give a generic
// plan (with `limit $n` it planned every run again); anything else stays a parameter. Both
// dialects compile with it (PGlite here; PostgreSQL's UnavailableAwareDialect below).
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresQueryCompiler, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PGliteDialect } from '#server/store/pglite-dialect.js';
import { UnavailableAwareDialect } from '#server/store/unavailable.js';

/** Kysely's own compiler, which sends every LIMIT as a parameter. */
class PlainDialect extends PGliteDialect {
  override createQueryCompiler() {
    return new PostgresQueryCompiler();
  }
}

interface Db {
  items: { id: number; workspace: string; at: Date };
}

let pgl: PGlite;
let db: Kysely<Db>;
beforeAll(async () => {
  pgl = await PGlite.create();
  await pgl.exec(`create table items (id int primary key, workspace text not null, at timestamptz not null);
    create index items_workspace_at on items (workspace, at desc, id desc);
    insert into items select n, 'w' || (n % 2), now() - n * interval '1 second' from generate_series(1, 2000) n;
    analyze items`);
  db = new Kysely<Db>({ dialect: new PGliteDialect(pgl) });
}, 60_000);
afterAll(async () => pgl?.close());

const page = (workspace: string, limit: unknown) =>
  db
    .selectFrom('items')
    .select('id')
    .where('workspace', '=', workspace)
    .orderBy('at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit as number);

describe('inline LIMIT', () => {
  it('writes a safe integer into the text and leaves the other values as parameters', () => {
    const compiled = page('w1', 21).compile();
    expect(compiled.sql).toMatch(/ limit 21$/);
    expect(compiled.parameters).toEqual(['w1']);
    expect(page('w1', 0).compile().sql).toMatch(/ limit 0$/);
  });

  it('keeps a parameter for anything that is not a non-negative safe integer', () => {
    for (const odd of [-1, 2.5, 2 ** 53, '5', 5n]) {
      const compiled = page('w1', odd).compile();
      expect(compiled.sql).toMatch(/ limit \$2$/);
      expect(compiled.parameters).toEqual(['w1', odd]);
    }
    const expression = db.selectFrom('items').select('id').limit(sql<number>`1 + 1`).compile();
    expect(expression.sql).toMatch(/ limit 1 \+ 1$/);
  });

  it('is the compiler of the PostgreSQL dialect too, and leaves OFFSET a parameter', () => {
    const pool = new pg.Pool({ connectionString: 'postgres://unused@127.0.0.1:1/unused' }); // compiling opens no connection
    const postgres = new Kysely<Db>({ dialect: new UnavailableAwareDialect({ pool }) });
    const compiled = postgres.selectFrom('items').select('id').where('workspace', '=', 'w1').limit(21).offset(40).compile();
    expect(compiled.sql).toBe('select "id" from "items" where "workspace" = $1 limit 21 offset $2');
    expect(compiled.parameters).toEqual(['w1', 40]);
    // And the plain dialect the tests below compare with does send it as a parameter.
    expect(new Kysely<Db>({ dialect: new PlainDialect(pgl) }).selectFrom('items').select('id').limit(21).compile().sql).toMatch(/ limit \$1$/);
  });

  it('answers the same rows as the parameterised query', async () => {
    const plain = new Kysely<Db>({ dialect: new PlainDialect(pgl) });
    const rows = await page('w0', 7).execute();
    expect(rows).toHaveLength(7);
    expect(rows).toEqual(
      await plain.selectFrom('items').select('id').where('workspace', '=', 'w0').orderBy('at', 'desc').orderBy('id', 'desc').limit(7).execute(),
    );
  });

  it('a page query of one size gets a generic plan after five runs; with `limit $2` it was planned on every run', async () => {
    const plain = new Kysely<Db>({ dialect: new PlainDialect(pgl) });
    // Another column list than the tests above, so these two statements are this test's own.
    const newest = (k: Kysely<Db>, workspace: string) =>
      k.selectFrom('items').select(['id', 'at']).where('workspace', '=', workspace).orderBy('at', 'desc').orderBy('id', 'desc').limit(21).execute();
    for (let i = 0; i < 8; i++) {
      expect(await newest(db, `w${i % 2}`)).toHaveLength(21);
      expect(await newest(plain, `w${i % 2}`)).toHaveLength(21);
    }
    const { rows } = await pgl.query<{ statement: string; generic_plans: number; custom_plans: number }>(
      `select regexp_replace(statement, '.* limit ', 'limit ') as statement, generic_plans, custom_plans
         from pg_prepared_statements where statement like 'select "id", "at" from "items"%' order by statement`,
    );
    expect(rows).toEqual([
      { statement: 'limit $2', generic_plans: 0, custom_plans: 8 },
      { statement: 'limit 21', generic_plans: 3, custom_plans: 5 },
    ]);
  });
});
