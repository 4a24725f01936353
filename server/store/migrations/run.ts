// Runs a migration's SQL one statement at a time: PGlite's extended protocol takes one
// statement per query. Statements are separated by a semicolon at the end of a line.
import { sql, type Kysely } from 'kysely';

export async function runStatements(db: Kysely<any>, text: string): Promise<void> {
  const statements = text
    .split(/;\s*$/m)
    .map((s) => s.replace(/^\s*--.*$/gm, '').trim())
    .filter(Boolean);
  for (const statement of statements) await sql.raw(statement).execute(db);
}
