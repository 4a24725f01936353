// Group K of the bad-inputs catalogue: rate limits and exhaustion. One app with tiny limits
// (3 a minute per credential, 2 per IP); every test uses its own IPs and workspaces, so buckets
// never mix. The limiter keeps its buckets in memory (server/plugins/rate-limits.ts, per
// instance, as docs say): a refusal changes no table.
import net from 'node:net';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildShared } from '../helper.js';
import { LIMITS } from '#server/limits.js';
import { PASSWORD_COST } from '#server/lib/secrets.js';
import { sendFromSandboxPhone } from '#server/apis/messaging/sandbox-phone/phone.js';
import { STREAMS_PER_SESSION } from '#server/apis/login/events-stream.js';
import { MAX_FAILURES } from '#server/apis/account/sign-in-throttle.js';
import { MAX_MISSES } from '#server/apis/login/verification.js';
import { AUTH_FAILURE_WINDOW_MS, DEAD_FAILURES_PER_WORKSPACE_FACTOR } from '#server/auth/auth-failures.js';
import { issueOwnerToken } from '#server/auth/owner-jwt.js';
import { revokeFamily } from '#server/apis/connect/oauth/tokens.js';
import { connectBearer } from '../support/connect.js';
import { expectNoChange, expectProblem, workspace, workspaces, type Workspace } from './support.js';
import { elapse, eventually } from '../support/eventually.js';

// Two apps and a loaded machine: building them can take minutes.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 400_000 });

const AUTH_FAILURES = 20; // bad-inputs K3; also the default of AUTH_FAILURES_PER_IP
let app: FastifyInstance;
let loose: FastifyInstance; // default limits: for what the tiny ones would hide
beforeAll(async () => {
  app = await buildShared({ env: { RATE_LIMIT_PER_MINUTE: '3', RATE_LIMIT_IP_PER_MINUTE: '2' } });
  // The default AUTH_FAILURES_PER_IP (test/helper.ts raises it for other suites); bad-inputs K3 uses its own IPs.
  // The production password cost: bad-inputs K9 proves that hashing at that cost is bounded.
  loose = await buildShared({
    env: { RATE_LIMIT_PER_MINUTE: '100000', RATE_LIMIT_IP_PER_MINUTE: '100000', AUTH_FAILURES_PER_IP: String(AUTH_FAILURES) },
    overrides: { passwordCost: PASSWORD_COST },
  });
});

let nextIp = 1;
const ip = () => `10.77.${Math.floor(nextIp / 250)}.${(nextIp++ % 250) + 1}`;

function expectLimited(res: LightMyRequestResponse, html = false) {
  expect(res.statusCode, res.body).toBe(429);
  expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  if (!html) expectProblem(res, 429, 'rate-limited');
}

