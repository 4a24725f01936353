// The platform every API builds on: the store, the event bus, the webhook outbox, secrets, the
// SSRF-safe outbound clients and the chat providers. One per server instance.
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, type Config } from './config.js';
import { EventBus } from './events/bus.js';
import { createSafeFetch, type Resolver, type SafeFetch } from './lib/safe-fetch.js';
import { allowCidrs } from './lib/url-policy.js';
import { PASSWORD_COST, SecretBox } from './lib/secrets.js';
import { Outbox } from './outbox/outbox.js';
import { CloudApiProvider } from './providers/cloud-api.js';
import { SandboxProvider } from './providers/sandbox.js';
import { ApiKeyVerifier } from './auth/api-keys.js';
import type { AuthFailureRecorder } from './auth/auth-failures.js';
import { ownerTokenKeys, type OwnerTokenKeys } from './auth/owner-jwt.js';
import type { InboundStepRegistry } from './events/inbound-steps.js';
import type { ChatProvider, ProviderKind } from './providers/types.js';
import type { ProviderWebhookPayload } from './providers/types.js';
import { openStore, type Store, type StoreLogger } from './store/db.js';
import { openStorage, type ObjectStorage } from './lib/storage/index.js';
import { SharedRedis } from './lib/redis.js';
import { credentialDigester, type CredentialDigest } from './auth/credential-digest.js';
import { databaseClock, type DatabaseClock } from './store/db-clock.js';
import type { Limits } from './limits.js';
import { Readiness } from './ops/readiness.js';
import { Activity } from './ops/activity.js';
import { checkMigrated } from './store/migrate.js';
import { sql } from 'kysely';

export interface Platform {
  config: Config;
  store: Store;
  bus: EventBus;
  outbox: Outbox;
  secrets: SecretBox;
  /** Where stored files live: DATA_DIR or S3-compatible storage (lib/storage/; `storage.ping()` for readiness). */
  storage: ObjectStorage;
  /** REDIS_URL's connection: the fleet's shared limits (lib/redis.ts; `redis.ping()` for readiness). */
  redis?: SharedRedis;
  /** For webhook deliveries: no redirects, bounded time and response size. */
  webhookFetch: SafeFetch;
  /** For media and other user-given URLs: up to 3 redirects, each checked. */
  mediaFetch: SafeFetch;
  /** Signs the sandbox's inbound deliveries and checks the provider's (`X-Hub-Signature-256`). */
  providerAppSecret: string;
  /** The token the provider must echo to verify the inbound webhook. */
  providerVerifyToken: string;
  instanceId: string;
  /** scrypt's N for new password hashes: PASSWORD_COST, unless a test asked for a cheaper one. */
  passwordCost: number;
  now: () => Date;
  /**
   * The digest that keys every per-credential cache and rate-limit bucket (auth/credential-digest.ts):
   * SECRET_KEY-derived with Redis (one bucket per credential across the fleet), else per process.
   */
  credentialDigest: CredentialDigest;
  /** Verifies Messaging API keys, with this instance's cache of verified keys. */
  apiKeys: ApiKeyVerifier;
  /** The owner JWTs' signing key and the tokens verified recently on this instance. */
  ownerTokens: OwnerTokenKeys;
  /** Owners found recently (`workspace:owner` → until, epoch ms): see OwnerBearer in auth/authenticate.ts. */
  ownerCache: Map<string, number>;
  /** Counts failed authentications; installed by the rate-limit plugin (auth/auth-failures.ts). */
  authFailureRecorder?: AuthFailureRecorder;
  /** The steps areas run in an inbound message's transaction (events/inbound-steps.ts). */
  inboundSteps: InboundStepRegistry;
  /** What the workers did, for the metrics (server/ops/activity.ts). */
  activity: Activity;
  /** What `/readyz` checks; each dependency adds its check (server/ops/readiness.ts). */
  readiness: Readiness;
  provider(kind: ProviderKind): ChatProvider;
  /** Where the sandbox hands its inbound payloads; set by the app to its own inbound route. */
  setInboundSink(sink: (payload: ProviderWebhookPayload) => Promise<void>): void;
  close(): Promise<void>;
}

export interface PlatformOverrides {
  store?: Store;
  /** Stored files somewhere else than the configuration says (tests of both backends). */
  storage?: ObjectStorage;
  now?: () => Date;
  /** A DNS stub for the outbound clients (tests). */
  lookup?: Resolver;
  /** Statuses without delay in the sandbox (tests). */
  sandboxTestMode?: boolean;
  /** Shorter outbound timeouts, for tests that prove a timeout without waiting out the real one. */
  timeouts?: { providerMs?: number; webhookMs?: number };
  /** The jitter source of the webhook retry schedule, in [0, 1) (tests fix it to read exact due times). */
  random?: () => number;
  /**
   * A cheaper scrypt N (a power of two) for password hashes, for test suites that create
   * hundreds of owners (as Django's and Devise's test settings do); tests of the hashing itself
   * keep the production cost.
   */
  passwordCost?: number;
  /** Other sizes and timeouts of the HTTP server (server/app.ts LIMITS), for the same tests. */
  limits?: Partial<Limits>;
}

