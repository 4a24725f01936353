// PGlite's prepared statements (server/store/pglite-statements.ts) answer exactly what
// `pg.query` answers: the same rows and types, the same errors, and a statement whose table
// changed under it is parsed again instead of failing.
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PGliteStatements } from '#server/store/pglite-statements.js';

let pg: PGlite;
beforeAll(async () => {
  pg = await PGlite.create();
  await pg.exec(`create table t (id text primary key, n int, data jsonb, tags text[], at timestamptz, big bigint, flag boolean, raw bytea)`);
}, 60_000);
afterAll(async () => pg?.close());

describe('PGlite prepared statements', () => {
  it('answers the same rows, types and counts as pg.query, the first time and when reused', async () => {
    const statements = new PGliteStatements(pg);
    const insert = 'insert into t (id, n, data, tags, at, big, flag, raw) values ($1, $2, $3, $4, $5, $6, $7, $8) returning *';
    const at = new Date('2026-11-24T05:00:00.123Z');
    for (const id of ['a', 'b']) {
      const values = [id, 7, { k: [1, 'x'] }, ['p', 'q'], at, 9007199254740993n, true, new Uint8Array([1, 2])];
      const ours = await statements.query(insert, values);
      await pg.query('delete from t where id = $1', [id]);
      const theirs = await pg.query(insert, values);
      expect(ours.rows).toEqual(theirs.rows);
      expect(ours.fields).toEqual(theirs.fields);
      expect(ours.affectedRows).toBe(1);
    }
    const select = await statements.query<{ id: string; at: Date }>('select id, at from t where n = $1 order by id', [7]);
    expect(select.rows).toEqual([
      { id: 'a', at },
      { id: 'b', at },
    ]);
    expect(statements.size).toBe(2);
    const update = await statements.query('update t set n = n + 1 where n = $1', [7]);
    expect(update.affectedRows).toBe(2);
    expect(update.rows).toEqual([]);
  });

  it('puts rows together as pg.query does: every type, repeated and odd column names, counts of each command', async () => {
    const statements = new PGliteStatements(pg);
    // Each runs on the same state: both inside a transaction that is rolled back.
    const same = async (text: string, params: unknown[] = []) => {
      await pg.exec('begin');
      const ours = await statements.query(text, params);
      await pg.exec('rollback; begin');
      const theirs = await pg.query(text, params);
      await pg.exec('rollback');
      expect(ours).toEqual(theirs);
      expect(ours.rows.map((r) => Object.keys(r as object))).toEqual(theirs.rows.map((r) => Object.keys(r as object)));
      return ours;
    };
    const odd = await same(
      `select 1 as a, 2 as a, 3 as "__proto__", 'x' as "constructor", null, null, '{"k":1}'::jsonb as j, 1.5::numeric as n, 7::int8 as b, '2026-01-02'::date as d, 'a1b2c3d4-0000-4000-8000-000000000000'::uuid as u, point(1, 2) as p, interval '1 day' as i, array[1, null, 3] as arr, '\\x0102'::bytea as raw`,
    );
    const [row] = odd.rows as Record<string, unknown>[];
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(row, '__proto__')?.value).toBe(3);
    expect((await same(`insert into t (id, n) values ('c1', -5), ('c2', -5) returning id`)).affectedRows).toBe(2);
    await pg.exec(`insert into t (id, n) values ('c1', -5), ('c2', -5)`);
    expect((await same('select * from t where n = $1 order by id', [-5])).rows).toHaveLength(2);
    expect((await same('update t set n = -6 where n = $1', [-5])).affectedRows).toBe(2);
    expect((await same('delete from t where n = $1 returning id', [-5])).rowCount).toBe(2);
    await same('select count(*) from t');
    await same('create temporary table tmp_rows (x int)');
    await pg.exec(`delete from t where id in ('c1', 'c2')`);
  });

  it('passes nulls and raw statements without parameters', async () => {
    const statements = new PGliteStatements(pg);
    const { rows } = await statements.query<{ v: null; w: number }>('select $1::text as v, 1 as w', [null]);
    expect(rows).toEqual([{ v: null, w: 1 }]);
    await statements.query('begin', []);
    expect(pg.isInTransaction()).toBe(true);
    await statements.query('rollback', []);
    expect(pg.isInTransaction()).toBe(false);
  });

  it('throws the same DatabaseError as pg.query, and the next query works', async () => {
    const statements = new PGliteStatements(pg);
    const duplicate = 'insert into t (id) values ($1)';
    await statements.query(duplicate, ['dup']);
    const ours = await statements.query(duplicate, ['dup']).catch((e: unknown) => e);
    const theirs = await pg.query(duplicate, ['dup']).catch((e: unknown) => e);
    expect(ours).toBeInstanceOf(Error);
    expect((ours as { code: string }).code).toBe('23505');
    expect((ours as Error).message).toBe((theirs as Error).message);
    const syntax = await statements.query('selec 1', []).catch((e: unknown) => e);
    expect((syntax as { code: string }).code).toBe('42601');
    expect((await statements.query<{ n: number }>('select 2 as n', [])).rows).toEqual([{ n: 2 }]);
  });

  it('plans each run with its values: on conflict with a parameter matches a partial unique index every time', async () => {
    const statements = new PGliteStatements(pg);
    await pg.exec(`create table u (k text, status text); create unique index u_pending on u (k) where status = 'pending'`);
    const insert = 'insert into u (k, status) values ($1, $2) on conflict (k) where status = $3 do nothing returning k';
    const literal = `insert into u (k, status) values ($1, $2) on conflict (k) where status = 'pending' do nothing returning k`;
    for (let i = 0; i < 8; i++) {
      const { rows } = await statements.query(insert, [`k${i % 4}`, 'pending', 'pending']);
      expect(rows).toEqual(i < 4 ? [{ k: `k${i}` }] : []);
      expect((await statements.query(literal, [`k${i % 4}`, 'pending'])).rows).toEqual([]);
    }
    // The parameterised one is never kept as a named statement; the literal one is, generic plan and all.
    const { rows } = await pg.query<{ statement: string; generic_plans: number }>(
      `select statement, generic_plans from pg_prepared_statements where statement like 'insert into u %'`,
    );
    expect(rows).toEqual([{ statement: literal, generic_plans: expect.any(Number) }]);
    expect(rows[0]!.generic_plans).toBeGreaterThan(0);
  });

  it('a statement run again and again gets a generic plan (PostgreSQL plans it once, not on every run)', async () => {
    const statements = new PGliteStatements(pg);
    await pg.exec('create table g (id int primary key, v text); insert into g select n, n::text from generate_series(1, 100) n');
    for (let i = 1; i <= 8; i++) expect((await statements.query('select v from g where id = $1', [i])).rows).toEqual([{ v: String(i) }]);
    const { rows } = await pg.query<{ generic_plans: number; custom_plans: number }>(
      `select generic_plans, custom_plans from pg_prepared_statements where statement = 'select v from g where id = $1'`,
    );
    expect(rows[0]!.custom_plans).toBe(5);
    expect(rows[0]!.generic_plans).toBe(3);
  });

  it('parses a statement again when its table changed under a select * (0A000), outside a transaction', async () => {
    const statements = new PGliteStatements(pg);
    await pg.exec('create table s (id int); insert into s values (1)');
    expect((await statements.query('select * from s', [])).rows).toEqual([{ id: 1 }]);
    await pg.exec('alter table s add column name text');
    expect((await statements.query('select * from s', [])).rows).toEqual([{ id: 1, name: null }]);
  });

  it('keeps at most its limit of statements, closing the least recently used', async () => {
    const statements = new PGliteStatements(pg, 3);
    for (const n of [1, 2, 3]) await statements.query(`select ${n} as lru`, []);
    await statements.query('select 1 as lru', []); // used again: now the most recent
    await statements.query('select 4 as lru', []); // closes "select 2"
    expect(statements.size).toBe(3);
    const { rows } = await pg.query<{ statement: string }>(`select statement from pg_prepared_statements where statement like '% as lru' order by statement`);
    expect(rows.map((r) => r.statement)).toEqual(['select 1 as lru', 'select 3 as lru', 'select 4 as lru']);
    expect((await statements.query<{ lru: number }>('select 2 as lru', [])).rows).toEqual([{ lru: 2 }]);
  });
});
