// Login app API keys on the Login API. The scheme ApiKeyHeader (`X-API-Key` or `Authorization:
// ApiKey`) is registered for api `login` only, so there it replaces the platform's Messaging-key verifier:
// a Messaging key is 401 on the Login API, and a Login key (`lk_…`) is 401 on Messaging because
// the Messaging verifier only knows `mk_…` keys (bad-inputs A8).
//
// As with Messaging keys (server/auth/api-keys.ts): lookup by the keyed digest (unique index),
// then a constant-time confirmation; a few seconds of cache per instance, cleared here at once
// and on other instances through the bus when a key is rotated or its app deleted (bad-inputs A3), and
// cleared whole when the LISTEN connection is back (invalidations meanwhile may be lost).
import type { FastifyRequest } from 'fastify';
import { markDeadCredential, type CredentialHeader } from '#server/auth/auth-failures.js';
import { apiKeyHeader, registerScheme, type AuthContext } from '#server/auth/authenticate.js';
import { retiredCredentialWorkspace } from '#server/auth/retired-credentials.js';
import { setCapped } from '#server/lib/capped-map.js';
import type { Platform } from '#server/platform.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Verifies Login app keys, with this instance's cache (made by startLogin). */
    loginKeys: LoginKeyVerifier;
  }
}

declare module '../../auth/authenticate.js' {
  interface AuthKinds {
    login_app: true;
  }
  interface AuthContext {
    /** The Login app of the API key (kind `login_app`). */
    appId?: string;
  }
}

/** `lk_live_` and 32 base62 characters (≈ 190 bits). */
export const LOGIN_KEY_PATTERN = /^lk_live_[0-9A-Za-z]{32}$/;
export const LOGIN_KEY_PREFIX_LENGTH = 12;
export const LOGIN_KEY_INVALIDATED_EVENT = 'auth.login_app_key_invalidated';
const CACHE_TTL_MS = 5_000;
const CACHE_MAX = 10_000;

export interface LoginCaller {
  appId: string;
  workspaceId: string;
}

export class LoginKeyVerifier {
  private readonly cache = new Map<string, { app: LoginCaller; until: number }>();
  /** Bumped by every invalidation: a lookup that started before one must not refill the cache. */
  private epoch = 0;

  constructor(private readonly platform: Platform) {
    platform.bus.subscribe(LOGIN_KEY_INVALIDATED_EVENT, (event) => this.forget(String(event.data.app_id)));
    platform.store.onReconnect(() => this.forgetAll());
  }

  /**
   * The app whose current key `secret` is; null for anything else, malformed input included.
   * `onDead` hears the workspace of a key rotated away or gone with its app (bad-inputs K10).
   */
  async verify(secret: string, onDead?: (workspaceId: string) => void): Promise<LoginCaller | null> {
    if (!LOGIN_KEY_PATTERN.test(secret)) return null;
    const { secrets, store } = this.platform;
    const digest = secrets.digest(secret);
    const now = this.platform.now().getTime();
    const hit = this.cache.get(digest);
    if (hit && hit.until > now) return hit.app;
    if (hit) this.cache.delete(digest);
    const epoch = this.epoch;
    const row = await store.db
      .selectFrom('login_apps')
      .select(['id', 'workspace_id', 'api_key_digest'])
      .where('api_key_digest', '=', digest)
      .executeTakeFirst();
    if (!row || !secrets.matches(secret, row.api_key_digest)) {
      const retiredIn = onDead && (await retiredCredentialWorkspace(store.db, secrets, secret, 'login_key'));
      if (retiredIn) onDead(retiredIn);
      return null;
    }
    const app = { appId: row.id, workspaceId: row.workspace_id };
    if (epoch === this.epoch) {
      setCapped(this.cache, digest, { app, until: now + CACHE_TTL_MS }, CACHE_MAX);
    }
    return app;
  }

  forget(appId: string): void {
    this.epoch++;
    for (const [digest, entry] of this.cache) if (entry.app.appId === appId) this.cache.delete(digest);
  }

  /** Drops every cached key (invalidations may have been missed while the LISTEN connection was away). */
  forgetAll(): void {
    this.epoch++;
    this.cache.clear();
  }

  /** After a key rotation or an app deletion: here at once, elsewhere when the event arrives. */
  async invalidate(appId: string, workspaceId: string): Promise<void> {
    this.forget(appId);
    await this.platform.bus.publish({ type: LOGIN_KEY_INVALIDATED_EVENT, workspaceId, data: { app_id: appId } });
  }
}

async function loginKey(request: FastifyRequest, header: CredentialHeader, secret: string | undefined): Promise<AuthContext | null> {
  if (!secret) return null;
  const app = await request.server.loginKeys.verify(secret, (workspaceId) => markDeadCredential(request, header, workspaceId));
  return app && { workspaceId: app.workspaceId, kind: 'login_app', appId: app.appId, scopes: [] };
}

const challenge = (api: string) => `ApiKey realm="${api}"`;

/** Registers the Login-key schemes for api `login` (idempotent); handlers.ts calls it at load. */
export function registerLoginAuth(): void {
  registerScheme(
    'ApiKeyHeader',
    {
      verify: (request) => {
        const [header, secret] = apiKeyHeader(request);
        return loginKey(request, header, secret);
      },
      challenge,
    },
    { api: 'login' },
  );
}

/** The Login app calling an operation secured by a Login key (its authenticator ran first). */
export function loginCaller(request: FastifyRequest): LoginCaller {
  const auth = request.auth;
  if (auth?.kind !== 'login_app' || !auth.appId) throw new Error(`no Login app caller on ${request.method} ${request.routeOptions.url}`);
  return { appId: auth.appId, workspaceId: auth.workspaceId };
}
