// The demo workspace: on first start with an empty store (and DEMO not off), a workspace, its
// owner, a Messaging API key and a sandbox number, so the product works at once on a laptop.
// The credentials are printed once; only their hashes are kept. `npm run demo:credentials`
// (./demo-credentials.ts) re-issues them.
//
// It also gets a Login app on the shared service number, which /demo/login signs in with. That
// app is created through the Login API itself (`POST /api/login/apps` with the owner's bearer,
// in process), and its API key is kept encrypted in `demo_workspaces` (migration 006), so a
// restart keeps the demo working and the key never leaves the server.
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { hashPassword } from './lib/secrets.js';
import { base62, newId } from './lib/ids.js';
import { newApiKeySecret } from './auth/api-keys.js';
import { issueOwnerToken } from './auth/owner-jwt.js';
import { createSandboxAccount } from './providers/sandbox.js';
import type { Platform } from './platform.js';
import type { Database } from './store/schema.js';

export const DEMO_WORKSPACE_SLUG = 'demo';
export const DEMO_LOGIN_APP_NAME = 'Demo shop';
const DEMO_KEY_NAME = 'Demo key';

export interface DemoCredentials {
  workspaceId: string;
  email: string;
  password: string;
  apiKey: string;
  sandboxNumber: string;
  /** The Login API's shared service number, which users message to sign in (when the app was given). */
  loginServiceNumber?: string;
  /** The demo Login app (`app_…`) and its key (`lk_…`), when the app was given and the Login API could create it. */
  loginAppId?: string;
  loginApiKey?: string;
}

export async function seedDemoWorkspace(platform: Platform, app?: FastifyInstance): Promise<DemoCredentials | null> {
  const { db } = platform.store;
  // "Empty" means no owner yet: the platform's own service workspace has none.
  const any = await db.selectFrom('owners').select('id').limit(1).executeTakeFirst();
  if (any) return null;
  const now = platform.now();
  const password = base62(20);
  const email = 'owner@demo.example';
  const workspace = { id: newId('ws'), name: 'Demo workspace', slug: DEMO_WORKSPACE_SLUG, created_at: now };
  const key = newApiKeySecret(platform.secrets);
  const passwordHash = await hashPassword(password, platform.passwordCost);
  await db.transaction().execute(async (tx) => {
    await tx.insertInto('workspaces').values(workspace).execute();
    await tx
      .insertInto('owners')
      .values({ id: newId('usr'), workspace_id: workspace.id, email, name: 'Demo owner', password_hash: passwordHash, created_at: now })
      .execute();
    await tx
      .insertInto('api_keys')
      .values({
        id: newId('key'),
        workspace_id: workspace.id,
        name: DEMO_KEY_NAME,
        kind: 'messaging',
        scopes: ['messaging:read', 'messaging:write'],
        prefix: key.prefix,
        digest: key.digest,
        created_at: now,
      })
      .execute();
    await (tx as unknown as Kysely<DemoTables>)
      .insertInto('demo_workspaces')
      .values({ workspace_id: workspace.id, login_app_id: null, login_api_key_enc: null, created_at: now })
      .execute();
  });
  const { numbers } = await createSandboxAccount(db, workspace.id, { name: 'Demo sandbox' });
  // Without the app (server.ts seeds before anything else needs it) /demo/login creates the
  // Login app on its first request instead.
  const login = app ? await demoLoginApp(app).catch(() => null) : null;
  return {
    workspaceId: workspace.id,
    email,
    password,
    apiKey: key.secret,
    sandboxNumber: numbers[0]?.display_phone_number ?? '',
    ...(login ? { loginAppId: login.appId, loginApiKey: login.apiKey, loginServiceNumber: await serviceNumberOf(app!) } : {}),
  };
}

/** The display number of the Login service number, when there is one to show. */
export async function serviceNumberOf(app: FastifyInstance): Promise<string | undefined> {
  if (!app.hasDecorator('loginServiceNumber')) return undefined;
  return app.loginServiceNumber.get().then(
    (number) => number.display_phone_number ?? undefined,
    () => undefined, // none (production without LOGIN_SERVICE_PHONE_NUMBER_ID): the line is left out
  );
}

export const DEMO_CREDENTIALS_COMMAND = 'npm run demo:credentials';

/**
 * The demo's credentials as printed once. `docs` adds the docs line (the server's own banner
 * already names the docs, `npm run demo:credentials` prints this alone).
 */
