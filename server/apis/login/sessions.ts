// Login sessions: start (code, deep link, QR, subscribe token), status, and the one transition
// besides verification, pending → expired. A session only ever leaves `pending`, once, by a
// conditional UPDATE (`where status = 'pending'`), so whichever of message, sweep or status gets
// there first wins and the others change nothing.
//
// Time is `platform.now()` everywhere (start, expiry, verification, tokens), never the database
// clock, so tests move it with `build({ overrides: { now } })`; instances must keep their clocks
// in sync (NTP), as a skew shifts expiry by that much.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import QRCode from 'qrcode';
import { sql, type Kysely, type Selectable, type SqlBool, type Transaction } from 'kysely';
import type { components, operations } from '#generated/login/types.js';
import type { Handler } from '#server/lib/handler-types.js';
import { base62, newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import { yieldToRequests } from '#server/lib/wake-up.js';
import type { Platform } from '#server/platform.js';
import type { Database } from '#server/store/schema.js';
import { requireE164 } from '#server/lib/phone.js';
import { loginCaller } from './auth.js';
import { codeDigest, MAX_CODE_ATTEMPTS, newOneTimeCode, RESEND_COOLDOWN_MS, sendLoginCode } from './codes.js';
import { resolveLoginNumber } from './service-phone.js';

/** Crockford base32: no I, L, O, U, so codes survive being read aloud or retyped. */
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const CODE_LENGTH = 8; // 40 bits: guessing one of a number's pending codes in 10 minutes is hopeless
/** The deep link and its pre-filled message; the message is what verification.ts parses. */
const WA_LINK = 'https://wa.me/{number}?text={message}';
const LOGIN_MESSAGE = 'LOGIN {code}';
/** A clash with a pending code of the same number is ~n/2^40; a few retries are plenty. */
const CODE_ATTEMPTS = 5;
/** Sessions expired per statement; the sweep repeats until none are left. */
const EXPIRE_BATCH = 200;
export const SESSION_EVENT = 'login.session';

export type SessionEventName = 'verified' | 'expired';

/** A random code; 256 is a multiple of 32, so `byte & 31` has no bias. */
export function newLoginCode(): string {
  return [...randomBytes(CODE_LENGTH)].map((b) => CROCKFORD[b & 31]).join('');
}

/** A typed code in canonical form (case-insensitive; O→0, I/L→1 as Crockford decodes), or null. */
export function canonicalCode(input: string): string | null {
  const code = input.toUpperCase().replace(/O/g, '0').replace(/[IL]/g, '1');
  return code.length === CODE_LENGTH && [...code].every((c) => CROCKFORD.includes(c)) ? code : null;
}

export function waLink(displayPhoneNumber: string, code: string): string {
  return WA_LINK.replace('{number}', displayPhoneNumber.replace(/\D/g, '')).replace('{message}', encodeURIComponent(LOGIN_MESSAGE.replace('{code}', code)));
}

/** Records a final event and announces it to every instance's streams, at the commit of `trx`. */
export async function recordSessionEvent(
  platform: Platform,
  trx: Transaction<Database>,
  session: { id: string; workspace_id: string },
  event: SessionEventName,
): Promise<string> {
  const row = await trx.insertInto('login_session_events').values({ session_id: session.id, event }).returning('id').executeTakeFirstOrThrow();
  const eventId = String(row.id);
  await platform.bus.publish({ type: SESSION_EVENT, workspaceId: session.workspace_id, data: { sessionId: session.id, event, eventId } }, trx);
  return eventId;
}

/**
 * Marks due pending sessions expired, with their `expired` events, in one transaction per batch.
 * Rows are claimed with FOR UPDATE SKIP LOCKED, so sweeps on several instances (and a status call
 * expiring one session lazily) never expire a session twice. Returns how many it expired.
 */
export async function expireSessions(platform: Platform, onlyId?: string): Promise<number> {
  const db = platform.store.db;
  let total = 0;
  for (;;) {
    const now = platform.now();
    const expired = await db.transaction().execute(async (trx) => {
      const rows = await trx
        .updateTable('login_sessions')
        .set({ status: 'expired' })
        .where('status', '=', 'pending')
        .where('id', 'in', (eb) => {
          let due = eb.selectFrom('login_sessions').select('id').where('status', '=', 'pending').where('expires_at', '<=', now);
          if (onlyId) due = due.where('id', '=', onlyId);
          return due.orderBy('expires_at').limit(EXPIRE_BATCH).forUpdate().skipLocked();
        })
        .returning(['id', 'workspace_id'])
        .execute();
      for (const row of rows) await recordSessionEvent(platform, trx, row, 'expired');
      return rows.length;
    });
    total += expired;
    if (expired < EXPIRE_BATCH) return total;
    await yieldToRequests();
  }
}

/** When the earliest pending session expires (null: none is pending): the expiry sweep sleeps until then. */
export async function nextExpiry(platform: Platform): Promise<Date | null> {
  const row = await platform.store.db
    .selectFrom('login_sessions')
    .select((eb) => eb.fn.min('expires_at').as('due'))
    .where(sql<SqlBool>`status = 'pending'`)
    .executeTakeFirst();
  return row?.due ? new Date(row.due) : null;
}

function monthStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
}

