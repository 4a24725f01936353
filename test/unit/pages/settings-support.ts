// A browser for the settings-page tests: signs in through the sign-in form (a real session
// cookie and CSRF cookie), opens pages and submits forms as the page would.
import { expect } from 'vitest';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { PASSWORD, signUp, type SignedUp } from '../account/support.js';

export const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

function cookieValue(res: LightMyRequestResponse, name: string): string {
  const found = (res.cookies as { name: string; value: string }[]).find((c) => c.name === name);
  if (!found) throw new Error(`no ${name} cookie`);
  return found.value;
}

export const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)![1]!;

export interface Browser {
  owner: SignedUp;
  cookie: string;
  csrf: string;
  open(path: string): Promise<LightMyRequestResponse>;
  submit(path: string, form?: Record<string, string | string[]>, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
}

export function encode(form: Record<string, string | string[]>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(form)) for (const item of Array.isArray(v) ? v : [v]) params.append(k, item);
  return params.toString();
}

export async function signedInBrowser(app: FastifyInstance, name?: string): Promise<Browser> {
  const owner = await signUp(app, name);
  const form = await app.inject({ url: '/account/sign-in' });
  const csrfCookie = `csrf=${cookieValue(form, 'csrf')}`;
  const res = await app.inject({
    method: 'POST',
    url: '/account/sign-in',
    headers: { ...FORM, cookie: csrfCookie },
    payload: encode({ _csrf: csrfOf(form.body), email: owner.email, password: PASSWORD }),
  });
  expect(res.statusCode).toBe(303);
  const cookie = `${csrfCookie}; owner_session=${cookieValue(res, 'owner_session')}`;
  const page = await app.inject({ url: '/account', headers: { cookie } });
  const csrf = csrfOf(page.body);
  return {
    owner,
    cookie,
    csrf,
    open: (path) => app.inject({ url: path, headers: { cookie } }),
    submit: (path, fields = {}, headers = {}) =>
      app.inject({ method: 'POST', url: path, headers: { ...FORM, cookie, ...headers }, payload: encode({ _csrf: csrf, ...fields }) }),
  };
}

/** The three ways a form post from elsewhere arrives: no token, a bad one, another origin. */
export function forgedPosts(app: FastifyInstance, browser: Browser, path: string, fields: Record<string, string | string[]> = {}) {
  return Promise.all([
    app.inject({ method: 'POST', url: path, headers: { ...FORM, cookie: browser.cookie }, payload: encode(fields) }),
    app.inject({
      method: 'POST',
      url: path,
      headers: { ...FORM, cookie: browser.cookie },
      payload: encode({ ...fields, _csrf: `${browser.csrf.slice(0, -4)}AAAA` }),
    }),
    browser.submit(path, fields, { origin: 'https://evil.test' }),
    browser.submit(path, fields, { 'sec-fetch-site': 'cross-site' }),
  ]);
}