describe('K1 K2 K3 K4 the limiter', () => {
  it('K1 a burst over one key: 429 rate-limited with Retry-After; RateLimit-Limit/-Remaining/-Reset on every answer; other keys unaffected', async () => {
    const { a, b } = await workspaces(app);
    const from = ip();
    const call = (headers: Record<string, string>) => app.inject({ url: '/api/contacts', headers, remoteAddress: from });
    for (let i = 0; i < 3; i++) {
      const res = await call(a.headers);
      expect(res.statusCode).toBe(200);
      expect(res.headers).toMatchObject({ 'ratelimit-limit': '3', 'ratelimit-remaining': String(2 - i) });
      expect(Number(res.headers['ratelimit-reset'])).toBeGreaterThan(0);
    }
    const limited = await expectNoChange(app, () => call(a.headers));
    expectLimited(limited);
    expect(limited.headers).toMatchObject({ 'ratelimit-limit': '3', 'ratelimit-remaining': '0' });
    const other = await call(b.headers);
    expect(other.statusCode).toBe(200);
    expect(other.headers['ratelimit-remaining']).toBe('2');
  });

  const PUBLIC: [string, (from: string) => Promise<LightMyRequestResponse>, boolean][] = [
    [
      'token',
      (from) =>
        app.inject({
          method: 'POST',
          url: '/api/oauth/token',
          remoteAddress: from,
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: 'grant_type=authorization_code&code=x&client_id=cl_none&redirect_uri=https%3A%2F%2Fcrm.test%2Fcb',
        }),
      false,
    ],
    [
      'authorize',
      (from) => app.inject({ url: '/connect/authorize?client_id=cl_none&response_type=code&redirect_uri=https%3A%2F%2Fcrm.test%2Fcb', remoteAddress: from }),
      false,
    ],
    [
      'sign-in',
      (from) =>
        app.inject({
          method: 'POST',
          url: '/api/account/sessions',
          remoteAddress: from,
          payload: { email: 'nobody@example.test', password: 'wrong-password' },
        }),
      false,
    ],
    ['/l/<slug>', (from) => app.inject({ url: '/l/doesnotexist0000', remoteAddress: from }), true],
  ];
  it.each(PUBLIC)('K2 a burst from one IP on %s: 429 for it (no change), not for another IP', async (_name, call, html) => {
    const from = ip();
    for (let i = 0; i < 2; i++) expect((await call(from)).statusCode).not.toBe(429);
    expectLimited(await expectNoChange(app, () => call(from)), html);
    expect((await call(ip())).statusCode).not.toBe(429);
  });

  it('K2 start: a burst with one Login key is limited per key', async () => {
    const w = await workspace(app);
    const start = () => app.inject({ method: 'POST', url: '/v1/auth/chatapp/start', headers: { 'x-api-key': w.loginKey }, payload: {}, remoteAddress: ip() });
    for (let i = 0; i < 3; i++) expect((await start()).statusCode).toBe(201);
    expectLimited(await expectNoChange(app, start));
  });

  // Second buckets (server/plugins/rate-limits.ts): per IP on start, per client_id on token.
  it('K2 start also per IP: one IP cycling through Login keys is limited', async () => {
    const keys = await Promise.all([1, 2, 3, 4].map(async () => (await workspace(app)).loginKey));
    const from = ip();
    const codes = [];
    for (const key of keys)
      codes.push(
        (await app.inject({ method: 'POST', url: '/v1/auth/chatapp/start', headers: { 'x-api-key': key }, payload: {}, remoteAddress: from })).statusCode,
      );
    expect(codes).toContain(429);
  });

  it('K2 token also per client_id: one client_id from many IPs is limited', async () => {
    const codes = [];
    for (let i = 0; i < 6; i++) codes.push((await PUBLIC[0]![1](ip())).statusCode);
    expect(codes).toContain(429);
  });

  it(`K3 sign-in: ${MAX_FAILURES} failures from one IP (any emails), then 429 for further attempts from it`, async () => {
    const from = ip();
    const signIn = (n: number) =>
      loose.inject({
        method: 'POST',
        url: '/api/account/sessions',
        remoteAddress: from,
        payload: { email: `nobody${n}@example.test`, password: 'wrong-password' },
      });
    for (let i = 0; i < MAX_FAILURES; i++) expect((await signIn(i)).statusCode).toBe(401);
    // sign_in_failures is the throttle's own table: a refused attempt must not grow it further.
    expectLimited(await expectNoChange(loose, () => signIn(99)));
  });

  it('K4 status polled 100 times a second: 429 before any database work', async () => {
    const w = await workspace(app);
    const started = await app.inject({ method: 'POST', url: '/v1/auth/chatapp/start', headers: { 'x-api-key': w.loginKey }, payload: {} });
    expect(started.statusCode).toBe(201);
    const status = () => app.inject({ url: `/v1/auth/chatapp/status/${started.json().sessionId}`, headers: { 'x-api-key': w.loginKey } });
    const reads = vi.spyOn(app.platform.store.db, 'selectFrom');
    const touched = () => reads.mock.calls.filter(([table]) => ['login_sessions', 'login_apps', 'api_keys'].includes(String(table).split(' ')[0]!));
    for (let i = 0; i < 2; i++) expect((await status()).statusCode).toBe(200);
    expect(touched().length).toBeGreaterThan(0); // the spy sees what an answered poll reads
    reads.mockClear();
    const t0 = Date.now();
    const answers = await Promise.all(Array.from({ length: 100 }, status));
    const after = touched();
    reads.mockRestore();
    expect(Date.now() - t0).toBeLessThan(5_000);
    for (const res of answers) expectLimited(res);
    expect(after).toEqual([]);
  });
});

