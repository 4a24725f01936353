// Login apps: the owner API (9 operations) and the functions the settings page shares with it.
// Everything stays within the caller's workspace: another workspace's app id answers the same
// 404 as an unknown one (bad-inputs B1). The API key is stored as a keyed digest and the webhook secret
// AES-GCM encrypted (it must be readable to sign); both appear only in create and rotate answers.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Selectable } from 'kysely';
import type { components, operations } from '#generated/login/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { retireCredential } from '#server/auth/retired-credentials.js';
import { decodeKeyset, keysetPage } from '#server/lib/cursor.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId, newSecret } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import { FetchFailedError, UnsafeUrlError } from '#server/lib/safe-fetch.js';
import type { Platform } from '#server/platform.js';
import { ProviderError } from '#server/providers/types.js';
import type { LoginAppsTable } from '#server/store/schema.js';
import { checkRedirectUris } from '#server/apis/connect/oauth/clients.js';
import { LOGIN_KEY_PREFIX_LENGTH } from './auth.js';
import { oidcIssuer } from './oidc/provider.js';
import { findOwnNumber, inactiveNumber, isActiveNumber, primaryOwnNumber, serviceNumberUnset, unknownNumber, type LoginNumber } from './service-phone.js';

type S = components['schemas'];
export type LoginAppRow = Selectable<LoginAppsTable>;
type Settings = Pick<
  LoginAppRow,
  | 'name'
  | 'use_service_phone'
  | 'phone_number_id'
  | 'webhook_destination'
  | 'production_webhook_url'
  | 'staging_webhook_url'
  | 'oidc_redirect_uris'
  | 'oidc_client_type'
>;
type Setup = Pick<LoginAppRow, 'provider_webhook_status' | 'provider_webhook_error' | 'provider_webhook_code' | 'provider_webhook_updated_at'>;
type ListQuery = { limit?: number; cursor?: string };
/** The set-up's columns, and whether a failure came from the provider (retry answers 502) or our state (409). */
type SetupOutcome = { columns: Setup; refusedByProvider: boolean };

const SECRET_PREFIX_LENGTH = 10; // `whsec_` and 4 characters
const URL_FIELDS = ['production_webhook_url', 'staging_webhook_url'] as const;

const notFound = (appId: string) => new HttpProblem(404, 'not-found', `No Login app ${appId} in this workspace.`);
const newApiKey = () => newSecret('lk_live_');

export async function findApp(platform: Platform, workspaceId: string, appId: string): Promise<LoginAppRow> {
  const row = await platform.store.db
    .selectFrom('login_apps')
    .selectAll()
    .where('id', '=', appId)
    .where('workspace_id', '=', workspaceId)
    .where('purpose', '=', 'client') // the workspace's own app of verified links is not the owner's to edit
    .executeTakeFirst();
  if (!row) throw notFound(appId);
  return row;
}

// ---- Views ----------------------------------------------------------------------------------

/** Own-number apps need the provider's inbound webhook; so does a named number, which start may select. */
const needsSetup = (app: Pick<Settings, 'use_service_phone' | 'phone_number_id'>) => !app.use_service_phone || app.phone_number_id !== null;

/** The contract's LoginApp for each row; numbers are looked up once per call, not per row. */
export async function appViews(server: FastifyInstance, rows: LoginAppRow[]): Promise<S['LoginApp'][]> {
  const { db } = server.platform.store;
  // Without a service number (production, LOGIN_SERVICE_PHONE_NUMBER_ID unset) such an app shows none.
  const service = rows.some((r) => r.use_service_phone) && !serviceNumberUnset(server.config) ? await server.loginServiceNumber.get() : undefined;
  const primaries = new Map<string, Promise<LoginNumber | undefined>>();
  /** The number users message by default, when one is usable. */
  const numberOf = async (row: LoginAppRow): Promise<LoginNumber | undefined> => {
    if (row.use_service_phone) return service && isActiveNumber(service) ? service : undefined;
    const own = row.phone_number_id
      ? await findOwnNumber(db, row.workspace_id, row.phone_number_id)
      : await (primaries.get(row.workspace_id) ?? primaries.set(row.workspace_id, primaryOwnNumber(db, row.workspace_id)).get(row.workspace_id));
    return own && isActiveNumber(own) ? own : undefined;
  };
  return Promise.all(rows.map(async (row) => appView(server.platform, row, await numberOf(row))));
}

