// Configuration, read once from the environment and validated at start with one clear message.
import ipaddr from 'ipaddr.js';
import { parseStorageUrl } from './lib/storage/url.js';
import { loadOpsConfig, type OpsConfig } from './ops/config.js';

export interface Config {
  /** TCP port to listen on. */
  port: number;
  /** Interface to listen on; 127.0.0.1 unless deliberately exposed. */
  host: string;
  /** Where the embedded database, keys and uploads live. */
  dataDir: string;
  /** PostgreSQL connection string; the embedded PGlite store when absent. */
  databaseUrl?: string;
  /** STORAGE_URL, `s3://bucket/prefix`: stored files in S3-compatible object storage; under DATA_DIR when absent (server/lib/storage/). */
  storageUrl?: string;
  /** REDIS_URL: rate limits and failure counters shared by every instance (server/lib/redis.ts); per instance when absent. */
  redisUrl?: string;
  /** The public base URL of this server (issuer of tokens, links in documents). */
  publicUrl: string;
  /** pino log level. */
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** LOG_FORMAT: `pretty` (pino-pretty, one readable line an entry) outside production, `json` in it. */
  logFormat: 'pretty' | 'json';
  /** Production mode: https-only outbound URLs, secure cookies, no private targets. */
  production: boolean;
  /** ALLOW_EMBEDDED_STORE: production on PGlite (one instance, no crash safety), started with a warning. */
  allowEmbeddedStore: boolean;
  /**
   * TRUST_PROXY, Fastify's `trustProxy`: false (the socket's address is the client), true (the
   * left-most X-Forwarded-For), a hop count, or the proxies' addresses and CIDR ranges.
   */
  trustProxy: boolean | number | string[];
  /** SIGNUP: who may create a workspace (`open`; `invite`, with an invite code; `closed`). */
  signup: SignupMode;
  /** Master key for digests and encryption at rest; generated into DATA_DIR when absent. */
  secretKey?: string;
  /** Lets outbound requests reach private and loopback addresses (development and tests only). */
  allowPrivateUrls: boolean;
  /** The chat provider's app secret, checked on `X-Hub-Signature-256` of inbound webhooks. */
  providerAppSecret?: string;
  /** The token the provider echoes when it verifies the inbound webhook (`hub.verify_token`). */
  providerVerifyToken?: string;
  /** The Meta app id (PROVIDER_APP_ID): media samples of Cloud API templates go through its resumable upload API. */
  providerAppId?: string;
  /** Base URL of the Cloud API (Graph API); a fake provider in tests. */
  graphApiUrl: string;
  /** Create a demo workspace, owner, API key and sandbox number on first start. */
  demo: boolean;
  /** Owner sessions (bearer JWT) lifetime, seconds. */
  ownerSessionSeconds: number;
  /** Requests per minute per credential on authenticated routes (per instance). */
  rateLimitPerMinute: number;
  /** Requests per minute per client IP on unauthenticated routes (per instance). */
  rateLimitIpPerMinute: number;
  /**
   * Failed authentications with unknown credentials per client IP in 10 minutes before its
   * credentials get 429; also the count per revoked or expired credential (per instance).
   */
  authFailuresPerIp: number;
  /**
   * How long a rotated Connect refresh token, presented again by its own client, still gets a
   * token pair instead of revoking its family (REFRESH_TOKEN_REUSE_GRACE_MS; 0 turns it off).
   */
  refreshTokenReuseGraceMs: number;
  /** The shared service number of Login apps (LOGIN_SERVICE_PHONE_NUMBER_ID, a `pn_…` Cloud API number); a sandbox number when absent. */
  loginServicePhoneNumberId?: string;
  /** How long a login session waits for its LOGIN message, seconds (LOGIN_SESSION_TTL_SECONDS). */
  loginSessionTtlSeconds: number;
  /** The approved AUTHENTICATION template (copy-code button) that carries Login codes (LOGIN_CODE_TEMPLATE, `login_code`). */
  loginCodeTemplate: string;
  /** Its language (LOGIN_CODE_TEMPLATE_LANGUAGE, `en_US`). */
  loginCodeTemplateLanguage: string;
  /** Google OAuth 2.0 client id (GOOGLE_CLIENT_ID); connecting Google answers 422 without it. */
  googleClientId?: string;
  /** Where Google sends the owner back (GOOGLE_REDIRECT_URI), exactly as registered on the client; needed with the client id. */
  googleRedirectUri?: string;
  /** Downloads of inbound media: the largest file served, and the cache in DATA_DIR (size cap, expiry). */
  inboundMedia: InboundMediaConfig;
  /** Most recipients of one campaign (CAMPAIGN_MAX_RECIPIENTS; tests lower it). */
  campaignMaxRecipients: number;
  /**
   * The largest audience whose recipients are inserted within the request that starts a campaign
   * (CAMPAIGN_PREPARE_IN_REQUEST); a larger one answers at once with the campaign `preparing`
   * and the worker inserts its recipients in chunks (docs/scale.md).
   */
  campaignPrepareInRequest: number;
  /** How long a stopping server waits for what is in flight before it exits 1 (SHUTDOWN_GRACE_MS). */
  shutdownGraceMs: number;
  /** The background workers' schedules; undefined keeps each worker's own default. */
  workers: WorkerSchedules;
  /** Metrics endpoint and overload limits (server/ops/config.ts). */
  ops: OpsConfig;
}

