// Sign-in throttling: after 10 failures within 15 minutes for one email or one IP, further
// attempts answer 429 until the oldest of those failures leaves the window. Counted in the
// database, so every instance sees the same counts. Emails are kept only as digests.
import type { Kysely } from 'kysely';
import type { SecretBox } from '#server/lib/secrets.js';
import type { Database } from '#server/store/schema.js';

export const MAX_FAILURES = 10;
export const WINDOW_MS = 15 * 60_000;

export interface ThrottleSubjects {
  email: string;
  ip: string;
}

export function throttleSubjects(secrets: SecretBox, email: string, ip: string): ThrottleSubjects {
  return { email: `email:${secrets.digest(`sign-in:${email}`)}`, ip: `ip:${ip}` };
}

/** Seconds until an attempt is allowed again, or 0 if it is allowed now. */
export async function retryAfterSeconds(db: Kysely<Database>, subjects: ThrottleSubjects, now: Date): Promise<number> {
  let until = 0;
  for (const subject of [subjects.email, subjects.ip]) {
    const rows = await db
      .selectFrom('sign_in_failures')
      .select('failed_at')
      .where('subject', '=', subject)
      .where('failed_at', '>', new Date(now.getTime() - WINDOW_MS))
      .orderBy('failed_at', 'desc')
      .limit(MAX_FAILURES)
      .execute();
    // Blocked while the MAX_FAILURES-th most recent failure is still inside the window.
    if (rows.length >= MAX_FAILURES) until = Math.max(until, rows[MAX_FAILURES - 1]!.failed_at.getTime() + WINDOW_MS);
  }
  return until > now.getTime() ? Math.ceil((until - now.getTime()) / 1000) : 0;
}

export async function recordFailure(db: Kysely<Database>, subjects: ThrottleSubjects, now: Date): Promise<void> {
  await db
    .insertInto('sign_in_failures')
    .values([
      { subject: subjects.email, failed_at: now },
      { subject: subjects.ip, failed_at: now },
    ])
    .execute();
  await db
    .deleteFrom('sign_in_failures')
    .where('failed_at', '<=', new Date(now.getTime() - WINDOW_MS))
    .execute();
}

/** A successful sign-in clears the account's count (not the IP's: one known password must not reset it). */
export async function clearAccountFailures(db: Kysely<Database>, subjects: ThrottleSubjects): Promise<void> {
  await db.deleteFrom('sign_in_failures').where('subject', '=', subjects.email).execute();
}
