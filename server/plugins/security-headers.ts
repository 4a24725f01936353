// Security headers (@fastify/helmet) on every response, including 404s and errors.
// Most answers are JSON, so the default CSP forbids everything and framing; the few HTML routes
// (consent, sign-in, docs) relax it for themselves in their route options:
//   app.get('/docs', { helmet: { contentSecurityPolicy: { useDefaults: false, directives: { … } } } }, …)
// (a route's `contentSecurityPolicy` replaces this one whole, it is not merged).
import fp from 'fastify-plugin';
import helmet from '@fastify/helmet';
import type { FastifyInstance } from 'fastify';

export const DEFAULT_CSP = { 'default-src': ["'none'"], 'frame-ancestors': ["'none'"] };

/** The essentials, for the few answers written before any hook runs (bad URL, 431). */
export const BASELINE_HEADERS = {
  'content-security-policy': "default-src 'none';frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
};

export default fp(
  async function securityHeaders(app: FastifyInstance) {
    await app.register(helmet, {
      global: true,
      contentSecurityPolicy: { useDefaults: false, directives: DEFAULT_CSP },
      // Pages carry secrets in their URLs (/l/<slug>, consent): never leak them in Referer (L8).
      referrerPolicy: { policy: 'no-referrer' },
      // HSTS only in production: on http://localhost it would pin browsers to https for a year.
      strictTransportSecurity: app.config.production ? { maxAge: 31_536_000, includeSubDomains: true } : false,
      xFrameOptions: { action: 'deny' },
      // Helmet's other defaults stay: X-Content-Type-Options: nosniff, X-Powered-By removed,
      // Cross-Origin-Opener/Resource-Policy same-origin, X-XSS-Protection: 0.
    });
  },
  { name: 'security-headers' },
);
