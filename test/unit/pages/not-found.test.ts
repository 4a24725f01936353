// Unknown paths by content negotiation: a browser's navigation gets the product's HTML 404 page
// (the sign-in pages' look, links back), an API client keeps the problem+json of every API error.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { prefersHtml } from '#server/html/not-found-page.js';
import { buildShared } from '#test/helper.js';

const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildShared();
});

describe('an unknown path', () => {
  it('opened in a browser: the HTML 404 page with links home, to the docs and the settings', async () => {
    for (const url of ['/nope', '/account/nope', '/nope/deeper?x=1', '/api/nope']) {
      const res = await app.inject({ url, headers: { accept: BROWSER } });
      expect(res.statusCode, url).toBe(404);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers.vary).toMatch(/Accept/i);
      expect(res.headers['content-security-policy']).toMatch(/default-src 'none'/);
      expect(res.body).toMatch(/<title>Page not found<\/title>/);
      expect(res.body).toContain(`<code>${url.split('?')[0]}</code>`);
      for (const href of ['/', '/docs', '/account']) expect(res.body).toContain(`href="${href}"`);
      expect(res.body).not.toMatch(/<script/);
    }
    expect((await app.inject({ method: 'HEAD', url: '/nope', headers: { accept: BROWSER } })).headers['content-type']).toMatch(/^text\/html/);
  });

  it('an unknown path reflected in the page is escaped', async () => {
    const res = await app.inject({ url: '/%3Cscript%3Ealert(1)%3C/script%3E', headers: { accept: 'text/html' } });
    expect(res.statusCode).toBe(404);
    expect(res.body).not.toContain('<script>');
  });

  it('from an API client (JSON, a wildcard, no Accept, or any other method): problem+json', async () => {
    const cases: { method?: 'GET' | 'POST'; accept?: string }[] = [
      { accept: 'application/json' },
      { accept: '*/*' },
      {},
      { accept: 'application/problem+json, text/html;q=0.5' },
      { method: 'POST', accept: BROWSER },
    ];
    for (const { method = 'GET', accept } of cases) {
      const res = await app.inject({ method, url: '/account/nope', headers: accept ? { accept } : {} });
      expect(res.statusCode, accept).toBe(404);
      expect(res.headers['content-type'], accept).toBe('application/problem+json; charset=utf-8');
      expect(res.json()).toMatchObject({ type: 'https://chatapp.example/problems/not-found', status: 404, instance: '/account/nope' });
    }
  });

  it('prefersHtml: HTML named and ranked at least as high as JSON', () => {
    expect(prefersHtml(BROWSER)).toBe(true);
    expect(prefersHtml('text/html')).toBe(true);
    expect(prefersHtml('application/json, text/html')).toBe(true);
    expect(prefersHtml('application/json;q=1, text/html;q=0.9')).toBe(false);
    expect(prefersHtml('text/html;q=0')).toBe(false);
    expect(prefersHtml('*/*')).toBe(false);
    expect(prefersHtml(undefined)).toBe(false);
  });
});
