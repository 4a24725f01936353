// Workspace-wide Messaging settings: the locale automation `ask` answers are read in when the
// node names none (an absent row or a null locale: the contact's country, else en-US).
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table messaging_settings (
      workspace_id text primary key references workspaces(id) on delete cascade,
      locale text,
      updated_at timestamptz not null
    );
    `,
  );
}
