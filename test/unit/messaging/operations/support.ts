// Shared steps of the operations tests: a workspace with both a Messaging key and a Login app
// (usage counts messages, contacts and Login sessions of one workspace), and members inserted
// directly (the account API has no member invitation yet).
import type { FastifyInstance } from 'fastify';
import { newApiKeySecret } from '#server/auth/api-keys.js';
import { newId } from '#server/lib/ids.js';
import { insertLoginApp } from '#test/support/login-app.js';
import type { Tenant } from '../inbox/support.js';

export const PROBLEMS = 'https://chatapp.example/problems/';

export interface LoginTenant extends Tenant {
  /** The Login app's key (`lk_live_…`), for starting Login sessions. */
  loginKey: string;
}

/** A workspace with a Login app on its sandbox number and a Messaging key. */
export async function loginTenant(app: FastifyInstance, cap?: number): Promise<LoginTenant> {
  const login = await insertLoginApp(app, { cap });
  const db = app.platform.store.db;
  const ownerId = newId('usr');
  await db
    .insertInto('owners')
    .values({
      id: ownerId,
      workspace_id: login.workspaceId,
      email: `${ownerId.toLowerCase()}@example.test`,
      name: 'Owner',
      password_hash: 'x',
      created_at: new Date(),
    })
    .execute();
  const { secret, prefix, digest } = newApiKeySecret(app.platform.secrets);
  await db
    .insertInto('api_keys')
    .values({
      id: newId('key'),
      workspace_id: login.workspaceId,
      name: 'messaging',
      kind: 'messaging',
      scopes: ['messaging:read', 'messaging:write'],
      prefix,
      digest,
      created_at: new Date(),
    })
    .execute();
  const pn = login.numbers[0]!;
  return {
    workspaceId: login.workspaceId,
    ownerId,
    key: secret,
    headers: { 'x-api-key': secret },
    number: pn.display_phone_number,
    pnId: pn.id,
    providerPnId: pn.provider_phone_number_id,
    wabaId: pn.business_account_id,
    loginKey: login.apiKey,
  };
}

/** A member of the workspace with `role`, as the account API would store one. */
export async function member(app: FastifyInstance, workspaceId: string, name: string, role: string, available = true) {
  const id = newId('usr');
  await app.platform.store.db
    .insertInto('owners')
    .values({ id, workspace_id: workspaceId, email: `${id.toLowerCase()}@example.test`, name, password_hash: 'x', role, available, created_at: new Date() })
    .execute();
  return id;
}
