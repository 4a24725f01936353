// Which database errors mean "cannot serve now" (503 `unavailable` with Retry-After) and which are
// a fault of the query (left alone, so they stay 4xx/500 as before): server/store/unavailable.ts.
// The fault test test/faults/disk-full.test.ts drives class 53 through a running server.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpProblem } from '#server/lib/problems.js';
import { isUnavailable, RETRY_AFTER_SECONDS } from '#server/store/unavailable.js';
import { onPostgres, openTestStore } from '#test/support/store.js';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isUnavailable', () => {
  it.each([
    ['53000', 'insufficient_resources'],
    ['53100', 'disk_full'],
    ['53200', 'out_of_memory'],
    ['53300', 'too_many_connections'],
    ['53400', 'configuration_limit_exceeded'],
    ['08006', 'connection_failure'],
    ['08001', 'sqlclient_unable_to_establish_sqlconnection'],
    ['57P01', 'admin_shutdown'],
    ['57P03', 'cannot_connect_now'],
    ['ECONNREFUSED', 'connection refused'],
    ['ECONNRESET', 'connection reset'],
  ])('%s (%s): unavailable', (code) => {
    expect(isUnavailable(withCode(code))).toBe(true);
  });

  it.each([
    ['23505', 'unique_violation'],
    ['23503', 'foreign_key_violation'],
    ['22P02', 'invalid_text_representation'],
    ['42P01', 'undefined_table'],
    ['40001', 'serialization_failure'],
    ['57014', 'query_canceled'],
    ['5310', 'not a SQLSTATE (4 characters)'],
    ['531000', 'not a SQLSTATE (6 characters)'],
  ])('%s (%s): not unavailable', (code) => {
    expect(isUnavailable(withCode(code))).toBe(false);
  });

  it('node-postgres socket messages without a code: unavailable; other messages and non-errors: not', () => {
    expect(isUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isUnavailable(new Error('timeout exceeded when trying to connect'))).toBe(true);
    expect(isUnavailable(new Error('relation "x" does not exist'))).toBe(false);
    expect(isUnavailable({ code: '53100', message: 'disk full' })).toBe(false); // not an Error
    expect(isUnavailable(undefined)).toBe(false);
  });
});

describe.runIf(onPostgres)('the store on PostgreSQL', () => {
  let store: Awaited<ReturnType<typeof openTestStore>>;
  beforeAll(async () => {
    store = await openTestStore();
  });
  afterAll(async () => {
    await store.close();
  });

  it('F-6 a real 53100 from PostgreSQL becomes HttpProblem 503 unavailable with Retry-After; 23505 stays as it is', async () => {
    const disk = sql`do $$ begin raise exception using errcode = '53100', message = 'could not extend file: No space left on device'; end $$`.execute(store.db);
    const error = await disk.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(HttpProblem);
    const problem = error as HttpProblem;
    expect(problem.status).toBe(503);
    expect(problem.problem.type).toBe('https://chatapp.example/problems/unavailable');
    expect(problem.headers).toEqual({ 'retry-after': String(RETRY_AFTER_SECONDS) });
    expect(problem.message).not.toMatch(/No space left/); // the cause is kept, not shown
    expect((problem.cause as { code?: string }).code).toBe('53100');

    const unique = sql`do $$ begin raise exception using errcode = '23505'; end $$`.execute(store.db);
    const other = await unique.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(other).not.toBeInstanceOf(HttpProblem);
    expect((other as { code?: string }).code).toBe('23505');
  });
});
