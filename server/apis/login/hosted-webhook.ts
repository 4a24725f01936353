// The service-hosted receiver of `chatapp.auth.verified` (/api/chatapp-auth/webhook/{appId}) for
// apps whose webhook destination is `hosted`, and the Login signature scheme both ends share:
// `X-Login-Signature: sha256=<hex HMAC-SHA256(secret, raw body)>`, one value per signing secret
// (the new secret's first) while a rotated secret overlaps.
import type { Kysely, Selectable } from 'kysely';
import type { operations } from '#generated/login/types.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import { sha256Header, verifySha256Header } from '#server/lib/signatures.js';
import type { Platform } from '#server/platform.js';
import type { Database, LoginAppsTable } from '#server/store/schema.js';
import { hasUnstorableText } from '#server/lib/storable.js';

type SecretColumns = Pick<Selectable<LoginAppsTable>, 'webhook_secret_enc' | 'previous_webhook_secret_enc' | 'previous_webhook_secret_until'>;

/** At most this many comma-separated values are tried: two in an overlap, a little slack beyond. */
const MAX_SIGNATURES = 4;
const CHALLENGE = { 'www-authenticate': 'Signature realm="login-webhook"' };

/** The secrets that sign an app's webhooks now: the current one, then the previous one within its overlap. */
export function loginWebhookSecrets(platform: Platform, app: SecretColumns, now: Date = platform.now()): string[] {
  const secrets = [platform.secrets.decrypt(app.webhook_secret_enc)];
  if (app.previous_webhook_secret_enc && app.previous_webhook_secret_until && app.previous_webhook_secret_until.getTime() > now.getTime()) {
    secrets.push(platform.secrets.decrypt(app.previous_webhook_secret_enc));
  }
  return secrets;
}

/** The `X-Login-Signature` value for a body: `sha256=<hex>` per secret, comma-separated. */
export function loginSignatureHeader(secrets: string[], rawBody: string | Buffer): string {
  return secrets.map((secret) => sha256Header(secret, rawBody)).join(',');
}

/** Whether one of the header's values is a valid signature of `rawBody` under one of `secrets`. */
export function verifyLoginSignature(header: string | undefined, secrets: string[], rawBody: Buffer | string): boolean {
  if (!header) return false;
  const values = header.split(',').map((v) => v.trim());
  if (values.length > MAX_SIGNATURES) return false;
  return values.some((value) => secrets.some((secret) => verifySha256Header(value, secret, rawBody)));
}

/**
 * Stores an accepted event once per (app, event id). The sessions module may call this directly
 * for `hosted` apps instead of posting to our own URL; the route below calls it after checking
 * the signature.
 */
export async function storeHostedReceipt(
  db: Kysely<Database>,
  app: { id: string; workspace_id: string },
  event: { id: string; type: string },
  receivedAt: Date,
): Promise<{ receiptId: string; duplicate: boolean }> {
  const inserted = await db
    .insertInto('hosted_webhook_receipts')
    .values({
      id: newId('hk'),
      app_id: app.id,
      workspace_id: app.workspace_id,
      event_id: event.id,
      event_type: event.type,
      payload: JSON.stringify(event),
      received_at: receivedAt,
    })
    .onConflict((oc) => oc.columns(['app_id', 'event_id']).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (inserted) return { receiptId: inserted.id, duplicate: false };
  const existing = await db
    .selectFrom('hosted_webhook_receipts')
    .select('id')
    .where('app_id', '=', app.id)
    .where('event_id', '=', event.id)
    .executeTakeFirstOrThrow();
  return { receiptId: existing.id, duplicate: true };
}

export const receiveHostedLoginWebhook: Handler<operations['receiveHostedLoginWebhook']> = async (request, reply) => {
  const platform = request.server.platform;
  const { appId } = request.params;
  const app = await platform.store.db
    .selectFrom('login_apps')
    .select(['id', 'workspace_id', 'webhook_secret_enc', 'previous_webhook_secret_enc', 'previous_webhook_secret_until'])
    .where('id', '=', appId)
    .where('webhook_destination', '=', 'hosted')
    .executeTakeFirst();
  if (!app) throw new HttpProblem(404, 'not-found', `No Login app ${appId} with a hosted webhook.`);
  const header = request.headers['x-login-signature'];
  // The HMAC covers the bytes received, never a re-serialisation of the parsed body (bad-inputs E2).
  if (!request.rawBody || !verifyLoginSignature(typeof header === 'string' ? header : undefined, loginWebhookSecrets(platform, app), request.rawBody)) {
    throw new HttpProblem(401, 'invalid-signature', "X-Login-Signature does not match the raw body and the app's webhook secret.", {}, CHALLENGE);
  }
  const event = request.body;
  const eventIdHeader = request.headers['x-login-event-id'];
  if (typeof eventIdHeader === 'string' && eventIdHeader !== event.id) {
    throw new HttpProblem(400, 'validation', 'X-Login-Event-Id differs from the body id.', {
      errors: [{ pointer: '/header/x-login-event-id', detail: 'must equal the body id' }],
    });
  }
  if (hasUnstorableText(event)) {
    throw new HttpProblem(400, 'validation', 'The event holds NUL characters or lone surrogates.', {
      errors: [{ pointer: '/body', detail: 'contains text that cannot be stored' }],
    });
  }
  const { receiptId, duplicate } = await storeHostedReceipt(platform.store.db, app, event, platform.now());
  reply.header('cache-control', 'no-store');
  return { received: true as const, receipt_id: receiptId, duplicate };
};
