// Where the sandbox provider hands its Meta-format payloads: the same signed POST the real
// provider makes, so signature checks, dedupe, statuses and events cannot differ between the two.
// A signed delivery is never refused by a per-IP limit; any other failure is retried by the sandbox.
// Under a burst the webhook stores deliveries and applies them just after (provider-inbox.ts).
import type { FastifyInstance } from 'fastify';
import { sha256Header } from '#server/lib/signatures.js';
import type { ProviderWebhookPayload } from '#server/providers/types.js';
import type {} from '../provider/inbox.js';

export function createInboundSink(app: FastifyInstance): (payload: ProviderWebhookPayload) => Promise<void> {
  return async (payload) => {
    const body = JSON.stringify(payload);
    const response = await app.inject({
      method: 'POST',
      url: '/api/webhook/chatapp',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': sha256Header(app.platform.providerAppSecret, body) },
      payload: body,
    });
    if (response.statusCode !== 200) {
      app.log.warn({ statusCode: response.statusCode }, 'sandbox delivery refused by the inbound webhook');
      // The status code tells the sandbox whether to try again (retryableDelivery).
      throw Object.assign(new Error(`the inbound webhook answered ${response.statusCode}: ${response.body.slice(0, 300)}`), {
        statusCode: response.statusCode,
      });
    }
    // Under a burst the 200 means stored, not yet applied: the hand-off ends once it is applied,
    // so the sandbox's idle() still means its statuses are in the store.
    await app.providerInbox.settled();
  };
}
