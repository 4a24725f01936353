// Server-rendered pages for the browser. Registers, for the whole app, signed cookies
// (@fastify/cookie, keyed from the platform secrets) and CSRF tokens (@fastify/csrf-protection:
// a secret in a signed httpOnly cookie, the token in each form), which the Connect consent page
// uses too; then the sign-in pages, in their own scope so their errors render as HTML.
import fp from 'fastify-plugin';
import cookie from '@fastify/cookie';
import csrf from '@fastify/csrf-protection';
import type { FastifyInstance } from 'fastify';
import signInPages from '../pages/sign-in.js';
import demoLoginPages from '../pages/demo-login.js';
import { DemoLogin } from '../demo.js';
import sandboxPhonePages from '../pages/sandbox-phone.js';

export default fp(
  async function pages(app: FastifyInstance) {
    const { production } = app.config;
    await app.register(cookie, { secret: app.platform.secrets.digest('cookie-signing-key') });
    await app.register(csrf, {
      sessionPlugin: '@fastify/cookie',
      cookieKey: production ? '__Host-csrf' : 'csrf',
      cookieOpts: { path: '/', httpOnly: true, sameSite: 'lax', secure: production, signed: true },
    });
    await app.register(signInPages);
    app.decorate('demoLogin', new DemoLogin(app)); // on the root: seeding asks it too
    await app.register(demoLoginPages); // /demo/login and its assets (DEMO on)
    await app.register(sandboxPhonePages); // /sandbox/phone (DEMO on, or not production)
    await app.register(import('../pages/login-apps.js')); // Login apps settings
    await app.register(import('../pages/settings.js')); // the other settings pages (/account, keys, webhooks, numbers, usage)
  },
  { name: 'pages' },
);
