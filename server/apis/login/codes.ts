// Login codes, the second direction: `start` with `mode: "code"` sends a one-time code of 6 digits
// to the session's phone through the approved AUTHENTICATION template (copy-code button), and the
// client posts what the user typed to check. Only a keyed digest of the code is kept, bound to
// the session id, and compared in constant time. A session takes 5 wrong codes, then is locked;
// a resend replaces the code, waits out a cool-down and does not give attempts back.
import { randomInt } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { sql, type Transaction } from 'kysely';
import type { operations } from '#generated/login/types.js';
import type { Handler } from '#server/lib/handler-types.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import type { Database } from '#server/store/schema.js';
import { recordAndSend } from '#server/apis/messaging/outbound/record-and-send.js';
import { resolveSender } from '#server/apis/messaging/sender.js';
import { loginCaller } from './auth.js';
import type { LoginNumber } from './service-phone.js';
import { expiredNow, sessionExpired, STATUS_COLUMNS, statusAnswer } from './sessions.js';
import { markVerified } from './verification.js';

export const CODE_DIGITS = 6;
export const MAX_CODE_ATTEMPTS = 5;
export const RESEND_COOLDOWN_MS = 30_000;
/** Codes one session sends at most (the first and 4 resends). */
export const MAX_CODE_SENDS = 5;

/** 6 uniformly random digits (randomInt has no modulo bias). */
export function newOneTimeCode(): string {
  return String(randomInt(0, 10 ** CODE_DIGITS)).padStart(CODE_DIGITS, '0');
}

/** The keyed digest kept of a session's code; the session id in it makes a digest useless elsewhere. */
export function codeDigest(platform: Platform, sessionId: string, code: string): string {
  return platform.secrets.digest(`login-code\0${sessionId}\0${code}`);
}

/** The text the provider writes around the code (Meta's preset authentication body). */
export function codeText(code: string): string {
  return `${code} is your verification code. For your security, do not share this code.`;
}

/**
 * Sends `code` to `to` from the session's number, as the configured AUTHENTICATION template: the
 * code is the body's one parameter and the copy-code button's (a `url` button at index 0, as Meta
 * creates OTP buttons). Recorded as an outbound message of the number's workspace; a real
 * provider's copy keeps the code masked, the sandbox's keeps it whole so that the simulated phone
 * shows it. A refusal throws the provider's problem (422, 429, 502).
 */
export async function sendLoginCode(platform: Platform, number: LoginNumber, to: string, code: string): Promise<void> {
  const { loginCodeTemplate: name, loginCodeTemplateLanguage: language } = platform.config;
  const sender = await resolveSender(platform, number.workspace_id, number.id);
  const parameters = [{ type: 'text' as const, text: code }];
  const shown = number.provider_kind === 'sandbox' ? code : '•'.repeat(CODE_DIGITS);
  await recordAndSend(platform, {
    workspaceId: number.workspace_id,
    sender,
    to,
    parts: [
      {
        type: 'template',
        message: {
          type: 'template',
          template: {
            name,
            language: { code: language, policy: 'deterministic' },
            components: [
              { type: 'body', parameters },
              { type: 'button', sub_type: 'url', index: 0, parameters },
            ],
          },
        },
        content: { template: { name, language, template_id: null, category: 'AUTHENTICATION' }, text: codeText(shown) },
      },
    ],
    options: {},
  });
}

const unknownSession = (id: string) => new HttpProblem(404, 'not-found', `No login session ${id} for this Login app.`);
const locked = (id: string) => new HttpProblem(409, 'conflict', `Login session ${id} is locked after ${MAX_CODE_ATTEMPTS} wrong codes; start a new one.`);
const notCodeMode = (id: string) => new HttpProblem(409, 'conflict', `Login session ${id} was started in mode message; there is no code.`);
const verified = (id: string) => new HttpProblem(409, 'conflict', `Login session ${id} is already verified; fetch its token with status.`);

/** The session of the calling app, for update, with its app's webhook destination; 404 for an unknown one or another app's. */
async function lockedSession(trx: Transaction<Database>, appId: string, sessionId: string) {
  const session = await trx
    .selectFrom('login_sessions as s')
    .leftJoin('login_apps as a', 'a.id', 's.app_id')
    .select(STATUS_COLUMNS.map((c) => `s.${c}` as const))
    .select([
      's.app_id',
      's.workspace_id',
      's.phone_number_id',
      's.code_digest',
      's.code_sends',
      's.code_sent_at',
      'a.webhook_destination',
      'a.production_webhook_url',
      'a.staging_webhook_url',
    ])
    .where('s.id', '=', sessionId)
    .where('s.app_id', '=', appId)
    .forUpdate('s')
    .executeTakeFirst();
  if (!session) throw unknownSession(sessionId);
  return session;
}

type Outcome = { kind: 'verified' } | { kind: 'wrong'; left: number } | { kind: 'expired'; at: Date };

export const checkLoginCode: Handler<operations['checkLoginCode']> = async (request, reply) => {
  const answer = await checkCode(request.server, loginCaller(request).appId, request.params.sessionId, request.body.code);
  reply.header('cache-control', 'no-store');
  return answer;
};