export interface InboundMediaConfig {
  /** MEDIA_DOWNLOAD_MAX_BYTES: a larger file answers 413 (default 100 MiB, the provider's largest document). */
  maxBytes: number;
  /** MEDIA_CACHE_MAX_BYTES: the cache's total size; the least recently used files go first (default 1 GiB). */
  cacheBytes: number;
  /** MEDIA_CACHE_TTL_SECONDS: how long a downloaded file is served from the cache (default 7 days). */
  cacheTtlSeconds: number;
}

/**
 * Milliseconds that tests and fault runs shorten (`*_LEASE_MS`, `*_POLL_MS`, …); an unset, zero,
 * negative or non-numeric value leaves the worker's default.
 */
export interface WorkerSchedules {
  /**
   * WORKER_IDLE_MS: the longest a worker sleeps with nothing due (default 60 s): it wakes earlier
   * at its next due row or on a notification; this is only the re-check for a lost notification.
   */
  idleMs?: number;
  /** OUTBOX_LEASE_MS: how long a webhook delivery is leased (outbox default 60 s). */
  outboxLeaseMs?: number;
  /** CAMPAIGN_LEASE_MS, CAMPAIGN_POLL_MS: the campaign worker's lease, and its cycle while a campaign is sending. */
  campaignLeaseMs?: number;
  campaignPollMs?: number;
  /** AUTOMATION_POLL_MS: the longest the automation timer worker sleeps (WORKER_IDLE_MS by default). */
  automationPollMs?: number;
  /** INBOUND_SWEEP_MS: how often the inbound dispatcher sweeps for due messages it was not woken for (WORKER_IDLE_MS by default). */
  inboundSweepMs?: number;
  /** PROVIDER_INBOX_LEASE_MS, _POLL_MS (the longest it sleeps, WORKER_IDLE_MS by default), _RETRY_MS (the first retry's delay, doubled each attempt). */
  providerInboxLeaseMs?: number;
  providerInboxPollMs?: number;
  providerInboxRetryMs?: number;
}

/** PROVIDER_APP_SECRET outside production when unset (scripts/provider-deliver.mjs uses it too). */
export const DEV_PROVIDER_APP_SECRET = 'dev-app-secret';

export class ConfigError extends Error {
  /** Each setting's problem, one line each (empty for a problem found after the settings, as a wrong SECRET_KEY). */
  constructor(
    message: string,
    readonly problems: string[] = [],
  ) {
    super(message);
  }
}

export const SIGNUP_MODES = ['open', 'invite', 'closed'] as const;
export type SignupMode = (typeof SIGNUP_MODES)[number];

function oneOf<T extends string>(value: string | undefined, allowed: readonly T[], fallback: T, name: string, problems: string[]): T {
  if (value === undefined || value === '') return fallback;
  if ((allowed as readonly string[]).includes(value)) return value as T;
  problems.push(`${name} must be one of ${allowed.join(', ')}, got "${value}"`);
  return fallback;
}

