// Account: workspaces, owner sessions and API keys; the sign-in pages and the owner's overview and
// API-key settings pages.
import type { FastifyInstance } from 'fastify';
import type { Area } from '../area.js';
import apiKeysPage from './api-keys-page.js';
import { accountHandlers } from './handlers.js';
import overviewPage from './overview-page.js';
import signInPages from './sign-in-page.js';

export const accountArea: Area = {
  name: 'account',
  handlers: { account: accountHandlers },
  async plugin(app: FastifyInstance) {
    await app.register(signInPages); // in its own scope, so its errors render as HTML
    await app.register(overviewPage); // /account
    await app.register(apiKeysPage);
  },
};
