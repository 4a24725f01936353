// Shared steps of the webhook tests: an app on a movable clock, workspaces with a Connect bearer
// and a Messaging key, endpoint creation, and driving the outbox until a receiver has what we want.
import type { FastifyInstance } from 'fastify';
import { buildShared, type BuildOptions } from '#test/helper.js';
import { connectBearer } from '#test/support/connect.js';
import { eventually } from '#test/support/eventually.js';
import { bearer, createKey, signUp } from '../account/support.js';

export interface Clock {
  now: () => Date;
  /** Moves the clock forward (never backward: the outbox claims rows due by this clock). */
  advance(ms: number): void;
}

export function movableClock(): Clock {
  let offset = 0;
  return { now: () => new Date(Date.now() + offset), advance: (ms) => void (offset += ms) };
}

export async function appWithClock(options: BuildOptions = {}): Promise<{ app: FastifyInstance; clock: Clock }> {
  const clock = movableClock();
  const app = await buildShared({ ...options, overrides: { ...options.overrides, now: clock.now } });
  return { app, clock };
}

export interface Tenant {
  workspaceId: string;
  /** Headers with a Connect bearer of every scope. */
  connect: Record<string, string>;
  /** Headers with a Messaging API key (read and write). */
  messaging: Record<string, string>;
  owner: Record<string, string>;
}

export async function tenant(app: FastifyInstance): Promise<Tenant> {
  const signed = await signUp(app);
  const workspaceId = signed.workspace.id;
  const key = await createKey(app, signed.token);
  return {
    workspaceId,
    connect: bearer(await connectBearer(app, workspaceId)),
    messaging: { 'x-api-key': key.secret },
    owner: bearer(signed.token),
  };
}

/**
 * Runs outbox batches until `done()` holds (the background worker may deliver too): one batch
 * at once, then one at each platform event or every 20 ms (test/support/eventually.ts).
 */
export async function pump(app: FastifyInstance, done: () => boolean | Promise<boolean>, what = 'the condition'): Promise<void> {
  await eventually(async () => (await done()) || (await app.platform.outbox.runOnce(), await done()), { within: 5_000, what, app });
}

/** Whether the delivery's row is settled (not leased, not due now): no attempt is in flight. */
export async function settled(app: FastifyInstance, deliveryId: string): Promise<boolean> {
  const row = await app.platform.store.db
    .selectFrom('outbox')
    .select(['status', 'lease_until', 'attempts'])
    .where('id', '=', deliveryId)
    .executeTakeFirstOrThrow();
  return row.lease_until === null && row.attempts > 0;
}

export async function createConnectEndpoint(app: FastifyInstance, t: Tenant, body: Record<string, unknown>) {
  const res = await app.inject({ method: 'POST', url: '/api/connect/webhook-endpoints', headers: t.connect, payload: body });
  if (res.statusCode !== 201) throw new Error(`create endpoint failed: ${res.statusCode} ${res.body}`);
  return res.json() as { id: string; secret: string; [k: string]: unknown };
}
