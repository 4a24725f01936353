// The docs pages: /docs, /docs/<api> and /docs/<api>/getting-started answer HTML with their
// links and CSP, reference nothing on another host, and unknown pages answer an HTML 404.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { chooseEncoding } from '#server/plugins/compression.js';
import { APIS, linkRepoDocs, loadGuides, repoDocNames } from '#server/site/docs-catalogue.js';
import { SCALAR_SCRIPT } from '#server/site/docs-page.js';

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildShared();
});

const get = (url: string) => app.inject({ method: 'GET', url });
const hrefs = (html: string) => [...html.matchAll(/(?:href|src)="([^"]+)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&'));

/** Every absolute http(s) URL in a text: allowed only on this server's own origin. */
function foreignUrls(text: string): string[] {
  const own = new URL(app.config.publicUrl).origin;
  return [...text.matchAll(/https?:\/\/[^\s"'<>)&]+/g)].map((m) => m[0]).filter((url) => new URL(url).origin !== own);
}

function cspOf(response: Awaited<ReturnType<typeof get>>): Record<string, string> {
  return Object.fromEntries(
    String(response.headers['content-security-policy'])
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .map(([name, ...values]) => [name!, values.join(' ')]),
  );
}

describe('/docs', () => {
  it('answers HTML listing each API with its reference, guide, documents and mock port', async () => {
    const response = await get('/docs');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    const links = hrefs(response.body);
    for (const api of APIS) {
      expect(response.body).toContain(api.title);
      expect(links).toContain(`/docs/${api.name}`);
      expect(links).toContain(`/openapi/${api.name}.3.0.yaml`);
      expect(links).toContain(`/openapi/${api.name}.3.1.yaml`);
      expect(response.body).toContain(`port <code>${api.mockPort}</code>`);
    }
    for (const api of loadGuides().keys()) expect(links).toContain(`/docs/${api}/getting-started`);
    // The rest of the product (DEMO is off here: no Login demo), and the repository's guides.
    for (const path of ['/', '/account', '/sandbox/phone', '/docs/repo/README', '/docs/repo/webhooks', '/docs/repo/deploy'])
      expect(links, path).toContain(path);
    expect(links).not.toContain('/demo/login');
    expect(response.body).toContain('npm run clients:python');
    expect(response.body).toContain('npm run clients:go');
  });

  it('has a strict CSP: no script at all, styles and images from this origin, never framed', async () => {
    const csp = cspOf(await get('/docs'));
    expect(csp['default-src']).toBe("'none'");
    expect(csp['script-src']).toBeUndefined();
    expect(csp['style-src']).toBe("'self'");
    expect(csp['frame-ancestors']).toBe("'none'");
  });

  it('links only to pages and documents of this server, each of which answers 200', async () => {
    const response = await get('/docs');
    expect(foreignUrls(response.body)).toEqual([]);
    const links = [...new Set(hrefs(response.body))];
    expect(links.length).toBeGreaterThan(12);
    for (const link of links) {
      expect(link.startsWith('/'), link).toBe(true);
      const status = (await get(link)).statusCode;
      // The settings send a stranger to sign in.
      expect(status, link).toBe(link === '/account' ? 303 : 200);
    }
  });

  it('links each dereferenced 3.1 document, which the server serves as JSON without a $ref', async () => {
    const body = (await get('/docs')).body;
    for (const api of APIS) {
      const url = `/openapi/${api.name}.3.1.dereferenced.json`;
      expect(body.includes(url), api.name).toBe(true);
      const served = await get(url);
      expect(served.statusCode, url).toBe(200);
      expect(served.headers['content-type']).toMatch(/^application\/json/);
      expect(served.body.includes('"$ref"'), url).toBe(false);
    }
  });
});

describe('/docs/<api>', () => {
  for (const api of APIS) {
    it(`${api.name}: the reference page loads Scalar from this server with the dereferenced 3.1 document`, async () => {
      const response = await get(`/docs/${api.name}`);
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
      const scripts = [...response.body.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
      // One data element (not executable) and the script file: no inline code.
      expect(scripts.map((s) => s[2]!.trim())).toEqual(['', '']);
      expect(scripts[0]![1]).toContain('type="application/json"');
      expect(scripts[1]![1]).toContain(`src="${SCALAR_SCRIPT}"`);
      const configuration = JSON.parse(
        /data-configuration="([^"]*)"/
          .exec(response.body)![1]!
          .replace(/&quot;/g, '"')
          .replace(/&amp;/g, '&'),
      );
      expect(configuration).toMatchObject({
        url: `/openapi/${api.name}.3.1.dereferenced.json`,
        withDefaultFonts: false,
        telemetry: false,
        agent: { disabled: true },
        mcp: { disabled: true },
      });
      expect(configuration.proxyUrl).toBeUndefined();
      expect(configuration.servers).toEqual([{ url: app.config.publicUrl, description: 'This server' }]);
      expect(foreignUrls(response.body)).toEqual([]);
    });
  }

  it('the reference CSP allows scripts and connections to this origin only, no eval', async () => {
    const csp = cspOf(await get('/docs/connect'));
    expect(csp['default-src']).toBe("'none'");
    expect(csp['script-src']).toBe("'self'");
    expect(csp['connect-src']).toBe("'self'");
    expect(csp['img-src']).toBe("'self' data:");
    expect(csp['frame-ancestors']).toBe("'none'");
    expect(Object.values(csp).join(' ')).not.toMatch(/unsafe-eval|https?:|\*/);
  });

  it('serves its stylesheet and icon from this server with their types, cacheable', async () => {
    const css = await get('/docs/assets/docs.css');
    expect(css.statusCode).toBe(200);
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    expect(css.headers['cache-control']).toBe('public, max-age=3600');
    expect(css.body).toContain('.docs-nav {');
    const icon = await get('/docs/assets/favicon.svg');
    expect(icon.headers['content-type']).toBe('image/svg+xml');
    expect(icon.headers['cache-control']).toBe('public, max-age=86400');
    expect(icon.body).toMatch(/^<svg /);
    expect((await get('/docs/assets/nope.css')).statusCode).toBe(404);
  });

  it("serves Scalar's script from this server, cacheable, and nothing else of the plugin", async () => {
    const script = await get(SCALAR_SCRIPT);
    expect(script.statusCode).toBe(200);
    expect(script.headers['content-type']).toBe('application/javascript; charset=utf-8');
    expect(script.headers['cache-control']).toBe('public, max-age=86400');
    expect(script.body.length).toBeGreaterThan(1_000_000);
    const prefix = SCALAR_SCRIPT.replace(/\/js\/scalar\.js$/, '');
    for (const url of [prefix, `${prefix}/`, `${prefix}/openapi.json`]) expect((await get(url)).statusCode, url).toBe(404);
  });
});

describe('/docs/<api>/getting-started', () => {
  it('there is a guide for Connect, Login and Messaging', () => {
    expect([...loadGuides().keys()].sort()).toEqual(['connect', 'login', 'messaging']);
  });

  for (const api of ['connect', 'login', 'messaging']) {
    it(`${api}: renders the Markdown inside the docs layout, with curl and the TS client`, async () => {
      const response = await get(`/docs/${api}/getting-started`);
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
      // One script, the copy buttons', from this origin.
      expect(cspOf(response)['script-src']).toBe("'self'");
      expect([...response.body.matchAll(/<script[^>]*>/g)].map((m) => m[0])).toEqual(['<script src="/docs/assets/copy.js" defer>']);
      expect(response.body).toMatch(/<article><h1 id="getting-started-with-the-\w+-api">Getting started with the \w+ API<\/h1>/);
      expect(response.body).toContain('<pre><code class="language-sh">');
      expect(response.body).toContain('<code class="language-ts">import {');
      expect(response.body).toContain('<nav class="docs-nav"');
    });

    it(`${api}: written for 127.0.0.1:3000, served with this server's address; its repository links answer`, async () => {
      const response = await get(`/docs/${api}/getting-started`);
      expect(app.config.publicUrl).not.toBe('http://127.0.0.1:3000');
      expect(response.body).not.toContain('127.0.0.1:3000');
      expect(response.body).toContain(`B=${app.config.publicUrl}`);
      const links = [...new Set(hrefs(response.body))];
      expect(links.some((link) => link.startsWith('/docs/repo/'))).toBe(true);
      for (const link of links.filter((l) => l.startsWith('/docs/'))) expect((await get(link)).statusCode, link).toBe(200);
      expect(links.filter((link) => !link.startsWith('/') && !link.startsWith('#'))).toEqual([]);
    });
  }

  it("the copy buttons' script is served from this server", async () => {
    const script = await get('/docs/assets/copy.js');
    expect(script.statusCode).toBe(200);
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(script.body).toContain("querySelectorAll('article pre')");
  });
});

describe('/docs/repo/<name>', () => {
  it('serves the repository documents with links between them made served ones, and 404 for others', async () => {
    const names = repoDocNames();
    expect(names.has('README')).toBe(true);
    expect(names.has('deploy')).toBe(true);
    const readme = await get('/docs/repo/README');
    expect(readme.statusCode).toBe(200);
    expect(readme.body).toContain('href="/docs/repo/deploy"');
    // Headings carry GitHub's ids, which the guides' links to sections name.
    expect(readme.body).toContain('<h2 id="configuration">Configuration</h2>');
    expect(readme.body).toContain('id="signing-a-provider-delivery-in-development"');
    expect((await get('/docs/login/getting-started')).body).toContain('href="/docs/repo/README#configuration"');
    // No relative link left that would 404: each is a served page, an anchor or another site.
    expect(readme.body).not.toMatch(/href="(?!\/|#|https?:|mailto:)[^"]*"/);
    for (const url of ['/docs/repo/nope', '/docs/repo/..%2Fpackage.json', '/docs/repo/getting-started']) expect((await get(url)).statusCode, url).toBe(404);
  });

  it('linkRepoDocs: Markdown links and names in code become served links; clients/README.md is not the root README', () => {
    const names = new Set(['README', 'webhooks']);
    expect(linkRepoDocs('<a href="docs/webhooks.md#retries">x</a>', names)).toBe('<a href="/docs/repo/webhooks#retries">x</a>');
    expect(linkRepoDocs('<a href="../README.md">x</a>', names)).toBe('<a href="/docs/repo/README">x</a>');
    expect(linkRepoDocs('<a href="clients/README.md">x</a>', names)).toBe('<a>x</a>');
    expect(linkRepoDocs('<a href="#top">x</a> <a href="https://a.example/b.md">y</a>', names)).toBe(
      '<a href="#top">x</a> <a href="https://a.example/b.md">y</a>',
    );
    expect(linkRepoDocs('see <code>docs/webhooks.md</code> and <code>docs/nope.md</code>', names)).toBe(
      'see <a href="/docs/repo/webhooks"><code>docs/webhooks.md</code></a> and <code>docs/nope.md</code>',
    );
  });
});

describe('compression of documents and docs pages', () => {
  it('brotli or gzip as the client accepts, the same bytes once decoded, Vary: Accept-Encoding; API answers untouched', async () => {
    const url = '/openapi/messaging.3.1.dereferenced.json';
    const plain = await get(url);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.vary).toMatch(/Accept-Encoding/);
    const br = await app.inject({ url, headers: { 'accept-encoding': 'gzip, deflate, br' } });
    expect(br.headers['content-encoding']).toBe('br');
    expect(brotliDecompressSync(br.rawPayload).equals(plain.rawPayload)).toBe(true);
    expect(br.rawPayload.length).toBeLessThan(plain.rawPayload.length / 8);
    expect(Number(br.headers['content-length'])).toBe(br.rawPayload.length);
    const gz = await app.inject({ url, headers: { 'accept-encoding': 'gzip' } });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.rawPayload).equals(plain.rawPayload)).toBe(true);
    for (const page of ['/docs', '/docs/messaging/getting-started', SCALAR_SCRIPT, '/docs/repo/deploy']) {
      const res = await app.inject({ url: page, headers: { 'accept-encoding': 'br' } });
      expect(res.headers['content-encoding'], page).toBe('br');
      expect(brotliDecompressSync(res.rawPayload).toString(), page).toBe((await get(page)).body);
    }
    expect((await app.inject({ url, headers: { 'accept-encoding': 'br;q=0, gzip;q=0' } })).headers['content-encoding']).toBeUndefined();
    const api = await app.inject({ url: '/api/contacts', headers: { 'accept-encoding': 'br, gzip' } });
    expect(api.headers['content-encoding']).toBeUndefined();
  });

  it('chooseEncoding: br before gzip, q=0 refuses, * counts', () => {
    expect(chooseEncoding('gzip, deflate, br')).toBe('br');
    expect(chooseEncoding('gzip')).toBe('gzip');
    expect(chooseEncoding('br;q=0, gzip')).toBe('gzip');
    expect(chooseEncoding('*')).toBe('br');
    expect(chooseEncoding('identity')).toBeUndefined();
    expect(chooseEncoding(undefined)).toBeUndefined();
  });
});

describe('unknown docs pages', () => {
  for (const url of ['/docs/nope', '/docs/nope/getting-started', '/docs/account/getting-started', '/docs/connect/extra/deep']) {
    it(`${url} answers an HTML 404 in the docs layout`, async () => {
      const response = await get(url);
      expect(response.statusCode).toBe(404);
      expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(response.body).toContain('<h1>Not found</h1>');
      expect(response.body).toContain('href="/docs"');
    });
  }

  it('an API name with markup is not reflected', async () => {
    const response = await get('/docs/%3Cscript%3Ealert(1)%3C%2Fscript%3E');
    expect(response.statusCode).toBe(404);
    expect(response.body).not.toContain('<script');
  });
});
