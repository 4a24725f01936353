// bad-inputs A10: wrong password and unknown email answer the same 401; after 10 failures in 15 minutes
// for one account or one IP, 429 with Retry-After. Every failure costs a real scrypt (about a
// second on a busy machine), hence the long timeouts; tests use distinct emails and IPs.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { recordFailure, throttleSubjects } from '#server/apis/account/sign-in-throttle.js';
import { buildShared } from '#test/helper.js';
import { PASSWORD, sameness, signUp } from './support.js';

const SLOW = 120_000;

describe('owner sign-in throttle', () => {
  let app: FastifyInstance;
  let clock = Date.now();
  beforeAll(async () => {
    app = await buildShared({ overrides: { now: () => new Date(clock) } });
  });

  const signIn = (email: string, password: string, remoteAddress: string) =>
    app.inject({ method: 'POST', url: '/api/account/sessions', payload: { email, password }, remoteAddress });

  it('A10 wrong password and unknown email: identical 401s; after 10, 429 for that account', { timeout: SLOW }, async () => {
    const a = await signUp(app, 'throttled');
    const wrong = await signIn(a.email, 'not the password at all', '10.0.0.1');
    const unknown = await signIn('nobody@example.test', 'not the password at all', '10.0.0.2');
    expect(wrong.statusCode).toBe(401);
    expect(unknown.statusCode).toBe(401);
    expect(sameness(wrong.json())).toEqual(sameness(unknown.json()));
    expect(wrong.headers['www-authenticate']).toBe(unknown.headers['www-authenticate']);
    expect(wrong.body).not.toContain('not the password');
    // nine more failures for the account, each from another IP
    for (let i = 3; i <= 11; i++) expect((await signIn(a.email, 'still the wrong one', `10.0.0.${i}`)).statusCode).toBe(401);
    const blocked = await signIn(a.email.toUpperCase(), PASSWORD, '10.0.1.1'); // even the right password, from a fresh IP
    expect(blocked.statusCode).toBe(429);
    expect(blocked.json().type).toBe('https://chatapp.example/problems/rate-limited');
    const retryAfter = Number(blocked.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(15 * 60);
    clock += retryAfter * 1000;
    expect((await signIn(a.email, PASSWORD, '10.0.1.1')).statusCode).toBe(201);
    // the success cleared the account's count
    expect((await signIn(a.email, 'wrong again', '10.0.1.2')).statusCode).toBe(401);
  });

  it('A10 ten failures from one IP block that IP for every account, not other IPs', { timeout: SLOW }, async () => {
    const a = await signUp(app, 'victim');
    const ip = '10.9.9.9';
    // nine failures recorded as the handler records them (the test above shows HTTP failures count), the tenth over HTTP
    for (let i = 0; i < 9; i++)
      await recordFailure(app.platform.store.db, throttleSubjects(app.platform.secrets, `guess${i}@example.test`, ip), new Date(clock));
    expect((await signIn('guess9@example.test', 'wrong password', ip)).statusCode).toBe(401);
    const blocked = await signIn(a.email, PASSWORD, ip);
    expect(blocked.statusCode).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect((await signIn(a.email, PASSWORD, '10.9.9.10')).statusCode).toBe(201);
  });

  it('L3 the throttle stores no email in clear', { timeout: SLOW }, async () => {
    await signIn('someone@example.test', 'wrong password', '10.7.7.7');
    const rows = await app.platform.store.db.selectFrom('sign_in_failures').selectAll().execute();
    expect(rows.some((r) => r.subject === 'ip:10.7.7.7')).toBe(true);
    expect(JSON.stringify(rows)).not.toContain('someone');
  });
});
