// Verification: an inbound LOGIN message marks the pending session of that number and code
// `success`, in the transaction that stores the message (an inbound step, events/inbound-steps.ts),
// with the sender, its token, the `verified` event, the server webhook (outbox) and the stream
// push (bus). So a LOGIN that was stored was also verified: nothing waits on a notification that a
// LISTEN connection reconnecting could lose. The conditional UPDATE keeps the expiry sweep and a
// concurrent delivery of the same code from both winning.
// Also here: the outbox endpoint kind of Login apps and the expiry sweep (which sleeps until the
// earliest pending session expires, woken by a session started: ../../lib/due-loop.ts);
// `startLogin` starts all.
import type { SharedRedis } from '#server/lib/redis.js';
import type { FastifyInstance } from 'fastify';
import { sql, type Selectable, type SqlBool } from 'kysely';
import type { Transaction } from 'kysely';
import { registerInboundStep, type StoredInbound } from '#server/events/inbound-steps.js';
import { setCapped } from '#server/lib/capped-map.js';
import { DueLoop } from '#server/lib/due-loop.js';
import { DEFAULT_IDLE_MS } from '#server/lib/wake-up.js';
import { newId } from '#server/lib/ids.js';
import { typedText } from '#server/lib/keywords.js';
import { WA_ID } from '#server/lib/phone.js';
import { enqueue } from '#server/outbox/outbox.js';
import type { Platform } from '#server/platform.js';
import type { Database, LoginAppsTable } from '#server/store/schema.js';
import { startStreams } from './events-stream.js';
import { loginSignatureHeader, loginWebhookSecrets, storeHostedReceipt } from './hosted-webhook.js';
import { canonicalCode, expireSessions, nextExpiry, recordSessionEvent } from './sessions.js';
import { issueToken, SigningKeys } from './tokens.js';
import { LoginKeyVerifier } from './auth.js';
import { ServiceNumber } from './service-phone.js';

/**
 * `LOGIN K7Q2M9XD`, any case and spacing, an optional `:`/`-`/`#`, one trailing punctuation mark.
 * ASCII letters and digits only, and no `u` flag: with it, `i` would fold a few non-ASCII letters
 * (the Kelvin sign, the long s) onto ASCII ones; without it, Cyrillic О or Greek Ο never match.
 */