/** The names proxy-addr knows, besides addresses and CIDR ranges. */
const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

function trustProxy(value: string | undefined, problems: string[]): Config['trustProxy'] {
  if (value === undefined || value === '' || /^(0|false|no|off)$/i.test(value)) return false;
  if (/^(true|yes|on)$/i.test(value)) return true;
  if (/^\d{1,2}$/.test(value)) return Number(value);
  const entries = value.split(',').map((entry) => entry.trim());
  const bad = entries.filter((entry) => !PROXY_NAMES.has(entry) && !isAddressOrRange(entry));
  if (!bad.length) return entries;
  problems.push(
    `TRUST_PROXY must be true, false, a number of proxies (1-99) or a comma-separated list of addresses, CIDR ranges, loopback, linklocal or uniquelocal; "${bad.join('", "')}" is none of these`,
  );
  return false;
}

/** An IPv4 address in four decimal parts or an IPv6 address, optionally with a prefix length. */
function isAddressOrRange(entry: string): boolean {
  const [address = '', prefix, ...rest] = entry.split('/');
  if (rest.length) return false;
  const v4 = ipaddr.IPv4.isValidFourPartDecimal(address);
  if (!v4 && !ipaddr.IPv6.isValid(address)) return false;
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (v4 ? 32 : 128));
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

function flag(value: string | undefined, fallback: boolean, name: string, problems: string[]): boolean {
  if (value === undefined || value === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(value)) return true;
  if (/^(0|false|no|off)$/i.test(value)) return false;
  problems.push(`${name} must be true or false, got "${value}"`);
  return fallback;
}

function positiveInt(value: string | undefined, fallback: number, name: string, problems: string[], max = 1_000_000): number {
  if (value === undefined || value === '') return fallback;
  if (/^\d+$/.test(value) && Number(value) >= 1 && Number(value) <= max) return Number(value);
  problems.push(`${name} must be an integer 1-${max}, got "${value}"`);
  return fallback;
}

function millis(value: string | undefined, fallback: number, name: string, problems: string[], max: number): number {
  if (value === undefined || value === '') return fallback;
  if (/^\d+$/.test(value) && Number(value) <= max) return Number(value);
  problems.push(`${name} must be an integer 0-${max} (milliseconds), got "${value}"`);
  return fallback;
}

function absoluteUrl(value: string, name: string, problems: string[], schemes = ['http:', 'https:']): string {
  try {
    const url = new URL(value);
    if (!schemes.includes(url.protocol)) problems.push(`${name} must use ${schemes.join(' or ')}, got "${value}"`);
  } catch {
    problems.push(`${name} must be an absolute URL, got "${value}"`);
  }
  return value.replace(/\/$/, '');
}

/** A Meta app id is digits; anything else would become a path segment of the upload call. */
function providerAppId(value: string | undefined, problems: string[]): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (/^\d{1,32}$/.test(value)) return value;
  problems.push(`PROVIDER_APP_ID must be the numeric Meta app id, got "${value}"`);
  return undefined;
}

