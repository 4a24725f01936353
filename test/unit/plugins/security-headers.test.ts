// The security headers are Helmet's, worked out once (server/plugins/security-headers.ts): the
// same names and values Helmet's middleware sets on a real response, in development and in
// production, and a page's own CSP still replaces the default one.
import { ServerResponse, IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import helmet from 'helmet';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import securityHeaders, { answerHeaders, DOCUMENT_HEADERS, helmetHeaders, helmetOptions } from '#server/plugins/security-headers.js';
import { pageHeaders } from '#server/html/page-headers.js';

/** The headers Helmet's own middleware leaves on a real ServerResponse. */
function setByHelmet(production: boolean): Record<string, string> {
  const req = new IncomingMessage(new Socket());
  const res = new ServerResponse(req);
  res.setHeader('X-Powered-By', 'Express'); // Helmet removes it
  helmet(helmetOptions(production))(req, res, (error?: unknown) => {
    if (error) throw error;
  });
  return Object.fromEntries(Object.entries(res.getHeaders()).map(([name, value]) => [name, String(value)]));
}

describe('security headers', () => {
  it.each([false, true])('match what Helmet sets on a response (production: %s)', (production) => {
    const headers = Object.fromEntries(helmetHeaders(helmetOptions(production)));
    expect(headers).toEqual(setByHelmet(production));
    expect(headers['x-powered-by']).toBeUndefined();
    expect(headers['content-security-policy']).toBe("default-src 'none';frame-ancestors 'none'");
    expect('strict-transport-security' in headers).toBe(production);
  });

  it('are on every answer, and a route that sets its own CSP replaces the default one', async () => {
    const app = Fastify();
    app.decorate('config', { production: true } as never);
    await app.register(securityHeaders);
    app.get('/json', async () => ({ ok: true }));
    app.get('/page', async (_request, reply) => reply.header('content-security-policy', "default-src 'self'").type('text/html').send('<p>hi</p>'));
    app.get('/fails', async () => {
      throw new Error('boom');
    });
    for (const url of ['/json', '/missing', '/fails']) {
      const res = await app.inject(url);
      expect(res.headers['content-security-policy'], url).toBe("default-src 'none';frame-ancestors 'none'");
      expect(res.headers['x-content-type-options'], url).toBe('nosniff');
      expect(res.headers['strict-transport-security'], url).toBe('max-age=31536000; includeSubDomains');
    }
    const page = await app.inject('/page');
    expect(page.headers['content-security-policy']).toBe("default-src 'self'");
    expect(page.headers['x-frame-options']).toBe('DENY');
    await app.close();
  });

  it.each([false, true])('split into what every answer carries and what pages add: together, all of Helmet (production: %s)', (production) => {
    const answer = Object.fromEntries(answerHeaders(production));
    const helmetSet = setByHelmet(production);
    expect({ ...answer, ...DOCUMENT_HEADERS }).toEqual(helmetSet);
    // An API answer keeps what matters for a response that is not rendered as a page.
    for (const name of ['content-security-policy', 'x-content-type-options', 'x-frame-options', 'referrer-policy', 'cross-origin-resource-policy']) {
      expect(answer[name], name).toBe(helmetSet[name]);
    }
    expect(Object.keys(DOCUMENT_HEADERS).sort()).toEqual([
      'cross-origin-opener-policy',
      'origin-agent-cluster',
      'x-dns-prefetch-control',
      'x-download-options',
      'x-permitted-cross-domain-policies',
      'x-xss-protection',
    ]);
    for (const name of Object.keys(DOCUMENT_HEADERS)) expect(answer[name], name).toBeUndefined();
    // Every HTML page carries them.
    expect(pageHeaders("default-src 'none'")).toMatchObject(DOCUMENT_HEADERS);
  });
});
