// Sign-up by invite (SIGNUP=invite): the operator issues a code (`npm run invite`), shown once and
// kept as a keyed digest; a sign-up that sends it claims it in the transaction that creates the
// workspace, so a code makes one workspace even when two sign-ups race, and a sign-up that fails
// (a taken email) leaves it unused.
import type { Kysely, Transaction } from 'kysely';
import { HttpProblem } from '#server/lib/problems.js';
import { base62, newId } from '#server/lib/ids.js';
import type { Platform } from '#server/platform.js';
import type { Database } from '#server/store/schema.js';
import type { SignupMode } from '#server/config.js';

export const INVITE_DAYS = 7;

export interface IssuedInvite {
  id: string;
  code: string;
  email: string | null;
  expiresAt: Date;
}

export async function issueInvite(platform: Platform, options: { email?: string; days?: number } = {}): Promise<IssuedInvite> {
  const code = `inv_${base62(24)}`;
  const now = platform.now();
  const invite = {
    id: newId('inv'),
    email: options.email?.trim().toLowerCase() || null,
    expiresAt: new Date(now.getTime() + (options.days ?? INVITE_DAYS) * 86_400_000),
  };
  await platform.store.db
    .insertInto('signup_invites')
    .values({ id: invite.id, code_digest: platform.secrets.digest(code), email: invite.email, created_at: now, expires_at: invite.expiresAt })
    .execute();
  return { ...invite, code };
}

/** 403 before any work when this server's SIGNUP setting refuses the sign-up outright. */
export function checkSignupAllowed(mode: SignupMode, inviteCode: string | undefined): void {
  if (mode === 'closed') throw new HttpProblem(403, 'signup-closed', 'This server takes no sign-ups. Ask its operator for an account.');
  if (mode === 'invite' && !inviteCode)
    throw new HttpProblem(403, 'invite-required', 'Sign-up on this server needs an invite code (invite_code) from its operator.');
}

/** Marks the invite used by `workspaceId`, or throws 403 `invite-required` when it cannot be. */
export async function claimInvite(
  tx: Transaction<Database> | Kysely<Database>,
  platform: Platform,
  code: string,
  email: string,
  workspaceId: string,
): Promise<void> {
  const now = platform.now();
  const claimed = await tx
    .updateTable('signup_invites')
    .set({ used_at: now, used_by_workspace_id: workspaceId })
    .where('code_digest', '=', platform.secrets.digest(code))
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .where((eb) => eb.or([eb('email', 'is', null), eb('email', '=', email)]))
    .executeTakeFirst();
  if (Number(claimed.numUpdatedRows) !== 1)
    throw new HttpProblem(403, 'invite-required', 'This invite code is not valid: it is unknown, used, expired or for another email.');
}