function appView(platform: Platform, row: LoginAppRow, number: LoginNumber | undefined): S['LoginApp'] {
  return {
    id: row.id,
    name: row.name,
    use_service_phone: row.use_service_phone,
    phone_number_id: row.phone_number_id,
    display_phone_number: number?.display_phone_number ?? null,
    provider_phone_number_id: number?.provider_phone_number_id ?? null,
    webhook_destination: row.webhook_destination,
    production_webhook_url: row.production_webhook_url,
    staging_webhook_url: row.staging_webhook_url,
    hosted_webhook_url: `${platform.config.publicUrl}/api/chatapp-auth/webhook/${row.id}`,
    oidc_issuer: oidcIssuer(platform, row.id),
    oidc_redirect_uris: row.oidc_redirect_uris,
    oidc_client_type: row.oidc_client_type,
    provider_webhook: {
      status: row.provider_webhook_status as S['ProviderWebhookSetupStatus'],
      last_error: row.provider_webhook_error,
      provider_code: row.provider_webhook_code,
      updated_at: row.provider_webhook_updated_at?.toISOString() ?? null,
    },
    api_key_prefix: row.api_key_prefix,
    webhook_secret_prefix: row.webhook_secret_prefix,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

// ---- Rules ----------------------------------------------------------------------------------

const invalid = (field: string, detail: string, why: string) =>
  new HttpProblem(400, 'validation', detail, { errors: [{ pointer: `/body/${field}`, detail: why }] });

/** A webhook URL as accepted (G): 400 for syntax or scheme, 422 unsafe-url for the target, naming the field. */
async function checkWebhookUrl(platform: Platform, field: string, url: string): Promise<void> {
  try {
    await platform.webhookFetch.check(url);
  } catch (error) {
    if (error instanceof UnsafeUrlError) {
      if (error.status === 400) throw invalid(field, `${field} is not an acceptable webhook URL: ${error.reason}.`, error.reason);
      throw new HttpProblem(422, 'unsafe-url', `${field} is not a public HTTPS target: ${error.reason}.`, {
        errors: [{ pointer: `/body/${field}`, detail: error.reason }],
      });
    }
    // A name that does not resolve now may resolve later; the connect-time guard decides then.
    if (!(error instanceof FetchFailedError)) throw error;
  }
}

/** The contract's rules for the resulting settings; only what was sent is checked again. */
async function checkSettings(platform: Platform, workspaceId: string, next: Settings, sent: Partial<Settings>): Promise<void> {
  if (next.webhook_destination === 'production' && !next.production_webhook_url) {
    throw invalid('production_webhook_url', 'webhook_destination production needs production_webhook_url.', 'Required when webhook_destination is production.');
  }
  if (next.webhook_destination === 'staging' && !next.staging_webhook_url) {
    throw invalid('staging_webhook_url', 'webhook_destination staging needs staging_webhook_url.', 'Required when webhook_destination is staging.');
  }
  for (const field of URL_FIELDS) {
    const url = sent[field];
    if (url) await checkWebhookUrl(platform, field, url);
  }
  if (sent.oidc_redirect_uris) checkRedirectUris(sent.oidc_redirect_uris, '/body/oidc_redirect_uris');
  if (sent.use_service_phone) {
    const unset = serviceNumberUnset(platform.config, '/body/use_service_phone');
    if (unset) throw unset;
  }
  if (sent.phone_number_id) {
    const own = await findOwnNumber(platform.store.db, workspaceId, sent.phone_number_id);
    if (!own) throw unknownNumber(sent.phone_number_id);
    if (!isActiveNumber(own)) throw inactiveNumber(own);
  }
}

// ---- Provider webhook set-up ------------------------------------------------------------------

/**
 * Subscribes the own number's business account to the provider's inbound webhook. Sandbox
 * numbers always deliver to our inbound path, so they are active at once. A failure is recorded
 * (message, provider code) rather than thrown: it must not fail a create, and retry reads it.
 */
async function providerWebhookSetup(
  platform: Platform,
  workspaceId: string,
  app: Pick<Settings, 'use_service_phone' | 'phone_number_id'>,
  log: FastifyBaseLogger,
): Promise<SetupOutcome> {
  if (!needsSetup(app))
    return {
      columns: { provider_webhook_status: 'not_required', provider_webhook_error: null, provider_webhook_code: null, provider_webhook_updated_at: null },
      refusedByProvider: false,
    };
  const now = platform.now();
  const failed = (error: string, refusedByProvider = false, code: number | null = null): SetupOutcome => ({
    columns: { provider_webhook_status: 'failed', provider_webhook_error: error.slice(0, 500), provider_webhook_code: code, provider_webhook_updated_at: now },
    refusedByProvider,
  });
  const { db } = platform.store;
  const number = app.phone_number_id ? await findOwnNumber(db, workspaceId, app.phone_number_id) : await primaryOwnNumber(db, workspaceId);
  if (!number) return failed('No active cloud-API number in this workspace: connect one or name phone_number_id.');
  if (!isActiveNumber(number)) return failed(`Phone number ${number.id} is ${number.status}, not active.`);
  if (number.provider_kind === 'cloud_api') {
    const account = await db
      .selectFrom('business_accounts')
      .select(['id', 'provider_waba_id', 'access_token_enc'])
      .where('id', '=', number.business_account_id)
      .executeTakeFirstOrThrow();
    if (!account.access_token_enc) return failed("The number's business account has no access token: connect it again.");
    try {
      const result = await platform
        .provider('cloud_api')
        .subscribeWebhooks({ wabaId: account.provider_waba_id, accessToken: platform.secrets.decrypt(account.access_token_enc) });
      if (!result.subscribed) return failed('The provider did not confirm the webhook subscription.', true);
    } catch (error) {
      if (error instanceof ProviderError) return failed(`The provider refused the webhook subscription: ${error.details ?? error.message}`, true, error.code);
      log.error({ err: error }, 'provider webhook set-up failed');
      return failed('The webhook subscription could not be completed; try again.', true);
    }
    await db.updateTable('business_accounts').set({ webhooks_subscribed_at: now }).where('id', '=', account.id).execute();
  }
  return {
    columns: { provider_webhook_status: 'active', provider_webhook_error: null, provider_webhook_code: null, provider_webhook_updated_at: now },
    refusedByProvider: false,
  };
}

// ---- Operations shared with the settings page ---------------------------------------------------

export interface CreatedApp {
  app: S['LoginApp'];
  apiKey: string;
  webhookSecret: string;
}

export async function createApp(server: FastifyInstance, workspaceId: string, body: S['LoginAppCreate'], log: FastifyBaseLogger): Promise<CreatedApp> {
  const { platform } = server;
  const settings: Settings = {
    name: body.name,
    use_service_phone: body.use_service_phone ?? true,
    phone_number_id: body.phone_number_id ?? null,
    webhook_destination: body.webhook_destination ?? 'none',
    production_webhook_url: body.production_webhook_url ?? null,
    staging_webhook_url: body.staging_webhook_url ?? null,
    oidc_redirect_uris: body.oidc_redirect_uris ?? [],
    oidc_client_type: body.oidc_client_type ?? 'confidential',
  };
  await checkSettings(platform, workspaceId, settings, settings);
  const { columns: setup } = await providerWebhookSetup(platform, workspaceId, settings, log);
  const apiKey = newApiKey();
  const webhookSecret = newSecret('whsec_');
  const now = platform.now(); // from JS, millisecond precision, as list cursors expect
  const row = await platform.store.db
    .insertInto('login_apps')
    .values({
      id: newId('app'),
      workspace_id: workspaceId,
      ...settings,
      ...setup,
      api_key_prefix: apiKey.slice(0, LOGIN_KEY_PREFIX_LENGTH),
      api_key_digest: platform.secrets.digest(apiKey),
      webhook_secret_prefix: webhookSecret.slice(0, SECRET_PREFIX_LENGTH),
      webhook_secret_enc: platform.secrets.encrypt(webhookSecret),
      previous_webhook_secret_enc: null,
      previous_webhook_secret_until: null,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { app: (await appViews(server, [row]))[0]!, apiKey, webhookSecret };
}

export async function listApps(server: FastifyInstance, workspaceId: string, { limit = 20, cursor }: ListQuery) {
  const { platform } = server;
  const scope = { workspaceId, operation: 'listLoginApps' };
  const after = decodeKeyset(platform.secrets, scope, cursor);
  let query = platform.store.db.selectFrom('login_apps').selectAll().where('workspace_id', '=', workspaceId).where('purpose', '=', 'client');
  if (after) query = query.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const page = keysetPage(platform.secrets, scope, rows, limit, (row) => row);
  return { ...page, data: await appViews(server, page.data) };
}

export async function updateApp(
  server: FastifyInstance,
  workspaceId: string,
  appId: string,
  body: S['LoginAppUpdate'],
  log: FastifyBaseLogger,
): Promise<S['LoginApp']> {
  const { platform } = server;
  const current = await findApp(platform, workspaceId, appId);
  const pick = <K extends keyof Settings>(key: K): Settings[K] => (body[key] === undefined ? current[key] : (body[key] as Settings[K]));
  const next: Settings = {
    name: pick('name'),
    use_service_phone: pick('use_service_phone'),
    phone_number_id: pick('phone_number_id'),
    webhook_destination: pick('webhook_destination'),
    production_webhook_url: pick('production_webhook_url'),
    staging_webhook_url: pick('staging_webhook_url'),
    oidc_redirect_uris: pick('oidc_redirect_uris'),
    oidc_client_type: pick('oidc_client_type'),
  };
  await checkSettings(platform, workspaceId, next, body as Partial<Settings>);
  const sourceChanged = next.use_service_phone !== current.use_service_phone || next.phone_number_id !== current.phone_number_id;
  const setup = sourceChanged ? (await providerWebhookSetup(platform, workspaceId, next, log)).columns : {};
  const row = await platform.store.db
    .updateTable('login_apps')
    .set({ ...next, ...setup, updated_at: platform.now() })
    .where('id', '=', appId)
    .where('workspace_id', '=', workspaceId)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound(appId); // deleted meanwhile
  return (await appViews(server, [row]))[0]!;
}

export async function deleteApp(server: FastifyInstance, workspaceId: string, appId: string): Promise<void> {
  const { platform } = server;
  // Sessions and receipts go with it (ON DELETE CASCADE), so its tokens no longer verify; its
  // key stays known as retired (server/auth/retired-credentials.ts).
  const deleted = await platform.store.db.transaction().execute(async (tx) => {
    const row = await tx
      .deleteFrom('login_apps')
      .where('id', '=', appId)
      .where('workspace_id', '=', workspaceId)
      .returning('api_key_digest')
      .executeTakeFirst();
    if (row) await retireCredential(tx, row.api_key_digest, workspaceId, 'login_key', platform.now());
    return row;
  });
  if (!deleted) throw notFound(appId);
  await server.loginKeys.invalidate(appId, workspaceId);
}

export async function rotateApiKey(server: FastifyInstance, workspaceId: string, appId: string): Promise<S['LoginAppApiKey']> {
  const { platform } = server;
  const apiKey = newApiKey();
  const now = platform.now();
  const row = await platform.store.db.transaction().execute(async (tx) => {
    const old = await tx
      .selectFrom('login_apps')
      .select('api_key_digest')
      .where('id', '=', appId)
      .where('workspace_id', '=', workspaceId)
      .forUpdate()
      .executeTakeFirst();
    if (!old) return undefined;
    await retireCredential(tx, old.api_key_digest, workspaceId, 'login_key', now); // the old key stays known as retired
    return tx
      .updateTable('login_apps')
      .set({ api_key_prefix: apiKey.slice(0, LOGIN_KEY_PREFIX_LENGTH), api_key_digest: platform.secrets.digest(apiKey), updated_at: now })
      .where('id', '=', appId)
      .returning(['id', 'api_key_prefix'])
      .executeTakeFirst();
  });
  if (!row) throw notFound(appId);
  await server.loginKeys.invalidate(appId, workspaceId); // the old key is refused at once (bad-inputs A3)
  return { app_id: row.id, api_key: apiKey, api_key_prefix: row.api_key_prefix, rotated_at: now.toISOString() };
}

export async function rotateWebhookSecret(platform: Platform, workspaceId: string, appId: string, overlapSeconds: number): Promise<S['LoginAppWebhookSecret']> {
  const current = await findApp(platform, workspaceId, appId);
  const secret = newSecret('whsec_');
  const now = platform.now();
  const until = overlapSeconds > 0 ? new Date(now.getTime() + overlapSeconds * 1000) : null;
  const row = await platform.store.db
    .updateTable('login_apps')
    .set({
      webhook_secret_prefix: secret.slice(0, SECRET_PREFIX_LENGTH),
      webhook_secret_enc: platform.secrets.encrypt(secret),
      // The previous secret keeps signing during the overlap; an earlier overlap ends here.
      previous_webhook_secret_enc: until ? current.webhook_secret_enc : null,
      previous_webhook_secret_until: until,
      updated_at: now,
    })
    .where('id', '=', appId)
    .where('workspace_id', '=', workspaceId)
    .where('webhook_secret_enc', '=', current.webhook_secret_enc) // a concurrent rotation must not become the "previous"
    .returning('webhook_secret_prefix')
    .executeTakeFirst();
  if (!row) throw new HttpProblem(409, 'conflict', 'The webhook secret was rotated concurrently; rotate again if needed.');
  return {
    app_id: appId,
    webhook_secret: secret,
    webhook_secret_prefix: row.webhook_secret_prefix,
    rotated_at: now.toISOString(),
    previous_secret_expires_at: until?.toISOString() ?? null,
  };
}

export async function retrySetup(server: FastifyInstance, workspaceId: string, appId: string, log: FastifyBaseLogger): Promise<S['LoginApp']> {
  const { platform } = server;
  const current = await findApp(platform, workspaceId, appId);
  if (!needsSetup(current)) throw new HttpProblem(409, 'conflict', `App ${appId} uses the shared service number; there is no provider webhook to set up.`);
  const { columns: setup, refusedByProvider } = await providerWebhookSetup(platform, workspaceId, current, log);
  const row = await platform.store.db
    .updateTable('login_apps')
    .set({ ...setup, updated_at: platform.now() })
    .where('id', '=', appId)
    .where('workspace_id', '=', workspaceId)
    // Only if the phone source is unchanged: an update meanwhile ran its own set-up.
    .where('use_service_phone', '=', current.use_service_phone)
    .where((eb) => (current.phone_number_id === null ? eb('phone_number_id', 'is', null) : eb('phone_number_id', '=', current.phone_number_id)))
    .returningAll()
    .executeTakeFirst();
  if (!row) throw new HttpProblem(409, 'conflict', 'The app changed during the set-up; check its status and retry if needed.');
  if (setup.provider_webhook_status === 'failed') {
    const detail = setup.provider_webhook_error ?? 'The provider webhook set-up failed.';
    if (!refusedByProvider) throw new HttpProblem(409, 'conflict', detail); // no usable number: fix that first
    throw new HttpProblem(502, 'provider-error', detail, setup.provider_webhook_code !== null ? { provider_code: setup.provider_webhook_code } : {});
  }
  return (await appViews(server, [row]))[0]!;
}

export async function listReceipts(
  platform: Platform,
  workspaceId: string,
  appId: string,
  { limit = 20, cursor }: ListQuery,
): Promise<{ data: S['HostedWebhookReceipt'][]; has_more: boolean; next_cursor: string | null }> {
  await findApp(platform, workspaceId, appId);
  // Bound to the app too, so a cursor of another app's receipts is refused (bad-inputs B6).
  const scope = { workspaceId, operation: `listLoginAppWebhookReceipts:${appId}` };
  const after = decodeKeyset(platform.secrets, scope, cursor);
  let query = platform.store.db.selectFrom('hosted_webhook_receipts').selectAll().where('app_id', '=', appId).where('workspace_id', '=', workspaceId);
  if (after) query = query.where((eb) => eb(eb.refTuple('received_at', 'id'), '<', eb.tuple(after.createdAt, after.id)));
  const rows = await query
    .orderBy('received_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  return keysetPage(
    platform.secrets,
    scope,
    rows.map((r) => ({ ...r, created_at: r.received_at })),
    limit,
    (r) => ({
      id: r.id,
      app_id: r.app_id,
      event_id: r.event_id,
      event_type: r.event_type as 'chatapp.auth.verified',
      received_at: r.received_at.toISOString(),
      payload: r.payload as S['HostedWebhookEvent'],
    }),
  );
}

// ---- Handlers -----------------------------------------------------------------------------------

export const createLoginApp: Handler<operations['createLoginApp']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const { app, apiKey, webhookSecret } = await createApp(request.server, workspaceId, request.body, request.log);
  reply.code(201).headers({ location: `/api/login/apps/${app.id}`, 'cache-control': 'no-store' });
  return { ...app, api_key: apiKey, webhook_secret: webhookSecret };
};

export const listLoginApps: Handler<operations['listLoginApps']> = async (request) =>
  listApps(request.server, authOf(request).workspaceId, (request.query ?? {}) as ListQuery);

export const getLoginApp: Handler<operations['getLoginApp']> = async (request) => {
  const { server } = request;
  return (await appViews(server, [await findApp(server.platform, authOf(request).workspaceId, request.params.appId)]))[0]!;
};

export const updateLoginApp: Handler<operations['updateLoginApp']> = async (request) =>
  updateApp(request.server, authOf(request).workspaceId, request.params.appId, request.body, request.log);

export const deleteLoginApp: Handler<operations['deleteLoginApp']> = async (request, reply) => {
  await deleteApp(request.server, authOf(request).workspaceId, request.params.appId);
  return reply.code(204).send();
};

export const rotateLoginAppApiKey: Handler<operations['rotateLoginAppApiKey']> = async (request, reply) => {
  const rotated = await rotateApiKey(request.server, authOf(request).workspaceId, request.params.appId);
  reply.header('cache-control', 'no-store');
  return rotated;
};

export const rotateLoginAppWebhookSecret: Handler<operations['rotateLoginAppWebhookSecret']> = async (request, reply) => {
  const body = (request.body ?? {}) as Partial<S['LoginWebhookSecretRotate']>; // the body is optional
  const rotated = await rotateWebhookSecret(request.server.platform, authOf(request).workspaceId, request.params.appId, body.previous_secret_valid_for ?? 0);
  reply.header('cache-control', 'no-store');
  return rotated;
};

export const retryLoginAppWebhookSetup: Handler<operations['retryLoginAppWebhookSetup']> = async (request) =>
  retrySetup(request.server, authOf(request).workspaceId, request.params.appId, request.log);

export const listLoginAppWebhookReceipts: Handler<operations['listLoginAppWebhookReceipts']> = async (request) =>
  listReceipts(request.server.platform, authOf(request).workspaceId, request.params.appId, (request.query ?? {}) as ListQuery);
