// server/store/pglite-dialect.ts: PGlite answers a query synchronously inside a promise, so
// callers' chains of queries would hold Node's nextTick queue until they all end. That queue is
// where an HTTP response's writes leave for the socket (the response corks the socket and uncorks
// it on the next tick), so a login stream's frame waited for every query of another caller. Once a
// stretch of queries has run half a millisecond, the next one waits a tick: a tick queued while
// another caller runs query after query (each here at least 2 ms) runs after one or two of them.
import { PGlite } from '@electric-sql/pglite';
import { Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PGliteDialect } from '#server/store/pglite-dialect.js';

let pg: PGlite;
let db: Kysely<Record<string, never>>;
beforeAll(async () => {
  pg = await PGlite.create();
  db = new Kysely({ dialect: new PGliteDialect(pg) });
}, 60_000);
afterAll(async () => pg?.close());

describe('PGlite dialect', () => {
  it("runs what waits on the nextTick queue between another caller's queries", async () => {
    let done = 0;
    let doneWhenTicked = -1;
    const chain = (async () => {
      for (let i = 0; i < 40; i++) {
        await sql`select pg_sleep(0.002), ${i}::int as n`.execute(db);
        done++;
      }
    })();
    await Promise.resolve();
    process.nextTick(() => (doneWhenTicked = done)); // as res.write's uncork does
    await chain;
    expect(doneWhenTicked).toBeGreaterThanOrEqual(0);
    expect(doneWhenTicked).toBeLessThan(3); // without the ticks: 40, after the whole chain
  });

  it('still runs one caller at a time, a transaction included', async () => {
    const order: string[] = [];
    await Promise.all([
      db.transaction().execute(async (trx) => {
        order.push('t1');
        await sql`select 1`.execute(trx);
        order.push('t2');
        await sql`select 2`.execute(trx);
        order.push('t3');
      }),
      (async () => {
        await sql`select 3`.execute(db);
        order.push('q');
      })(),
    ]);
    expect(order.indexOf('q') === 0 || order.indexOf('q') === 3).toBe(true);
  });
});
