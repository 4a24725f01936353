// Row types of the connect-content tables (migration 007).
import type { ColumnType, Generated } from 'kysely';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** bigint columns: pg returns them as strings; written as numbers. */
type BigIntColumn = ColumnType<string | number, number | undefined, number>;

export interface DocumentsTable {
  id: string;
  workspace_id: string;
  title: string;
  filename: string;
  content_type: string;
  size_bytes: BigIntColumn;
  page_count: number | null;
  sha256: string;
  /** The stored file's generated name under DATA_DIR/documents/. */
  storage_key: string;
  created_at: Timestamp;
  deleted_at: NullableTimestamp;
  /** The current version's number (migration 028); the file fields above are its. */
  version: ColumnType<number, number | undefined, number>;
}

/** One version of a document's file (migration 028). */
export interface DocumentVersionsTable {
  document_id: string;
  workspace_id: string;
  version: number;
  filename: string;
  content_type: string;
  size_bytes: BigIntColumn;
  page_count: number | null;
  sha256: string;
  storage_key: string;
  created_at: Timestamp;
}

export interface LinksTable {
  id: string;
  workspace_id: string;
  document_id: string;
  external_id: string;
  recipient_phone: string | null;
  recipient_email: string | null;
  slug: string;
  allow_download: Generated<boolean>;
  /** Opens only for a reader who verified `recipient_phone` (031_phone_verified_links). */
  require_phone_verification: Generated<boolean>;
  expires_at: NullableTimestamp;
  created_at: Timestamp;
  revoked_at: NullableTimestamp;
  /** 'revoked' or 'document_deleted' */
  revoke_reason: string | null;
  last_opened_at: NullableTimestamp;
  downloads: Generated<number>;
  /** The document version the link is pinned to; null: the newest (migration 028). */
  version: ColumnType<number | null, number | null | undefined, number | null>;
}

export interface ReaderSessionsTable {
  id: string;
  workspace_id: string;
  link_id: string;
  document_id: string;
  /** The viewer's random first-party cookie value, telling browsers apart. */
  reader_id: string;
  /** Keyed digest of the session's beacon token. */
  token_digest: string;
  device: string;
  started_at: Timestamp;
  last_activity_at: Timestamp;
  ended_at: NullableTimestamp;
  duration_ms: BigIntColumn;
  downloaded: Generated<boolean>;
  /** The phone the reader verified before the document opened (031_phone_verified_links). */
  verified_phone: string | null;
  /** When the last link.opened/session.updated about this session was emitted. */
  last_event_at: Timestamp;
  /** Activity arrived since then (a throttled session.updated is due). */
  pending_update: Generated<boolean>;
  /** The document version the session was shown (migration 028). */
  version: ColumnType<number, number | undefined, number>;
}

export interface ReaderPageStatsTable {
  session_id: string;
  page: number;
  views: Generated<number>;
  time_ms: BigIntColumn;
}

/**
 * Reading rollups (044_reading_rollups), kept by sessions.ts in the transaction that records the
 * view: keyed by document, link (`''`: the document over all its links) and version (`0`: all).
 */
interface ReadingScope {
  document_id: string;
  link_id: string;
  version: number;
}

export interface ReadingTotalsTable extends ReadingScope {
  views: BigIntColumn;
  /** Distinct reader keys (`coalesce(verified_phone, reader_id)`), counted once in reading_readers. */
  readers: BigIntColumn;
  time_ms: BigIntColumn;
  downloaded_sessions: BigIntColumn;
  first_opened_at: NullableTimestamp;
  last_opened_at: NullableTimestamp;
}

export interface ReadingPagesTable extends ReadingScope {
  page: number;
  views: BigIntColumn;
  time_ms: BigIntColumn;
}

export interface ReadingReadersTable extends ReadingScope {
  reader_key: string;
}

export interface ConnectContentTables {
  documents: DocumentsTable;
  document_versions: DocumentVersionsTable;
  links: LinksTable;
  reader_sessions: ReaderSessionsTable;
  reader_page_stats: ReaderPageStatsTable;
  reading_totals: ReadingTotalsTable;
  reading_pages: ReadingPagesTable;
  reading_readers: ReadingReadersTable;
}
