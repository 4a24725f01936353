// The contacts the list figure pages through, inserted the same way into our server's store and
// the bare baseline's: `count` contacts of one workspace, in batches, with distinct creation times.
import type { Kysely } from 'kysely';
import type { Database } from '#server/store/schema.js';

/** `newId` is the caller's (the compiled server's, ./dist.ts). */
export async function seedContacts(db: Kysely<Database>, workspaceId: string, count: number, newId: (prefix: string) => string): Promise<void> {
  const start = Date.now() - count * 1000;
  for (let i = 0; i < count; i += 1000) {
    const rows = Array.from({ length: Math.min(1000, count - i) }, (_, j) => {
      const at = new Date(start + (i + j) * 1000);
      return {
        id: newId('ct'),
        workspace_id: workspaceId,
        phone: `+4915200${String(i + j).padStart(6, '0')}`,
        name: `Seeded ${i + j}`,
        email: null,
        custom_fields: '{}',
        created_at: at,
        updated_at: at,
      };
    });
    await db.insertInto('contacts').values(rows).execute();
  }
}