function optionalMs(value: string | undefined): number | undefined {
  const n = Number(value);
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

/**
 * The process environment, for the libraries configured by their own standard variables
 * (OpenTelemetry's `OTEL_*`, the AWS SDK's `AWS_*`): read here, so that this module stays the one
 * reader of the environment in server/.
 */
export function processEnvironment(): NodeJS.ProcessEnv {
  return process.env;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const portText = env.PORT ?? '3000';
  const portOk = /^\d{1,5}$/.test(portText) && Number(portText) <= 65535;
  if (!portOk) problems.push(`PORT must be an integer 0-65535, got "${env.PORT}"`);
  const port = portOk ? Number(portText) : 3000;
  const host = env.HOST ?? '127.0.0.1';
  const logLevel = (env.LOG_LEVEL ?? 'info') as Config['logLevel'];
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${env.LOG_LEVEL}"`);
  const production = env.NODE_ENV === 'production';
  const logFormat = oneOf(env.LOG_FORMAT, ['pretty', 'json'] as const, production ? 'json' : 'pretty', 'LOG_FORMAT', problems);
  // Derived from HOST and PORT only when not given; a bad PORT is reported once, as PORT.
  if (production && !env.PUBLIC_URL) problems.push('PUBLIC_URL is required when NODE_ENV=production: the https URL users reach (https://chat.example.com)');
  const publicUrl = env.PUBLIC_URL ? absoluteUrl(env.PUBLIC_URL, 'PUBLIC_URL', problems) : `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const databaseUrl = env.DATABASE_URL ? absoluteUrl(env.DATABASE_URL, 'DATABASE_URL', problems, ['postgres:', 'postgresql:']) : undefined;
  const storageUrl = env.STORAGE_URL || undefined;
  const storageProblem = storageUrl ? parseStorageUrl(storageUrl) : undefined;
  if (typeof storageProblem === 'string') problems.push(storageProblem);
  const redisUrl = env.REDIS_URL ? absoluteUrl(env.REDIS_URL, 'REDIS_URL', problems, ['redis:', 'rediss:']) : undefined;
  const allowEmbeddedStore = flag(env.ALLOW_EMBEDDED_STORE, false, 'ALLOW_EMBEDDED_STORE', problems);
  if (production && !env.DATABASE_URL && !allowEmbeddedStore) {
    problems.push(
      'DATABASE_URL is required when NODE_ENV=production (postgres://…); to run on the embedded store anyway (one instance, not safe against a crash) set ALLOW_EMBEDDED_STORE=1',
    );
  }
  const secretKey = env.SECRET_KEY;
  if (secretKey !== undefined && secretKey.length < 32) problems.push('SECRET_KEY must be at least 32 characters');
  if (production && !secretKey) problems.push('SECRET_KEY is required when NODE_ENV=production (openssl rand -base64 48)');
  const allowPrivateUrls = flag(env.ALLOW_PRIVATE_URLS, !production, 'ALLOW_PRIVATE_URLS', problems);
  if (production && allowPrivateUrls) problems.push('ALLOW_PRIVATE_URLS cannot be true when NODE_ENV=production');
  const ownerSessionSeconds = Number(env.OWNER_SESSION_SECONDS ?? 3600);
  if (!Number.isInteger(ownerSessionSeconds) || ownerSessionSeconds < 60 || ownerSessionSeconds > 86400) {
    problems.push(`OWNER_SESSION_SECONDS must be an integer 60-86400, got "${env.OWNER_SESSION_SECONDS}"`);
  }
  const rateLimitPerMinute = positiveInt(env.RATE_LIMIT_PER_MINUTE, 600, 'RATE_LIMIT_PER_MINUTE', problems);
  const rateLimitIpPerMinute = positiveInt(env.RATE_LIMIT_IP_PER_MINUTE, 120, 'RATE_LIMIT_IP_PER_MINUTE', problems);
  const authFailuresPerIp = positiveInt(env.AUTH_FAILURES_PER_IP, 20, 'AUTH_FAILURES_PER_IP', problems);
  // At most 5 minutes, as Ory Hydra allows without a reuse count: the window is when a stolen
  // refresh token goes undetected.
  const refreshTokenReuseGraceMs = millis(env.REFRESH_TOKEN_REUSE_GRACE_MS, 10_000, 'REFRESH_TOKEN_REUSE_GRACE_MS', problems, 300_000);
  const loginSessionTtlSeconds = positiveInt(env.LOGIN_SESSION_TTL_SECONDS, 600, 'LOGIN_SESSION_TTL_SECONDS', problems, 86_400);
  const config: Config = {
    port,
    host,
    dataDir: env.DATA_DIR ?? './data',
    databaseUrl,
    storageUrl,
    redisUrl,
    publicUrl,
    logLevel,
    logFormat,
    production,
    allowEmbeddedStore,
    trustProxy: trustProxy(env.TRUST_PROXY, problems),
    signup: oneOf(env.SIGNUP, SIGNUP_MODES, production ? 'closed' : 'open', 'SIGNUP', problems),
    secretKey,
    allowPrivateUrls,
    // Outside production a known secret, so that `npm run provider:deliver` signs deliveries the
    // server accepts right after a plain `npm start`; in production it is derived from SECRET_KEY.
    providerAppSecret: env.PROVIDER_APP_SECRET || (production ? undefined : DEV_PROVIDER_APP_SECRET),
    providerVerifyToken: env.PROVIDER_VERIFY_TOKEN || undefined,
    providerAppId: providerAppId(env.PROVIDER_APP_ID, problems),
    graphApiUrl: absoluteUrl(env.GRAPH_API_URL ?? 'https://graph.facebook.com/v23.0', 'GRAPH_API_URL', problems),
    demo: flag(env.DEMO, !production, 'DEMO', problems),
    ownerSessionSeconds,
    rateLimitPerMinute,
    rateLimitIpPerMinute,
    authFailuresPerIp,
    refreshTokenReuseGraceMs,
    loginServicePhoneNumberId: env.LOGIN_SERVICE_PHONE_NUMBER_ID || undefined,
    loginSessionTtlSeconds,
    loginCodeTemplate: env.LOGIN_CODE_TEMPLATE || 'login_code',
    loginCodeTemplateLanguage: env.LOGIN_CODE_TEMPLATE_LANGUAGE || 'en_US',
    googleClientId: env.GOOGLE_CLIENT_ID || undefined,
    // Kept byte for byte: Google compares it with the registered URI exactly.
    googleRedirectUri: env.GOOGLE_REDIRECT_URI ? (absoluteUrl(env.GOOGLE_REDIRECT_URI, 'GOOGLE_REDIRECT_URI', problems), env.GOOGLE_REDIRECT_URI) : undefined,
    inboundMedia: {
      maxBytes: positiveInt(env.MEDIA_DOWNLOAD_MAX_BYTES, 100 * 2 ** 20, 'MEDIA_DOWNLOAD_MAX_BYTES', problems, 2 ** 31),
      cacheBytes: positiveInt(env.MEDIA_CACHE_MAX_BYTES, 2 ** 30, 'MEDIA_CACHE_MAX_BYTES', problems, 2 ** 40),
      cacheTtlSeconds: positiveInt(env.MEDIA_CACHE_TTL_SECONDS, 7 * 86_400, 'MEDIA_CACHE_TTL_SECONDS', problems, 30 * 86_400),
    },
    campaignMaxRecipients:
      Number.isInteger(Number(env.CAMPAIGN_MAX_RECIPIENTS)) && Number(env.CAMPAIGN_MAX_RECIPIENTS) > 0 ? Number(env.CAMPAIGN_MAX_RECIPIENTS) : 100_000,
    campaignPrepareInRequest:
      Number.isInteger(Number(env.CAMPAIGN_PREPARE_IN_REQUEST)) && Number(env.CAMPAIGN_PREPARE_IN_REQUEST) >= 0 && env.CAMPAIGN_PREPARE_IN_REQUEST
        ? Number(env.CAMPAIGN_PREPARE_IN_REQUEST)
        : 1_000,
    shutdownGraceMs: Number(env.SHUTDOWN_GRACE_MS) || 25_000,
    workers: {
      idleMs: optionalMs(env.WORKER_IDLE_MS),
      outboxLeaseMs: optionalMs(env.OUTBOX_LEASE_MS),
      campaignLeaseMs: optionalMs(env.CAMPAIGN_LEASE_MS),
      campaignPollMs: optionalMs(env.CAMPAIGN_POLL_MS),
      automationPollMs: optionalMs(env.AUTOMATION_POLL_MS),
      inboundSweepMs: optionalMs(env.INBOUND_SWEEP_MS),
      providerInboxLeaseMs: optionalMs(env.PROVIDER_INBOX_LEASE_MS),
      providerInboxPollMs: optionalMs(env.PROVIDER_INBOX_POLL_MS),
      providerInboxRetryMs: optionalMs(env.PROVIDER_INBOX_RETRY_MS),
    },
    ops: loadOpsConfig(env, { port, host, production }, problems),
  };
  if (problems.length === 1) throw new ConfigError(`Cannot start: ${problems[0]}.`, problems);
  if (problems.length) throw new ConfigError(`Cannot start: ${problems.length} settings are invalid:\n  ${problems.join('\n  ')}`, problems);
  return config;
}
