// The home page `/`: HTML linking the docs, the settings, the demo pages this server serves, the
// health endpoint and the documents; every link answers; no script, its one stylesheet by hash.
import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { homeView } from '#server/site/home-page.js';
import { buildShared } from '#test/helper.js';

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildShared();
});

const hrefs = (page: string) => [...page.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!);
const API_DOCUMENTS = ['account', 'connect', 'login', 'messaging'].map((api) => `/openapi/${api}.3.1.yaml`);

describe('/', () => {
  it('answers an HTML page linking the docs, the settings, the sandbox phone, the health endpoint and the documents', async () => {
    const res = await app.inject('/');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    const links = hrefs(res.body);
    for (const path of ['/docs', '/account', '/sandbox/phone', '/healthz', ...API_DOCUMENTS]) expect(links, path).toContain(path);
    expect(links).not.toContain('/demo/login'); // DEMO off in tests: no demo workspace, no demo page
  });

  it('every link answers: 200, or the settings sending a stranger to sign in', async () => {
    const res = await app.inject('/');
    for (const path of hrefs(res.body)) {
      const answer = await app.inject(path);
      if (path === '/account') {
        expect(answer.statusCode).toBe(303);
        expect(answer.headers.location).toBe('/account/sign-in?next=%2Faccount');
      } else expect(answer.statusCode, path).toBe(200);
    }
  });

  it('has no script, frames nothing and allows its one inline stylesheet by hash', async () => {
    const res = await app.inject('/');
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/script-src|unsafe-inline/);
    expect(res.body).not.toContain('<script');
    const styles = [...res.body.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => m[1]!);
    expect(styles).toHaveLength(1);
    expect(csp).toContain(`style-src 'sha256-${createHash('sha256').update(styles[0]!).digest('base64')}'`);
    expect(res.headers['x-frame-options']).toBe('DENY');
  });

  it('a JSON client asking for / gets the same page (nothing on this server answers JSON there)', async () => {
    const res = await app.inject({ url: '/', headers: { accept: 'application/json' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
  });
});

describe('what the home page offers to try', () => {
  const linksOf = (settings: { demo: boolean; production: boolean }) => hrefs(homeView(settings).toString());

  it('the Login demo with the demo workspace, the sandbox phone outside production or with the demo', () => {
    expect(linksOf({ demo: true, production: false })).toEqual(expect.arrayContaining(['/demo/login', '/sandbox/phone']));
    expect(linksOf({ demo: false, production: false })).not.toContain('/demo/login');
    expect(linksOf({ demo: false, production: false })).toContain('/sandbox/phone');
    expect(linksOf({ demo: true, production: true })).toEqual(expect.arrayContaining(['/demo/login', '/sandbox/phone']));
  });

  it('production without the demo: neither, and the rest of the page', () => {
    const links = linksOf({ demo: false, production: true });
    expect(links).not.toContain('/demo/login');
    expect(links).not.toContain('/sandbox/phone');
    expect(links).toEqual(expect.arrayContaining(['/docs', '/account', '/healthz', ...API_DOCUMENTS]));
  });
});
