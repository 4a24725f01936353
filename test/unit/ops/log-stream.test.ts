// One log stream (server/ops/logging.ts, server/store/db.ts): every line is the server's pino
// line, with a numeric level and time; a contract operation's request lines carry the request id
// and the operationId; the store's own warnings (on PostgreSQL, its LISTEN connection ended) go
// through the same logger instead of a JSON line of their own on stderr, and so do Node's process
// warnings.
import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { eventually } from '#test/support/eventually.js';
import { onPostgres } from '#test/support/store.js';
import { loggedApp } from '#test/security/logged-app.js';
import { logProcessWarnings } from '#server/ops/logging.js';

const { app, lines, store } = await loggedApp({ level: 'info' });
const parsed = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>);

it('request lines carry the request id and the operationId; other routes the request id only', async () => {
  const res = await app.inject({ url: '/api/contacts?limit=1' });
  expect(res.statusCode).toBe(401);
  const own = parsed().filter((line) => line.reqId === res.headers['x-request-id']);
  expect(own.map((line) => line.msg)).toEqual(['incoming request', 'request completed']);
  for (const line of own) expect(line).toMatchObject({ level: 30, operationId: 'listContacts', time: expect.any(Number) });

  const health = await app.inject({ url: '/healthz' });
  const plain = parsed().filter((line) => line.reqId === health.headers['x-request-id']);
  expect(plain).toHaveLength(2);
  for (const line of plain) expect(line).not.toHaveProperty('operationId');
});

it("Node's process warnings go through the logger instead of Node's own stderr printer", async () => {
  const restore = logProcessWarnings(app.log);
  try {
    expect(process.listenerCount('warning')).toBe(1);
    process.emitWarning('A dependency says something odd', { code: 'CHATAPP_TEST_WARNING' });
    const warning = await eventually(() => parsed().find((line) => line.code === 'CHATAPP_TEST_WARNING'), {
      within: 5_000,
      what: 'the warning in the log',
    });
    expect(warning).toMatchObject({ level: 40, component: 'process', warning: 'Warning', msg: 'A dependency says something odd', time: expect.any(Number) });
  } finally {
    restore();
  }
});

it.runIf(onPostgres)('the store warns through the logger when PostgreSQL ends its LISTEN connection', async () => {
  const database = new URL((store as { url?: string }).url!).pathname.slice(1);
  await sql`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${database} and pid <> pg_backend_pid() and query ilike 'listen %'`.execute(
    app.platform.store.db,
  );
  const warning = await eventually(() => parsed().find((line) => line.msg === 'PostgreSQL listener connection ended'), {
    within: 10_000,
    what: 'the listener warning in the log',
  });
  expect(warning).toMatchObject({ level: 40, component: 'store', time: expect.any(Number) });
});
