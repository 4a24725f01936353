// An owner's browser session: a signed, httpOnly cookie holding a short-lived owner JWT (audience
// `owner-browser`), set by the sign-in page (server/apis/account/sign-in-page.ts) and by the
// Connect sign-up step, and read by every page that needs to know the owner.
import type { FastifyRequest } from 'fastify';
import type {} from '@fastify/cookie';
import { verifyOwnerToken } from './owner-jwt.js';

/** Where a browser gets a session (`?next=` a same-origin path to come back to) and drops it. */
export const SIGN_IN_PATH = '/account/sign-in';
export const SIGN_OUT_PATH = '/account/sign-out';

/** `__Host-` in production: the browser then insists on Secure, path=/ and no Domain. */
export const sessionCookieName = (production: boolean) => (production ? '__Host-owner_session' : 'owner_session');

export interface SignedInOwner {
  ownerId: string;
  workspaceId: string;
  email: string;
  name: string;
}

/** The owner the request's session cookie proves, or null (no cookie, bad signature, expired, owner gone). */
export async function currentOwner(request: FastifyRequest): Promise<SignedInOwner | null> {
  const platform = request.server.platform;
  const cookie = request.cookies?.[sessionCookieName(platform.config.production)];
  if (!cookie) return null;
  const unsigned = request.unsignCookie(cookie);
  if (!unsigned.valid || !unsigned.value) return null;
  const claims = await verifyOwnerToken(platform, unsigned.value, 'owner-browser');
  if (!claims) return null;
  const owner = await platform.store.db
    .selectFrom('owners')
    .select(['id', 'workspace_id', 'email', 'name'])
    .where('id', '=', claims.ownerId)
    .where('workspace_id', '=', claims.workspaceId)
    .executeTakeFirst();
  return owner ? { ownerId: owner.id, workspaceId: owner.workspace_id, email: owner.email, name: owner.name } : null;
}
