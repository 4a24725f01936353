// The chat provider's webhook: its verification handshake, signed deliveries, the durable inbox
// that applies them, the sandbox's way in (the same signed route) and its phone page.
import type { FastifyInstance } from 'fastify';
import type { Area } from '../../area.js';
import { createInboundSink } from '../inbound/sink.js';
import { setupProviderInbox } from './inbox.js';
import { providerWebhookRoute } from './signature.js';
import { receiveProviderWebhook, verifyProviderWebhook } from './webhook.js';
import sandboxPhonePage from '../sandbox-phone/page.js';

export const providerArea: Area = {
  name: 'messaging/provider',
  handlers: { messaging: { verifyProviderWebhook, receiveProviderWebhook } },
  routes: { receiveProviderWebhook: providerWebhookRoute },
  async plugin(app: FastifyInstance) {
    await setupProviderInbox(app);
    app.platform.setInboundSink(createInboundSink(app));
    await app.register(sandboxPhonePage); // /sandbox/phone (DEMO on, or not production)
  },
};
