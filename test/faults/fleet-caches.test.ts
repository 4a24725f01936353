// Coherent caches across instances (docs/deploy.md, "What each instance caches"): two server
// processes on one PostgreSQL. Each keeps verified credentials for a few seconds; a change made
// through one instance reaches the other's cache through LISTEN/NOTIFY (server/events/bus.ts),
// so a Messaging key revoked through A, and a Login key rotated through A, are refused by B
// within a second. B's cache is warmed first, so the refusal proves the invalidation, not a miss.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase, report, startServer, waitFor, type Server } from './support.js';

const MESSAGING = '/api/chatapp/connections'; // listConnections: a Messaging key
const LOGIN = '/v1/auth/chatapp/start'; // startLoginSession: a Login app key

let database: Awaited<ReturnType<typeof freshDatabase>>;
let a: Server;
let b: Server;

beforeAll(async () => {
  database = await freshDatabase();
  [a, b] = await Promise.all([startServer(database.url, { SEED: '1' }), startServer(database.url)]);
});
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await database?.close();
});

async function status(url: string, path: string, key: string, method = 'GET'): Promise<number> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: method === 'POST' ? '{}' : undefined,
  });
  await res.body?.cancel();
  return res.status;
}

/** Milliseconds from `change` resolving until B refuses the credential (polled, bounded by 1 s). */
async function refusedWithin(check: () => Promise<number>, change: () => Promise<void>): Promise<number> {
  await change();
  const changed = Date.now();
  await waitFor(async () => (await check()) === 401, 1_000, 'B refuses the credential');
  return Date.now() - changed;
}

describe('caches across instances', () => {
  it('a Messaging key revoked through A is refused by B within 1 s', async () => {
    const owner = a.info.owner!;
    const created = await fetch(`${a.info.url}/api/account/api-keys`, {
      method: 'POST',
      headers: { authorization: owner, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'fleet cache' }),
    });
    expect(created.status).toBe(201);
    const { id, secret } = (await created.json()) as { id: string; secret: string };
    for (let i = 0; i < 3; i++) expect(await status(b.info.url, MESSAGING, secret)).toBe(200); // in B's cache now
    const ms = await refusedWithin(
      () => status(b.info.url, MESSAGING, secret),
      async () => {
        const res = await fetch(`${a.info.url}/api/account/api-keys/${id}/revoke`, { method: 'POST', headers: { authorization: owner } });
        expect(res.status).toBe(200);
      },
    );
    report('fleet caches: messaging key revoked', { lost: 0, duplicated: 0, refused_after_ms: ms });
    expect(ms).toBeLessThan(1_000);
  });

  it('a Login key rotated through A: B refuses the old one within 1 s and accepts the new one', async () => {
    const old = a.info.apiKey!;
    expect(await status(b.info.url, LOGIN, old, 'POST')).toBe(201);
    let fresh = '';
    const ms = await refusedWithin(
      () => status(b.info.url, LOGIN, old, 'POST'),
      async () => {
        const res = await fetch(`${a.info.url}/api/login/apps/${a.info.appId}/rotate-api-key`, { method: 'POST', headers: { authorization: a.info.owner! } });
        expect(res.status).toBe(200);
        fresh = ((await res.json()) as { api_key: string }).api_key;
      },
    );
    report('fleet caches: login key rotated', { lost: 0, duplicated: 0, refused_after_ms: ms });
    expect(ms).toBeLessThan(1_000);
    expect(await status(b.info.url, LOGIN, fresh, 'POST')).toBe(201);
  });
});
