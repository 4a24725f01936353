// The demo: which workspace is the demo workspace (recorded when it is seeded, never guessed
// from a slug a user could also choose), the Login app that /demo/login signs in with and that
// app's API key, encrypted at rest (platform.secrets), so a restart keeps the demo working
// without the key ever being shown. Rows go with their workspace; the app's columns are cleared
// when the owner deletes the app (a new one is then created).
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table demo_workspaces (
      workspace_id text primary key references workspaces(id) on delete cascade,
      login_app_id text references login_apps(id) on delete set null,
      login_api_key_enc text,
      created_at timestamptz not null
    );
    -- Stores seeded before this migration: the workspace the seed created (its slug and owner).
    insert into demo_workspaces (workspace_id, created_at)
      select w.id, w.created_at from workspaces w
      where w.slug = 'demo' and exists (select 1 from owners o where o.workspace_id = w.id and o.email = 'owner@demo.example');
  `,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await runStatements(db, 'drop table demo_workspaces');
}