/** The plan's monthly cap; the workspace row lock makes concurrent starts count one at a time. */
async function checkSessionCap(platform: Platform, trx: Transaction<Database>, workspaceId: string, now: Date): Promise<void> {
  const ws = await trx.selectFrom('workspaces').select(['plan', 'login_session_cap']).where('id', '=', workspaceId).forUpdate().executeTakeFirstOrThrow();
  const { n } = await trx
    .selectFrom('login_sessions')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('workspace_id', '=', workspaceId)
    .where('created_at', '>=', monthStart(now))
    .executeTakeFirstOrThrow();
  if (Number(n) < ws.login_session_cap) return;
  const cap = ws.login_session_cap.toLocaleString('en-US');
  throw new HttpProblem(402, 'plan-limit', `The ${ws.plan} plan allows ${cap} login sessions a month and all are used; upgrade to start more.`, {
    upgrade_url: `${platform.config.publicUrl}/account/usage?upgrade=login-sessions`,
  });
}

type NewSession = {
  id: string;
  app_id: string;
  workspace_id: string;
  phone_number_id: string;
  subscribe_token_digest: string;
  expires_at: Date;
  created_at: Date;
  mode: 'message' | 'code';
  bound_phone: string | null;
  code_digest: string | null;
  code_sends: number;
  code_sent_at: Date | null;
};

/** The phone binding and mode of a start body: 400 naming `/body/phone` when malformed or missing for `code`. */
function bindingOf(body: { phone?: string; mode?: 'message' | 'code' }): { mode: 'message' | 'code'; phone: string | null } {
  const mode = body.mode ?? 'message';
  const phone = body.phone === undefined ? null : requireE164(body.phone, '/body/phone');
  if (mode === 'code' && !phone) {
    throw new HttpProblem(400, 'validation', "mode code sends the code to the user's phone; send phone.", {
      errors: [{ pointer: '/body/phone', detail: 'is required with mode code' }],
    });
  }
  return { mode, phone };
}

/** Inserts the session with a code no pending session of the number holds (partial unique index). */
async function insertSession(trx: Kysely<Database>, values: NewSession): Promise<string> {
  for (let attempt = 0; attempt < CODE_ATTEMPTS; attempt++) {
    const code = newLoginCode();
    const row = await trx
      .insertInto('login_sessions')
      .values({ ...values, login_code: code })
      .onConflict((oc) => oc.columns(['phone_number_id', 'login_code']).where(sql<SqlBool>`status = 'pending'`).doNothing())
      .returning('login_code')
      .executeTakeFirst();
    if (row) return row.login_code;
  }
  throw new Error('no free login code after several attempts');
}

export const startLoginSession: Handler<operations['startLoginSession']> = async (request, reply) => {
  const { appId, workspaceId } = loginCaller(request);
  const db = request.server.platform.store.db;
  const app = await db.selectFrom('login_apps').selectAll().where('id', '=', appId).where('workspace_id', '=', workspaceId).executeTakeFirst();
  if (!app) throw new HttpProblem(404, 'not-found', `No Login app ${appId}.`); // deleted since its key was checked
  const started = await createLoginSession(request.server, app, request.body ?? {});
  reply.code(201).header('location', `/v1/auth/chatapp/status/${started.sessionId}`).header('cache-control', 'no-store');
  return started;
};

type StartBody = NonNullable<operations['startLoginSession']['requestBody']>['content']['application/json'];
type Started = components['schemas']['LoginSessionStarted'];

/**
 * Starts a session of `app` as the start operation does (validation, number, plan cap, code
 * send): its handler, and the viewer of phone-verified share links (Connect), call it.
 */
