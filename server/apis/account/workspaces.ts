// Sign-up (a workspace with its owner, in one transaction) and the signed-in owner's profile.
import type { components, operations } from '#generated/account/types.js';
import { authOf, unauthorized } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import { hashPassword } from '#server/lib/secrets.js';
import { prepared } from '#server/store/prepared.js';
import { checkSignupAllowed, claimInvite } from './invites.js';
import { newOwnerSession, normalizeEmail } from './sessions.js';

type Owner = components['schemas']['Owner'];
type Workspace = components['schemas']['Workspace'];

export function ownerView(row: { id: string; email: string; name: string; created_at: Date }): Owner {
  return { id: row.id, email: row.email, name: row.name, created_at: row.created_at.toISOString() };
}

export function workspaceView(row: { id: string; name: string; slug: string; created_at: Date }): Workspace {
  return { id: row.id, name: row.name, slug: row.slug, created_at: row.created_at.toISOString() };
}

// One detail for both: which of the two is taken is not worth telling a stranger.
const taken = () => new HttpProblem(409, 'conflict', 'That email or workspace slug is already in use.');

/** PostgreSQL's unique_violation, from pg and PGlite alike. */
function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: string }).code === '23505';
}

export const createWorkspace: Handler<operations['createWorkspace']> = async (request, reply) => {
  const platform = request.server.platform;
  const { db } = platform.store;
  const body = request.body;
  checkSignupAllowed(request.server.config.signup, body.invite_code);
  const email = normalizeEmail(body.email);
  // Checked before the slow hash so a taken email or slug costs no scrypt; the unique indexes
  // below still decide when two sign-ups race.
  const existing = await db
    .selectFrom('owners')
    .select('id')
    .where('email', '=', email)
    .unionAll(db.selectFrom('workspaces').select('id').where('slug', '=', body.workspace_slug))
    .executeTakeFirst();
  // The platform's own service workspace holds this slug; reserved before it is ever created.
  if (existing || body.workspace_slug === 'platform-service') throw taken();
  const passwordHash = await hashPassword(body.password, platform.passwordCost);
  const now = platform.now();
  const workspace = { id: newId('ws'), name: body.workspace_name, slug: body.workspace_slug, created_at: now };
  const owner = { id: newId('usr'), workspace_id: workspace.id, email, name: body.name, password_hash: passwordHash, created_at: now };
  try {
    await db.transaction().execute(async (tx) => {
      await tx.insertInto('workspaces').values(workspace).execute();
      await tx.insertInto('owners').values(owner).execute();
      if (request.server.config.signup === 'invite') await claimInvite(tx, platform, body.invite_code!, email, workspace.id);
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw taken();
    throw error;
  }
  reply.code(201).header('cache-control', 'no-store'); // a session token: never cached (bad-inputs L8)
  return { workspace: workspaceView(workspace), owner: ownerView(owner), session: await newOwnerSession(platform, owner) };
};

// Every owner request of the console starts here: built once (#server/store/prepared.ts).
const ownerById = prepared((db, v: { ownerId: string; workspaceId: string }) =>
  db.selectFrom('owners').selectAll().where('id', '=', v.ownerId).where('workspace_id', '=', v.workspaceId),
);
const workspaceById = prepared((db, v: { workspaceId: string }) => db.selectFrom('workspaces').selectAll().where('id', '=', v.workspaceId));

export const getAccount: Handler<operations['getAccount']> = async (request) => {
  const auth = authOf(request);
  const { db } = request.server.platform.store;
  const owner = await ownerById.executeTakeFirst(db, { ownerId: auth.ownerId ?? '', workspaceId: auth.workspaceId });
  const workspace = await workspaceById.executeTakeFirst(db, { workspaceId: auth.workspaceId });
  if (!owner || !workspace) throw unauthorized(['Bearer realm="account"']);
  return { owner: ownerView(owner), workspace: workspaceView(workspace) };
};
