// What the browser pages of every area share: signed cookies (@fastify/cookie, keyed from the
// platform secrets), CSRF tokens (@fastify/csrf-protection: a secret in a signed httpOnly cookie,
// the token in each form) and the demo pages' stylesheet and icon. Registered before the areas,
// which each register their own pages (server/apis/<area>/area.ts).
import cookie from '@fastify/cookie';
import csrf from '@fastify/csrf-protection';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { demoLayoutAssets } from '../html/demo-layout.js';

export default fp(
  async function browser(app: FastifyInstance) {
    const { production } = app.config;
    await app.register(cookie, { secret: app.platform.secrets.digest('cookie-signing-key') });
    await app.register(csrf, {
      sessionPlugin: '@fastify/cookie',
      cookieKey: production ? '__Host-csrf' : 'csrf',
      cookieOpts: { path: '/', httpOnly: true, sameSite: 'lax', secure: production, signed: true },
    });
    await app.register(demoLayoutAssets); // /demo/assets/: the demo pages' stylesheet and icon
  },
  { name: 'browser' },
);
