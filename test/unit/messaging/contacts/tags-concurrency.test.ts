// Two writes creating the same new tags at once (two contacts saved with tags ["a", "b"] and
// ["b", "a"]) must not deadlock on PostgreSQL: each waits for the other's uncommitted tag name
// (unique per workspace), so the names are inserted in one order. PGlite has one connection,
// where the race cannot happen, so this runs on PostgreSQL only (npm run test:pg).
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { buildShared } from '../../../helper.js';
import { newId } from '../../../../server/lib/ids.js';
import { ensureTags } from '../../../../server/apis/messaging/contacts/tags.js';
import { onPostgres } from '../../../support/store.js';

describe.runIf(onPostgres)('new tags created by two writes at once (PostgreSQL)', () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await buildShared();
  });

  async function lockWaiters() {
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`.execute(app.platform.store.db);
    return rows[0]!.n;
  }

  it('the same two new names in opposite order: both writes commit, one tag each', async () => {
    const db = app.platform.store.db;
    const workspaceId = newId('ws');
    await db.insertInto('workspaces').values({ id: workspaceId, name: 'Tags', slug: workspaceId.toLowerCase() }).execute();
    const now = new Date();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let first!: () => void;
    const firstInserted = new Promise<void>((resolve) => (first = resolve));
    // The first write has inserted "alpha" and not committed when the second starts with ["beta", "alpha"].
    const one = db.transaction().execute(async (trx) => {
      await ensureTags(trx, workspaceId, ['alpha'], now);
      first();
      await released;
      return ensureTags(trx, workspaceId, ['beta'], now);
    });
    await firstInserted;
    const two = db.transaction().execute((trx) => ensureTags(trx, workspaceId, ['beta', 'alpha'], now));
    for (let i = 0; i < 200 && (await lockWaiters()) < 1; i++) await new Promise((r) => setTimeout(r, 10));
    release();
    const results = await Promise.allSettled([one, two]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled']);
    const tags = await db.selectFrom('tags').select('name').where('workspace_id', '=', workspaceId).orderBy('name').execute();
    expect(tags.map((t) => t.name)).toEqual(['alpha', 'beta']);
  });
});
