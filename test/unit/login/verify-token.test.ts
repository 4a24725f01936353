// Verification tokens: single use (bad-inputs D7, and bad-inputs D8's 50-way race, which means something only on
// PostgreSQL: `npm run test:pg -- test/unit/login`), the contract's reasons in their order
// (bad-inputs D9–D12), another app's key (bad-inputs D11), and the JWKS route verifying a token with jose.
import { createHmac } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { buildShared } from '#test/helper.js';
import { onPostgres } from '#test/support/store.js';
import { forgeLoginToken } from '#test/support/login-keys.js';
import { insertLoginApp } from '#test/support/login-app.js';
import { sendFromSandboxPhone } from '#server/apis/messaging/sandbox-phone/phone.js';
import { eventually } from '#test/support/eventually.js';

let clock = Date.parse('2026-11-23T09:30:00Z');
let app: FastifyInstance;
// Instances on one database share SECRET_KEY (the signing key is sealed with it).
const env = { SECRET_KEY: 'login-verify-token-test-secret-key-0123' };

beforeAll(async () => {
  app = await buildShared({ env, overrides: { now: () => new Date(clock) } });
});

async function loginApp() {
  const { appId, apiKey, numbers } = await insertLoginApp(app);
  return { appId, apiKey, pn: numbers[0]! };
}
type LoginApp = Awaited<ReturnType<typeof loginApp>>;

/** A verified session of `a` and its token, through start, the sandbox phone and status. */
async function verifiedToken(a: LoginApp) {
  const start = await app.inject({ method: 'POST', url: '/v1/auth/chatapp/start', headers: { 'x-api-key': a.apiKey } });
  const { sessionId, loginCode } = start.json();
  await sendFromSandboxPhone(app, { phoneNumberId: a.pn.id, from: '+5511987654321', name: 'Ana Souza', text: `LOGIN ${loginCode}` });
  const status = await eventually(
    async () => {
      const answer = (await app.inject({ method: 'GET', url: `/v1/auth/chatapp/status/${sessionId}`, headers: { 'x-api-key': a.apiKey } })).json();
      return answer.verificationToken && answer;
    },
    { within: 3_000, what: 'the session to be verified', app },
  );
  return { sessionId, token: status.verificationToken as string, verifiedAt: status.verifiedAt as string };
}

const verify = (a: LoginApp, token: string) =>
  app.inject({
    method: 'POST',
    url: '/v1/auth/verify-token',
    headers: { 'x-api-key': a.apiKey, 'content-type': 'application/json' },
    payload: JSON.stringify({ token }),
  });

const forged = (claims: Record<string, unknown>, header: Record<string, unknown> = {}) => forgeLoginToken(app, claims, header);

