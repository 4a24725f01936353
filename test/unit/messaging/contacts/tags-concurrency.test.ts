// Two writes creating the same new tags at once (two contacts saved with tags ["a", "b"] and
// ["b", "a"]) must not deadlock on PostgreSQL: each waits for the other's uncommitted tag name
// (unique per workspace), so the names are inserted in one order. PGlite has one connection,
// where the race cannot happen, so this runs on PostgreSQL only (npm run test:pg).
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { newId } from '#server/lib/ids.js';
import { ensureTags } from '#server/apis/messaging/contacts/tags.js';
import { onPostgres } from '#test/support/store.js';
import { holdTransaction, untilLockWaiters } from '#test/support/locks.js';

describe.runIf(onPostgres)('new tags created by two writes at once (PostgreSQL)', () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await buildShared();
  });

  it('the same two new names in opposite order: both writes commit, one tag each', async () => {
    const db = app.platform.store.db;
    const workspaceId = newId('ws');
    await db.insertInto('workspaces').values({ id: workspaceId, name: 'Tags', slug: workspaceId.toLowerCase() }).execute();
    const now = new Date();
    // The first write has inserted "alpha" and not committed when the second starts with ["beta", "alpha"].
    const one = await holdTransaction(
      db,
      (trx) => ensureTags(trx, workspaceId, ['alpha'], now),
      (trx) => ensureTags(trx, workspaceId, ['beta'], now),
    );
    const two = db.transaction().execute((trx) => ensureTags(trx, workspaceId, ['beta', 'alpha'], now));
    await untilLockWaiters(db, 1);
    const results = await Promise.allSettled([one.commit(), two]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled']);
    const tags = await db.selectFrom('tags').select('name').where('workspace_id', '=', workspaceId).orderBy('name').execute();
    expect(tags.map((t) => t.name)).toEqual(['alpha', 'beta']);
  });
});
