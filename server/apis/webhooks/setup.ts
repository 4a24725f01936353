// Outbound webhook destinations (signing) registered with the outbox: the endpoint is looked up
// at every attempt, so a rotation takes effect at once and a disabled or deleted endpoint
// answers null, which cancels the row (bad-inputs F10). Each attempt is signed afresh over the same bytes
// (bad-inputs F8): `t=<now>,v1=<HMAC-SHA256 of "<t>.<body>">`, one v1 per secret in its overlap (bad-inputs F9).
import type { FastifyInstance } from 'fastify';
import { stripeStyleHeader } from '#server/lib/signatures.js';
import type { DestinationResolver } from '#server/outbox/outbox.js';
import type { Platform } from '#server/platform.js';
import { ENDPOINT_KIND, type WebhookApi } from './emit.js';
import { signingSecrets } from './endpoints.js';

/** The headers each API's spec declares for deliveries (spec/webhooks/connect.tsp, messaging.tsp). */
function deliveryHeaders(api: WebhookApi, signature: string, event: { id: string; type: string }): Record<string, string> {
  return api === 'messaging'
    ? { 'x-messaging-signature': signature, 'x-messaging-event-id': event.id }
    : { 'x-connect-signature': signature, 'x-connect-event-id': event.id, 'x-connect-event-type': event.type };
}

export function destinationResolver(platform: Platform, api: WebhookApi): DestinationResolver {
  return async (endpointId, workspaceId) => {
    const row = await platform.store.db
      .selectFrom('webhook_endpoints')
      .select(['url', 'secret_enc', 'previous_secret_enc', 'previous_secret_expires_at'])
      .where('id', '=', endpointId)
      .where('workspace_id', '=', workspaceId)
      .where('api', '=', api)
      .where('status', '=', 'enabled')
      .executeTakeFirst();
    if (!row) return null;
    return {
      url: row.url,
      headers: (payload, now) => {
        const event = JSON.parse(payload) as { id: string; type: string };
        const signature = stripeStyleHeader(signingSecrets(platform, row, now), payload, Math.floor(now.getTime() / 1000));
        return deliveryHeaders(api, signature, event);
      },
    };
  };
}

export async function setup(app: FastifyInstance): Promise<void> {
  for (const api of ['connect', 'messaging', 'connect_client'] as const)
    app.platform.outbox.register(ENDPOINT_KIND[api], destinationResolver(app.platform, api));
}
