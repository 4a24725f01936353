// Reading analytics from counters (docs/scale.md): link and document totals and their per-page
// figures are rows kept up to date in the transaction that records a view (sessions.ts), instead
// of aggregating every session and page row of a link or document at each read.
//
// Every table is keyed by (document_id, link_id, version): `link_id = ''` is the document over all
// its links, `version = 0` all versions (real versions start at 1). A view updates four rows: its
// link and version, its link, its document and version, its document.
// - reading_totals: views (sessions), readers (distinct `coalesce(verified_phone, reader_id)`),
//   reading time, sessions that downloaded, first and last opening;
// - reading_pages: views and time per page;
// - reading_readers: the reader keys already counted, which is what keeps `readers` exact: a
//   reader is counted when its key is inserted here for the first time (no estimate).
// The daily series stays a query of the sessions, aggregated in SQL by day on covering indexes
// (`reader_sessions_link_day`, and the document's `reader_sessions_document_started` of 037, now
// with reader_id included), as its days depend on the time zone of the request.
// Rows reference their document (deleted with its workspace; a deleted document keeps its
// analytics like its sessions do).
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

/**
 * The rollups of the sessions matching `where` (a condition on `reader_sessions s`), computed
 * set-based from the sessions and their pages: the migration's backfill, and the scale seeder's
 * (bench/lib/scale-seed.ts), which writes sessions without the product's code.
 */
export function readingBackfill(where = 'true'): string[] {
  const scopes = `lateral (values (s.link_id, s.version), (s.link_id, 0), ('', s.version), ('', 0)) k(link_id, version)`;
  return [
    `insert into reading_totals (document_id, link_id, version, views, readers, time_ms, downloaded_sessions, first_opened_at, last_opened_at)
     select s.document_id, k.link_id, k.version, count(*), count(distinct coalesce(s.verified_phone, s.reader_id)), coalesce(sum(s.duration_ms), 0),
       count(*) filter (where s.downloaded), min(s.started_at), max(s.started_at)
     from reader_sessions s, ${scopes}
     where ${where}
     group by s.document_id, k.link_id, k.version`,
    `insert into reading_readers (document_id, link_id, version, reader_key)
     select distinct s.document_id, k.link_id, k.version, coalesce(s.verified_phone, s.reader_id)
     from reader_sessions s, ${scopes}
     where ${where}`,
    `insert into reading_pages (document_id, link_id, version, page, views, time_ms)
     select s.document_id, k.link_id, k.version, p.page, sum(p.views), sum(p.time_ms)
     from reader_page_stats p join reader_sessions s on s.id = p.session_id, ${scopes}
     where ${where}
     group by s.document_id, k.link_id, k.version, p.page`,
  ];
}

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table reading_totals (
      document_id text not null references documents(id) on delete cascade,
      link_id text not null,
      version integer not null,
      views bigint not null default 0,
      readers bigint not null default 0,
      time_ms bigint not null default 0,
      downloaded_sessions bigint not null default 0,
      first_opened_at timestamptz,
      last_opened_at timestamptz,
      primary key (document_id, link_id, version)
    );
    create table reading_pages (
      document_id text not null references documents(id) on delete cascade,
      link_id text not null,
      version integer not null,
      page integer not null,
      views bigint not null default 0,
      time_ms bigint not null default 0,
      primary key (document_id, link_id, version, page)
    );
    create table reading_readers (
      document_id text not null references documents(id) on delete cascade,
      link_id text not null,
      version integer not null,
      reader_key text not null,
      primary key (document_id, link_id, version, reader_key)
    );
    ${readingBackfill().join(';\n')};
    create index reader_sessions_link_day on reader_sessions(link_id, started_at) include (reader_id);
    drop index reader_sessions_document_started;
    create index reader_sessions_document_started on reader_sessions(document_id, started_at, id) include (reader_id);
  `,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    drop index reader_sessions_document_started, reader_sessions_link_day;
    create index reader_sessions_document_started on reader_sessions(document_id, started_at, id);
    drop table reading_readers, reading_pages, reading_totals;
  `,
  );
}
