// Connect content: documents, share links, reader sessions and their per-page reading.
// A deleted document keeps its row (`deleted_at`, file removed) so that its links' history and
// analytics stay readable; every query of the API filters it out.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table documents (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      title text not null,
      filename text not null,
      content_type text not null,
      size_bytes bigint not null,
      page_count integer,
      sha256 text not null,
      storage_key text not null unique,
      created_at timestamptz not null,
      deleted_at timestamptz
    );
    create index documents_workspace on documents(workspace_id, created_at desc, id desc);
    create table links (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      document_id text not null references documents(id),
      external_id text not null,
      recipient_phone text,
      recipient_email text,
      slug text not null unique,
      allow_download boolean not null default false,
      expires_at timestamptz,
      created_at timestamptz not null,
      revoked_at timestamptz,
      revoke_reason text,
      last_opened_at timestamptz,
      downloads integer not null default 0
    );
    create index links_workspace on links(workspace_id, created_at desc, id desc);
    create index links_document on links(document_id, external_id);
    create table reader_sessions (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      link_id text not null references links(id),
      document_id text not null references documents(id),
      reader_id text not null,
      token_digest text not null,
      device text not null,
      started_at timestamptz not null,
      last_activity_at timestamptz not null,
      ended_at timestamptz,
      duration_ms bigint not null default 0,
      downloaded boolean not null default false,
      last_event_at timestamptz not null,
      pending_update boolean not null default false
    );
    create index reader_sessions_link on reader_sessions(link_id, started_at desc, id desc);
    create index reader_sessions_document on reader_sessions(document_id);
    create index reader_sessions_open on reader_sessions(last_activity_at) where ended_at is null;
    create table reader_page_stats (
      session_id text not null references reader_sessions(id) on delete cascade,
      page integer not null,
      views integer not null default 0,
      time_ms bigint not null default 0,
      primary key (session_id, page)
    );
  `,
  );
}
