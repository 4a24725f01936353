// Connect OAuth routes outside the contract: the consent form's POST and the Connect clients
// settings page. Registered on the root instance, so the cookie and CSRF plugins
// (server/plugins/browser.ts) apply to them.
import type { FastifyInstance } from 'fastify';
import { registerClientPages } from './clients-page.js';
import './bearer.js';
import { registerConsentPost } from './consent.js';

export async function setup(app: FastifyInstance): Promise<void> {
  registerConsentPost(app);
  registerClientPages(app);
}