// Failed credential authentications per IP (server/auth/auth-failures.ts): AUTH_FAILURES 401s for
// presented credentials nobody knows within AUTH_FAILURE_WINDOW_MS, then 429 for any credential
// from that IP. (Revoked and expired credentials count elsewhere: bad-inputs K10-K12 below.)
describe('K3 failed credential authentications per IP', () => {
  const contacts = (from: string, headers: Record<string, string> = {}) => loose.inject({ url: '/api/contacts', headers, remoteAddress: from });
  const guessKey = (i: number) => ({ 'x-api-key': `mk_${String(i).padStart(40, 'G')}` }); // well-formed: looked up if let through
  async function exhaust(from: string, failures = AUTH_FAILURES) {
    for (let i = 0; i < failures; i++) expect((await contacts(from, guessKey(i))).statusCode).toBe(401);
  }

  it(`K3 ${AUTH_FAILURES} failed API-key authentications from one IP: 429 for further attempts from it, a valid key included`, async () => {
    const w = await workspace(loose);
    const from = ip();
    expect((await contacts(from, w.headers)).statusCode).toBe(200);
    await exhaust(from);
    const refused = await expectNoChange(loose, () => contacts(from, w.headers));
    expectLimited(refused);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(AUTH_FAILURE_WINDOW_MS / 1000);
    expectLimited(await contacts(from, guessKey(99)));
  });

  it('K3 every credential kind counts (Messaging key, Login key, owner JWT, Connect bearer) and each is then refused', async () => {
    const w = await workspace(loose);
    const from = ip();
    const kinds: [string, (headers: Record<string, string>) => Promise<LightMyRequestResponse>, Record<string, string>, Record<string, string>][] = [
      ['messaging key', (headers) => contacts(from, headers), { authorization: 'ApiKey mk_nope' }, w.headers],
      [
        'login key',
        (headers) => loose.inject({ method: 'POST', url: '/v1/auth/chatapp/start', headers, payload: {}, remoteAddress: from }),
        { 'x-api-key': 'lk_live_nope' },
        { 'x-api-key': w.loginKey },
      ],
      [
        'owner JWT',
        (headers) => loose.inject({ url: '/api/account/api-keys', headers, remoteAddress: from }),
        { authorization: 'Bearer not.a.jwt' },
        { authorization: w.owner },
      ],
      [
        'connect bearer',
        (headers) => loose.inject({ url: '/api/connect/documents', headers, remoteAddress: from }),
        { authorization: 'Bearer ct_nope' },
        { authorization: w.connect },
      ],
    ];
    for (let i = 0; i < AUTH_FAILURES; i++) {
      const [name, call, bad] = kinds[i % kinds.length]!;
      expect((await call(bad)).statusCode, name).toBe(401);
    }
    for (const [name, call, , good] of kinds) {
      const res = await call(good);
      expect(res.statusCode, name).toBe(429);
      expectLimited(res);
    }
  });

  it('K3 after the threshold, a request without a credential still gets its 401 (and does not count)', async () => {
    const from = ip();
    for (let i = 0; i < AUTH_FAILURES + 5; i++) expectProblem(await contacts(from), 401, 'unauthorized');
    expect((await contacts(from, guessKey(1))).statusCode).toBe(401); // no-credential 401s counted nothing
    await exhaust(from, AUTH_FAILURES - 1);
    expectLimited(await contacts(from, guessKey(2)));
    const res = await contacts(from);
    expectProblem(res, 401, 'unauthorized');
    expect(res.headers['www-authenticate']).toMatch(/ApiKey/);
  });

  it('K3 another IP is unaffected', async () => {
    const w = await workspace(loose);
    const from = ip();
    await exhaust(from);
    expectLimited(await contacts(from, w.headers));
    expect((await contacts(ip(), w.headers)).statusCode).toBe(200);
    expect((await contacts(ip(), guessKey(3))).statusCode).toBe(401);
  });

  it('K3 a success does not reset the count: a valid key cannot launder guesses', async () => {
    const w = await workspace(loose);
    const from = ip();
    await exhaust(from, AUTH_FAILURES - 1);
    expect((await contacts(from, w.headers)).statusCode).toBe(200);
    expect((await contacts(from, guessKey(4))).statusCode).toBe(401);
    expectLimited(await contacts(from, w.headers));
  });

  it('K3 the 429 comes before any key lookup or hashing', async () => {
    const from = ip();
    await exhaust(from);
    const reads = vi.spyOn(loose.platform.store.db, 'selectFrom');
    const digests = vi.spyOn(loose.platform.secrets, 'digest');
    try {
      // The spies see what a guess from a fresh IP costs, so they can fail.
      expect((await contacts(ip(), guessKey(5))).statusCode).toBe(401);
      expect(reads.mock.calls.length).toBeGreaterThan(0);
      expect(digests.mock.calls.length).toBeGreaterThan(0);
      reads.mockClear();
      digests.mockClear();
      for (let i = 0; i < 10; i++) expectLimited(await contacts(from, guessKey(100 + i)));
      expect(reads.mock.calls).toEqual([]);
      expect(digests.mock.calls).toEqual([]);
    } finally {
      reads.mockRestore();
      digests.mockRestore();
    }
  });

  it(`K3 the window ends ${AUTH_FAILURE_WINDOW_MS / 60_000} minutes after the first failure`, async () => {
    const w = await workspace(loose);
    const from = ip();
    const firstBefore = Date.now();
    await exhaust(from);
    const firstAfter = Date.now();
    // The limiter's store reads Date.now(); only Date is faked, timers and I/O stay real.
    vi.useFakeTimers({ toFake: ['Date'], now: firstBefore + AUTH_FAILURE_WINDOW_MS - 1_000 });
    try {
      expectLimited(await contacts(from, w.headers));
      vi.setSystemTime(firstAfter + AUTH_FAILURE_WINDOW_MS);
      expect((await contacts(from, w.headers)).statusCode).toBe(200);
      await exhaust(from); // a fresh window counts from zero again
      expectLimited(await contacts(from, w.headers));
    } finally {
      vi.useRealTimers();
    }
  });
});