export function describeDemo(demo: DemoCredentials, url: string, heading = 'Demo workspace created', { docs = true } = {}): string {
  return `
${heading} (shown once: ${DEMO_CREDENTIALS_COMMAND} issues new ones):
${docs ? `  docs         ${url}/docs\n` : ''}\
  sign in      ${url}/account/sign-in   ${demo.email} / ${demo.password}
  API key      ${demo.apiKey}   (Messaging: X-API-Key)
${demo.loginApiKey ? `  Login key    ${demo.loginApiKey}   (the demo Login app ${demo.loginAppId}: LOGIN_KEY in the README's "Login by hand")\n` : ''}\
  sandbox no.  ${demo.sandboxNumber}
${demo.loginServiceNumber ? `  Login no.    ${demo.loginServiceNumber}   (the Login service number: users send their LOGIN message to it)\n` : ''}\
  try          curl -X POST ${url}/api/account/sessions -H 'content-type: application/json' \\
                 -d '{"email":"${demo.email}","password":"${demo.password}"}'
  login demo   ${url}/demo/login     (sign in by chat message; send it from ${url}/sandbox/phone)
`;
}

/** Every later start: the workspace is there, its secrets were shown once, here is how to get new ones. */
export function describeExistingDemo(url: string, loginServiceNumber?: string): string {
  return `
Demo workspace: sign in at ${url}/account/sign-in as owner@demo.example.
${loginServiceNumber ? `  Login no.    ${loginServiceNumber}   (the Login service number: users send their LOGIN message to it)\n` : ''}\
  Its password and keys were printed on the first start; for new ones stop the server and run: ${DEMO_CREDENTIALS_COMMAND}
`;
}

/**
 * New credentials for the demo workspace, printed once: the owner's password, the Messaging key
 * ("Demo key", rotated, or made again when revoked) and the demo Login app's key. Null when the
 * store has no demo workspace.
 */
export async function reissueDemoCredentials(app: FastifyInstance): Promise<DemoCredentials | null> {
  const platform = app.platform;
  const db = demoDb(platform);
  const workspaceId = await demoWorkspaceId(platform);
  if (!workspaceId) return null;
  const owner = await db
    .selectFrom('owners')
    .select(['id', 'email'])
    .where('workspace_id', '=', workspaceId)
    .orderBy('created_at')
    .limit(1)
    .executeTakeFirstOrThrow();
  const password = base62(20);
  await db
    .updateTable('owners')
    .set({ password_hash: await hashPassword(password, platform.passwordCost) })
    .where('id', '=', owner.id)
    .execute();
  const { token } = await issueOwnerToken(platform, { ownerId: owner.id, workspaceId }, 'owner-api', 300);
  const call = async (url: string, payload?: object) => {
    const res = await app.inject({
      method: 'POST',
      url,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: JSON.stringify(payload ?? {}),
    });
    if (res.statusCode !== 200 && res.statusCode !== 201) throw new Error(`POST ${url} answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
    return res.json() as { secret?: string; api_key?: string };
  };
  const key = await db
    .selectFrom('api_keys')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('name', '=', DEMO_KEY_NAME)
    .where('revoked_at', 'is', null)
    .orderBy('created_at')
    .limit(1)
    .executeTakeFirst();
  const apiKey = key
    ? await call(`/api/account/api-keys/${key.id}/rotate`)
    : await call('/api/account/api-keys', { name: DEMO_KEY_NAME, kind: 'messaging', scopes: ['messaging:read', 'messaging:write'] });
  const login = await demoLoginApp(app);
  let loginApiKey: string | undefined;
  if (login) {
    const { rotateApiKey } = await import('./apis/login/apps.js');
    loginApiKey = (await rotateApiKey(app, workspaceId, login.appId)).api_key;
    await db
      .updateTable('demo_workspaces')
      .set({ login_api_key_enc: platform.secrets.encrypt(loginApiKey) })
      .where('workspace_id', '=', workspaceId)
      .where('login_app_id', '=', login.appId)
      .execute();
  }
  const number = await db.selectFrom('phone_numbers').select('display_phone_number').where('workspace_id', '=', workspaceId).limit(1).executeTakeFirst();
  return {
    workspaceId,
    email: owner.email,
    password,
    apiKey: apiKey.secret!,
    sandboxNumber: number?.display_phone_number ?? '',
    ...(login && loginApiKey ? { loginAppId: login.appId, loginApiKey, loginServiceNumber: await serviceNumberOf(app) } : {}),
  };
}

// ---- The demo Login app -----------------------------------------------------------------------

export interface DemoLoginApp {
  workspaceId: string;
  appId: string;
  /** The Login app's API key: for the demo's server-side routes only, never sent to a browser. */
  apiKey: string;
}

/** Migration 006's table, which server/store/schema.ts does not list (the demo is optional). */
interface DemoTables {
  demo_workspaces: { workspace_id: string; login_app_id: string | null; login_api_key_enc: string | null; created_at: Date | string };
}

const demoDb = (platform: Platform) => platform.store.db as unknown as Kysely<Database & DemoTables>;