/** Checks a typed code of `appId`'s session (the check operation and the OIDC sign-in page). */
export async function checkCode(server: FastifyInstance, appId: string, sessionId: string, code: string) {
  const { platform } = server;
  const outcome = await platform.store.db.transaction().execute(async (trx): Promise<Outcome> => {
    const session = await lockedSession(trx, appId, sessionId);
    const now = platform.now();
    if (session.status === 'expired' || (session.status === 'pending' && session.expires_at.getTime() <= now.getTime())) {
      return { kind: 'expired', at: session.expires_at };
    }
    if (session.status === 'success') throw verified(sessionId);
    if (session.mode !== 'code' || !session.code_digest || !session.bound_phone) throw notCodeMode(sessionId);
    if (session.code_attempts >= MAX_CODE_ATTEMPTS) throw locked(sessionId);
    if (platform.secrets.matches(`login-code\0${sessionId}\0${code}`, session.code_digest)) {
      const done = await markVerified(
        server,
        trx,
        { ...session, webhook_destination: session.webhook_destination ?? 'none' },
        { phone: session.bound_phone, profileName: null, messageId: null, now },
      );
      if (!done) throw verified(sessionId);
      return { kind: 'verified' };
    }
    const row = await trx
      .updateTable('login_sessions')
      .set({ code_attempts: sql`code_attempts + 1` })
      .where('id', '=', sessionId)
      .returning('code_attempts')
      .executeTakeFirstOrThrow();
    return { kind: 'wrong', left: Math.max(0, MAX_CODE_ATTEMPTS - row.code_attempts) };
  });
  if (outcome.kind === 'expired') {
    await expiredNow(platform, { id: sessionId, status: 'pending', expires_at: outcome.at });
    throw sessionExpired(sessionId, outcome.at);
  }
  if (outcome.kind === 'wrong') {
    const detail = outcome.left
      ? `The code is not the one sent; ${outcome.left} attempt${outcome.left === 1 ? '' : 's'} left.`
      : 'The code is not the one sent; no attempts left: the session is locked, start a new one.';
    throw new HttpProblem(422, 'unprocessable', detail, { errors: [{ pointer: '/body/code', detail: 'is not the code sent' }] });
  }
  const session = await platform.store.db.selectFrom('login_sessions').select(STATUS_COLUMNS).where('id', '=', sessionId).executeTakeFirstOrThrow();
  return statusAnswer(platform, session);
}

export const resendLoginCode: Handler<operations['resendLoginCode']> = async (request, reply) => {
  const answer = await resendCode(request.server, loginCaller(request).appId, request.params.sessionId);
  reply.code(202).header('cache-control', 'no-store');
  return answer;
};

/** Sends a new code for `appId`'s session (the resend operation and the OIDC sign-in page). */
export async function resendCode(server: FastifyInstance, appId: string, sessionId: string) {
  const { platform } = server;
  const code = newOneTimeCode();
  const claimed = await platform.store.db.transaction().execute(async (trx) => {
    const session = await lockedSession(trx, appId, sessionId);
    const now = platform.now();
    if (session.status === 'expired' || (session.status === 'pending' && session.expires_at.getTime() <= now.getTime())) {
      return { expired: true as const, at: session.expires_at };
    }
    if (session.status === 'success') throw verified(sessionId);
    if (session.mode !== 'code' || !session.bound_phone) throw notCodeMode(sessionId);
    if (session.code_attempts >= MAX_CODE_ATTEMPTS) throw locked(sessionId);
    if (session.code_sends >= MAX_CODE_SENDS)
      throw new HttpProblem(409, 'conflict', `Login session ${sessionId} has sent ${MAX_CODE_SENDS} codes; start a new one.`);
    const wait = (session.code_sent_at?.getTime() ?? 0) + RESEND_COOLDOWN_MS - now.getTime();
    if (wait > 0) {
      const seconds = Math.ceil(wait / 1000);
      throw new HttpProblem(
        429,
        'rate-limited',
        `A code was sent less than ${RESEND_COOLDOWN_MS / 1000} seconds ago; resend in ${seconds} s.`,
        {},
        { 'Retry-After': String(seconds) },
      );
    }
    await trx
      .updateTable('login_sessions')
      .set({ code_digest: codeDigest(platform, sessionId, code), code_sends: sql`code_sends + 1`, code_sent_at: now })
      .where('id', '=', sessionId)
      .execute();
    return { expired: false as const, session, now };
  });
  if (claimed.expired) {
    await expiredNow(platform, { id: sessionId, status: 'pending', expires_at: claimed.at });
    throw sessionExpired(sessionId, claimed.at);
  }
  const { session, now } = claimed;
  const number = await platform.store.db
    .selectFrom('phone_numbers as pn')
    .innerJoin('business_accounts as ba', 'ba.id', 'pn.business_account_id')
    .selectAll('pn')
    .select('ba.kind as provider_kind')
    .where('pn.id', '=', session.phone_number_id)
    .executeTakeFirst();
  if (!number) throw new HttpProblem(422, 'unprocessable', 'The number of this session is no longer connected; start a new session.');
  try {
    await sendLoginCode(platform, number as LoginNumber, session.bound_phone!, code);
  } catch (error) {
    // Not delivered: the cool-down does not hold the next try back (the new code stands).
    await platform.store.db.updateTable('login_sessions').set({ code_sent_at: session.code_sent_at }).where('id', '=', sessionId).execute();
    throw error;
  }
  return {
    sessionId,
    boundPhone: session.bound_phone!,
    resendAvailableAt: new Date(now.getTime() + RESEND_COOLDOWN_MS).toISOString(),
    expiresAt: session.expires_at.toISOString(),
  };
}
