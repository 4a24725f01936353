// Limits that hold across the fleet (REDIS_URL): two apps on one database and one real
// redis-server share every bucket, so one key round-robined over both gets exactly the
// documented limit, and failed authentications counted on one instance lock the guesser out on
// the other. Redis away: every request is still served (fail open, never a 500), and the limits
// resume when it is back.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Store } from '#server/store/db.js';
import { buildShared } from '#test/helper.js';
import { eventually } from '#test/support/eventually.js';
import { hasRedis, startRedis, type TestRedis } from '#test/support/redis-server.js';
import { openTestStore } from '#test/support/store.js';
import { freePort } from '#test/support/free-port.js';
import { loggedApp } from '../../security/logged-app.js';
import { createKey, signUp } from '../account/support.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 });

const AUTHED = '/api/chatapp/connections'; // listConnections: needs a Messaging key
const LIMIT = 12;
const FAILURES = 4;

describe.skipIf(!hasRedis)('limits in Redis across two instances', () => {
  let redis: TestRedis;
  let store: Store;
  let a: FastifyInstance;
  let b: FastifyInstance;
  let token: string;

  beforeAll(async () => {
    redis = await startRedis();
    store = await openTestStore();
    const env = {
      REDIS_URL: redis.url,
      SECRET_KEY: 'redis-limits-secret-key-shared-by-both-instances',
      RATE_LIMIT_PER_MINUTE: String(LIMIT),
      AUTH_FAILURES_PER_IP: String(FAILURES),
    };
    a = await buildShared({ env, overrides: { store } });
    b = await buildShared({ env, overrides: { store } });
    await Promise.all([a.ready(), b.ready()]);
    await eventually(() => a.platform.redis?.ready && b.platform.redis?.ready, { what: 'both instances connected to Redis' });
    token = (await signUp(a, 'redis-limits')).token;
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await store?.close();
    await redis?.stop();
  });

  it('one key round-robined over both instances gets exactly the documented limit, then 429 on either', async () => {
    const { secret } = await createKey(a, token, { name: 'fleet limit' });
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT + 6; i++) {
      const app = i % 2 ? b : a;
      const res = await app.inject({ url: AUTHED, headers: { 'x-api-key': secret } });
      statuses.push(res.statusCode);
      if (i === 0) expect(res.headers['ratelimit-limit']).toBe(String(LIMIT));
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
    expect(statuses.slice(LIMIT).every((s) => s === 429)).toBe(true);
    await a.platform.redis!.ping();
  });

  it('failed authentications counted on A lock the IP out on B, for a valid key too', async () => {
    const { secret } = await createKey(a, token, { name: 'victim' });
    const ip = '10.9.9.9';
    const guess = (app: FastifyInstance, n: number) =>
      app.inject({ url: AUTHED, remoteAddress: ip, headers: { 'x-api-key': `mk_${String(n).padStart(40, 'x')}` } });
    for (let i = 0; i < FAILURES; i++) expect((await guess(i % 2 ? b : a, i)).statusCode).toBe(401);
    const valid = await b.inject({ url: AUTHED, remoteAddress: ip, headers: { 'x-api-key': secret } });
    expect(valid.statusCode).toBe(429);
    // Another IP with the same key is not held back.
    expect((await a.inject({ url: AUTHED, remoteAddress: '10.9.9.10', headers: { 'x-api-key': secret } })).statusCode).toBe(200);
  });

  it('a revoked key presented through both instances: its own count is shared, 429 past it on either', async () => {
    const key = await createKey(a, token, { name: 'revoked' });
    const revoked = await a.inject({ method: 'POST', url: `/api/account/api-keys/${key.id}/revoke`, headers: { authorization: `Bearer ${token}` } });
    expect(revoked.statusCode).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < FAILURES + 2; i++) {
      statuses.push((await (i % 2 ? b : a).inject({ url: AUTHED, remoteAddress: `10.8.8.${i}`, headers: { 'x-api-key': key.secret } })).statusCode);
    }
    expect(statuses).toEqual([...Array(FAILURES).fill(401), 429, 429]);
  });

  it('Redis away: every request is served (no 500, limits fail open); back: the limits resume', async () => {
    const { secret } = await createKey(a, token, { name: 'outage' });
    await redis.stop();
    await eventually(() => !a.platform.redis!.ready && !b.platform.redis!.ready, { what: 'both instances see Redis gone' });
    const during: number[] = [];
    for (let i = 0; i < LIMIT + 4; i++) during.push((await (i % 2 ? b : a).inject({ url: AUTHED, headers: { 'x-api-key': secret } })).statusCode);
    expect(during.every((s) => s === 200)).toBe(true);
    await expect(a.platform.redis!.ping()).rejects.toThrow();
    await redis.start();
    await eventually(() => a.platform.redis!.ready && b.platform.redis!.ready, { within: 15_000, what: 'both instances reconnected' });
    // The restarted Redis is empty: a fresh bucket, counted again across both instances.
    const after: number[] = [];
    for (let i = 0; i < LIMIT + 2; i++) after.push((await (i % 2 ? b : a).inject({ url: AUTHED, headers: { 'x-api-key': secret } })).statusCode);
    expect(after.filter((s) => s === 200)).toHaveLength(LIMIT);
    expect(after.slice(LIMIT)).toEqual([429, 429]);
  });
});

describe('what start-up says about the limits', () => {
  it('on PostgreSQL without REDIS_URL: once, that limits are per instance; on the embedded store: nothing', async () => {
    // The store is the test's; only the configuration says PostgreSQL, which is what the warning reads.
    const shared = await loggedApp({ env: { DATABASE_URL: 'postgres://fleet:fleet@127.0.0.1:1/fleet' }, level: 'warn' });
    expect(shared.lines.filter((l) => l.includes('Rate limits and failure counters are per instance'))).toHaveLength(1);
    const single = await loggedApp({ level: 'warn' });
    expect(single.lines.filter((l) => l.includes('per instance'))).toEqual([]);
  });

  it('REDIS_URL unreachable from the start: requests are served (no 500) with one warning, not one per request', async () => {
    const port = await freePort(); // nothing listens there
    const { app, lines } = await loggedApp({ env: { REDIS_URL: `redis://127.0.0.1:${port}`, RATE_LIMIT_PER_MINUTE: '3' }, level: 'warn' });
    const { token } = await signUp(app, 'redis-down');
    const { secret } = await createKey(app, token, { name: 'down' });
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await app.inject({ url: AUTHED, headers: { 'x-api-key': secret } })).statusCode);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200]); // over the limit of 3: the limiter fails open
    expect(lines.filter((l) => l.includes('Redis was not reachable at start'))).toHaveLength(1);
    expect(lines.filter((l) => l.includes('"level":50'))).toEqual([]);
  });
});
