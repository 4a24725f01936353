// Owner sign-in, shared by the API (createSession) and the browser's sign-in page.
// A wrong password and an unknown email take the same path: one scrypt verification (against
// a dummy hash of the same cost when there is no owner), one recorded failure, one identical 401.
import type { components, operations } from '#generated/account/types.js';
import { issueOwnerToken } from '#server/auth/owner-jwt.js';
import type { Handler } from '#server/lib/handler-types.js';
import { HttpProblem } from '#server/lib/problems.js';
import { dummyPasswordHash, verifyPassword } from '#server/lib/secrets.js';
import type { Platform } from '#server/platform.js';
import type { OwnersTable } from '#server/store/schema.js';
import type { Selectable } from 'kysely';
import { clearAccountFailures, recordFailure, retryAfterSeconds, throttleSubjects } from './sign-in-throttle.js';

type OwnerSession = components['schemas']['OwnerSession'];
export type OwnerRow = Selectable<OwnersTable>;

/** Emails are compared case-insensitively: stored and looked up lowercased. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export function rateLimited(seconds: number): HttpProblem {
  return new HttpProblem(429, 'rate-limited', 'Too many failed sign-ins; try again later.', {}, { 'retry-after': String(seconds) });
}

function signInFailed(): HttpProblem {
  return new HttpProblem(401, 'unauthorized', 'The email or password is incorrect.', {}, { 'www-authenticate': 'Bearer realm="account"' });
}

/** The owner these credentials belong to; 401 for a wrong password or unknown email, 429 when throttled. */
export async function authenticateOwner(platform: Platform, emailInput: string, password: string, ip: string): Promise<OwnerRow> {
  const { db } = platform.store;
  const email = normalizeEmail(emailInput);
  const subjects = throttleSubjects(platform.secrets, email, ip);
  const wait = await retryAfterSeconds(db, subjects, platform.now());
  if (wait > 0) throw rateLimited(wait);
  const owner = await db.selectFrom('owners').selectAll().where('email', '=', email).executeTakeFirst();
  const valid = await verifyPassword(password, owner?.password_hash ?? dummyPasswordHash(platform.passwordCost));
  if (!owner || !valid) {
    await recordFailure(db, subjects, platform.now());
    throw signInFailed();
  }
  await clearAccountFailures(db, subjects);
  return owner;
}

export async function newOwnerSession(platform: Platform, owner: { id: string; workspace_id: string }): Promise<OwnerSession> {
  const issued = await issueOwnerToken(platform, { ownerId: owner.id, workspaceId: owner.workspace_id });
  return { access_token: issued.token, token_type: 'Bearer', expires_in: issued.expiresIn, expires_at: issued.expiresAt.toISOString() };
}

export const createSession: Handler<operations['createSession']> = async (request, reply) => {
  const platform = request.server.platform;
  const owner = await authenticateOwner(platform, request.body.email, request.body.password, request.ip);
  reply.code(201).header('cache-control', 'no-store'); // a session token: never cached (bad-inputs L8)
  return newOwnerSession(platform, owner);
};