// A credential we issued that is now revoked or expired counts against itself and its workspace,
// never the IP (server/auth/auth-failures.ts): one tenant's dead token must not lock out the
// other tenants behind the same address (a CRM serving many workspaces, an office behind NAT).
describe('K10 K11 K12 revoked and expired credentials', () => {
  const db = () => loose.platform.store.db; // built in beforeAll
  const documents = (from: string, authorization: string) => loose.inject({ url: '/api/connect/documents', headers: { authorization }, remoteAddress: from });
  const contacts = (from: string, headers: Record<string, string>) => loose.inject({ url: '/api/contacts', headers, remoteAddress: from });
  const guessKey = (i: number) => ({ 'x-api-key': `mk_${String(i).padStart(40, 'H')}` });
  const tokenRow = (bearer: string) =>
    db()
      .selectFrom('connect_tokens')
      .select(['grant_id', 'family_id'])
      .where('digest', '=', loose.platform.secrets.digest(bearer.replace(/^Bearer /, '')))
      .executeTakeFirstOrThrow();

  /** A Connect bearer of `w` revoked as refresh-reuse detection and code reuse revoke one: its whole family. */
  async function familyRevokedBearer(w: Workspace): Promise<string> {
    const bearer = `Bearer ${await connectBearer(loose, w.workspaceId)}`;
    await revokeFamily(db(), (await tokenRow(bearer)).family_id, new Date());
    return bearer;
  }

  it("K10 100 calls with one grant's revoked token do not stop another grant's valid token from the same address", async () => {
    const { a, b } = await workspaces(loose);
    const from = ip();
    // A's owner revokes A's grant (owner API): its bearer is dead.
    const revoked = await loose.inject({
      method: 'POST',
      url: `/api/connect/grants/${(await tokenRow(a.connect)).grant_id}/revoke`,
      headers: { authorization: a.owner },
    });
    expect(revoked.statusCode, revoked.body).toBe(200);
    const answers = [];
    for (let i = 0; i < 100; i++) answers.push((await documents(from, a.connect)).statusCode);
    expect(answers.slice(0, AUTH_FAILURES)).toEqual(Array(AUTH_FAILURES).fill(401));
    expect(new Set(answers.slice(AUTH_FAILURES))).toEqual(new Set([429])); // the dead token is limited itself (bad-inputs K11)
    expect((await documents(from, b.connect)).statusCode).toBe(200);
    expect((await contacts(from, b.headers)).statusCode).toBe(200);
    expect((await contacts(from, a.headers)).statusCode).toBe(200); // A's other, live credentials too
    expect((await contacts(from, guessKey(1))).statusCode).toBe(401); // the IP counted nothing
  });

  it('K10 every kind of dead credential counts against itself, not the IP: revoked, expired and rotated Messaging keys, rotated and deleted Login keys, Connect bearers revoked by grant, by family (refresh or code reuse) and expired, an expired owner JWT', async () => {
    // Three kinds in each of three workspaces, under each workspace's own count (bad-inputs K11).
    const [w, v, u, other] = [await workspace(loose), await workspace(loose), await workspace(loose), await workspace(loose)];
    const from = ip();
    const now = new Date();
    const newKey = async () =>
      (
        await loose.inject({
          method: 'POST',
          url: '/api/account/api-keys',
          headers: { authorization: w.owner },
          payload: { name: 'k10', scopes: ['messaging:read'] },
        })
      ).json() as { id: string; secret: string };
    const revokedKey = await newKey();
    expect((await loose.inject({ method: 'POST', url: `/api/account/api-keys/${revokedKey.id}/revoke`, headers: { authorization: w.owner } })).statusCode).toBe(
      200,
    );
    const expiredKey = await newKey();
    await db()
      .updateTable('api_keys')
      .set({ expires_at: new Date(now.getTime() - 1000) })
      .where('id', '=', expiredKey.id)
      .execute();
    const grantRevoked = `Bearer ${await connectBearer(loose, w.workspaceId)}`;
    await db()
      .updateTable('connect_grants')
      .set({ status: 'revoked', revoked_at: now })
      .where('id', '=', (await tokenRow(grantRevoked)).grant_id)
      .execute();
    const expiredBearer = `Bearer ${await connectBearer(loose, v.workspaceId)}`;
    await db()
      .updateTable('connect_tokens')
      .set({ expires_at: new Date(now.getTime() - 1000) })
      .where('digest', '=', loose.platform.secrets.digest(expiredBearer.slice(7)))
      .execute();
    const expiredOwner = `Bearer ${(await issueOwnerToken(loose.platform, { workspaceId: v.workspaceId, ownerId: v.ownerId }, 'owner-api', -60)).token}`;
    // Rotated away, or gone with their Login app: known by their retired digests.
    const rotatedKey = (
      await loose.inject({
        method: 'POST',
        url: '/api/account/api-keys',
        headers: { authorization: u.owner },
        payload: { name: 'k10', scopes: ['messaging:read'] },
      })
    ).json();
    expect((await loose.inject({ method: 'POST', url: `/api/account/api-keys/${rotatedKey.id}/rotate`, headers: { authorization: u.owner } })).statusCode).toBe(
      200,
    );
    const loginApp = await db().selectFrom('login_apps').select('id').where('workspace_id', '=', u.workspaceId).executeTakeFirstOrThrow();
    expect((await loose.inject({ method: 'POST', url: `/api/login/apps/${loginApp.id}/rotate-api-key`, headers: { authorization: u.owner } })).statusCode).toBe(
      200,
    );
    const deletedApp = (
      await loose.inject({
        method: 'POST',
        url: '/api/login/apps',
        headers: { authorization: u.owner },
        payload: { name: 'Gone', webhook_destination: 'hosted' },
      })
    ).json();
    expect((await loose.inject({ method: 'DELETE', url: `/api/login/apps/${deletedApp.id}`, headers: { authorization: u.owner } })).statusCode).toBe(204);
    const start = (key: string) =>
      loose.inject({ method: 'POST', url: '/v1/auth/chatapp/start', headers: { 'x-api-key': key }, payload: {}, remoteAddress: from });
    const kinds: [string, () => Promise<LightMyRequestResponse>][] = [
      ['rotated Messaging key', () => contacts(from, { 'x-api-key': rotatedKey.secret })],
      ['rotated Login key', () => start(u.loginKey)],
      ['Login key of a deleted app', () => start(deletedApp.api_key)],
      ['revoked Messaging key', () => contacts(from, { 'x-api-key': revokedKey.secret })],
      ['expired Messaging key', () => contacts(from, { authorization: `ApiKey ${expiredKey.secret}` })],
      ['bearer of a revoked grant', () => documents(from, grantRevoked)],
      ['bearer of a revoked family', async () => documents(from, await familyRevokedBearer(v))],
      ['expired bearer', () => documents(from, expiredBearer)],
      ['expired owner JWT', () => loose.inject({ url: '/api/account/api-keys', headers: { authorization: expiredOwner }, remoteAddress: from })],
    ];
    // AUTH_FAILURES failures of each kind from one IP: nine times what trips the IP if counted there.
    for (const [name, call] of kinds) {
      for (let i = 0; i < AUTH_FAILURES; i++) expect((await call()).statusCode, name).toBe(401);
    }
    expect((await contacts(from, other.headers)).statusCode).toBe(200);
    expect((await documents(from, other.connect)).statusCode).toBe(200);
    expect((await contacts(from, guessKey(2))).statusCode).toBe(401);
  });

  it(`K11 a dead credential presented over and over: ${AUTH_FAILURES} 401s, then 429 rate-limited with Retry-After before any lookup; nothing else held back`, async () => {
    const w = await workspace(loose);
    const dead = await familyRevokedBearer(w);
    // From many addresses: the count follows the credential, not the IP.
    for (let i = 0; i < AUTH_FAILURES; i++) expectProblem(await documents(ip(), dead), 401, 'unauthorized');
    const reads = vi.spyOn(loose.platform.store.db, 'selectFrom');
    try {
      const refused = await expectNoChange(loose, () => documents(ip(), dead));
      expectLimited(refused);
      expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(AUTH_FAILURE_WINDOW_MS / 1000);
      expect(reads.mock.calls.filter(([table]) => String(table).startsWith('connect_tokens'))).toEqual([]);
    } finally {
      reads.mockRestore();
    }
    expect((await documents(ip(), w.connect)).statusCode).toBe(200);
    expect((await documents(ip(), await familyRevokedBearer(w))).statusCode).toBe(401); // another dead one has its own count
  });

  it(`K11 a workspace's dead credentials together: ${DEAD_FAILURES_PER_WORKSPACE_FACTOR * AUTH_FAILURES} 401s, then 429 for its dead credentials, even new ones; its live ones and other workspaces unaffected`, async () => {
    const { a, b } = await workspaces(loose);
    const perWorkspace = DEAD_FAILURES_PER_WORKSPACE_FACTOR * AUTH_FAILURES;
    for (let n = 0; n < perWorkspace; n += AUTH_FAILURES - 1) {
      const dead = await familyRevokedBearer(a); // each under its own count
      for (let i = 0; i < Math.min(AUTH_FAILURES - 1, perWorkspace - n); i++) expect((await documents(ip(), dead)).statusCode).toBe(401);
    }
    expectLimited(await documents(ip(), await familyRevokedBearer(a))); // never seen: looked up, then refused
    expect((await documents(ip(), a.connect)).statusCode).toBe(200);
    expect((await contacts(ip(), a.headers)).statusCode).toBe(200);
    expect((await documents(ip(), await familyRevokedBearer(b))).statusCode).toBe(401);
  });

  it('K12 unknown credentials still trip the per-IP limit; dead ones beside them count nothing there, and a guess beside a dead token counts per IP', async () => {
    const { a, b } = await workspaces(loose);
    const from = ip();
    const dead = await familyRevokedBearer(a);
    for (let i = 0; i < 2 * AUTH_FAILURES; i++) expect([401, 429]).toContain((await documents(from, dead)).statusCode);
    for (let i = 0; i < AUTH_FAILURES; i++) expect((await contacts(from, guessKey(100 + i))).statusCode).toBe(401);
    expectLimited(await contacts(from, b.headers)); // the IP is over: every credential from it, as bad-inputs K3
    expectLimited(await documents(from, b.connect));
    // Two credential headers, one dead and one unknown: refused 400 before either is looked up
    // (bad-inputs A15), so they guess nothing and count nothing against the IP.
    const mixed = ip();
    const both = { authorization: await familyRevokedBearer(a), ...guessKey(200) };
    for (let i = 0; i < AUTH_FAILURES; i++)
      expect((await loose.inject({ url: '/api/connect/documents', headers: both, remoteAddress: mixed })).statusCode).toBe(400);
    expect((await documents(mixed, b.connect)).statusCode).toBe(200);
  });
});