export async function createLoginSession(server: FastifyInstance, app: Selectable<Database['login_apps']>, body: StartBody): Promise<Started> {
  const { platform } = server;
  const db = platform.store.db;
  const { mode, phone } = bindingOf(body);
  const { id: appId, workspace_id: workspaceId } = app;
  const number = await resolveLoginNumber(server, app, body);
  const now = platform.now();
  const id = newId('ls');
  const subscribeToken = `st_${base62(40)}`;
  const expiresAt = new Date(now.getTime() + platform.config.loginSessionTtlSeconds * 1000);
  const code = mode === 'code' ? newOneTimeCode() : null;
  const loginCode = await db.transaction().execute(async (trx) => {
    await checkSessionCap(platform, trx, workspaceId, now);
    return insertSession(trx, {
      id,
      app_id: appId,
      workspace_id: workspaceId,
      phone_number_id: number.id,
      subscribe_token_digest: platform.secrets.digest(subscribeToken), // only the digest is kept
      expires_at: expiresAt,
      created_at: now,
      mode,
      bound_phone: phone,
      code_digest: code ? codeDigest(platform, id, code) : null, // only the digest is kept
      code_sends: code ? 1 : 0,
      code_sent_at: code ? now : null,
    });
  });
  if (code && phone) {
    try {
      await sendLoginCode(platform, number, phone, code);
    } catch (error) {
      // The user never got a code: no session is left behind (nor counted against the cap).
      await db.deleteFrom('login_sessions').where('id', '=', id).execute();
      throw error;
    }
  }
  server.loginExpiry.announce(expiresAt); // the sweep may sleep past it (nothing else pending)
  const displayPhoneNumber = `+${number.display_phone_number.replace(/\D/g, '')}`;
  const link = waLink(displayPhoneNumber, loginCode);
  return {
    sessionId: id,
    status: 'pending' as const,
    loginCode,
    waLink: link,
    subscribeToken,
    displayPhoneNumber,
    authAppName: app.name,
    expiresAt: expiresAt.toISOString(),
    qrCodeSvg: await QRCode.toString(link, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 }),
    mode,
    ...(phone ? { boundPhone: phone } : {}),
    ...(code ? { resendAvailableAt: new Date(now.getTime() + RESEND_COOLDOWN_MS).toISOString() } : {}),
  };
}

/** The columns a status answer is made of. */
export const STATUS_COLUMNS = [
  'id',
  'status',
  'expires_at',
  'verified_at',
  'verification_token_enc',
  'token_expires_at',
  'mode',
  'bound_phone',
  'ignored_logins',
  'code_attempts',
] as const;

type StatusRow = Pick<Selectable<Database['login_sessions']>, (typeof STATUS_COLUMNS)[number]>;
type StatusAnswer = components['schemas']['LoginSessionStatus'];

/** The status answer of a session that is not expired: `pending`, or `success` with its token. */
export function statusAnswer(platform: Platform, session: StatusRow): StatusAnswer {
  const common = {
    sessionId: session.id,
    expiresAt: session.expires_at.toISOString(),
    mode: session.mode,
    ...(session.bound_phone ? { boundPhone: session.bound_phone } : {}),
    ignoredLogins: session.ignored_logins,
    ...(session.mode === 'code' ? { codeAttemptsLeft: Math.max(0, MAX_CODE_ATTEMPTS - session.code_attempts) } : {}),
  };
  if (session.status !== 'success' || !session.verification_token_enc) return { ...common, status: 'pending' };
  return {
    ...common,
    status: 'success',
    verifiedAt: session.verified_at!.toISOString(),
    verificationToken: platform.secrets.decrypt(session.verification_token_enc),
    verificationTokenExpiresAt: session.token_expires_at!.toISOString(),
  };
}

/** A pending session past its expiry is expired now (emitting `expired`); true when the session is expired. */
export async function expiredNow(platform: Platform, session: { id: string; status: string; expires_at: Date }): Promise<boolean> {
  if (session.status === 'expired') return true;
  if (session.status !== 'pending' || session.expires_at.getTime() > platform.now().getTime()) return false;
  await expireSessions(platform, session.id);
  return true;
}

export const sessionExpired = (id: string, at: Date) => new HttpProblem(410, 'expired', `Login session ${id} expired at ${at.toISOString()}; start a new one.`);

export const getLoginSessionStatus: Handler<operations['getLoginSessionStatus']> = async (request, reply) => {
  const { platform } = request.server;
  const { appId } = loginCaller(request);
  const { sessionId } = request.params;
  const read = () =>
    platform.store.db
      .selectFrom('login_sessions')
      .select(STATUS_COLUMNS)
      .where('id', '=', sessionId)
      .where('app_id', '=', appId) // another app's session is unknown here (bad-inputs D16)
      .executeTakeFirst();
  let session = await read();
  if (!session) throw new HttpProblem(404, 'not-found', `No login session ${sessionId} for this Login app.`);
  const due = (s: { status: string; expires_at: Date }) => s.status === 'pending' && s.expires_at.getTime() <= platform.now().getTime();
  if (due(session)) {
    // Lazily: expire it now (emitting `expired`) rather than wait for the sweep; a verification
    // that committed meanwhile wins, so read again.
    await expireSessions(platform, sessionId);
    session = (await read())!;
  }
  if (session.status === 'expired' || due(session)) throw sessionExpired(sessionId, session.expires_at);
  reply.header('cache-control', 'no-store');
  return statusAnswer(platform, session);
};
