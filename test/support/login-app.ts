// A Login app written straight to the store (its own workspace and sandbox numbers), for tests
// of the session side that do not go through the owner API.
import type { FastifyInstance } from 'fastify';
import { newId, newSecret } from '#server/lib/ids.js';
import { createSandboxAccount } from '#server/providers/sandbox.js';

export interface LoginAppOptions {
  /** The workspace's monthly session cap (the default otherwise). */
  cap?: number;
  /** Sandbox numbers of the workspace; the app uses the first. */
  numbers?: number;
  /** Server webhooks go to this URL (the `production` destination); none otherwise. */
  webhookUrl?: string;
}

export async function insertLoginApp(app: FastifyInstance, { cap, numbers = 1, webhookUrl }: LoginAppOptions = {}) {
  const { db } = app.platform.store;
  const { secrets } = app.platform;
  const workspaceId = newId('ws');
  await db
    .insertInto('workspaces')
    .values({ id: workspaceId, name: 'Acme', slug: workspaceId.toLowerCase(), ...(cap ? { login_session_cap: cap } : {}) })
    .execute();
  const sandbox = await createSandboxAccount(db, workspaceId, { numbers });
  const apiKey = newSecret('lk_live_');
  const webhookSecret = newSecret('whsec_');
  const appId = newId('app');
  const now = app.platform.now();
  await db
    .insertInto('login_apps')
    .values({
      id: appId,
      workspace_id: workspaceId,
      name: 'Acme Shop',
      use_service_phone: false,
      phone_number_id: sandbox.numbers[0]!.id,
      webhook_destination: webhookUrl ? 'production' : 'none',
      production_webhook_url: webhookUrl ?? null,
      staging_webhook_url: null,
      api_key_prefix: apiKey.slice(0, 12),
      api_key_digest: secrets.digest(apiKey),
      webhook_secret_prefix: webhookSecret.slice(0, 10),
      webhook_secret_enc: secrets.encrypt(webhookSecret),
      created_at: now,
      updated_at: now,
    })
    .execute();
  return { workspaceId, appId, apiKey, webhookSecret, numbers: sandbox.numbers };
}
