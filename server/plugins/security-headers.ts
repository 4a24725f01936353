// Security headers (Helmet's) on every response, including 404s and errors.
// Most answers are JSON, so the default CSP forbids everything and framing; the few HTML routes
// (consent, sign-in, docs) set their own Content-Security-Policy, which replaces this one whole.
//
// Helmet's headers that only mean something for an HTML document a browser renders (the
// opener policy, agent clustering, DNS prefetching, the legacy XSS filter, IE's download prompt,
// Adobe's cross-domain policies) are sent by the pages themselves (server/html/page-headers.ts)
// rather than on every answer: an API answer carries the CSP, nosniff, framing, referrer and
// resource policies (and HSTS in production), as OWASP's REST security sheet and GitHub's API do,
// and each header left out is one less to validate and write on every request.
//
// Helmet decides the headers from its options alone, never from the request, so they are worked
// out once here (its middleware run against a recorder) and set on each reply by one callback
// hook. @fastify/helmet called `helmet(options)` on every request instead, parsing the CSP
// directives and building the middleware list again each time, in an async hook of its own
// besides.
import fp from 'fastify-plugin';
import helmet, { type HelmetOptions } from 'helmet';
import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';

export const DEFAULT_CSP = { 'default-src': ["'none'"], 'frame-ancestors': ["'none'"] };

/** The essentials, for the few answers written before any hook runs (bad URL, 431). */
export const BASELINE_HEADERS = {
  'content-security-policy': "default-src 'none';frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
};

export function helmetOptions(production: boolean): HelmetOptions {
  return {
    contentSecurityPolicy: { useDefaults: false, directives: DEFAULT_CSP },
    // Pages carry secrets in their URLs (/l/<slug>, consent): never leak them in Referer (bad-inputs L8).
    referrerPolicy: { policy: 'no-referrer' },
    // HSTS only in production: on http://localhost it would pin browsers to https for a year.
    strictTransportSecurity: production ? { maxAge: 31_536_000, includeSubDomains: true } : false,
    xFrameOptions: { action: 'deny' },
    // Helmet's other defaults stay: X-Content-Type-Options: nosniff, X-Powered-By removed,
    // Cross-Origin-Opener/Resource-Policy same-origin, X-XSS-Protection: 0.
  };
}

/** The headers Helmet's middleware sets for `options`, in the order it sets them (names lower-case). */
export function helmetHeaders(options: HelmetOptions): [string, string][] {
  const headers = new Map<string, string>();
  const recorder = {
    setHeader: (name: string, value: string | number | readonly string[]) => headers.set(name.toLowerCase(), String(value)),
    removeHeader: (name: string) => headers.delete(name.toLowerCase()),
  };
  helmet(options)({} as never, recorder as unknown as ServerResponse, (error?: unknown) => {
    if (error) throw error;
  });
  return [...headers];
}

/** Helmet's headers that apply to rendered HTML documents only. */
const DOCUMENT_ONLY = new Set([
  'cross-origin-opener-policy',
  'origin-agent-cluster',
  'x-dns-prefetch-control',
  'x-download-options',
  'x-permitted-cross-domain-policies',
  'x-xss-protection',
]);

/** The document-only headers, as Helmet sets them: every HTML page adds them (pageHeaders). */
export const DOCUMENT_HEADERS: Record<string, string> = Object.fromEntries(helmetHeaders(helmetOptions(false)).filter(([name]) => DOCUMENT_ONLY.has(name)));

/** The headers of every answer: Helmet's, less the document-only ones. */
export function answerHeaders(production: boolean): [string, string][] {
  return helmetHeaders(helmetOptions(production)).filter(([name]) => !DOCUMENT_ONLY.has(name));
}

export default fp(
  async function securityHeaders(app: FastifyInstance) {
    const headers = answerHeaders(app.config.production);
    // On the reply, not its `raw` response: Node writes a head given whole to writeHead (as
    // Fastify gives it) in one pass, while one header already set on the response makes it set
    // and check every other header one by one again. Every answer leaves through the reply
    // (errors, 404s, streams and files too); the few written before any hook run add
    // BASELINE_HEADERS themselves.
    app.addHook('onRequest', (_request, reply, done) => {
      for (const [name, value] of headers) reply.header(name, value);
      done();
    });
  },
  { name: 'security-headers' },
);