/** SECRET_KEY, or a key generated once into DATA_DIR (set SECRET_KEY when instances share a database). */
function masterKey(config: Config): string {
  if (config.secretKey) return config.secretKey;
  const file = join(config.dataDir, 'secret.key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(config.dataDir, { recursive: true });
  const key = randomBytes(48).toString('base64url');
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return key;
}

/** Refuses a key other than the one this database's secrets were sealed with (bad-inputs L7). */
async function checkKey(store: Store, secrets: SecretBox): Promise<void> {
  const check = secrets.digest('key-check');
  await store.db
    .insertInto('platform_settings')
    .values({ name: 'key_check', value: check })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const stored = await store.db.selectFrom('platform_settings').select('value').where('name', '=', 'key_check').executeTakeFirstOrThrow();
  if (stored.value !== check) {
    throw new ConfigError(
      'Cannot start: SECRET_KEY is not the key this database was sealed with. Start with the original SECRET_KEY (or DATA_DIR/secret.key); nothing was changed.',
    );
  }
}

export async function createPlatform(config: Config, overrides: PlatformOverrides = {}, log?: StoreLogger): Promise<Platform> {
  const store = overrides.store ?? (await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir }));
  if (log) store.useLogger(log); // one log stream: the store's warnings go through the server's logger
  const key = masterKey(config);
  const secrets = new SecretBox(key);
  let clock: DatabaseClock | undefined;
  try {
    await checkKey(store, secrets);
    if (!overrides.now) clock = await databaseClock(store.db); // bad-inputs F-12: instances agree on time
  } catch (error) {
    if (!overrides.store) await store.close();
    throw error;
  }
  const now = overrides.now ?? clock!.now;
  const storage = overrides.storage ?? (await openStorage(config));
  const redis = config.redisUrl ? new SharedRedis(config.redisUrl) : undefined;
  const policy = {
    httpsOnly: config.production,
    allowPrivate: config.allowPrivateUrls ? allowCidrs('0.0.0.0/0', '::/0') : undefined,
    // Development receivers listen on random local ports; production allows 80 and 443 only.
    allowedPorts: config.allowPrivateUrls ? ('any' as const) : undefined,
    lookup: overrides.lookup,
  };
  const webhookFetch = createSafeFetch({ ...policy, timeoutMs: overrides.timeouts?.webhookMs ?? 10_000, maxResponseBytes: 64 * 1024, maxRedirects: 0 });
  const mediaFetch = createSafeFetch({ ...policy, timeoutMs: 15_000, maxResponseBytes: 16 * 1024 * 1024, maxRedirects: 3 });
  const instanceId = randomUUID();
  const bus = new EventBus(store);
  const activity = new Activity();
  const outbox = new Outbox({
    log: (message, extra) => log?.warn({ component: 'outbox', ...extra }, message),
    onAttempt: (outcome) => activity.count('webhook_attempts', outcome),
    store,
    instanceId,
    leaseMs: config.workers.outboxLeaseMs,
    idleMs: config.workers.idleMs,
    now,
    random: overrides.random,
    post: async (url, headers, body) => {
      const res = await webhookFetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'chatapp-webhooks/1.0', ...headers },
        body,
      });
      return { status: res.status, body: res.body.toString('utf8') };
    },
  });
  let inboundSink: (payload: ProviderWebhookPayload) => Promise<void> = async () => {
    throw new Error('the inbound webhook route is not mounted yet');
  };
  const sandbox = new SandboxProvider({
    db: store.db,
    deliverWebhook: (payload) => inboundSink(payload),
    testMode: overrides.sandboxTestMode,
    now,
  });
  const cloud = new CloudApiProvider({
    baseUrl: config.graphApiUrl,
    appSecret: config.providerAppSecret,
    appId: config.providerAppId,
    timeoutMs: overrides.timeouts?.providerMs,
  });
  await bus.start();
  await outbox.start();
  const credentialDigest = credentialDigester(redis ? secrets.digest('rate-limit-buckets') : undefined);
  const apiKeys = new ApiKeyVerifier({ db: store.db, secrets, now, bus, store, digest: credentialDigest });
  const readiness = new Readiness();
  readiness.add('database', async () => {
    await sql`select 1`.execute(store.db);
  });
  readiness.add('migrations', () => checkMigrated(store.db));
  // Object storage always (the disk backend checks DATA_DIR is writable); Redis when configured.
  readiness.add('storage', () => storage.ping());
  if (redis) readiness.add('redis', () => redis.ping());
  return {
    config,
    store,
    bus,
    outbox,
    secrets,
    storage,
    redis,
    webhookFetch,
    mediaFetch,
    providerAppSecret: config.providerAppSecret ?? secrets.digest('provider-app-secret'),
    providerVerifyToken: config.providerVerifyToken ?? secrets.digest('provider-verify-token').slice(0, 32),
    instanceId,
    passwordCost: overrides.passwordCost ?? PASSWORD_COST,
    now,
    credentialDigest,
    apiKeys,
    ownerTokens: ownerTokenKeys(secrets),
    ownerCache: new Map(),
    inboundSteps: new Map(),
    readiness,
    activity,
    provider: (kind) => (kind === 'sandbox' ? sandbox : cloud),
    setInboundSink(sink) {
      inboundSink = sink;
    },
    async close() {
      clock?.stop();
      await outbox.stop();
      await bus.stop();
      await sandbox.close();
      await webhookFetch.close();
      await mediaFetch.close();
      if (!overrides.storage) await storage.close();
      await redis?.close();
      if (!overrides.store) await store.close();
    },
  };
}
