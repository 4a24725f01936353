// The demo workspace: on first start with an empty store (and DEMO not off), a workspace, its
// owner, a Messaging API key and a sandbox number, so the product works at once on a laptop.
// The credentials are printed once; only their hashes are kept.
import { hashPassword } from './lib/secrets.js';
import { base62, newId } from './lib/ids.js';
import { newApiKeySecret } from './auth/api-keys.js';
import { createSandboxAccount } from './providers/sandbox.js';
import type { Platform } from './platform.js';

export interface DemoCredentials {
  workspaceId: string;
  email: string;
  password: string;
  apiKey: string;
  sandboxNumber: string;
}

export async function seedDemoWorkspace(platform: Platform): Promise<DemoCredentials | null> {
  const { db } = platform.store;
  const any = await db.selectFrom('workspaces').select('id').limit(1).executeTakeFirst();
  if (any) return null;
  const now = platform.now();
  const password = base62(20);
  const email = 'owner@demo.example';
  const workspace = { id: newId('ws'), name: 'Demo workspace', slug: 'demo', created_at: now };
  const key = newApiKeySecret(platform.secrets);
  const passwordHash = await hashPassword(password);
  await db.transaction().execute(async (tx) => {
    await tx.insertInto('workspaces').values(workspace).execute();
    await tx
      .insertInto('owners')
      .values({ id: newId('usr'), workspace_id: workspace.id, email, name: 'Demo owner', password_hash: passwordHash, created_at: now })
      .execute();
    await tx
      .insertInto('api_keys')
      .values({ id: newId('key'), workspace_id: workspace.id, name: 'Demo key', kind: 'messaging', scopes: ['messaging:read', 'messaging:write'], prefix: key.prefix, digest: key.digest, created_at: now })
      .execute();
  });
  const { numbers } = await createSandboxAccount(db, workspace.id, { name: 'Demo sandbox' });
  return { workspaceId: workspace.id, email, password, apiKey: key.secret, sandboxNumber: numbers[0]?.display_phone_number ?? '' };
}

export function describeDemo(demo: DemoCredentials, url: string): string {
  return `
Demo workspace created (shown once; only hashes are stored):
  sign in      ${url}/account/sign-in   ${demo.email} / ${demo.password}
  API key      ${demo.apiKey}
  sandbox no.  ${demo.sandboxNumber}
  try          curl -X POST ${url}/api/account/sessions -H 'content-type: application/json' \\
                 -d '{"email":"${demo.email}","password":"${demo.password}"}'
`;
}