const LOGIN_TEXT = /^ *login *[:#-]? *([0-9a-z]{8}) *[.!?,;]? *$/i;
/**
 * The text as phones send it, made comparable (the normaliser every keyword matcher shares,
 * lib/keywords.ts): NFKC, format characters dropped, every kind of space a plain space.
 */
export const loginText = typedText;
export const OUTBOX_KIND = 'login_app';
const EVENT_TYPE = 'chatapp.auth.verified';

/** The canonical code of a LOGIN message, or null when the text is something else. */
export function loginCodeOf(text: string): string | null {
  const match = LOGIN_TEXT.exec(loginText(text));
  return match ? canonicalCode(match[1]!) : null;
}

type DestinationColumns = Pick<Selectable<LoginAppsTable>, 'id' | 'webhook_destination' | 'production_webhook_url' | 'staging_webhook_url'>;

/** Where the app's server webhooks go now, or null (none, or the chosen URL unset). */
export function webhookUrl(platform: Platform, app: DestinationColumns): string | null {
  switch (app.webhook_destination) {
    case 'production':
      return app.production_webhook_url;
    case 'staging':
      return app.staging_webhook_url;
    case 'hosted':
      return `${platform.config.publicUrl}/api/chatapp-auth/webhook/${app.id}`;
    default:
      return null;
  }
}

interface InboundLogin {
  phoneNumberId: string;
  code: string;
  messageId: string;
  contactId: string;
  from: string;
}

/** Verifies the session the message names; false when nothing changed (bad-inputs D2, D4, D5, D6). */
// Guessing codes (bad-inputs K5): codes are 8 characters of 31 symbols (~39.6 bits), and a phone
// that sent MAX_MISSES wrong codes to a number within MISS_WINDOW_MS is not heard on that number
// until the window passes, right code or not. Counted in Redis with REDIS_URL, so a fleet gives a
// phone MAX_MISSES in all; otherwise (and while Redis is away) in memory per instance, like the
// rate limits (docs/reliability.md): with N instances a phone then gets up to N times the misses.
export const MAX_MISSES = 10;
const MISS_WINDOW_MS = 10 * 60 * 1000;
const MAX_TRACKED = 100_000;

declare module 'fastify' {
  interface FastifyInstance {
    /** The recent wrong codes per `number:phone` (made by startLogin). */
    loginCodeMisses: CodeMisses;
    /** The expiry sweep of pending sessions (made by startLogin); a started session announces its expiry. */
    loginExpiry: DueLoop;
  }
}

function recentMisses(byPhone: Map<string, number[]>, key: string, now: number): number[] {
  const recent = (byPhone.get(key) ?? []).filter((at) => at > now - MISS_WINDOW_MS);
  if (recent.length) byPhone.set(key, recent);
  else byPhone.delete(key);
  return recent;
}

function recordMiss(byPhone: Map<string, number[]>, key: string, now: number): void {
  setCapped(byPhone, key, [...recentMisses(byPhone, key, now), now], MAX_TRACKED);
}

/** The misses of a `number:phone` in the sliding window: a sorted set in Redis, else this instance's map. */
export class CodeMisses {
  private readonly local = new Map<string, number[]>();

  constructor(private readonly redis?: SharedRedis) {}

  private shared(): SharedRedis | undefined {
    return this.redis?.ready ? this.redis : undefined;
  }

  async recent(key: string, now: number): Promise<number> {
    const redis = this.shared();
    if (redis) {
      try {
        const [, count] =
          (await redis.client
            .multi()
            .zremrangebyscore(`login-misses:${key}`, 0, now - MISS_WINDOW_MS)
            .zcard(`login-misses:${key}`)
            .exec()) ?? [];
        return Number(count?.[1] ?? 0);
      } catch {
        // Redis went away meanwhile: this instance's own count (fail open to per instance).
      }
    }
    return recentMisses(this.local, key, now).length;
  }

  async record(key: string, now: number): Promise<void> {
    recordMiss(this.local, key, now);
    const redis = this.shared();
    if (!redis) return;
    await redis.client
      .multi()
      .zadd(`login-misses:${key}`, now, `${now}:${Math.random().toString(36).slice(2, 8)}`)
      .pexpire(`login-misses:${key}`, MISS_WINDOW_MS)
      .exec()
      .catch(() => undefined);
  }
}

export async function verifySession(server: FastifyInstance, trx: Transaction<Database>, message: InboundLogin): Promise<boolean> {
  const { platform, loginCodeMisses: misses } = server;
  const now = platform.now();
  const guesser = `${message.phoneNumberId}:${message.from}`;
  if ((await misses.recent(guesser, now.getTime())) >= MAX_MISSES) return false;
  // The session, its app's destination and the sender's profile name in one statement.
  const found = await trx
    .selectFrom('login_sessions as s')
    .leftJoin('login_apps as a', 'a.id', 's.app_id')
    .leftJoin('contacts as c', (join) => join.on('c.id', '=', message.contactId))
    .select([
      's.id',
      's.app_id',
      's.workspace_id',
      's.bound_phone',
      'a.webhook_destination',
      'a.production_webhook_url',
      'a.staging_webhook_url',
      'c.name as contact_name',
    ])
    .where('s.phone_number_id', '=', message.phoneNumberId) // the session's own number only (bad-inputs D6)
    .where('s.login_code', '=', message.code)
    // A literal, so that a generic plan can use the partial index login_sessions_pending_code
    // (`where status = 'pending'`); with a parameter PostgreSQL planned this on every message.
    .where(sql<SqlBool>`s.status = 'pending'`)
    .where('s.expires_at', '>', now)
    .executeTakeFirst();
  const digits = message.from.replace(/^\+/, '');
  if (!found) await misses.record(guesser, now.getTime());
  if (!found || !WA_ID.test(digits) || !found.webhook_destination) return false; // no destination: the app is gone
  const phone = `+${digits}`;
  if (found.bound_phone && found.bound_phone !== phone) {
    // A phone-bound session: another number's LOGIN changes nothing but the counter. Not a
    // guess (the code was right), so it is not a miss either.
    await trx
      .updateTable('login_sessions')
      .set({ ignored_logins: sql`ignored_logins + 1` })
      .where('id', '=', found.id)
      .where('status', '=', 'pending')
      .execute();
    return false;
  }
  const profileName = found.contact_name?.slice(0, 256) ?? null; // the contract's maxLength
  return markVerified(server, trx, { ...found, webhook_destination: found.webhook_destination }, { phone, profileName, messageId: message.messageId, now });
}

/** A pending session and its app's webhook destination, as markVerified needs them. */
export interface VerifiableSession extends Omit<DestinationColumns, 'id'> {
  id: string;
  app_id: string;
  workspace_id: string;
}

/**
 * Marks a pending session `success` for `phone` in `trx`, with its token, the `verified` event,
 * the server webhook (outbox or hosted receipt) and the stream push. False when nothing changed
 * (a concurrent verification or the sweep got there first). Shared by the LOGIN message and the
 * code check.
 */
export async function markVerified(
  server: FastifyInstance,
  trx: Transaction<Database>,
  session: VerifiableSession,
  facts: { phone: string; profileName: string | null; messageId: string | null; now: Date },
): Promise<boolean> {
  const { platform } = server;
  const { phone, profileName, now } = facts;
  const app = {
    id: session.app_id,
    webhook_destination: session.webhook_destination,
    production_webhook_url: session.production_webhook_url,
    staging_webhook_url: session.staging_webhook_url,
  };
  // Wasted only if a concurrent delivery or the sweep gets there first.
  const token = await issueToken(server, { appId: app.id, sessionId: session.id, phone, at: now });
  const updated = await trx
    .updateTable('login_sessions')
    .set({
      status: 'success',
      verified_at: now,
      phone,
      profile_name: profileName,
      message_id: facts.messageId,
      token_jti: token.jti,
      token_expires_at: token.expiresAt,
      verification_token_enc: platform.secrets.encrypt(token.token),
    })
    .where('id', '=', session.id)
    .where('status', '=', 'pending')
    .where('expires_at', '>', now)
    .executeTakeFirst();
  if (Number(updated.numUpdatedRows) !== 1) return false; // another delivery, or the sweep, got there first
  await recordSessionEvent(platform, trx, session, 'verified');
  if (webhookUrl(platform, app)) {
    const eventId = newId('evt');
    const verifiedAt = now.toISOString();
    const facts = { session_id: session.id, phone, profile_name: profileName, verified_at: verifiedAt, verification_token: token.token };
    // The envelope, then the seed's top-level fields (contract: ChatappAuthVerifiedEvent).
    const body = { id: eventId, type: EVENT_TYPE, created: Math.floor(now.getTime() / 1000), data: { app_id: app.id, ...facts }, event: EVENT_TYPE, ...facts };
    if (app.webhook_destination === 'hosted') {
      // Our own hosted receiver: stored in this transaction rather than posted to our own
      // public URL (which a private deployment may not reach, and which would count as traffic).
      await storeHostedReceipt(trx, { id: app.id, workspace_id: session.workspace_id }, body, now);
    } else {
      await enqueue(
        trx,
        { workspaceId: session.workspace_id, endpointKind: OUTBOX_KIND, endpointId: app.id, eventId, eventType: EVENT_TYPE, payload: JSON.stringify(body) },
        now,
      );
    }
  }
  return true;
}

/** The inbound step: a text that reads as LOGIN verifies its session with the message. */
async function onInbound(server: FastifyInstance, trx: Transaction<Database>, message: StoredInbound): Promise<void> {
  if (message.type !== 'text' || message.text === undefined) return;
  const code = loginCodeOf(message.text);
  if (code)
    await verifySession(server, trx, {
      phoneNumberId: message.phoneNumberId,
      code,
      messageId: message.messageId,
      contactId: message.contactId,
      from: message.from,
    });
}

/** The outbox endpoint kind `login_app`: the app's current destination, signed per attempt. */
function registerOutbox(platform: Platform): void {
  platform.outbox.register(OUTBOX_KIND, async (appId, workspaceId) => {
    const app = await platform.store.db
      .selectFrom('login_apps')
      .select([
        'id',
        'webhook_destination',
        'production_webhook_url',
        'staging_webhook_url',
        'webhook_secret_enc',
        'previous_webhook_secret_enc',
        'previous_webhook_secret_until',
      ])
      .where('id', '=', appId)
      .where('workspace_id', '=', workspaceId)
      .executeTakeFirst();
    const url = app && webhookUrl(platform, app);
    if (!app || !url) return null; // deleted, or webhooks switched off: pending rows are cancelled
    return {
      url,
      headers: (payload, now) => ({
        'x-login-signature': loginSignatureHeader(loginWebhookSecrets(platform, app, now), payload),
        'x-login-event-id': String((JSON.parse(payload) as { id: string }).id),
      }),
    };
  });
}

/** Starts the Login background work of this instance; everything stops when the app closes. */
export function startLogin(app: FastifyInstance): void {
  const { platform } = app;
  app.decorate('loginKeys', new LoginKeyVerifier(platform));
  app.decorate('loginSigningKeys', new SigningKeys(platform));
  app.decorate('loginServiceNumber', new ServiceNumber(platform));
  app.decorate('loginCodeMisses', new CodeMisses(platform.redis));
  registerOutbox(platform);
  startStreams(app);
  const log = (what: string) => (error: unknown) => app.log.error({ err: error }, what);
  // The signing keys are read (or made, once per database) outside any delivery's transaction: at
  // start, so that a LOGIN, right or wrong, writes nothing else; again before a delivery that
  // brings a LOGIN if that failed.
  app.addHook('onReady', async () => void (await app.loginSigningKeys.ring().catch(log('login signing keys not loaded'))));
  const unsubscribe = registerInboundStep(
    platform,
    'login',
    (trx, _platform, message) => onInbound(app, trx, message),
    (texts) => (texts.some((t) => loginCodeOf(t)) ? app.loginSigningKeys.ring() : undefined),
  );
  const expiry = new DueLoop({
    store: platform.store,
    channel: 'login_sessions_due',
    pass: async () => (await expireSessions(platform), nextExpiry(platform)),
    now: () => platform.now(),
    idleMs: platform.config.workers.idleMs ?? DEFAULT_IDLE_MS,
    log: log('login expiry sweep failed'),
  });
  app.decorate('loginExpiry', expiry);
  app.addHook('onReady', async () => expiry.start());
  // Before the platform closes the store.
  app.addHook('preClose', async () => expiry.stop());
  app.addHook('onClose', async () => unsubscribe());
}