describe('K5 guessed LOGIN codes', () => {
  // The code is 8 characters of a 31-symbol alphabet (server/apis/login/sessions.ts): about 39.6
  // bits. N = 10 misses per phone in 10 minutes, then that phone's LOGIN messages stop counting.
  const N = MAX_MISSES;
  const started = async (w: Awaited<ReturnType<typeof workspace>>) => {
    const res = await loose.inject({ method: 'POST', url: '/v1/auth/chatapp/start', headers: { 'x-api-key': w.loginKey }, payload: {} });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { sessionId: string; loginCode: string };
  };
  const statusOf = async (id: string) =>
    (await loose.platform.store.db.selectFrom('login_sessions').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status;
  const say = async (w: Awaited<ReturnType<typeof workspace>>, from: string, text: string) => {
    await sendFromSandboxPhone(loose, { phoneNumberId: w.pnId, from, name: 'Guess', text });
    await elapse(150, 'the code is counted after the bus event, with no answer to wait on');
  };
  const wrong = (code: string) => (code === 'ABCDEFGH' ? 'ABCDEFGJ' : 'ABCDEFGH');

  it('K5 control: a phone with no misses verifies with the right code', async () => {
    const w = await workspace(loose);
    const s = await started(w);
    await say(w, '+15550100301', `LOGIN ${s.loginCode}`);
    expect(await statusOf(s.sessionId)).toBe('success');
  });

  // MAX_MISSES in server/apis/login/verification.ts.
  it(`K5 after ${N} wrong codes from one phone in 10 minutes, its messages stop counting (even the right code)`, async () => {
    const w = await workspace(loose);
    const s = await started(w);
    for (let i = 0; i < N; i++) await say(w, '+15550100302', `LOGIN ${wrong(s.loginCode)}`);
    await say(w, '+15550100302', `LOGIN ${s.loginCode}`);
    expect(await statusOf(s.sessionId)).toBe('pending');
  });
});

describe('K6 event streams', () => {
  let base: string;
  beforeAll(async () => {
    base = await loose.listen({ port: 0, host: '127.0.0.1' });
  });

  it(`K6 1,000 streams for one session: ${STREAMS_PER_SESSION} open, the rest 429; closing one frees a slot`, async () => {
    const w = await workspace(loose);
    const s = (await loose.inject({ method: 'POST', url: '/v1/auth/chatapp/start', headers: { 'x-api-key': w.loginKey }, payload: {} })).json();
    const url = `${base}/v1/auth/chatapp/events/${s.sessionId}?token=${s.subscribeToken}`;
    // The responses are held as well: undici cancels the body of a Response that is garbage
    // collected, which closed open streams mid-loop and let five more in (seen once on CI).
    const open: { ctl: AbortController; res: Response }[] = [];
    const statuses: number[] = [];
    for (let i = 0; i < 1000; i++) {
      const ctl = new AbortController();
      const res = await fetch(url, { signal: ctl.signal });
      statuses.push(res.status);
      if (res.status === 200) open.push({ ctl, res });
      else await res.body?.cancel();
    }
    expect(statuses.filter((c) => c === 200)).toHaveLength(STREAMS_PER_SESSION);
    expect(statuses.filter((c) => c === 429)).toHaveLength(1000 - STREAMS_PER_SESSION);
    open.pop()!.ctl.abort();
    // The server frees the stream's slot when it sees the socket close, which nothing announces.
    let again = 429;
    await eventually(
      async () => {
        const ctl = new AbortController();
        const res = await fetch(url, { signal: ctl.signal });
        again = res.status;
        if (again === 200) open.push({ ctl, res });
        else await res.body?.cancel();
        return again !== 429;
      },
      { within: 2_500, every: 50 },
    ).catch(() => {});
    expect(again).toBe(200);
    for (const s of open) s.ctl.abort();
  });
});

describe('K7 slow clients (real socket)', () => {
  // Node's server enforces the deadlines; they are proved on an app whose deadlines are the
  // production ones scaled down (so the test does not wait out 40 s), and the production app is
  // checked to hand Node the real ones.
  const SHORT = { headersMs: 1_000, requestMs: 2_000, checkEveryMs: 100 };
  let port: number;
  let slow: FastifyInstance;
  beforeAll(async () => {
    slow = await buildShared({ overrides: { limits: SHORT } });
    port = Number(new URL(await slow.listen({ port: 0, host: '127.0.0.1' })).port);
  });

  it('K7 the server hands Node the production deadlines', () => {
    expect(app.server.headersTimeout).toBe(LIMITS.headersMs);
    expect(app.server.requestTimeout).toBe(LIMITS.requestMs);
    expect(LIMITS).toMatchObject({ headersMs: 10_000, requestMs: 30_000 });
  });

  /** Writes `chunks` one per `everyMs`; resolves with what the server sent and when the socket closed. */
  function trickle(chunks: string[], everyMs: number): Promise<{ closedAfterMs: number; answer: string }> {
    return new Promise((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      const t0 = Date.now();
      let answer = '';
      let i = 0;
      const timer = setInterval(() => (i < chunks.length && !socket.destroyed ? socket.write(chunks[i++]!) : undefined), everyMs);
      socket.on('data', (d) => (answer += d.toString()));
      socket.on('error', () => {});
      socket.on('close', () => {
        clearInterval(timer);
        resolve({ closedAfterMs: Date.now() - t0, answer });
      });
    });
  }

  it('K7 headers one byte at a time: closed at headersTimeout; others served meanwhile', async () => {
    const head = `GET /api/contacts HTTP/1.1\r\nHost: x\r\nX-Slow: ${'a'.repeat(200)}\r\n\r\n`;
    const slow = trickle(head.split(''), 50); // would take 10 s
    await elapse(200, 'a real socket: the slow client has begun trickling its headers');
    const other = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(other.status).toBeLessThan(500);
    const { closedAfterMs, answer } = await slow;
    expect(closedAfterMs).toBeGreaterThanOrEqual(SHORT.headersMs - 50);
    expect(closedAfterMs).toBeLessThan(SHORT.headersMs + 5 * SHORT.checkEveryMs + 1_000);
    expect(answer).toMatch(/^HTTP\/1\.1 408|^$/);
  });

  it('K7 a body trickled after the headers: closed at requestTimeout', async () => {
    const body = JSON.stringify({ name: 'x'.repeat(400) });
    // With a real key: without one the answer is 401 before any byte of the body is read (bad-inputs A16).
    const key = (await workspace(slow)).headers['x-api-key'];
    const head = `POST /api/contacts HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const { closedAfterMs, answer } = await trickle([head, ...body.split('')], 10); // would take 4 s
    expect(closedAfterMs).toBeGreaterThanOrEqual(SHORT.requestMs - 50);
    expect(closedAfterMs).toBeLessThan(SHORT.requestMs + 5 * SHORT.checkEveryMs + 1_000);
    expect(answer).toMatch(/^HTTP\/1\.1 408|^$/);
  });
});

describe('K8 K9 exhaustion', () => {
  it('K8 a campaign with 1,000,000 recipients; a flow with 100,000 nodes: 400 or 413, no job enqueued', async () => {
    const w = await workspace(loose);
    const ids = Array.from({ length: 1_000_000 }, (_, i) => `ct_${String(i).padStart(16, '0')}`);
    const nodes = Array.from({ length: 100_000 }, (_, i) => ({ id: `n${i}`, type: 'send_text', parameters: { text: 'Hi' } }));
    await expectNoChange(loose, async () => {
      for (const [url, payload] of [
        [
          '/api/campaigns',
          {
            name: 'Huge',
            chatapp_phone_number: w.number,
            audience: { type: 'contacts', contact_ids: ids },
            template: { name: 'welcome_offer', language: 'en_US' },
          },
        ],
        ['/api/automation', { name: 'Huge', waba_id: w.wabaId, triggers: [{ id: 't', type: 'message_received', parameters: {} }], nodes, connections: [] }],
      ] as const) {
        const res = await loose.inject({ method: 'POST', url, headers: w.headers, payload });
        expect([400, 413], `${url}: ${res.body.slice(0, 200)}`).toContain(res.statusCode);
        expectProblem(res, res.statusCode, res.statusCode === 413 ? 'payload-too-large' : 'validation');
      }
    });
  });

  // Two scrypt calls at a time and a queue of 16 (server/lib/secrets.ts); beyond it 429.
  it('K9 100 concurrent sign-ins with wrong passwords: hashing bounded, beyond it 429 or 503', async () => {
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        loose.inject({
          method: 'POST',
          url: '/api/account/sessions',
          remoteAddress: `10.99.${i >> 8}.${i & 255}`,
          payload: { email: `k9-${i}@example.test`, password: 'wrong-password' },
        }),
      ),
    );
    const codes = answers.map((r) => r.statusCode);
    expect(codes.every((c) => [401, 429, 503].includes(c))).toBe(true);
    expect(codes.filter((c) => c === 429 || c === 503).length).toBeGreaterThan(0);
  }, 300_000);
});