describe('verify-token', () => {
  it('D7 once valid with the user, then already_used without user data; never cached', async () => {
    const a = await loginApp();
    const { sessionId, token, verifiedAt } = await verifiedToken(a);
    const first = await verify(a, token);
    expect(first.statusCode).toBe(200);
    expect(first.headers['cache-control']).toBe('no-store');
    expect(first.json()).toEqual({ valid: true, user: { phone: '+5511987654321', name: 'Ana Souza' }, sessionId, verifiedAt });
    for (let i = 0; i < 2; i++) expect((await verify(a, token)).json()).toEqual({ valid: false, reason: 'already_used' });
  });

  it(`D8 50 concurrent calls with one token: exactly one valid${onPostgres ? '' : ' (PGlite runs them one at a time: meaningful on PostgreSQL only)'}`, async () => {
    const a = await loginApp();
    const { token } = await verifiedToken(a);
    const answers = await Promise.all(Array.from({ length: 50 }, () => verify(a, token)));
    const verdicts = answers.map((r) => r.json());
    expect(verdicts.filter((v) => v.valid === true)).toHaveLength(1);
    expect(verdicts.filter((v) => v.valid === false && v.reason === 'already_used')).toHaveLength(49);
  });

  it("D11 app A's token with app B's key: wrong_app and not consumed; A still verifies it once", async () => {
    const [a, b] = [await loginApp(), await loginApp()];
    const { token } = await verifiedToken(a);
    expect((await verify(b, token)).json()).toEqual({ valid: false, reason: 'wrong_app' });
    expect((await verify(a, token)).json().valid).toBe(true);
    expect((await verify(b, token)).json()).toEqual({ valid: false, reason: 'wrong_app' }); // order: wrong_app before already_used
  });

  it('D9 alg none, and HS256 signed with the published public key: invalid_signature, not consumed', async () => {
    const a = await loginApp();
    const { token } = await verifiedToken(a);
    const [, payload] = token.split('.');
    const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const none = `${b64({ alg: 'none', typ: 'JWT' })}.${payload}.`;
    const kid = decodeProtectedHeader(token).kid;
    const jwk = JSON.stringify((await (await app.inject({ method: 'GET', url: '/v1/auth/.well-known/jwks.json' })).json()).keys[0]);
    const signingInput = `${b64({ alg: 'HS256', typ: 'JWT', kid })}.${payload}`;
    const hs256 = `${signingInput}.${createHmac('sha256', jwk).update(signingInput).digest('base64url')}`;
    for (const t of [none, hs256]) expect((await verify(a, t)).json(), t).toEqual({ valid: false, reason: 'invalid_signature' });
    expect((await verify(a, token)).json().valid).toBe(true);
  });

  it('D10 expired, future nbf, wrong iss, unknown kid, embedded jwk / jku header: invalid with the contract reason, nothing fetched', async () => {
    const a = await loginApp();
    const { token, sessionId } = await verifiedToken(a);
    const claims = decodeJwt(token);
    const t = Math.floor(clock / 1000);
    const ring = await app.loginSigningKeys.ring();
    const cases: [string, string][] = [
      [await forged({ ...claims, nbf: t + 3600 }), 'invalid_claims'],
      [await forged({ ...claims, iss: 'https://evil.example' }), 'invalid_claims'],
      [await forged({ ...claims, sub: 'not a phone' }), 'invalid_claims'],
      [await forged(claims, { kid: 'login-unknown' }), 'invalid_signature'],
      [await forged(claims, { jku: 'http://127.0.0.1:9/jwks.json', kid: 'elsewhere' }), 'invalid_signature'],
      [await forged(claims, { jwk: ring.jwks[0], kid: undefined }), 'invalid_signature'],
    ];
    for (const [forgedToken, reason] of cases) expect((await verify(a, forgedToken)).json(), reason).toEqual({ valid: false, reason });
    expect(sessionId).toBe(claims.sid);
    clock += 301_000; // exp is 5 minutes after verification
    expect((await verify(a, token)).json()).toEqual({ valid: false, reason: 'expired' });
    clock -= 301_000;
    expect((await verify(a, token)).json().valid).toBe(true); // none of those consumed it
  });

  it('D12 a payload byte changed: invalid_signature; a random string: malformed; "" : 400', async () => {
    const a = await loginApp();
    const { token } = await verifiedToken(a);
    const [h, p, s] = token.split('.');
    const payload = Buffer.from(p!, 'base64url').toString().replace('+5511987654321', '+5511987654322');
    const edited = `${h}.${Buffer.from(payload).toString('base64url')}.${s}`;
    expect((await verify(a, edited)).json()).toEqual({ valid: false, reason: 'invalid_signature' });
    for (const junk of ['not-a-jwt', 'a.b.c', `${h}.${p}`, 'x'.repeat(8000)])
      expect((await verify(a, junk)).json(), junk.slice(0, 20)).toEqual({ valid: false, reason: 'malformed' });
    const empty = await verify(a, '');
    expect(empty.statusCode).toBe(400);
    expect((await verify(a, token)).json().valid).toBe(true);
  });
});

describe('JWKS', () => {
  it("publishes the public key only, cacheable, and jose's createLocalJWKSet verifies a token with the contract's claims", async () => {
    const a = await loginApp();
    const { token, sessionId } = await verifiedToken(a);
    const res = await app.inject({ method: 'GET', url: '/v1/auth/.well-known/jwks.json' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('public, max-age=300');
    const jwks = res.json();
    expect(jwks.keys).toHaveLength(1);
    expect(Object.keys(jwks.keys[0]).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
    expect(jwks.keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks), {
      issuer: app.config.publicUrl,
      audience: a.appId,
      algorithms: ['ES256'],
      currentDate: new Date(clock),
    });
    expect(protectedHeader.kid).toBe(jwks.keys[0].kid);
    expect(payload).toMatchObject({ sub: '+5511987654321', sid: sessionId });
    expect(payload.exp! - payload.iat!).toBe(300);
    expect(payload.nbf).toBe(payload.iat);
    expect(typeof payload.jti).toBe('string');
  });

  it('the key is generated once and kept (sealed) in the database: another instance on it signs with the same kid', async () => {
    const other = await buildShared({ env, overrides: { now: () => new Date(clock), store: app.platform.store } });
    const keys = async (on: FastifyInstance) => (await on.inject({ method: 'GET', url: '/v1/auth/.well-known/jwks.json' })).json().keys;
    expect(await keys(other)).toEqual(await keys(app));
    const rows = await app.platform.store.db.selectFrom('login_signing_keys').selectAll().execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.private_jwk_enc).toMatch(/^v1\./);
    expect(rows[0]!.private_jwk_enc).not.toContain('"d"');
  });
});
