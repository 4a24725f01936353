// Server-rendered pages for the browser. Registers, for the whole app, signed cookies
// (@fastify/cookie, keyed from the platform secrets) and CSRF tokens (@fastify/csrf-protection:
// a secret in a signed httpOnly cookie, the token in each form), which the Connect consent page
// uses too; then the sign-in pages, in their own scope so their errors render as HTML.
import fp from 'fastify-plugin';
import cookie from '@fastify/cookie';
import csrf from '@fastify/csrf-protection';
import type { FastifyInstance } from 'fastify';
import signInPages from '../apis/account/sign-in-page.js';
import { demoLayoutAssets } from '../html/demo-layout.js';
import demoLoginPages from '../apis/login/demo-page.js';
import sandboxPhonePages from '../apis/messaging/sandbox-phone-page.js';
import { DemoLogin } from '../demo.js';

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
    await app.register(demoLayoutAssets); // /demo/assets/: the demo pages' stylesheet and icon
    await app.register(demoLoginPages); // /demo/login and its script (DEMO on)
    await app.register(sandboxPhonePages); // /sandbox/phone (DEMO on, or not production)
    // The owner's settings pages, each beside its area's routes (Connect clients: the Connect OAuth area's setup).
    await app.register(import('../apis/account/overview-page.js')); // /account
    await app.register(import('../apis/account/api-keys-page.js'));
    await app.register(import('../apis/webhooks/settings-page.js'));
    await app.register(import('../apis/login/apps-page.js'));
    await app.register(import('../apis/messaging/configuration/numbers-page.js'));
    await app.register(import('../apis/messaging/operations/usage-page.js'));
  },
  { name: 'pages' },
);
