// API keys replaced by a rotation, or gone with their Login app, stay known by their keyed digest
// (table retired_credentials): a verifier that does not find a key among the live ones asks here,
// so the old value's 401s count against it and its workspace rather than the caller's IP
// (./auth-failures.ts, bad-inputs K10). Only asked on the authenticators' failure path.
import type { Kysely, Transaction } from 'kysely';
import type { SecretBox } from '../lib/secrets.js';
import type { Database, RetiredCredentialsTable } from '../store/schema.js';

type Db = Kysely<Database> | Transaction<Database>;

/** Keeps the digest of a key that stops working now. */
export async function retireCredential(db: Db, digest: string, workspaceId: string, kind: RetiredCredentialsTable['kind'], now: Date): Promise<void> {
  await db
    .insertInto('retired_credentials')
    .values({ digest, workspace_id: workspaceId, kind, retired_at: now })
    .onConflict((oc) => oc.column('digest').doNothing())
    .execute();
}

/** The workspace of `secret` if it is a retired key of `kind`; looked up by digest, confirmed in constant time. */
export async function retiredCredentialWorkspace(
  db: Db,
  secrets: SecretBox,
  secret: string,
  kind: RetiredCredentialsTable['kind'],
): Promise<string | undefined> {
  const row = await db
    .selectFrom('retired_credentials')
    .select(['digest', 'workspace_id'])
    .where('digest', '=', secrets.digest(secret))
    .where('kind', '=', kind)
    .executeTakeFirst();
  return row && secrets.matches(secret, row.digest) ? row.workspace_id : undefined;
}
