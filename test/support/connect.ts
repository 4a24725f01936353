// Connect bearer tokens for tests of Connect operations, made directly in the store: a client
// registered in the workspace, an active grant with `scopes`, and an access token (1 hour).
import type { FastifyInstance } from 'fastify';
import { newId } from '#server/lib/ids.js';
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
