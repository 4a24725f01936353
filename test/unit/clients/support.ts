// A listening server for the client tests (the clients speak real HTTP), on a movable clock.
import type { FastifyInstance } from 'fastify';
import { appWithClock, type Clock } from '../webhooks/support.js';
import { eventually } from '#test/support/eventually.js';

export interface Served {
  app: FastifyInstance;
  clock: Clock;
  baseUrl: string;
}

/** One app per file, listening on 127.0.0.1 (the per-IP limit raised: every call comes from there). */
export async function serve(): Promise<Served> {
  // A jump of the movable clock wakes no sleeping worker: the Login expiry sweep (which sleeps until
  // the earliest expiry) re-checks every half second here instead of every minute (WORKER_IDLE_MS).
  const { app, clock } = await appWithClock({ env: { RATE_LIMIT_IP_PER_MINUTE: '100000', WORKER_IDLE_MS: '500' } });
  const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, clock, baseUrl };
}

/** Waits until `ok` holds (test/support/eventually.ts). */
export async function until(ok: () => boolean | Promise<boolean>, ms = 8000): Promise<void> {
  await eventually(ok, { within: ms });
}
