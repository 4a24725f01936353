// Login: apps, sessions, their event streams, LOGIN messages, verification tokens, the expiry
// sweep; the Login apps settings page and the demo sign-in page.
import type { FastifyInstance } from 'fastify';
import { DemoLogin } from '#server/demo.js';
import type { Area } from '../area.js';
import appsPage from './apps-page.js';
import demoPage from './demo-page.js';
import { loginHandlers } from './handlers.js';
import { oidcRouteOptions } from './oidc/handlers.js';
import { registerSignInPage } from './oidc/page.js';
import { startLogin } from './verification.js';

export const loginArea: Area = {
  name: 'login',
  handlers: { login: loginHandlers },
  routes: oidcRouteOptions,
  async plugin(app: FastifyInstance) {
    startLogin(app);
    app.decorate('demoLogin', new DemoLogin(app)); // on the root: seeding asks it too
    await app.register(demoPage); // /demo/login and its script (DEMO on)
    await app.register(appsPage);
    await registerSignInPage(app); // the OpenID Connect sign-in page's own calls and script
  },
};
