// Idempotency-Key for sends (24 hours, per workspace): the first request claims the key; a retry
// with the same body gets the stored answer, a different body or a request still in flight 409.
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';

const TTL_MS = 24 * 60 * 60 * 1000;

export interface IdempotencyClaim {
  workspaceId: string;
  key: string;
}

export async function beginIdempotent(
  platform: Platform,
  workspaceId: string,
  key: string,
  raw: Buffer,
): Promise<{ claim: IdempotencyClaim } | { replay: { status: number; body: unknown } }> {
  const db = platform.store.db;
  const digest = createHash('sha256').update(raw).digest('hex');
  const now = platform.now();
  // An expired key is free again.
  await db
    .deleteFrom('send_idempotency')
    .where('workspace_id', '=', workspaceId)
    .where('key', '=', key)
    .where('created_at', '<', new Date(now.getTime() - TTL_MS))
    .execute();
  const inserted = await db
    .insertInto('send_idempotency')
    .values({ workspace_id: workspaceId, key, request_digest: digest, created_at: now })
    .onConflict((oc) => oc.columns(['workspace_id', 'key']).doNothing())
    .returning('key')
    .executeTakeFirst();
  if (inserted) return { claim: { workspaceId, key } };
  const row = await db.selectFrom('send_idempotency').selectAll().where('workspace_id', '=', workspaceId).where('key', '=', key).executeTakeFirst();
  const conflict = (detail: string) => new HttpProblem(409, 'conflict', detail, { errors: [{ pointer: '/header/Idempotency-Key', detail }] });
  if (!row) throw conflict('The request with this Idempotency-Key is in progress; retry shortly.');
  if (row.request_digest !== digest) throw conflict('This Idempotency-Key was used with a different body.');
  if (row.status_code === null) throw conflict('The request with this Idempotency-Key is in progress; retry shortly.');
  return { replay: { status: row.status_code, body: row.response } };
}

/** Stores the answer, or frees the key (status null) when the request changed nothing. */
export async function finishIdempotent(platform: Platform, claim: IdempotencyClaim, status: number | null, body: unknown): Promise<void> {
  const db = platform.store.db;
  const where = db.updateTable('send_idempotency').where('workspace_id', '=', claim.workspaceId).where('key', '=', claim.key);
  if (status === null) {
    await db
      .deleteFrom('send_idempotency')
      .where('workspace_id', '=', claim.workspaceId)
      .where('key', '=', claim.key)
      .where('status_code', 'is', null)
      .execute();
    return;
  }
  await where.set({ status_code: status, response: sql`${JSON.stringify(body)}::jsonb` as never }).execute();
}
