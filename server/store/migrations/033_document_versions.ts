// Document versions: every file a document has had, numbered from 1. The document row keeps the
// current version's file fields and number, so everything that reads a document reads its newest
// file; a link may be pinned to a version (`links.version`, null: the newest), and a reader
// session records the version it was shown (`reader_sessions.version`) for analytics per version.
// Existing documents become version 1 of themselves.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table document_versions (
      document_id text not null references documents(id),
      workspace_id text not null references workspaces(id) on delete cascade,
      version integer not null,
      filename text not null,
      content_type text not null,
      size_bytes bigint not null,
      page_count integer,
      sha256 text not null,
      storage_key text not null unique,
      created_at timestamptz not null,
      primary key (document_id, version)
    );
    alter table documents add column version integer not null default 1;
    insert into document_versions (document_id, workspace_id, version, filename, content_type, size_bytes, page_count, sha256, storage_key, created_at)
      select id, workspace_id, 1, filename, content_type, size_bytes, page_count, sha256, storage_key, created_at from documents;
    alter table links add column version integer;
    alter table reader_sessions add column version integer not null default 1;
  `,
  );
}