/** The demo workspace's id, or undefined when this store was not seeded with one. */
export async function demoWorkspaceId(platform: Platform): Promise<string | undefined> {
  const row = await demoDb(platform).selectFrom('demo_workspaces').select('workspace_id').orderBy('created_at').limit(1).executeTakeFirst();
  return row?.workspace_id;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The demo Login app of this instance (made by the pages plugin, which serves /demo/login). */
    demoLogin: DemoLogin;
  }
}

/**
 * The demo workspace's Login app and its API key: read from the store (decrypted), or created
 * once through the Login API. Null when there is no demo workspace (the store was not empty on
 * first start). Throws when the Login API cannot create the app.
 */
export function demoLoginApp(app: FastifyInstance): Promise<DemoLoginApp | null> {
  return app.demoLogin.get();
}

export class DemoLogin {
  /** One lookup or creation at a time; a failure is not remembered, so the next request retries. */
  private pending?: Promise<DemoLoginApp | null>;

  constructor(private readonly app: FastifyInstance) {}

  get(): Promise<DemoLoginApp | null> {
    this.pending ??= loadOrCreate(this.app).finally(() => (this.pending = undefined));
    return this.pending;
  }
}

async function loadOrCreate(app: FastifyInstance): Promise<DemoLoginApp | null> {
  const platform = app.platform;
  const db = demoDb(platform);
  const workspaceId = await demoWorkspaceId(platform);
  if (!workspaceId) return null;
  const stored = await load(platform, workspaceId);
  if (stored) return stored;

  const created = await createLoginApp(app, workspaceId);
  const claimed = await db
    .updateTable('demo_workspaces')
    .set({ login_app_id: created.appId, login_api_key_enc: platform.secrets.encrypt(created.apiKey) })
    .where('workspace_id', '=', workspaceId)
    .where('login_app_id', 'is', null)
    .executeTakeFirst();
  if (Number(claimed.numUpdatedRows) === 1) return created;
  // Another instance created one at the same moment: keep theirs, remove ours.
  await db.deleteFrom('login_apps').where('id', '=', created.appId).where('workspace_id', '=', workspaceId).execute();
  return load(platform, workspaceId);
}

/**
 * Creates the app as the owner would: `POST /api/login/apps` with a short-lived owner bearer,
 * in process. (Should that operation answer 501, as while the Login API was being built, the
 * apps module's `createApp` does the same without HTTP.)
 */
async function createLoginApp(app: FastifyInstance, workspaceId: string): Promise<DemoLoginApp> {
  const platform = app.platform;
  const body = { name: DEMO_LOGIN_APP_NAME, use_service_phone: true, webhook_destination: 'none' as const };
  const owner = await platform.store.db
    .selectFrom('owners')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .orderBy('created_at')
    .limit(1)
    .executeTakeFirst();
  if (owner) {
    const { token } = await issueOwnerToken(platform, { ownerId: owner.id, workspaceId }, 'owner-api', 300);
    const res = await app.inject({
      method: 'POST',
      url: '/api/login/apps',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });
    if (res.statusCode === 201) {
      const created = res.json() as { id: string; api_key: string };
      return { workspaceId, appId: created.id, apiKey: created.api_key };
    }
    if (res.statusCode !== 501) throw new Error(`the Login API could not create the demo Login app (${res.statusCode}): ${res.body.slice(0, 300)}`);
  }
  const { createApp } = await import('./apis/login/apps.js');
  const created = await createApp(app, workspaceId, body, app.log);
  return { workspaceId, appId: created.app.id, apiKey: created.apiKey };
}

/** The stored app, or null: none yet, or its key no longer opens it (rotated by the owner, sealed under another SECRET_KEY). */
async function load(platform: Platform, workspaceId: string): Promise<DemoLoginApp | null> {
  const db = demoDb(platform);
  const row = await db
    .selectFrom('demo_workspaces')
    .innerJoin('login_apps', 'login_apps.id', 'demo_workspaces.login_app_id')
    .select(['demo_workspaces.login_app_id', 'demo_workspaces.login_api_key_enc', 'login_apps.api_key_digest'])
    .where('demo_workspaces.workspace_id', '=', workspaceId)
    .executeTakeFirst();
  if (!row?.login_app_id) return null;
  let apiKey: string | undefined;
  try {
    apiKey = row.login_api_key_enc ? platform.secrets.decrypt(row.login_api_key_enc) : undefined;
  } catch {
    apiKey = undefined;
  }
  if (apiKey && platform.secrets.matches(apiKey, row.api_key_digest)) return { workspaceId, appId: row.login_app_id, apiKey };
  await db
    .updateTable('demo_workspaces')
    .set({ login_app_id: null, login_api_key_enc: null })
    .where('workspace_id', '=', workspaceId)
    .where('login_app_id', '=', row.login_app_id)
    .execute();
  return null;
}
