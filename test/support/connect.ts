// Connect bearer tokens for tests of Connect operations, made directly in the store: a client
// registered in the workspace, an active grant with `scopes`, and an access token (1 hour).
import type { FastifyInstance } from 'fastify';
import { newId } from '#server/lib/ids.js';
import { upsertGrant } from '#server/apis/connect/oauth/grants.js';
import { SCOPES, issueTokens } from '#server/apis/connect/oauth/tokens.js';

/** The `Authorization: Bearer` value of a fresh access token of `workspaceId` (all four scopes by default). */
export async function connectBearer(app: FastifyInstance, workspaceId: string, scopes: string[] = [...SCOPES]): Promise<string> {
  const { db } = app.platform.store;
  const now = app.platform.now();
  const client = { id: newId('cli'), workspace_id: workspaceId };
  const grant = { id: newId('grt'), workspace_id: workspaceId, client_id: client.id };
  await db
    .insertInto('connect_clients')
    .values({
      ...client,
      name: 'Test CRM',
      client_type: 'confidential',
      redirect_uris: ['https://crm.test/cb'],
      secret_prefix: null,
      secret_digest: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  await db
    .insertInto('connect_grants')
    .values({ ...grant, owner_id: null, scopes, created_at: now, updated_at: now })
    .execute();
  const tokens = await issueTokens(db, app.platform.secrets, now, grant, newId('fam'), scopes);
  return tokens.access_token;
}

export interface TestClient {
  id: string;
  secret: string;
  /** The `Authorization: Basic` value of the client's credentials. */
  basic: string;
}

/** A confidential Connect client registered by `workspaceId`, with a known secret. */
export async function connectClient(app: FastifyInstance, workspaceId: string): Promise<TestClient> {
  const now = app.platform.now();
  const id = newId('cli');
  const secret = `cs_${newId('x').slice(2)}${newId('y').slice(2)}`;
  await app.platform.store.db
    .insertInto('connect_clients')
    .values({
      id,
      workspace_id: workspaceId,
      name: 'Test CRM',
      client_type: 'confidential',
      redirect_uris: ['https://crm.test/cb'],
      secret_prefix: secret.slice(0, 8),
      secret_digest: app.platform.secrets.digest(secret),
      created_at: now,
      updated_at: now,
    })
    .execute();
  return { id, secret, basic: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}` };
}

/**
 * `workspaceId`'s consent to `clientId` (upsertGrant, as the consent page does: `grant.created`
 * on a new grant) and a token pair of a new family under it.
 */
export async function grantClient(app: FastifyInstance, clientId: string, workspaceId: string, scopes: string[] = [...SCOPES]) {
  const grant = await upsertGrant(app.platform, { workspaceId, clientId, ownerId: await ownerOf(app, workspaceId), scopes });
  const tokens = await issueTokens(app.platform.store.db, app.platform.secrets, app.platform.now(), grant, newId('fam'), scopes);
  return { grantId: grant.id, ...tokens };
}

async function ownerOf(app: FastifyInstance, workspaceId: string): Promise<string> {
  const row = await app.platform.store.db.selectFrom('owners').select('id').where('workspace_id', '=', workspaceId).executeTakeFirst();
  return row!.id;
}
