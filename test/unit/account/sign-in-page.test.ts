// The browser's sign-in page: CSRF, origin checks, the session cookie, safe `next`, escaping
// and the headers every page carries.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { safeNext } from '#server/apis/account/sign-in-page.js';
import { build, buildShared } from '#test/helper.js';
import { PASSWORD, signUp, type SignedUp } from './support.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

function cookie(res: LightMyRequestResponse, name: string) {
  return (res.cookies as { name: string; value: string; httpOnly?: boolean; sameSite?: string; secure?: boolean; path?: string; maxAge?: number }[]).find(
    (c) => c.name === name,
  );
}

function csrfToken(html: string): string {
  const match = /name="_csrf" value="([^"]+)"/.exec(html);
  if (!match) throw new Error('no CSRF token in the page');
  return match[1]!;
}

describe('sign-in page', () => {
  let app: FastifyInstance;
  let a: SignedUp;
  beforeAll(async () => {
    app = await buildShared();
    a = await signUp(app, 'browser');
  });

  /** Opens the form as a browser would: its CSRF cookie and token. */
  async function openForm(query = '') {
    const res = await app.inject({ url: `/account/sign-in${query}` });
    expect(res.statusCode).toBe(200);
    const secret = cookie(res, 'csrf')!;
    return { res, token: csrfToken(res.body), cookieHeader: `csrf=${secret.value}` };
  }

  const post = (cookieHeader: string | undefined, form: Record<string, string>, headers: Record<string, string> = {}) =>
    app.inject({
      method: 'POST',
      url: '/account/sign-in',
      headers: { ...FORM, ...(cookieHeader ? { cookie: cookieHeader } : {}), ...headers },
      payload: new URLSearchParams(form).toString(),
    });

  it('serves the form with CSP frame-ancestors none, X-Frame-Options DENY and no-store', async () => {
    const { res } = await openForm();
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    expect(res.headers['content-security-policy']).not.toMatch(/unsafe-inline|script-src/);
    expect(res.headers['content-security-policy']).toMatch(/style-src 'sha256-[A-Za-z0-9+/=]+'/);
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.body).toContain('<form method="post" action="/account/sign-in">');
    expect(cookie(res, 'csrf')).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
  });

  it('signs in: a signed httpOnly SameSite=Lax session cookie and a redirect to `next`', async () => {
    const { token, cookieHeader } = await openForm('?next=%2Fconnect%2Fauthorize%3Fclient_id%3Dcli_1');
    const res = await post(cookieHeader, { _csrf: token, email: a.email, password: PASSWORD, next: '/connect/authorize?client_id=cli_1' });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/connect/authorize?client_id=cli_1');
    const session = cookie(res, 'owner_session')!;
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/', maxAge: app.config.ownerSessionSeconds });
    expect(session.secure).toBeFalsy(); // not production
    expect(session.value).toMatch(/^eyJ[^.]+\.[^.]+\.[^.]+\.[A-Za-z0-9+/=_-]+$/); // JWT + cookie signature
    // the page now knows the owner (currentOwner)
    const page = await app.inject({ url: '/account/sign-in', headers: { cookie: `${cookieHeader}; owner_session=${session.value}` } });
    expect(page.body).toContain(`signed in as Owner browser (${a.email})`);
    // a tampered cookie is nobody
    const tampered = await app.inject({ url: '/account/sign-in', headers: { cookie: `owner_session=${session.value.slice(0, -2)}xx` } });
    expect(tampered.body).toContain('<h1>Sign in</h1>');
    // and the cookie is no bearer token
    const raw = session.value.slice(0, session.value.lastIndexOf('.'));
    expect((await app.inject({ url: '/api/account/me', headers: { authorization: `Bearer ${raw}` } })).statusCode).toBe(401);
  });

  it('CSRF token missing, wrong, or without its cookie: 403 and no session cookie', async () => {
    const { token, cookieHeader } = await openForm();
    const cases = [
      post(cookieHeader, { email: a.email, password: PASSWORD }),
      post(cookieHeader, { _csrf: `${token.slice(0, -4)}AAAA`, email: a.email, password: PASSWORD }),
      post(undefined, { _csrf: token, email: a.email, password: PASSWORD }),
    ];
    for (const res of await Promise.all(cases)) {
      expect(res.statusCode).toBe(403);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['set-cookie']).toBeUndefined();
      expect(res.headers['x-frame-options']).toBe('DENY');
    }
  });

  it('C15 a post from another origin is 403 even with a valid token', async () => {
    const { token, cookieHeader } = await openForm();
    for (const headers of [{ origin: 'https://evil.test' }, { 'sec-fetch-site': 'cross-site' }, { origin: 'null' }] as Record<string, string>[]) {
      const res = await post(cookieHeader, { _csrf: token, email: a.email, password: PASSWORD }, headers);
      expect(res.statusCode).toBe(403);
      expect(cookie(res, 'owner_session')).toBeUndefined();
    }
  });

  it('open redirects are refused: `next` outside this origin falls back to the sign-in page', async () => {
    const { token, cookieHeader } = await openForm();
    const res = await post(cookieHeader, { _csrf: token, email: a.email, password: PASSWORD, next: '//evil.test/x' });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/account/sign-in');
    for (const next of [
      '//evil.test',
      'https://evil.test/',
      '/\\evil.test',
      '/\t/evil.test',
      'javascript:alert(1)',
      'evil.test',
      '/x\r\nSet-Cookie: a=b',
      '',
      42,
    ]) {
      expect(safeNext(next), String(next)).toBe('/account/sign-in');
    }
    expect(safeNext('/connect/authorize?state=%22%3E&x=1#f')).toBe('/connect/authorize?state=%22%3E&x=1#f');
    expect(safeNext('/a/../b"<x>')).toBe('/b%22%3Cx%3E');
  });

  it("J3 every value is escaped: the echoed email and the owner's name", async () => {
    const { token, cookieHeader } = await openForm();
    const attack = '"><img src=x onerror=alert(1)>@example.test';
    const res = await post(cookieHeader, { _csrf: token, email: attack, password: 'wrong password' });
    expect(res.statusCode).toBe(401);
    expect(res.body).toContain('The email or password is incorrect.');
    expect(res.body).not.toContain('<img');
    expect(res.body).toContain('value="&quot;&gt;&lt;img src=x onerror=alert(1)&gt;@example.test"');
  });

  it('J3 an owner named <img …> is shown escaped once signed in', async () => {
    const signup = await app.inject({
      method: 'POST',
      url: '/api/account/workspaces',
      payload: { email: 'xss@example.test', password: PASSWORD, name: '<img src=x onerror=alert(1)>', workspace_name: 'X', workspace_slug: 'xss-owner' },
    });
    expect(signup.statusCode).toBe(201);
    const { token, cookieHeader } = await openForm();
    const res = await post(cookieHeader, { _csrf: token, email: 'xss@example.test', password: PASSWORD });
    const page = await app.inject({ url: '/account/sign-in', headers: { cookie: `${cookieHeader}; owner_session=${cookie(res, 'owner_session')!.value}` } });
    expect(page.body).not.toContain('<img');
    expect(page.body).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });

  it('sign-out needs the CSRF token and clears the session cookie', async () => {
    const { token, cookieHeader } = await openForm();
    const signIn = await post(cookieHeader, { _csrf: token, email: a.email, password: PASSWORD });
    const session = `owner_session=${cookie(signIn, 'owner_session')!.value}`;
    const refused = await app.inject({ method: 'POST', url: '/account/sign-out', headers: { ...FORM, cookie: `${cookieHeader}; ${session}` }, payload: '' });
    expect(refused.statusCode).toBe(403);
    const res = await app.inject({
      method: 'POST',
      url: '/account/sign-out',
      headers: { ...FORM, cookie: `${cookieHeader}; ${session}` },
      payload: `_csrf=${encodeURIComponent(token)}`,
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/account/sign-in');
    expect(cookie(res, 'owner_session')).toMatchObject({ value: '' });
  });
});

describe('sign-in page in production', () => {
  it('uses __Host- cookies with Secure', async () => {
    const app = await build({ env: { NODE_ENV: 'production', SECRET_KEY: 'a-production-secret-key-of-32-characters', PUBLIC_URL: 'https://chat.example' } });
    const res = await app.inject({ url: '/account/sign-in' });
    expect(res.statusCode).toBe(200);
    expect(cookie(res, '__Host-csrf')).toMatchObject({ secure: true, httpOnly: true, path: '/', sameSite: 'Lax' });
  });
});
